//! Single sign-on sessions.

use crate::Result;
use async_trait::async_trait;
use portico_model::audit::AuditEvent;
use portico_model::ids::{SessionHash, SessionId, UserId};
use portico_model::session::{EndedSession, SsoSession};
use time::OffsetDateTime;

#[async_trait]
pub trait SessionRepository: Send + Sync {
    /// # Errors
    /// Only when the store fails.
    async fn create_session(&self, session: &SsoSession) -> Result<()>;
    /// The session whose cookie hashes to `token_hash`, unless it has
    /// expired at `now`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_session(&self, token_hash: &SessionHash, now: OffsetDateTime) -> Result<Option<SsoSession>>;
    /// The session with this public id, unless it has expired at `now`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_session_by_id(&self, id: SessionId, now: OffsetDateTime) -> Result<Option<SsoSession>>;
    /// A user's sessions that have not expired at `now`, newest first.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn list_sessions(&self, user_id: UserId, now: OffsetDateTime) -> Result<Vec<SsoSession>>;
    /// Ends a session in one transaction: removes it, revokes the live
    /// grants issued under it to clients registered with
    /// `logout_revokes_grants`, and records `audit`. `None`, and nothing
    /// changed, when there was no such session: of two parallel calls
    /// exactly one ends it.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn end_session(&self, id: SessionId, now: OffsetDateTime, audit: &AuditEvent)
    -> Result<Option<EndedSession>>;
}
