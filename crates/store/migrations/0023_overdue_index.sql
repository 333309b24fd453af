-- Issued invoices with nothing to pay (total zero or less) and a due date. The payment
-- status counts them as owed until paid (`NOT (total > 0 AND paid_minor >= total)`), so
-- the worker's overdue pass (store::invoice_events::NEWLY_OVERDUE) finds them here and
-- the others over `invoices_unpaid_due`. Without it the pass read the whole invoices
-- table every `INVOICING_SCHEDULE_SECONDS` (24 s of every 30 on SQLite at 200,000
-- invoices, while the service's own reads waited for the disk). The index holds only
-- such rows: issuing an ordinary invoice does not write to it.
CREATE INDEX invoices_nothing_owed_due ON invoices (company_id, due_date)
    WHERE status = 'issued' AND series = 'invoice' AND total <= 0 AND due_date IS NOT NULL;
