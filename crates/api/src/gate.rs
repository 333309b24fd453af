//! The transaction every mutating request runs in, and the AI review gate over it.
//!
//! Every POST, PUT, PATCH and DELETE under `/v1` passes through [`gate`]:
//!
//! - a person's request runs inside one write transaction, committed when the
//!   handler answers 2xx and rolled back otherwise, so a failed request leaves
//!   nothing half-written (a handler whose writes are all done may commit before
//!   making its answer: [`Tx::done`], or with its last write: [`Tx::writing`]);
//! - an AI caller's request runs the real handler the same way but the
//!   transaction is always rolled back (a dry run: every side effect lives in
//!   the database, jobs included, so nothing escapes). If the handler would
//!   have failed, its error is answered now and nothing is recorded; if it
//!   would have succeeded, the request is captured as a pending AI audit entry
//!   and answered `202 pending_approval`.
//!
//! Because the gate wraps routes, not handlers, no handler can forget it, and
//! a new route is gated the moment it is added.
//!
//! A POST may carry `Idempotency-Key` (Stripe's semantics, per caller): see
//! [`idempotency`]. The AI caller's side, the review queue and its bounds: see [`hold`].

mod hold;
mod idempotency;

pub use hold::{MAX_INLINE_BODY, PendingApproval, QueueLimits};
pub use idempotency::{IDEMPOTENCY_HEADER, MAX_IDEMPOTENCY_KEY, ShownOnce};

use std::sync::Arc;

use axum::{
    extract::{FromRequestParts, MatchedPath, Request, State},
    http::{Method, request::Parts},
    middleware::Next,
    response::{IntoResponse, Response},
};
use tokio::sync::{MappedMutexGuard, Mutex, MutexGuard};

use crate::{
    AppState,
    auth::{Caller, CallerKind},
    error::ApiError,
    workflows::{AppError, AppResult},
};

/// Largest body an AI caller's request may carry into the review queue (receipts are the largest).
pub const MAX_CAPTURED_BODY: usize = 11 * 1024 * 1024;

/// Reads a request body the gate keeps (held for review, or fingerprinted for an
/// idempotency key), refusing one larger than [`MAX_CAPTURED_BODY`] with a 413.
async fn captured_body(body: axum::body::Body) -> Result<axum::body::Bytes, ApiError> {
    axum::body::to_bytes(body, MAX_CAPTURED_BODY)
        .await
        .map_err(|_| {
            ApiError::PayloadTooLarge(format!(
                "The request body is larger than {} MiB.",
                MAX_CAPTURED_BODY / (1024 * 1024)
            ))
        })
}

/// The write transaction of the current request, shared with its handler.
///
/// It begins lazily, on the handler's first [`Tx::conn`]: whatever a handler does before
/// (reading the body, validating it, reading from the pool) runs without holding
/// SQLite's single writer, and a request refused before that never takes it.
#[derive(Clone)]
pub struct TxSlot {
    db: store::Db,
    tx: Arc<Mutex<SlotState>>,
    /// Whether [`Tx::done`] commits: only where nothing after the handler writes in the
    /// transaction and it is committed on success (see there).
    early: bool,
    /// Whether the transaction is committed when the request succeeds (not an AI caller's
    /// dry run): a store function may then commit a statement on its own ahead of it
    /// ([`store::WriteTx::allow_ahead`]).
    commits: bool,
}

enum SlotState {
    /// Nothing written yet; the transaction begins on first use.
    NotBegun,
    Open(store::WriteTx),
    /// Committed or rolled back.
    Closed,
}

impl TxSlot {
    fn new(db: store::Db, early: bool, commits: bool) -> Self {
        Self {
            db,
            tx: Arc::new(Mutex::new(SlotState::NotBegun)),
            early,
            commits,
        }
    }

    async fn take(&self) -> Option<store::WriteTx> {
        match std::mem::replace(&mut *self.tx.lock().await, SlotState::Closed) {
            SlotState::Open(tx) => Some(tx),
            SlotState::NotBegun | SlotState::Closed => None,
        }
    }

