-- Business reports: one row per (request, locale), rendered in the background
-- by the `report.render` job (docs/REPORTS.md). The PDF is a row of `files`,
-- deleted with the report.

CREATE TABLE reports (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id),
    -- The user who asked; mailed the download link when the report is ready.
    requested_by TEXT NOT NULL REFERENCES users (id),
    report_type TEXT NOT NULL CHECK (report_type IN
        ('business_overview', 'vat_summary', 'profit_loss', 'client_revenue', 'expense_supplier')),
    -- Normalized locale tag, e.g. `es-ES`, `en`.
    locale TEXT NOT NULL,
    -- The period: start inclusive, end exclusive (µs since the epoch).
    period_start BIGINT NOT NULL,
    period_end BIGINT NOT NULL CHECK (period_end > period_start),
    status TEXT NOT NULL CHECK (status IN ('queued', 'rendering', 'ready', 'failed')),
    -- Why a failed report failed.
    error TEXT,
    file_id TEXT REFERENCES files (id),
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    ready_at BIGINT,
    CHECK ((status = 'ready') = (file_id IS NOT NULL))
);
CREATE INDEX reports_company ON reports (company_id, id);
