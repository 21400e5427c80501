-- PostgreSQL's own types, in place: ids become `uuid`, times `timestamptz`,
-- JSON documents `jsonb`, lists of words `text[]`, report periods `date`;
-- every row is kept. Constraints state the rules the code relies on.
--
-- The foreign keys between converted columns are dropped first and made
-- again at the end (a key needs both of its columns of one type). Each
-- ALTER TABLE rewrites its table once, holding an exclusive lock meanwhile:
-- on a large database, run `portico migrate` in a maintenance window before
-- starting the new release (docs/operations.md).

-- A JSON array of strings as an array (a column's USING cannot hold a
-- subquery); gone with the session.
CREATE FUNCTION pg_temp.json_words(text) RETURNS text[]
    LANGUAGE sql IMMUTABLE STRICT
    AS $$ SELECT coalesce(array_agg(value), '{}') FROM jsonb_array_elements_text($1::jsonb) $$;

ALTER TABLE authorization_codes DROP CONSTRAINT authorization_codes_user_id_fkey;
ALTER TABLE grants DROP CONSTRAINT grants_user_id_fkey;
ALTER TABLE refresh_tokens DROP CONSTRAINT refresh_tokens_grant_id_fkey;
ALTER TABLE sso_sessions DROP CONSTRAINT sso_sessions_user_id_fkey;
ALTER TABLE employees DROP CONSTRAINT employees_user_id_fkey;
ALTER TABLE employees DROP CONSTRAINT employees_role_id_fkey;
ALTER TABLE role_grants DROP CONSTRAINT role_grants_role_id_fkey;
ALTER TABLE trusted_devices DROP CONSTRAINT trusted_devices_user_id_fkey;
ALTER TABLE consents DROP CONSTRAINT consents_user_id_fkey;
ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_delivery_id_fkey;
ALTER TABLE report_files DROP CONSTRAINT report_files_task_id_fkey;

-- Identity.

ALTER TABLE clients
    ALTER COLUMN redirect_uris TYPE text[] USING pg_temp.json_words(redirect_uris),
    ALTER COLUMN scopes TYPE text[] USING coalesce(string_to_array(nullif(scopes, ''), ' '), '{}'),
    ALTER COLUMN created_at TYPE timestamptz USING to_timestamp(created_at);

ALTER TABLE users
    ALTER COLUMN id TYPE uuid USING id::uuid,
    ALTER COLUMN created_at TYPE timestamptz USING to_timestamp(created_at);

ALTER TABLE signing_keys
    ALTER COLUMN created_at TYPE timestamptz USING to_timestamp(created_at),
    ALTER COLUMN retired_at TYPE timestamptz USING to_timestamp(retired_at);

ALTER TABLE grants
    ALTER COLUMN id TYPE uuid USING id::uuid,
    ALTER COLUMN user_id TYPE uuid USING user_id::uuid,
    ALTER COLUMN auth_time TYPE timestamptz USING to_timestamp(auth_time),
    ALTER COLUMN created_at TYPE timestamptz USING to_timestamp(created_at),
    ALTER COLUMN revoked_at TYPE timestamptz USING to_timestamp(revoked_at),
    ALTER COLUMN amr DROP DEFAULT,
    ALTER COLUMN amr TYPE text[] USING coalesce(string_to_array(nullif(amr, ''), ' '), '{}');

ALTER TABLE authorization_codes
    ALTER COLUMN user_id TYPE uuid USING user_id::uuid,
    ALTER COLUMN grant_id TYPE uuid USING grant_id::uuid,
    ALTER COLUMN auth_time TYPE timestamptz USING to_timestamp(auth_time),
    ALTER COLUMN created_at TYPE timestamptz USING to_timestamp(created_at),
    ALTER COLUMN expires_at TYPE timestamptz USING to_timestamp(expires_at),
    ALTER COLUMN consumed_at TYPE timestamptz USING to_timestamp(consumed_at),
    ALTER COLUMN amr DROP DEFAULT,
    ALTER COLUMN amr TYPE text[] USING coalesce(string_to_array(nullif(amr, ''), ' '), '{}'),
    -- A code's yield is recorded when, and only when, it is spent.
    ADD CONSTRAINT authorization_codes_grant_when_spent CHECK (grant_id IS NULL OR consumed_at IS NOT NULL);

