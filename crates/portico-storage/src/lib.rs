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

use async_trait::async_trait;
use portico_model::audit::AuditEvent;
use portico_model::client::Client;
use portico_model::key::SigningKeyRecord;
use portico_model::login::LoginProcess;
use portico_model::notify::{Attempt, Delivery, Merchant, NotificationSettings, Outcome, StoredEvent};
use portico_model::oauth::{
    AccessTokenState, AuthorizationCode, Grant, Redemption, RefreshToken, Rotation, StoredCode, StoredRefreshToken,
};
use portico_model::permissions::PermissionModel;
use portico_model::reports::brokerage::Agreement;
use portico_model::reports::{ReportFile, ReportTask, ReportType, TaskOutcome, TaskStatus};
use portico_model::session::SsoSession;
use portico_model::user::User;
use time::OffsetDateTime;
use uuid::Uuid;

/// What one claim of due deliveries may take.
#[derive(Debug, Clone, Copy)]
pub struct DeliveryClaim<'a> {
    pub now: OffsetDateTime,
    pub lease_until: OffsetDateTime,
    /// Deliveries in all.
    pub limit: u32,
    /// Deliveries of one merchant.
    pub per_merchant: u32,
    /// Merchants to pass over (their worker is busy with them already).
    pub skip_merchants: &'a [String],
}

/// An attempt made under a lease, and what follows it.
#[derive(Debug, Clone)]
pub struct FinishedAttempt {
    pub attempt: Attempt,
    pub outcome: Outcome,
    /// The lease the attempt was made under.
    pub lease_until: OffsetDateTime,
}

/// Why a storage call failed.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// A unique key already exists (a client id, a user login, …).
    #[error("{0} already exists")]
    Conflict(String),
    /// The database could not be reached or gave up; retrying may help.
    #[error("the database is unavailable: {0}")]
    Unavailable(String),
    /// Anything else: a bug, a damaged row, a failed migration.
    #[error("storage error: {0}")]
    Other(String),
}

pub type Result<T, E = StorageError> = std::result::Result<T, E>;

#[async_trait]
pub trait ClientRepository: Send + Sync {
    /// # Errors
    /// [`StorageError::Conflict`] when the client id is taken.
    async fn create_client(&self, client: &Client) -> Result<()>;
    /// # Errors
    /// Only when the store fails.
    async fn find_client(&self, client_id: &str) -> Result<Option<Client>>;
    /// # Errors
    /// Only when the store fails.
    async fn list_clients(&self) -> Result<Vec<Client>>;
    /// Removes the client and everything issued to it. Returns whether it existed.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn delete_client(&self, client_id: &str) -> Result<bool>;
}

#[async_trait]
pub trait UserRepository: Send + Sync {
    /// # Errors
    /// [`StorageError::Conflict`] when the login is taken.
    async fn create_user(&self, user: &User) -> Result<()>;
    /// # Errors
    /// Only when the store fails.
    async fn find_user(&self, id: Uuid) -> Result<Option<User>>;
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

#[async_trait]
pub trait SigningKeyRepository: Send + Sync {
    /// Stores `key` only if there is no key at all (first start; several nodes
    /// may race). Returns whether it was stored.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn insert_first_signing_key(&self, key: &SigningKeyRecord) -> Result<bool>;
    /// Stores `key` as the active key and retires the previous one at `now`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn rotate_signing_key(&self, key: &SigningKeyRecord, now: OffsetDateTime) -> Result<()>;
    /// The `kid` of the key that signs now (cheap; checked before signing so
    /// that a rotation by another process takes effect at once).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn active_signing_kid(&self) -> Result<Option<String>>;
    /// Every stored key, newest first.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn list_signing_keys(&self) -> Result<Vec<SigningKeyRecord>>;
}

#[async_trait]
pub trait AuthorizationCodeRepository: Send + Sync {
    /// # Errors
    /// Only when the store fails.
    async fn insert_code(&self, code: &AuthorizationCode) -> Result<()>;
    /// The code with this hash, spent or not.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_code(&self, code_hash: &str) -> Result<Option<StoredCode>>;
    /// Redeems a code, atomically and in one transaction: spends it, stores
    /// `grant` and its first refresh token, links the grant to the code and
    /// records `audit`. Of parallel calls exactly one gets
    /// [`Redemption::Redeemed`]; the others store nothing and get
    /// [`Redemption::Replay`] (the code is then marked replayed).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn redeem_code(
        &self,
        code_hash: &str,
        now: OffsetDateTime,
        grant: &Grant,
        refresh: &RefreshToken,
        audit: &AuditEvent,
    ) -> Result<Redemption>;
    /// Spends a code without redeeming it (a failed presentation), or marks
    /// a spent one replayed; returns it as stored now (naming the grant its
    /// redemption created, if any).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn spend_code(&self, code_hash: &str, now: OffsetDateTime) -> Result<Option<AuthorizationCode>>;
}

