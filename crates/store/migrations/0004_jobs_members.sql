-- Background jobs (a transactional outbox: rows are inserted in the same
-- transaction as the change that causes them) and per-company member names.
-- See docs/JOBS.md for how the worker claims, retries and parks jobs.

CREATE TABLE jobs (
    id TEXT PRIMARY KEY,
    -- What to do, e.g. `email.send`; a worker claims only kinds it knows.
    kind TEXT NOT NULL,
    -- JSON arguments of the handler. Never a secret: a job that needs one makes it when it runs.
    payload TEXT NOT NULL,
    -- The company the job works for, when it works for one (diagnostics only).
    company_id TEXT,
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'dead')),
    -- Runs started so far, counting the current one while `running`.
    attempts BIGINT NOT NULL DEFAULT 0,
    max_attempts BIGINT NOT NULL CHECK (max_attempts >= 1),
    -- Not claimed before this instant (retries back off by moving it).
    run_at BIGINT NOT NULL,
    -- The worker running it and until when its lease holds; an expired lease
    -- means the worker died and another may claim the job again.
    locked_by TEXT,
    locked_until BIGINT,
    last_error TEXT,
    -- Enqueueing twice with one key inserts once (scheduled jobs use `daily:<kind>:<date>`).
    dedupe_key TEXT UNIQUE,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    finished_at BIGINT
);
CREATE INDEX jobs_queue ON jobs (status, run_at);

-- The name a company shows for a member (PATCH /v1/members/{email}); null
-- falls back to the account's own name, which belongs to the user, not to
-- any one company.
ALTER TABLE memberships ADD COLUMN display_name TEXT;