    /// The open transaction, opened now if this is its first use. On SQLite its `BEGIN` is
    /// still due then: it goes with the first statements ([`store::Writing`]).
    async fn open(&self) -> AppResult<MappedMutexGuard<'_, store::WriteTx>> {
        let mut guard = self.tx.lock().await;
        if matches!(*guard, SlotState::NotBegun) {
            *guard = SlotState::Open(self.db.begin_write_deferred().await?);
        }
        MutexGuard::try_map(guard, |state| match state {
            SlotState::Open(tx) => Some(tx),
            SlotState::NotBegun | SlotState::Closed => None,
        })
        .map_err(|_| AppError::Internal(anyhow::anyhow!("the request transaction is closed")))
    }

    /// Commits the transaction (once; nothing to do if it never began); a failure is an
    /// internal error.
    async fn commit(&self) -> Result<(), ApiError> {
        match self.take().await {
            Some(tx) => tx.commit().await.map_err(ApiError::from),
            None => Ok(()),
        }
    }

    async fn rollback(&self) {
        if let Some(tx) = self.take().await
            && let Err(e) = tx.rollback().await
        {
            tracing::warn!(error = %e, "rollback failed");
        }
    }
}

/// Handler access to the request's write transaction.
pub struct Tx(TxSlot);

impl Tx {
    /// Locks the transaction's connection for the next statements.
    /// The first call begins the transaction (on SQLite: takes the single writer).
    pub async fn conn(&self) -> AppResult<MappedMutexGuard<'_, sqlx::AnyConnection>> {
        let mut tx = self.0.open().await?;
        store::Writing::conn(&mut *tx).await?;
        Ok(MappedMutexGuard::map(tx, store::WriteTx::conn))
    }

    /// Locks the transaction for a store function that writes through [`store::Writing`]:
    /// on SQLite, the transaction's `BEGIN` travels with its first statements when nothing
    /// of it was sent yet (one hand-off to the writer's thread fewer). The first call takes
    /// the single writer.
    ///
    /// `last`: the store function's writes are all the handler will write. Where
    /// [`Tx::done`] would commit, they may then begin and commit the transaction in one
    /// send ([`store::Writing::closing`]): one hand-off to SQLite's writer, or two round
    /// trips to PostgreSQL, fewer, and SQLite's writer is let go before the answer is made.
    /// What the handler does after them can no longer undo them, as after [`Tx::done`].
    ///
    /// Unless the request is an AI caller's dry run, a store function may also commit a
    /// statement on its own ahead of the transaction ([`store::WriteTx::allow_ahead`]: a
    /// new draft's number on PostgreSQL, which a failed request then leaves unused).
    pub async fn writing(&self, last: bool) -> AppResult<MappedMutexGuard<'_, store::WriteTx>> {
        let mut tx = self.0.open().await?;
        if last && self.0.early {
            tx.allow_closing();
        }
        if self.0.commits {
            tx.allow_ahead();
        }
        Ok(tx)
    }

    /// Says the handler has written all it will and only its answer is left to make.
    ///
    /// A person's request without an `Idempotency-Key` commits here, so that SQLite's single
    /// writer is not held while the answer is serialized and passes back through the
    /// middleware (other writers queue behind it meanwhile). Anywhere else this does
    /// nothing and the gate ends the transaction after the answer, as without it: an
    /// idempotency key's answer is stored in the same transaction, an AI caller's dry run
    /// is rolled back, and an approved request replayed runs in its approver's transaction,
    /// which goes on after it. Call it only when nothing left can fail: after it, an error
    /// answer would no longer undo the writes.
    pub async fn done(&self) -> Result<(), ApiError> {
        if self.0.early {
            self.0.commit().await?;
        }
        Ok(())
    }

    /// The shared slot, to hand the same transaction to a replayed request (which must not
    /// commit it: [`Tx::done`] does nothing there).
    pub(crate) fn slot(&self) -> TxSlot {
        TxSlot {
            early: false,
            ..self.0.clone()
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Tx {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<TxSlot>()
            .cloned()
            .map(Tx)
            .ok_or_else(|| {
                ApiError::Internal(anyhow::anyhow!(
                    "handler asked for a transaction on a route outside the gate"
                ))
            })
    }
}

/// Marks a request replayed by an approval: it runs in the approver's transaction.
#[derive(Clone)]
pub(crate) struct Replay;

/// Whether a method changes data.
pub fn is_mutating(method: &Method) -> bool {
    matches!(
        *method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    )
}

/// POST routes that only compute and never write: answered directly for every caller.
pub const READ_ONLY_POSTS: &[&str] = &["/v1/taxes/prefill"];

/// The gate middleware; see the module docs.
pub async fn gate(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let read_only = req
        .extensions()
        .get::<MatchedPath>()
        .is_some_and(|p| READ_ONLY_POSTS.contains(&p.as_str()));
    if !is_mutating(req.method()) || read_only || req.extensions().get::<Replay>().is_some() {
        return next.run(req).await;
    }
    let Some(caller) = req.extensions().get::<Caller>().cloned() else {
        return ApiError::Unauthorized("Missing bearer token.").into_response();
    };
    let (req, idem) = match idempotency::prepare(&state, &caller, req).await {
        Ok(idempotency::Prepared::Run(req, idem)) => (*req, idem),
        Ok(idempotency::Prepared::Answered(resp)) => return resp,
        Err(e) => return e.into_response(),
    };
    match caller.kind {
        CallerKind::Human => run_in_tx(&state, req, next, true, idem.as_ref()).await,
        CallerKind::Ai => hold::hold_for_review(&state, caller, req, next, idem.as_ref())
            .await
            .unwrap_or_else(IntoResponse::into_response),
    }
}

/// Runs the rest of the stack in a fresh write transaction; commits on 2xx if `commit`
/// (storing the answer under the idempotency key first, when there is one).
async fn run_in_tx(
    state: &AppState,
    mut req: Request,
    next: Next,
    commit: bool,
    idem: Option<&idempotency::Idem>,
) -> Response {
    let slot = TxSlot::new(state.db.clone(), commit && idem.is_none(), commit);
    req.extensions_mut().insert(slot.clone());
    let mut resp = next.run(req).await;
    if commit && resp.status().is_success() {
        if let Some(idem) = idem {
            match idempotency::remember_in(state, &slot, idem, resp).await {
                Ok(kept) => resp = kept,
                Err(e) => {
                    slot.rollback().await;
                    return e.into_response();
                }
            }
        }
        if let Err(e) = slot.commit().await {
            return e.into_response();
        }
    } else {
        slot.rollback().await;
    }
    resp
}

/// The `resource.verb` label of a route, e.g. `invoices.create`, `invoices.issue`,
/// `bank_accounts.snapshots_delete`.
///
/// The resource is the first segment after `/v1`. The verb is the action named
/// by a trailing static segment of a POST (`issue`, `approve`), otherwise the
/// method's verb (`create`, `update`, `replace`, `delete`), prefixed by any
/// sub-resource segments.
pub fn action_label(method: &Method, path: &str) -> String {
    let segments: Vec<&str> = path
        .trim_start_matches('/')
        .split('/')
        .filter(|s| !s.is_empty() && *s != "v1")
        .collect();
    let resource = segments
        .first()
        .copied()
        .unwrap_or("unknown")
        .replace('-', "_");
    let statics: Vec<String> = segments
        .iter()
        .skip(1)
        .filter(|s| !s.starts_with('{'))
        .map(|s| s.replace('-', "_"))
        .collect();
    let ends_static = segments.len() > 1 && !segments.last().is_some_and(|s| s.starts_with('{'));
    let method_verb = match *method {
        Method::POST => "create",
        Method::PATCH => "update",
        Method::PUT => "replace",
        Method::DELETE => "delete",
        _ => "read",
    };
    let verb = if statics.is_empty() {
        method_verb.to_owned()
    } else if ends_static && *method == Method::POST {
        statics.join("_")
    } else {
        format!("{}_{method_verb}", statics.join("_"))
    };
    format!("{resource}.{verb}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_actions() {
        let cases = [
            (Method::POST, "/v1/invoices", "invoices.create"),
            (Method::PATCH, "/v1/invoices/{id}", "invoices.update"),
            (Method::DELETE, "/v1/invoices/{id}", "invoices.delete"),
            (Method::POST, "/v1/invoices/{id}/issue", "invoices.issue"),
            (
                Method::POST,
                "/v1/invoices/bulk/issue",
                "invoices.bulk_issue",
            ),
            (
                Method::PUT,
                "/v1/expenses/{id}/receipt",
                "expenses.receipt_replace",
            ),
            (
                Method::POST,
                "/v1/bank-accounts/{id}/snapshots",
                "bank_accounts.snapshots",
            ),
            (
                Method::DELETE,
                "/v1/bank-accounts/{id}/snapshots/{sid}",
                "bank_accounts.snapshots_delete",
            ),
            (Method::PATCH, "/v1/company", "company.update"),
            (
                Method::POST,
                "/v1/company/registration",
                "company.registration",
            ),
        ];
        for (m, p, want) in cases {
            assert_eq!(action_label(&m, p), want, "{m} {p}");
        }
    }
}
