-- Nodes answer "what is this client registered with" and "which key signs"
-- from memory as well (see 0009): a change of either is announced on the
-- channel `portico_cache` when its transaction commits.
--   c:<client id>  a client was registered, changed or removed
--   k:             a signing key was added, retired or removed

CREATE FUNCTION portico_notify_client() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('portico_cache', 'c:' || OLD.client_id);
    ELSE
        PERFORM pg_notify('portico_cache', 'c:' || NEW.client_id);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER clients_notify AFTER INSERT OR UPDATE OR DELETE ON clients
    FOR EACH ROW EXECUTE FUNCTION portico_notify_client();

CREATE FUNCTION portico_notify_signing_keys() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('portico_cache', 'k:');
    RETURN NULL;
END
$$;

CREATE TRIGGER signing_keys_notify AFTER INSERT OR UPDATE OR DELETE ON signing_keys
    FOR EACH STATEMENT EXECUTE FUNCTION portico_notify_signing_keys();

-- A code and a refresh token are each updated once, when spent: room left
-- on their page lets that update stay on the page without new index
-- entries (a heap-only tuple).
ALTER TABLE authorization_codes SET (fillfactor = 50);
ALTER TABLE refresh_tokens SET (fillfactor = 70);
