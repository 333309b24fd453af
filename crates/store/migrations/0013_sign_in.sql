-- Sign-in hardening and names across companies (issue #27, docs/WEB.md "Security").

-- Throttling counts attempts before any password is checked, one counter row
-- per key (a hash of the e-mail, or of the client address with the e-mail), so
-- parallel guesses cannot all read the same count: each reservation is one
-- upsert on the key's row. `attempts` counts within the window that opened at
-- `window_start`; successful and unchecked attempts are given back.
CREATE TABLE web_sign_in_attempts (
    key_hash TEXT PRIMARY KEY,
    window_start BIGINT NOT NULL,
    attempts BIGINT NOT NULL
);
CREATE INDEX web_sign_in_attempts_window ON web_sign_in_attempts (window_start);

-- Replaced by the counters above (its rows lived a day at most).
DROP TABLE web_sign_in_failures;

-- The company that gave the account its name, when a company did (a name in
-- `POST /v1/members` for a new account). Other companies never see that name:
-- they see the name they gave themselves (`memberships.display_name`) or none.
-- Null when the name is the person's own (from their identity provider) or
-- derived from the e-mail address.
ALTER TABLE users ADD COLUMN name_company_id TEXT REFERENCES companies (id);

-- Existing names: attributed to the first company the person joined, unless the
-- name is the address's local part. A name that came from an identity provider
-- is attributed too; that only hides it from the person's other companies.
UPDATE users SET name_company_id = (
    SELECT m.company_id FROM memberships m WHERE m.user_id = users.id
    ORDER BY m.member_since, m.company_id LIMIT 1
)
WHERE name <> '' AND substr(email, 1, length(name) + 1) <> name || '@';
