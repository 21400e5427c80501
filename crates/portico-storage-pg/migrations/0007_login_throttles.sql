-- Throttle counters of password attempts, replacing the per-user failure
-- count (docs/decisions.md, "Guessing passwords and codes"). A key names
-- what is counted: `account:<user id>` or `login:<typed login>` (attempts
-- from devices not trusted for the user), `device:<user id>:<device id>`
-- (a trusted device), `address:<client address>`.

DROP TABLE login_failures;

CREATE TABLE login_throttles (
    key          TEXT PRIMARY KEY,
    failures     INTEGER NOT NULL,  -- attempts counted since the last success
    locked_until BIGINT,            -- attempts refused until then (Unix seconds)
    updated_at   BIGINT NOT NULL    -- last counted attempt (Unix seconds)
);

CREATE INDEX login_throttles_updated_at ON login_throttles (updated_at);