#[async_trait]
pub trait GrantRepository: Send + Sync {
    /// # Errors
    /// Only when the store fails.
    async fn find_grant(&self, id: Uuid) -> Result<Option<Grant>>;
    /// Revokes a grant (and so every token issued along it). Returns whether
    /// a live grant was revoked.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn revoke_grant(&self, id: Uuid, now: OffsetDateTime) -> Result<bool>;
    /// Records the revocation of one access token until it would have expired.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn revoke_access_token(&self, jti: &str, expires_at: OffsetDateTime, now: OffsetDateTime) -> Result<()>;
    /// Revocation state of an access token issued along `grant_id`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn access_token_state(&self, grant_id: Uuid, jti: &str) -> Result<AccessTokenState>;
}

#[async_trait]
pub trait RefreshTokenRepository: Send + Sync {
    /// The refresh token with this hash, with its grant, spent or not.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_refresh_token(&self, token_hash: &str) -> Result<Option<StoredRefreshToken>>;
    /// Rotates a refresh token, atomically and in one transaction: spends
    /// `old_hash`, stores `successor` and records `audit`. Of parallel calls
    /// exactly one gets [`Rotation::Rotated`].
    ///
    /// # Errors
    /// Only when the store fails.
    async fn rotate_refresh_token(
        &self,
        old_hash: &str,
        now: OffsetDateTime,
        successor: &RefreshToken,
        audit: &AuditEvent,
    ) -> Result<Rotation>;
    /// Spends a refresh token without a successor (a failed presentation).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn spend_refresh_token(&self, token_hash: &str, now: OffsetDateTime) -> Result<()>;
}

#[async_trait]
pub trait SessionRepository: Send + Sync {
    /// # Errors
    /// Only when the store fails.
    async fn create_session(&self, session: &SsoSession) -> Result<()>;
    /// A session that has not expired at `now`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_session(&self, token_hash: &str, now: OffsetDateTime) -> Result<Option<SsoSession>>;
    /// # Errors
    /// Only when the store fails.
    async fn delete_session(&self, token_hash: &str) -> Result<()>;
}

#[async_trait]
pub trait LoginProcessRepository: Send + Sync {
    /// # Errors
    /// Only when the store fails.
    async fn create_login_process(&self, process: &LoginProcess) -> Result<()>;
    /// A process that has not expired at `now`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_login_process(&self, id: Uuid, now: OffsetDateTime) -> Result<Option<LoginProcess>>;
    /// Saves `process` if its stored version is still `process.version`, and
    /// bumps the version. Returns `false` when another request got there first.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn update_login_process(&self, process: &LoginProcess) -> Result<bool>;
    /// # Errors
    /// Only when the store fails.
    async fn delete_login_process(&self, id: Uuid) -> Result<()>;
}

#[async_trait]
pub trait AuditRepository: Send + Sync {
    /// # Errors
    /// Only when the store fails.
    async fn record_audit(&self, event: &AuditEvent) -> Result<()>;
    /// The newest events, newest first.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn recent_audit(&self, limit: u32) -> Result<Vec<AuditEvent>>;
}

/// Devices on which a user completed a login with a second factor.
#[async_trait]
pub trait DeviceRepository: Send + Sync {
    /// Trusts `device_id` for `user_id` from `now` on (again, if it was).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn trust_device(&self, user_id: Uuid, device_id: &str, now: OffsetDateTime) -> Result<()>;
    /// Whether `device_id` was trusted for `user_id` at or after `not_before`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn is_device_trusted(&self, user_id: Uuid, device_id: &str, not_before: OffsetDateTime) -> Result<bool>;
}

/// The scope groups each user granted each client on the consent step.
#[async_trait]
pub trait ConsentRepository: Send + Sync {
    /// The groups `user_id` granted `client_id`, if any.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_consent(&self, user_id: Uuid, client_id: &str) -> Result<Option<Vec<String>>>;
    /// Records that `user_id` grants `client_id` exactly `groups`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn grant_consent(&self, user_id: Uuid, client_id: &str, groups: &[String], now: OffsetDateTime)
    -> Result<()>;
}

