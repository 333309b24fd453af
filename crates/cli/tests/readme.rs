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
    assert!(
        db.dir.path().join("data/bootstrap.json").exists(),
        "serve --bootstrap wrote data/bootstrap.json, which the walkthrough reads"
    );
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

/// The first fenced block of `lang` after `heading` in README.md.
fn readme_block(heading: &str, lang: &str) -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README");
    readme
        .split(heading)
        .nth(1)
        .unwrap_or_else(|| panic!("no {heading} in README.md"))
        .split(&format!("```{lang}\n"))
        .nth(1)
        .and_then(|s| s.split("```").next())
        .unwrap_or_else(|| panic!("no {lang} block after {heading}"))
        .to_owned()
}

/// The README's Python MCP client, run as pasted with the official SDK of
/// tests/requirements.txt against the MCP server `serve` started.
#[test]
fn readme_python_mcp_client_works_when_pasted() {
    let snippet = readme_block("## Connect an MCP client", "python");
    // The README pins the SDK version the suite runs the snippet with.
    let requirements = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/requirements.txt"
    ))
    .expect("tests/requirements.txt");
    let pin = requirements
        .lines()
        .find(|l| l.starts_with("mcp=="))
        .expect("mcp pinned in tests/requirements.txt");
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README");
    assert!(
        readme.contains(&format!("pip install \"{pin}\"")),
        "README.md says `pip install \"{pin}\"`"
    );
    let default_url = "\"http://127.0.0.1:8081/mcp\"";
    assert!(
        snippet.contains(default_url),
        "the snippet names the default URL"
    );
    let db = TestDb::sqlite();
    let server = Server::start(&db, &["serve", "--bootstrap"]);
    let script = snippet.replace(default_url, &format!("\"{}\"", server.mcp_url()));
    let file = db.dir.path().join("client.py");
    std::fs::write(&file, script).expect("write the snippet");
    let out = std::process::Command::new(python())
        .arg(&file)
        .current_dir(db.dir.path())
        .output()
        .expect("run the snippet");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the README's Python client failed:\n{stdout}\n{}\n--- server logs ---\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.logs()
    );
    assert!(
        stdout.contains("tools: ") && stdout.contains("create_invoice"),
        "{stdout}"
    );
    assert!(stdout.contains("\"Example Company\""), "{stdout}");
    assert!(server.stop().success());
}
