//! Test support for getting paid: a worker with the API's invoicing hooks (as
//! `invoicing serve` gives it), and readers of what it made.

use std::sync::Arc;

use api::AppState;
use jobs::{Registry, Worker, invoicing::BoxFuture, mail::MailAttachment};
use serde_json::Value;

use crate::{
    background::{context, fast_config},
    support::{As, TestApp},
};

/// The API's invoice logic for the worker, as `invoicing serve` wires it (crates/cli).
pub struct TestInvoicing(pub AppState);

impl jobs::invoicing::Invoicing for TestInvoicing {
    fn attachment_names(&self, invoice: &store::invoices::InvoiceRow) -> Vec<String> {
        api::routes::invoices::send::attachments(invoice)
    }

    fn attachment<'a>(
        &'a self,
        company_id: &'a store::CompanyId,
        invoice_id: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, anyhow::Result<MailAttachment>> {
        Box::pin(async move {
            let (content_type, bytes) =
                api::routes::invoices::send::attachment(&self.0, company_id, invoice_id, name)
                    .await
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
            Ok(MailAttachment {
                name: name.to_owned(),
                content_type,
                bytes,
            })
        })
    }

    fn run_recurring(&self, now: jobs::invoicing::Now) -> BoxFuture<'_, anyhow::Result<usize>> {
        Box::pin(api::workflows::recurring::run_due(self.0.services(), now))
    }
}

impl TestApp {
    /// A worker over this app's database and state (its clock included), mailing to
    /// `smtp_url` or to `.eml` files in `outbox`.
    pub fn paid_worker(&self, smtp_url: Option<String>, outbox: &std::path::Path) -> Worker {
        self.paid_worker_on(self.state.clone(), smtp_url, outbox)
    }

    /// The same over another state (a second server's pool on the same database).
    pub fn paid_worker_on(
        &self,
        state: AppState,
        smtp_url: Option<String>,
        outbox: &std::path::Path,
    ) -> Worker {
        let db = state.db.clone();
        let ctx = context(&db, smtp_url, outbox)
            .with_clock(state.clock.clone())
            .with_invoicing(Arc::new(TestInvoicing(state)));
        Worker::new(ctx, Registry::standard(), fast_config())
    }

    /// The service's clock now (set with `set_time`).
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.state.now()
    }

    /// The invoices a recurring invoice made, oldest first.
    pub async fn made_by(&self, recurring_id: &str) -> Vec<Value> {
        let page = self
            .get(
                &format!("/v1/invoices?recurring_invoice_id={recurring_id}&limit=500"),
                As::Ai(&self.a),
            )
            .await
            .expect(200)
            .json();
        let mut list = page["data"].as_array().unwrap().clone();
        list.reverse();
        list
    }

    /// The deliveries of an invoice, oldest first.
    pub async fn deliveries(&self, invoice_id: &str) -> Vec<Value> {
        let page = self
            .get(
                &format!("/v1/invoices/{invoice_id}/deliveries"),
                As::Ai(&self.a),
            )
            .await
            .expect(200)
            .json();
        let mut list = page["data"].as_array().unwrap().clone();
        list.reverse();
        list
    }
}

/// The `.eml` files in an outbox, as text.
pub fn outbox_mails(dir: &std::path::Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".eml"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect()
}
