-- Signed webhooks (issue #35, docs/WEBHOOKS.md).

-- An endpoint a person registered. `secret_sealed` is the signing secret encrypted
-- with a key derived from the service's secret key (AES-256-GCM, `store::webhooks::SealKey`):
-- the service must sign with it, so unlike tokens it cannot be kept as a hash.
-- `events` is a JSON array of event names. `failing_since` is the first failed attempt
-- of the current run of failures (null once an attempt succeeds); `disabled_reason`
-- says why the service disabled the endpoint (null when enabled, or disabled by a person).
CREATE TABLE webhook_endpoints (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id),
    url TEXT NOT NULL,
    description TEXT NOT NULL,
    events TEXT NOT NULL,
    enabled BIGINT NOT NULL,
    secret_sealed TEXT NOT NULL,
    created_by TEXT NOT NULL REFERENCES users (id),
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    failing_since BIGINT,
    consecutive_failures BIGINT NOT NULL DEFAULT 0,
    disabled_reason TEXT
);
CREATE INDEX webhook_endpoints_company ON webhook_endpoints (company_id, id);

-- One event for one endpoint: the exact body that is signed and sent (so a re-send is
-- byte-identical), and the log of its attempts' outcome. `message_id` is the
-- `webhook-id` header: one per event, the same on every attempt and re-send.
-- `status`: `pending` (a job will send it), `succeeded` or `failed`. `attempt_log` is a JSON
-- array of the last attempts (`{"at","response_status","error"}`, at most
-- `store::webhooks::MAX_LOGGED_ATTEMPTS`).
CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id),
    endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints (id),
    message_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    response_status BIGINT,
    last_error TEXT,
    created_at BIGINT NOT NULL,
    last_attempt_at BIGINT,
    delivered_at BIGINT,
    attempt_log TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (company_id, endpoint_id, id);
CREATE INDEX webhook_deliveries_status ON webhook_deliveries (company_id, status);
