-- Indexes that hold only the rows their statements look for, so a draft's insert and its
-- issue write fewer index entries (issue #34).
--
-- Every draft had an entry in each of these at NULL or at `status = 'draft'`, which no
-- statement reads: its number (NULL until issued), the invoice it corrects (NULL but for
-- corrective drafts), the schedule that made it (NULL but for recurring drafts) and its
-- issue time (NULL until issued). Creating a draft wrote those entries and issuing it
-- moved two of them; on SQLite each is a page of the log at every commit (measured, one
-- company's create+issue: 28.7 pages a pair, of which these made about 5), and on
-- PostgreSQL issuing's update, which changes indexed columns, inserts the row anew into
-- every index that holds it.
--
-- The statements that read them say what the partial index holds (`corrected_invoice_id
-- = $1`, `recurring_invoice_id = $11`, `status = 'issued'`), so both engines still walk
-- them (`store::sql` checks the plans). The numbers stay unique: a partial unique index
-- holds every numbered invoice, and NULLs were never compared.
DROP INDEX invoices_number;
CREATE UNIQUE INDEX invoices_number ON invoices (company_id, series, invoice_year, invoice_number)
    WHERE invoice_number IS NOT NULL;

DROP INDEX invoices_corrected;
CREATE INDEX invoices_corrected ON invoices (corrected_invoice_id)
    WHERE corrected_invoice_id IS NOT NULL;

DROP INDEX invoices_recurring;
CREATE INDEX invoices_recurring ON invoices (company_id, recurring_invoice_id, id)
    WHERE recurring_invoice_id IS NOT NULL;

-- Issued invoices by issue time (the dashboard's and the reports' periods).
DROP INDEX invoices_company_issued;
CREATE INDEX invoices_company_issued ON invoices (company_id, issued_at)
    WHERE status = 'issued';
