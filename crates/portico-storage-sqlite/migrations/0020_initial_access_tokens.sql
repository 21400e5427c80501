-- One-time initial access tokens for dynamic client registration, issued
-- by operators (admin API, CLI): only their hashes; each registers one
-- client before it expires.
CREATE TABLE initial_access_tokens (
    token_hash TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at    INTEGER
);
CREATE INDEX initial_access_tokens_expiry ON initial_access_tokens (expires_at);
