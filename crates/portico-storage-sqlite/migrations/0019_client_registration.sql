-- A client registered by itself (RFC 7591) manages its registration with a
-- registration access token (RFC 7592), stored only as its hash.
ALTER TABLE clients ADD COLUMN registration_token_hash TEXT;
