-- Back-channel logout (OpenID Connect Back-Channel Logout 1.0): a client may
-- register where logout tokens go; each ended session stores one notice per
-- such client with a grant under it, in the transaction that ends it, and a
-- worker delivers it until acknowledged or the retry window closes.

ALTER TABLE clients ADD COLUMN backchannel_logout_uri TEXT;

CREATE TABLE logout_notices (
    id              TEXT PRIMARY KEY,
    client_id       TEXT NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
    uri             TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    session_id      TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    next_attempt_at INTEGER NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    lease_until     INTEGER,
    last_error      TEXT,
    UNIQUE (client_id, session_id)
);
CREATE INDEX logout_notices_due ON logout_notices (next_attempt_at);
