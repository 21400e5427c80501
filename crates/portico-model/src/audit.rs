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
    /// Who made the change through an administrative channel (an
    /// [`Actor`] as text); `None` for what users and clients do themselves.
    pub actor: Option<String>,
}

/// Who made a change through an administrative channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// A machine with the admin token of this name: `token:<name>`.
    AdminToken(String),
    /// An operator in the console, by login: `operator:<login>`.
    Operator(String),
    /// The `portico` command line, on the database directly: `cli`.
    Cli,
    /// The bank's provisioning system over SCIM: `scim`.
    Scim,
    /// A third party over dynamic client registration (RFC 7591, 7592):
    /// `registration`.
    Registration,
    /// The user on their own account page (`/account`): `account`.
    Account,
}

impl std::fmt::Display for Actor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Actor::AdminToken(name) => write!(f, "token:{name}"),
            Actor::Operator(login) => write!(f, "operator:{login}"),
            Actor::Cli => f.write_str("cli"),
            Actor::Scim => f.write_str("scim"),
            Actor::Registration => f.write_str("registration"),
            Actor::Account => f.write_str("account"),
        }
    }
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
    UserDeactivated,
    UserActivated,
    KeyRotated,
    KeyRetired,
    SessionEnded,
    LogoutUndelivered,
    ClientCreated,
    ClientUpdated,
    ClientSecretRotated,
    ClientDeleted,
    ClientApproved,
    UserCreated,
    UserUpdated,
    UserPasswordSet,
    UserDeleted,
    MerchantCreated,
    MerchantKeyRotated,
    DeliveryResent,
    ReportTaskRetried,
    GrantRevoked,
    OperatorRoleSet,
    PermissionsImported,
    BrokerageDataLoaded,
    RegistrationTokenIssued,
    RegistrationTokenWithdrawn,
    PasskeyCreated,
    PasskeyUsed,
    PasskeyLocked,
    PasskeyRemoved,
    DeviceForgotten,
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
            AuditKind::UserDeactivated => "user.deactivated",
            AuditKind::UserActivated => "user.activated",
            AuditKind::KeyRotated => "key.rotated",
            AuditKind::KeyRetired => "key.retired",
            AuditKind::SessionEnded => "session.ended",
            AuditKind::LogoutUndelivered => "logout.undelivered",
            AuditKind::ClientCreated => "client.created",
            AuditKind::ClientUpdated => "client.updated",
            AuditKind::ClientSecretRotated => "client.secret_rotated",
            AuditKind::ClientDeleted => "client.deleted",
            AuditKind::ClientApproved => "client.approved",
            AuditKind::UserCreated => "user.created",
            AuditKind::UserUpdated => "user.updated",
            AuditKind::UserPasswordSet => "user.password_set",
            AuditKind::UserDeleted => "user.deleted",
            AuditKind::MerchantCreated => "merchant.created",
            AuditKind::MerchantKeyRotated => "merchant.key_rotated",
            AuditKind::DeliveryResent => "delivery.resent",
            AuditKind::ReportTaskRetried => "report_task.retried",
            AuditKind::GrantRevoked => "grant.revoked",
            AuditKind::OperatorRoleSet => "operator.role_set",
            AuditKind::PermissionsImported => "permissions.imported",
            AuditKind::BrokerageDataLoaded => "brokerage.loaded",
            AuditKind::RegistrationTokenIssued => "registration_token.issued",
            AuditKind::RegistrationTokenWithdrawn => "registration_token.withdrawn",
            AuditKind::PasskeyCreated => "passkey.created",
            AuditKind::PasskeyUsed => "passkey.used",
            AuditKind::PasskeyLocked => "passkey.locked",
            AuditKind::PasskeyRemoved => "passkey.removed",
            AuditKind::DeviceForgotten => "device.forgotten",
        }
    }
}

impl AuditEvent {
    pub fn new(at: OffsetDateTime, kind: AuditKind) -> Self {
        Self {
            at,
            kind: kind.as_str().to_owned(),
            user_id: None,
            client_id: None,
            detail: serde_json::Value::Null,
            actor: None,
        }
    }

    pub fn by(mut self, actor: &Actor) -> Self {
        self.actor = Some(actor.to_string());
        self
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
