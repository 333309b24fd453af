//! The hand-tuned SQL of the store, tested at the store's own interface on SQLite and
//! PostgreSQL (each test in a database of its own, dropped after): the gapless counter
//! upsert, the fair job claim under concurrent workers, and the query plans that keep
//! claiming and turn-keeping independent of the queue's length.

use std::collections::HashSet;

use sqlx::{Connection as _, Executor as _};
use store::{Backend, Db, jobs};

/// A migrated database of one engine, dropped when the test ends.
struct TestDb {
    db: Db,
    cleanup: Option<(String, String)>,
    _dir: Option<tempfile::TempDir>,
}

impl TestDb {
    /// SQLite migrated up to and including migration `upto` (all of them with `None`).
    async fn sqlite_upto(upto: Option<i64>) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("store.db").display());
        let db = Db::connect(&url).await.expect("connect to SQLite");
        migrate_upto(&db, upto).await;
        Self {
            db,
            cleanup: None,
            _dir: Some(dir),
        }
    }

    /// `None` (with a warning) when no PostgreSQL answers and none is required.
    async fn postgres() -> Option<Self> {
        Self::postgres_upto(None).await
    }

    /// Like [`TestDb::postgres`], migrated up to and including migration `upto`.
    async fn postgres_upto(upto: Option<i64>) -> Option<Self> {
        let admin = std::env::var("INVOICING_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
        let mut conn = match sqlx::PgConnection::connect(&admin).await {
            Ok(c) => c,
            Err(e) if std::env::var("INVOICING_REQUIRE_POSTGRES").as_deref() != Ok("1") => {
                eprintln!("warning: no PostgreSQL at {admin} ({e}); skipping");
                return None;
            }
            Err(e) => panic!("PostgreSQL is required: {e}"),
        };
        let name = format!("store_sql_{}", uuid::Uuid::new_v4().simple());
        conn.execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .await
            .expect("create the test database");
        let base = admin.rsplit_once('/').map_or(admin.as_str(), |(b, _)| b);
        let db = Db::connect(&format!("{base}/{name}"))
            .await
            .expect("connect to PostgreSQL");
        migrate_upto(&db, upto).await;
        Some(Self {
            db,
            cleanup: Some((admin, name)),
            _dir: None,
        })
    }

    /// A company row (the counters reference companies).
    async fn company(&self) -> store::CompanyId {
        let id = store::CompanyId::generate();
        let mut conn = self.db.pool().acquire().await.expect("connection");
        sqlx::query(
            "INSERT INTO companies (id, name, fiscal_id, created_at) VALUES ($1, 'Co', 'X1', 0)",
        )
        .bind(&id)
        .execute(&mut *conn)
        .await
        .expect("insert a company");
        id
    }

    async fn drop_db(self) {
        self.db.close().await;
        if let Some((admin, name)) = self.cleanup {
            let mut conn = sqlx::PgConnection::connect(&admin).await.expect("admin");
            conn.execute(sqlx::AssertSqlSafe(format!(
                "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
            )))
            .await
            .expect("drop the test database");
        }
    }
}

/// Applies the store's migrations up to and including `upto` (all with `None`), as a
/// database of an earlier release would have them: from a copy of the migrations
/// directory holding only those files.
async fn migrate_upto(db: &Db, upto: Option<i64>) {
    let Some(upto) = upto else {
        db.migrate().await.expect("migrate");
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let all = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    for entry in std::fs::read_dir(&all).expect("the migrations") {
        let path = entry.expect("a migration").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let version: i64 = name
            .split('_')
            .next()
            .unwrap_or_default()
            .parse()
            .unwrap_or(i64::MAX);
        if version <= upto {
            std::fs::copy(&path, dir.path().join(name)).expect("copy a migration");
        }
    }
    sqlx::migrate::Migrator::new(dir.path())
        .await
        .expect("read the migrations")
        .run(db.pool())
        .await
        .expect("migrate to the earlier release");
}

/// Runs `body` on a fresh SQLite database and on a fresh PostgreSQL database.
macro_rules! both_engines {
    ($name:ident, |$db:ident| $body:block) => {
        both_engines!($name, upto None, |$db| $body);
    };
    ($name:ident, upto $upto:expr, |$db:ident| $body:block) => {
        mod $name {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite() {
                let $db = TestDb::sqlite_upto($upto).await;
                $body
                $db.drop_db().await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn postgres() {
                let Some($db) = TestDb::postgres_upto($upto).await else { return };
                $body
                $db.drop_db().await;
            }
        }
    };
}

// The counter upsert hands out 1, 2, 3... per company, series and year; a rolled-back
// transaction gives its number back (no gap), and a new year starts at `first`.
both_engines!(
    counters_are_gapless_and_give_back_rolled_back_numbers,
    |t| {
        let a = t.company().await;
        let b = t.company().await;
        let take = |company: store::CompanyId,
                    series: &'static str,
                    year: i64,
                    first: i64,
                    commit: bool| {
            let db = t.db.clone();
            async move {
                let mut tx = db.begin_write().await.expect("begin");
                let n = store::counters::next(tx.conn(), &company, series, year, first)
                    .await
                    .expect("take a number");
                if commit {
                    tx.commit().await.expect("commit");
                } else {
                    tx.rollback().await.expect("rollback");
                }
                n
            }
        };
        assert_eq!(take(a.clone(), "invoice", 2026, 1, true).await, 1);
        assert_eq!(take(a.clone(), "invoice", 2026, 1, true).await, 2);
        assert_eq!(take(a.clone(), "invoice", 2026, 1, false).await, 3);
        assert_eq!(
            take(a.clone(), "invoice", 2026, 1, true).await,
            3,
            "the rolled-back 3 is given again"
        );
        assert_eq!(
            take(a.clone(), "corrective", 2026, 1, true).await,
            1,
            "series count apart"
        );
        assert_eq!(
            take(a.clone(), "invoice", 2027, 40, true).await,
            40,
            "a new year starts at `first`"
        );
        assert_eq!(
            take(b.clone(), "invoice", 2026, 1, true).await,
            1,
            "companies count apart"
        );
    }
);

// Forty transactions taking numbers at once (PostgreSQL: really at once, queued on the
// counter row's lock; SQLite: one writer at a time) get 1..=40, each once.
both_engines!(concurrent_takers_share_no_number_and_skip_none, |t| {
    let company = t.company().await;
    let mut tasks = Vec::new();
    for _ in 0..40 {
        let db = t.db.clone();
        let company = company.clone();
        tasks.push(tokio::spawn(async move {
            let mut tx = db.begin_write().await.expect("begin");
            let n = store::counters::next(tx.conn(), &company, "invoice", 2026, 1)
                .await
                .expect("take");
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            tx.commit().await.expect("commit");
            n
        }));
    }
    let mut got = Vec::new();
    for task in tasks {
        got.push(task.await.expect("task"));
    }
    got.sort_unstable();
    assert_eq!(got, (1..=40).collect::<Vec<i64>>());
});

// A company's new drafts do not queue on its draft counter on PostgreSQL: a draft that is
// the first write of its transaction takes its number ahead of that transaction, in a
// statement that commits on its own, so a second draft is stored and committed (here the
// self-committing way a new draft through the API is) while the first's transaction is
// still open, and a rolled-back draft's number stays used. Draft numbers order drafts; they
// are not the law's gapless numbers (see `counters_are_gapless_...` for those). On SQLite,
// whose single writer runs one transaction at a time, the number is taken inside the draft's
// transaction and a rollback gives it back. Taken inside a transaction that has begun, or
// one whose owner did not allow a statement ahead of it (an AI caller's dry run, which must
// leave nothing), the number is given back on both.
both_engines!(
    a_drafts_number_is_taken_ahead_of_its_transaction_on_postgres,
    |t| {
        let db = &t.db;
        let postgres = db.backend() == Backend::Postgres;
        let company = t.company().await;
        customer(
            &mut db.pool().acquire().await.expect("connection"),
            &company,
        )
        .await;

        let mut first = db.begin_write_deferred().await.expect("open");
        first.allow_ahead();
        assert_eq!(store_draft(&mut first, &company).await, 1);
        let expected_next = if postgres {
            // Stored and committed while `first` is open: it did not wait for `first`'s lock on
            // the counter's row (which it would have held until its end).
            let mut second = db.begin_write_deferred().await.expect("open");
            second.allow_closing();
            second.allow_ahead();
            let n = tokio::time::timeout(
                std::time::Duration::from_secs(60),
                store_draft(&mut second, &company),
            )
            .await
            .expect("the second draft waited for the first draft's transaction to end");
            assert_eq!(n, 2);
            second.commit().await.expect("nothing left to commit");
            first.rollback().await.expect("rollback");
            // 1 stays used, though its draft was rolled back.
            3
        } else {
            first.rollback().await.expect("rollback");
            // 1 is given back with its draft.
            1
        };
        let mut tx = db.begin_write_deferred().await.expect("open");
        tx.allow_ahead();
        assert_eq!(store_draft(&mut tx, &company).await, expected_next);
        tx.commit().await.expect("commit");

        // Inside a transaction that has begun, and where a statement ahead is not allowed:
        // the number is the transaction's, and its rollback gives it back.
        let mut tx = db.begin_write_deferred().await.expect("open");
        tx.allow_ahead();
        store::Writing::conn(&mut tx).await.expect("begin");
        assert_eq!(store_draft(&mut tx, &company).await, expected_next + 1);
        tx.rollback().await.expect("rollback");
        let mut dry = db.begin_write_deferred().await.expect("open");
        assert_eq!(store_draft(&mut dry, &company).await, expected_next + 1);
        dry.rollback().await.expect("rollback");
        let mut tx = db.begin_write_deferred().await.expect("open");
        tx.allow_ahead();
        assert_eq!(
            store_draft(&mut tx, &company).await,
            expected_next + 1,
            "a number taken inside a rolled-back transaction was not given back"
        );
        tx.commit().await.expect("commit");

        let mut conn = db.pool().acquire().await.expect("connection");
        let mut numbers: Vec<i64> =
            sqlx::query_scalar("SELECT order_number FROM invoices WHERE company_id = $1")
                .bind(&company)
                .fetch_all(&mut *conn)
                .await
                .expect("the drafts");
        numbers.sort_unstable();
        let stored = if postgres { vec![2, 3, 4] } else { vec![1, 2] };
        assert_eq!(
            numbers, stored,
            "the committed drafts and only they are stored"
        );
    }
);

/// Stores a new draft of `company` for its customer (see [`customer`]) through `tx`,
/// returning its number.
async fn store_draft(tx: &mut store::WriteTx, company: &store::CompanyId) -> i64 {
    let row = store::invoices::InvoiceRow {
        id: store::new_id(),
        company_id: company.clone(),
        recipient_id: "customer".to_owned(),
        series: store::invoices::Series::Invoice,
        status: store::invoices::InvoiceStatus::Draft,
        origin: store::invoices::Origin::Api,
        supply_type: "services".to_owned(),
        currency_code: "EUR".to_owned(),
        treatment: None,
        invoice_number: None,
        invoice_year: None,
        reference: None,
        issued_at: None,
        order_number: None,
        order_year: Some(2026),
        net_total: 0,
        tax_total: 0,
        withholding_total: 0,
        total: 0,
        line_count: 0,
        lines_json: "[]".to_owned(),
        custom_placeholder_values_json: "{}".to_owned(),
        exchange_rates_json: "{}".to_owned(),
        bank_accounts_json: "[]".to_owned(),
        issuer_snapshot_json: None,
        recipient_snapshot_json: None,
        corrected_invoice_id: None,
        correction_reason: None,
        proforma_id: None,
        created_at: 0,
        updated_at: None,
        due_date: None,
        paid_minor: 0,
        details_json: "{}".to_owned(),
        document_json: None,
        recurring_invoice_id: None,
    };
    store::invoices::insert_numbered_draft(tx, &row)
        .await
        .expect("store a draft")
        .order_number
}

async fn enqueue(db: &Db, kind: &str, company: Option<&str>) -> String {
    let mut job = jobs::NewJob::new(kind, serde_json::json!({}));
    if let Some(c) = company {
        job = job.for_company(&store::CompanyId::parse(c).expect("a company id"));
    }
    let mut tx = db.begin_write().await.expect("begin");
    let id = jobs::enqueue(tx.conn(), &job)
        .await
        .expect("enqueue")
        .expect("inserted");
    tx.commit().await.expect("commit");
    id
}

// Four workers claiming at once from sixty queued jobs take every job exactly once.
both_engines!(concurrent_workers_claim_each_job_once, |t| {
    let mut queued = HashSet::new();
    for i in 0..60 {
        let company = format!("company-{}", i % 5);
        queued.insert(enqueue(&t.db, jobs::kind::EMAIL_SEND, Some(&company)).await);
    }
    let mut workers = Vec::new();
    for w in 0..4 {
        let db = t.db.clone();
        workers.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            let lease = store::now_micros() + 60_000_000;
            while let Some(job) = jobs::claim(
                &db,
                &format!("worker-{w}"),
                &[jobs::kind::EMAIL_SEND],
                lease,
            )
            .await
            .expect("claim")
            {
                mine.push(job.id);
            }
            mine
        }));
    }
    let mut claimed = Vec::new();
    for w in workers {
        claimed.extend(w.await.expect("worker"));
    }
    let distinct: HashSet<String> = claimed.iter().cloned().collect();
    assert_eq!(distinct.len(), claimed.len(), "no job was claimed twice");
    assert_eq!(distinct, queued, "every job was claimed");
});

