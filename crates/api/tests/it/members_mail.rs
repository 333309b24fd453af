//! Member mail end to end: a real SMTP conversation on loopback, the generated
//! password (working, and nowhere but in the mail), an SMTP outage, the outbox.

use std::time::Duration;

use jobs::testing::{SmtpSink, unused_port};
use serde_json::json;

use crate::{
    background::{Running, mailed_password},
    members::add,
    support::*,
};

const WAIT: Duration = Duration::from_secs(30);

db_test!(
    password_members_get_a_working_password_by_smtp_and_nowhere_else,
    |app| {
        let sink = SmtpSink::start().await.unwrap();
        let outbox = tempfile::tempdir().unwrap();
        let created = app
            .call(
                "POST",
                "/v1/members",
                As::Human(&app.a),
                Some(json!({"email": "ana@example.com", "kind": "password", "language": "es_ES"})),
            )
            .await
            .expect(201);
        // No language: the acting user's (en_US).
        add(
            &app,
            &app.a,
            json!({"email": "ben@example.com", "kind": "password"}),
        )
        .await;
        assert!(
            sink.messages().is_empty(),
            "nothing is sent inside the request"
        );

        let worker = Running::spawn(app.worker(Some(sink.url()), outbox.path()));
        let mails = sink.wait_for(2, WAIT).await;
        app.wait_for_jobs("member.password", "both jobs done", |j| {
            j.len() == 2 && j.iter().all(|j| j.status == "done")
        })
        .await;
        worker.stop().await;
        assert_eq!(mails.len(), 2, "one mail per member");

        let mut passwords = Vec::new();
        for (address, subject, label) in [
            ("ana@example.com", "Tu acceso a Alpha Ltd", "Contraseña:"),
            ("ben@example.com", "Your access to Alpha Ltd", "Password:"),
        ] {
            let mail = mails
                .iter()
                .find(|m| m.to == [address])
                .expect("mail to member");
            assert_eq!(mail.from, "no-reply@invoicing.test");
            assert_eq!(mail.header("Subject").as_deref(), Some(subject));
            let text = mail.text();
            assert!(text.contains(label), "{text}");
            assert!(text.contains("http://invoicing.test"));
            let hash = app.password_hash(address).await.expect("hash stored");
            assert!(hash.starts_with("$argon2id$"), "{hash}");
            let password = mailed_password(&text, &hash);
            assert!(password.chars().count() >= 16);
            assert!(mail.html().contains(&format!("<code>{password}</code>")));
            passwords.push(password);
        }
        assert_ne!(passwords[0], passwords[1]);

        // The clear password is nowhere but in the mail: not in the API's answers,
        // not in any table (jobs and the AI queue included).
        let list = app.get("/v1/members", As::Human(&app.a)).await.text();
        let everything = app.everything().await;
        for p in &passwords {
            assert!(!created.text().contains(p.as_str()));
            assert!(!list.contains(p.as_str()));
            assert!(!everything.contains(p.as_str()), "password stored in clear");
        }
        for job in app.jobs(Some("member.password")).await {
            assert_eq!(job.attempts, 1);
            assert!(job.last_error.is_none());
        }
    }
);

db_test!(an_smtp_outage_fails_no_request_and_loses_no_mail, |app| {
    let port = unused_port().unwrap();
    let outbox = tempfile::tempdir().unwrap();
    let worker =
        Running::spawn(app.worker(Some(format!("smtp://127.0.0.1:{port}")), outbox.path()));
    // The mail server is down: the request still succeeds at once.
    add(
        &app,
        &app.a,
        json!({"email": "ana@example.com", "kind": "password"}),
    )
    .await;
    let jobs = app
        .wait_for_jobs("member.password", "two failed attempts", |j| {
            j.len() == 1 && j[0].attempts >= 2 && j[0].status == "queued"
        })
        .await;
    let error = jobs[0].last_error.clone().unwrap_or_default();
    assert!(!error.is_empty(), "the failure is recorded");

    // The server comes back: the mail arrives, once, with a password that works.
    let sink = SmtpSink::start_on(port).await.unwrap();
    let mails = sink.wait_for(1, WAIT).await;
    let jobs = app
        .wait_for_jobs("member.password", "the job done", |j| j[0].status == "done")
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    worker.stop().await;
    assert_eq!(sink.messages().len(), 1, "sent exactly once");
    assert_eq!(mails[0].to, ["ana@example.com"]);
    let hash = app.password_hash("ana@example.com").await.unwrap();
    let password = mailed_password(&mails[0].text(), &hash);
    assert!(!app.everything().await.contains(&password));
    assert!(jobs[0].attempts >= 3);
    assert!(
        !jobs[0].payload.contains(&password),
        "the job keeps only the hash it issued"
    );
});

