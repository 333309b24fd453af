//! Several writes sent to the database as one statement: one round trip instead of one each.
//!
//! Each statement is written with its own parameters `$1..$k` and bound in order; the batch
//! renumbers them. SQLite runs the statements one after another from a single query string;
//! PostgreSQL, which prepares one statement at a time, runs them as data-modifying `WITH`
//! clauses of one statement (all of them execute, on the same snapshot). So a batch suits
//! writes that do not read each other's changes and never touch the same row twice
//! (PostgreSQL refuses an upsert that would), such as the rollups updated beside the row
//! that caused them, one row of each table.
//!
//! On SQLite every statement is a hand-off to the connection's thread and back, made while
//! the single writer is held; a batch makes it one.
//!
//! On PostgreSQL the statements of one `WITH` take their row locks in no set order: two
//! batches that lock the same rows can deadlock, so a lock that orders writers (a counter
//! row) is taken either by a statement of its own before the batch, or by the batch's first
//! statement with every later insert made to wait for it ([`Batch::after_first`]).

use futures::TryStreamExt;
use sqlx::{
    AnyConnection, Arguments, AssertSqlSafe, Either, Encode, Type,
    any::{Any, AnyArguments, AnyRow},
};

use sqlx_core::any::AnyColumn;

use crate::db::Writing;

/// Statements and their arguments, sent by [`Batch::execute`].
#[derive(Default)]
pub struct Batch {
    statements: Vec<String>,
    args: AnyArguments,
    /// Parameters the statements so far use; what the binds must add up to.
    params: usize,
    /// The first value that could not be encoded.
    failed: Option<String>,
    /// Whether every later `INSERT ... VALUES` runs after the first statement
    /// ([`Batch::after_first`]).
    after_first: bool,
    /// A transaction's deferred `BEGIN`, sent ahead of the statements ([`Batch::opening`]).
    begin: Option<&'static str>,
    /// What the batch ends its transaction with ([`Batch::closing`]): the condition that
    /// refuses it (its own parameters renumbered after the statements') and the `COMMIT`
    /// sent after it, if any.
    closing: Option<(String, Option<&'static str>)>,
    /// How many statements at the end answer the batch, each row led by the statement's
    /// index among them ([`Batch::answered_by`]); `None`: the last, as it returns.
    answers: Option<usize>,
}

/// What the first statement of a batch is called on PostgreSQL, where it is the clause
/// `w1` of one `WITH`: a later statement may read its `RETURNING` rows from it.
pub const FIRST: &str = "w1";

impl Batch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes the batch's last `n` statements its answer (PostgreSQL, in a batch that ends
    /// its own transaction, [`Batch::self_committing`]): the batch is refused unless each
    /// changed a row, and answers their rows, each led by the statement's index among them
    /// (from 0), through [`Batch::fetch_all_rows`].
    pub fn answered_by(&mut self, n: usize) -> &mut Self {
        self.answers = Some(n);
        self
    }

    /// Adds a statement whose parameters are `$1..$k`; bind its `k` values next, in order.
    pub fn push(&mut self, sql: &str) -> &mut Self {
        debug_assert_eq!(
            self.args.len(),
            self.params,
            "every statement's values are bound before the next statement"
        );
        let (text, count) = renumber(sql, self.params);
        self.statements.push(text);
        self.params += count;
        self
    }

    /// Binds the next value of the last statement.
    pub fn bind<'t, T>(&mut self, value: T) -> &mut Self
    where
        T: Encode<'t, Any> + Type<Any> + 't,
    {
        if let Err(e) = self.args.add(value) {
            self.failed.get_or_insert_with(|| e.to_string());
        }
        self
    }

    /// Makes every `INSERT INTO t (...) VALUES (...)` pushed after the first statement run
    /// after it on PostgreSQL, so the first statement's row lock is the batch's first.
    ///
    /// The clauses of one `WITH` run in no set order (a clause no other reads runs last,
    /// those in reverse), so two batches that lock the same rows, as two issues of one
    /// company lock its counter and its dashboard rows, could each hold a row the other
    /// waits for. Here each such insert reads its values from the first clause
    /// (`INSERT INTO t (...) SELECT ... FROM w1`), which makes PostgreSQL run the first
    /// statement before it; the first must then return exactly one row. SQLite runs the
    /// statements in order anyway and is not changed.
    pub fn after_first(&mut self) -> &mut Self {
        self.after_first = true;
        self
    }

