-- Operators: Portico users who run Portico, with what they may do in the
-- admin API and the console.
CREATE TABLE operators (
    user_id    uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    role       text NOT NULL CONSTRAINT operators_role CHECK (role IN ('support', 'admin')),
    granted_at timestamptz NOT NULL
);
