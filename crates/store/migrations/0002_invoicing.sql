-- Invoicing core: entities, invoices (drafts, issued, corrective), proformas,
-- gapless document counters, and the VERI*FACTU authorization status.

CREATE TABLE entities (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id),
    name TEXT NOT NULL,
    entity_type TEXT NOT NULL,
    country TEXT NOT NULL,
    fiscal_id TEXT,
    vies_vat_id TEXT,
    currency_code TEXT NOT NULL,
    email TEXT,
    language TEXT,
    address_json TEXT NOT NULL,
    template_json TEXT,
    verifactu_json TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT
);
CREATE INDEX entities_company ON entities (company_id, id);

-- One row per (company, series, year): the next number to hand out. Updated in
-- the issuing transaction, so numbers are gapless and unique (the row lock
-- serialises issuers on PostgreSQL; SQLite has one writer).
CREATE TABLE document_counters (
    company_id TEXT NOT NULL REFERENCES companies (id),
    series TEXT NOT NULL,
    year BIGINT NOT NULL,
    next_number BIGINT NOT NULL,
    PRIMARY KEY (company_id, series, year)
);

CREATE TABLE invoices (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id),
    recipient_id TEXT NOT NULL REFERENCES entities (id),
    series TEXT NOT NULL CHECK (series IN ('invoice', 'corrective')),
    status TEXT NOT NULL CHECK (status IN ('draft', 'issued')),
    origin TEXT NOT NULL,
    supply_type TEXT NOT NULL CHECK (supply_type IN ('services', 'goods')),
    currency_code TEXT NOT NULL,
    treatment TEXT,
    invoice_number BIGINT,
    invoice_year BIGINT,
    reference TEXT,
    issued_at BIGINT,
    order_number BIGINT,
    order_year BIGINT,
    net_total BIGINT NOT NULL,
    tax_total BIGINT NOT NULL,
    withholding_total BIGINT NOT NULL,
    total BIGINT NOT NULL,
    line_count BIGINT NOT NULL,
    lines_json TEXT NOT NULL,
    custom_placeholder_values_json TEXT NOT NULL DEFAULT '[]',
    exchange_rates_json TEXT NOT NULL DEFAULT '[]',
    bank_accounts_json TEXT NOT NULL DEFAULT '[]',
    issuer_snapshot_json TEXT,
    recipient_snapshot_json TEXT,
    corrected_invoice_id TEXT REFERENCES invoices (id),
    correction_reason TEXT,
    proforma_id TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT,
    CHECK ((status = 'draft') = (invoice_number IS NULL))
);
CREATE INDEX invoices_company ON invoices (company_id, id);
CREATE INDEX invoices_company_recipient ON invoices (company_id, recipient_id, id);
CREATE INDEX invoices_company_status ON invoices (company_id, status, id);
CREATE INDEX invoices_corrected ON invoices (corrected_invoice_id);
-- The database itself refuses a duplicate number.
CREATE UNIQUE INDEX invoices_number ON invoices (company_id, series, invoice_year, invoice_number);

CREATE TABLE proformas (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id),
    recipient_id TEXT NOT NULL REFERENCES entities (id),
    supply_type TEXT NOT NULL CHECK (supply_type IN ('services', 'goods')),
    currency_code TEXT NOT NULL,
    treatment TEXT,
    number BIGINT NOT NULL,
    year BIGINT NOT NULL,
    reference TEXT NOT NULL,
    net_total BIGINT NOT NULL,
    tax_total BIGINT NOT NULL,
    withholding_total BIGINT NOT NULL,
    total BIGINT NOT NULL,
    line_count BIGINT NOT NULL,
    lines_json TEXT NOT NULL,
    custom_placeholder_values_json TEXT NOT NULL DEFAULT '[]',
    exchange_rates_json TEXT NOT NULL DEFAULT '[]',
    invoice_id TEXT REFERENCES invoices (id),
    created_at BIGINT NOT NULL,
    updated_at BIGINT
);
CREATE INDEX proformas_company ON proformas (company_id, id);
CREATE UNIQUE INDEX proformas_number ON proformas (company_id, year, number);

-- Whether a Spanish issuer may issue (VERI*FACTU). Absent row = not in effect.
CREATE TABLE verifactu_authorizations (
    company_id TEXT PRIMARY KEY REFERENCES companies (id),
    status TEXT NOT NULL,
    in_effect BIGINT NOT NULL DEFAULT 0 CHECK (in_effect IN (0, 1)),
    updated_at BIGINT NOT NULL
);
