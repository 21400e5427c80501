//! Removing what has expired.

use crate::Result;
use async_trait::async_trait;
use time::OffsetDateTime;

/// A connection pool's state (for the metrics).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Connections {
    /// Connections serving an operation now.
    pub busy: u32,
    /// Open connections waiting for work.
    pub idle: u32,
    /// The most the pool opens.
    pub max: u32,
}

/// How many expired rows one clean-up pass removed, by kind.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CleanupReport {
    pub codes: u64,
    pub login_processes: u64,
    pub sessions: u64,
    pub refresh_tokens: u64,
    pub revoked_access_tokens: u64,
    pub grants: u64,
    pub signing_keys: u64,
    /// Remembered client assertion ids past their assertion's expiry.
    pub client_assertions: u64,
    /// One-time initial access tokens past their expiry.
    pub initial_access_tokens: u64,
    /// Pushed authorization requests past their expiry, never used.
    pub pushed_requests: u64,
}

impl CleanupReport {
    pub fn total(&self) -> u64 {
        self.codes
            + self.login_processes
            + self.sessions
            + self.refresh_tokens
            + self.revoked_access_tokens
            + self.grants
            + self.signing_keys
            + self.client_assertions
            + self.initial_access_tokens
            + self.pushed_requests
    }
}

#[async_trait]
pub trait Maintenance: Send + Sync {
    /// Which backend this is: `sqlite` or `postgres`.
    fn backend(&self) -> &'static str;
    /// The connection pool's state now, where the backend has a pool.
    fn connections(&self) -> Option<Connections>;
    /// Whether the database answers.
    ///
    /// # Errors
    /// [`StorageError::Unavailable`] when it does not.
    async fn ping(&self) -> Result<()>;
    /// Removes what can no longer be used at `now`: expired codes, login
    /// processes, sessions and refresh tokens; revocation records of expired
    /// access tokens; grants without a live refresh token whose access tokens
    /// have all expired (`access_token_ttl` after their last refresh token was
    /// spent or expired); signing keys retired before `keys_retired_before`;
    /// the ids of client assertions and the initial access tokens that
    /// have expired.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn delete_expired(
        &self,
        now: OffsetDateTime,
        access_token_ttl: time::Duration,
        keys_retired_before: OffsetDateTime,
    ) -> Result<CleanupReport>;
}
