-- Every accepted private_key_jwt or client_secret_jwt request inserts a
-- client_assertions row in the statement that rotates or redeems; the
-- expiry index made that two index insertions. The clean-up's scan of the
-- table (bounded by the assertions of the last five minutes) runs once
-- per cleanup_interval_secs instead.
DROP INDEX client_assertions_expiry;
