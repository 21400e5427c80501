-- The DPoP key an authorization code is bound to (RFC 9449 §10), when the
-- pushed request carried a proof or authorize a dpop_jkt.
ALTER TABLE authorization_codes ADD COLUMN dpop_jkt TEXT;
