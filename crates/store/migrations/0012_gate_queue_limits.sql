-- Issue #27 (gate, idempotency and the review queue).
--
-- 1. Idempotency keys belong to the caller: the token and whether it called as a person
--    or as an AI caller (the same standard token without its human proof is an AI caller
--    and must never see a person's stored answer). An answer that carried a secret shown
--    once (a new token and its human proof) is never stored: only a "used, not
--    replayable" record (`replayable` = 0, empty body), so the same key again is a 409
--    instead of running twice.
--
--    The old table is dropped, not converted: its rows are at most 24 hours old, had no
--    caller, and may hold tokens and human proofs in clear (the attack this closes).
--    Operators should revoke tokens created in the 24 hours before this upgrade and, on
--    SQLite, run VACUUM so the freed pages are overwritten.
DROP TABLE idempotency_keys;

CREATE TABLE idempotency_keys (
    company_id TEXT NOT NULL REFERENCES companies (id),
    -- The calling token (`web-session:...` for the web app's in-process calls).
    token_id TEXT NOT NULL,
    caller_kind TEXT NOT NULL CHECK (caller_kind IN ('human', 'ai')),
    idem_key TEXT NOT NULL,
    -- SHA-256 of method, path and body: what "the same request" means.
    request_hash TEXT NOT NULL,
    status_code BIGINT NOT NULL,
    content_type TEXT,
    -- 0: the answer carried a secret shown once; it is not kept and cannot be replayed.
    replayable BIGINT NOT NULL CHECK (replayable IN (0, 1)),
    -- The answer (empty when not replayable).
    response_body BYTEA NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (company_id, token_id, caller_kind, idem_key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- 2. The AI review queue keeps bodies once and bounded, and pending entries expire.
--
--    - `request_body` keeps only small JSON bodies inline; a large or binary body is a
--      `files` row (`body_file_id`, raw bytes in the row or in the object store), removed
--      when the entry is decided or expires. `body_size` is its size in bytes, so lists
--      and caps never read a body.
--    - `expires_at`: a pending entry past it can no longer be approved; it reads as
--      `expired` (and the worker's daily job writes that status).
--
--    SQLite cannot change a CHECK constraint in place, so the table is rebuilt. Entries
--    from before keep their inline bodies (binary ones as `base64:`, still readable); a
--    pending one expires 14 days (the default INVOICING_AI_PENDING_TTL_DAYS) after it
--    was made.
CREATE TABLE ai_audit_entries_new (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id),
    user_id TEXT NOT NULL REFERENCES users (id),
    token_id TEXT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('api', 'mcp')),
    action TEXT NOT NULL,
    http_method TEXT NOT NULL,
    http_path TEXT NOT NULL,
    request_body TEXT,
    body_file_id TEXT,
    body_size BIGINT NOT NULL CHECK (body_size >= 0),
    content_type TEXT,
    status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'failed', 'expired')),
    error_message TEXT,
    resource_id TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    reviewed_at BIGINT,
    reviewed_by TEXT
);

INSERT INTO ai_audit_entries_new (id, company_id, user_id, token_id, source, action, http_method,
    http_path, request_body, body_file_id, body_size, content_type, status, error_message,
    resource_id, created_at, expires_at, reviewed_at, reviewed_by)
SELECT id, company_id, user_id, token_id, source, action, http_method, http_path, request_body,
    NULL,
    CASE
        WHEN request_body IS NULL THEN 0
        WHEN request_body LIKE 'base64:%' THEN ((LENGTH(request_body) - 7) / 4) * 3
        ELSE LENGTH(request_body)
    END,
    content_type, status, error_message, resource_id, created_at,
    created_at + 1209600000000,
    reviewed_at, reviewed_by
FROM ai_audit_entries;

DROP TABLE ai_audit_entries;
ALTER TABLE ai_audit_entries_new RENAME TO ai_audit_entries;
CREATE INDEX ai_audit_company ON ai_audit_entries (company_id, id);
CREATE INDEX ai_audit_company_status ON ai_audit_entries (company_id, status, id);
-- The daily sweep of pending entries past their time, across companies.
CREATE INDEX ai_audit_status_expiry ON ai_audit_entries (status, expires_at);
