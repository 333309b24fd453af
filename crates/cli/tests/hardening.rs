//! Attacks of issue #27 on the transport and the data directory, through the real binary:
//! connections that never finish their headers or bodies, more connections than the cap,
//! and data files any local user could read.

mod common;

use std::{
    io::{Read, Write},
    net::TcpStream,
    time::{Duration, Instant},
};

use common::*;
use serde_json::json;

/// Reads until the server closes the connection; `Err` if it is still open after 30 s.
fn read_until_closed(stream: &mut TcpStream) -> Result<String, String> {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => return Ok(String::from_utf8_lossy(&answer).into_owned()),
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(format!(
                    "still open after 30 s; read so far: {:?}",
                    String::from_utf8_lossy(&answer)
                ));
            }
            // Reset by the server: closed too.
            Err(_) => return Ok(String::from_utf8_lossy(&answer).into_owned()),
        }
    }
}

fn connect(server: &Server) -> TcpStream {
    TcpStream::connect(server.base.trim_start_matches("http://")).expect("connect")
}

/// A client that sends half its headers, or half its body, and then nothing (slowloris):
/// the server closes the connection after the configured timeouts instead of holding it.
#[test]
fn connections_that_stall_are_closed() {
    let db = TestDb::sqlite();
    let mut cmd = db.command(&["serve", "--bootstrap", "--no-mcp"]);
    cmd.env("INVOICING_HTTP_HEADER_TIMEOUT_SECS", "1")
        .env("INVOICING_HTTP_IDLE_TIMEOUT_SECS", "1");
    let server = Server::start_command(cmd);
    let boot = server.bootstrap.clone().expect("bootstrap JSON");
    let me = Company::from_bootstrap(&boot);

    let mut headers = connect(&server);
    headers
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: 1")
        .expect("write");
    read_until_closed(&mut headers).expect("a connection that never ends its headers");

    let mut body = connect(&server);
    let head = format!(
        "POST /v1/entities HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\n\
         X-Human-Proof: {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"name\":",
        me.token, me.proof
    );
    body.write_all(head.as_bytes()).expect("write");
    read_until_closed(&mut body).expect("a connection that never ends its body");

    // A request sent whole is served as ever.
    let (s, session) = call(&server.base, &me, "GET", "/v1/session", None);
    assert_eq!(s, 200, "{session}");
}

/// Past `INVOICING_HTTP_MAX_CONNECTIONS`, a new connection is answered 503 with
/// `Retry-After` and closed at once; once connections end, new ones are served again.
#[test]
fn connections_past_the_cap_get_503() {
    let db = TestDb::sqlite();
    let mut cmd = db.command(&["serve", "--no-mcp"]);
    cmd.env("INVOICING_HTTP_MAX_CONNECTIONS", "2")
        .env("INVOICING_HTTP_HEADER_TIMEOUT_SECS", "60");
    let server = Server::start_command(cmd);
    // Two connections hold the two places (their headers are never finished).
    let held: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut s = connect(&server);
            s.write_all(b"GET /healthz HTTP/1.1\r\n").expect("write");
            s
        })
        .collect();
    let mut third = connect(&server);
    let _ = third.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let answer = read_until_closed(&mut third).expect("the third is answered and closed");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.to_lowercase().contains("retry-after: 1"), "{answer}");
    assert!(answer.contains("too many connections"), "{answer}");

    drop(held);
    // The places come back once the server sees the connections closed.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut s = connect(&server);
        let _ =
            s.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        let answer = read_until_closed(&mut s).unwrap_or_default();
        if answer.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(Instant::now() < deadline, "never served again: {answer}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Reads one answer from a connection kept open: its head and its `Content-Length` body.
fn read_answer(stream: &mut TcpStream) -> (String, String) {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = stream.read(&mut byte).expect("an answer within 30 s");
        assert_eq!(
            n,
            1,
            "closed before answering: {:?}",
            String::from_utf8_lossy(&head)
        );
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().expect("a length"))
        .expect("content-length");
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).expect("the body");
    (head, String::from_utf8_lossy(&body).into_owned())
}

