-- Identity: clients, users, keys, codes, grants, tokens, sessions, login processes, audit.
-- Timestamps are Unix seconds (UTC). Secrets appear only as hashes or sealed.

CREATE TABLE clients (
    client_id       TEXT PRIMARY KEY,
    secret_hash     TEXT NOT NULL,
    name_ru         TEXT NOT NULL,
    name_en         TEXT NOT NULL,
    redirect_uris   TEXT NOT NULL,          -- JSON array of exact URIs
    scopes          TEXT NOT NULL,          -- space-separated allowed scopes
    require_consent BOOLEAN NOT NULL,
    created_at      INTEGER NOT NULL
);

CREATE TABLE users (
    id                  TEXT PRIMARY KEY,
    login               TEXT NOT NULL UNIQUE,
    password_hash       TEXT NOT NULL,
    phone               TEXT,
    email               TEXT,
    name                TEXT,
    phone_login_enabled BOOLEAN NOT NULL,
    blocked             BOOLEAN NOT NULL,
    created_at          INTEGER NOT NULL
);
CREATE INDEX users_phone ON users (phone);

CREATE TABLE signing_keys (
    kid            TEXT PRIMARY KEY,
    private_sealed BLOB NOT NULL,
    created_at     INTEGER NOT NULL,
    retired_at     INTEGER
);
-- At most one active key, even when several nodes start at once.
CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys ((retired_at IS NULL)) WHERE retired_at IS NULL;

CREATE TABLE grants (
    id         TEXT PRIMARY KEY,
    client_id  TEXT NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    scope      TEXT NOT NULL,
    auth_time  INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
CREATE INDEX grants_user ON grants (user_id);

CREATE TABLE authorization_codes (
    code_hash      TEXT PRIMARY KEY,
    client_id      TEXT NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
    user_id        TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    redirect_uri   TEXT NOT NULL,
    scope          TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    nonce          TEXT,
    auth_time      INTEGER NOT NULL,
    created_at     INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL,
    consumed_at    INTEGER,          -- spent: presented once, any further use is a replay
    grant_id       TEXT
);
CREATE INDEX authorization_codes_expiry ON authorization_codes (expires_at);

CREATE TABLE refresh_tokens (
    token_hash TEXT PRIMARY KEY,
    grant_id   TEXT NOT NULL REFERENCES grants (id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at    INTEGER
);
CREATE INDEX refresh_tokens_grant ON refresh_tokens (grant_id);
CREATE INDEX refresh_tokens_expiry ON refresh_tokens (expires_at);

CREATE TABLE revoked_access_tokens (
    jti        TEXT PRIMARY KEY,
    expires_at INTEGER NOT NULL,
    revoked_at INTEGER NOT NULL
);

CREATE TABLE sso_sessions (
    token_hash TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    auth_time  INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX sso_sessions_user ON sso_sessions (user_id);

CREATE TABLE login_processes (
    id         TEXT PRIMARY KEY,
    version    INTEGER NOT NULL,
    state      TEXT NOT NULL,               -- JSON LoginState
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX login_processes_expiry ON login_processes (expires_at);

CREATE TABLE audit_log (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    at        INTEGER NOT NULL,
    kind      TEXT NOT NULL,
    user_id   TEXT,
    client_id TEXT,
    detail    TEXT NOT NULL
);
