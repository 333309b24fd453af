-- Where the money stands: bank accounts with balance snapshots, expenses with
-- receipts, payments on invoices, and the prepaid points ledger.

CREATE TABLE bank_accounts (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id),
    name TEXT NOT NULL,
    bank_name TEXT,
    iban TEXT,
    bic TEXT,
    currency_code TEXT NOT NULL,
    is_main BIGINT NOT NULL DEFAULT 0 CHECK (is_main IN (0, 1)),
    created_at BIGINT NOT NULL,
    updated_at BIGINT
);
CREATE INDEX bank_accounts_company ON bank_accounts (company_id, id);
-- At most one default account per company, enforced by the database.
CREATE UNIQUE INDEX bank_accounts_one_main ON bank_accounts (company_id) WHERE is_main = 1;

CREATE TABLE balance_snapshots (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id),
    bank_account_id TEXT NOT NULL REFERENCES bank_accounts (id) ON DELETE CASCADE,
    as_of_date BIGINT NOT NULL,
    balance_minor BIGINT NOT NULL,
    note TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX balance_snapshots_account ON balance_snapshots (bank_account_id, as_of_date, id);

-- Stored files (receipts). Kept in the database so a write is part of the
-- request's transaction: a failed or held request leaves no file behind, and
-- every server sees every file.
CREATE TABLE files (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id),
    content_type TEXT NOT NULL,
    size BIGINT NOT NULL,
    sha256 TEXT NOT NULL,
    data BYTEA NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE expenses (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id),
    supplier_id TEXT NOT NULL REFERENCES entities (id),
    invoice_reference TEXT NOT NULL CHECK (invoice_reference <> ''),
    category TEXT,
    description TEXT,
    currency_code TEXT NOT NULL,
    exchange_rate BIGINT,
    expense_date BIGINT NOT NULL,
    net_total BIGINT NOT NULL,
    tax_total BIGINT NOT NULL,
    total BIGINT NOT NULL,
    line_count BIGINT NOT NULL,
    lines_json TEXT NOT NULL,
    receipt_file_id TEXT REFERENCES files (id),
    created_at BIGINT NOT NULL,
    updated_at BIGINT
);
CREATE INDEX expenses_company ON expenses (company_id, id);
CREATE INDEX expenses_company_date ON expenses (company_id, expense_date);
CREATE INDEX expenses_supplier ON expenses (company_id, supplier_id, id);
-- A supplier's invoice is recorded once, even under concurrent requests.
CREATE UNIQUE INDEX expenses_reference ON expenses (company_id, supplier_id, invoice_reference);

ALTER TABLE invoices ADD COLUMN due_date BIGINT;
ALTER TABLE invoices ADD COLUMN paid_minor BIGINT NOT NULL DEFAULT 0;
CREATE INDEX invoices_company_issued ON invoices (company_id, status, issued_at);

CREATE TABLE invoice_payments (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id),
    invoice_id TEXT NOT NULL REFERENCES invoices (id),
    amount_minor BIGINT NOT NULL CHECK (amount_minor > 0),
    paid_at BIGINT NOT NULL,
    bank_account_id TEXT,
    note TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX invoice_payments_invoice ON invoice_payments (company_id, invoice_id, id);

ALTER TABLE companies ADD COLUMN subscription_tier TEXT;

CREATE TABLE points_ledger (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id),
    delta BIGINT NOT NULL,
    currency_code TEXT NOT NULL,
    note TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX points_ledger_company ON points_ledger (company_id, id);
