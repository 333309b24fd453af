//! Invoices (ordinary and corrective), drafts and issued.

use domain::reference::ReferencePart;
use sqlx::AnyConnection;

pub use crate::kinds::{InvoiceStatus, Origin, Series};
use crate::{batch::Batch, db::Writing};

/// An invoice as stored; lines, rates and snapshots are JSON documents.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct InvoiceRow {
    pub id: String,
    pub company_id: crate::CompanyId,
    pub recipient_id: String,
    pub series: Series,
    pub status: InvoiceStatus,
    pub origin: Origin,
    pub supply_type: String,
    pub currency_code: String,
    pub treatment: Option<String>,
    pub invoice_number: Option<i64>,
    pub invoice_year: Option<i64>,
    pub reference: Option<String>,
    pub issued_at: Option<i64>,
    pub order_number: Option<i64>,
    pub order_year: Option<i64>,
    pub net_total: i64,
    pub tax_total: i64,
    pub withholding_total: i64,
    pub total: i64,
    pub line_count: i64,
    pub lines_json: String,
    pub custom_placeholder_values_json: String,
    pub exchange_rates_json: String,
    pub bank_accounts_json: String,
    pub issuer_snapshot_json: Option<String>,
    pub recipient_snapshot_json: Option<String>,
    pub corrected_invoice_id: Option<String>,
    pub correction_reason: Option<String>,
    pub proforma_id: Option<String>,
    pub created_at: i64,
    pub updated_at: Option<i64>,
    /// When payment is due (microseconds), if set.
    pub due_date: Option<i64>,
    /// Sum of recorded payments, kept in step with `invoice_payments`.
    pub paid_minor: i64,
    /// The draft's legal details ([`DraftDetails`] as JSON).
    pub details_json: String,
    /// The issued invoice's typed document (`document::stored`), `None` for drafts.
    pub document_json: Option<String>,
    /// The recurring invoice (schedule) that made this draft, if one did.
    pub recurring_invoice_id: Option<String>,
}

/// What issuing stores beside an issued invoice's document (its number, year and time),
/// read once with the checks every reader needs: see [`InvoiceRow::issued`].
#[derive(Debug, Clone, Copy)]
pub struct Issued<'a> {
    /// The reference (BT-1), such as `INV-2026-00001`.
    pub reference: &'a str,
    /// The gapless yearly number.
    pub number: i64,
    /// The fiscal year of the number.
    pub year: i64,
    /// When it was issued.
    pub issued_at: chrono::DateTime<chrono::Utc>,
}

/// An invoice row that is not an issued invoice, or whose issue data is missing or does
/// not decode: the message says which, for the caller's error (a conflict for a draft where
/// an issued invoice is required, corrupt data for an issued row without its number).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotIssued {
    /// A draft: nothing was issued.
    #[error("invoice {0} is a draft, not an issued invoice")]
    Draft(String),
    /// An issued row without its reference, number, year or a valid issue time.
    #[error("issued invoice {id} is stored without {missing}")]
    Corrupt { id: String, missing: &'static str },
}

impl<'a> Issued<'a> {
    /// The issue data stored beside issued invoice `id`'s document, checked: every part
    /// present and the time a valid one.
    pub fn of(
        id: &str,
        reference: Option<&'a str>,
        number: Option<i64>,
        year: Option<i64>,
        issued_at: Option<i64>,
    ) -> Result<Self, NotIssued> {
        let corrupt = |missing| NotIssued::Corrupt {
            id: id.to_owned(),
            missing,
        };
        Ok(Self {
            reference: reference.ok_or_else(|| corrupt("its reference"))?,
            number: number.ok_or_else(|| corrupt("its number"))?,
            year: year.ok_or_else(|| corrupt("its year"))?,
            issued_at: issued_at
                .and_then(chrono::DateTime::from_timestamp_micros)
                .ok_or_else(|| corrupt("a valid issue time"))?,
        })
    }
}

impl InvoiceRow {
    /// The issue data of an issued invoice. A draft is [`NotIssued::Draft`]; an issued row
    /// without its reference, number, year or a valid issue time is [`NotIssued::Corrupt`],
    /// never an invoice "" numbered 0 of 1970.
    pub fn issued(&self) -> Result<Issued<'_>, NotIssued> {
        if self.status == InvoiceStatus::Draft {
            return Err(NotIssued::Draft(self.id.clone()));
        }
        Issued::of(
            &self.id,
            self.reference.as_deref(),
            self.invoice_number,
            self.invoice_year,
            self.issued_at,
        )
    }
}

