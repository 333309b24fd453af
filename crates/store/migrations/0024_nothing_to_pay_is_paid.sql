-- An issued invoice with nothing to pay (a total of zero or less) is `paid`: the payment
-- status, the list filter, the dashboard's counts, reminders and the overdue webhook now
-- share one condition, `paid_minor >= total`. Before, the payment status called such an
-- invoice `unpaid`, then `overdue` for ever (no payment can be recorded against it), while
-- the dashboard counted it neither paid nor overdue.
--
-- The dashboard's paid counts gain those invoices, and the index that let the overdue
-- pass find them (0023) is no longer read.
UPDATE dashboard_counts SET paid = paid + (
    SELECT COUNT(*) FROM invoices i
    WHERE i.company_id = dashboard_counts.company_id AND i.status = 'issued'
        AND i.series = 'invoice' AND i.total <= 0 AND i.paid_minor >= i.total);

DROP INDEX invoices_nothing_owed_due;