/// One throttle counter of password attempts: per account from untrusted
/// devices, per trusted device, or per client address (the keys and the
/// policy are the identity crate's, `login::guard`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Throttle {
    /// Attempts counted since the last success: failed ones, and those
    /// still being checked.
    pub failures: u32,
    /// Attempts on the key are refused until then.
    pub locked_until: Option<OffsetDateTime>,
}

/// What counting an attempt on a throttle key asks for.
#[derive(Debug, Clone, Copy)]
pub struct CountAttempt<'a> {
    pub key: &'a str,
    pub now: OffsetDateTime,
    /// A count last changed before this starts again from zero.
    pub forget_before: OffsetDateTime,
    /// The count from which the attempt holds the key locked until
    /// `hold_until` while it is checked.
    pub hold_from: u32,
    pub hold_until: OffsetDateTime,
}

#[async_trait]
pub trait LoginGuardRepository: Send + Sync {
    /// The counter of `key` (zero when it has none, or when it was last
    /// changed before `forget_before`).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn throttle(&self, key: &str, forget_before: OffsetDateTime) -> Result<Throttle>;
    /// Counts an attempt on a key before the attempt is checked, in one
    /// atomic statement. `None`: the key is locked at `now` and nothing was
    /// counted. Otherwise the count including this attempt; of parallel
    /// calls each gets a different count. When the count reaches
    /// `hold_from`, the same statement locks the key until `hold_until`, so
    /// that parallel attempts wait for this one's outcome.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn count_attempt(&self, attempt: CountAttempt<'_>) -> Result<Option<u32>>;
    /// Takes back one counted attempt that was not checked after all, and
    /// the hold it set, if any (`hold_until`: the key's lock is removed if it
    /// is still exactly that).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn uncount_attempt(&self, key: &str, hold_until: Option<OffsetDateTime>) -> Result<()>;
    /// Locks `key` until `until`, unless it is locked for longer already.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn lock_throttle(&self, key: &str, until: OffsetDateTime) -> Result<()>;
    /// Forgets `key`'s count and lock (a success).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn clear_throttle(&self, key: &str) -> Result<()>;
    /// Removes the counters last changed before `before` whose lock (if
    /// any) ended before it too. Returns how many.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn remove_stale_throttles(&self, before: OffsetDateTime) -> Result<u64>;
}

/// Merchants of the notification service.
#[async_trait]
pub trait MerchantRepository: Send + Sync {
    /// # Errors
    /// [`StorageError::Conflict`] when the merchant id, public id or key is taken.
    async fn create_merchant(&self, merchant: &Merchant) -> Result<()>;
    /// # Errors
    /// Only when the store fails.
    async fn find_merchant(&self, merchant_id: &str) -> Result<Option<Merchant>>;
    /// The merchants of `merchant_ids` that exist, in no particular order.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_merchants(&self, merchant_ids: &[&str]) -> Result<Vec<Merchant>>;
    /// The merchant whose API key hashes to `key_hash`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_merchant_by_key(&self, key_hash: &str) -> Result<Option<Merchant>>;
    /// # Errors
    /// Only when the store fails.
    async fn list_merchants(&self) -> Result<Vec<Merchant>>;
    /// Replaces the merchant's key. Returns whether the merchant exists.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn set_merchant_key(&self, merchant_id: &str, key_hash: &str, key_sealed: &[u8]) -> Result<bool>;
    /// Replaces the merchant's notification settings. Returns whether the merchant exists.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn save_notification_settings(&self, merchant_id: &str, settings: &NotificationSettings) -> Result<bool>;
}

/// What recording a submitted event did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intake {
    /// Stored, with its pending delivery.
    Accepted,
    /// The same event was stored before; nothing changed.
    Duplicate,
    /// The event id was used before with other content; nothing changed.
    Reused,
}