pub(crate) const COLUMNS: &str = "id, company_id, recipient_id, series, status, origin, supply_type, currency_code, \
    treatment, invoice_number, invoice_year, reference, issued_at, order_number, order_year, net_total, \
    tax_total, withholding_total, total, line_count, lines_json, custom_placeholder_values_json, \
    exchange_rates_json, bank_accounts_json, issuer_snapshot_json, recipient_snapshot_json, \
    corrected_invoice_id, correction_reason, proforma_id, created_at, updated_at, due_date, paid_minor, \
    details_json, document_json, recurring_invoice_id";

/// Stores a new draft with the next draft number of its `order_year`, taken from the
/// `draft` series of `document_counters` ([`crate::counters::next`]'s counter); returns the
/// number and the company's enabled webhook endpoints ([`NumberedDraft`]).
///
/// On PostgreSQL, when the draft is the first thing its transaction writes, the number is
/// taken just before, by a statement that commits on its own
/// ([`crate::counters::next_ahead`]): the counter's row is then not locked until the
/// draft's commit, so a company's new drafts do not queue on it. Otherwise it is taken by
/// the same round trip that inserts the row: one batch on SQLite (the insert reads the
/// counter the upsert just moved; while SQLite's single writer is held, each statement is a
/// hand-off to the connection's thread and back) and one statement on PostgreSQL (the
/// insert takes the number the upsert returns: statements of one `WITH` share a snapshot,
/// so reading the table there would see the old value, and under concurrency a stale one).
///
/// When `tx` allows it ([`Writing::closing`]) and the company is not known to have webhook
/// endpoints, the draft is sent so that it also begins and commits `tx` (refused, and then
/// stored the ordinary way, if the company has an enabled endpoint after all): `tx` is
/// over when this returns.
pub async fn insert_numbered_draft(
    tx: &mut impl Writing,
    r: &InvoiceRow,
) -> sqlx::Result<NumberedDraft> {
    let year = r.order_year.unwrap_or_default();
    let postgres = tx.backend_name().eq_ignore_ascii_case("postgresql");
    // `$37` is the company; `$38` the number taken ahead, or else the year to take it in.
    let ahead = match tx.ahead() {
        Some(conn) if postgres => {
            Some(crate::counters::next_ahead(conn, &r.company_id, year).await?)
        }
        _ => None,
    };
    let counter = "INSERT INTO document_counters (company_id, series, year, next_number) \
         VALUES ($37, 'draft', $38, 2) ON CONFLICT (company_id, series, year) \
         DO UPDATE SET next_number = document_counters.next_number + 1";
    let (counter, number) = if ahead.is_some() {
        (None, "$38".to_owned())
    } else if postgres {
        (
            Some(format!("{counter} RETURNING next_number - 1 AS number")),
            format!("(SELECT number FROM {})", crate::batch::FIRST),
        )
    } else {
        (
            Some(counter.to_owned()),
            "(SELECT next_number - 1 FROM document_counters \
             WHERE company_id = $37 AND series = 'draft' AND year = $38)"
                .to_owned(),
        )
    };
    let values: Vec<String> = COLUMNS
        .split(',')
        .enumerate()
        .map(|(i, column)| match column.trim() {
            // Its parameter is bound with the others (a new draft has none): the counter's.
            "order_number" => format!("COALESCE(${}, {number})", i + 1),
            _ => format!("${}", i + 1),
        })
        .collect();
    let endpoints = crate::webhooks::enabled_endpoints("$37");
    let mut statements: Vec<String> = counter.into_iter().collect();
    statements.push(format!(
        "INSERT INTO invoices ({COLUMNS}) VALUES ({}) RETURNING order_number, {endpoints}",
        values.join(", "),
    ));
    let send = async |sql: String, conn: &mut sqlx::AnyConnection| {
        let q = sqlx::query(sqlx::AssertSqlSafe(sql));
        // `fetch_all`: on SQLite, `fetch_one` would look only at the upsert's (empty) result.
        let rows = bind_row(q, r)
            .bind(r.company_id.as_str())
            .bind(ahead.unwrap_or(year))
            .fetch_all(conn)
            .await?;
        let last = rows.last().ok_or(sqlx::Error::RowNotFound)?;
        Ok::<_, sqlx::Error>(NumberedDraft {
            order_number: sqlx::Row::try_get::<Option<i64>, _>(last, 0)?
                .ok_or(sqlx::Error::RowNotFound)?,
            webhook_endpoints: sqlx::Row::try_get(last, 1)?,
        })
    };
    // With a `BEGIN` still due (SQLite only: [`crate::Db::begin_write_deferred`]) ahead.
    let with_begin = |begin: Option<&str>, sql: String| match begin {
        Some(begin) => format!("{begin};\n{sql}"),
        None => sql,
    };
    if !crate::webhooks::might_have_endpoints(&r.company_id)
        && let Some(closing) = tx.closing()
    {
        let sql = crate::batch::closing(
            statements.clone(),
            postgres,
            &format!("{endpoints} > 0"),
            closing.commit,
        );
        match send(with_begin(closing.begin, sql), closing.conn).await {
            Ok(stored) => {
                tx.closed(true).await?;
                return Ok(stored);
            }
            // Made again below, which remembers the company's endpoints as it finds them.
            Err(e) if crate::batch::is_refusal(&e) => tx.closed(false).await?,
            Err(e) => return Err(e),
        }
    }
    // The first statements of their transaction, they carry its `BEGIN` if it is still due.
    let (begin, conn) = tx.opening().await?;
    let sql = with_begin(begin, crate::batch::join(&statements, postgres));
    let stored = send(sql, conn).await?;
    crate::webhooks::saw_endpoints(&r.company_id, stored.webhook_endpoints);
    Ok(stored)
}

