-- Permissions: companies, the catalog of objects and actions, roles and
-- their grants, employees. The model is saved whole; `permission_revision`
-- counts the saves so that every node knows when its copy is stale.

CREATE TABLE permission_revision (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    revision BIGINT NOT NULL
);
INSERT INTO permission_revision (id, revision) VALUES (1, 0);

CREATE TABLE companies (
    cnum            TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    contract_status TEXT NOT NULL CHECK (contract_status IN ('ACTIVE', 'BLOCKED', 'TERMINATED'))
);

CREATE TABLE catalog_objects (
    path    TEXT PRIMARY KEY,           -- `object` or `object.sub-object`
    name    TEXT,
    actions TEXT NOT NULL               -- JSON array of action names
);

CREATE TABLE roles (
    id        TEXT PRIMARY KEY,
    code      TEXT NOT NULL UNIQUE,
    name      TEXT,
    available BOOLEAN NOT NULL
);

CREATE TABLE role_grants (
    role_id     TEXT NOT NULL REFERENCES roles (id),
    object_path TEXT NOT NULL REFERENCES catalog_objects (path),
    action      TEXT NOT NULL,
    PRIMARY KEY (role_id, object_path, action)
);

CREATE TABLE employees (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    cnum    TEXT NOT NULL REFERENCES companies (cnum),
    role_id TEXT REFERENCES roles (id),
    active  BOOLEAN NOT NULL,
    PRIMARY KEY (user_id, cnum)
);
