//! Recurring invoices across processes: two `invoicing serve` processes, each with its
//! worker, on one database, looking for due periods every second. A schedule that
//! started years ago is caught up (several passes of 100 periods) with exactly one draft
//! per period, whichever process makes it.

mod common;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::*;
use serde_json::json;

/// Days from 1970-01-01 to Monday 2020-01-06, the schedule's start.
const START_DAYS: u64 = 18_267;

fn drafts_of(base: &str, me: &Company, id: &str) -> usize {
    let (status, page) = call(
        base,
        me,
        "GET",
        &format!("/v1/invoices?recurring_invoice_id={id}&limit=500"),
        None,
    );
    assert_eq!(status, 200, "{page}");
    page["data"].as_array().expect("data").len()
}

fn two_servers_make_each_period_once(db: TestDb) {
    let boot = migrate_and_bootstrap(
        &db,
        &[
            "--company-name",
            "Recurring Ltd",
            "--email",
            "owner@recurring.test",
        ],
    );
    let me = Company::from_bootstrap(&boot);
    let start = || {
        let mut cmd = db.command(&["serve", "--no-mcp"]);
        cmd.env("INVOICING_SCHEDULE_SECONDS", "1");
        Server::start_command(cmd)
    };
    let a = start();
    let b = start();

    let (status, customer) = call(
        &a.base,
        &me,
        "POST",
        "/v1/entities",
        Some(
            json!({"name": "Weekly Customer Ltd", "type": "IE:LTD", "fiscal_id": "IE6388047V",
            "address": {"lines": ["2 Quay St"], "city": "Dublin", "zipcode": "D01", "country": "IE"}}),
        ),
    );
    assert_eq!(status, 201, "{customer}");
    let (status, schedule) = call(
        &b.base,
        &me,
        "POST",
        "/v1/recurring-invoices",
        Some(
            json!({"recipient_id": customer["id"], "frequency": "weekly", "start_date": "2020-01-06",
            "lines": [{"concept": "Weekly service", "subtotal": 1000}]}),
        ),
    );
    assert_eq!(status, 201, "{schedule}");
    let id = schedule["id"].as_str().expect("id").to_owned();

    let today = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
        / 86_400;
    let expected = usize::try_from((today - START_DAYS) / 7 + 1).expect("periods");
    assert!(expected > 300, "{expected} weeks since 2020-01-06");

    // Both workers catch up, 100 periods a pass each, until every started week has its draft.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (_, s) = call(
            &a.base,
            &me,
            "GET",
            &format!("/v1/recurring-invoices/{id}"),
            None,
        );
        let made = drafts_of(&a.base, &me, &id);
        assert!(made <= expected, "{made} drafts for {expected} periods");
        if made == expected {
            assert!(s["last_error"].is_null(), "{s}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{made} of {expected} drafts after 120 s\n--- a ---\n{}\n--- b ---\n{}",
            a.logs(),
            b.logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // More passes of both workers make nothing more.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(drafts_of(&b.base, &me, &id), expected);
    assert!(a.stop().success());
    assert!(b.stop().success());
}

#[test]
fn two_serve_processes_make_each_recurring_period_once_on_postgres() {
    two_servers_make_each_period_once(TestDb::postgres());
}

#[test]
fn two_serve_processes_make_each_recurring_period_once_on_sqlite() {
    two_servers_make_each_period_once(TestDb::sqlite());
}
