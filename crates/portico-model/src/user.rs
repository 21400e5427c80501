//! End users of the bank's online services.

use crate::ids::UserId;
use time::OffsetDateTime;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub id: UserId,
    /// The login name typed on the `username-password` step; unique.
    pub login: String,
    /// Argon2id PHC string.
    pub password_hash: String,
    /// E.164 phone number, e.g. `+79001234567`.
    pub phone: Option<String>,
    pub email: Option<String>,
    /// Full name for the `profile` scope.
    pub name: Option<String>,
    /// Whether the user may start a login with the phone number.
    pub phone_login_enabled: bool,
    /// Blocked by an operator: no login, and liveness fails for the user's
    /// tokens, until an operator unblocks them.
    pub blocked: bool,
    /// Deactivated by the provisioning system (SCIM `active: false`): the
    /// same effects as a block, until the provisioning system activates
    /// them again. Apart from `blocked`: neither lifts the other.
    pub deactivated: bool,
    pub created_at: OffsetDateTime,
    /// What the bank's provisioning system (SCIM) set beyond Portico's own
    /// fields, kept to be returned as sent: `externalId`, the parts of the
    /// name, contact values as typed, the enterprise extension. `None` for
    /// users made otherwise.
    pub provisioned: Option<serde_json::Value>,
    /// Goes one up with each change of the fields above; a change made
    /// from an older read is refused by the store (two changes at once
    /// never undo each other).
    pub revision: u64,
}

impl User {
    /// Whether the user may sign in and use their tokens: neither blocked
    /// by an operator nor deactivated by the provisioning system.
    pub fn may_sign_in(&self) -> bool {
        !self.blocked && !self.deactivated
    }
}

/// What an operator (a Portico user who runs Portico) may do in the admin
/// API and the console. Ordered: `Admin` may do all `Support` may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OperatorRole {
    /// Read users, their sessions and grants, and the audit log; block and
    /// unblock users; end sessions; revoke grants.
    Support,
    /// Everything.
    Admin,
}

impl OperatorRole {
    pub fn as_str(self) -> &'static str {
        match self {
            OperatorRole::Support => "support",
            OperatorRole::Admin => "admin",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "support" => Some(OperatorRole::Support),
            "admin" => Some(OperatorRole::Admin),
            _ => None,
        }
    }
}
