-- Devices whose trust ran out (login.device_trust_days) are removed by
-- the cleaner, found without reading every device.
CREATE INDEX trusted_devices_trusted_at ON trusted_devices (trusted_at);
