//! Browser single sign-on sessions.

use crate::ids::{SessionHash, SessionId, UserId};
use crate::oauth::Grant;
use time::OffsetDateTime;

/// What the SSO cookie stands for. The cookie holds a random token; only its
/// hash is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SsoSession {
    /// The public id (`sid`), named by the codes and grants issued under it.
    pub id: SessionId,
    pub token_hash: SessionHash,
    pub user_id: UserId,
    /// When the user last authenticated interactively.
    pub auth_time: OffsetDateTime,
    pub created_at: OffsetDateTime,
    pub expires_at: OffsetDateTime,
    /// How the user authenticated (RFC 8176).
    pub amr: Vec<String>,
}

/// What ending a session did, in the one transaction that ended it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndedSession {
    pub session: SsoSession,
    /// The grants that were live under the session when it ended. Those of
    /// clients registered with `logout_revokes_grants` are revoked now
    /// (`revoked_at` set); the others live on.
    pub grants: Vec<Grant>,
}
