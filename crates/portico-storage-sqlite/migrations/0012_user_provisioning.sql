-- What the bank's provisioning system (SCIM) set on a user beyond Portico's
-- own columns, returned to it as sent; NULL for users made otherwise.
ALTER TABLE users ADD COLUMN provisioned TEXT;