// Claims go by class, then by turn: a company's backlog of report renders queued first
// does not keep another company's mail waiting, and within a class two companies take
// turns however many jobs the first queued.
both_engines!(claims_go_by_class_then_by_turn, |t| {
    for _ in 0..5 {
        enqueue(&t.db, jobs::kind::REPORT_RENDER, Some("big")).await;
    }
    for _ in 0..3 {
        enqueue(&t.db, jobs::kind::EMAIL_SEND, Some("big")).await;
    }
    enqueue(&t.db, jobs::kind::REPORT_RENDER, Some("small")).await;
    enqueue(&t.db, jobs::kind::EMAIL_SEND, Some("small")).await;
    let kinds = [jobs::kind::REPORT_RENDER, jobs::kind::EMAIL_SEND];
    let lease = store::now_micros() + 60_000_000;
    let mut order = Vec::new();
    while let Some(job) = jobs::claim(&t.db, "w", &kinds, lease).await.expect("claim") {
        order.push(format!(
            "{}:{}",
            job.kind,
            job.company_id.map(String::from).unwrap_or_default()
        ));
    }
    assert_eq!(
        order,
        [
            "email.send:big",
            "email.send:small",
            "email.send:big",
            "email.send:big",
            "report.render:big",
            "report.render:small",
            "report.render:big",
            "report.render:big",
            "report.render:big",
            "report.render:big",
        ]
    );
});

// A worker with nothing to claim does not wait for the writer: while a request holds it
// (on SQLite the single writer; on PostgreSQL a lock that stops any write to the jobs
// table), a claim that finds no due job of its kinds answers at once, and once the writer
// is free a due job is claimed as before.
both_engines!(an_idle_claim_does_not_wait_for_the_writer, |t| {
    let other_kind = enqueue(&t.db, jobs::kind::REPORT_RENDER, Some("busy")).await;
    let mut held = t.db.begin_write().await.expect("begin");
    if t.db.backend() == Backend::Postgres {
        held.conn()
            .execute("LOCK TABLE jobs IN EXCLUSIVE MODE")
            .await
            .expect("lock the jobs table");
    }
    let lease = store::now_micros() + 60_000_000;
    // A hang guard, not a timing assertion: before the look-first, this claim waited for
    // the held writer, which is given back only after it.
    let idle = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        jobs::claim(&t.db, "w", &[jobs::kind::EMAIL_SEND], lease),
    )
    .await
    .expect("an idle claim answers without waiting for the writer")
    .expect("claim");
    assert!(idle.is_none(), "no job of its kinds is due");
    held.rollback().await.expect("rollback");
    let due = jobs::claim(&t.db, "w", &[jobs::kind::REPORT_RENDER], lease)
        .await
        .expect("claim")
        .expect("the due job is claimed once the writer is free");
    assert_eq!(due.id, other_kind);
});

