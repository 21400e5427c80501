-- The provisioning system's (SCIM's) `active: false`, apart from an
-- operator's block: each stands until the one who set it lifts it, and a
-- user signs in only when neither is set. Users deactivated before this
-- column existed carry it as a block, which an operator lifts.
ALTER TABLE users ADD COLUMN deactivated boolean NOT NULL DEFAULT false;
