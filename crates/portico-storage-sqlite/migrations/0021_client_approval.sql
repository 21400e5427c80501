-- A registration held for an operator's approval
-- (registration.require_approval): the client cannot authenticate or
-- start a login until an operator approves it. Every client before this
-- migration is approved.
ALTER TABLE clients ADD COLUMN awaiting_approval INTEGER NOT NULL DEFAULT 0;