    /// Makes the batch the next statements of `tx`, carrying its `BEGIN` if that is still
    /// due (SQLite, [`crate::Db::begin_write_deferred`]), and returns the connection to send
    /// it on: send it there next, or the transaction is left counting as begun. A batch that
    /// could not be sent (a value that did not encode, a value missing) is refused here,
    /// before the transaction counts as begun.
    pub async fn opening<'c>(
        &mut self,
        tx: &'c mut impl Writing,
    ) -> sqlx::Result<&'c mut AnyConnection> {
        self.check()?;
        let (begin, conn) = tx.opening().await?;
        self.begin = begin;
        Ok(conn)
    }

    /// Makes the batch all that is left of `tx`, and, when `tx` allows
    /// ([`Writing::closing`]), sends it so that it also begins and commits the transaction:
    /// then `Some` connection to send it on, after which tell `tx` how it ended
    /// ([`Writing::closed`]). The batch is refused (fails, and nothing of it is committed)
    /// when its last statement changed no row or `refuse_if` holds after it; `refuse_if`
    /// has its own parameters `$1..$k`, the texts `values`. `None`: the batch may not end
    /// `tx` (nothing was bound); send it through [`Batch::opening`]. A batch that could not
    /// be sent is refused here, before the transaction counts as begun.
    pub fn closing<'c>(
        &mut self,
        tx: &'c mut impl Writing,
        refuse_if: &str,
        values: &[&str],
    ) -> sqlx::Result<Option<&'c mut AnyConnection>> {
        let (condition, count) = self.refusal_of(refuse_if, values)?;
        let Some(closing) = tx.closing() else {
            return Ok(None);
        };
        self.close_with(condition, count, values, closing.begin, closing.commit);
        Ok(Some(closing.conn))
    }

    /// PostgreSQL: makes the batch one statement, sent outside a transaction, that ends
    /// itself (as [`Batch::closing`] does for a transaction that allows it), refused when
    /// one of its answering statements changed no row or `refuse_if` holds after them.
    /// For a batch that is several transactions' last writes ([`crate::invoices`]'s
    /// issues made together), whose connection is none of theirs.
    pub fn self_committing(&mut self, refuse_if: &str, values: &[&str]) -> sqlx::Result<()> {
        let (condition, count) = self.refusal_of(refuse_if, values)?;
        self.close_with(condition, count, values, None, None);
        Ok(())
    }

    /// `refuse_if` with its parameters renumbered after the statements', and how many it
    /// has, once it is checked that the batch can be sent and `values` fill them.
    fn refusal_of(&self, refuse_if: &str, values: &[&str]) -> sqlx::Result<(String, usize)> {
        self.check()?;
        let (condition, count) = renumber(refuse_if, self.params);
        if count != values.len() {
            return Err(sqlx::Error::Protocol(format!(
                "a refusal with {count} parameters given {} values",
                values.len()
            )));
        }
        Ok((condition, count))
    }

    fn close_with(
        &mut self,
        condition: String,
        count: usize,
        values: &[&str],
        begin: Option<&'static str>,
        commit: Option<&'static str>,
    ) {
        for value in values {
            self.bind(*value);
        }
        self.params += count;
        self.begin = begin;
        self.closing = Some((condition, commit));
    }

    /// Whether nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.statements.is_empty()
    }

    /// Runs every statement, in one round trip; the first error fails the whole batch.
    pub async fn execute(self, conn: &mut AnyConnection) -> sqlx::Result<()> {
        let Some((sql, args)) = self.into_query(conn)? else {
            return Ok(());
        };
        sqlx::query_with(AssertSqlSafe(sql), args)
            .execute(conn)
            .await?;
        Ok(())
    }

    /// Runs every statement, in one round trip, and returns the one column of the row the
    /// last statement returns (`... RETURNING x`), if it returned one. The statements before
    /// it run either way, so when `None` means "not done", the caller rolls back.
    pub async fn fetch_optional<T>(self, conn: &mut AnyConnection) -> sqlx::Result<Option<T>>
    where
        T: Send + Unpin,
        (T,): for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow>,
    {
        Ok(self.fetch_optional_row::<(T,)>(conn).await?.map(|(v,)| v))
    }

    /// Like [`Batch::fetch_optional`], for a row of several columns. Only the last statement
    /// may return rows.
    pub async fn fetch_optional_row<R>(self, conn: &mut AnyConnection) -> sqlx::Result<Option<R>>
    where
        R: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
    {
        let Some((sql, args)) = self.into_query(conn)? else {
            return Ok(None);
        };
        // `fetch_all`, not `fetch_optional`: on SQLite the `Any` driver's `fetch_optional`
        // looks only at the first statement's result and would miss the last one's row.
        let mut rows: Vec<R> = sqlx::query_as_with(AssertSqlSafe(sql), args)
            .fetch_all(conn)
            .await?;
        Ok(rows.pop())
    }

    /// Runs every statement, in one round trip, and returns every row the answering
    /// statements returned ([`Batch::answered_by`]), each led by its statement's index.
    pub async fn fetch_all_rows<R>(self, conn: &mut AnyConnection) -> sqlx::Result<Vec<R>>
    where
        R: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
    {
        let Some((sql, args)) = self.into_query(conn)? else {
            return Ok(Vec::new());
        };
        sqlx::query_as_with(AssertSqlSafe(sql), args)
            .fetch_all(conn)
            .await
    }

    /// Whether the batch can be sent: every value encoded, as many values as parameters.
    fn check(&self) -> sqlx::Result<()> {
        if let Some(e) = &self.failed {
            return Err(sqlx::Error::Encode(e.clone().into()));
        }
        if self.args.len() != self.params {
            return Err(sqlx::Error::Protocol(format!(
                "batch bound {} values for {} parameters",
                self.args.len(),
                self.params
            )));
        }
        Ok(())
    }

    /// The query string and its arguments; `None` for an empty batch.
    fn into_query(self, conn: &AnyConnection) -> sqlx::Result<Option<(String, AnyArguments)>> {
        if self.statements.is_empty() {
            return Ok(None);
        }
        self.check()?;
        let postgres = conn.backend_name().eq_ignore_ascii_case("postgresql");
        let mut statements = self.statements;
        if postgres && self.after_first {
            for s in statements.iter_mut().skip(1) {
                if let Some(ordered) = values_from(s, FIRST) {
                    *s = ordered;
                }
            }
        }
        let sql = match &self.closing {
            None => join(&statements, postgres),
            Some((refuse_if, commit)) if let Some(answers) = self.answers => {
                if !postgres || commit.is_some() {
                    return Err(sqlx::Error::Protocol(
                        "only PostgreSQL answers a batch with several statements".into(),
                    ));
                }
                closing_answered(statements, refuse_if, answers)
            }
            Some((refuse_if, commit)) => closing(statements, postgres, refuse_if, *commit),
        };
        Ok(Some(match self.begin {
            // Only SQLite defers its `BEGIN`, and runs several statements of one string.
            Some(begin) if !postgres => (format!("{begin};\n{sql}"), self.args),
            Some(_) => {
                return Err(sqlx::Error::Protocol(
                    "a BEGIN cannot travel with PostgreSQL statements".into(),
                ));
            }
            None => (sql, self.args),
        }))
    }
}