// Migration 0024 on a database that already holds invoices with nothing to pay: the
// dashboard's stored counts, as the release before left them (a zero-total invoice counted
// issued but neither paid nor unpaid), come out as a rebuild from the invoices makes them.
both_engines!(nothing_to_pay_is_paid_in_counts_kept_before_it, upto Some(23), |t| {
    let company = t.company().await;
    let mut conn = t.db.pool().acquire().await.expect("connection");
    customer(&mut conn, &company).await;
    // Paid in full, nothing to pay (a zero total), owed and unpaid.
    for (id, number, total, paid) in [("paid", 1, 1000, 1000), ("zero", 2, 0, 0), ("owed", 3, 500, 0)] {
        sqlx::query(
            "INSERT INTO invoices (id, company_id, recipient_id, series, status, origin, supply_type, \
             currency_code, invoice_number, invoice_year, reference, issued_at, net_total, tax_total, \
             withholding_total, total, line_count, lines_json, created_at, paid_minor) \
             VALUES ($1, $2, 'customer', 'invoice', 'issued', 'api', 'services', 'EUR', $3, 2026, $1, 0, \
             $4, 0, 0, $4, 1, '[]', 0, $5)",
        )
        .bind(id)
        .bind(&company)
        .bind(number)
        .bind(total)
        .bind(paid)
        .execute(&mut *conn)
        .await
        .expect("an issued invoice");
    }
    sqlx::query(
        "INSERT INTO dashboard_counts (company_id, issued, corrective, paid, partially_paid, corrected) \
         VALUES ($1, 3, 0, 1, 0, 0)",
    )
    .bind(&company)
    .execute(&mut *conn)
    .await
    .expect("the counts the release before kept");
    drop(conn);

    t.db.migrate().await.expect("migrate to this release");
    let mut conn = t.db.pool().acquire().await.expect("connection");
    let now = store::now_micros();
    let migrated = store::dashboard::invoice_counts(&mut conn, &company, now)
        .await
        .expect("counts");
    assert_eq!(
        (migrated.issued, migrated.paid, migrated.unpaid, migrated.overdue),
        (3, 2, 1, 0),
        "the zero-total invoice is counted paid: {migrated:?}"
    );
    store::dashboard::rebuild(&mut conn, &company)
        .await
        .expect("rebuild");
    let rebuilt = store::dashboard::invoice_counts(&mut conn, &company, now)
        .await
        .expect("counts");
    assert_eq!(
        format!("{migrated:?}"),
        format!("{rebuilt:?}"),
        "the migrated counts are what a rebuild from the invoices makes"
    );
});

// Migration 0027 on a database the release before kept rollups for: the counts move into
// the day rows and the first invoices into the customer rows, made again from the
// invoices, and the dashboard then reads what a rebuild makes: counts by payment state and
// correction, each customer counted once over currencies, first invoices by ordinary
// invoices only.
both_engines!(counts_and_first_invoices_move_into_the_rows_issuing_writes, upto Some(26), |t| {
    let company = t.company().await;
    let mut conn = t.db.pool().acquire().await.expect("connection");
    customer(&mut conn, &company).await;
    let day = store::dashboard::DAY;
    // (id, series, currency, issued day, total, paid, due day, the invoice it corrects)
    let invoices = [
        ("paid", "invoice", "EUR", 10, 1000, 1000, Some(20), None),
        ("part", "invoice", "EUR", 10, 500, 100, Some(11), None),
        ("owed", "invoice", "USD", 12, 700, 0, Some(13), None),
        // Corrects `paid`: its customer's first ordinary invoice stays day 10.
        ("fix1", "corrective", "EUR", 5, -1000, 0, None, Some("paid")),
        ("fix2", "corrective", "EUR", 14, -1000, 0, None, Some("paid")),
    ];
    for (number, (id, series, currency, issued, total, paid, due, corrects)) in
        (1_i64..).zip(invoices)
    {
        sqlx::query(
            "INSERT INTO invoices (id, company_id, recipient_id, series, status, origin, supply_type, \
             currency_code, invoice_number, invoice_year, reference, issued_at, net_total, tax_total, \
             withholding_total, total, line_count, lines_json, created_at, paid_minor, due_date, \
             corrected_invoice_id) \
             VALUES ($1, $2, 'customer', $3, 'issued', 'api', 'services', $4, $5, 2026, $1, $6, \
             $7, 0, 0, $7, 1, '[]', 0, $8, $9, $10)",
        )
        .bind(id)
        .bind(&company)
        .bind(series)
        .bind(currency)
        .bind(number)
        .bind(issued * day + 1)
        .bind(total)
        .bind(paid)
        .bind(due.map(|d| d * day))
        .bind(corrects)
        .execute(&mut *conn)
        .await
        .expect("an issued invoice");
    }
    // What the release before kept, stale on purpose: the migration makes the rows again
    // from the invoices rather than trusting them.
    for sql in [
        "INSERT INTO dashboard_daily_revenue (company_id, currency_code, day, net_total) VALUES ($1, 'EUR', 1, 42)",
        "INSERT INTO dashboard_customer_revenue (company_id, currency_code, recipient_id, net_total, invoice_count) \
         VALUES ($1, 'EUR', 'customer', 42, 9)",
        "INSERT INTO dashboard_customer_firsts (company_id, recipient_id, first_issued) VALUES ($1, 'customer', 1)",
        "INSERT INTO dashboard_counts (company_id, issued, corrective, paid, partially_paid, corrected) \
         VALUES ($1, 9, 9, 9, 9, 9)",
        // Kept as it is (the unpaid invoices' due days, right).
        "INSERT INTO dashboard_unpaid_due (company_id, day, invoices) VALUES ($1, 11, 1), ($1, 13, 1)",
    ] {
        sqlx::query(sql)
            .bind(&company)
            .execute(&mut *conn)
            .await
            .expect("a rollup row of the release before");
    }
    drop(conn);

    t.db.migrate().await.expect("migrate to this release");
    let mut conn = t.db.pool().acquire().await.expect("connection");
    let now = 16 * day;
    let dashboard = |counts: store::dashboard::CountsRow, customers: (i64, i64), eur, revenue| {
        format!("{counts:?} customers {customers:?} top {eur:?} revenue {revenue:?}")
    };
    let read = async |conn: &mut sqlx::AnyConnection| {
        let counts = store::dashboard::invoice_counts(conn, &company, now)
            .await
            .expect("counts");
        // The customer's first ordinary invoice is on day 10, not the corrective one's 5.
        let customers = store::dashboard::customer_stats(conn, &company, 10 * day, 11 * day)
            .await
            .expect("customers");
        let eur = store::dashboard::top_customers(conn, &company, "EUR", 5)
            .await
            .expect("top customers")
            .into_iter()
            .map(|c| (c.revenue, c.invoice_count))
            .collect::<Vec<_>>();
        let revenue = store::dashboard::revenue_by_currency(conn, &company, None, None)
            .await
            .expect("revenue");
        (counts, customers, eur, revenue)
    };
    let (counts, customers, eur, revenue) = read(&mut conn).await;
    assert_eq!(
        (
            counts.issued,
            counts.paid,
            counts.partially_paid,
            counts.overdue,
            counts.unpaid,
            counts.corrected,
            counts.corrective
        ),
        (3, 1, 0, 2, 0, 1, 2),
        "three ordinary invoices: one paid, one partly paid past its due day and one unpaid \
         past it (both overdue), one corrected twice: {counts:?}"
    );
    assert_eq!(customers, (1, 1), "one customer, first invoiced on day 10");
    assert_eq!(eur, [(1000 + 500 - 2000, 4)]);
    assert_eq!(
        revenue,
        [("EUR".to_owned(), -500), ("USD".to_owned(), 700)]
    );
    let migrated = dashboard(counts, customers, eur, revenue);
    store::dashboard::rebuild(&mut conn, &company)
        .await
        .expect("rebuild");
    let (counts, customers, eur, revenue) = read(&mut conn).await;
    assert_eq!(
        migrated,
        dashboard(counts, customers, eur, revenue),
        "the migrated rollups are what a rebuild from the invoices makes"
    );
});