/// What [`insert_numbered_draft`] stored.
#[derive(Debug, Clone, Copy)]
pub struct NumberedDraft {
    /// The draft's number in its year.
    pub order_number: i64,
    /// Whether the company had enabled webhook endpoints in the same transaction (1 or 0, for
    /// [`crate::webhooks::emit_counted`]).
    pub webhook_endpoints: i64,
}

/// The condition that finds one draft of a company, `$1` the company and `$2` the id, by
/// its primary key alone (as [`crate::by_id`]).
///
/// Written plainly (`company_id = $1 AND id = $2 AND status = 'draft'`), PostgreSQL may
/// look the row up through an index on `(company_id, status, ...)` and read every draft of
/// the company to find it: its statistics do not know that one company has thousands of
/// drafts (a new company, or drafts rare in the table as a whole), so it costs that scan
/// at one row, the same as the primary key. Measured: 5 ms per issue with 5,000 drafts,
/// held under the company's counter lock, 85 issues a second at 8 clients instead of 560.
/// Inside `IS TRUE` the company and status are checked on the row found, not used to find it.
pub const DRAFT_BY_ID: &str = "id = $2 AND (company_id = $1 AND status = 'draft') IS TRUE";

/// Binds every column of `r`, in [`COLUMNS`] order (one row of an `INSERT`).
pub(crate) fn bind_row<'q>(
    q: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>,
    r: &'q InvoiceRow,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments> {
    q.bind(&r.id)
        .bind(&r.company_id)
        .bind(&r.recipient_id)
        .bind(r.series)
        .bind(r.status)
        .bind(r.origin)
        .bind(&r.supply_type)
        .bind(&r.currency_code)
        .bind(&r.treatment)
        .bind(r.invoice_number)
        .bind(r.invoice_year)
        .bind(&r.reference)
        .bind(r.issued_at)
        .bind(r.order_number)
        .bind(r.order_year)
        .bind(r.net_total)
        .bind(r.tax_total)
        .bind(r.withholding_total)
        .bind(r.total)
        .bind(r.line_count)
        .bind(&r.lines_json)
        .bind(&r.custom_placeholder_values_json)
        .bind(&r.exchange_rates_json)
        .bind(&r.bank_accounts_json)
        .bind(&r.issuer_snapshot_json)
        .bind(&r.recipient_snapshot_json)
        .bind(&r.corrected_invoice_id)
        .bind(&r.correction_reason)
        .bind(&r.proforma_id)
        .bind(r.created_at)
        .bind(r.updated_at)
        .bind(r.due_date)
        .bind(r.paid_minor)
        .bind(&r.details_json)
        .bind(&r.document_json)
        .bind(&r.recurring_invoice_id)
}

/// Writes every mutable column of a draft back.
pub async fn update(conn: &mut AnyConnection, r: &InvoiceRow) -> sqlx::Result<()> {
    let mut batch = Batch::new();
    push_update(&mut batch, r, Update::Draft, crate::now_micros());
    batch.execute(conn).await
}