/// Several reads sent together, each answering at most one row (a row found by its key):
/// on SQLite one hand-off to the connection's thread (the statements of one query string,
/// whose rows come back one statement after another); on PostgreSQL, which prepares one
/// statement at a time, one statement that joins the reads side by side ([`side_by_side`]),
/// so one round trip and one execution instead of one each. Every statement may use any
/// of the shared text parameters `$1..$n` of `params`, bound once. Answers each read's row,
/// `None` where it found none; a read that finds several answers its first.
///
/// For reads that only need their parameters, not each other's answers: the draft, its
/// company and its recipient of an issue, say.
pub async fn read_each(
    conn: &mut AnyConnection,
    statements: &[&str],
    params: &[&str],
) -> sqlx::Result<Vec<Option<AnyRow>>> {
    if conn.backend_name().eq_ignore_ascii_case("postgresql") {
        let sql = side_by_side(statements);
        // Up to the highest parameter the statements name: PostgreSQL refuses values past
        // the statement's own parameters.
        let used = highest_param(&sql);
        let args = texts(params.iter().take(used))?;
        let row = sqlx::query_with(AssertSqlSafe(sql), args)
            .fetch_one(&mut *conn)
            .await?;
        return split(row, statements.len());
    }
    let sql = statements.join(";\n");
    let args = texts(params)?;
    let mut out: Vec<Option<AnyRow>> = vec![None];
    let mut ended = 0;
    // `fetch_many` is deprecated because only SQLite runs several statements of one query
    // string, which is exactly what is used here (as `Batch` does through `fetch_all`); it is
    // the one way to see where each statement's rows end.
    #[allow(deprecated)]
    let mut results = sqlx::query_with(AssertSqlSafe(sql), args).fetch_many(&mut *conn);
    while let Some(item) = results.try_next().await? {
        match item {
            Either::Right(row) => {
                if let Some(first @ None) = out.last_mut() {
                    *first = Some(row);
                }
            }
            // The end of one statement's rows.
            Either::Left(_) => {
                ended += 1;
                out.push(None);
            }
        }
    }
    out.truncate(statements.len());
    if ended < statements.len() {
        return Err(sqlx::Error::Protocol(format!(
            "{} reads answered {ended} results",
            statements.len(),
        )));
    }
    Ok(out)
}