db_test!(an_existing_account_keeps_its_password_and_is_told, |app| {
    let sink = SmtpSink::start().await.unwrap();
    let outbox = tempfile::tempdir().unwrap();
    let worker = app.worker(Some(sink.url()), outbox.path());
    add(
        &app,
        &app.a,
        json!({"email": "ana@example.com", "kind": "password"}),
    )
    .await;
    worker.run_until_idle().await.unwrap();
    let hash = app.password_hash("ana@example.com").await.unwrap();

    // Company B adds the same person: no new password, a notice in Spanish.
    add(
        &app,
        &app.b,
        json!({"email": "ana@example.com", "kind": "password", "language": "es"}),
    )
    .await;
    // And an oauth invitee gets the same notice, in English.
    add(
        &app,
        &app.b,
        json!({"email": "olga@example.com", "kind": "oauth"}),
    )
    .await;
    assert_eq!(worker.run_until_idle().await.unwrap(), 2);
    assert_eq!(app.password_hash("ana@example.com").await.unwrap(), hash);
    assert!(app.password_hash("olga@example.com").await.is_none());
    let mails = sink.wait_for(3, WAIT).await;
    assert_eq!(mails.len(), 3);
    let notice = &mails[1];
    assert_eq!(notice.to, ["ana@example.com"]);
    assert_eq!(
        notice.header("Subject").as_deref(),
        Some("Ya tienes acceso a Beta Ltd")
    );
    assert!(!notice.text().contains("Contraseña"));
    let invite = &mails[2];
    assert_eq!(invite.to, ["olga@example.com"]);
    assert_eq!(
        invite.header("Subject").as_deref(),
        Some("You now have access to Beta Ltd")
    );
    assert!(invite.text().contains("Hello olga,"), "{}", invite.text());
    assert!(
        invite
            .html()
            .contains("owner added you to <strong>Beta Ltd</strong>"),
        "{}",
        invite.html()
    );
});

db_test!(without_smtp_mail_is_written_to_the_outbox, |app| {
    let outbox = tempfile::tempdir().unwrap();
    let dir = outbox.path().join("outbox");
    add(
        &app,
        &app.a,
        json!({"email": "ana@example.com", "kind": "oauth"}),
    )
    .await;
    assert_eq!(app.worker(None, &dir).run_until_idle().await.unwrap(), 1);
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].extension().and_then(|e| e.to_str()), Some("eml"));
    let eml = std::fs::read_to_string(&files[0]).unwrap();
    assert!(eml.contains("To: ana@example.com"), "{eml}");
    assert!(eml.contains("Subject: You now have access to Alpha Ltd"));
    assert_eq!(app.jobs(Some("email.send")).await[0].status, "done");
});

db_test!(
    a_mailbox_the_server_refuses_ends_the_job_dead_with_the_error,
    |app| {
        let sink = SmtpSink::start().await.unwrap();
        sink.reject("ghost@example.com");
        let outbox = tempfile::tempdir().unwrap();
        // The request succeeds: the refusal happens later, in the worker.
        add(
            &app,
            &app.a,
            json!({"email": "ghost@example.com", "kind": "oauth"}),
        )
        .await;
        let worker = app.worker(Some(sink.url()), outbox.path());
        assert_eq!(worker.run_until_idle().await.unwrap(), 1);
        let job = &app.jobs(Some("email.send")).await[0];
        assert_eq!(job.status, "dead", "a permanent refusal is not retried");
        assert_eq!(job.attempts, 1);
        let error = job.last_error.as_deref().unwrap_or_default();
        assert!(
            error.contains("refused") && error.contains("550"),
            "{error}"
        );
        assert!(sink.messages().is_empty());
    }
);