/// Stores a just-issued invoice with the next number of its series in its year, its
/// reference and the dashboard rollups; fills in `r.invoice_number` and `r.reference` as
/// stored and returns whether the company had enabled webhook endpoints in the same
/// transaction (1 or 0, for [`crate::webhooks::emit_counted`]). `None`: not stored, see
/// below.
///
/// `r` is the draft as it was read (its `updated_at` says which version) with the issued
/// columns filled in but for the number and reference; `first` is the series' first
/// number of a new year and `reference` the parts of the year's reference
/// ([`domain::reference::ReferenceFormat::parts`]). It is stored only if the draft is
/// still a draft in that version. `None` means it was issued or changed meanwhile: the
/// counter and the rollups were written anyway, so the caller must roll the transaction
/// back. Checking here instead of locking the draft first saves a statement while the
/// writer is held.
///
/// On SQLite the number is taken in the same round trip (each statement is a hand-off to
/// the connection's thread and back while the single writer is held): the counter's upsert
/// comes first in the batch, and the update reads the number from the counter's row (the
/// statements run in order) and renders the reference from it in SQL, its texts bound as
/// values. On PostgreSQL the batch is one statement whose clauses run in no set order, and
/// the counter's row lock must order the issuers of a company before they touch the rollups
/// (two issues of one draft deadlocked otherwise): an ordinary invoice's counter upsert is
/// the batch's first clause and every rollup reads its values from it
/// ([`Batch::after_first`]), so the number, the rollups and the invoice go in one round trip
/// and the counter is held for one round trip less; a corrective invoice's number is taken
/// first by a statement of its own ([`crate::counters::next`]), since its rollups read the
/// invoices it corrects, which must wait for that lock.
pub async fn store_issued(
    tx: &mut impl Writing,
    r: &mut InvoiceRow,
    first: i64,
    reference: &[ReferencePart],
) -> sqlx::Result<Option<i64>> {
    let stamp = crate::now_micros();
    // PostgreSQL, an ordinary invoice whose statement may end its transaction: made with
    // the company's other issues waiting ([`crate::together`]).
    if r.series == Series::Invoice
        && tx.backend_name().eq_ignore_ascii_case("postgresql")
        && !crate::webhooks::might_have_endpoints(&r.company_id)
        && let Some(conn) = tx.lend()
    {
        r.invoice_number = None;
        r.reference = None;
        let issue = crate::together::Issue {
            row: r.clone(),
            first,
            reference: reference.to_vec(),
            stamp,
        };
        match crate::together::issue(issue, conn).await {
            crate::together::Outcome::Issued(stored, conn) => {
                drop(conn);
                tx.closed(true).await?;
                return Ok(Some(issued(r, stored, stamp)));
            }
            // Made alone below, the ordinary way.
            crate::together::Outcome::Alone(conn) => tx.restore(conn),
            crate::together::Outcome::Failed(e, conn) => {
                if let Some(conn) = conn {
                    tx.restore(conn);
                }
                return Err(e);
            }
        }
    }
    let mut batch = issue_batch(tx, r, first, reference, stamp).await?;
    // All that is left of the transaction when the caller allows (no VERI*FACTU record
    // follows, say): sent so that it ends it too, refused (and made again the ordinary way)
    // if the draft changed meanwhile or the company has endpoints to tell.
    let refuse_if = format!("{} > 0", crate::webhooks::enabled_endpoints("$1"));
    if !crate::webhooks::might_have_endpoints(&r.company_id)
        && let Some(conn) = batch.closing(tx, &refuse_if, &[r.company_id.as_str()])?
    {
        match batch.fetch_optional_row::<(i64, String, i64)>(conn).await {
            Ok(stored) => {
                tx.closed(true).await?;
                return Ok(stored.map(|stored| issued(r, stored, stamp)));
            }
            // Made again below, which remembers the company's endpoints as it finds them
            // (a refusal may be the draft's, not the endpoints').
            Err(e) if crate::batch::is_refusal(&e) => {
                tx.closed(false).await?;
                batch = issue_batch(tx, r, first, reference, stamp).await?;
            }
            Err(e) => return Err(e),
        }
    }
    // With the transaction's `BEGIN`, if nothing of it was sent yet.
    let conn = batch.opening(tx).await?;
    let stored = batch
        .fetch_optional_row::<(i64, String, i64)>(conn)
        .await?
        .map(|stored| issued(r, stored, stamp));
    if let Some(endpoints) = stored {
        crate::webhooks::saw_endpoints(&r.company_id, endpoints);
    }
    Ok(stored)
}

