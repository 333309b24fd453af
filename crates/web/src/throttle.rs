//! Sign-in throttling: attempts are counted before any password is checked.
//!
//! Two counters per attempt, each a row keyed by a hash (so the table does not
//! say which addresses exist): the client address with the e-mail, limited to
//! [`MAX_FAILURES_PER_CLIENT_AND_EMAIL`], and the e-mail alone, limited to the
//! higher [`MAX_FAILURES_PER_EMAIL`]. Someone guessing from one address is
//! stopped for that account without locking out everyone else behind the same
//! proxy; many addresses guessing one account are stopped by the second limit.
//! A reservation is one upsert per counter ([`store::web::reserve_attempt`]), so
//! N parallel guesses get at most the limit checked. An attempt that turns out
//! right, or could not be checked (the service was busy), is given back.

use std::net::IpAddr;

use crate::WebState;

/// Failed sign-ins allowed per client address and e-mail in [`WINDOW_MINUTES`].
pub const MAX_FAILURES_PER_CLIENT_AND_EMAIL: i64 = 5;
/// Failed sign-ins allowed per e-mail address, from anywhere, in [`WINDOW_MINUTES`].
pub const MAX_FAILURES_PER_EMAIL: i64 = 20;
/// The window attempts are counted in, from the first attempt of the window.
pub const WINDOW_MINUTES: i64 = 15;

/// The counters one sign-in attempt is reserved under.
pub struct Attempt {
    client_and_email: String,
    email: String,
}

impl Attempt {
    /// The counters of a sign-in for `email` from `client` (none known: all
    /// such clients share one counter).
    pub fn new(email: &str, client: Option<IpAddr>) -> Self {
        let client = client.map_or_else(|| "unknown".to_owned(), |c| c.to_string());
        Self {
            client_and_email: store::hash_secret(&format!("client:{client}\nemail:{email}")),
            email: store::hash_secret(&format!("email:{email}")),
        }
    }

    /// Reserves the attempt; `false` when a limit is reached (nothing may be
    /// checked then). The e-mail's counter is only touched when the client's is
    /// within its limit, so one address hammering one account cannot use up the
    /// account's budget for everyone.
    pub async fn reserve(&self, state: &WebState) -> Result<bool, sqlx::Error> {
        let now = store::now_micros();
        let window_start_after = now - WINDOW_MINUTES * 60 * 1_000_000;
        let mut tx = state.api.db.begin_write().await?;
        let mine =
            store::web::reserve_attempt(tx.conn(), &self.client_and_email, now, window_start_after)
                .await?;
        let allowed = mine <= MAX_FAILURES_PER_CLIENT_AND_EMAIL && {
            let all = store::web::reserve_attempt(tx.conn(), &self.email, now, window_start_after)
                .await?;
            if all > MAX_FAILURES_PER_EMAIL {
                // Not this client's failure: its own counter gets the attempt back.
                store::web::release_attempt(tx.conn(), &self.client_and_email).await?;
            }
            all <= MAX_FAILURES_PER_EMAIL
        };
        tx.commit().await?;
        Ok(allowed)
    }

    /// Gives a reserved attempt back, in the transaction `conn` belongs to.
    pub async fn release(&self, conn: &mut sqlx::AnyConnection) -> Result<(), sqlx::Error> {
        store::web::release_attempt(conn, &self.client_and_email).await?;
        store::web::release_attempt(conn, &self.email).await
    }

    /// After a successful sign-in: this client starts afresh for the account,
    /// and the account's own counter gets this attempt back.
    pub async fn succeeded(&self, conn: &mut sqlx::AnyConnection) -> Result<(), sqlx::Error> {
        store::web::clear_attempts(conn, &self.client_and_email).await?;
        store::web::release_attempt(conn, &self.email).await
    }
}
