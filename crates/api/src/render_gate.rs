//! Admission to rendering, fair across companies and with a bounded wait.
//!
//! Renders are bound by the CPU and by memory, so only so many run at once (see
//! [`RenderLimits`]). Without fairness one company could take every slot: a company whose
//! snippet always runs to the 10-second render deadline, asking for its PDFs in a loop,
//! held all of them, and every other company's PDFs waited 20-28 s behind it. So:
//!
//! - a company may hold at most a share of the slots ([`RenderLimits::company_share_percent`],
//!   half by default): its further requests wait for its own renders to end, not in the
//!   common queue, so other companies always find the rest of the slots;
//! - waiting is bounded ([`RenderLimits::wait`]): past it the request gets a `503` with
//!   `Retry-After` instead of holding a connection for as long as others keep rendering;
//! - there are two gates: the render budget (renders and their line units, every PDF) and
//!   the snippet slots (anything that runs a company's Typst code: PDFs that carry a
//!   snippet, and the check of a snippet when it is saved, including an AI caller's dry
//!   run). Both count against the caller's company.

use std::{collections::HashMap, sync::Arc, time::Duration};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// Line units one core is given: on two cores one 500-line invoice renders at a time,
/// beside two one-page ones (one-page ones alone are bound by [`RENDERS_PER_CORE`] before
/// they run out of units). Measured on SQLite with 8 clients asking for 500-line PDFs: the
/// server peaked at 119-123 MiB and served 20-21 a second, against 154 MiB and 33-37 a
/// second with two at once (550 units a core); one-page PDFs were served as fast either way
/// (470-570 a second, runs alternated).
pub const RENDER_UNITS_PER_CORE: u32 = 350;

/// Renders at once per core, however short. Renders are bound by the CPU, so beyond what
/// the cores can run more at once only adds memory; each render also holds a few MiB
/// whatever its length: with 8 clients asking for one-page PDFs on PostgreSQL, thirteen at
/// once peaked the server at 119-136 MiB and answered 337-471 a second at p99 46-63 ms;
/// four at once, 103-120 MiB and 402-491 a second at p99 36-39 ms.
pub const RENDERS_PER_CORE: usize = 2;

/// How much rendering may run at once, and how much of it one company may hold.
#[derive(Debug, Clone)]
pub struct RenderLimits {
    /// Renders at once (default [`RENDERS_PER_CORE`] per core).
    pub renders: usize,
    /// Line units in all ([`render_weight`]; default [`RENDER_UNITS_PER_CORE`] per core).
    pub units: u32,
    /// Jobs that run company Typst code at once, each in a child process of up to 2 GiB
    /// (default one per core, at least two and at most eight).
    pub snippet_slots: usize,
    /// The share of each of these one company may hold, in percent (default 50,
    /// `INVOICING_RENDER_COMPANY_SHARE_PERCENT`); at least one render and one snippet slot.
    pub company_share_percent: u32,
    /// Longest a request waits for a slot before a `503` (default 20 s,
    /// `INVOICING_RENDER_WAIT_SECS`).
    pub wait: Duration,
}

impl Default for RenderLimits {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self {
            renders: RENDERS_PER_CORE.saturating_mul(cores),
            units: RENDER_UNITS_PER_CORE.saturating_mul(u32::try_from(cores).unwrap_or(1)),
            snippet_slots: cores.clamp(2, 8),
            company_share_percent: 50,
            wait: Duration::from_secs(20),
        }
    }
}

/// A render's share of the budget: its lines plus a fixed cost for the page furniture.
/// An invoice longer than the whole budget waits until it can run alone.
pub(crate) fn render_weight(lines: usize, budget: u32) -> u32 {
    u32::try_from(lines)
        .unwrap_or(u32::MAX)
        .saturating_add(50)
        .min(budget)
}

/// No slot freed up within the wait: the request should be tried again later.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Busy {
    /// The configured wait, for the message and `Retry-After`.
    pub waited: Duration,
}