/// The one statement that issues `issues`, ordinary invoices of one company prepared as
/// issued (numbers and references left to it), taking the same counter, on PostgreSQL
/// ([`crate::together`]): it moves the counter by their number, writes each invoice with
/// the next number in turn and its reference, adds their rollups once, and commits; it is
/// refused whole if one of the drafts changed or the company has enabled webhook
/// endpoints. It answers, for each invoice in turn, its index among `issues`, its number,
/// its reference and the company's endpoints.
pub(crate) fn issues_together(issues: &[&crate::together::Issue]) -> sqlx::Result<Batch> {
    let Some(head) = issues.first() else {
        return Err(sqlx::Error::Protocol("no issue to make".into()));
    };
    let head = &head.row;
    let mut batch = Batch::new();
    batch.after_first();
    batch
        .push(&format!(
            "{} RETURNING next_number - $5 AS n",
            crate::counters::TAKE_SOME
        ))
        .bind(head.company_id.as_str())
        .bind(head.series.as_str())
        .bind(head.invoice_year.unwrap_or_default())
        .bind(issues[0].first)
        .bind(issues.len() as i64);
    let rows: Vec<&InvoiceRow> = issues.iter().map(|i| &i.row).collect();
    crate::dashboard::push_issued(&mut batch, &rows);
    for (offset, issue) in (0i64..).zip(issues) {
        push_update(
            &mut batch,
            &issue.row,
            Update::Issued {
                numbered_here: Some((&issue.reference, Counter::FirstClause(offset))),
            },
            issue.stamp,
        );
    }
    batch.answered_by(issues.len());
    let refuse_if = format!("{} > 0", crate::webhooks::enabled_endpoints("$1"));
    batch.self_committing(&refuse_if, &[head.company_id.as_str()])?;
    Ok(batch)
}

/// Fills in what [`store_issued`]'s batch returned (the number, the reference, the
/// company's enabled endpoints) and returns the endpoints.
fn issued(
    r: &mut InvoiceRow,
    (number, reference, endpoints): (i64, String, i64),
    stamp: i64,
) -> i64 {
    r.invoice_number = Some(number);
    r.reference = Some(reference);
    r.updated_at = Some(stamp);
    endpoints
}

/// [`store_issued`]'s statements: the number (unless taken already), the rollups and the
/// invoice's update, which returns its number, reference and the company's endpoints.
async fn issue_batch(
    tx: &mut impl Writing,
    r: &mut InvoiceRow,
    first: i64,
    reference: &[ReferencePart],
    stamp: i64,
) -> sqlx::Result<Batch> {
    let year = r.invoice_year.unwrap_or_default();
    let mut batch = Batch::new();
    let postgres = tx.backend_name().eq_ignore_ascii_case("postgresql");
    // Where the number comes from when it is taken in the batch (`None`: taken already).
    let numbered_here = if !postgres {
        Some(Counter::Table)
    } else if r.series == Series::Invoice {
        Some(Counter::FirstClause(0))
    } else {
        None
    };
    if let Some(counter) = numbered_here {
        r.invoice_number = None;
        r.reference = None;
        let take = match counter {
            Counter::Table => crate::counters::TAKE.to_owned(),
            Counter::FirstClause(_) => {
                batch.after_first();
                format!("{} RETURNING next_number - 1 AS n", crate::counters::TAKE)
            }
        };
        batch
            .push(&take)
            .bind(r.company_id.as_str())
            .bind(r.series.as_str())
            .bind(year)
            .bind(first);
    } else {
        let number = crate::counters::next(
            tx.conn().await?,
            &r.company_id,
            r.series.as_str(),
            year,
            first,
        )
        .await?;
        r.invoice_number = Some(number);
        r.reference = Some(ReferencePart::render(reference, number));
    }
    crate::dashboard::push_issue(tx, &mut batch, r).await?;
    // Last: the batch answers with what the last statement returns.
    push_update(
        &mut batch,
        r,
        Update::Issued {
            numbered_here: numbered_here.map(|counter| (reference, counter)),
        },
        stamp,
    );
    Ok(batch)
}

/// Where an issue that takes its number in its batch reads it from.
#[derive(Clone, Copy)]
enum Counter {
    /// The counter's row, moved by an earlier statement of the batch (SQLite, whose
    /// statements run in order and each see the last one's changes).
    Table,
    /// The `RETURNING n` of the batch's first clause, plus the offset (PostgreSQL, whose
    /// clauses of one `WITH` share one snapshot: the table would show the number before
    /// the move; the offset is an invoice's place among issues made together).
    FirstClause(i64),
}

/// Which update [`push_update`] writes.
#[derive(Clone, Copy)]
enum Update<'a> {
    /// The row as it is.
    Draft,
    /// A draft being issued: written only if it is still the draft of `r.updated_at`;
    /// returns its number and reference. With `numbered_here`, the parts of its reference
    /// and where the number the batch's counter upsert took is read from.
    Issued {
        numbered_here: Option<(&'a [ReferencePart], Counter)>,
    },
}

