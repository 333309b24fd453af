-- The web app for people (docs/WEB.md): server-side sign-in sessions, failed
-- sign-ins for throttling, and the "change the mailed password" flag.

CREATE TABLE web_sessions (
    -- SHA-256 of the cookie value; the value itself is never stored.
    id_hash TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id),
    -- The company the person works in; null until a member of several companies picks one.
    company_id TEXT REFERENCES companies (id),
    -- Synchronizer token that every form of this session must carry.
    csrf_token TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    -- Absolute end of the session; there is no sliding renewal.
    expires_at BIGINT NOT NULL
);
CREATE INDEX web_sessions_user ON web_sessions (user_id);

-- One row per failed sign-in, under a hash of the e-mail and one of the client
-- address, so guessing is slowed without telling whether an account exists.
CREATE TABLE web_sign_in_failures (
    id TEXT PRIMARY KEY,
    key_hash TEXT NOT NULL,
    at BIGINT NOT NULL
);
CREATE INDEX web_sign_in_failures_key ON web_sign_in_failures (key_hash, at);

-- 1 while the account's password was generated (mailed or set by an operator):
-- the web app asks for a new one before anything else.
ALTER TABLE users ADD COLUMN password_change_required BIGINT NOT NULL DEFAULT 0;
