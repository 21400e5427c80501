//! Security events.

use crate::ids::{ClientId, UserId};
use time::OffsetDateTime;

/// One entry of the audit log.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEvent {
    pub at: OffsetDateTime,
    /// What happened, e.g. `login.succeeded` (see [`AuditKind`]).
    pub kind: String,
    pub user_id: Option<UserId>,
    pub client_id: Option<ClientId>,
    /// Free-form details; never a secret.
    pub detail: serde_json::Value,
}

/// The kinds of security event Portico records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditKind {
    LoginSucceeded,
    LoginFailed,
    LoginBlockedUser,
    TokenIssued,
    TokenRefreshed,
    TokenRevoked,
    CodeReplayed,
    RefreshReplayed,
    UserBlocked,
    UserUnblocked,
    KeyRotated,
    SessionEnded,
    LogoutUndelivered,
}

impl AuditKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AuditKind::LoginSucceeded => "login.succeeded",
            AuditKind::LoginFailed => "login.failed",
            AuditKind::LoginBlockedUser => "login.blocked_user",
            AuditKind::TokenIssued => "token.issued",
            AuditKind::TokenRefreshed => "token.refreshed",
            AuditKind::TokenRevoked => "token.revoked",
            AuditKind::CodeReplayed => "code.replayed",
            AuditKind::RefreshReplayed => "refresh.replayed",
            AuditKind::UserBlocked => "user.blocked",
            AuditKind::UserUnblocked => "user.unblocked",
            AuditKind::KeyRotated => "key.rotated",
            AuditKind::SessionEnded => "session.ended",
            AuditKind::LogoutUndelivered => "logout.undelivered",
        }
    }
}

impl AuditEvent {
    pub fn new(at: OffsetDateTime, kind: AuditKind) -> Self {
        Self { at, kind: kind.as_str().to_owned(), user_id: None, client_id: None, detail: serde_json::Value::Null }
    }

    pub fn user(mut self, user_id: UserId) -> Self {
        self.user_id = Some(user_id);
        self
    }

    pub fn client(mut self, client_id: &ClientId) -> Self {
        self.client_id = Some(client_id.clone());
        self
    }

    pub fn detail(mut self, detail: serde_json::Value) -> Self {
        self.detail = detail;
        self
    }
}
