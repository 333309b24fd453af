//! A new user's first command, `serve --bootstrap`, run again and again: the service writes
//! the secrets to `data/bootstrap.json` (0600) only when it creates the company, says where
//! they are on every start, and a lost file is recovered with `admin company list` and
//! `admin token create`.

mod common;

use common::*;

fn session_as(base: &str, who: &Company) -> u16 {
    call(base, who, "GET", "/v1/session", None).0
}

fn first_command_runs_again_and_again(db: TestDb) {
    let file = db.dir.path().join("data/bootstrap.json");

    // First run: the company is created; its secrets go to stdout and to the file.
    let server = Server::start(&db, &["serve", "--bootstrap"]);
    let printed = server.bootstrap.clone().expect("bootstrap JSON on stdout");
    let written = std::fs::read_to_string(&file).expect("serve wrote data/bootstrap.json");
    let saved: serde_json::Value = serde_json::from_str(&written).expect("JSON");
    assert_eq!(saved, printed);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&file).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "bootstrap.json is its owner's only");
    }
    let logs = server.logs();
    assert!(
        logs.contains(&file.display().to_string()),
        "the log says where the secrets are:\n{logs}"
    );
    let owner = Company::from_bootstrap(&saved);
    assert_eq!(session_as(&server.base, &owner), 200);
    assert!(server.stop().success());

    // The same command again: nothing is created, the file is kept and named in the log.
    for _ in 0..2 {
        let server = Server::start(&db, &["serve", "--bootstrap"]);
        assert!(
            server.bootstrap.is_none(),
            "nothing on stdout once a company exists"
        );
        assert_eq!(
            std::fs::read_to_string(&file).expect("bootstrap.json is still there"),
            written
        );
        let logs = server.logs();
        assert!(
            logs.contains(&file.display().to_string()),
            "every start says where the secrets are:\n{logs}"
        );
        assert_eq!(
            session_as(&server.base, &owner),
            200,
            "the token still works"
        );
        assert!(server.stop().success());
    }

    // The file is lost: the start says how to get a new token, and that way works.
    std::fs::remove_file(&file).expect("remove");
    let server = Server::start(&db, &["serve", "--bootstrap"]);
    assert!(server.bootstrap.is_none());
    assert!(!file.exists(), "no company was created, so no file");
    let logs = server.wait_for_log("admin token create", 10);
    assert!(logs.contains("admin company list"), "{logs}");

    let (ok, list, stderr) = run(&db, &["admin", "company", "list"]);
    assert!(ok, "{stderr}");
    let companies = list["data"].as_array().expect("data");
    assert_eq!(companies.len(), 1, "{list}");
    assert_eq!(companies[0]["id"], saved["company_id"], "{list}");
    assert_eq!(companies[0]["name"], "Example Company", "{list}");
    assert_eq!(companies[0]["members"][0]["email"], "owner@example.com");
    assert!(list["next_after"].is_null(), "{list}");

    // With one company, `--company` may be left out; the token comes with its human proof.
    let (ok, minted, stderr) = run(
        &db,
        &["admin", "token", "create", "--user", "owner@example.com"],
    );
    assert!(ok, "{stderr}");
    assert_eq!(minted["company_id"], saved["company_id"], "{minted}");
    let again = Company::from_bootstrap(&minted);
    assert_eq!(session_as(&server.base, &again), 200, "a person again");
    assert!(server.stop().success());

    // A second company: the listing pages, and leaving out `--company` is refused.
    let (ok, _, stderr) = run(
        &db,
        &[
            "admin",
            "bootstrap",
            "--company-name",
            "Second Ltd",
            "--email",
            "second@example.com",
        ],
    );
    assert!(ok, "{stderr}");
    let (ok, page, stderr) = run(&db, &["admin", "company", "list", "--limit", "1"]);
    assert!(ok, "{stderr}");
    assert_eq!(page["data"][0]["id"], saved["company_id"], "oldest first");
    let after = page["next_after"].as_str().expect("a next page").to_owned();
    let (ok, rest, stderr) = run(&db, &["admin", "company", "list", "--after", &after]);
    assert!(ok, "{stderr}");
    assert_eq!(rest["data"][0]["name"], "Second Ltd", "{rest}");
    assert!(rest["next_after"].is_null(), "{rest}");
    let (ok, _, stderr) = run(
        &db,
        &["admin", "token", "create", "--user", "owner@example.com"],
    );
    assert!(!ok);
    assert!(stderr.contains("--company"), "{stderr}");
}

#[test]
fn first_command_runs_again_and_again_on_sqlite() {
    first_command_runs_again_and_again(TestDb::sqlite());
}

#[test]
fn first_command_runs_again_and_again_on_postgres() {
    first_command_runs_again_and_again(TestDb::postgres());
}
