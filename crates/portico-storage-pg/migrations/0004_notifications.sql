-- Merchant notifications: merchants with their keys and settings, the
-- events other bank systems submitted, and their deliveries.

CREATE TABLE merchants (
    merchant_id     TEXT PRIMARY KEY,
    public_id       TEXT NOT NULL UNIQUE,
    sbp_merchant_id TEXT NOT NULL,
    key_hash        TEXT NOT NULL UNIQUE,   -- SHA-256 of the API key, for look-up
    key_sealed      BYTEA NOT NULL,          -- the key, sealed under the instance secret, for signing
    settings        TEXT,                   -- JSON notification settings; NULL until set
    created_at      BIGINT NOT NULL
);

CREATE TABLE notification_events (
    event_id    TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL REFERENCES merchants (merchant_id) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('payment', 'refund', 'subscription')),
    payload     TEXT NOT NULL,              -- the canonical event, JSON
    received_at BIGINT NOT NULL
);

CREATE TABLE notification_deliveries (
    id              TEXT PRIMARY KEY,
    event_id        TEXT NOT NULL REFERENCES notification_events (event_id) ON DELETE CASCADE,
    merchant_id     TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('PENDING', 'DELIVERED', 'FAILED')),
    attempts        INTEGER NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    lease_until     BIGINT,
    created_at      BIGINT NOT NULL,
    finished_at     BIGINT
);
CREATE INDEX notification_deliveries_due ON notification_deliveries (status, next_attempt_at);

-- Every delivery attempt, for the merchant to see.
CREATE TABLE delivery_attempts (
    delivery_id TEXT NOT NULL REFERENCES notification_deliveries (id) ON DELETE CASCADE,
    attempt     INTEGER NOT NULL,
    at          BIGINT NOT NULL,
    status_code INTEGER,              -- the receiver's HTTP status, if it answered
    error       TEXT,                 -- why the attempt failed, if it did
    response    TEXT,                 -- the first 512 bytes of the receiver's answer
    duration_ms BIGINT NOT NULL,
    PRIMARY KEY (delivery_id, attempt)
);
