-- A merchant's delivery list, newest first, read from an index instead of
-- the whole table; and the deliveries of an event, for removing finished
-- deliveries and their events after the retention period (the foreign
-- key's cascade looks them up by event too).
CREATE INDEX notification_deliveries_merchant ON notification_deliveries (merchant_id, created_at, id);
CREATE INDEX notification_deliveries_event ON notification_deliveries (event_id);
