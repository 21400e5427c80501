-- The browser login's memory: devices trusted per user, consents per user
-- and client, and failed password attempts per user.

CREATE TABLE trusted_devices (
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    device_id  TEXT NOT NULL,
    trusted_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, device_id)
);

CREATE TABLE consents (
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client_id    TEXT NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
    scope_groups TEXT NOT NULL,         -- space-separated granted groups
    granted_at   BIGINT NOT NULL,
    PRIMARY KEY (user_id, client_id)
);

CREATE TABLE login_failures (
    user_id      TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    failures     INTEGER NOT NULL,      -- failed password attempts since the last success or block
    locked_until BIGINT                 -- blocked for password logins until then
);

-- How the user authenticated (RFC 8176 `amr` values, space-separated), from
-- the login through its code and grant to every id_token of the grant.
ALTER TABLE authorization_codes ADD COLUMN amr TEXT NOT NULL DEFAULT '';
ALTER TABLE grants ADD COLUMN amr TEXT NOT NULL DEFAULT '';
ALTER TABLE sso_sessions ADD COLUMN amr TEXT NOT NULL DEFAULT '';
