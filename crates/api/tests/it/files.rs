//! Receipts and report PDFs kept in an object store (`INVOICING_STORAGE_URL`), here a
//! `file://` directory so the test can look at and tamper with the objects; the S3 path
//! is exercised against a real S3-compatible server in crates/cli/tests/scale_out.rs.

use serde_json::json;
use store::files::{DbFiles, FileStore, Files};

use crate::support::*;

/// Every object under `dir`, as paths relative to it.
fn objects(dir: &std::path::Path) -> Vec<String> {
    fn walk(base: &std::path::Path, dir: &std::path::Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                out.push(
                    path.strip_prefix(base)
                        .expect("under base")
                        .display()
                        .to_string(),
                );
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Makes every object under `dir` look `days` days old.
fn age(dir: &std::path::Path, days: u64) {
    let then = std::time::SystemTime::now() - std::time::Duration::from_secs(days * 86_400);
    for name in objects(dir) {
        std::fs::File::options()
            .write(true)
            .open(dir.join(name))
            .and_then(|f| f.set_modified(then))
            .expect("age an object");
    }
}

/// Runs the daily `jobs.prune` job as a worker would.
async fn prune(app: &TestApp) {
    let mut tx = app.db.begin_write().await.unwrap();
    let job = store::jobs::NewJob::new("jobs.prune", json!({}));
    store::jobs::enqueue(tx.conn(), &job).await.unwrap();
    tx.commit().await.unwrap();
    let outbox = tempfile::tempdir().unwrap();
    app.worker(None, outbox.path())
        .run_until_idle()
        .await
        .unwrap();
}

async fn receipts_and_reports_in_an_object_store(engine: Engine) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bucket");
    let app =
        TestApp::with_storage(engine, &format!("file://{}/tenant-files", root.display())).await;
    assert!(
        matches!(app.db.files(), Files::Object(_)),
        "the app keeps files in the object store"
    );
    let store_dir = root.join("tenant-files");
    let company = app.a.company_id.clone();

    let supplier = app
        .entity(&app.a, json!({"name": "Supplies SL", "type": "ES:SL", "address": {"lines": ["Calle Mayor 1"], "city": "Madrid", "zipcode": "28013", "country": "ES"}, "currency_code": "EUR"}))
        .await;
    let expense = app
        .call(
            "POST",
            "/v1/expenses",
            As::Human(&app.a),
            Some(
                json!({"supplier_id": supplier, "invoice_reference": "F-9", "category": "office",
                "lines": [{"concept": "Paper", "subtotal": 10000}]}),
            ),
        )
        .await
        .expect(201)
        .json();
    let id = expense["id"].as_str().unwrap();
    let receipt_path = format!("/v1/expenses/{id}/receipt");
    let png = b"\x89PNG\r\n\x1a\n-a receipt scanned at the till".to_vec();
    let put = |bytes: Vec<u8>| {
        let app = &app;
        let path = receipt_path.clone();
        async move {
            app.call_raw(
                "PUT",
                &path,
                As::Human(&app.a),
                Some(bytes),
                "application/octet-stream",
            )
            .await
        }
    };
    let with = put(png.clone()).await.expect(200).json();
    assert_eq!(with["receipt"]["content_type"], "image/png");
    assert_eq!(with["receipt"]["size"], png.len());

    // The bytes are an object named after the company and the file; the row keeps
    // only what the service needs to check them.
    let (file_id, location, in_row): (String, String, Vec<u8>) = sqlx::query_as(
        "SELECT f.id, f.location, f.data FROM files f JOIN expenses e ON e.receipt_file_id = f.id \
         WHERE e.id = $1",
    )
    .bind(id)
    .fetch_one(app.db.pool())
    .await
    .unwrap();
    assert_eq!(location, "object");
    assert!(in_row.is_empty(), "no copy of the bytes in the database");
    assert_eq!(objects(&store_dir), vec![format!("{company}/{file_id}")]);
    assert_eq!(
        std::fs::read(store_dir.join(company.as_str()).join(&file_id)).unwrap(),
        png
    );
    let got = app.get(&receipt_path, As::Ai(&app.a)).await.expect(200);
    assert_eq!(got.content_type(), "image/png");
    assert_eq!(got.body, png);
    // Another company still cannot reach it.
    app.get(&receipt_path, As::Human(&app.b)).await.expect(404);

    // Replacing the receipt deletes the old row in the request's transaction; the old
    // object stays until the daily prune, which spares anything younger than a day.
    let pdf = b"%PDF-1.7\n1 0 obj <<>> endobj\n%%EOF".to_vec();
    put(pdf.clone()).await.expect(200);
    assert_eq!(objects(&store_dir).len(), 2);
    prune(&app).await;
    assert_eq!(objects(&store_dir).len(), 2, "a fresh orphan is spared");
    age(&store_dir, 2);
    prune(&app).await;
    assert_eq!(objects(&store_dir).len(), 1, "a day-old orphan is swept");
    let got = app.get(&receipt_path, As::Ai(&app.a)).await.expect(200);
    assert_eq!(got.body, pdf, "the current receipt survives the sweep");

    // An AI caller's upload is held: nothing its dry run wrote may stay, and the receipt
    // is unchanged; whatever object its dry run left is an orphan the prune removes. The
    // held body itself is a file (in the object store too) until the entry is decided.
    let held = app
        .call_raw(
            "PUT",
            &receipt_path,
            As::Ai(&app.a),
            Some(b"%PDF-1.4 from the agent".to_vec()),
            "application/octet-stream",
        )
        .await
        .expect(202)
        .json();
    let entry = held["auditEntryId"].as_str().unwrap().to_owned();
    let (body_file,): (Option<String>,) =
        sqlx::query_as("SELECT body_file_id FROM ai_audit_entries WHERE id = $1")
            .bind(&entry)
            .fetch_one(app.db.pool())
            .await
            .unwrap();
    let body_file = body_file.expect("the held body is a file");
    let rows: Vec<(String,)> = sqlx::query_as("SELECT id FROM files ORDER BY id")
        .fetch_all(app.db.pool())
        .await
        .unwrap();
    assert_eq!(rows.len(), 2, "the dry run wrote no row: {rows:?}");
    assert!(rows.iter().any(|(id,)| *id == body_file));
    age(&store_dir, 2);
    prune(&app).await;
    assert_eq!(
        objects(&store_dir).len(),
        2,
        "the dry run's orphan is swept, the held body is kept"
    );
    let got = app.get(&receipt_path, As::Ai(&app.a)).await.expect(200);
    assert_eq!(got.body, pdf, "the held upload changed nothing");
    // Once the entry is decided its body's row goes, and the sweep takes the object.
    app.call(
        "POST",
        &format!("/v1/ai-audit/{entry}/reject"),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(200);
    let rows: (i64,) = sqlx::query_as("SELECT COUNT(*) FROM files")
        .fetch_one(app.db.pool())
        .await
        .unwrap();
    assert_eq!(rows.0, 1, "only the receipt's row is left");
    age(&store_dir, 2);
    prune(&app).await;
    assert_eq!(objects(&store_dir).len(), 1);

    let mut conn = app.db.pool().acquire().await.unwrap();
    // Bytes changed behind the service's back are refused, never served.
    let (current,): (String,) =
        sqlx::query_as("SELECT receipt_file_id FROM expenses WHERE id = $1")
            .bind(id)
            .fetch_one(app.db.pool())
            .await
            .unwrap();
    let object = store_dir.join(company.as_str()).join(&current);
    let original = std::fs::read(&object).unwrap();
    std::fs::write(&object, b"%PDF-1.4 forged").unwrap();
    let r = app.get(&receipt_path, As::Ai(&app.a)).await.expect(500);
    assert!(!r.text().contains("forged"), "{}", r.text());
    std::fs::write(&object, &original).unwrap();
    app.get(&receipt_path, As::Ai(&app.a)).await.expect(200);

    // A file written while the deployment kept bytes in the database stays readable
    // after it moves to the object store.
    let old = DbFiles
        .put(
            &mut conn,
            &company,
            "application/pdf",
            b"%PDF-1.3 from before",
        )
        .await
        .unwrap();
    let read = app
        .db
        .files()
        .get(&mut conn, &company, &old)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.data, b"%PDF-1.3 from before");
    drop(conn);

    // Report PDFs rendered by the worker land in the store too and download intact.
    app.settle(&app.a).await;
    let created = app
        .call(
            "POST",
            "/v1/reports",
            As::Human(&app.a),
            Some(
                json!({"report_type": "vat_summary", "period_start": "2026-01-01T00:00:00Z",
                "period_end": "2026-04-01T00:00:00Z", "locales": ["en"]}),
            ),
        )
        .await
        .expect(201)
        .json();
    let report = created["data"][0]["id"].as_str().unwrap().to_owned();
    let outbox = tempfile::tempdir().unwrap();
    app.worker(None, outbox.path())
        .run_until_idle()
        .await
        .unwrap();
    let (report_file,): (String,) = sqlx::query_as("SELECT file_id FROM reports WHERE id = $1")
        .bind(&report)
        .fetch_one(app.db.pool())
        .await
        .unwrap();
    let on_disk = std::fs::read(store_dir.join(company.as_str()).join(&report_file)).unwrap();
    let pdf = app
        .get(&format!("/v1/reports/{report}/pdf"), As::Human(&app.a))
        .await
        .expect(200);
    assert!(pdf.body.starts_with(b"%PDF"));
    assert_eq!(pdf.body, on_disk);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receipts_and_reports_in_an_object_store_sqlite() {
    receipts_and_reports_in_an_object_store(Engine::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receipts_and_reports_in_an_object_store_postgres() {
    receipts_and_reports_in_an_object_store(Engine::Postgres).await;
}

/// A storage URL that cannot work is refused with a message that says what to fix.
#[test]
fn unusable_storage_urls_are_explained() {
    for (url, needle) in [
        ("ftp://host/dir", "unsupported scheme"),
        ("s3:///prefix", "names no bucket"),
        ("not a url", "not a URL"),
    ] {
        let err = Files::open(Some(url)).expect_err(url).to_string();
        assert!(err.contains(needle), "{url}: {err}");
    }
    assert!(matches!(Files::open(None).unwrap(), Files::Database));
}
