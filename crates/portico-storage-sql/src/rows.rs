//! Rows to domain values, once for every driver: a driver adapts its row
//! type to [`Columns`] and calls these functions.

use portico_model::audit::AuditEvent;
use portico_model::client::{Client, LocalizedText};
use portico_model::key::SigningKeyRecord;
use portico_model::login::LoginProcess;
use portico_model::oauth::{AccessTokenState, AuthorizationCode, Grant, RefreshToken, StoredCode, StoredRefreshToken};
use portico_model::session::SsoSession;
use portico_model::user::User;
use portico_storage::Result;

use crate::{json, timestamp, timestamp_opt, uuid};

/// Typed access to the columns of one row.
pub trait Columns {
    /// # Errors
    /// For a missing column or another type.
    fn text(&self, column: &str) -> Result<String>;
    /// # Errors
    /// For a missing column or another type.
    fn text_opt(&self, column: &str) -> Result<Option<String>>;
    /// # Errors
    /// For a missing column or another type.
    fn int(&self, column: &str) -> Result<i64>;
    /// # Errors
    /// For a missing column or another type.
    fn int_opt(&self, column: &str) -> Result<Option<i64>>;
    /// # Errors
    /// For a missing column or another type.
    fn flag(&self, column: &str) -> Result<bool>;
    /// # Errors
    /// For a missing column or another type.
    fn bytes(&self, column: &str) -> Result<Vec<u8>>;
}

/// # Errors
/// For a damaged row.
pub fn client(row: &impl Columns) -> Result<Client> {
    Ok(Client {
        client_id: row.text("client_id")?,
        secret_hash: row.text("secret_hash")?,
        name: LocalizedText { ru: row.text("name_ru")?, en: row.text("name_en")? },
        redirect_uris: json(&row.text("redirect_uris")?)?,
        scopes: row.text("scopes")?.split(' ').filter(|s| !s.is_empty()).map(str::to_owned).collect(),
        require_consent: row.flag("require_consent")?,
        created_at: timestamp(row.int("created_at")?)?,
    })
}

/// # Errors
/// For a damaged row.
pub fn user(row: &impl Columns) -> Result<User> {
    Ok(User {
        id: uuid(&row.text("id")?)?,
        login: row.text("login")?,
        password_hash: row.text("password_hash")?,
        phone: row.text_opt("phone")?,
        email: row.text_opt("email")?,
        name: row.text_opt("name")?,
        phone_login_enabled: row.flag("phone_login_enabled")?,
        blocked: row.flag("blocked")?,
        created_at: timestamp(row.int("created_at")?)?,
    })
}

/// # Errors
/// For a damaged row.
pub fn signing_key(row: &impl Columns) -> Result<SigningKeyRecord> {
    Ok(SigningKeyRecord {
        kid: row.text("kid")?,
        private_sealed: row.bytes("private_sealed")?,
        created_at: timestamp(row.int("created_at")?)?,
        retired_at: timestamp_opt(row.int_opt("retired_at")?)?,
    })
}

/// # Errors
/// For a damaged row.
pub fn code(row: &impl Columns) -> Result<AuthorizationCode> {
    Ok(AuthorizationCode {
        code_hash: row.text("code_hash")?,
        client_id: row.text("client_id")?,
        user_id: uuid(&row.text("user_id")?)?,
        redirect_uri: row.text("redirect_uri")?,
        scope: row.text("scope")?,
        code_challenge: row.text("code_challenge")?,
        nonce: row.text_opt("nonce")?,
        auth_time: timestamp(row.int("auth_time")?)?,
        created_at: timestamp(row.int("created_at")?)?,
        expires_at: timestamp(row.int("expires_at")?)?,
        grant_id: row.text_opt("grant_id")?.as_deref().map(uuid).transpose()?,
        amr: amr(&row.text("amr")?),
    })
}

/// A code with its `consumed_at` column.
///
/// # Errors
/// For a damaged row.
pub fn stored_code(row: &impl Columns) -> Result<StoredCode> {
    Ok(StoredCode { code: code(row)?, spent: row.int_opt("consumed_at")?.is_some() })
}

/// # Errors
/// For a damaged row.
pub fn grant(row: &impl Columns) -> Result<Grant> {
    Ok(Grant {
        id: uuid(&row.text("id")?)?,
        client_id: row.text("client_id")?,
        user_id: uuid(&row.text("user_id")?)?,
        scope: row.text("scope")?,
        auth_time: timestamp(row.int("auth_time")?)?,
        created_at: timestamp(row.int("created_at")?)?,
        revoked_at: timestamp_opt(row.int_opt("revoked_at")?)?,
        amr: amr(&row.text("amr")?),
    })
}

/// A row of [`crate::queries::FIND_REFRESH_TOKEN`].
///
/// # Errors
/// For a damaged row.
pub fn stored_refresh_token(row: &impl Columns) -> Result<StoredRefreshToken> {
    let grant = grant(row)?;
    Ok(StoredRefreshToken {
        token: RefreshToken {
            token_hash: row.text("token_hash")?,
            grant_id: grant.id,
            created_at: timestamp(row.int("token_created_at")?)?,
            expires_at: timestamp(row.int("token_expires_at")?)?,
        },
        spent: row.int_opt("token_used_at")?.is_some(),
        grant,
    })
}

/// A row of [`crate::queries::ACCESS_TOKEN_STATE`].
///
/// # Errors
/// For a damaged row.
pub fn access_token_state(row: &impl Columns) -> Result<AccessTokenState> {
    Ok(AccessTokenState { grant_revoked: !row.flag("grant_live")?, token_revoked: row.flag("token_revoked")? })
}

/// # Errors
/// For a damaged row.
pub fn session(row: &impl Columns) -> Result<SsoSession> {
    Ok(SsoSession {
        token_hash: row.text("token_hash")?,
        user_id: uuid(&row.text("user_id")?)?,
        auth_time: timestamp(row.int("auth_time")?)?,
        created_at: timestamp(row.int("created_at")?)?,
        expires_at: timestamp(row.int("expires_at")?)?,
        amr: amr(&row.text("amr")?),
    })
}

/// An `amr` column (space-separated values) back to a list.
fn amr(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

/// # Errors
/// For a damaged row.
pub fn login_process(row: &impl Columns) -> Result<LoginProcess> {
    Ok(LoginProcess {
        id: uuid(&row.text("id")?)?,
        version: row.int("version")?,
        created_at: timestamp(row.int("created_at")?)?,
        expires_at: timestamp(row.int("expires_at")?)?,
        state: json(&row.text("state")?)?,
    })
}

/// # Errors
/// For a damaged row.
pub fn audit(row: &impl Columns) -> Result<AuditEvent> {
    Ok(AuditEvent {
        at: timestamp(row.int("at")?)?,
        kind: row.text("kind")?,
        user_id: row.text_opt("user_id")?.as_deref().map(uuid).transpose()?,
        client_id: row.text_opt("client_id")?,
        detail: json(&row.text("detail")?)?,
    })
}