// Migration 0025: the indexes over an invoice's number, the invoice it corrects, the schedule
// that made it and its issue time hold only the rows their statements read (a draft writes
// none of them), and those statements still walk them. Numbers stay unique per company,
// series and year, on invoices numbered before the migration and after it.
both_engines!(invoice_indexes_hold_only_the_rows_read_through_them, upto Some(24), |t| {
    let company = t.company().await;
    let mut conn = t.db.pool().acquire().await.expect("connection");
    customer(&mut conn, &company).await;
    // (id, series, status, number, issued at, the invoice it corrects, its schedule)
    type Row = (&'static str, &'static str, &'static str, Option<i64>, Option<i64>, Option<&'static str>, Option<&'static str>);
    let db = &t.db;
    let insert = |row: Row| {
        let company = company.clone();
        async move {
            let (id, series, status, number, issued_at, corrects, schedule) = row;
            sqlx::query(
                "INSERT INTO invoices (id, company_id, recipient_id, series, status, origin, supply_type, \
                 currency_code, invoice_number, invoice_year, reference, issued_at, net_total, tax_total, \
                 withholding_total, total, line_count, lines_json, created_at, corrected_invoice_id, \
                 recurring_invoice_id) \
                 VALUES ($1, $2, 'customer', $3, $4, 'api', 'services', 'EUR', $5, \
                 CASE WHEN $5 IS NULL THEN NULL ELSE 2026 END, $1, $6, 100, 0, 0, 100, 1, '[]', 0, $7, $8)",
            )
            .bind(id)
            .bind(&company)
            .bind(series)
            .bind(status)
            .bind(number)
            .bind(issued_at)
            .bind(corrects)
            .bind(schedule)
            .execute(&mut *db.pool().acquire().await.expect("connection"))
            .await
        }
    };
    for row in [
        ("one", "invoice", "issued", Some(1), Some(10), None, None),
        ("fix", "corrective", "issued", Some(1), Some(20), Some("one"), None),
        ("draft", "invoice", "draft", None, None, None, None),
        ("monthly", "invoice", "draft", None, None, None, Some("schedule")),
    ] {
        insert(row).await.expect("an invoice of the release before");
    }
    drop(conn);

    t.db.migrate().await.expect("migrate to this release");
    insert(("two", "invoice", "issued", Some(2), Some(30), None, None))
        .await
        .expect("the next number");
    insert(("draft 2", "invoice", "draft", None, None, None, None))
        .await
        .expect("drafts have no number to share");
    for (taken, id) in [(1, "again"), (2, "again 2")] {
        assert!(
            insert((id, "invoice", "issued", Some(taken), Some(40), None, None))
                .await
                .is_err(),
            "number {taken} of 2026 is taken (numbered {} the migration)",
            if taken == 1 { "before" } else { "after" }
        );
    }
    insert(("fix 2", "corrective", "issued", Some(2), Some(50), Some("two"), None))
        .await
        .expect("the corrective series numbers on its own");

    let c = format!("'{company}'");
    let reads = [
        (
            "SELECT COUNT(*) FROM invoices WHERE corrected_invoice_id = 'one' AND status = 'issued' AND id <> 'x'"
                .to_owned(),
            "invoices_corrected",
            1,
        ),
        (
            format!(
                "SELECT COUNT(*) FROM invoices WHERE company_id = {c} AND recurring_invoice_id = 'schedule'"
            ),
            "invoices_recurring",
            1,
        ),
        (
            format!(
                "SELECT COUNT(*) FROM invoices i WHERE i.company_id = {c} AND i.status = 'issued' \
                 AND i.issued_at >= 15 AND i.issued_at < 45"
            ),
            "invoices_company_issued",
            2,
        ),
    ];
    let mut conn = t.db.pool().acquire().await.expect("connection");
    for (sql, index, count) in reads {
        let found: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.clone()))
            .fetch_one(&mut *conn)
            .await
            .expect("count");
        assert_eq!(found, count, "{sql}");
        let p = plan(&t.db, &sql).await;
        assert!(p.contains(index), "{sql} walks {index}:\n{p}");
    }
    // Partial: a draft writes no entry in any of them.
    let definition = match t.db.backend() {
        Backend::Sqlite => "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = $1",
        Backend::Postgres => "SELECT indexdef FROM pg_indexes WHERE indexname = $1",
    };
    for index in [
        "invoices_number",
        "invoices_corrected",
        "invoices_recurring",
        "invoices_company_issued",
    ] {
        let sql: String = sqlx::query_scalar(definition)
            .bind(index)
            .fetch_one(&mut *conn)
            .await
            .expect("the index's definition");
        assert!(
            sql.to_uppercase().contains(" WHERE "),
            "{index} holds only the rows read through it: {sql}"
        );
    }
});

// The database refuses an invoice row that breaks what the migrations' checks say once
// PostgreSQL's four checks of `invoices` have become one (`store::postgres_checks`; SQLite
// keeps the four), on a database that held invoices before the swap: its rows stay, and the
// one constraint is in force for them too (validated), however many times the step runs.
both_engines!(invoice_rows_are_checked_by_one_constraint, upto Some(27), |t| {
    let company = t.company().await;
    let mut conn = t.db.pool().acquire().await.expect("connection");
    customer(&mut conn, &company).await;
    let db = &t.db;
    let insert = |id: &'static str, series: &'static str, status: &'static str, supply: &'static str, number: Option<i64>| {
        let company = company.clone();
        async move {
            let mut conn = db.pool().acquire().await.expect("connection");
            sqlx::query(
                "INSERT INTO invoices (id, company_id, recipient_id, series, status, origin, supply_type, \
                 currency_code, invoice_number, invoice_year, net_total, tax_total, withholding_total, \
                 total, line_count, lines_json, created_at) \
                 VALUES ($1, $2, 'customer', $3, $4, 'api', $5, 'EUR', $6, 2026, 0, 0, 0, 0, 0, '[]', 0)",
            )
            .bind(id)
            .bind(&company)
            .bind(series)
            .bind(status)
            .bind(supply)
            .bind(number)
            .execute(&mut *conn)
            .await
            .map(drop)
        }
    };
    insert("before", "invoice", "issued", "goods", Some(1))
        .await
        .expect("an issued invoice before the swap");
    // The current release's start, twice at once (two servers starting together).
    let (a, b) = tokio::join!(t.db.migrate(), t.db.migrate());
    a.expect("migrate");
    b.expect("migrate again");
    t.db.migrate().await.expect("migrate once more");
    if t.db.backend() == Backend::Postgres {
        let checks: Vec<(String, i64)> = sqlx::query_as(
            "SELECT CAST(conname AS TEXT), CAST(CASE WHEN convalidated THEN 1 ELSE 0 END AS BIGINT) \
             FROM pg_constraint WHERE conrelid = CAST('invoices' AS regclass) AND contype = 'c'",
        )
        .fetch_all(&mut *conn)
        .await
        .expect("the table's checks");
        assert_eq!(
            checks,
            vec![(store::postgres_checks::NAME.to_owned(), 1)],
            "one check of invoices, in force for every row"
        );
    }
    let kept: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM invoices WHERE id = 'before'")
        .fetch_one(&mut *conn)
        .await
        .expect("count");
    assert_eq!(kept, 1, "the invoice from before the swap is kept");
    insert("draft", "invoice", "draft", "services", None)
        .await
        .expect("a draft");
    insert("corrective", "corrective", "issued", "services", Some(1))
        .await
        .expect("an issued corrective invoice");
    for (id, series, status, supply, number, broken) in [
        ("s", "proforma", "draft", "goods", None, "an unknown series"),
        ("t", "invoice", "paid", "goods", Some(2), "an unknown status"),
        ("u", "invoice", "draft", "rent", None, "an unknown kind of supply"),
        ("v", "invoice", "issued", "goods", None, "an issued invoice without a number"),
        ("w", "invoice", "draft", "goods", Some(3), "a draft with a number"),
    ] {
        let refused = insert(id, series, status, supply, number)
            .await
            .expect_err(broken);
        assert!(
            refused.to_string().to_lowercase().contains("check constraint"),
            "{broken}: refused by a check, not for another reason: {refused}"
        );
    }
    // Updates are checked too: issuing a draft without giving it a number.
    let refused = sqlx::query("UPDATE invoices SET status = 'issued' WHERE id = 'draft'")
        .execute(&mut *conn)
        .await
        .expect_err("an update that leaves an issued invoice without a number");
    assert!(
        refused.to_string().to_lowercase().contains("check constraint"),
        "{refused}"
    );
});

/// Inserts the customer `customer` of `company`.
async fn customer(conn: &mut sqlx::AnyConnection, company: &store::CompanyId) {
    sqlx::query(
        "INSERT INTO entities (id, company_id, name, entity_type, country, currency_code, \
         address_json, created_at) VALUES ('customer', $1, 'Customer', 'IE:LTD', 'IE', 'EUR', '{}', 0)",
    )
    .bind(company)
    .execute(conn)
    .await
    .expect("a customer");
}

