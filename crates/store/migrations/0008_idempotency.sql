-- Idempotency keys (Stripe's semantics): the first successful answer to a POST
-- carrying `Idempotency-Key` is stored per company, in the same transaction as
-- the request's own writes; a retry with the same key and the same request gets
-- it back, a different request with the same key gets 409. Kept 24 hours.

CREATE TABLE idempotency_keys (
    company_id TEXT NOT NULL REFERENCES companies (id),
    idem_key TEXT NOT NULL,
    -- SHA-256 of method, path and body: what "the same request" means.
    request_hash TEXT NOT NULL,
    status_code BIGINT NOT NULL,
    content_type TEXT,
    response_body BYTEA NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (company_id, idem_key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
