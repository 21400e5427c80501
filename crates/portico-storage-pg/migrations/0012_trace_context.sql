-- The trace a payment event was submitted in, or a report task asked for
-- (a W3C traceparent), continued by the worker that delivers or generates
-- it. Nullable: rows stored before have none.
ALTER TABLE notification_events ADD COLUMN trace_parent text;
ALTER TABLE report_tasks ADD COLUMN trace_parent text;
