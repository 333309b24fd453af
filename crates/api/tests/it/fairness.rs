//! Fairness across companies (issue #27): one company's backlog of background jobs does not
//! delay another company's mail or reports, and a company's report queue is capped. (Render
//! and snippet slots are tested through the binary, `crates/cli/tests/hardening.rs`: a
//! snippet that runs to the deadline must run in a child process that can be killed.)

use std::sync::{Arc, Mutex};

use jobs::{Registry, Worker};
use serde_json::{Value, json};
use store::jobs::kind;

use crate::{
    background::{context, fast_config},
    support::*,
};

/// Jobs in the order a worker ran them: kind and company.
type Runs = Arc<Mutex<Vec<(String, Option<store::CompanyId>)>>>;

/// A worker that runs every kind of this release as a no-op, recording the order of claims.
fn recording_worker(app: &TestApp, runs: &Runs, outbox: &std::path::Path) -> Worker {
    let mut registry = Registry::default();
    for k in [
        kind::EMAIL_SEND,
        kind::MEMBER_PASSWORD,
        kind::JOBS_PRUNE,
        kind::REPORT_RENDER,
        kind::REPORT_MAIL,
        kind::VERIFACTU_SUBMIT,
        kind::VERIFACTU_CHECK_AUTHORIZATION,
    ] {
        let runs = runs.clone();
        registry.register(k, move |_, job| {
            let runs = runs.clone();
            async move {
                runs.lock().unwrap().push((job.kind, job.company_id));
                Ok(())
            }
        });
    }
    Worker::new(context(&app.db, None, outbox), registry, fast_config())
}

const TEN_LOCALES: [&str; 10] = ["en", "es", "de", "fr", "it", "pt", "nl", "da", "sv", "fi"];

fn report(locales: &[&str]) -> Value {
    json!({"report_type": "business_overview", "period_start": "2026-01-01T00:00:00Z",
        "period_end": "2026-04-01T00:00:00Z", "locales": locales})
}

db_test!(
    another_companys_mail_and_reports_do_not_wait_behind_a_backlog,
    |app| {
        app.settle(&app.a).await;
        app.settle(&app.b).await;
        // Company A queues forty report renders...
        for _ in 0..4 {
            app.call(
                "POST",
                "/v1/reports",
                As::Human(&app.a),
                Some(report(&TEN_LOCALES)),
            )
            .await
            .expect(201);
        }
        // ...then company B asks for one report and adds a member (a password mail).
        app.call(
            "POST",
            "/v1/reports",
            As::Human(&app.b),
            Some(report(&["en"])),
        )
        .await
        .expect(201);
        app.call(
            "POST",
            "/v1/members",
            As::Human(&app.b),
            Some(json!({"email": "new@beta.test", "kind": "password"})),
        )
        .await
        .expect(201);

        let runs = Runs::default();
        let outbox = tempfile::tempdir().unwrap();
        let ran = recording_worker(&app, &runs, outbox.path())
            .run_until_idle()
            .await
            .unwrap();
        assert!(ran >= 42, "{ran}");
        let runs = runs.lock().unwrap().clone();
        let b = Some(app.b.company_id.clone());
        // Mail is never behind reports, whoever queued them.
        assert_eq!(
            runs[0],
            (kind::MEMBER_PASSWORD.to_owned(), b.clone()),
            "{runs:?}"
        );
        // Within reports, companies take turns: B's comes among the first, not after A's forty.
        let renders: Vec<_> = runs
            .iter()
            .filter(|(k, _)| k == kind::REPORT_RENDER)
            .collect();
        assert_eq!(renders.len(), 41);
        let b_turn = renders.iter().position(|(_, c)| *c == b).unwrap();
        assert!(
            b_turn <= 2,
            "B's report was render {b_turn} of 41: {renders:?}"
        );
    }
);

db_test!(
    a_company_with_a_full_report_queue_gets_429_and_others_do_not,
    |app| {
        app.settle(&app.a).await;
        app.settle(&app.b).await;
        // The default cap: fifty renders waiting per company.
        for _ in 0..5 {
            app.call(
                "POST",
                "/v1/reports",
                As::Human(&app.a),
                Some(report(&TEN_LOCALES)),
            )
            .await
            .expect(201);
        }
        let before = app.fingerprint().await;
        let refused = app
            .call(
                "POST",
                "/v1/reports",
                As::Human(&app.a),
                Some(report(&["en"])),
            )
            .await
            .expect(429);
        let retry: u64 = refused.headers["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(retry >= 1, "{retry}");
        assert!(refused.content_type().starts_with("text/plain"));
        let text = refused.text();
        assert!(text.contains("50") && text.contains("waiting"), "{text}");
        assert_eq!(app.fingerprint().await, before, "nothing written");
        // An AI caller is refused the same way (its dry run is refused).
        app.call("POST", "/v1/reports", As::Ai(&app.a), Some(report(&["en"])))
            .await
            .expect(429);
        // Another company is not affected.
        app.call(
            "POST",
            "/v1/reports",
            As::Human(&app.b),
            Some(report(&["en"])),
        )
        .await
        .expect(201);
        // Once A's renders have run, A may ask again.
        let runs = Runs::default();
        let outbox = tempfile::tempdir().unwrap();
        recording_worker(&app, &runs, outbox.path())
            .run_until_idle()
            .await
            .unwrap();
        app.call(
            "POST",
            "/v1/reports",
            As::Human(&app.a),
            Some(report(&["en"])),
        )
        .await
        .expect(201);
    }
);