/// A refusal answered before the request's body was read (here: no token) says
/// `Connection: close` and closes, on the API and on the MCP server: the server cannot keep
/// that connection, and a client that sent its next request on it at once lost it (the
/// official MCP client's OAuth discovery after a 401 did, now and then). A request whose
/// body is read keeps its connection for the next one.
#[test]
fn refusals_before_the_body_is_read_close_the_connection_and_say_so() {
    let db = TestDb::sqlite();
    let mut cmd = db.command(&["serve", "--bootstrap"]);
    cmd.env("INVOICING_MCP_ADDR", "127.0.0.1:0");
    let server = Server::start_command(cmd);
    let me = Company::from_bootstrap(&server.bootstrap.clone().expect("bootstrap JSON"));
    accept_agreements(&server.base, &me);
    let mcp = server.mcp_url();
    let mcp_addr = mcp
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("host:port")
        .to_owned();
    let api_addr = server.base.trim_start_matches("http://").to_owned();
    for (addr, path) in [
        (api_addr.as_str(), "/v1/entities"),
        (mcp_addr.as_str(), "/mcp"),
    ] {
        let mut s = TcpStream::connect(addr).expect("connect");
        // The headers only: the body would follow, as clients that write it apart do.
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer not-a-token\r\n\
             Accept: application/json, text/event-stream\r\n\
             Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
        );
        s.write_all(head.as_bytes()).expect("write");
        let answer = read_until_closed(&mut s).expect("closed after the refusal");
        assert!(answer.starts_with("HTTP/1.1 401"), "{addr}{path}: {answer}");
        assert!(
            answer.to_lowercase().contains("\r\nconnection: close\r\n"),
            "{addr}{path}: the refusal must announce the close: {answer}"
        );
    }

    // A body read to its end keeps the connection: two requests on one.
    let mut s = TcpStream::connect(&api_addr).expect("connect");
    let body = json!({"name": "Kept Ltd", "type": "IE:LTD", "address": {"lines": ["2 Quay St"],
        "city": "Dublin", "zipcode": "D01 F5P2", "country": "IE"}})
    .to_string();
    let post = format!(
        "POST /v1/entities HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\n\
         X-Human-Proof: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        me.token,
        me.proof,
        body.len()
    );
    s.write_all(post.as_bytes()).expect("write");
    let (head, made) = read_answer(&mut s);
    assert!(head.starts_with("http/1.1 201"), "{head}{made}");
    assert!(!head.contains("connection: close"), "{head}");
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .expect("write");
    let (head, ok) = read_answer(&mut s);
    assert!(head.starts_with("http/1.1 200"), "{head}{ok}");
}

#[cfg(unix)]
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// Every file under `dir`, recursively.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// On a fresh data directory, what the service writes (the database and its log, the
/// link-signing key, outbox mails with a generated password, stored report PDFs) is readable
/// by the service's user only: directories 0700, files 0600.
#[cfg(unix)]
fn data_files_are_private(db: TestDb) {
    let data = db.dir.path().join("data");
    let files = data.join("files");
    let mut cmd = db.command(&["serve", "--bootstrap", "--no-mcp"]);
    cmd.env(
        "INVOICING_STORAGE_URL",
        format!("file://{}", files.display()),
    );
    let server = Server::start_command(cmd);
    let boot = server.bootstrap.clone().expect("bootstrap JSON");
    let me = Company::from_bootstrap(&boot);
    let base = &server.base;
    let (s, body) = call(
        base,
        &me,
        "POST",
        "/v1/members",
        Some(json!({"email": "new@example.test", "kind": "password"})),
    );
    assert_eq!(s, 201, "{body}");
    let (s, created) = call(
        base,
        &me,
        "POST",
        "/v1/reports",
        Some(json!({"report_type": "business_overview",
            "period_start": "2026-01-01T00:00:00Z", "period_end": "2026-04-01T00:00:00Z"})),
    );
    assert_eq!(s, 201, "{created}");
    let report = created["data"][0]["id"].as_str().expect("id").to_owned();

    let outbox = data.join("outbox");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let mails = std::fs::read_dir(&outbox).map_or(0, |d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".eml"))
                .count()
        });
        let (_, r) = call(base, &me, "GET", &format!("/v1/reports/{report}"), None);
        assert_ne!(r["status"], "failed", "{r}");
        // The password mail and the report's mail.
        if mails >= 2 && r["status"] == "ready" {
            break;
        }
        assert!(Instant::now() < deadline, "mails {mails}, report {r}");
        std::thread::sleep(Duration::from_millis(100));
    }

    for dir in [&data, &outbox, &files] {
        assert_eq!(mode(dir), 0o700, "{}", dir.display());
    }
    let mut checked = files_under(&data);
    checked.retain(|p| !p.to_string_lossy().contains(".probe"));
    let names: Vec<String> = checked
        .iter()
        .map(|p| p.strip_prefix(&data).unwrap().display().to_string())
        .collect();
    assert!(names.iter().any(|n| n == "secret.key"), "{names:?}");
    assert!(
        names.iter().filter(|n| n.ends_with(".eml")).count() >= 2,
        "{names:?}"
    );
    assert!(names.iter().any(|n| n.starts_with("files/")), "{names:?}");
    if db.url.starts_with("sqlite") {
        for n in ["invoicing.db", "invoicing.db-wal", "invoicing.db-shm"] {
            assert!(names.iter().any(|x| x == n), "{n} in {names:?}");
        }
    }
    for path in &checked {
        assert_eq!(mode(path), 0o600, "{}", path.display());
    }
}

