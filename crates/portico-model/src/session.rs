//! Browser single sign-on sessions.

use crate::ids::{SessionHash, UserId};
use time::OffsetDateTime;

/// What the SSO cookie stands for. The cookie holds a random token; only its
/// hash is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SsoSession {
    pub token_hash: SessionHash,
    pub user_id: UserId,
    /// When the user last authenticated interactively.
    pub auth_time: OffsetDateTime,
    pub created_at: OffsetDateTime,
    pub expires_at: OffsetDateTime,
    /// How the user authenticated (RFC 8176).
    pub amr: Vec<String>,
}
