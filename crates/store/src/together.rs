//! PostgreSQL: a company's issues made together.
//!
//! The law numbers a company's invoices without gaps, so its issues take its counter's row
//! one after another, each holding it from its statement to its commit. With many of a
//! company's clients issuing at once, that section is the company's bound (docs/PERFORMANCE.md
//! measures it). So an issue that would end its transaction with its own statement
//! ([`crate::Writing::closing`]) is queued here instead, by company: at most [`IN_FLIGHT`]
//! statements of a company are sent at a time, and the issues that arrive meanwhile go
//! together in the next one, which moves the counter by their number, writes each invoice
//! with its own number (in the order they arrived), adds their rollups once (summed) and
//! commits once. The statement is all or nothing: if one of its invoices is refused (its
//! draft changed, the company has webhook endpoints to tell), none is issued and each is
//! made again alone, the ordinary way, which says why.
//!
//! The statement is sent by a task of its own on the first issue's connection, so that a
//! client going away does not cancel the others' issues; each issue's connection is handed
//! back to it with its outcome. Per process: two servers on one database each group their
//! own, and their statements queue on the counter's row as before.

use std::collections::{HashMap, VecDeque};
use std::sync::{LazyLock, Mutex, MutexGuard};

use domain::reference::ReferencePart;
use tokio::sync::oneshot;

use crate::{db::Pooled, invoices::InvoiceRow};

/// How many statements of one company may be in PostgreSQL at a time: one holding the
/// counter, one sent and waiting for it, so that the next starts as the last commits.
const IN_FLIGHT: usize = 2;

/// The most issues one statement makes (its parameters grow by about 30 with each).
const MOST: usize = 32;

/// An issue to make with others: the draft prepared as issued, its number and reference
/// left to the statement.
pub(crate) struct Issue {
    pub row: InvoiceRow,
    /// The series' first number in a new year.
    pub first: i64,
    pub reference: Vec<ReferencePart>,
    /// The row's new `updated_at`.
    pub stamp: i64,
}

/// How an issue made with others ended; each hands the connection it lent back.
pub(crate) enum Outcome {
    /// Issued and committed: its number, its reference and the company's enabled webhook
    /// endpoints.
    Issued((i64, String, i64), Pooled),
    /// Nothing was issued: make it alone.
    Alone(Pooled),
    /// Failed, alone; the connection if it is not lost.
    Failed(sqlx::Error, Option<Pooled>),
}

struct Waiting {
    issue: Issue,
    conn: Pooled,
    answer: oneshot::Sender<Outcome>,
}

/// One company's issues: how many statements are in flight, and those waiting. Each
/// waiting issue holds a pooled connection, so there are never more than the pool's.
#[derive(Default)]
struct Queue {
    running: usize,
    waiting: VecDeque<Waiting>,
}

static QUEUES: LazyLock<Mutex<HashMap<String, Queue>>> = LazyLock::new(Default::default);

fn queues() -> MutexGuard<'static, HashMap<String, Queue>> {
    // Every change under the lock is whole: a panic elsewhere leaves it consistent.
    QUEUES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Makes `issue` with the company's other issues waiting, on one of their connections
/// (`conn` is this one's, nothing of its transaction sent yet).
pub(crate) async fn issue(issue: Issue, conn: Pooled) -> Outcome {
    let company = issue.row.company_id.as_str().to_owned();
    let (answer, answered) = oneshot::channel();
    let start = {
        let mut queues = queues();
        let queue = queues.entry(company.clone()).or_default();
        queue.waiting.push_back(Waiting {
            issue,
            conn,
            answer,
        });
        let start = queue.running < IN_FLIGHT;
        if start {
            queue.running += 1;
        }
        start
    };
    if start {
        tokio::spawn(drive(company));
    }
    answered.await.unwrap_or_else(|_| {
        Outcome::Failed(
            sqlx::Error::Protocol("the task issuing this invoice with others ended".into()),
            None,
        )
    })
}

/// Sends the company's waiting issues, a group at a time, until none waits.
async fn drive(company: String) {
    let mut running = Running {
        company: &company,
        done: false,
    };
    loop {
        let group = {
            let mut queues = queues();
            let Some(queue) = queues.get_mut(&company) else {
                return;
            };
            let group = take(&mut queue.waiting);
            if group.is_empty() {
                queue.running -= 1;
                if queue.running == 0 {
                    queues.remove(&company);
                }
                running.done = true;
                return;
            }
            group
        };
        send(group).await;
    }
}

/// A driving task's place in its company's queue, given up if it ends without emptying it
/// (a panic): the last to go fails the issues still waiting, which no task would send.
struct Running<'a> {
    company: &'a str,
    done: bool,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let orphans = {
            let mut queues = queues();
            let Some(queue) = queues.get_mut(self.company) else {
                return;
            };
            queue.running = queue.running.saturating_sub(1);
            if queue.running > 0 {
                return;
            }
            queues.remove(self.company).map(|q| q.waiting)
        };
        // Dropped outside the lock: each answer's receiver learns its issue failed.
        drop(orphans);
    }
}

/// The next group: from the first waiting issue, those that take the same counter (a new
/// year, or a company whose first number changed, starts another) and not the same draft
/// twice (both would be refused), at most [`MOST`]; the others wait, in order.
fn take(waiting: &mut VecDeque<Waiting>) -> Vec<Waiting> {
    let mut group: Vec<Waiting> = Vec::new();
    let mut rest = VecDeque::new();
    while let Some(w) = waiting.pop_front() {
        let fits = group.len() < MOST
            && group.first().is_none_or(|head| {
                head.issue.row.invoice_year == w.issue.row.invoice_year
                    && head.issue.row.series == w.issue.row.series
                    && head.issue.first == w.issue.first
            })
            && !group.iter().any(|g| g.issue.row.id == w.issue.row.id);
        if fits {
            group.push(w);
        } else {
            rest.push_back(w);
        }
    }
    *waiting = rest;
    group
}

/// Sends one group's statement on its first issue's connection and answers each issue.
async fn send(mut group: Vec<Waiting>) {
    let issues: Vec<&Issue> = group.iter().map(|w| &w.issue).collect();
    let sent = match crate::invoices::issues_together(&issues) {
        Ok(batch) => {
            batch
                .fetch_all_rows::<(i64, i64, String, i64)>(&mut group[0].conn)
                .await
        }
        Err(e) => Err(e),
    };
    let rows = match sent {
        Ok(rows) => rows,
        // Refused, or failed with others: each is made again alone, which says why.
        Err(e) if crate::batch::is_refusal(&e) || group.len() > 1 => {
            for w in group {
                let _ = w.answer.send(Outcome::Alone(w.conn));
            }
            return;
        }
        Err(e) => {
            if let Some(w) = group.pop() {
                let _ = w.answer.send(Outcome::Failed(e, Some(w.conn)));
            }
            return;
        }
    };
    let mut stored: Vec<Option<(i64, String, i64)>> = vec![None; group.len()];
    for (i, number, reference, endpoints) in rows {
        if let Some(slot) = usize::try_from(i).ok().and_then(|i| stored.get_mut(i)) {
            *slot = Some((number, reference, endpoints));
        }
    }
    for (w, stored) in group.into_iter().zip(stored) {
        let outcome = match stored {
            Some(stored) => Outcome::Issued(stored, w.conn),
            // The statement refuses itself unless each of its updates changed a row.
            None => Outcome::Failed(
                sqlx::Error::Protocol("an issue made with others was not answered".into()),
                Some(w.conn),
            ),
        };
        let _ = w.answer.send(outcome);
    }
}