#[cfg(unix)]
#[test]
fn data_files_are_private_on_sqlite() {
    data_files_are_private(TestDb::sqlite());
}

#[cfg(unix)]
#[test]
fn data_files_are_private_on_postgres() {
    data_files_are_private(TestDb::postgres());
}

/// A PATCH as an AI caller (the token without its proof): status and body text.
fn patch_as_ai(base: &str, c: &Company, path: &str, body: serde_json::Value) -> (u16, String) {
    let mut resp = agent()
        .patch(format!("{base}{path}"))
        .header("Authorization", &format!("Bearer {}", c.token))
        .send_json(body)
        .expect("request");
    let status = resp.status().as_u16();
    (status, resp.body_mut().read_to_string().unwrap_or_default())
}

/// A server whose render and snippet slots are two each (one per company at the default
/// half share) and whose wait for a slot is one second, with two companies.
fn two_slot_server(db: &TestDb) -> (Server, Company, Company) {
    two_slot_server_waiting(db, "1")
}

/// [`two_slot_server`] with a wait for a slot of `wait_secs`.
fn two_slot_server_waiting(db: &TestDb, wait_secs: &str) -> (Server, Company, Company) {
    let mut cmd = db.command(&["serve", "--bootstrap", "--no-mcp"]);
    cmd.env("INVOICING_RENDER_SLOTS", "2")
        .env("INVOICING_SNIPPET_SLOTS", "2")
        .env("INVOICING_RENDER_WAIT_SECS", wait_secs);
    let server = Server::start_command(cmd);
    let a = Company::from_bootstrap(&server.bootstrap.clone().expect("bootstrap JSON"));
    let (ok, boot, err) = run(
        db,
        &[
            "admin",
            "bootstrap",
            "--company-name",
            "Beta Ltd",
            "--email",
            "owner@beta.test",
        ],
    );
    assert!(ok, "{err}");
    (server, a, Company::from_bootstrap(&boot))
}

/// Runs `a1` and `a2` (company A, each holding a slot until the render deadline if it gets
/// one) at once, and `b` (company B) once one of A's has been refused, or both have ended.
/// A may hold one slot of two: one of its requests waits past the bound and gets a 503 with
/// `Retry-After`, and B, asking while A holds its slot, is served. Returns A's held answer
/// and B's.
fn a_holds_its_share_and_b_is_served(
    a1: impl FnOnce() -> (u16, String) + Send + 'static,
    a2: impl FnOnce() -> (u16, String) + Send + 'static,
    b: impl FnOnce() -> (u16, String),
) -> ((u16, String), (u16, String)) {
    let (tx, rx) = std::sync::mpsc::channel();
    let spawn = |f: Box<dyn FnOnce() -> (u16, String) + Send>| {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let answer = f();
            let _ = tx.send(answer.0);
            answer
        })
    };
    let t1 = spawn(Box::new(a1));
    let t2 = spawn(Box::new(a2));
    // Without fairness neither is refused: B asks once both have ended, and the test fails
    // below instead of waiting forever.
    let first = rx.recv().expect("an answer");
    if first != 503 {
        let _ = rx.recv();
    }
    let b = b();
    let (a1, a2) = (t1.join().expect("a1"), t2.join().expect("a2"));
    let (refused, held) = if a1.0 == 503 { (a1, a2) } else { (a2, a1) };
    assert_eq!(
        refused.0, 503,
        "one of A's waits past the bound: {refused:?} {held:?}"
    );
    assert!(refused.1.contains("share"), "{}", refused.1);
    (held, b)
}

