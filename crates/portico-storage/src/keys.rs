//! Token signing keys.

use crate::Result;
use async_trait::async_trait;
use portico_model::key::SigningKeyRecord;
use time::OffsetDateTime;

#[async_trait]
pub trait SigningKeyRepository: Send + Sync {
    /// Stores `key` only if there is no key of its algorithm at all (first
    /// start; several nodes may race). Returns whether it was stored.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn insert_first_signing_key(&self, key: &SigningKeyRecord) -> Result<bool>;
    /// Stores `key` as its algorithm's active key and retires that
    /// algorithm's previous one at `now`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn rotate_signing_key(&self, key: &SigningKeyRecord, now: OffsetDateTime) -> Result<()>;
    /// Retires the active key of `alg` at `now` without a successor (the
    /// algorithm is no longer signed with); returns its `kid`, `None` when
    /// `alg` had no active key.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn retire_signing_key(&self, alg: &str, now: OffsetDateTime) -> Result<Option<String>>;
    /// The `kid` of the key that signs with `alg` now (cheap; checked before
    /// signing so that a rotation by another process takes effect at once).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn active_signing_kid(&self, alg: &str) -> Result<Option<String>>;
    /// Every stored key, newest first.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn list_signing_keys(&self) -> Result<Vec<SigningKeyRecord>>;
}
