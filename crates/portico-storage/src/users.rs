//! End users and their credentials.

use crate::Result;
use async_trait::async_trait;
use portico_model::ids::UserId;
use portico_model::user::User;
use time::OffsetDateTime;

#[async_trait]
pub trait UserRepository: Send + Sync {
    /// # Errors
    /// [`StorageError::Conflict`] when the login is taken.
    async fn create_user(&self, user: &User) -> Result<()>;
    /// # Errors
    /// Only when the store fails.
    async fn find_user(&self, id: UserId) -> Result<Option<User>>;
    /// # Errors
    /// Only when the store fails.
    async fn find_user_by_login(&self, login: &str) -> Result<Option<User>>;
    /// Every user with this (normalized, E.164) phone number, in login order.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_users_by_phone(&self, phone: &str) -> Result<Vec<User>>;
    /// # Errors
    /// Only when the store fails.
    async fn list_users(&self) -> Result<Vec<User>>;
    /// Blocks or unblocks a user. Blocking also revokes every grant of the
    /// user and ends the user's SSO sessions, in one transaction. Returns the
    /// user, or `None` when the login is unknown.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn set_user_blocked(&self, login: &str, blocked: bool, now: OffsetDateTime) -> Result<Option<User>>;
}