/// The texts bound, in order, as a statement's parameters.
fn texts<'a>(params: impl IntoIterator<Item = &'a &'a str>) -> sqlx::Result<AnyArguments> {
    let mut args = AnyArguments::default();
    for p in params {
        args.add(*p).map_err(sqlx::Error::Encode)?;
    }
    Ok(args)
}

/// The column that starts read `i`'s columns in [`side_by_side`]: true when it found a row.
fn marker(i: usize) -> String {
    format!("read_{i}_found")
}

/// One PostgreSQL statement answering one row: for each read, a marker column
/// ([`marker`]), then the columns of the read's first row, or NULLs where it found none.
/// Written into one string: built for every issue, its pieces `format!`ed and joined
/// cost more than the rest of the read's own work in the server.
fn side_by_side(statements: &[&str]) -> String {
    let text: usize = statements.iter().map(|s| s.len()).sum();
    let mut out = String::with_capacity(text + 128 * statements.len() + 32);
    out.push_str("SELECT ");
    for i in 0..statements.len() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push('r');
        push_number(&mut out, i);
        out.push_str(".*");
    }
    out.push_str(" FROM (SELECT 1) AS one");
    for (i, sql) in statements.iter().enumerate() {
        out.push_str(" LEFT JOIN LATERAL (SELECT TRUE AS read_");
        push_number(&mut out, i);
        out.push_str("_found, s.* FROM (");
        out.push_str(sql);
        out.push_str(") AS s LIMIT 1) AS r");
        push_number(&mut out, i);
        out.push_str(" ON TRUE");
    }
    out
}

