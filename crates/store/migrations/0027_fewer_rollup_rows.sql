-- Issuing writes two dashboard rollup rows fewer (issue #34).
--
-- An issue wrote five rollup rows besides its invoice and its number: its day's revenue,
-- its customer's revenue, its customer's first invoice, the company's counts and (unpaid
-- with a due date) its due day. Each is a statement of the issue's batch, a row and an
-- index entry to write and, on PostgreSQL, a table and an index to lock and a plan node to
-- start. The counts by kind and payment state now live in the rows of
-- `dashboard_daily_revenue` (read summed over a company's days, as the all-time revenue
-- already is), and each customer's first ordinary invoice in its rows of
-- `dashboard_customer_revenue` (the earliest over the customer's currencies): two rows
-- the issue writes anyway. Payments move the counts on the row of their invoice's day of
-- issue.
--
-- The rows are made again from the invoices, as `store::dashboard::rebuild` makes them,
-- with the same statements for every company at once.
ALTER TABLE dashboard_daily_revenue ADD COLUMN issued BIGINT NOT NULL DEFAULT 0;
ALTER TABLE dashboard_daily_revenue ADD COLUMN corrective BIGINT NOT NULL DEFAULT 0;
ALTER TABLE dashboard_daily_revenue ADD COLUMN paid BIGINT NOT NULL DEFAULT 0;
ALTER TABLE dashboard_daily_revenue ADD COLUMN partially_paid BIGINT NOT NULL DEFAULT 0;
ALTER TABLE dashboard_daily_revenue ADD COLUMN corrected BIGINT NOT NULL DEFAULT 0;
-- NULL on a row of corrective invoices only.
ALTER TABLE dashboard_customer_revenue ADD COLUMN first_issued BIGINT;

DELETE FROM dashboard_daily_revenue;
INSERT INTO dashboard_daily_revenue (company_id, currency_code, day, net_total,
    issued, corrective, paid, partially_paid, corrected)
SELECT company_id, currency_code, issued_at / 86400000000, SUM(net_total),
    SUM(CASE WHEN series = 'invoice' THEN 1 ELSE 0 END),
    SUM(CASE WHEN series = 'corrective' THEN 1 ELSE 0 END),
    SUM(CASE WHEN series = 'invoice' AND paid_minor >= total THEN 1 ELSE 0 END),
    SUM(CASE WHEN series = 'invoice' AND paid_minor > 0 AND paid_minor < total THEN 1 ELSE 0 END),
    SUM(CASE WHEN series = 'invoice' AND EXISTS (SELECT 1 FROM invoices c
        WHERE c.corrected_invoice_id = i.id AND c.status = 'issued') THEN 1 ELSE 0 END)
FROM invoices i WHERE status = 'issued'
GROUP BY company_id, currency_code, issued_at / 86400000000;

DELETE FROM dashboard_customer_revenue;
INSERT INTO dashboard_customer_revenue (company_id, currency_code, recipient_id, net_total,
    invoice_count, first_issued)
SELECT company_id, currency_code, recipient_id, SUM(net_total), COUNT(*),
    MIN(CASE WHEN series = 'invoice' THEN issued_at END)
FROM invoices WHERE status = 'issued'
GROUP BY company_id, currency_code, recipient_id;

DROP TABLE dashboard_counts;
DROP TABLE dashboard_customer_firsts;