/// Events other bank systems submitted, and their deliveries.
#[async_trait]
pub trait NotificationRepository: Send + Sync {
    /// Stores `event` and its first pending delivery in one transaction.
    /// An event id seen before with the same content is a
    /// [`Intake::Duplicate`] and changes nothing.
    ///
    /// # Errors
    /// [`StorageError::Conflict`] when the event id was used with other content.
    async fn record_event(&self, event: &StoredEvent, delivery: &Delivery) -> Result<Intake> {
        match self.record_events(&[(event.clone(), delivery.clone())]).await?.first() {
            Some(Intake::Reused) => Err(StorageError::Conflict("event id (with other content)".into())),
            Some(intake) => Ok(*intake),
            None => Err(StorageError::Other("an event was not recorded".into())),
        }
    }
    /// Stores each event and its first pending delivery, all in one
    /// transaction (a group commit: many submissions, one durable write).
    /// Returns what happened to each, in order: an event id seen before
    /// (also earlier in the same batch) with the same content is a
    /// [`Intake::Duplicate`], with other content [`Intake::Reused`]; neither
    /// changes anything.
    ///
    /// # Errors
    /// Only when the store fails; then nothing is stored.
    async fn record_events(&self, batch: &[(StoredEvent, Delivery)]) -> Result<Vec<Intake>>;
    /// # Errors
    /// Only when the store fails.
    async fn find_event(&self, event_id: &str) -> Result<Option<StoredEvent>>;
    /// The events of `event_ids` that exist, in no particular order.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_events(&self, event_ids: &[&str]) -> Result<Vec<StoredEvent>>;
    /// The deliveries of an event, oldest first.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn deliveries_of(&self, event_id: &str) -> Result<Vec<Delivery>>;
    /// Takes pending deliveries due by `claim.now` and leases them until
    /// `claim.lease_until`, atomically: concurrent callers (on any node)
    /// never take the same delivery. A leased delivery is due again when its
    /// lease runs out (its worker died), so its `next_attempt_at` becomes the
    /// lease's end. Oldest first; see [`DeliveryClaim`] for the bounds.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn claim_due_deliveries(&self, claim: &DeliveryClaim<'_>) -> Result<Vec<Delivery>>;
    /// Records each attempt and moves its delivery on by the outcome,
    /// releasing the lease, all in one transaction. A delivery whose lease
    /// has moved on (another worker claimed it after this lease ran out)
    /// keeps the other worker's state; the attempt is still recorded.
    ///
    /// # Errors
    /// Only when the store fails; then nothing is recorded.
    async fn finish_attempts(&self, finished: &[FinishedAttempt]) -> Result<()>;
    /// Gives leased deliveries back to the queue, due at `now`: each only
    /// while it still holds the lease it is named with.
    ///
    /// # Errors
    /// Only when the store fails (the leases then simply run out).
    async fn release_deliveries(&self, leases: &[(Uuid, OffsetDateTime)], now: OffsetDateTime) -> Result<()>;
    /// A merchant's deliveries, newest first: `status` filters, `offset` and
    /// `limit` page. Returns the page and the number of all that match.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn list_deliveries(
        &self,
        merchant_id: &str,
        status: Option<portico_model::notify::DeliveryStatus>,
        offset: u32,
        limit: u32,
    ) -> Result<(Vec<Delivery>, u64)>;
    /// # Errors
    /// Only when the store fails.
    async fn find_delivery(&self, id: Uuid) -> Result<Option<Delivery>>;
    /// Adds a delivery of a stored event (a resend).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn create_delivery(&self, delivery: &Delivery) -> Result<()>;
    /// The attempts of a delivery, in order.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn attempts_of(&self, delivery_id: Uuid) -> Result<Vec<Attempt>>;
    /// Removes at most `limit` (and at most [`MAX_REMOVED_DELIVERIES`])
    /// deliveries that finished (`DELIVERED` or `FAILED`) before `before`,
    /// with their attempts, and the events of theirs that have no delivery
    /// left, all in one transaction. Pending deliveries and their events are never touched.
    /// Returns how many of each went; fewer deliveries than asked for means
    /// none are left.
    ///
    /// # Errors
    /// Only when the store fails; then nothing is removed.
    async fn remove_finished_deliveries(&self, before: OffsetDateTime, limit: u32) -> Result<RemovedDeliveries>;
}

/// The most deliveries one
/// [`NotificationRepository::remove_finished_deliveries`] call removes: each
/// is one parameter of a statement on SQLite.
pub const MAX_REMOVED_DELIVERIES: u32 = 500;

/// What one [`NotificationRepository::remove_finished_deliveries`] call
/// removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RemovedDeliveries {
    pub deliveries: u64,
    pub attempts: u64,
    pub events: u64,
}

impl std::ops::AddAssign for RemovedDeliveries {
    fn add_assign(&mut self, other: Self) {
        self.deliveries += other.deliveries;
        self.attempts += other.attempts;
        self.events += other.events;
    }
}

/// The permission model (companies, roles, catalog, employees), read and
/// written whole; every save is a new revision.
#[async_trait]
pub trait PermissionRepository: Send + Sync {
    /// The revision of the stored model: 0 before the first save, then one
    /// more with every save. Cheap; read on every permission request.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn permission_revision(&self) -> Result<i64>;
    /// The whole model at one revision (a consistent snapshot).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn load_permissions(&self) -> Result<PermissionModel>;
    /// Replaces the stored model with `model`, as revision
    /// `model.revision + 1`, provided the stored revision is still
    /// `model.revision`; all in one transaction. Returns `false`, changing
    /// nothing, when another save came first.
    ///
    /// # Errors
    /// Only when the store fails (a model that names an unknown user among
    /// them: [`StorageError::Other`]).
    async fn save_permissions(&self, model: &PermissionModel) -> Result<bool>;
}

