//! The SSO session: after a completed login the browser holds cookie
//! `svc.session` (a random token; only its hash is stored), and later
//! authorize requests issue codes without a new login.

use axum::http::HeaderMap;
use portico_model::audit::Actor;
use portico_model::ids::{SessionHash, SessionId, UserId};
use portico_model::session::{EndedSession, SsoSession};
use portico_storage::{Storage, StorageError};
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
    let Some(session) = from_cookie(identity, headers, now).await? else {
        return Ok(None);
    };
    match identity.store.find_user(session.user_id).await? {
        Some(user) if user.may_sign_in() => Ok(Some(session)),
        _ => Ok(None),
    }
}

/// The unexpired session the browser's cookie names, whoever its user.
///
/// # Errors
/// When storage fails.
pub async fn from_cookie(
    identity: &Identity,
    headers: &HeaderMap,
    now: OffsetDateTime,
) -> Result<Option<SsoSession>, StorageError> {
    let Some(token) = cookies::get(headers, cookies::SESSION) else {
        return Ok(None);
    };
    identity.store.find_session(&SessionHash::new(portico_crypto::hash::token_hash(token)), now).await
}

/// A new session `id` for `user_id`, opened in the browser `user_agent`,
/// to be stored, and the token its cookie carries ([`set_cookie`] once it
/// is stored).
pub fn new(
    identity: &Identity,
    id: SessionId,
    user_id: UserId,
    amr: Vec<String>,
    user_agent: Option<String>,
    now: OffsetDateTime,
) -> (SsoSession, String) {
    let token = portico_crypto::random::token();
    let session = SsoSession {
        id,
        token_hash: SessionHash::new(portico_crypto::hash::token_hash(&token)),
        user_id,
        auth_time: now,
        created_at: now,
        expires_at: now + identity.settings.session_ttl,
        amr,
        user_agent,
    };
    (session, token)
}

/// Sets the cookie of a stored session made by [`new`].
pub fn set_cookie(identity: &Identity, token: &str, set: &mut SetCookies) {
    set.set(cookies::SESSION, token, Some(identity.settings.session_ttl.whole_seconds()));
}

/// Ends a session: removes it and revokes the grants issued under it to
/// clients that asked for that (`logout_revokes_grants`), in one
/// transaction with its audit event. `by` says how it ended (`logout`,
/// `operator`, `user blocked`); `actor`, who ended it through an
/// administrative channel. `None` when the session was gone already.
///
/// # Errors
/// When storage fails.
pub async fn end(
    store: &dyn Storage,
    session: &SsoSession,
    by: &str,
    actor: Option<&Actor>,
    now: OffsetDateTime,
) -> Result<Option<EndedSession>, StorageError> {
    let mut event = session.ended_event(by, now);
    if let Some(actor) = actor {
        event = event.by(actor);
    }
    let ended = store.end_session(session.id, now, &event).await?;
    if let Some(ended) = &ended {
        self::ended(ended, by);
    }
    Ok(ended)
}

/// Counts and logs a session that ended `by` some cause ([`end`]; a login
/// beyond `login.max_sessions_per_user` ends the oldest in its own write).
pub fn ended(ended: &EndedSession, by: &str) {
    let revoked = ended.revoked_grants().count();
    crate::tokens::count_revocation("grant", "session_end", revoked as u64);
    tracing::info!(sid = %ended.session.id, by, grants = ended.grants.len(), revoked, "session ended");
}
