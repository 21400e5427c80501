-- The registrations held for an operator's approval, found without reading
-- every client (the console's queue, oldest first; the admin API's filter).
CREATE INDEX clients_held ON clients (created_at, client_id) WHERE awaiting_approval;
