-- Back-channel logout (OpenID Connect Back-Channel Logout 1.0): a client may
-- register where logout tokens go; each ended session stores one notice per
-- such client with a grant under it, in the transaction that ends it, and a
-- worker delivers it until acknowledged or the retry window closes.

ALTER TABLE clients ADD COLUMN backchannel_logout_uri text;

CREATE TABLE logout_notices (
    id              uuid PRIMARY KEY,
    client_id       text NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
    uri             text NOT NULL,
    user_id         uuid NOT NULL,
    session_id      uuid NOT NULL,
    created_at      timestamptz NOT NULL,
    next_attempt_at timestamptz NOT NULL,
    attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    lease_until     timestamptz,
    last_error      text,
    UNIQUE (client_id, session_id)
);
CREATE INDEX logout_notices_due ON logout_notices (next_attempt_at);
