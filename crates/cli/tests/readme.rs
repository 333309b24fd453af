//! The README walkthrough, run as pasted (against a server on a free port), so the docs cannot rot.

mod common;

use common::*;

#[test]
fn readme_walkthrough_works_when_pasted() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README");
    let section = readme
        .split("## Walkthrough")
        .nth(1)
        .expect("walkthrough section");
    let script = section
        .split("```bash")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("bash block");
    assert!(
        script.contains("API=http://127.0.0.1:8080"),
        "the walkthrough sets API"
    );
    let db = TestDb::sqlite();
    let server = Server::start(&db, &["serve", "--bootstrap"]);
    let boot = server.bootstrap.clone().expect("bootstrap JSON");
    std::fs::write(db.dir.path().join("bootstrap.json"), boot.to_string())
        .expect("write bootstrap.json");
    let script = script.replace("API=http://127.0.0.1:8080", &format!("API={}", server.base));
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("set -euo pipefail\n{script}"))
        .current_dir(db.dir.path())
        .output()
        .expect("bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "walkthrough failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    for expected in [
        "\"pending_approval\"",
        "\"status\":\"approved\"",
        "\"status\":\"issued\"",
        "\"reference\":\"INV-",
        "\"humanProof\":null",
        "\"email\":\"colleague@example.com\"",
    ] {
        assert!(
            stdout.contains(expected),
            "walkthrough output lacks {expected}: {stdout}"
        );
    }
    assert!(
        !stdout.contains("\"error\":\"") || stdout.matches("\"error\":\"").count() == 1,
        "only the held request reports an error code"
    );
    assert!(server.stop().success());
}
