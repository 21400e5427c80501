//! Single sign-on sessions.

use crate::Result;
use async_trait::async_trait;
use portico_model::ids::SessionHash;
use portico_model::session::SsoSession;
use time::OffsetDateTime;

#[async_trait]
pub trait SessionRepository: Send + Sync {
    /// # Errors
    /// Only when the store fails.
    async fn create_session(&self, session: &SsoSession) -> Result<()>;
    /// A session that has not expired at `now`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_session(&self, token_hash: &SessionHash, now: OffsetDateTime) -> Result<Option<SsoSession>>;
    /// # Errors
    /// Only when the store fails.
    async fn delete_session(&self, token_hash: &SessionHash) -> Result<()>;
}
