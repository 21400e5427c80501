//! The queries on the hot paths (token endpoint, liveness), as text shared
//! by every driver that runs them.

/// The columns of an authorization code.
#[macro_export]
#[doc(hidden)]
macro_rules! code_columns {
    () => {
        "code_hash, client_id, user_id, redirect_uri, scope, code_challenge, nonce, auth_time, created_at, \
         expires_at, grant_id, amr"
    };
}

pub const CODE_COLUMNS: &str = code_columns!();

pub const FIND_CLIENT: &str = "SELECT * FROM clients WHERE client_id = $1";

pub const FIND_USER: &str = "SELECT * FROM users WHERE id = $1";

pub const ACTIVE_SIGNING_KID: &str = "SELECT kid FROM signing_keys WHERE retired_at IS NULL";

pub const FIND_CODE: &str =
    concat!("SELECT ", code_columns!(), ", consumed_at FROM authorization_codes WHERE code_hash = $1");

pub const FIND_REFRESH_TOKEN: &str = "SELECT r.token_hash, r.created_at AS token_created_at, \
     r.expires_at AS token_expires_at, r.used_at AS token_used_at, g.* \
     FROM refresh_tokens r JOIN grants g ON g.id = r.grant_id WHERE r.token_hash = $1";

pub const ACCESS_TOKEN_STATE: &str = "SELECT EXISTS (SELECT 1 FROM grants WHERE id = $1 AND revoked_at IS NULL) \
     AS grant_live, EXISTS (SELECT 1 FROM revoked_access_tokens WHERE jti = $2) AS token_revoked";

/// Spends a code for the grant it yields (`$1` hash, `$2` now, `$3` grant
/// id); changes no row when the code is spent already.
pub const SPEND_CODE_FOR_GRANT: &str = "UPDATE authorization_codes SET consumed_at = $2, grant_id = $3 \
     WHERE code_hash = $1 AND consumed_at IS NULL";

/// The grant a spent code yielded.
pub const CODE_GRANT: &str = "SELECT grant_id FROM authorization_codes WHERE code_hash = $1";

pub const INSERT_GRANT: &str = "INSERT INTO grants (id, client_id, user_id, scope, auth_time, created_at, \
     revoked_at, amr) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";

/// Stores a refresh token only while its grant is live.
pub const INSERT_REFRESH_TOKEN: &str = "INSERT INTO refresh_tokens (token_hash, grant_id, created_at, expires_at, \
     used_at) SELECT $1, $2, $3, $4, NULL WHERE EXISTS (SELECT 1 FROM grants WHERE id = $2 AND revoked_at IS NULL)";

pub const INSERT_AUDIT: &str =
    "INSERT INTO audit_log (at, kind, user_id, client_id, detail) VALUES ($1, $2, $3, $4, $5)";

/// Spends a refresh token for its successor (`$1` hash, `$2` now); changes
/// no row when it is spent already.
pub const SPEND_REFRESH_TOKEN_FOR_SUCCESSOR: &str =
    "UPDATE refresh_tokens SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL";

/// PostgreSQL: a code's whole redemption in one statement (one round trip,
/// one implicit transaction): spend the code (`$1` hash, `$2` now) for the
/// grant it yields (`$3`–`$10`: id, client, user, scope, auth time,
/// created, revoked, amr), store the refresh token (`$11`–`$13`: hash,
/// created, expires) while that grant is live, and the audit event
/// (`$14`–`$18`). `redeemed` is 0, and nothing changed, when the code was
/// spent already.
pub const PG_REDEEM_CODE: &str = "WITH spent AS (UPDATE authorization_codes SET consumed_at = $2, grant_id = $3 \
     WHERE code_hash = $1 AND consumed_at IS NULL RETURNING code_hash), \
     g AS (INSERT INTO grants (id, client_id, user_id, scope, auth_time, created_at, revoked_at, amr) \
     SELECT $3, $4, $5, $6, $7, $8, $9, $10 FROM spent RETURNING id, revoked_at), \
     r AS (INSERT INTO refresh_tokens (token_hash, grant_id, created_at, expires_at, used_at) \
     SELECT $11, id, $12, $13, NULL FROM g WHERE revoked_at IS NULL), \
     a AS (INSERT INTO audit_log (at, kind, user_id, client_id, detail) SELECT $14, $15, $16, $17, $18 FROM g) \
     SELECT count(*) AS redeemed FROM g";

/// PostgreSQL: a refresh token's rotation in one statement: spend it (`$1`
/// hash, `$2` now) while its grant (`$4`) is live, store the successor
/// (`$3` hash, `$5` created, `$6` expires) and the audit event (`$7`–`$11`).
/// `rotated` is 0, and nothing changed, when the token was spent already
/// or the grant is revoked ([`PG_REFRESH_TOKEN_UNSPENT`] tells which).
pub const PG_ROTATE_REFRESH_TOKEN: &str = "WITH spent AS (UPDATE refresh_tokens SET used_at = $2 \
     WHERE token_hash = $1 AND used_at IS NULL \
     AND EXISTS (SELECT 1 FROM grants WHERE id = $4 AND revoked_at IS NULL) RETURNING token_hash), \
     r AS (INSERT INTO refresh_tokens (token_hash, grant_id, created_at, expires_at, used_at) \
     SELECT $3, $4, $5, $6, NULL FROM spent), \
     a AS (INSERT INTO audit_log (at, kind, user_id, client_id, detail) SELECT $7, $8, $9, $10, $11 FROM spent) \
     SELECT count(*) AS rotated FROM spent";

/// Whether a refresh token (`$1`) is stored and not spent: after a rotation
/// that changed nothing, its grant was revoked rather than the token spent.
pub const PG_REFRESH_TOKEN_UNSPENT: &str =
    "SELECT EXISTS (SELECT 1 FROM refresh_tokens WHERE token_hash = $1 AND used_at IS NULL) AS unspent";
