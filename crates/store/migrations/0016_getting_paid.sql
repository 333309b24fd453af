-- Getting paid (issue 32): payment states, recurring invoices, sending and reminders.

-- Partly paid invoices per due date: with `invoices_unpaid_due` (0010) the dashboard counts
-- each payment state at read time, overdue ones from the clock, never from a stale roll-up.
CREATE INDEX invoices_partly_paid_due ON invoices (company_id, due_date)
    WHERE status = 'issued' AND series = 'invoice' AND paid_minor > 0 AND paid_minor < total AND due_date IS NOT NULL;

-- The schedule a draft was made by (`origin = 'recurring'`), for `?recurring_invoice_id=`.
ALTER TABLE invoices ADD COLUMN recurring_invoice_id TEXT;
CREATE INDEX invoices_recurring ON invoices (company_id, recurring_invoice_id, id);

-- Recurring invoices: what each period's draft says (`invoice_json`, the fields of
-- CreateInvoiceRequest as sent) and when the next period starts. `next_run_date` is NULL
-- once the schedule has ended. `created_by` is the user whose acceptance of the legal
-- documents an automatic issue relies on, as a person's own issue would.
CREATE TABLE recurring_invoices (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id),
    created_by TEXT NOT NULL,
    invoice_json TEXT NOT NULL,
    frequency TEXT NOT NULL,
    interval_count BIGINT NOT NULL,
    start_date TEXT NOT NULL,
    end_date TEXT,
    auto_issue BIGINT NOT NULL DEFAULT 0,
    auto_send BIGINT NOT NULL DEFAULT 0,
    paused BIGINT NOT NULL DEFAULT 0,
    next_run_date TEXT,
    last_error TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT
);
CREATE INDEX recurring_invoices_company ON recurring_invoices (company_id, id);
CREATE INDEX recurring_invoices_due ON recurring_invoices (next_run_date);

-- One row per (schedule, period) that got its draft: the primary key is what makes a period
-- run exactly once, whatever the number of workers, servers or restarts. The row stays when
-- the draft is deleted, so a deleted draft is not made again.
CREATE TABLE recurring_runs (
    recurring_invoice_id TEXT NOT NULL,
    period_start TEXT NOT NULL,
    company_id TEXT NOT NULL,
    invoice_id TEXT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (recurring_invoice_id, period_start)
);

-- Mail about an invoice to its customer: sends (`step` NULL) and reminders (`step`, the
-- days after the due date of that `reminderDays` step). The unique index makes a reminder
-- step happen once per invoice (NULL steps never collide); the job that sends it is
-- enqueued in the same transaction (a transactional outbox).
CREATE TABLE deliveries (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id),
    invoice_id TEXT NOT NULL REFERENCES invoices (id),
    kind TEXT NOT NULL,
    step BIGINT,
    status TEXT NOT NULL,
    to_json TEXT NOT NULL,
    cc_json TEXT NOT NULL,
    message TEXT,
    attachments_json TEXT NOT NULL,
    language TEXT NOT NULL,
    error TEXT,
    created_at BIGINT NOT NULL,
    sent_at BIGINT
);
CREATE INDEX deliveries_invoice ON deliveries (company_id, invoice_id, id);
-- The cap on a company's deliveries waiting to be mailed.
CREATE INDEX deliveries_queued ON deliveries (company_id, status);
CREATE UNIQUE INDEX deliveries_reminder_step ON deliveries (invoice_id, step);
