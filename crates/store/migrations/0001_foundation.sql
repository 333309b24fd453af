-- Foundation: companies, users, memberships, API tokens, legal documents, AI audit.
-- Portable SQL: the same file runs on SQLite and PostgreSQL (see docs/DATABASE.md).
-- Ids are UUIDv7 text, timestamps BIGINT microseconds since the epoch (UTC),
-- flags BIGINT 0/1 (the Any driver carries no SQLite BOOLEAN).

CREATE TABLE companies (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    fiscal_id TEXT NOT NULL,
    email TEXT NOT NULL DEFAULT '',
    phone TEXT NOT NULL DEFAULT '',
    company_type TEXT,
    address_json TEXT,
    is_settled BIGINT NOT NULL DEFAULT 0 CHECK (is_settled IN (0, 1)),
    currency_code TEXT,
    friendly_name TEXT,
    vies_vat_id TEXT,
    footer_invoice_typst TEXT,
    post_invoice_typst TEXT,
    custom_placeholders_json TEXT NOT NULL DEFAULT '[]',
    first_invoice_yearly_number BIGINT NOT NULL DEFAULT 1,
    first_corrective_invoice_yearly_number BIGINT NOT NULL DEFAULT 1,
    invoice_reference_format TEXT NOT NULL DEFAULT '{year}-{number:4}',
    corrective_invoice_reference_format TEXT NOT NULL DEFAULT 'R{year}-{number:4}',
    proforma_reference_format TEXT NOT NULL DEFAULT 'P{year}-{number:4}',
    created_at BIGINT NOT NULL,
    updated_at BIGINT
);

CREATE TABLE users (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    language TEXT NOT NULL DEFAULT 'en_US',
    profile_image_url TEXT NOT NULL DEFAULT '',
    password_hash TEXT,
    created_at BIGINT NOT NULL
);

CREATE TABLE memberships (
    company_id TEXT NOT NULL REFERENCES companies (id),
    user_id TEXT NOT NULL REFERENCES users (id),
    kind TEXT NOT NULL CHECK (kind IN ('oauth', 'password', 'invited')),
    status TEXT NOT NULL CHECK (status IN ('active', 'deactivated')),
    member_since BIGINT NOT NULL,
    expires_at BIGINT,
    PRIMARY KEY (company_id, user_id)
);
CREATE INDEX memberships_user ON memberships (user_id);

CREATE TABLE api_tokens (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id),
    user_id TEXT NOT NULL REFERENCES users (id),
    kind TEXT NOT NULL CHECK (kind IN ('standard', 'mcp')),
    description TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    proof_hash TEXT,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX api_tokens_company ON api_tokens (company_id, id);

CREATE TABLE legal_documents (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('terms_of_service', 'privacy_policy', 'data_processing_agreement')),
    version BIGINT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    published_at BIGINT NOT NULL,
    is_current BIGINT NOT NULL CHECK (is_current IN (0, 1)),
    UNIQUE (kind, version)
);
-- At most one current document of each kind, enforced by the database.
CREATE UNIQUE INDEX legal_documents_one_current ON legal_documents (kind) WHERE is_current = 1;

CREATE TABLE agreement_acceptances (
    user_id TEXT NOT NULL REFERENCES users (id),
    document_id TEXT NOT NULL REFERENCES legal_documents (id),
    accepted_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, document_id)
);

CREATE TABLE ai_audit_entries (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id),
    user_id TEXT NOT NULL REFERENCES users (id),
    token_id TEXT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('api', 'mcp')),
    action TEXT NOT NULL,
    http_method TEXT NOT NULL,
    http_path TEXT NOT NULL,
    request_body TEXT,
    content_type TEXT,
    status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'failed')),
    error_message TEXT,
    resource_id TEXT,
    created_at BIGINT NOT NULL,
    reviewed_at BIGINT,
    reviewed_by TEXT
);
CREATE INDEX ai_audit_company ON ai_audit_entries (company_id, id);
CREATE INDEX ai_audit_company_status ON ai_audit_entries (company_id, status, id);

-- The first published version of each legal document. Operators publish their
-- own with `invoicing admin legal publish`; accepting is per user.
INSERT INTO legal_documents (id, kind, version, title, body, published_at, is_current) VALUES
 ('00000000-0000-7000-8000-000000000001', 'terms_of_service', 1, 'Terms of Service',
  'These are the default terms of service of this installation. The operator replaces them with `invoicing admin legal publish`.', 0, 1),
 ('00000000-0000-7000-8000-000000000002', 'privacy_policy', 1, 'Privacy Policy',
  'This is the default privacy policy of this installation. The operator replaces it with `invoicing admin legal publish`.', 0, 1),
 ('00000000-0000-7000-8000-000000000003', 'data_processing_agreement', 1, 'Data Processing Agreement',
  'This is the default data processing agreement of this installation. The operator replaces it with `invoicing admin legal publish`.', 0, 1);
