//! At most a few argon2 computations at once, process-wide.
//!
//! Each computation holds 19 MiB while it runs. Without a bound, 200 parallel
//! sign-ins took a server from 44 MiB to 2.6 GiB (issue #27). A [`HashGate`]
//! admits as many computations as the machine has cores (at most
//! [`MAX_PERMITS`]); a few more callers wait up to [`WAIT`] for a turn, and
//! everyone else is told at once that the service is busy ([`GateError::Busy`],
//! a `503` with `Retry-After` on the web).
//!
//! The turn travels into the blocking task with the computation: a caller that
//! gives up (a client that disconnects) does not free its turn before its hash
//! is done, so the bound holds for memory, not only for callers.

use std::{
    num::NonZeroUsize,
    sync::{
        Arc, LazyLock,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Most argon2 computations at once, however many cores (19 MiB each).
pub const MAX_PERMITS: usize = 8;
/// Callers that may wait for a turn, per concurrent computation.
pub const WAITING_PER_PERMIT: usize = 8;
/// How long a caller waits for a turn before it is told the service is busy.
pub const WAIT: Duration = Duration::from_secs(2);

/// Why a password could not be hashed or checked.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// Every turn is taken and the queue is full, or no turn came within the wait.
    #[error("too many passwords are being checked at once; try again in a few seconds")]
    Busy,
    /// The computation itself failed.
    #[error("{0}")]
    Failed(anyhow::Error),
}

/// Bounds how many password hashes run at once; see the module docs.
#[derive(Debug)]
pub struct HashGate {
    permits: Arc<Semaphore>,
    size: usize,
    waiting: AtomicUsize,
    max_waiting: usize,
    wait: Duration,
}

/// A turn to run one argon2 computation; the next caller gets it when dropped.
#[derive(Debug)]
pub struct Turn(#[allow(dead_code)] OwnedSemaphorePermit);

/// Counts a waiting caller for as long as it waits.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl HashGate {
    /// `permits` computations at once (at least one), `max_waiting` callers
    /// waiting at most `wait` each.
    pub fn new(permits: usize, max_waiting: usize, wait: Duration) -> Self {
        let size = permits.max(1);
        Self {
            permits: Arc::new(Semaphore::new(size)),
            size,
            waiting: AtomicUsize::new(0),
            max_waiting,
            wait,
        }
    }

    /// A gate sized from this machine's cores (see [`MAX_PERMITS`]).
    pub fn for_this_machine() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        let permits = cores.min(MAX_PERMITS);
        Self::new(permits, permits * WAITING_PER_PERMIT, WAIT)
    }

    /// The process-wide gate: every sign-in, password change and generated
    /// password of this process shares it.
    pub fn shared() -> Arc<Self> {
        static SHARED: LazyLock<Arc<HashGate>> =
            LazyLock::new(|| Arc::new(HashGate::for_this_machine()));
        SHARED.clone()
    }

    /// How many computations may run at once.
    pub fn permits(&self) -> usize {
        self.size
    }

    /// Waits for a turn: at once when one is free, else up to the gate's wait
    /// when fewer than its limit are waiting already.
    pub async fn admit(&self) -> Result<Turn, GateError> {
        if let Ok(permit) = self.permits.clone().try_acquire_owned() {
            return Ok(Turn(permit));
        }
        let queued = Waiting(&self.waiting);
        if self.waiting.fetch_add(1, Ordering::SeqCst) >= self.max_waiting {
            drop(queued);
            return Err(GateError::Busy);
        }
        let permit = tokio::time::timeout(self.wait, self.permits.clone().acquire_owned()).await;
        drop(queued);
        match permit {
            Ok(Ok(permit)) => Ok(Turn(permit)),
            // Timed out, or the semaphore was closed (never: nothing closes it).
            _ => Err(GateError::Busy),
        }
    }

    /// Whether `password` matches the stored PHC string, computed in its turn.
    pub async fn verify(&self, password: &str, phc: &str) -> Result<bool, GateError> {
        let turn = self.admit().await?;
        let (password, phc) = (password.to_owned(), phc.to_owned());
        tokio::task::spawn_blocking(move || {
            let _turn = turn;
            super::verify(&password, &phc)
        })
        .await
        .map_err(|e| GateError::Failed(anyhow::anyhow!("checking the password stopped: {e}")))
    }

    /// The argon2id PHC string of `password`, computed in its turn.
    pub async fn hash(&self, password: &str) -> Result<String, GateError> {
        let turn = self.admit().await?;
        let password = password.to_owned();
        tokio::task::spawn_blocking(move || {
            let _turn = turn;
            super::hash(&password)
        })
        .await
        .map_err(|e| GateError::Failed(anyhow::anyhow!("hashing the password stopped: {e}")))?
        .map_err(GateError::Failed)
    }

    /// Checks `current` against `phc` and, when it matches, hashes `new`, in one
    /// turn (a password change): `None` when `current` is wrong.
    pub async fn verify_then_hash(
        &self,
        current: &str,
        phc: &str,
        new: &str,
    ) -> Result<Option<String>, GateError> {
        let turn = self.admit().await?;
        let (current, phc, new) = (current.to_owned(), phc.to_owned(), new.to_owned());
        tokio::task::spawn_blocking(move || {
            let _turn = turn;
            if super::verify(&current, &phc) {
                super::hash(&new).map(Some)
            } else {
                Ok(None)
            }
        })
        .await
        .map_err(|e| GateError::Failed(anyhow::anyhow!("changing the password stopped: {e}")))?
        .map_err(GateError::Failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_gate_with_no_room_to_wait_is_busy_at_once() {
        let gate = HashGate::new(1, 0, Duration::from_secs(60));
        let held = gate.admit().await.unwrap();
        assert!(matches!(gate.admit().await, Err(GateError::Busy)));
        drop(held);
        assert!(gate.admit().await.is_ok());
    }

    #[tokio::test]
    async fn a_waiting_caller_gets_the_turn_given_back() {
        let gate = Arc::new(HashGate::new(1, 1, Duration::from_secs(60)));
        let held = gate.admit().await.unwrap();
        let waiter = tokio::spawn({
            let gate = gate.clone();
            async move { gate.admit().await.map(drop) }
        });
        while gate.waiting.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        // The queue is full: the next caller is refused without waiting.
        assert!(matches!(gate.admit().await, Err(GateError::Busy)));
        drop(held);
        assert!(waiter.await.unwrap().is_ok());
        assert_eq!(gate.waiting.load(Ordering::SeqCst), 0);
    }
}
