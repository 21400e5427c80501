//! Column lists both backends read by name: their schemas name these
//! columns alike, so each list is written once.

/// A user's columns, in the order the backends' `user_named` reads them.
pub const USER: [&str; 12] = [
    "id",
    "login",
    "password_hash",
    "phone",
    "email",
    "name",
    "phone_login_enabled",
    "blocked",
    "deactivated",
    "created_at",
    "provisioned",
    "revision",
];

/// The same columns of a user joined as `u` to another table's row (a
/// code's, a refresh token's), named so that they cannot collide with its
/// own: the select list.
pub const OWNER_SELECT: &str = "u.id AS owner_id, u.login AS owner_login, \
     u.password_hash AS owner_password_hash, u.phone AS owner_phone, u.email AS owner_email, u.name AS owner_name, \
     u.phone_login_enabled AS owner_phone_login_enabled, u.blocked AS owner_blocked, \
     u.deactivated AS owner_deactivated, u.created_at AS owner_created_at, u.provisioned AS owner_provisioned, \
     u.revision AS owner_revision";

/// The names [`OWNER_SELECT`] gives them, in the order of [`USER`].
pub const OWNER: [&str; 12] = [
    "owner_id",
    "owner_login",
    "owner_password_hash",
    "owner_phone",
    "owner_email",
    "owner_name",
    "owner_phone_login_enabled",
    "owner_blocked",
    "owner_deactivated",
    "owner_created_at",
    "owner_provisioned",
    "owner_revision",
];

/// An authorization code's columns.
pub const CODE: &str = "code_hash, client_id, user_id, redirect_uri, scope, code_challenge, nonce, auth_time, \
                        created_at, expires_at, grant_id, amr, session_id, dpop_jkt";

#[cfg(test)]
mod tests {
    #[test]
    fn the_owner_names_are_the_user_columns_prefixed_in_the_select_list() {
        for (column, owner) in super::USER.iter().zip(super::OWNER) {
            assert_eq!(owner, format!("owner_{column}"));
            assert!(super::OWNER_SELECT.contains(&format!("u.{column} AS {owner}")), "{column}");
        }
        assert_eq!(super::OWNER_SELECT.matches(" AS ").count(), super::USER.len());
    }
}