/// The row of [`side_by_side`] cut into one row for each of its `reads`: the columns from
/// one read's marker to the next, without the marker, named as the read named them.
fn split(row: AnyRow, reads: usize) -> sqlx::Result<Vec<Option<AnyRow>>> {
    let AnyRow {
        columns, values, ..
    } = row;
    let mut starts = Vec::with_capacity(reads + 1);
    for i in 0..reads {
        let name = marker(i);
        let at = columns
            .iter()
            .position(|c| *c.name == *name)
            .ok_or_else(|| sqlx::Error::ColumnNotFound(name))?;
        starts.push(at);
    }
    starts.push(columns.len());
    if starts.windows(2).any(|w| w[0] >= w[1]) {
        return Err(sqlx::Error::Protocol(
            "the reads' columns are not in order".into(),
        ));
    }
    let mut out = Vec::with_capacity(reads);
    let mut columns = columns.into_iter();
    let mut values = values.into_iter();
    for w in starts.windows(2) {
        let width = w[1] - w[0];
        let found = values.next().is_some_and(|v| !sqlx::Value::is_null(&v));
        columns.next();
        let part_columns: Vec<AnyColumn> = columns
            .by_ref()
            .take(width - 1)
            .enumerate()
            .map(|(ordinal, c)| AnyColumn { ordinal, ..c })
            .collect();
        let part_values: Vec<_> = values.by_ref().take(width - 1).collect();
        if !found {
            out.push(None);
            continue;
        }
        let names: sqlx_core::HashMap<_, _> = part_columns
            .iter()
            .map(|c| (c.name.clone(), c.ordinal))
            .collect();
        out.push(Some(AnyRow {
            column_names: std::sync::Arc::new(names),
            columns: part_columns,
            values: part_values,
        }));
    }
    Ok(out)
}

/// The highest `$n` a statement names.
fn highest_param(sql: &str) -> usize {
    renumber(sql, 0).1
}

/// One query string: `a; b; c` (SQLite) or `WITH w1 AS (a), w2 AS (b) c` (PostgreSQL).
pub(crate) fn join(statements: &[String], postgres: bool) -> String {
    match statements.split_last() {
        Some((last, rest)) if postgres && !rest.is_empty() => {
            let mut out = with_clauses(rest, last.len());
            out.push_str(last);
            out
        }
        _ => statements.join(";\n"),
    }
}

/// `WITH w1 AS (a), w2 AS (b) ` for the statements `clauses`, in a string with room for
/// `more` bytes after them.
fn with_clauses(clauses: &[String], more: usize) -> String {
    let text: usize = clauses.iter().map(String::len).sum();
    let mut out = String::with_capacity(text + 16 * clauses.len() + more + 8);
    out.push_str("WITH ");
    for (i, s) in clauses.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push('w');
        push_number(&mut out, i + 1);
        out.push_str(" AS (");
        out.push_str(s);
        out.push(')');
    }
    out.push(' ');
    out
}

/// The statement that refuses a write sent to end its own transaction
/// ([`crate::Writing::closing`]), placed right after the write's last statement: it fails,
/// so that the `COMMIT` after it never runs, when that statement changed no row or
/// `refuse_if` holds. On SQLite, whose statements run in order, it follows that statement
/// and asks how many rows it changed; on PostgreSQL it is a clause of the same `WITH` and
/// reads the rows returned by the clause `last`, which must return one per changed row.
///
/// It inserts into a table whose check refuses every row (migration 0026), so a refused
/// write fails with [`is_refusal`].
pub fn refusal(last: Option<&str>, refuse_if: &str) -> String {
    let unchanged = match last {
        None => "changes() = 0".to_owned(),
        Some(clause) => format!("NOT EXISTS (SELECT 1 FROM {clause})"),
    };
    refused_when(&unchanged, refuse_if)
}

fn refused_when(unchanged: &str, refuse_if: &str) -> String {
    format!(
        "INSERT INTO write_refusals (reason) SELECT 'refused' WHERE {unchanged} OR ({refuse_if})"
    )
}

/// Whether `e` is a write refused by its [`refusal`].
pub fn is_refusal(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.message().contains("write_refused"))
}

/// A batch that ends its transaction: `a; b; refusal; COMMIT` (SQLite), or
/// `WITH w1 AS (a), w2 AS (b), w3 AS (refusal) SELECT * FROM w2` (PostgreSQL, sent
/// outside a transaction), with `refuse_if` checked after the last statement.
pub(crate) fn closing(
    mut statements: Vec<String>,
    postgres: bool,
    refuse_if: &str,
    commit: Option<&str>,
) -> String {
    if postgres {
        let last = format!("w{}", statements.len());
        statements.push(refusal(Some(&last), refuse_if));
        let mut out = with_clauses(&statements, 16);
        out.push_str("SELECT * FROM ");
        out.push_str(&last);
        return out;
    }
    statements.push(refusal(None, refuse_if));
    statements.extend(commit.map(str::to_owned));
    statements.join(";\n")
}