/// The update of every mutable column (see [`Update`]). When the number is taken in the
/// batch, it comes from the counter ([`Counter`]) as the table `c` of one column `n`.
fn push_update(batch: &mut Batch, r: &InvoiceRow, update: Update<'_>, updated_at: i64) {
    // The number and reference: bound (`$8`, `$10`), or, when taken here, left unbound
    // (NULL) and read from the counter.
    let numbered_here = match update {
        Update::Issued { numbered_here } => numbered_here,
        Update::Draft => None,
    };
    let (number, reference, from) = match numbered_here {
        None => ("$8".to_owned(), "$10".to_owned(), String::new()),
        Some((parts, counter)) => {
            // Past the update's own 30 parameters: the series (to find the counter's row),
            // then the texts.
            let mut param = match counter {
                Counter::Table => 32,
                Counter::FirstClause(_) => 31,
            };
            let n = match counter {
                Counter::FirstClause(offset) if offset > 0 => format!("(c.n + {offset})"),
                _ => "c.n".to_owned(),
            };
            let parts: Vec<String> = parts
                .iter()
                .map(|p| match p {
                    ReferencePart::Text(_) => {
                        param += 1;
                        format!("${}", param - 1)
                    }
                    ReferencePart::Number { pad } => padded(&n, *pad),
                })
                .collect();
            (
                format!("COALESCE($8, {n})"),
                format!("COALESCE($10, {})", parts.join(" || ")),
                match counter {
                    Counter::Table => " FROM (SELECT next_number - 1 AS n FROM document_counters \
                     WHERE company_id = $1 AND series = $31 AND year = $9) AS c"
                        .to_owned(),
                    Counter::FirstClause(_) => {
                        format!(" FROM (SELECT n FROM {}) AS c", crate::batch::FIRST)
                    }
                },
            )
        }
    };
    // Issuing keeps the draft's customer: the row is written only if it is still the draft
    // that was read. `recipient_id` is then checked, not assigned, because SQLite rewrites
    // the entries of every index over an assigned column, changed or not (one page of the
    // log less for each issue).
    let recipient = match update {
        Update::Issued { .. } => "",
        Update::Draft => "recipient_id = $3, ",
    };
    let sql = format!(
        "UPDATE invoices SET {recipient}status = $4, supply_type = $5, currency_code = $6, \
         treatment = $7, invoice_number = {number}, invoice_year = $9, reference = {reference}, \
         issued_at = $11, order_number = $12, order_year = $13, net_total = $14, tax_total = $15, \
         withholding_total = $16, total = $17, line_count = $18, lines_json = $19, \
         custom_placeholder_values_json = $20, exchange_rates_json = $21, bank_accounts_json = $22, \
         issuer_snapshot_json = $23, recipient_snapshot_json = $24, correction_reason = $25, \
         updated_at = $26, due_date = $27, details_json = $28, document_json = $29{from}"
    );
    let sql = if matches!(update, Update::Issued { .. }) {
        format!(
            "{sql} WHERE {DRAFT_BY_ID} AND (recipient_id = $3) IS TRUE \
             AND COALESCE(updated_at, 0) = COALESCE($30, 0) \
             RETURNING invoice_number, reference, {}",
            crate::webhooks::enabled_endpoints("$1")
        )
    } else {
        format!("{sql} WHERE {}", crate::by_id("$1", "$2"))
    };
    batch
        .push(&sql)
        .bind(r.company_id.as_str())
        .bind(r.id.as_str())
        .bind(r.recipient_id.as_str())
        .bind(r.status.as_str())
        .bind(r.supply_type.as_str())
        .bind(r.currency_code.as_str())
        .bind(r.treatment.as_deref())
        .bind(r.invoice_number)
        .bind(r.invoice_year)
        .bind(r.reference.as_deref())
        .bind(r.issued_at)
        .bind(r.order_number)
        .bind(r.order_year)
        .bind(r.net_total)
        .bind(r.tax_total)
        .bind(r.withholding_total)
        .bind(r.total)
        .bind(r.line_count)
        .bind(r.lines_json.as_str())
        .bind(r.custom_placeholder_values_json.as_str())
        .bind(r.exchange_rates_json.as_str())
        .bind(r.bank_accounts_json.as_str())
        .bind(r.issuer_snapshot_json.as_deref())
        .bind(r.recipient_snapshot_json.as_deref())
        .bind(r.correction_reason.as_deref())
        .bind(updated_at)
        .bind(r.due_date)
        .bind(r.details_json.as_str())
        .bind(r.document_json.as_deref());
    if let Update::Issued { .. } = update {
        batch.bind(r.updated_at);
    }
    if let Some((parts, counter)) = numbered_here {
        if let Counter::Table = counter {
            batch.bind(r.series.as_str());
        }
        for p in parts {
            if let ReferencePart::Text(t) = p {
                batch.bind(t.as_str());
            }
        }
    }
}

