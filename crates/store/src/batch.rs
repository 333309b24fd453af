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
//! row) is taken by a statement of its own before the batch.

use futures::TryStreamExt;
use sqlx::{
    AnyConnection, Arguments, AssertSqlSafe, Either, Encode, Type,
    any::{Any, AnyArguments, AnyRow},
};

/// Statements and their arguments, sent by [`Batch::execute`].
#[derive(Default)]
pub struct Batch {
    statements: Vec<String>,
    args: AnyArguments,
    /// Parameters the statements so far use; what the binds must add up to.
    params: usize,
    /// The first value that could not be encoded.
    failed: Option<String>,
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
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

    /// The query string and its arguments; `None` for an empty batch.
    fn into_query(self, conn: &AnyConnection) -> sqlx::Result<Option<(String, AnyArguments)>> {
        if self.statements.is_empty() {
            return Ok(None);
        }
        if let Some(e) = self.failed {
            return Err(sqlx::Error::Encode(e.into()));
        }
        if self.args.len() != self.params {
            return Err(sqlx::Error::Protocol(format!(
                "batch bound {} values for {} parameters",
                self.args.len(),
                self.params
            )));
        }
        let postgres = conn.backend_name().eq_ignore_ascii_case("postgresql");
        Ok(Some((join(&self.statements, postgres), self.args)))
    }
}

/// Several reads sent together, each answering its own rows: on SQLite one hand-off to the
/// connection's thread (the statements of one query string, whose rows come back one
/// statement after another); on PostgreSQL, which prepares one statement at a time, one
/// round trip each, as separate reads would be. Every statement may use any of the shared
/// text parameters `$1..$n` of `params`, bound once.
///
/// For reads that only need their parameters, not each other's answers: the draft, its
/// company and its recipient of an issue, say.
pub async fn read_each(
    conn: &mut AnyConnection,
    statements: &[&str],
    params: &[&str],
) -> sqlx::Result<Vec<Vec<AnyRow>>> {
    let bound = || {
        let mut args = AnyArguments::default();
        for p in params {
            args.add(*p).map_err(sqlx::Error::Encode)?;
        }
        Ok::<_, sqlx::Error>(args)
    };
    if conn.backend_name().eq_ignore_ascii_case("postgresql") {
        let mut out = Vec::with_capacity(statements.len());
        for sql in statements {
            // Up to the highest parameter the statement names: PostgreSQL refuses values
            // past the statement's own parameters.
            let used = highest_param(sql);
            let mut args = AnyArguments::default();
            for p in params.iter().take(used) {
                args.add(*p).map_err(sqlx::Error::Encode)?;
            }
            out.push(
                sqlx::query_with(AssertSqlSafe(sql.to_string()), args)
                    .fetch_all(&mut *conn)
                    .await?,
            );
        }
        return Ok(out);
    }
    let sql = statements.join(";\n");
    let mut out: Vec<Vec<AnyRow>> = vec![Vec::new()];
    // `fetch_many` is deprecated because only SQLite runs several statements of one query
    // string, which is exactly what is used here (as `Batch` does through `fetch_all`); it is
    // the one way to see where each statement's rows end.
    #[allow(deprecated)]
    let mut results = sqlx::query_with(AssertSqlSafe(sql), bound()?).fetch_many(&mut *conn);
    while let Some(item) = results.try_next().await? {
        match item {
            Either::Right(row) => {
                if let Some(rows) = out.last_mut() {
                    rows.push(row);
                }
            }
            // The end of one statement's rows.
            Either::Left(_) => out.push(Vec::new()),
        }
    }
    out.truncate(statements.len());
    if out.len() != statements.len() {
        return Err(sqlx::Error::Protocol(format!(
            "{} reads answered {} results",
            statements.len(),
            out.len()
        )));
    }
    Ok(out)
}

/// The highest `$n` a statement names.
fn highest_param(sql: &str) -> usize {
    renumber(sql, 0).1
}

/// One query string: `a; b; c` (SQLite) or `WITH w1 AS (a), w2 AS (b) c` (PostgreSQL).
fn join(statements: &[String], postgres: bool) -> String {
    match statements.split_last() {
        Some((last, rest)) if postgres && !rest.is_empty() => {
            let clauses: Vec<String> = rest
                .iter()
                .enumerate()
                .map(|(i, s)| format!("w{} AS ({s})", i + 1))
                .collect();
            format!("WITH {} {last}", clauses.join(", "))
        }
        _ => statements.join(";\n"),
    }
}

/// Shifts every `$n` of `sql` by `offset`; returns the text and the highest `n` seen.
fn renumber(sql: &str, offset: usize) -> (String, usize) {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut highest = 0;
    let mut chars = sql.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let start = i + 1;
        let mut end = start;
        while let Some(&(j, d)) = chars.peek() {
            if !d.is_ascii_digit() {
                break;
            }
            end = j + 1;
            chars.next();
        }
        match sql[start..end].parse::<usize>() {
            Ok(n) => {
                highest = highest.max(n);
                out.push('$');
                out.push_str(&(n + offset).to_string());
            }
            Err(_) => out.push('$'),
        }
    }
    (out, highest)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
