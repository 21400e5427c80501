-- Who made a change through an administrative channel (`token:<name>`,
-- `operator:<login>`, `cli`, `scim`); NULL for what users and clients do.
ALTER TABLE audit_log ADD COLUMN actor TEXT;

-- The admin API's filters, newest first.
CREATE INDEX audit_log_user ON audit_log (user_id, id) WHERE user_id IS NOT NULL;
CREATE INDEX audit_log_client ON audit_log (client_id, id) WHERE client_id IS NOT NULL;
CREATE INDEX audit_log_kind ON audit_log (kind, id);