/// The two gates of a server ([`crate::AppState`]).
pub(crate) struct RenderGate {
    renders: Arc<FairSlots>,
    snippets: Arc<FairSlots>,
    wait: Duration,
}

impl RenderGate {
    pub(crate) fn new(limits: &RenderLimits) -> Self {
        let share = limits.company_share_percent.clamp(1, 100);
        Self {
            renders: Arc::new(FairSlots::new(limits.renders, limits.units, share)),
            snippets: Arc::new(FairSlots::new(
                limits.snippet_slots,
                u32::try_from(limits.snippet_slots).unwrap_or(u32::MAX),
                share,
            )),
            wait: limits.wait,
        }
    }

    /// A render of a document with `lines` lines for `company`, and a snippet slot too when
    /// the document carries company snippets; both within one wait.
    pub(crate) async fn render(
        &self,
        company: &str,
        lines: usize,
        snippets: bool,
    ) -> Result<(Held, Option<Held>), Busy> {
        let deadline = tokio::time::Instant::now() + self.wait;
        let busy = |()| Busy { waited: self.wait };
        let weight = render_weight(lines, self.renders.total_units);
        let render = self
            .renders
            .acquire(company, weight, deadline)
            .await
            .map_err(busy)?;
        let snippet = if snippets {
            Some(
                self.snippets
                    .acquire(company, 1, deadline)
                    .await
                    .map_err(busy)?,
            )
        } else {
            None
        };
        Ok((render, snippet))
    }

    /// A job that runs `company`'s Typst code (a snippet check).
    pub(crate) async fn snippet(&self, company: &str) -> Result<Held, Busy> {
        self.snippets
            .acquire(company, 1, tokio::time::Instant::now() + self.wait)
            .await
            .map_err(|()| Busy { waited: self.wait })
    }
}

/// Slots with a weight ("units"), shared FIFO by everyone once admitted, and a per-company
/// admission in front: a company is admitted to the common queue only while what it holds
/// or waits for there stays within its share. So the common queue holds at most a share of
/// any one company, and a company asking for more waits behind its own requests.
struct FairSlots {
    slots: Arc<Semaphore>,
    units: Arc<Semaphore>,
    total_units: u32,
    company_slots: usize,
    company_units: u32,
    /// Per company: slots and units admitted (held or waited for in the common queue).
    admitted: std::sync::Mutex<HashMap<String, (usize, u32)>>,
    /// Signalled whenever a company's admission ends.
    released: Notify,
}

