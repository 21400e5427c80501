-- When a user last declined the offer to create a passkey after a login:
-- the offer waits `login.passkey_offer_pause_days` after it.
CREATE TABLE passkey_offers (
    user_id     uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    declined_at timestamptz NOT NULL
);
