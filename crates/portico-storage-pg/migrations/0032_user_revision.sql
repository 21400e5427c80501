-- A user's revision: each update adds one, and an update made from an
-- older read is refused (two changes at once never undo each other).
ALTER TABLE users ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
