-- Password attempts counted on a throttle key whose outcome has not been
-- reported yet. A node that dies (or a database that fails) between the
-- count and the check leaves its attempt here; once `expires_at` has
-- passed, the attempt no longer counts and is taken back from the key's
-- failures when the key is next counted.
CREATE TABLE login_attempts_pending (
    key        TEXT NOT NULL,
    attempt    TEXT NOT NULL,
    expires_at BIGINT NOT NULL,  -- Unix seconds
    PRIMARY KEY (key, attempt)
);

CREATE INDEX login_attempts_pending_expires_at ON login_attempts_pending (expires_at);