impl FairSlots {
    fn new(slots: usize, units: u32, share_percent: u32) -> Self {
        let slots = slots.max(1);
        let units = units.max(1);
        let share = |n: u64| (n * u64::from(share_percent) / 100).max(1);
        Self {
            slots: Arc::new(Semaphore::new(slots)),
            units: Arc::new(Semaphore::new(units as usize)),
            total_units: units,
            company_slots: usize::try_from(share(slots as u64)).unwrap_or(slots),
            company_units: u32::try_from(share(u64::from(units))).unwrap_or(units),
            admitted: std::sync::Mutex::new(HashMap::new()),
            released: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (usize, u32)>> {
        self.admitted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Admits `company` for `weight` units when its share allows: fewer slots than its share,
    /// and its units within its share, unless it holds nothing (a render heavier than a
    /// share runs alone rather than never).
    fn try_admit(&self, company: &str, weight: u32) -> bool {
        let mut admitted = self.lock();
        let entry = admitted.entry(company.to_owned()).or_insert((0, 0));
        let fits = entry.0 < self.company_slots
            && (entry.0 == 0 || entry.1.saturating_add(weight) <= self.company_units);
        if fits {
            entry.0 += 1;
            entry.1 = entry.1.saturating_add(weight);
        }
        fits
    }

    async fn acquire(
        self: &Arc<Self>,
        company: &str,
        weight: u32,
        deadline: tokio::time::Instant,
    ) -> Result<Held, ()> {
        // A request that waits for a slot, or renders, holds no database connection: the
        // one it keeps for its next statement goes back (an AI caller's dry run checks
        // snippets after its reads).
        store::db::give_back();
        let weight = weight.clamp(1, self.total_units);
        loop {
            // Registered before looking, so a release between the look and the wait wakes it.
            let released = self.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            if self.try_admit(company, weight) {
                break;
            }
            tokio::time::timeout_at(deadline, released)
                .await
                .map_err(drop)?;
        }
        let admission = Admission {
            slots: self.clone(),
            company: company.to_owned(),
            weight,
        };
        let units =
            tokio::time::timeout_at(deadline, self.units.clone().acquire_many_owned(weight))
                .await
                .map_err(drop)?
                .map_err(drop)?;
        let slot = tokio::time::timeout_at(deadline, self.slots.clone().acquire_owned())
            .await
            .map_err(drop)?
            .map_err(drop)?;
        Ok(Held {
            _permits: (slot, units),
            _admission: admission,
        })
    }
}

/// A company's admission; ending it lets the company's next request in.
struct Admission {
    slots: Arc<FairSlots>,
    company: String,
    weight: u32,
}

impl Drop for Admission {
    fn drop(&mut self) {
        {
            let mut admitted = self.slots.lock();
            if let Some(entry) = admitted.get_mut(&self.company) {
                entry.0 = entry.0.saturating_sub(1);
                entry.1 = entry.1.saturating_sub(self.weight);
                if entry.0 == 0 {
                    admitted.remove(&self.company);
                }
            }
        }
        self.slots.released.notify_waiters();
    }
}

/// A slot held until dropped (kept until the render ends, even if the client has gone).
pub(crate) struct Held {
    // Declared first, so dropped first: the slot is free before the company's next request
    // is let in to take it.
    _permits: (OwnedSemaphorePermit, OwnedSemaphorePermit),
    _admission: Admission,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_invoices_take_more_of_the_render_budget_but_never_more_than_all_of_it() {
        let budget = 2 * RENDER_UNITS_PER_CORE;
        assert_eq!(render_weight(1, budget), 51);
        assert_eq!(render_weight(500, budget), 550);
        // On two cores one 500-line invoice renders at a time, beside two one-page ones.
        assert!(2 * render_weight(500, budget) > budget);
        assert!(render_weight(500, budget) + 2 * render_weight(1, budget) <= budget);
        // On four, two.
        assert!(2 * render_weight(500, 2 * budget) <= 2 * budget);
        // One too long for the budget runs alone rather than never.
        assert_eq!(render_weight(5_000, budget), budget);
        assert_eq!(render_weight(usize::MAX, budget), budget);
    }

    #[tokio::test]
    async fn a_company_holds_at_most_its_share_while_others_still_get_slots() {
        let gate = RenderGate::new(&RenderLimits {
            renders: 4,
            units: 700,
            snippet_slots: 2,
            company_share_percent: 50,
            wait: Duration::from_millis(50),
        });
        let a1 = gate.render("a", 1, false).await.unwrap();
        let _a2 = gate.render("a", 1, false).await.unwrap();
        assert!(
            gate.render("a", 1, false).await.is_err(),
            "a third is past a's half"
        );
        let _b1 = gate.render("b", 1, false).await.unwrap();
        let _b2 = gate.render("b", 1, false).await.unwrap();
        drop(a1);
        let _a3 = gate.render("a", 1, false).await.unwrap();
        // A long invoice runs alone for its company, and does not take the others' units.
        let gate = RenderGate::new(&RenderLimits {
            renders: 4,
            units: 700,
            snippet_slots: 2,
            company_share_percent: 50,
            wait: Duration::from_millis(50),
        });
        let _long = gate.render("a", 500, false).await.unwrap();
        assert!(gate.render("a", 1, false).await.is_err());
        let _b = gate.render("b", 1, false).await.unwrap();
        let _s = gate.snippet("a").await.unwrap();
        assert!(gate.snippet("a").await.is_err());
        let _t = gate.snippet("b").await.unwrap();
    }
}
