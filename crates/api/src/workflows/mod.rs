//! The application layer: the invoice workflows, with no HTTP in them.
//!
//! Each workflow takes typed input (request structs already parsed, the caller's company
//! and user ids from [`crate::auth::Caller`]), the [`Services`] it needs (the service's
//! clock, the exchange-rate source, the VERI*FACTU mode), a connection for reads and a
//! [`Writer`] for the write transaction, and returns stored rows or an [`AppError`]. The
//! API's handlers extract, call one workflow and shape its view; the recurring-invoice
//! runner calls the same functions.
//!
//! - [`drafts`]: create (validated and priced on a pooled connection, numbered on the
//!   writer), update, delete one or many; the pieces other workflows make drafts with.
//! - [`issue`]: the company's permission to issue, preparing an issue (rates,
//!   placeholders, the document) on a pooled connection and committing it (the number,
//!   the row, the VERI*FACTU record, the webhook) on the writer; bulk issue.
//! - [`corrections`]: a corrective draft, or a corrective invoice created and issued.
//! - [`proformas`]: creating, changing and deleting proformas (priced like a draft), and
//!   a proforma into a draft invoice.
//! - [`recurring`]: recurring invoices (a schedule and the draft each period gets), and
//!   the runner the worker calls to make, issue and send each period's invoice.
//! - [`send`]: an issued invoice queued for mailing to its customer.
//! - [`annul`]: an issued invoice cancelled in its VERI*FACTU chain.
//! - [`payments`]: recording and deleting payments.
//! - [`invoices`]: what they share (reading an invoice, the company, the draft rule).
//!
//! Failures are [`AppError`]; the API answers them in one place
//! (`impl From<AppError> for ApiError`). Time comes only from [`Services::now`], the
//! service's injectable clock.

pub mod annul;
pub mod corrections;
pub mod drafts;
pub mod error;
pub mod invoices;
pub mod issue;
pub mod payments;
pub mod proformas;
pub mod recurring;
pub mod send;

use std::ops::DerefMut;

use chrono::{DateTime, Utc};

pub use self::error::{AppError, AppResult};
use crate::{AppState, Clock, aeat, fx};

/// What the workflows use of the service: its database, its clock, its exchange rates and
/// where VERI*FACTU records go.
#[derive(Clone, Copy)]
pub struct Services<'a> {
    pub db: &'a store::Db,
    clock: &'a Clock,
    pub fx: &'a fx::RateProvider,
    pub aeat_mode: aeat::Mode,
}

impl Services<'_> {
    /// The current time, from the service's clock (tests move it).
    pub fn now(&self) -> DateTime<Utc> {
        (self.clock)()
    }
}

impl AppState {
    /// What the workflows use of this state.
    pub fn services(&self) -> Services<'_> {
        Services {
            db: &self.db,
            clock: &self.clock,
            fx: &self.fx,
            aeat_mode: self.config.aeat_mode,
        }
    }
}

/// The write transaction of a workflow, begun on first use (on SQLite this takes the
/// single writer, so a workflow reads and decides on a pooled connection first and asks
/// for it only to write).
pub trait Writer: Sync {
    /// The transaction's connection, for the next statements.
    fn conn(
        &self,
    ) -> impl Future<Output = AppResult<impl DerefMut<Target = sqlx::AnyConnection> + Send + '_>> + Send;

    /// The transaction itself, for store functions that write through [`store::Writing`]
    /// (whose first statements carry SQLite's `BEGIN`); `last` when their writes are all
    /// the request will write ([`crate::gate::Tx::writing`]).
    fn writing(
        &self,
        last: bool,
    ) -> impl Future<Output = AppResult<impl DerefMut<Target = store::WriteTx> + Send + '_>> + Send;
}

impl Writer for crate::gate::Tx {
    async fn conn(&self) -> AppResult<impl DerefMut<Target = sqlx::AnyConnection> + Send + '_> {
        crate::gate::Tx::conn(self).await
    }

    async fn writing(
        &self,
        last: bool,
    ) -> AppResult<impl DerefMut<Target = store::WriteTx> + Send + '_> {
        crate::gate::Tx::writing(self, last).await
    }
}
