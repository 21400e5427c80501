-- Remembered client assertions in one B-tree: the table keyed by
-- (client_id, jti) itself (WITHOUT ROWID), without the expiry index.
-- Every accepted private_key_jwt or client_secret_jwt request inserts a
-- row at a random place of that key, in the transaction that rotates or
-- redeems; one tree instead of three (rowid table, key, expiry) writes a
-- third of the pages. The clean-up's scan of the table (bounded by the
-- assertions of the last five minutes) runs once per cleanup_interval_secs.
CREATE TABLE client_assertions_keyed (
    client_id  TEXT NOT NULL,
    jti        TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (client_id, jti)
) WITHOUT ROWID;
INSERT INTO client_assertions_keyed (client_id, jti, expires_at)
    SELECT client_id, jti, expires_at FROM client_assertions;
DROP TABLE client_assertions;
ALTER TABLE client_assertions_keyed RENAME TO client_assertions;