ALTER TABLE refresh_tokens
    ALTER COLUMN grant_id TYPE uuid USING grant_id::uuid,
    ALTER COLUMN created_at TYPE timestamptz USING to_timestamp(created_at),
    ALTER COLUMN expires_at TYPE timestamptz USING to_timestamp(expires_at),
    ALTER COLUMN used_at TYPE timestamptz USING to_timestamp(used_at);

ALTER TABLE revoked_access_tokens
    ALTER COLUMN expires_at TYPE timestamptz USING to_timestamp(expires_at),
    ALTER COLUMN revoked_at TYPE timestamptz USING to_timestamp(revoked_at);

ALTER TABLE sso_sessions
    ALTER COLUMN user_id TYPE uuid USING user_id::uuid,
    ALTER COLUMN auth_time TYPE timestamptz USING to_timestamp(auth_time),
    ALTER COLUMN created_at TYPE timestamptz USING to_timestamp(created_at),
    ALTER COLUMN expires_at TYPE timestamptz USING to_timestamp(expires_at),
    ALTER COLUMN amr DROP DEFAULT,
    ALTER COLUMN amr TYPE text[] USING coalesce(string_to_array(nullif(amr, ''), ' '), '{}');

ALTER TABLE login_processes
    ALTER COLUMN id TYPE uuid USING id::uuid,
    ALTER COLUMN state TYPE jsonb USING state::jsonb,
    ALTER COLUMN created_at TYPE timestamptz USING to_timestamp(created_at),
    ALTER COLUMN expires_at TYPE timestamptz USING to_timestamp(expires_at),
    ADD CONSTRAINT login_processes_version CHECK (version >= 0);

ALTER TABLE audit_log
    ALTER COLUMN at TYPE timestamptz USING to_timestamp(at),
    ALTER COLUMN user_id TYPE uuid USING user_id::uuid,
    ALTER COLUMN detail TYPE jsonb USING detail::jsonb;
CREATE INDEX audit_log_at ON audit_log (at);

-- The browser login's memory.

ALTER TABLE trusted_devices
    ALTER COLUMN user_id TYPE uuid USING user_id::uuid,
    ALTER COLUMN trusted_at TYPE timestamptz USING to_timestamp(trusted_at);

ALTER TABLE consents
    ALTER COLUMN user_id TYPE uuid USING user_id::uuid,
    ALTER COLUMN scope_groups TYPE text[] USING coalesce(string_to_array(nullif(scope_groups, ''), ' '), '{}'),
    ALTER COLUMN granted_at TYPE timestamptz USING to_timestamp(granted_at);

ALTER TABLE login_throttles
    ALTER COLUMN locked_until TYPE timestamptz USING to_timestamp(locked_until),
    ALTER COLUMN updated_at TYPE timestamptz USING to_timestamp(updated_at),
    ADD CONSTRAINT login_throttles_failures CHECK (failures >= 0);

-- Permissions.

ALTER TABLE roles ALTER COLUMN id TYPE uuid USING id::uuid;
ALTER TABLE role_grants ALTER COLUMN role_id TYPE uuid USING role_id::uuid;
ALTER TABLE catalog_objects
    ALTER COLUMN actions TYPE text[] USING pg_temp.json_words(actions);
ALTER TABLE employees
    ALTER COLUMN user_id TYPE uuid USING user_id::uuid,
    ALTER COLUMN role_id TYPE uuid USING role_id::uuid;

-- Notifications.

ALTER TABLE merchants
    ALTER COLUMN settings TYPE jsonb USING settings::jsonb,
    ALTER COLUMN created_at TYPE timestamptz USING to_timestamp(created_at);

ALTER TABLE notification_events
    ALTER COLUMN payload TYPE jsonb USING payload::jsonb,
    ALTER COLUMN received_at TYPE timestamptz USING to_timestamp(received_at);

ALTER TABLE notification_deliveries
    ALTER COLUMN id TYPE uuid USING id::uuid,
    ALTER COLUMN next_attempt_at TYPE timestamptz USING to_timestamp(next_attempt_at),
    ALTER COLUMN lease_until TYPE timestamptz USING to_timestamp(lease_until),
    ALTER COLUMN created_at TYPE timestamptz USING to_timestamp(created_at),
    ALTER COLUMN finished_at TYPE timestamptz USING to_timestamp(finished_at),
    ADD CONSTRAINT notification_deliveries_attempts CHECK (attempts >= 0),
    -- Finished exactly when no longer pending.
    ADD CONSTRAINT notification_deliveries_finished CHECK ((status = 'PENDING') = (finished_at IS NULL)),
    ADD CONSTRAINT notification_deliveries_merchant_id_fkey
        FOREIGN KEY (merchant_id) REFERENCES merchants (merchant_id) ON DELETE CASCADE;

