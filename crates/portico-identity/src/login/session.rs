//! The SSO session: after a completed login the browser holds cookie
//! `svc.session` (a random token; only its hash is stored), and later
//! authorize requests issue codes without a new login.

use axum::http::HeaderMap;
use portico_model::ids::{SessionHash, UserId};
use portico_model::session::SsoSession;
use portico_storage::StorageError;
use time::OffsetDateTime;

use crate::Identity;
use crate::cookies::{self, SetCookies};

/// The live session of the browser, if its user may still log in.
///
/// # Errors
/// When storage fails.
pub async fn current(
    identity: &Identity,
    headers: &HeaderMap,
    now: OffsetDateTime,
) -> Result<Option<SsoSession>, StorageError> {
    let Some(token) = cookies::get(headers, cookies::SESSION) else {
        return Ok(None);
    };
    let hash = SessionHash::new(portico_crypto::hash::token_hash(token));
    let Some(session) = identity.store.find_session(&hash, now).await? else {
        return Ok(None);
    };
    match identity.store.find_user(session.user_id).await? {
        Some(user) if !user.blocked => Ok(Some(session)),
        _ => Ok(None),
    }
}

/// Opens a session for `user_id` and sets its cookie.
///
/// # Errors
/// When storage fails.
pub async fn open(
    identity: &Identity,
    user_id: UserId,
    amr: Vec<String>,
    now: OffsetDateTime,
    set: &mut SetCookies,
) -> Result<(), StorageError> {
    let token = portico_crypto::random::token();
    let ttl = identity.settings.session_ttl;
    identity
        .store
        .create_session(&SsoSession {
            token_hash: SessionHash::new(portico_crypto::hash::token_hash(&token)),
            user_id,
            auth_time: now,
            created_at: now,
            expires_at: now + ttl,
            amr,
        })
        .await?;
    set.set(cookies::SESSION, &token, Some(ttl.whole_seconds()));
    Ok(())
}
