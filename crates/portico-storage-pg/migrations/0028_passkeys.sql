-- Passkeys (WebAuthn credentials) per user: the credential as the WebAuthn
-- library keeps it (public key, flags; nothing secret) and its signature
-- counter, checked and advanced in the write that records a use.
CREATE TABLE passkeys (
    id            uuid PRIMARY KEY,
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    credential_id text NOT NULL UNIQUE,     -- Base64url
    name          text NOT NULL,
    credential    text NOT NULL,            -- JSON
    sign_count    bigint NOT NULL,
    created_at    timestamptz NOT NULL,
    last_used_at  timestamptz,
    locked_at     timestamptz               -- a possible clone: signs nobody in
);
CREATE INDEX passkeys_user ON passkeys (user_id, created_at);
