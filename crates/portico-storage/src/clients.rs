//! OAuth clients.

use crate::Result;
use async_trait::async_trait;
use portico_model::client::Client;
use portico_model::ids::ClientId;

#[async_trait]
pub trait ClientRepository: Send + Sync {
    /// # Errors
    /// [`StorageError::Conflict`] when the client id is taken.
    async fn create_client(&self, client: &Client) -> Result<()>;
    /// # Errors
    /// Only when the store fails.
    async fn find_client(&self, client_id: &ClientId) -> Result<Option<Client>>;
    /// # Errors
    /// Only when the store fails.
    async fn list_clients(&self) -> Result<Vec<Client>>;
    /// Removes the client and everything issued to it. Returns whether it existed.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn delete_client(&self, client_id: &ClientId) -> Result<bool>;
    /// Replaces everything of the client but its id and creation time (the
    /// secret hash included). Returns whether it exists.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn update_client(&self, client: &Client) -> Result<bool>;
}
