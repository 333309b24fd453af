-- Dashboard rollups (issue 6: the dashboard within 50 ms at a million invoices).
--
-- Without them every dashboard request reads every issued invoice of the company
-- five times over (all-time revenue, top customers, first invoice per customer,
-- counts by payment state, the corrected check), which at 1,000,000 invoices is
-- seconds on either engine; counting the overdue ones over an index alone still
-- took 20-40 ms when a tenth of them were. These tables hold the same figures already summed; they
-- change in the transaction that issues an invoice (ordinary or corrective) or
-- records or deletes a payment (crates/store/src/dashboard.rs), and
-- `store::dashboard::rebuild` recomputes them for one company with the statements
-- below. Amounts stay per currency, never summed across currencies.

-- Net revenue (tax excluded) of issued invoices, corrective ones included, per
-- currency and UTC day (`issued_at / 86400000000`): calendar months are whole ranges
-- of days, so the all-time, this-month and twelve-month figures are sums of a few
-- hundred rows.
CREATE TABLE dashboard_daily_revenue (
    company_id TEXT NOT NULL REFERENCES companies (id),
    currency_code TEXT NOT NULL,
    day BIGINT NOT NULL,
    net_total BIGINT NOT NULL,
    PRIMARY KEY (company_id, currency_code, day)
);

-- Net revenue and number of issued invoices (both series) per customer and currency,
-- for the top customers.
CREATE TABLE dashboard_customer_revenue (
    company_id TEXT NOT NULL REFERENCES companies (id),
    currency_code TEXT NOT NULL,
    recipient_id TEXT NOT NULL,
    net_total BIGINT NOT NULL,
    invoice_count BIGINT NOT NULL,
    PRIMARY KEY (company_id, currency_code, recipient_id)
);

-- When each customer got their first issued ordinary invoice, for the customer counts.
CREATE TABLE dashboard_customer_firsts (
    company_id TEXT NOT NULL REFERENCES companies (id),
    recipient_id TEXT NOT NULL,
    first_issued BIGINT NOT NULL,
    PRIMARY KEY (company_id, recipient_id)
);

-- Issued invoices by kind and payment state. `issued`, `paid`, `partially_paid` and
-- `corrected` count ordinary invoices only, `corrective` the corrective ones.
CREATE TABLE dashboard_counts (
    company_id TEXT PRIMARY KEY REFERENCES companies (id),
    issued BIGINT NOT NULL DEFAULT 0,
    corrective BIGINT NOT NULL DEFAULT 0,
    paid BIGINT NOT NULL DEFAULT 0,
    partially_paid BIGINT NOT NULL DEFAULT 0,
    corrected BIGINT NOT NULL DEFAULT 0
);

-- Ordinary issued invoices not fully paid that have a due date, per UTC day of the
-- due date. Overdue depends on the clock: it is the sum over the days before today
-- plus a live count of today's over the partial index below.
CREATE TABLE dashboard_unpaid_due (
    company_id TEXT NOT NULL REFERENCES companies (id),
    day BIGINT NOT NULL,
    invoices BIGINT NOT NULL,
    PRIMARY KEY (company_id, day)
);
CREATE INDEX invoices_unpaid_due ON invoices (company_id, due_date)
    WHERE status = 'issued' AND series = 'invoice' AND paid_minor < total AND due_date IS NOT NULL;

-- The figures of the invoices issued before this migration.
INSERT INTO dashboard_daily_revenue (company_id, currency_code, day, net_total)
SELECT company_id, currency_code, issued_at / 86400000000, SUM(net_total)
FROM invoices WHERE status = 'issued'
GROUP BY company_id, currency_code, issued_at / 86400000000;

INSERT INTO dashboard_customer_revenue (company_id, currency_code, recipient_id, net_total, invoice_count)
SELECT company_id, currency_code, recipient_id, SUM(net_total), COUNT(*)
FROM invoices WHERE status = 'issued'
GROUP BY company_id, currency_code, recipient_id;

INSERT INTO dashboard_customer_firsts (company_id, recipient_id, first_issued)
SELECT company_id, recipient_id, MIN(issued_at)
FROM invoices WHERE status = 'issued' AND series = 'invoice'
GROUP BY company_id, recipient_id;

INSERT INTO dashboard_unpaid_due (company_id, day, invoices)
SELECT company_id, due_date / 86400000000, COUNT(*)
FROM invoices WHERE status = 'issued' AND series = 'invoice' AND paid_minor < total AND due_date IS NOT NULL
GROUP BY company_id, due_date / 86400000000;

INSERT INTO dashboard_counts (company_id, issued, corrective, paid, partially_paid, corrected)
SELECT company_id,
    SUM(CASE WHEN series = 'invoice' THEN 1 ELSE 0 END),
    SUM(CASE WHEN series = 'corrective' THEN 1 ELSE 0 END),
    SUM(CASE WHEN series = 'invoice' AND total > 0 AND paid_minor >= total THEN 1 ELSE 0 END),
    SUM(CASE WHEN series = 'invoice' AND paid_minor > 0 AND paid_minor < total THEN 1 ELSE 0 END),
    SUM(CASE WHEN series = 'invoice' AND EXISTS (SELECT 1 FROM invoices c
        WHERE c.corrected_invoice_id = i.id AND c.status = 'issued') THEN 1 ELSE 0 END)
FROM invoices i WHERE status = 'issued'
GROUP BY company_id;
