-- A signing key belongs to one JWS algorithm (RS256, PS256, ES256,
-- EdDSA); each algorithm has at most one active key. The keys stored
-- before are RS256 keys.
ALTER TABLE signing_keys ADD COLUMN alg TEXT NOT NULL DEFAULT 'RS256';
DROP INDEX signing_keys_one_active;
CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys (alg) WHERE retired_at IS NULL;
