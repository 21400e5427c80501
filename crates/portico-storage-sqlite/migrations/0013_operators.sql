-- Operators: Portico users who run Portico, with what they may do in the
-- admin API and the console.
CREATE TABLE operators (
    user_id    TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('support', 'admin')),
    granted_at INTEGER NOT NULL
);
