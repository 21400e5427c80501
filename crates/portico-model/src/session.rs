//! Browser single sign-on sessions.

use crate::audit::{AuditEvent, AuditKind};
use crate::ids::{ClientId, SessionHash, SessionId, UserId};
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
    /// The browser the session was opened in (its `User-Agent`, cut to
    /// [`crate::user_agent::MAX_KEPT`]), to name it to the user.
    pub user_agent: Option<String>,
}

impl SsoSession {
    /// The audit entry of this session's end: `session.ended` for its user,
    /// with its `sid` and `by`, how it ended (`logout`, `operator`,
    /// `replaced`, `limit`, …).
    pub fn ended_event(&self, by: &str, now: OffsetDateTime) -> AuditEvent {
        AuditEvent::new(now, AuditKind::SessionEnded)
            .user(self.user_id)
            .detail(serde_json::json!({ "sid": self.id, "by": by }))
    }
}

/// A device on which a user completed a login with a second factor: its
/// next logins ask no code while the trust lasts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedDevice {
    /// The device cookie's value. Never shown: a page names the device by
    /// a digest of it.
    pub device_id: String,
    pub trusted_at: OffsetDateTime,
    /// The browser it was trusted from, as for a session.
    pub user_agent: Option<String>,
}

/// What ending a session did, in the one transaction that ended it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndedSession {
    pub session: SsoSession,
    /// The grants that were live under the session when it ended. Those of
    /// clients registered with `logout_revokes_grants` are revoked now
    /// (`revoked_at` set); the others live on.
    pub grants: Vec<Grant>,
    /// Back-channel logouts stored for delivery: one per client with a
    /// `backchannel_logout_uri` among those grants.
    pub notices: u32,
}

impl EndedSession {
    /// The grants ending the session revoked (those of clients registered
    /// with `logout_revokes_grants`).
    pub fn revoked_grants(&self) -> impl Iterator<Item = &Grant> {
        self.grants.iter().filter(|g| g.revoked_at.is_some())
    }
}

/// A back-channel logout owed to a client (OpenID Connect Back-Channel
/// Logout 1.0): stored with the end of the session, in its transaction, and
/// delivered until the client acknowledges it or the retry window closes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogoutNotice {
    pub id: uuid::Uuid,
    pub client_id: ClientId,
    /// The client's `backchannel_logout_uri` when the session ended.
    pub uri: String,
    pub user_id: UserId,
    pub session_id: SessionId,
    pub created_at: OffsetDateTime,
    pub next_attempt_at: OffsetDateTime,
    /// Attempts made so far.
    pub attempts: u32,
    /// Set while a worker holds it: nobody else attempts it until then.
    pub lease_until: Option<OffsetDateTime>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
}

/// What became of a claimed [`LogoutNotice`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoticeOutcome {
    /// Acknowledged, or given up on: the notice is removed.
    Done,
    /// Try again at `at`; `error` says what went wrong.
    Retry { at: OffsetDateTime, error: String },
}