ALTER TABLE delivery_attempts
    ALTER COLUMN delivery_id TYPE uuid USING delivery_id::uuid,
    ALTER COLUMN at TYPE timestamptz USING to_timestamp(at),
    ADD CONSTRAINT delivery_attempts_attempt CHECK (attempt >= 1);

-- Brokerage reports.

ALTER TABLE brokerage_agreements
    ALTER COLUMN data TYPE jsonb USING data::jsonb,
    ALTER COLUMN updated_at TYPE timestamptz USING to_timestamp(updated_at);

ALTER TABLE report_tasks
    ALTER COLUMN id TYPE uuid USING id::uuid,
    ALTER COLUMN period_from TYPE date USING period_from::date,
    ALTER COLUMN period_to TYPE date USING period_to::date,
    ALTER COLUMN file_types TYPE text[] USING coalesce(string_to_array(nullif(file_types, ''), ','), '{}'),
    ALTER COLUMN created_by TYPE uuid USING created_by::uuid,
    ALTER COLUMN lease_until TYPE timestamptz USING to_timestamp(lease_until),
    ALTER COLUMN created_at TYPE timestamptz USING to_timestamp(created_at),
    ALTER COLUMN updated_at TYPE timestamptz USING to_timestamp(updated_at),
    ADD CONSTRAINT report_tasks_report_type CHECK (report_type IN ('STATEMENT_FOR_1C', 'BROKERAGE_REPORT')),
    ADD CONSTRAINT report_tasks_source CHECK (source IN ('ONLINE_BANK', 'PUBLIC_API_GATEWAY')),
    ADD CONSTRAINT report_tasks_file_types CHECK (
        cardinality(file_types) > 0
        AND file_types <@ ARRAY['SIMPLE_DOCUMENTARY', 'PRINTED_FORM', 'QES', 'FACSIMILE']),
    ADD CONSTRAINT report_tasks_period CHECK (period_from <= period_to),
    ADD CONSTRAINT report_tasks_attempts CHECK (attempts >= 0);

ALTER TABLE report_files
    ALTER COLUMN id TYPE uuid USING id::uuid,
    ALTER COLUMN task_id TYPE uuid USING task_id::uuid,
    ADD CONSTRAINT report_files_file_type CHECK (file_type IN ('SIMPLE_DOCUMENTARY', 'PRINTED_FORM', 'QES', 'FACSIMILE')),
    ADD CONSTRAINT report_files_signature_type CHECK (signature_type IN ('NONE', 'QES', 'FACSIMILE')),
    ADD CONSTRAINT report_files_size CHECK (size >= 0);

-- The foreign keys again, on the new types.

ALTER TABLE authorization_codes ADD CONSTRAINT authorization_codes_user_id_fkey
    FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE;
ALTER TABLE grants ADD CONSTRAINT grants_user_id_fkey
    FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE;
ALTER TABLE refresh_tokens ADD CONSTRAINT refresh_tokens_grant_id_fkey
    FOREIGN KEY (grant_id) REFERENCES grants (id) ON DELETE CASCADE;
ALTER TABLE sso_sessions ADD CONSTRAINT sso_sessions_user_id_fkey
    FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE;
ALTER TABLE employees ADD CONSTRAINT employees_user_id_fkey
    FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE;
ALTER TABLE employees ADD CONSTRAINT employees_role_id_fkey FOREIGN KEY (role_id) REFERENCES roles (id);
ALTER TABLE role_grants ADD CONSTRAINT role_grants_role_id_fkey FOREIGN KEY (role_id) REFERENCES roles (id);
ALTER TABLE trusted_devices ADD CONSTRAINT trusted_devices_user_id_fkey
    FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE;
ALTER TABLE consents ADD CONSTRAINT consents_user_id_fkey
    FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE;
ALTER TABLE delivery_attempts ADD CONSTRAINT delivery_attempts_delivery_id_fkey
    FOREIGN KEY (delivery_id) REFERENCES notification_deliveries (id) ON DELETE CASCADE;
ALTER TABLE report_files ADD CONSTRAINT report_files_task_id_fkey
    FOREIGN KEY (task_id) REFERENCES report_tasks (id) ON DELETE CASCADE;
