-- Passkeys (WebAuthn credentials) per user: the credential as the WebAuthn
-- library keeps it (public key, flags; nothing secret) and its signature
-- counter, checked and advanced in the write that records a use.
CREATE TABLE passkeys (
    id            TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    credential_id TEXT NOT NULL UNIQUE,     -- Base64url
    name          TEXT NOT NULL,
    credential    TEXT NOT NULL,            -- JSON
    sign_count    BIGINT NOT NULL,
    created_at    BIGINT NOT NULL,
    last_used_at  BIGINT,
    locked_at     BIGINT                    -- a possible clone: signs nobody in
);
CREATE INDEX passkeys_user ON passkeys (user_id, created_at);
