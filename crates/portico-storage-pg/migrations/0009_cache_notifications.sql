-- Node-local caches: every change that a node may answer from memory is
-- announced on the channel `portico_cache` when its transaction commits.
--   g:<grant id>   a grant was revoked or removed
--   j:<jti>        an access token was revoked
--   p:<revision>   the permission model was saved as this revision
-- Nodes also send `t:<node>:<n>` ticks through the same channel: the
-- notifications of all sessions arrive in commit order, so a node that has
-- received its own tick has received everything committed before it.

CREATE FUNCTION portico_notify_grant() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('portico_cache', 'g:' || OLD.id::text);
    ELSIF NEW.revoked_at IS NOT NULL AND OLD.revoked_at IS NULL THEN
        PERFORM pg_notify('portico_cache', 'g:' || NEW.id::text);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER grants_notify AFTER UPDATE OF revoked_at OR DELETE ON grants
    FOR EACH ROW EXECUTE FUNCTION portico_notify_grant();

CREATE FUNCTION portico_notify_revoked_token() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('portico_cache', 'j:' || NEW.jti);
    RETURN NULL;
END
$$;

CREATE TRIGGER revoked_access_tokens_notify AFTER INSERT ON revoked_access_tokens
    FOR EACH ROW EXECUTE FUNCTION portico_notify_revoked_token();

CREATE FUNCTION portico_notify_permission_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('portico_cache', 'p:' || NEW.revision::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER permission_revision_notify AFTER UPDATE ON permission_revision
    FOR EACH ROW EXECUTE FUNCTION portico_notify_permission_revision();