/// SQL for the integer `n` as text, zero-padded to at least `pad` digits as Rust's
/// `{n:0pad$}` does (for `n >= 0`), in the functions both engines have.
fn padded(n: &str, pad: u32) -> String {
    let text = format!("CAST({n} AS TEXT)");
    if pad <= 1 {
        return text;
    }
    let zeros = "0".repeat(pad as usize);
    format!(
        "(CASE WHEN length({text}) >= {pad} THEN {text} \
         ELSE substr('{zeros}' || {text}, length({text}) + 1) END)"
    )
}

/// One invoice of the company.
pub async fn get(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &crate::InvoiceId,
) -> sqlx::Result<Option<InvoiceRow>> {
    sqlx::query_as::<_, InvoiceRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM invoices WHERE {}",
        crate::by_id("$1", "$2")
    )))
    .bind(company_id)
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// What issuing the invoice `id` of the company reads first, together (one hand-off on
/// SQLite, see [`crate::batch::read_each`]): the invoice, the company with what decides
/// whether `user_id` may issue for it ([`crate::companies::for_issuing`]), and the invoice's
/// recipient. Each is `None` when there is none.
pub async fn for_issue(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &crate::InvoiceId,
    user_id: &str,
) -> sqlx::Result<ForIssue> {
    use sqlx::FromRow;
    // $1 the company, $2 the user (as `for_issuing` numbers them), $3 the invoice.
    let invoice = format!(
        "SELECT {COLUMNS} FROM invoices WHERE {}",
        crate::by_id("$1", "$3")
    );
    let company = crate::companies::issuing_sql();
    let recipient = crate::entities::recipient_of_invoice_sql("$1", "$3");
    let answers = crate::batch::read_each(
        conn,
        &[&invoice, &company, &recipient],
        &[company_id.as_str(), user_id, id.as_str()],
    )
    .await?;
    let first = |i: usize| answers.get(i).and_then(Option::as_ref);
    Ok(ForIssue {
        invoice: first(0).map(InvoiceRow::from_row).transpose()?,
        company: first(1)
            .map(crate::companies::IssuingCompany::from_row)
            .transpose()?,
        recipient: first(2)
            .map(crate::entities::EntityRow::from_row)
            .transpose()?,
    })
}

/// The answers of [`for_issue`].
pub struct ForIssue {
    pub invoice: Option<InvoiceRow>,
    pub company: Option<crate::companies::IssuingCompany>,
    pub recipient: Option<crate::entities::EntityRow>,
}

/// Takes a draft to issue it: the draft, if it still is one, with its row locked until
/// the transaction ends (`None` if there is no such draft).
///
/// A plain read would let two transactions issue the same draft on PostgreSQL, both
/// seeing it as a draft: the second would overwrite the first's number and leave a
/// gap. Here the second waits for the first to commit, then finds no draft.
pub async fn claim_draft(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &crate::InvoiceId,
) -> sqlx::Result<Option<InvoiceRow>> {
    sqlx::query_as::<_, InvoiceRow>(sqlx::AssertSqlSafe(format!(
        "UPDATE invoices SET status = status WHERE {DRAFT_BY_ID} RETURNING {COLUMNS}"
    )))
    .bind(company_id)
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// Filters of the invoice list; `None` means any.
#[derive(Debug, Clone, Default)]
pub struct Filter<'a> {
    pub status: Option<InvoiceStatus>,
    pub recipient_id: Option<&'a str>,
    pub series: Option<Series>,
    pub corrected_invoice_id: Option<&'a str>,
    /// Issued at or after (microseconds).
    pub issued_from: Option<i64>,
    /// Issued before (microseconds).
    pub issued_to: Option<i64>,
    /// Drafts made by this recurring invoice.
    pub recurring_invoice_id: Option<&'a str>,
    /// `unpaid`, `partially_paid`, `paid` or `overdue` as of `now` (issued ordinary
    /// invoices only); any other value matches nothing.
    pub payment_status: Option<&'a str>,
    /// The instant `overdue` is decided at (microseconds).
    pub now: i64,
}

/// The SQL condition of a payment status (`$10` is the clock), as
/// `api::routes::invoices::payments::payment_status` decides it for one invoice.
fn payment_condition(status: &str) -> &'static str {
    match status {
        "paid" => "AND status = 'issued' AND series = 'invoice' AND paid_minor >= total",
        "overdue" => {
            "AND status = 'issued' AND series = 'invoice' AND paid_minor < total \
             AND due_date IS NOT NULL AND due_date < $10"
        }
        "partially_paid" => {
            "AND status = 'issued' AND series = 'invoice' AND paid_minor > 0 \
             AND paid_minor < total AND (due_date IS NULL OR due_date >= $10)"
        }
        "unpaid" => {
            "AND status = 'issued' AND series = 'invoice' AND paid_minor <= 0 \
             AND paid_minor < total AND (due_date IS NULL OR due_date >= $10)"
        }
        _ => "AND 1 = 0",
    }
}

