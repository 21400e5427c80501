-- The browser (`User-Agent`, at most 256 bytes) a session was opened in
-- and a device was trusted from, so that the customer's account page can
-- name them. Rows from before have none.
ALTER TABLE sso_sessions ADD COLUMN user_agent TEXT;
ALTER TABLE trusted_devices ADD COLUMN user_agent TEXT;
