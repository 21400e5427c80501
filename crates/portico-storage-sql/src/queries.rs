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