/// Invoices of the company, newest first, after the keyset cursor.
pub async fn list(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    f: &Filter<'_>,
    before_id: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<InvoiceRow>> {
    let payment = f.payment_status.map(payment_condition).unwrap_or_default();
    sqlx::query_as::<_, InvoiceRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM invoices WHERE company_id = $1 \
         AND ($2 IS NULL OR status = $2) AND ($3 IS NULL OR recipient_id = $3) \
         AND ($4 IS NULL OR series = $4) AND ($5 IS NULL OR corrected_invoice_id = $5) \
         AND ($6 IS NULL OR issued_at >= $6) AND ($7 IS NULL OR issued_at < $7) \
         AND ($11 IS NULL OR recurring_invoice_id = $11) {payment} \
         AND ($8 IS NULL OR id < $8) AND CAST($10 AS BIGINT) IS NOT NULL ORDER BY id DESC LIMIT CAST($9 AS BIGINT)"
    )))
    .bind(company_id)
    .bind(f.status)
    .bind(f.recipient_id)
    .bind(f.series)
    .bind(f.corrected_invoice_id)
    .bind(f.issued_from)
    .bind(f.issued_to)
    .bind(before_id)
    .bind(limit)
    .bind(f.now)
    .bind(f.recurring_invoice_id)
    .fetch_all(conn)
    .await
}

/// Deletes a draft of the company; false when there is no such draft.
pub async fn delete_draft(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &crate::InvoiceId,
) -> sqlx::Result<bool> {
    sqlx::query(
        "UPDATE proformas SET invoice_id = NULL WHERE company_id = $1 AND invoice_id = $2 \
         AND EXISTS (SELECT 1 FROM invoices WHERE id = $2 AND status = 'draft')",
    )
    .bind(company_id)
    .bind(id)
    .execute(&mut *conn)
    .await?;
    let done = sqlx::query(sqlx::AssertSqlSafe(format!(
        "DELETE FROM invoices WHERE {DRAFT_BY_ID}"
    )))
    .bind(company_id)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// What a draft says beyond its lines (EN 16931 BT-10, BT-13, BT-72, BT-73/74, BT-22),
/// stored as one JSON value in `details_json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DraftDetails {
    /// BT-10: the buyer's reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buyer_reference: Option<String>,
    /// BT-13: the buyer's purchase order reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_reference: Option<String>,
    /// BT-72: the delivery date.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_date: Option<chrono::NaiveDate>,
    /// BT-73: start of the invoicing period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_start: Option<chrono::NaiveDate>,
    /// BT-74: end of the invoicing period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_end: Option<chrono::NaiveDate>,
    /// BT-22: a free note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

impl DraftDetails {
    /// The details stored as `text`; a value that does not decode is an error.
    pub fn decode(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The stored text.
    pub fn encode(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }
}

/// The condition of [`without_document`] (after id `$1`, if given): it repeats the partial
/// index `invoices_without_document`'s word for word, so both engines walk that index (empty
/// once every invoice has its document) rather than the whole table at every start.
pub const WITHOUT_DOCUMENT: &str =
    "status = 'issued' AND document_json IS NULL AND ($1 IS NULL OR id > $1)";

/// Issued invoices whose document is still to be built from their snapshot columns
/// (issued before documents existed), oldest first, after `after_id`.
pub async fn without_document(
    conn: &mut AnyConnection,
    after_id: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<InvoiceRow>> {
    sqlx::query_as::<_, InvoiceRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM invoices WHERE {WITHOUT_DOCUMENT} ORDER BY id LIMIT CAST($2 AS BIGINT)"
    )))
    .bind(after_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Stores the document built for an issued invoice from its snapshot columns, and empties
/// those columns: from now on the document is the invoice's one content. `false` when the
/// invoice already had one.
pub async fn set_document(
    conn: &mut AnyConnection,
    id: &str,
    document_json: &str,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE invoices SET document_json = $2, lines_json = '[]', \
         custom_placeholder_values_json = '[]', exchange_rates_json = '[]', \
         bank_accounts_json = '[]', issuer_snapshot_json = NULL, recipient_snapshot_json = NULL \
         WHERE id = $1 AND status = 'issued' AND document_json IS NULL",
    )
    .bind(id)
    .bind(document_json)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}
