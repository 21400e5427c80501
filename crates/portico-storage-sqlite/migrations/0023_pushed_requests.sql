-- Pushed authorization requests (RFC 9126): by the hash of their
-- request_uri, each used at most once before it expires (a minute by
-- default); the request is the JSON of what authorize checked.
CREATE TABLE pushed_requests (
    request_hash TEXT PRIMARY KEY,
    client_id    TEXT NOT NULL,
    request      TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
) WITHOUT ROWID;
