//! What Portico stores, as one trait per aggregate, without saying where.
//!
//! Two crates implement every trait here: `portico-storage-sqlite` (the
//! embedded default) and `portico-storage-pg` (production). The server holds
//! an `Arc<dyn Storage>` and never knows which one it has. The contract test
//! suite in `portico-tests` runs the same stories against both.
//!
//! Conventions:
//! - Secrets (codes, refresh tokens, session tokens) arrive already hashed.
//! - "Find" methods return `Ok(None)` for a missing row; errors are reserved
//!   for the store itself failing.
//! - Every method that changes more than one row does it in one transaction.

mod audit;
mod clients;
pub mod columns;
mod error;
mod keys;
mod login;
mod maintenance;
pub mod memory;
mod notify;
mod oauth;
mod passkeys;
mod permissions;
mod reports;
mod sessions;
pub mod trace;
mod users;

pub use audit::*;
pub use clients::*;
pub use error::*;
pub use keys::*;
pub use login::*;
pub use maintenance::*;
pub use notify::*;
pub use oauth::*;
pub use passkeys::*;
pub use permissions::*;
pub use reports::*;
pub use sessions::*;
pub use users::*;

/// What an update made at a read revision did (a client's, a user's): two
/// changes made at once from the same read never undo each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Update {
    /// Written; the stored revision is one higher.
    Updated,
    /// There is no such row.
    Missing,
    /// The row was changed since it was read (another revision is stored),
    /// and nothing was written: read it again and make the change on what
    /// is stored now.
    Outdated,
}

/// A stretch of a list kept in the order of its key (a client's id, a
/// merchant's id, an agreement's number): the entries whose key sorts
/// after `after` in the store's order of text, at most `limit` of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyPage<'a> {
    pub after: Option<&'a str>,
    pub limit: u32,
}

impl KeyPage<'_> {
    /// The whole list, for the commands that print it all.
    pub const ALL: KeyPage<'static> = KeyPage { after: None, limit: u32::MAX };

    /// `limit` as SQL binds it.
    #[must_use]
    pub fn sql_limit(&self) -> i64 {
        i64::from(self.limit)
    }
}

/// Everything Portico stores.
pub trait Storage:
    ClientRepository
    + UserRepository
    + SigningKeyRepository
    + AuthorizationCodeRepository
    + GrantRepository
    + RefreshTokenRepository
    + SessionRepository
    + LoginProcessRepository
    + AuditRepository
    + DeviceRepository
    + PasskeyRepository
    + ConsentRepository
    + LoginGuardRepository
    + MerchantRepository
    + NotificationRepository
    + PermissionRepository
    + BrokerageRepository
    + ReportRepository
    + Maintenance
{
}

impl<T> Storage for T where
    T: ClientRepository
        + UserRepository
        + SigningKeyRepository
        + AuthorizationCodeRepository
        + GrantRepository
        + RefreshTokenRepository
        + SessionRepository
        + LoginProcessRepository
        + AuditRepository
        + DeviceRepository
        + PasskeyRepository
        + ConsentRepository
        + LoginGuardRepository
        + MerchantRepository
        + NotificationRepository
        + PermissionRepository
        + BrokerageRepository
        + ReportRepository
        + Maintenance
{
}
