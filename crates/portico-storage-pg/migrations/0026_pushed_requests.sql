-- Pushed authorization requests (RFC 9126): by the hash of their
-- request_uri, each used at most once before it expires (a minute by
-- default); the request is the JSON of what authorize checked.
CREATE TABLE pushed_requests (
    request_hash text PRIMARY KEY,
    client_id    text NOT NULL,
    request      jsonb NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL
);
