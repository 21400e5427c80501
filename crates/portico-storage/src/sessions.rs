//! Single sign-on sessions.

use crate::Result;
use async_trait::async_trait;
use portico_model::audit::AuditEvent;
use portico_model::ids::{SessionHash, SessionId, UserId};
use portico_model::session::{EndedSession, LogoutNotice, NoticeOutcome, SsoSession};
use time::OffsetDateTime;
use uuid::Uuid;

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
    /// `logout_revokes_grants`, stores a back-channel [`LogoutNotice`] (due
    /// at `now`) for each client with a `backchannel_logout_uri` among
    /// those grants, and records `audit`. `None`, and nothing
    /// changed, when there was no such session: of two parallel calls
    /// exactly one ends it.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn end_session(&self, id: SessionId, now: OffsetDateTime, audit: &AuditEvent)
    -> Result<Option<EndedSession>>;
    /// Leases up to `limit` notices due at `now` (unleased, or their lease
    /// ran out) until `lease_until`, oldest due first. Parallel claims never
    /// lease one notice twice.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn claim_logout_notices(
        &self,
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
        limit: u32,
    ) -> Result<Vec<LogoutNotice>>;
    /// Records what became of a notice leased until `leased_until`. `false`,
    /// and nothing changed, when the lease is no longer this one's (it ran
    /// out and another worker claimed the notice).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn finish_logout_notice(
        &self,
        id: Uuid,
        leased_until: OffsetDateTime,
        outcome: &NoticeOutcome,
    ) -> Result<bool>;
}
