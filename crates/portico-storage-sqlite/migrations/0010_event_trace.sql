-- The trace an event was submitted in (a W3C traceparent), continued by
-- its delivery. Nullable: events stored before have none.
ALTER TABLE notification_events ADD COLUMN trace_parent TEXT;
