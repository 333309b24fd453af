-- OAuth 2.1 sign-in for MCP clients (issue #35, docs/MCP.md "Sign in with OAuth").

-- A client registered itself (RFC 7591): public, no secret. `id` is its `client_id`;
-- `redirect_uris` a JSON array of the exact URIs it may be sent back to.
CREATE TABLE oauth_clients (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    redirect_uris TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX oauth_clients_created ON oauth_clients (created_at);

-- A person allowed a client to act in one company. `refresh_hash` is the SHA-256 of the
-- current refresh token (replaced at every refresh); `revoked_at` ends the grant and so
-- every refresh of it.
CREATE TABLE oauth_grants (
    id TEXT PRIMARY KEY,
    client_id TEXT NOT NULL REFERENCES oauth_clients (id),
    company_id TEXT NOT NULL REFERENCES companies (id),
    user_id TEXT NOT NULL REFERENCES users (id),
    refresh_hash TEXT NOT NULL UNIQUE,
    refresh_expires_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX oauth_grants_client ON oauth_grants (client_id);

-- An authorization code, by its SHA-256: single-use (`used_at`), short-lived, bound to its
-- client, redirect URI and PKCE challenge. `grant_id` is what its exchange issued, revoked
-- when the code is presented again.
CREATE TABLE oauth_codes (
    code_hash TEXT PRIMARY KEY,
    client_id TEXT NOT NULL REFERENCES oauth_clients (id),
    company_id TEXT NOT NULL REFERENCES companies (id),
    user_id TEXT NOT NULL REFERENCES users (id),
    redirect_uri TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    resource TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT,
    grant_id TEXT
);
CREATE INDEX oauth_codes_client ON oauth_codes (client_id);
CREATE INDEX oauth_codes_created ON oauth_codes (created_at);

-- Access tokens issued through OAuth are ordinary `mcp` tokens that expire and belong to
-- a grant (null for tokens made by people, which never expire).
ALTER TABLE api_tokens ADD COLUMN expires_at BIGINT;
ALTER TABLE api_tokens ADD COLUMN oauth_grant_id TEXT;
CREATE INDEX api_tokens_grant ON api_tokens (oauth_grant_id);

-- Webhook event `invoice.overdue` (issue #35 leftovers, docs/WEBHOOKS.md), here so the
-- leftovers of the issue need one migration: the worker's schedule pass records each
-- invoice it emitted the event for, in the same transaction, so it is emitted once.
CREATE TABLE invoice_overdue_events (
    invoice_id TEXT PRIMARY KEY REFERENCES invoices (id),
    company_id TEXT NOT NULL REFERENCES companies (id),
    emitted_at BIGINT NOT NULL
);
