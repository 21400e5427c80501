-- Single sign-on sessions get a public id (the `sid` claim); codes and grants
-- name the session they were issued under, so that ending a session can
-- reach them. Sessions open before this migration get a random id.

ALTER TABLE sso_sessions ADD COLUMN id TEXT;
UPDATE sso_sessions SET id = lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4'
    || substr(hex(randomblob(2)), 2) || '-a' || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)));
CREATE UNIQUE INDEX sso_sessions_id ON sso_sessions (id);

ALTER TABLE authorization_codes ADD COLUMN session_id TEXT;
ALTER TABLE grants ADD COLUMN session_id TEXT;
CREATE INDEX grants_session ON grants (session_id) WHERE session_id IS NOT NULL;

-- RP-initiated logout: where a client may send the browser back (a JSON
-- array of exact URIs), and whether ending a session revokes the client's
-- grants issued under it.
ALTER TABLE clients ADD COLUMN post_logout_redirect_uris TEXT NOT NULL DEFAULT '[]';
ALTER TABLE clients ADD COLUMN logout_revokes_grants BOOLEAN NOT NULL DEFAULT 0;
