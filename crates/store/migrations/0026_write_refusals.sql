-- Where a write that ends its own transaction is refused (issue #34).
--
-- A new draft or an issue that is all its request writes is sent with its transaction's
-- BEGIN and COMMIT in one query string on SQLite, and as one statement outside a
-- transaction on PostgreSQL (store::Writing::closing): one hand-off to SQLite's writer and
-- two round trips to PostgreSQL fewer. It may only be committed when what it assumed
-- holds (its last statement changed its row, no webhook endpoint waits for the event), so
-- its last statement inserts a row here when that does not hold; every such insert fails
-- this table's check, which fails the whole write before its COMMIT (store::batch::refusal).
-- The write is then undone and made again the ordinary way. The table never holds a row.
CREATE TABLE write_refusals (
    reason TEXT NOT NULL,
    CONSTRAINT write_refused CHECK (reason = '')
);
