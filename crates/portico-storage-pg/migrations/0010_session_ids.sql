-- Single sign-on sessions get a public id (the `sid` claim); codes and grants
-- name the session they were issued under, so that ending a session can
-- reach them. Sessions open before this migration get a random id.

ALTER TABLE sso_sessions ADD COLUMN id uuid NOT NULL DEFAULT gen_random_uuid();
ALTER TABLE sso_sessions ALTER COLUMN id DROP DEFAULT;
ALTER TABLE sso_sessions ADD CONSTRAINT sso_sessions_id_key UNIQUE (id);

ALTER TABLE authorization_codes ADD COLUMN session_id uuid;
ALTER TABLE grants ADD COLUMN session_id uuid;
CREATE INDEX grants_session ON grants (session_id) WHERE session_id IS NOT NULL;

-- RP-initiated logout: where a client may send the browser back, and whether
-- ending a session revokes the client's grants issued under it.
ALTER TABLE clients
    ADD COLUMN post_logout_redirect_uris text[] NOT NULL DEFAULT '{}',
    ADD COLUMN logout_revokes_grants boolean NOT NULL DEFAULT false;
