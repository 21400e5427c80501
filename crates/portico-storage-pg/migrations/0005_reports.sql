-- Brokerage reports: the brokerage data (one document per agreement,
-- replaced whole by an import), report tasks and their files.

CREATE TABLE brokerage_agreements (
    number     TEXT PRIMARY KEY,
    cnum       TEXT NOT NULL,
    data       TEXT NOT NULL,            -- the agreement with its accounts, trades, cash movements, positions (JSON)
    updated_at BIGINT NOT NULL
);
CREATE INDEX brokerage_agreements_cnum ON brokerage_agreements (cnum);

CREATE TABLE report_tasks (
    id               TEXT PRIMARY KEY,
    cnum             TEXT NOT NULL,
    report_type      TEXT NOT NULL,
    agreement_number TEXT NOT NULL,
    account          TEXT,
    period_from      TEXT NOT NULL,      -- YYYY-MM-DD
    period_to        TEXT NOT NULL,
    handle_if_exists BOOLEAN NOT NULL,
    file_types       TEXT NOT NULL,      -- file type codes, comma-separated, in the order asked
    status           TEXT NOT NULL CHECK (status IN ('NEW', 'IN_PROGRESS', 'FAILED', 'DONE')),
    source           TEXT NOT NULL,
    error            TEXT,
    created_by       TEXT,
    attempts         INTEGER NOT NULL,
    lease_until      BIGINT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);
CREATE INDEX report_tasks_cnum ON report_tasks (cnum, created_at);
CREATE INDEX report_tasks_claim ON report_tasks (status, lease_until);

CREATE TABLE report_files (
    id             TEXT PRIMARY KEY,
    task_id        TEXT NOT NULL REFERENCES report_tasks (id) ON DELETE CASCADE,
    position       INTEGER NOT NULL,
    file_type      TEXT NOT NULL,
    name_rus       TEXT NOT NULL,
    name_eng       TEXT NOT NULL,
    file_name      TEXT NOT NULL,
    signature_type TEXT NOT NULL,
    content_type   TEXT NOT NULL,
    size           BIGINT NOT NULL,
    object_key     TEXT NOT NULL
);
CREATE INDEX report_files_task ON report_files (task_id, position);
