-- A client's authentication method, public keys and signing algorithms
-- (RFC 7591 metadata; '{}' is a client_secret_basic client whose tokens
-- are signed with the server's default algorithm), and for a
-- client_secret_jwt client its secret sealed with the instance secret.
ALTER TABLE clients ADD COLUMN security jsonb NOT NULL DEFAULT '{}';
ALTER TABLE clients ADD COLUMN secret_sealed text;

-- The `jti` of every client assertion accepted, until the assertion
-- expires: a second use is refused on every node sharing this database.
CREATE TABLE client_assertions (
    client_id  text NOT NULL,
    jti        text NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (client_id, jti)
);
CREATE INDEX client_assertions_expiry ON client_assertions (expires_at);