/// The query plan of `sql` (SQLite's EXPLAIN QUERY PLAN, PostgreSQL's EXPLAIN), one line per row.
async fn plan(db: &Db, sql: &str) -> String {
    let mut conn = db.pool().acquire().await.expect("connection");
    let explain = match db.backend() {
        Backend::Sqlite => format!("EXPLAIN QUERY PLAN {sql}"),
        Backend::Postgres => {
            // Tiny tables make a sequential scan cheapest; what is checked is that the
            // statement CAN walk the index in order, which is what keeps it fast when
            // the queue is long.
            conn.execute("SET enable_seqscan = off").await.expect("set");
            format!("EXPLAIN {sql}")
        }
    };
    let rows = sqlx::query(sqlx::AssertSqlSafe(explain))
        .fetch_all(&mut *conn)
        .await
        .expect("explain");
    use sqlx::Row as _;
    rows.iter()
        .map(|r| {
            // SQLite: (id, parent, notused, detail); PostgreSQL: one text column.
            let last = r.len() - 1;
            r.try_get::<String, _>(last).unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

// The claim walks `jobs_turns` in claim order: no sort of the queue, however long.
both_engines!(the_claim_walks_the_turns_index_without_sorting, |t| {
    let index = match t.db.backend() {
        Backend::Sqlite => " INDEXED BY jobs_turns",
        Backend::Postgres => "",
    };
    let p = plan(
        &t.db,
        &format!(
            "SELECT id FROM jobs{index} WHERE status = 'queued' AND run_at <= 1 \
             AND kind IN ('email.send') ORDER BY priority, turn, id LIMIT 1"
        ),
    )
    .await;
    assert!(p.contains("jobs_turns"), "the claim uses jobs_turns:\n{p}");
    let sorts = match t.db.backend() {
        Backend::Sqlite => p.contains("TEMP B-TREE FOR ORDER BY"),
        Backend::Postgres => p.lines().any(|l| l.trim_start().starts_with("Sort")),
    };
    assert!(!sorts, "the claim does not sort the queue:\n{p}");
});

// Finding a draft by id goes through the primary key whatever the company holds.
both_engines!(a_draft_is_read_through_its_primary_key, |t| {
    let p = plan(
        &t.db,
        &format!(
            "SELECT id FROM invoices WHERE {}",
            store::invoices::DRAFT_BY_ID
                .replace("$1", "'c'")
                .replace("$2", "'i'")
        ),
    )
    .await;
    let by_key = match t.db.backend() {
        Backend::Sqlite => {
            p.contains("USING INDEX sqlite_autoindex_invoices_1") || p.contains("PRIMARY KEY")
        }
        Backend::Postgres => p.contains("invoices_pkey"),
    };
    assert!(by_key, "the draft is found by its primary key:\n{p}");
});

// Every read of one invoice by id (GET, the reads before an issue, its recipient, a
// payment) goes through the primary key, never through an index that begins with the
// company, which PostgreSQL took under create+issue on a fresh database and read every
// invoice of the company in it for each one.
both_engines!(an_invoice_is_read_through_its_primary_key, |t| {
    let by_id = store::by_id("'c'", "'i'");
    for sql in [
        format!("SELECT id FROM invoices WHERE {by_id}"),
        format!(
            "SELECT id FROM entities WHERE id = (SELECT recipient_id FROM invoices WHERE {by_id})"
        ),
    ] {
        let p = plan(&t.db, &sql).await;
        let by_key = match t.db.backend() {
            Backend::Sqlite => {
                p.contains("USING INDEX sqlite_autoindex_invoices_1") || p.contains("PRIMARY KEY")
            }
            Backend::Postgres => p.contains("invoices_pkey"),
        };
        assert!(by_key, "the invoice is found by its primary key:\n{p}");
    }
});

// Every start looks for issued invoices without a document (the backfill of invoices issued
// before documents existed) through the partial index that holds only those, never by
// reading the whole invoices table (1.46 s at a million invoices on SQLite).
both_engines!(
    the_start_finds_invoices_without_a_document_through_their_index,
    |t| {
        let p = plan(
            &t.db,
            &format!(
                "SELECT id FROM invoices WHERE {} ORDER BY id LIMIT 100",
                store::invoices::WITHOUT_DOCUMENT.replace("$1", "'i'")
            ),
        )
        .await;
        assert!(
            p.contains("invoices_without_document"),
            "the lookup uses invoices_without_document:\n{p}"
        );
    }
);

// The worker's overdue pass (every `INVOICING_SCHEDULE_SECONDS`) reads only the invoices
// due in the window of the companies with an `invoice.overdue` endpoint, over the
// partial index of unpaid invoices, never the whole invoices table: that read took 24 s of every 30 on
// SQLite at 200,000 invoices, and the service's own reads waited for the disk meanwhile.
both_engines!(the_overdue_pass_reads_through_its_indexes, |t| {
    let p = plan(
        &t.db,
        &store::invoice_events::NEWLY_OVERDUE
            .replace("$1", "1900000000000000")
            .replace("$2", "1800000000000000")
            .replace("$3", "100"),
    )
    .await;
    assert!(
        p.contains("invoices_unpaid_due"),
        "the pass uses invoices_unpaid_due:\n{p}"
    );
    let whole_table = match t.db.backend() {
        Backend::Sqlite => p.lines().any(|l| l.contains("SCAN i")),
        Backend::Postgres => p.contains("Seq Scan on invoices"),
    };
    assert!(
        !whole_table,
        "the pass reads no invoice outside its indexes:\n{p}"
    );
});

/// A user who is an active member of `company` (for OAuth grants).
async fn member(db: &Db, company: &str) -> String {
    let id = uuid::Uuid::new_v4().to_string();
    let mut conn = db.pool().acquire().await.expect("connection");
    sqlx::query("INSERT INTO users (id, email, name, created_at) VALUES ($1, $2, 'U', 0)")
        .bind(&id)
        .bind(format!("{id}@example.com"))
        .execute(&mut *conn)
        .await
        .expect("insert a user");
    sqlx::query(
        "INSERT INTO memberships (company_id, user_id, kind, status, member_since) \
         VALUES ($1, $2, 'password', 'active', 0)",
    )
    .bind(company)
    .bind(&id)
    .execute(&mut *conn)
    .await
    .expect("insert a membership");
    id
}

// OAuth codes last 60 s and are spent by their first presentation; refresh tokens and
// access tokens expire; registrations are capped per hour.
both_engines!(
    oauth_codes_tokens_and_registrations_expire_or_are_capped,
    |t| {
        use store::oauth::{Registered, Taken};
        let company = t.company().await;
        let user = member(&t.db, &company).await;
        let now = store::now_micros() - 3 * 3600 * 1_000_000;
        let mut tx = t.db.begin_write().await.expect("begin");
        let c = tx.conn();
        let Registered::Client(client) =
            store::oauth::register(c, "Agent", &["http://127.0.0.1:1/cb".to_owned()], now)
                .await
                .expect("register")
        else {
            panic!("the first registration is refused")
        };
        let code = |hash: &'static str, at: i64| store::oauth::NewCode {
            code_hash: hash,
            client_id: &client.id,
            company_id: &company,
            user_id: &user,
            redirect_uri: "http://127.0.0.1:1/cb",
            code_challenge: "challenge",
            resource: None,
            now: at,
        };
        store::oauth::insert_code(c, &code("late", now))
            .await
            .expect("code");
        store::oauth::insert_code(c, &code("fresh", now))
            .await
            .expect("code");
        let late = store::oauth::take_code(c, "late", now + 61_000_000)
            .await
            .expect("take");
        assert!(matches!(late, Taken::Invalid), "{late:?}");
        let again = store::oauth::take_code(c, "late", now + 1)
            .await
            .expect("take");
        assert!(
            matches!(again, Taken::Reused),
            "a spent code stays spent: {again:?}"
        );
        let Taken::Fresh(row) = store::oauth::take_code(c, "fresh", now + 59_000_000)
            .await
            .expect("take")
        else {
            panic!("a code within 60 s is taken")
        };
        // Issued three hours ago: the access token (1 h) no longer authenticates.
        let issued = store::oauth::grant(c, &row, "Agent", now)
            .await
            .expect("grant");
        let hash = store::hash_secret(&issued.access_token);
        assert!(
            store::tokens::authenticate(c, &hash)
                .await
                .expect("auth")
                .is_none()
        );
        let refresh_hash = store::hash_secret(&issued.refresh_token);
        let month = 31 * 24 * 3600 * 1_000_000;
        let expired = store::oauth::refresh(c, &refresh_hash, &client.id, now + month)
            .await
            .expect("refresh");
        assert!(expired.is_none(), "refresh tokens last 30 days");
        let fresh = store::oauth::refresh(c, &refresh_hash, &client.id, store::now_micros())
            .await
            .expect("refresh")
            .expect("a refresh within 30 days");
        let hash = store::hash_secret(&fresh.access_token);
        let auth = store::tokens::authenticate(c, &hash).await.expect("auth");
        assert_eq!(auth.expect("a fresh token works").kind, "mcp");
        for i in 1..store::oauth::REGISTRATIONS_PER_HOUR {
            let r = store::oauth::register(c, &format!("A{i}"), &[], now + i)
                .await
                .expect("register");
            assert!(matches!(r, Registered::Client(_)), "registration {i}");
        }
        let r = store::oauth::register(c, "one too many", &[], now + 1000)
            .await
            .expect("register");
        assert!(matches!(r, Registered::Refused), "{r:?}");
        let r = store::oauth::register(c, "an hour later", &[], now + 3600 * 1_000_001)
            .await
            .expect("register");
        assert!(matches!(r, Registered::Client(_)), "{r:?}");
        tx.commit().await.expect("commit");
    }
);

// A server on the loopback address is reached without TLS unless the URL asks for it
// (store::db::postgres_url): the handshake cost ~90 ms per new connection, for nothing
// that leaves the machine. The test URL names 127.0.0.1 and no sslmode.
#[tokio::test]
async fn loopback_postgres_is_reached_without_tls() {
    let Some(t) = TestDb::postgres().await else {
        return;
    };
    let mut conn = t.db.pool().acquire().await.expect("connection");
    let ssl: bool = sqlx::query_scalar(
        "SELECT COALESCE((SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()), false)",
    )
    .fetch_one(&mut *conn)
    .await
    .expect("pg_stat_ssl");
    drop(conn);
    t.drop_db().await;
    assert!(!ssl, "the pool's connection to 127.0.0.1 uses TLS");
}

// The reads before an issue, sent together: the invoice, its company and its recipient,
// each read as alone (one statement on PostgreSQL, its row cut back into one row a read);
// a missing invoice answers nothing for it and its recipient.
both_engines!(reads_sent_together_answer_each_read, |t| {
    let answers = {
        let mut conn = t.db.pool().acquire().await.expect("connection");
        store::batch::read_each(
            &mut conn,
            &[
                "SELECT $1 AS a, CAST(NULL AS TEXT) AS absent",
                "SELECT x FROM (SELECT 1 AS x UNION ALL SELECT 2) AS t WHERE $2 = $2 ORDER BY x",
                "SELECT 1 AS unmatched WHERE $1 = 'no'",
                "SELECT $3 AS c, $1 AS a, 7 AS n",
            ],
            &["one", "two", "three"],
        )
        .await
        .expect("reads")
    };
    let text = |row: &sqlx::any::AnyRow, column: &str| -> String {
        sqlx::Row::try_get(row, column).expect("a text column")
    };
    let columns = |row: &sqlx::any::AnyRow| -> Vec<String> {
        sqlx::Row::columns(row)
            .iter()
            .map(|c| sqlx::Column::name(c).to_owned())
            .collect()
    };
    assert_eq!(answers.len(), 4);
    let first = answers[0].as_ref().expect("the first read's row");
    assert_eq!(text(first, "a"), "one");
    assert_eq!(
        columns(first),
        ["a", "absent"],
        "only the read's own columns"
    );
    let absent: Option<String> = sqlx::Row::try_get(first, "absent").expect("a NULL");
    assert_eq!(absent, None, "a NULL column of a row that was found");
    let second = answers[1].as_ref().expect("the second read's row");
    let x: i64 = sqlx::Row::try_get(second, "x").expect("x");
    assert_eq!(x, 1, "the first of its rows");
    assert!(answers[2].is_none(), "no row for the third");
    let fourth = answers[3].as_ref().expect("the fourth read's row");
    assert_eq!(text(fourth, "c"), "three");
    assert_eq!(
        text(fourth, "a"),
        "one",
        "its own `a`, not the first read's"
    );
    let n: i64 = sqlx::Row::try_get(fourth, 2).expect("a column by its position");
    assert_eq!(n, 7);

    let company = t.company().await;
    let mut conn = t.db.pool().acquire().await.expect("connection");
    let found = store::invoices::for_issue(
        &mut conn,
        &company,
        &store::InvoiceId::generate(),
        "no-such-user",
    )
    .await
    .expect("the reads of an issue");
    assert!(found.invoice.is_none() && found.recipient.is_none());
    let issuing = found.company.expect("the company");
    assert_eq!(issuing.company.id, company);
});

/// Makes the temporary table `mine`, which only this connection sees.
async fn make_mine(conn: &mut sqlx::AnyConnection) {
    sqlx::query("CREATE TEMPORARY TABLE mine (x INTEGER)")
        .execute(conn)
        .await
        .expect("temporary table");
}

/// Whether the connection sees the temporary table `mine` (only the connection that made it
/// does).
async fn sees_mine(conn: &mut sqlx::AnyConnection) -> bool {
    sqlx::query("SELECT x FROM mine")
        .fetch_all(conn)
        .await
        .is_ok()
}

// Inside a request scope a connection given back is kept for the request's next read and
// for its write transaction (a temporary table, which only its own connection sees, is
// there each time); a connection taken from the pool meanwhile is another one.
both_engines!(a_request_keeps_its_connection, |t| {
    let db = t.db.clone();
    store::db::request_scope(async move {
        make_mine(&mut db.acquire().await.expect("connection")).await;
        let mut other = db.pool().acquire().await.expect("connection");
        assert!(
            !sees_mine(&mut other).await,
            "the pool handed out the kept one"
        );
        let mut again = db.acquire().await.expect("connection");
        assert!(
            sees_mine(&mut again).await,
            "the next read is not on the kept connection"
        );
        drop(again);
        let mut tx = db.begin_write().await.expect("begin");
        // PostgreSQL writes on the kept connection; SQLite on its writer's own (see
        // `sqlite_writes_run_on_a_connection_of_their_own`).
        assert_eq!(
            sees_mine(tx.conn()).await,
            db.backend() == Backend::Postgres,
            "the write is on the wrong connection"
        );
        tx.rollback().await.expect("rollback");
        drop(other);
    })
    .await;
});

// A request's connection is handed to the next request when it ends, not given back to
// the pool (whose return pings it, one more hand-off or round trip each time): the next
// request's read, and its write transaction on PostgreSQL, run on it. At most half the
// pool is kept so: after as many requests at once as the pool holds, half of it is still
// there for whoever takes connections from the pool directly.
both_engines!(a_request_hands_its_connection_to_the_next, |t| {
    let db = t.db.clone();
    let size = db.pool().options().get_max_connections() as usize;
    // Every connection of the pool open and idle, as on a server that has been busy: with
    // none idle, a connection given back goes to the pool, for requests waiting there.
    let all = futures::future::try_join_all((0..size).map(|_| db.pool().acquire()))
        .await
        .expect("the whole pool");
    drop(all);
    while db.pool().num_idle() < size {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let first = db.clone();
    store::db::request_scope(async move {
        make_mine(&mut first.acquire().await.expect("connection")).await;
    })
    .await;
    let next = db.clone();
    let (read, wrote) = store::db::request_scope(async move {
        let read = sees_mine(&mut next.acquire().await.expect("connection")).await;
        let mut tx = next.begin_write().await.expect("begin");
        let wrote = sees_mine(tx.conn()).await;
        tx.commit().await.expect("commit");
        (read, wrote)
    })
    .await;
    assert!(read, "the next request read on another connection");
    // SQLite writes on its writer's own connection.
    assert_eq!(
        wrote,
        db.backend() == Backend::Postgres,
        "the write's connection"
    );
    if db.backend() == Backend::Postgres {
        let after = db.clone();
        let again = store::db::request_scope(async move {
            sees_mine(&mut after.acquire().await.expect("connection")).await
        })
        .await;
        assert!(
            again,
            "a committed transaction's connection was not handed on"
        );
    }

    let all = std::sync::Arc::new(tokio::sync::Barrier::new(size));
    let requests: Vec<_> = (0..size)
        .map(|_| {
            let (db, all) = (db.clone(), all.clone());
            tokio::spawn(store::db::request_scope(async move {
                let conn = db.acquire().await.expect("connection");
                // Every connection of the pool is in a request at once.
                all.wait().await;
                drop(conn);
            }))
        })
        .collect();
    for r in requests {
        r.await.expect("request");
    }
    let mut direct = Vec::new();
    for _ in 0..size / 2 {
        // Waits for the pool's own checks of the connections given back to it; if every
        // connection were kept, this would time out.
        direct.push(
            db.pool()
                .acquire()
                .await
                .expect("half the pool for direct use"),
        );
    }
    drop(direct);
});

/// Whether a company of this id is stored, read on a pooled connection.
async fn stored(db: &Db, id: &store::CompanyId) -> bool {
    let mut conn = db.pool().acquire().await.expect("connection");
    sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM companies WHERE id = $1")
        .bind(id)
        .fetch_one(&mut *conn)
        .await
        .expect("count")
        == 1
}

async fn insert_company(conn: &mut sqlx::AnyConnection, id: &store::CompanyId) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO companies (id, name, fiscal_id, created_at) VALUES ($1, 'Co', 'X1', 0)",
    )
    .bind(id)
    .execute(conn)
    .await
    .map(|_| ())
}

// A write transaction dropped unfinished (its request failed or its client went away) is
// undone, whichever way it ends, and the next writer goes on: SQLite's writes share one
// connection, which must come back out of every transaction.
both_engines!(an_unfinished_write_is_undone_and_the_next_goes_on, |t| {
    let db = &t.db;
    let dropped = store::CompanyId::generate();
    let mut tx = db.begin_write().await.expect("begin");
    insert_company(tx.conn(), &dropped).await.expect("insert");
    drop(tx);

    let failed = store::CompanyId::generate();
    let mut tx = db.begin_write().await.expect("begin after a dropped write");
    insert_company(tx.conn(), &failed).await.expect("insert");
    assert!(
        insert_company(tx.conn(), &failed).await.is_err(),
        "a second row of the same id was stored"
    );
    tx.rollback().await.expect("rollback");

    let cancelled = store::CompanyId::generate();
    let (began, wait) = tokio::sync::oneshot::channel();
    let task = tokio::spawn({
        let db = db.clone();
        let cancelled = cancelled.clone();
        async move {
            let mut tx = db.begin_write().await.expect("begin");
            insert_company(tx.conn(), &cancelled).await.expect("insert");
            let _ = began.send(());
            std::future::pending::<()>().await;
            drop(tx);
        }
    });
    wait.await.expect("the cancelled write began");
    task.abort();
    let _ = task.await;

    let kept = store::CompanyId::generate();
    let mut tx = db
        .begin_write()
        .await
        .expect("begin after a cancelled write");
    insert_company(tx.conn(), &kept).await.expect("insert");
    tx.commit().await.expect("commit");

    assert!(!stored(db, &dropped).await, "a dropped write was kept");
    assert!(!stored(db, &failed).await, "a rolled-back write was kept");
    assert!(!stored(db, &cancelled).await, "a cancelled write was kept");
    assert!(stored(db, &kept).await, "the committed write is missing");
});

/// Inserts a company as the first statement of `tx`, through a batch, as the store's
/// writes do: it carries the transaction's `BEGIN` when that is still due. With `twice`,
/// the batch inserts the row a second time, which fails after the first insert ran.
async fn insert_company_first(
    tx: &mut store::WriteTx,
    id: &store::CompanyId,
    twice: bool,
) -> sqlx::Result<()> {
    let mut batch = store::batch::Batch::new();
    let insert =
        "INSERT INTO companies (id, name, fiscal_id, created_at) VALUES ($1, 'Co', 'X1', 0)";
    batch.push(insert).bind(id.as_str());
    if twice {
        batch.push(insert).bind(id.as_str());
    }
    let conn = batch.opening(tx).await?;
    batch.execute(conn).await
}

/// Whether another connection can take SQLite's write lock now (without waiting for it).
async fn write_lock_is_free(db: &Db) -> bool {
    let mut other = db.pool().acquire().await.expect("connection");
    // Not back to the pool: it waits for no lock now.
    other.close_on_drop();
    other
        .execute("PRAGMA busy_timeout = 0")
        .await
        .expect("no waiting");
    match other.execute("BEGIN IMMEDIATE").await {
        Ok(_) => {
            other.execute("ROLLBACK").await.expect("rollback");
            true
        }
        Err(_) => false,
    }
}

// A deferred write transaction (the one every gated request runs in) sends its `BEGIN` with
// its first statement on SQLite, in the same query string: nothing is locked before that
// statement, and from it on everything is inside the transaction, so a batch that fails
// halfway, a rollback and a drop each leave nothing behind, and a transaction that never
// wrote sends nothing. On PostgreSQL `BEGIN` is sent on its own just before the first
// statement, and the same holds.
both_engines!(a_deferred_write_begins_with_its_first_statement, |t| {
    let db = &t.db;
    let sqlite = db.backend() == Backend::Sqlite;

    // Opened and unused: the database is not locked, and ending it sends nothing.
    let tx = db.begin_write_deferred().await.expect("open");
    if sqlite {
        assert!(
            write_lock_is_free(db).await,
            "the database was locked before the transaction's first statement"
        );
    }
    tx.commit().await.expect("commit of nothing");

    // A batch whose second insert fails: its first is undone with the rest.
    let half = store::CompanyId::generate();
    let mut tx = db.begin_write_deferred().await.expect("open");
    assert!(
        insert_company_first(&mut tx, &half, true).await.is_err(),
        "a second row of the same id was stored"
    );
    tx.rollback().await.expect("rollback");
    assert!(
        !stored(db, &half).await,
        "the first insert of a failed batch was kept: it ran outside the transaction"
    );

    // Rolled back, and dropped unfinished: undone; meanwhile the write lock is held.
    let rolled_back = store::CompanyId::generate();
    let mut tx = db.begin_write_deferred().await.expect("open");
    insert_company_first(&mut tx, &rolled_back, false)
        .await
        .expect("insert");
    if sqlite {
        assert!(
            !write_lock_is_free(db).await,
            "the first statement did not begin the transaction"
        );
    }
    assert!(
        !stored(db, &rolled_back).await,
        "an uncommitted write is seen"
    );
    tx.rollback().await.expect("rollback");
    let dropped = store::CompanyId::generate();
    let mut tx = db.begin_write_deferred().await.expect("open");
    insert_company_first(&mut tx, &dropped, false)
        .await
        .expect("insert");
    drop(tx);

    // Begun on its own before a plain statement, as a handler's reads need.
    let alone = store::CompanyId::generate();
    let mut tx = db
        .begin_write_deferred()
        .await
        .expect("open after a dropped write");
    insert_company(store::Writing::conn(&mut tx).await.expect("begin"), &alone)
        .await
        .expect("insert");
    tx.rollback().await.expect("rollback");

    // A batch that cannot be sent (a value missing) is refused before the transaction
    // counts as begun: nothing to roll back, and the next writer goes on.
    let mut tx = db.begin_write_deferred().await.expect("open");
    let mut unbound = store::batch::Batch::new();
    unbound
        .push("INSERT INTO companies (id, name, fiscal_id, created_at) VALUES ($1, 'Co', 'X1', 0)");
    assert!(
        unbound.opening(&mut tx).await.is_err(),
        "a batch missing its value was taken"
    );
    tx.rollback()
        .await
        .expect("rollback of a transaction that sent nothing");
    // Counted as begun with nothing sent (a statement that failed before it reached the
    // database): on SQLite its `ROLLBACK` finds no transaction and fails, the writer's
    // connection is closed, and the next writer opens another.
    let mut tx = db.begin_write_deferred().await.expect("open");
    let (begin, _) = store::Writing::opening(&mut tx).await.expect("opening");
    assert_eq!(
        begin.is_some(),
        sqlite,
        "the BEGIN a first statement carries"
    );
    assert_eq!(
        tx.rollback().await.is_err(),
        sqlite,
        "a ROLLBACK without a transaction (SQLite)"
    );

    // A `COMMIT` that fails leaves SQLite's transaction open (here a foreign key checked at
    // the commit): the writer's connection is closed, which rolls it back, and the next
    // writer opens another instead of finding itself inside that transaction.
    if sqlite {
        let orphan = store::CompanyId::generate();
        let mut tx = db.begin_write_deferred().await.expect("open");
        let conn = store::Writing::conn(&mut tx).await.expect("begin");
        conn.execute("PRAGMA defer_foreign_keys = ON")
            .await
            .expect("defer the foreign keys");
        sqlx::query(
            "INSERT INTO document_counters (company_id, series, year, next_number) \
             VALUES ($1, 'draft', 2026, 2)",
        )
        .bind(&orphan)
        .execute(&mut *conn)
        .await
        .expect("insert, checked at the commit");
        assert!(
            tx.commit().await.is_err(),
            "a commit that breaks a foreign key succeeded"
        );
        let mut conn = db.pool().acquire().await.expect("connection");
        let counters: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM document_counters WHERE company_id = $1")
                .bind(&orphan)
                .fetch_one(&mut *conn)
                .await
                .expect("count");
        assert_eq!(counters, 0, "a failed commit's row was kept");
    }

    let kept = store::CompanyId::generate();
    let mut tx = db.begin_write_deferred().await.expect("open");
    insert_company_first(&mut tx, &kept, false)
        .await
        .expect("insert");
    tx.commit().await.expect("commit");

    assert!(
        !stored(db, &rolled_back).await,
        "a rolled-back write was kept"
    );
    assert!(!stored(db, &dropped).await, "a dropped write was kept");
    assert!(!stored(db, &alone).await, "a rolled-back write was kept");
    assert!(stored(db, &kept).await, "the committed write is missing");
    if sqlite {
        assert!(
            write_lock_is_free(db).await,
            "a commit left the database locked"
        );
    }
});

/// Sends `batch` to end `tx` (which allows it), refused unless `refuse_if` with `values`
/// is false and its last statement changes a row; expects it refused, and undoes it.
async fn refused_and_undone(
    tx: &mut store::WriteTx,
    mut batch: store::batch::Batch,
    refuse_if: &str,
    values: &[&str],
) {
    let conn = batch
        .closing(tx, refuse_if, values)
        .expect("a batch that can be sent")
        .expect("allowed to end its transaction");
    let e = batch
        .fetch_optional::<String>(conn)
        .await
        .expect_err("a write that should be refused was taken");
    assert!(store::batch::is_refusal(&e), "not a refusal: {e}");
    store::Writing::closed(tx, false).await.expect("undone");
}

// A write that is all its transaction will write may begin and commit it in the same send
// (`Writing::closing`: SQLite's `BEGIN`, the statements and `COMMIT` in one query string;
// on PostgreSQL one statement outside a transaction), when its owner allows. It is
// refused, and nothing of it kept, when its last statement changed no row or its condition
// holds; the transaction then writes the ordinary way. Only a transaction that allows it
// and has sent nothing offers it.
both_engines!(a_last_write_may_end_its_own_transaction, |t| {
    let db = &t.db;
    let sqlite = db.backend() == Backend::Sqlite;
    let insert = "INSERT INTO companies (id, name, fiscal_id, created_at) \
                  VALUES ($1, 'Co', 'X1', 0) RETURNING id";
    let closing_insert = |id: &store::CompanyId| {
        let mut batch = store::batch::Batch::new();
        batch.push(insert).bind(id.as_str().to_owned());
        batch
    };

    // Not allowed: not offered.
    let mut tx = db.begin_write_deferred().await.expect("open");
    assert!(store::Writing::closing(&mut tx).is_none());
    tx.rollback().await.expect("rollback");

    // Allowed, and nothing it assumed is wrong: one send writes and commits.
    let ended = store::CompanyId::generate();
    let mut tx = db.begin_write_deferred().await.expect("open");
    tx.allow_closing();
    let mut batch = closing_insert(&ended);
    let conn = batch
        .closing(&mut tx, "$1 = 'refuse'", &["keep"])
        .expect("a batch that can be sent")
        .expect("allowed to end its transaction");
    let id: Option<String> = batch.fetch_optional(conn).await.expect("written");
    assert_eq!(id.as_deref(), Some(ended.as_str()));
    // Committed by that send, before the transaction is told.
    assert!(stored(db, &ended).await, "the write was not committed");
    if sqlite {
        assert!(
            write_lock_is_free(db).await,
            "the write's COMMIT did not run with it"
        );
    }
    store::Writing::closed(&mut tx, true)
        .await
        .expect("told it ended");
    tx.commit().await.expect("nothing left to commit");

    // Refused by its condition: nothing of it is kept, and the same transaction then
    // writes the ordinary way, no longer offered to end itself.
    let refused = store::CompanyId::generate();
    let mut tx = db.begin_write_deferred().await.expect("open");
    tx.allow_closing();
    refused_and_undone(
        &mut tx,
        closing_insert(&refused),
        "$1 = 'refuse'",
        &["refuse"],
    )
    .await;
    assert!(!stored(db, &refused).await, "a refused write was kept");
    assert!(store::Writing::closing(&mut tx).is_none());
    let mut batch = closing_insert(&refused);
    let conn = batch.opening(&mut tx).await.expect("opening");
    batch.execute(conn).await.expect("written the ordinary way");
    tx.commit().await.expect("commit");
    assert!(
        stored(db, &refused).await,
        "the ordinary write was not kept"
    );

    // Refused when its last statement changed no row: the statements before it are undone.
    let before = store::CompanyId::generate();
    let mut tx = db.begin_write_deferred().await.expect("open");
    tx.allow_closing();
    let mut batch = closing_insert(&before);
    batch
        .push("UPDATE companies SET name = 'Renamed' WHERE id = $1 RETURNING id")
        .bind(store::CompanyId::generate().as_str().to_owned());
    refused_and_undone(&mut tx, batch, "1 = 0", &[]).await;
    tx.rollback().await.expect("rollback");
    assert!(
        !stored(db, &before).await,
        "the statement before a refused one was kept"
    );

    // Once something of the transaction was sent, it is no longer offered.
    let mut tx = db.begin_write_deferred().await.expect("open");
    tx.allow_closing();
    store::Writing::conn(&mut tx).await.expect("begin");
    assert!(store::Writing::closing(&mut tx).is_none());
    tx.rollback().await.expect("rollback");
    if sqlite {
        assert!(
            write_lock_is_free(db).await,
            "a transaction left the database locked"
        );
    }
});

// SQLite's writes run on a connection of the writer's own, not on one of the pool's: its
// page cache outlives its commits (see `store::db`), and a writer never waits for a
// connection that readers hold. With every pooled connection taken, a write still goes
// through (before, it waited for the pool's 30-second timeout and failed).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_writes_run_on_a_connection_of_their_own() {
    let t = TestDb::sqlite_upto(None).await;
    let first = store::CompanyId::generate();
    let mut tx = t.db.begin_write().await.expect("begin");
    insert_company(tx.conn(), &first).await.expect("insert");
    tx.commit().await.expect("commit");

    let mut readers = Vec::new();
    while let Ok(Ok(conn)) =
        tokio::time::timeout(std::time::Duration::from_millis(200), t.db.pool().acquire()).await
    {
        readers.push(conn);
    }
    assert!(!readers.is_empty(), "the pool gave no connection");
    let second = store::CompanyId::generate();
    let write = async {
        let mut tx = t.db.begin_write().await.expect("begin with the pool taken");
        insert_company(tx.conn(), &second).await.expect("insert");
        tx.commit().await.expect("commit");
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), write)
        .await
        .expect("the write waited for a pooled connection");
    let seen: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM companies WHERE id IN ($1, $2)")
        .bind(&first)
        .bind(&second)
        .fetch_one(&mut *readers[0])
        .await
        .expect("count");
    assert_eq!(seen, 2, "a reader does not see both writes");
    drop(readers);
    t.drop_db().await;
}

