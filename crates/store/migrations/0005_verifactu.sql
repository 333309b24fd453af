-- VERI*FACTU: one hash chain of registration records per Spanish issuer,
-- written in the issuing transaction, and the authorization that allows issuing.

CREATE TABLE verifactu_chain_heads (
    company_id TEXT PRIMARY KEY REFERENCES companies (id),
    seq BIGINT NOT NULL,
    nif TEXT,
    num_serie TEXT,
    fecha TEXT,
    huella TEXT
);

CREATE TABLE verifactu_records (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id),
    invoice_id TEXT NOT NULL REFERENCES invoices (id),
    seq BIGINT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('alta', 'anulacion')),
    tipo_factura TEXT,
    huella TEXT NOT NULL,
    previous_huella TEXT,
    hash_input TEXT NOT NULL,
    generated_at TEXT NOT NULL,
    xml TEXT NOT NULL,
    qr_url TEXT,
    -- not_sent (disabled mode), pending, sent, accepted, accepted_with_errors, rejected
    status TEXT NOT NULL,
    aeat_code TEXT,
    aeat_description TEXT,
    csv TEXT,
    attempts BIGINT NOT NULL DEFAULT 0,
    submitted_at BIGINT,
    created_at BIGINT NOT NULL,
    UNIQUE (company_id, seq)
);
CREATE INDEX verifactu_records_invoice ON verifactu_records (company_id, invoice_id);
CREATE INDEX verifactu_records_status ON verifactu_records (status, company_id, seq);

ALTER TABLE verifactu_authorizations ADD COLUMN method TEXT;
ALTER TABLE verifactu_authorizations ADD COLUMN note TEXT;
ALTER TABLE verifactu_authorizations ADD COLUMN recorded_by TEXT;