/// A company whose snippets run to the render deadline (ten seconds), asked for in a loop,
/// held every snippet slot and every other company waited behind it. Now it holds its share:
/// its second check at once waits a bounded time for its own slot and gets a 503, while
/// another company's check is served. An AI caller's dry run counts against its company.
fn looping_snippet_checks_hold_only_their_companys_share(db: TestDb) {
    let (server, a, b) = two_slot_server(&db);
    let base = server.base.clone();
    let looping =
        json!({"footerInvoiceTypst": "#for i in range(100000) { for j in range(100000) {} }"});
    let (url, body, a_human) = (
        base.clone(),
        looping.clone(),
        Company {
            token: a.token.clone(),
            proof: a.proof.clone(),
        },
    );
    let a1 = move || {
        let (s, v) = call(&url, &a_human, "PATCH", "/v1/company", Some(body));
        (s, v.to_string())
    };
    let (url, a_ai) = (
        base.clone(),
        Company {
            token: a.token.clone(),
            proof: String::new(),
        },
    );
    let a2 = move || patch_as_ai(&url, &a_ai, "/v1/company", looping);
    let (held, b) = a_holds_its_share_and_b_is_served(a1, a2, || {
        let (s, v) = call(
            &base,
            &b,
            "PATCH",
            "/v1/company",
            Some(json!({"footerInvoiceTypst": "Thank you."})),
        );
        (s, v.to_string())
    });
    assert_eq!(held.0, 400, "{}", held.1);
    assert!(held.1.contains("did not finish"), "{}", held.1);
    assert_eq!(b.0, 200, "{}", b.1);
    assert!(b.1.contains("Thank you."), "{}", b.1);
}

#[test]
fn looping_snippet_checks_hold_only_their_companys_share_on_sqlite() {
    looping_snippet_checks_hold_only_their_companys_share(TestDb::sqlite());
}

#[test]
fn looping_snippet_checks_hold_only_their_companys_share_on_postgres() {
    looping_snippet_checks_hold_only_their_companys_share(TestDb::postgres());
}

/// The same for PDFs: a footer that loops for one invoice's data holds one render slot of
/// its company until the deadline; the company's next such PDF gets a 503 and another
/// company's PDF is served.
fn pdfs_running_to_the_deadline_hold_only_their_companys_share(db: TestDb) {
    let (server, a, b) = two_slot_server(&db);
    let base = server.base.clone();
    let footer = "#let po = json(\"/data.json\").placeholders.at(\"po\", default: \"\")\n\
                  #if po == \"slow\" { for i in range(100000) { for j in range(100000) {} } }";
    let mut pdfs = Vec::new();
    for c in [&a, &b] {
        let (s, body) = call(
            &base,
            c,
            "POST",
            "/v1/company/registration",
            Some(json!({"name": "Render Test Ltd", "fiscal_id": "IE6388047V",
                "email": "b@example.test", "phone": "1",
                "address": {"lines": ["1 St"], "zipcode": "D1", "city": "Dublin", "country": "IE"}})),
        );
        assert_eq!(s, 200, "{body}");
        accept_agreements(&base, c);
        let (s, body) = call(
            &base,
            c,
            "PATCH",
            "/v1/company",
            Some(json!({"customPlaceholders": [{"key": "po", "label": "PO"}],
                "footerInvoiceTypst": footer})),
        );
        assert_eq!(s, 200, "{body}");
        let (s, customer) = call(
            &base,
            c,
            "POST",
            "/v1/entities",
            Some(json!({"name": "Customer Ltd", "type": "IE:LTD", "address": {"country": "IE"}})),
        );
        assert_eq!(s, 201, "{customer}");
        let mut paths = Vec::new();
        for po in ["slow", "slow", "fine"] {
            let (s, d) = call(
                &base,
                c,
                "POST",
                "/v1/invoices",
                Some(json!({"recipient_id": customer["id"],
                    "custom_placeholder_values": [{"key": "po", "value": po}],
                    "lines": [{"concept": "Work", "unit_price": 1000}]})),
            );
            assert_eq!(s, 201, "{d}");
            paths.push(format!(
                "/v1/invoices/{}/pdf",
                d["id"].as_str().expect("id")
            ));
        }
        pdfs.push(paths);
    }
    let get = |who: &Company, path: &str| {
        let (url, path) = (base.clone(), path.to_owned());
        let who = Company {
            token: who.token.clone(),
            proof: who.proof.clone(),
        };
        move || {
            let (s, _, body) = bytes(&url, &who, "GET", &path, None);
            (s, String::from_utf8_lossy(&body).into_owned())
        }
    };
    let (held, b) = a_holds_its_share_and_b_is_served(
        get(&a, &pdfs[0][0]),
        get(&a, &pdfs[0][1]),
        get(&b, &pdfs[1][2]),
    );
    assert_eq!(held.0, 400, "{}", held.1);
    assert!(held.1.contains("did not finish"), "{}", held.1);
    assert_eq!(b.0, 200, "{}", b.1);
}

#[test]
fn pdfs_running_to_the_deadline_hold_only_their_companys_share_on_sqlite() {
    pdfs_running_to_the_deadline_hold_only_their_companys_share(TestDb::sqlite());
}

#[test]
fn pdfs_running_to_the_deadline_hold_only_their_companys_share_on_postgres() {
    pdfs_running_to_the_deadline_hold_only_their_companys_share(TestDb::postgres());
}

