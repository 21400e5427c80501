-- The form logins are compared in (PRECIS UsernameCaseMapped, one script;
-- portico_model::login_name): unique, and what a typed login is looked up
-- by. Filled in by Portico after this migration; a user whose login has
-- no key (another user has it, or it is not a valid login) keeps signing
-- in by the login exactly as stored, and is reported at every start.
ALTER TABLE users ADD COLUMN login_key text;
CREATE UNIQUE INDEX users_by_login_key ON users (login_key);