/// PostgreSQL's [`closing`] for a batch whose last `answers` statements answer it
/// ([`Batch::answered_by`]): `WITH w1 AS (a), w2 AS (b), w3 AS (c), w4 AS (refusal)
/// SELECT 0, * FROM w2 UNION ALL SELECT 1, * FROM w3`, refused unless each of them changed
/// a row.
fn closing_answered(mut statements: Vec<String>, refuse_if: &str, answers: usize) -> String {
    let first = statements.len().saturating_sub(answers) + 1;
    let clauses: Vec<String> = (first..=statements.len())
        .map(|i| format!("w{i}"))
        .collect();
    let unchanged: Vec<String> = clauses
        .iter()
        .map(|c| format!("NOT EXISTS (SELECT 1 FROM {c})"))
        .collect();
    statements.push(refused_when(&unchanged.join(" OR "), refuse_if));
    let mut out = with_clauses(&statements, 40 * answers);
    for (i, c) in clauses.iter().enumerate() {
        if i > 0 {
            out.push_str(" UNION ALL ");
        }
        out.push_str(&format!(
            "SELECT CAST({i} AS BIGINT) AS answer, {c}.* FROM {c}"
        ));
    }
    out
}

/// `INSERT INTO t (...) VALUES (v...) rest` as `INSERT INTO t (...) SELECT v... FROM
/// from rest`, for one row of values; `None` for any other statement.
fn values_from(sql: &str, from: &str) -> Option<String> {
    if !sql.trim_start().starts_with("INSERT INTO") {
        return None;
    }
    let start = sql.find(" VALUES (")?;
    let open = start + " VALUES (".len();
    // The parenthesis that closes the row, outside quoted text.
    let mut depth = 1usize;
    let mut quoted = false;
    let mut close = None;
    for (i, c) in sql[open..].char_indices() {
        match c {
            '\'' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => {
                depth -= 1;
                if depth == 0 {
                    close = Some(open + i);
                    break;
                }
            }
            _ => {}
        }
    }
    let close = close?;
    // A second row of values: not one row, left as it is.
    if sql[close + 1..].trim_start().starts_with(',') {
        return None;
    }
    Some(format!(
        "{} SELECT {} FROM {from}{}",
        &sql[..start],
        &sql[open..close],
        &sql[close + 1..]
    ))
}