/// Fails, naming each, if any line of the workspace's sources (`crates/*/src`) is `banned`.
fn no_source_line(banned: impl Fn(&str) -> bool, fix: &str) {
    let found: Vec<String> = source_lines()
        .into_iter()
        .filter(|(_, line)| banned(line))
        .map(|(at, line)| format!("{at}: {}", line.trim()))
        .collect();
    assert!(found.is_empty(), "{fix}:\n{}", found.join("\n"));
}

/// Every line of the workspace's sources (`crates/*/src`), with where it is.
fn source_lines() -> Vec<(String, String)> {
    fn walk(dir: &std::path::Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).expect("read the sources") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("read a source");
                for (n, line) in text.lines().enumerate() {
                    out.push((format!("{}:{}", path.display(), n + 1), line.to_owned()));
                }
            }
        }
    }
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    for krate in std::fs::read_dir(&crates).expect("the crates") {
        let src = krate.expect("a crate").path().join("src");
        if src.is_dir() {
            walk(&src, &mut out);
        }
    }
    out
}

// No statement finds a company's row as `company_id = $1 AND id = $2`: PostgreSQL may
// read that through any index that begins with the company (see `store::by_id`).
#[test]
fn no_row_is_found_by_company_and_id() {
    no_source_line(
        |line| {
            let code = line.trim_start();
            // `company_id = $1 AND id = $2`, `company_id = {company} AND id = ...`.
            !code.starts_with("//")
                && code.match_indices("company_id = ").any(|(i, _)| {
                    let rest = &code[i + "company_id = ".len()..];
                    let value = rest.split_whitespace().next().unwrap_or("");
                    (value.starts_with('$') || value.starts_with('{'))
                        && rest[value.len()..].trim_start().starts_with("AND id = ")
                })
        },
        "find the row with `store::by_id` (`id = $2 AND (company_id = $1) IS TRUE`)",
    );
}

// SQLite (3.51) reads a `LIMIT $n` as the number bound to it and marks the statement to be
// compiled again whenever `$n` is bound, even to the same number: every run of a cached
// list statement was a fresh prepare (130 µs of a list page's 4 ms on SQLite).
// `LIMIT CAST($n AS BIGINT)` is evaluated when the statement runs instead, on both engines.
// Nothing the service answers can show the difference, so the statements themselves are
// checked.
#[test]
fn no_statement_limits_by_a_bare_parameter() {
    no_source_line(
        |line| {
            let upper = line.to_uppercase();
            upper.contains("LIMIT $") || upper.contains("OFFSET $")
        },
        "write `LIMIT CAST($n AS BIGINT)`",
    );
}
