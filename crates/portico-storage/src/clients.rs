//! OAuth clients.

use crate::{KeyPage, Result, Update};
use async_trait::async_trait;
use portico_model::client::Client;
use portico_model::ids::ClientId;
use time::OffsetDateTime;

#[async_trait]
pub trait ClientRepository: Send + Sync {
    /// # Errors
    /// [`StorageError::Conflict`] when the client id is taken.
    async fn create_client(&self, client: &Client) -> Result<()>;
    /// # Errors
    /// Only when the store fails.
    async fn find_client(&self, client_id: &ClientId) -> Result<Option<Client>>;
    /// The clients of `page`, by id: only the registrations held for an
    /// operator's approval (`awaiting_approval` `Some(true)`), only the
    /// others (`Some(false)`), or all of them (`None`).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn list_clients(&self, page: KeyPage<'_>, awaiting_approval: Option<bool>) -> Result<Vec<Client>>;
    /// Registrations held for an operator's approval
    /// (`registration.require_approval`), oldest first, at most `limit`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn held_clients(&self, limit: u32) -> Result<Vec<Client>>;
    /// Removes the client and everything issued to it. Returns whether it existed.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn delete_client(&self, client_id: &ClientId) -> Result<bool>;
    /// Replaces everything of the client but its id and creation time (the
    /// secret hash included), if the stored client is still at
    /// `client.revision`; the stored revision then goes one up.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn update_client(&self, client: &Client) -> Result<Update>;
    /// Remembers that an assertion of `client_id` with `jti` was accepted,
    /// until `expires_at`. Returns `false`, remembering nothing, when that
    /// `jti` of the client is remembered already and has not expired at
    /// `now`: a replay. Atomic across every node sharing the store.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn remember_client_assertion(
        &self,
        client_id: &ClientId,
        jti: &str,
        expires_at: OffsetDateTime,
        now: OffsetDateTime,
    ) -> Result<bool>;
    /// Stores a one-time initial access token (its hash) that registers one
    /// client until `expires_at`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn insert_initial_access_token(
        &self,
        token_hash: &str,
        created_at: OffsetDateTime,
        expires_at: OffsetDateTime,
    ) -> Result<()>;
    /// Stores `client` (as [`Self::create_client`]) and, in the same
    /// atomic write, spends the one-time initial access token with
    /// `token_hash` that registered it: `false`, and nothing stored, unless
    /// the token exists, is unspent and has not expired at the client's
    /// `created_at`. Of parallel calls with one token exactly one stores its
    /// client, on every node sharing the store; a write that fails (the
    /// client id taken, the store unreachable) leaves the token unspent.
    ///
    /// # Errors
    /// [`StorageError::Conflict`] when the client id is taken; the store
    /// failed.
    async fn create_client_spending(&self, client: &Client, token_hash: &str) -> Result<bool>;
    /// The one-time initial access tokens neither spent nor expired at
    /// `now`, oldest first.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn unspent_initial_access_tokens(&self, now: OffsetDateTime) -> Result<Vec<IssuedAccessToken>>;
    /// Withdraws the unspent initial access token whose
    /// [`IssuedAccessToken::id`] is `id`: it registers nothing from now on.
    /// Whether there was one.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn withdraw_initial_access_token(&self, id: &str) -> Result<bool>;
}

/// A one-time initial access token as operators see it (never the token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedAccessToken {
    /// The first [`IssuedAccessToken::ID_LEN`] hex digits of the token's
    /// stored hash: names it without disclosing it.
    pub id: String,
    pub created_at: OffsetDateTime,
    pub expires_at: OffsetDateTime,
}

impl IssuedAccessToken {
    pub const ID_LEN: usize = 16;

    /// The id of the token whose stored hash is `token_hash`.
    #[must_use]
    pub fn id_of(token_hash: &str) -> String {
        token_hash.chars().take(Self::ID_LEN).collect()
    }
}