/// Shifts every `$n` of `sql` by `offset`; returns the text and the highest `n` seen.
///
/// Runs for every statement of every batch (an issue's is about 3 KB), so it copies the
/// text between two `$` in one go.
fn renumber(sql: &str, offset: usize) -> (String, usize) {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut highest = 0;
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let digits = after
            .bytes()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(after.len());
        match after[..digits].parse::<usize>() {
            Ok(n) => {
                highest = highest.max(n);
                out.push('$');
                push_number(&mut out, n + offset);
            }
            Err(_) => out.push('$'),
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    (out, highest)
}

/// Appends `n` in decimal; without `write!`, whose formatting machinery cost more than the
/// rest of [`renumber`] (some sixty numbers a request).
fn push_number(out: &mut String, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserts_after_the_first_read_their_values_from_it() {
        assert_eq!(
            values_from(
                "INSERT INTO t (a, b) VALUES ($1, COALESCE($2, 'x)')) ON CONFLICT (a) DO NOTHING",
                "w1"
            )
            .as_deref(),
            Some(
                "INSERT INTO t (a, b) SELECT $1, COALESCE($2, 'x)') FROM w1 ON CONFLICT (a) DO NOTHING"
            )
        );
        assert_eq!(values_from("UPDATE t SET a = 1", "w1"), None);
        assert_eq!(
            values_from("INSERT INTO t (a) VALUES ($1), ($2)", "w1"),
            None
        );
    }

    #[test]
    fn renumbers_parameters_after_the_earlier_statements() {
        assert_eq!(
            renumber("UPDATE t SET a = $2 WHERE id = $1 AND b = $10", 3),
            (
                "UPDATE t SET a = $5 WHERE id = $4 AND b = $13".to_owned(),
                10
            )
        );
        assert_eq!(renumber("SELECT 1", 4), ("SELECT 1".to_owned(), 0));
        assert_eq!(renumber("$0, $9", 0), ("$0, $9".to_owned(), 9));
        assert_eq!(renumber("$1", 99), ("$100".to_owned(), 1));
        for n in [0, 7, 10, 99, 100, 12_345, usize::MAX] {
            let mut out = String::new();
            push_number(&mut out, n);
            assert_eq!(out, n.to_string());
        }
        // A `$` without digits is kept as it is, and text after the last parameter too.
        assert_eq!(
            renumber("SELECT '$' || $1 || 'é$x', $2 AS b", 2),
            ("SELECT '$' || $3 || 'é$x', $4 AS b".to_owned(), 2)
        );
    }

    #[test]
    fn joins_per_engine() {
        let s = vec![
            "UPDATE a SET x = $1".to_owned(),
            "INSERT INTO b VALUES ($2)".to_owned(),
        ];
        assert_eq!(
            join(&s, false),
            "UPDATE a SET x = $1;\nINSERT INTO b VALUES ($2)"
        );
        assert_eq!(
            join(&s, true),
            "WITH w1 AS (UPDATE a SET x = $1) INSERT INTO b VALUES ($2)"
        );
        assert_eq!(join(&s[..1], true), "UPDATE a SET x = $1");
        let many: Vec<String> = (1..=11).map(|i| format!("UPDATE t{i} SET x = 1")).collect();
        let expected: Vec<String> = many[..10]
            .iter()
            .enumerate()
            .map(|(i, s)| format!("w{} AS ({s})", i + 1))
            .collect();
        assert_eq!(
            join(&many, true),
            format!("WITH {} UPDATE t11 SET x = 1", expected.join(", "))
        );
    }

    #[test]
    fn closes_per_engine() {
        let s = vec![
            "UPDATE a SET x = $1".to_owned(),
            "UPDATE b SET y = $2 RETURNING id".to_owned(),
        ];
        assert_eq!(
            closing(s.clone(), true, "$3 = 'x'", None),
            "WITH w1 AS (UPDATE a SET x = $1), w2 AS (UPDATE b SET y = $2 RETURNING id), \
             w3 AS (INSERT INTO write_refusals (reason) SELECT 'refused' WHERE \
             NOT EXISTS (SELECT 1 FROM w2) OR ($3 = 'x')) SELECT * FROM w2"
        );
        assert_eq!(
            closing(s, false, "$3 = 'x'", Some("COMMIT")),
            "UPDATE a SET x = $1;\nUPDATE b SET y = $2 RETURNING id;\n\
             INSERT INTO write_refusals (reason) SELECT 'refused' WHERE \
             changes() = 0 OR ($3 = 'x');\nCOMMIT"
        );
    }

    #[test]
    fn reads_side_by_side() {
        assert_eq!(
            side_by_side(&["SELECT a FROM t WHERE id = $1", "SELECT b FROM u"]),
            "SELECT r0.*, r1.* FROM (SELECT 1) AS one \
             LEFT JOIN LATERAL (SELECT TRUE AS read_0_found, s.* FROM \
             (SELECT a FROM t WHERE id = $1) AS s LIMIT 1) AS r0 ON TRUE \
             LEFT JOIN LATERAL (SELECT TRUE AS read_1_found, s.* FROM \
             (SELECT b FROM u) AS s LIMIT 1) AS r1 ON TRUE"
        );
        assert!(side_by_side(&["SELECT 1"; 12]).contains(" AS r11 ON TRUE"));
        assert_eq!(marker(11), "read_11_found");
    }
}