/// How many expired rows one clean-up pass removed, by kind.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CleanupReport {
    pub codes: u64,
    pub login_processes: u64,
    pub sessions: u64,
    pub refresh_tokens: u64,
    pub revoked_access_tokens: u64,
    pub grants: u64,
    pub signing_keys: u64,
}

impl CleanupReport {
    pub fn total(&self) -> u64 {
        self.codes
            + self.login_processes
            + self.sessions
            + self.refresh_tokens
            + self.revoked_access_tokens
            + self.grants
            + self.signing_keys
    }
}

#[async_trait]
pub trait Maintenance: Send + Sync {
    /// Which backend this is: `sqlite` or `postgres`.
    fn backend(&self) -> &'static str;
    /// Whether the database answers.
    ///
    /// # Errors
    /// [`StorageError::Unavailable`] when it does not.
    async fn ping(&self) -> Result<()>;
    /// Removes what can no longer be used at `now`: expired codes, login
    /// processes, sessions and refresh tokens; revocation records of expired
    /// access tokens; grants without a live refresh token whose access tokens
    /// have all expired (`access_token_ttl` after their last refresh token was
    /// spent or expired); signing keys retired before `keys_retired_before`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn delete_expired(
        &self,
        now: OffsetDateTime,
        access_token_ttl: time::Duration,
        keys_retired_before: OffsetDateTime,
    ) -> Result<CleanupReport>;
}

/// The brokerage data reports are made from, one document per agreement.
#[async_trait]
pub trait BrokerageRepository: Send + Sync {
    /// Stores each agreement, replacing the one of the same number whole,
    /// all in one transaction.
    ///
    /// # Errors
    /// Only when the store fails; then nothing changed.
    async fn save_agreements(&self, agreements: &[Agreement], now: OffsetDateTime) -> Result<()>;
    /// # Errors
    /// Only when the store fails.
    async fn find_agreement(&self, number: &str) -> Result<Option<Agreement>>;
    /// `(number, cnum)` of every agreement, by number.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn list_agreements(&self) -> Result<Vec<(String, String)>>;
}

/// Which report tasks a listing wants.
#[derive(Debug, Clone, Default)]
pub struct ReportTaskFilter {
    /// Tasks of these companies only (none: no tasks).
    pub cnums: Vec<String>,
    pub report_type: Option<ReportType>,
    pub agreement_number: Option<String>,
    pub account: Option<String>,
    /// Tasks whose period starts on or after this date.
    pub from: Option<time::Date>,
    /// Tasks whose period ends on or before this date.
    pub to: Option<time::Date>,
    pub status: Option<TaskStatus>,
    pub offset: u32,
    pub limit: u32,
}

/// Report tasks and their files.
#[async_trait]
pub trait ReportRepository: Send + Sync {
    /// Stores a new task; with `reuse`, returns instead the newest task that
    /// is not `FAILED` for the same company, type, agreement, account,
    /// period and file types, if there is one. Returns the task and whether
    /// it is new.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn create_report_task(&self, task: &ReportTask, reuse: bool) -> Result<(ReportTask, bool)>;
    /// # Errors
    /// Only when the store fails.
    async fn find_report_task(&self, id: Uuid) -> Result<Option<ReportTask>>;
    /// Newest first, with their files.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn list_report_tasks(&self, filter: &ReportTaskFilter) -> Result<Vec<ReportTask>>;
    /// Takes the oldest task that is `NEW`, or `IN_PROGRESS` with a lease
    /// that ran out (its worker died), makes it `IN_PROGRESS` leased until
    /// `lease_until` and counts the attempt; concurrent callers never take
    /// the same task.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn claim_report_task(&self, now: OffsetDateTime, lease_until: OffsetDateTime) -> Result<Option<ReportTask>>;
    /// Ends a task held under `lease_until`: `DONE` with its files or
    /// `FAILED` with the reason, in one transaction. Returns false (and
    /// changes nothing) when the lease is no longer the caller's.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn finish_report_task(
        &self,
        id: Uuid,
        lease_until: OffsetDateTime,
        outcome: &TaskOutcome,
        now: OffsetDateTime,
    ) -> Result<bool>;
    /// A file and the company of its task.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_report_file(&self, id: Uuid) -> Result<Option<(ReportFile, String)>>;
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