/// Requests whose bodies are still coming hold no database connection: more of them than
/// the pool has connections (8 on SQLite, 16 on PostgreSQL), each past its token lookup and
/// reading its body (the server has answered `100 Continue`), and another caller's reads
/// and writes are still served. A request keeps its connection from one statement to the
/// next (`store::db::request_scope`), but not while it waits for its client.
fn bodies_still_coming_hold_no_connection(db: TestDb) {
    let server = Server::start(&db, &["serve", "--bootstrap", "--no-mcp"]);
    let me = Company::from_bootstrap(&server.bootstrap.clone().expect("bootstrap JSON"));
    accept_agreements(&server.base, &me);
    let stalled: Vec<TcpStream> = (0..24)
        .map(|_| {
            let mut s = connect(&server);
            let head = format!(
                "POST /v1/entities HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\n\
                 X-Human-Proof: {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\
                 Expect: 100-continue\r\n\r\n",
                me.token, me.proof
            );
            s.write_all(head.as_bytes()).expect("write");
            s.set_read_timeout(Some(Duration::from_secs(30)))
                .expect("timeout");
            // The server asks for the body once the handler reads it: past the token lookup.
            let mut seen = Vec::new();
            let mut byte = [0u8; 1];
            while !seen.ends_with(b"\r\n\r\n") {
                let n = s.read(&mut byte).expect("100 Continue within 30 s");
                assert_eq!(n, 1, "closed before asking for the body: {seen:?}");
                seen.push(byte[0]);
            }
            let seen = String::from_utf8_lossy(&seen).into_owned();
            assert!(seen.starts_with("HTTP/1.1 100"), "{seen}");
            s.write_all(b"{\"name\":").expect("write");
            s
        })
        .collect();
    let (s, session) = call(&server.base, &me, "GET", "/v1/session", None);
    assert_eq!(s, 200, "{session}");
    let (s, made) = call(
        &server.base,
        &me,
        "POST",
        "/v1/entities",
        Some(
            json!({"name": "Served Ltd", "type": "IE:LTD", "address": {"lines": ["2 Quay St"],
            "city": "Dublin", "zipcode": "D01 F5P2", "country": "IE"}}),
        ),
    );
    assert_eq!(s, 201, "{made}");
    let (s, list) = call(&server.base, &me, "GET", "/v1/entities", None);
    assert_eq!(s, 200, "{list}");
    drop(stalled);
}

#[test]
fn bodies_still_coming_hold_no_connection_on_sqlite() {
    bodies_still_coming_hold_no_connection(TestDb::sqlite());
}

#[test]
fn bodies_still_coming_hold_no_connection_on_postgres() {
    bodies_still_coming_hold_no_connection(TestDb::postgres());
}

/// Requests waiting for a render slot hold no database connection either: more AI callers
/// of one company than the pool has connections (8 on SQLite, 16 on PostgreSQL) save a
/// looping footer at once, each checked in its dry run after the queue's reads, and wait for
/// the company's one snippet slot; another company is served while every one of them is
/// still waiting or running.
fn render_waits_hold_no_connection(db: TestDb) {
    let (server, a, b) = two_slot_server_waiting(&db, "12");
    let looping =
        json!({"footerInvoiceTypst": "#for i in range(100000) { for j in range(100000) {} }"});
    let (answers, answered) = std::sync::mpsc::channel();
    let waiting: Vec<_> = (0..24)
        .map(|_| {
            let (base, body, answers) = (server.base.clone(), looping.clone(), answers.clone());
            let ai = Company {
                token: a.token.clone(),
                proof: String::new(),
            };
            std::thread::spawn(move || {
                let _ = answers.send(patch_as_ai(&base, &ai, "/v1/company", body));
            })
        })
        .collect();
    // Each has made its reads and waits for, or holds, a slot for seconds (the render
    // deadline, the wait's bound).
    std::thread::sleep(Duration::from_secs(3));
    let (s, session) = call(&server.base, &b, "GET", "/v1/session", None);
    let early = answered.try_recv().ok();
    assert_eq!(s, 200, "{session}");
    assert!(
        early.is_none(),
        "another company was served only once one of the waiting requests had ended: {early:?}"
    );
    for t in waiting {
        t.join().expect("an AI caller");
    }
}

#[test]
fn render_waits_hold_no_connection_on_sqlite() {
    render_waits_hold_no_connection(TestDb::sqlite());
}

#[test]
fn render_waits_hold_no_connection_on_postgres() {
    render_waits_hold_no_connection(TestDb::postgres());
}
