//! Passkeys (WebAuthn credentials) per user.

use crate::Result;
use async_trait::async_trait;
use portico_model::audit::AuditEvent;
use portico_model::ids::UserId;
use portico_model::passkey::Passkey;
use time::OffsetDateTime;
use uuid::Uuid;

/// What storing a new passkey came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasskeyStored {
    Stored,
    /// Its credential id is stored already (for this user or another).
    CredentialTaken,
    /// The user keeps [`portico_model::passkey::MAX_PER_USER`] passkeys already.
    TooMany,
    /// The user does not exist (any more).
    NoUser,
}

/// What the login needs to know of a user's passkeys, in one read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PasskeySummary {
    /// Passkeys the user keeps, locked ones included.
    pub kept: usize,
    /// Of those, the ones not locked (that can sign in).
    pub usable: usize,
    /// When the user last declined the offer to create one after a login.
    pub offer_declined_at: Option<OffsetDateTime>,
}

#[async_trait]
pub trait PasskeyRepository: Send + Sync {
    /// Stores a new passkey and records `audit`, in one write, unless
    /// [`PasskeyStored`] says why not (then nothing changed). Of parallel
    /// calls for one user, no more than the limit are stored.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn insert_passkey(&self, passkey: &Passkey, audit: &AuditEvent) -> Result<PasskeyStored>;
    /// A user's passkeys, oldest first.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn passkeys_of(&self, user_id: UserId) -> Result<Vec<Passkey>>;
    /// The passkeys of several users (a page of a list), in one read,
    /// oldest first; each carries its `user_id`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn passkeys_of_users(&self, user_ids: &[UserId]) -> Result<Vec<Passkey>>;
    /// The passkey of a credential id (Base64url), of whichever user.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_passkey(&self, credential_id: &str) -> Result<Option<Passkey>>;
    /// Records a use with the counter `sign_count` and the credential as
    /// the use left it, and `audit`, in one write — only while the passkey
    /// is unlocked and the counter advances from the stored one
    /// ([`Passkey::counter_advances`]). Whether it was recorded: of
    /// parallel uses showing one counter value, exactly one is.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn record_passkey_use(
        &self,
        id: Uuid,
        credential: &str,
        sign_count: u32,
        now: OffsetDateTime,
        audit: &AuditEvent,
    ) -> Result<bool>;
    /// Locks a passkey (a possible clone) and records `audit`; whether it
    /// was unlocked before.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn lock_passkey(&self, id: Uuid, now: OffsetDateTime, audit: &AuditEvent) -> Result<bool>;
    /// Renames one of `user_id`'s passkeys; whether there was such a passkey.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn rename_passkey(&self, user_id: UserId, id: Uuid, name: &str) -> Result<bool>;
    /// Removes one of `user_id`'s passkeys and records `audit`; whether
    /// there was such a passkey (of parallel calls exactly one removes it).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn delete_passkey(&self, user_id: UserId, id: Uuid, audit: &AuditEvent) -> Result<bool>;
    /// How many passkeys `user_id` keeps and can use, and when they last
    /// declined the offer to create one.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn passkey_summary(&self, user_id: UserId) -> Result<PasskeySummary>;
    /// Records that `user_id` declined the offer to create a passkey at
    /// `at` (the latest decline is kept).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn decline_passkey_offer(&self, user_id: UserId, at: OffsetDateTime) -> Result<()>;
}
