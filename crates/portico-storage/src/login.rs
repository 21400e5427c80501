//! The browser login: processes, trusted devices, consents and password throttles.

use crate::Result;
use async_trait::async_trait;
use portico_model::audit::AuditEvent;
use portico_model::ids::{ClientId, LoginProcessId, SessionHash, UserId};
use portico_model::login::LoginProcess;
use portico_model::session::{EndedSession, SsoSession, TrustedDevice};
use time::OffsetDateTime;
use uuid::Uuid;

#[async_trait]
pub trait LoginProcessRepository: Send + Sync {
    /// # Errors
    /// Only when the store fails.
    async fn create_login_process(&self, process: &LoginProcess) -> Result<()>;
    /// Stores `process` and, in the same atomic write, takes the pushed
    /// authorization request (RFC 9126) with the hash `request_hash` that
    /// the process serves: the process's client pushed it and it has not
    /// expired at the process's `created_at`. Returns `false`, and stores
    /// nothing, when that request is no longer there (a parallel request
    /// took it, or it expired): of parallel calls exactly one stores its
    /// process. A write that fails leaves the request for a retry.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn create_login_process_taking(&self, process: &LoginProcess, request_hash: &str) -> Result<bool>;
    /// A process that has not expired at `now`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_login_process(&self, id: LoginProcessId, now: OffsetDateTime) -> Result<Option<LoginProcess>>;
    /// Saves `process` if its stored version is still `process.version`, and
    /// bumps the version. Returns `false` when another request got there first.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn update_login_process(&self, process: &LoginProcess) -> Result<bool>;
    /// Saves a completed `process` as [`LoginProcessRepository::update_login_process`]
    /// does and, only when it was saved, opens the session, trusts the
    /// device and records the audit event of `completion`: all of it or
    /// nothing, in one atomic write. A session opened for a user who then
    /// holds more than `completion.session_limit` live sessions ends the
    /// oldest others (by `created_at`; within one second in no set order)
    /// in the same write, each as [`crate::SessionRepository::end_session`]
    /// ends one, recorded `session.ended` with `by: "limit"`: completions
    /// for one user take turns, so parallel logins leave exactly the limit.
    /// Before the limit is counted, a session opened ends the live one the
    /// browser presented (`completion.replaces`, whoever its user),
    /// recorded with `by: "replaced"`. Returns the sessions so ended, or
    /// `None` (and stores nothing) when another request got there first or
    /// the user it opens a session or trusts a device for is gone (deleted
    /// while signing in).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn complete_login_process(&self, completion: &LoginCompletion<'_>) -> Result<Option<CompletedLogin>>;
    /// # Errors
    /// Only when the store fails.
    async fn delete_login_process(&self, id: LoginProcessId) -> Result<()>;
}

/// What a login's completion stores with its process
/// ([`LoginProcessRepository::complete_login_process`]).
#[derive(Debug, Clone, Copy)]
pub struct LoginCompletion<'a> {
    /// The process, completed; saved if its stored version is still `process.version`.
    pub process: &'a LoginProcess,
    /// The session the login opens (none when it continues one).
    pub session: Option<&'a SsoSession>,
    /// The most live sessions a user may hold (at least 1): opening one
    /// beyond it ends the oldest others.
    pub session_limit: u32,
    /// The session the browser presented: a session opened replaces it
    /// (ignored when none is opened, or it is no longer live).
    pub replaces: Option<&'a SessionHash>,
    /// A device to trust for a user from `now` on (after a second factor).
    pub trusted_device: Option<(UserId, &'a str)>,
    /// The most devices a user may have trusted (at least 1): trusting one
    /// beyond it forgets the user's least recently trusted others, in the
    /// same write (as their trust running out would; not audited).
    pub device_limit: u32,
    /// The login's browser, kept with the trusted device.
    pub user_agent: Option<&'a str>,
    pub now: OffsetDateTime,
    pub audit: &'a AuditEvent,
}

/// The sessions a login's completion ended
/// ([`LoginProcessRepository::complete_login_process`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompletedLogin {
    /// The browser's session the new one replaced.
    pub replaced: Option<EndedSession>,
    /// The user's oldest sessions beyond the limit, oldest first.
    pub beyond_limit: Vec<EndedSession>,
}

impl CompletedLogin {
    /// Every session ended, the replaced one first.
    pub fn ended(&self) -> impl Iterator<Item = &EndedSession> {
        self.replaced.iter().chain(&self.beyond_limit)
    }
}

/// Devices on which a user completed a login with a second factor.
#[async_trait]
pub trait DeviceRepository: Send + Sync {
    /// Trusts `device_id` for `user_id` from `now` on (again, if it was).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn trust_device(&self, user_id: UserId, device_id: &str, now: OffsetDateTime) -> Result<()>;
    /// The devices trusted for `user_id` at or after `not_before`, the
    /// most recently trusted first.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn trusted_devices(&self, user_id: UserId, not_before: OffsetDateTime) -> Result<Vec<TrustedDevice>>;
    /// Forgets the trust of `device_id` for `user_id` and records `audit`,
    /// in one write: its next login asks a code again. Whether it was
    /// trusted.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn forget_device(&self, user_id: UserId, device_id: &str, audit: &AuditEvent) -> Result<bool>;
    /// Removes every device trusted before `trusted_before`, whose trust
    /// has run out (a device is kept no longer than it is trusted). How
    /// many were removed.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn remove_expired_devices(&self, trusted_before: OffsetDateTime) -> Result<u64>;
    /// Whether `device_id` was trusted for `user_id` at or after `not_before`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn is_device_trusted(&self, user_id: UserId, device_id: &str, not_before: OffsetDateTime) -> Result<bool>;
}

/// The scope groups each user granted each client on the consent step.
#[async_trait]
pub trait ConsentRepository: Send + Sync {
    /// The groups `user_id` granted `client_id`, if any.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_consent(&self, user_id: UserId, client_id: &ClientId) -> Result<Option<Vec<String>>>;
    /// Records that `user_id` grants `client_id` exactly `groups`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn grant_consent(
        &self,
        user_id: UserId,
        client_id: &ClientId,
        groups: &[String],
        now: OffsetDateTime,
    ) -> Result<()>;
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
    /// The attempt, the same on each of its keys: its outcome is reported
    /// under it.
    pub attempt: Uuid,
    /// Unreported by then (its node died, or the database failed before
    /// the outcome was stored), the attempt no longer counts.
    pub report_by: OffsetDateTime,
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
    /// The counter of `key` at `now` (zero when it has none, or when it was
    /// last changed before `forget_before`), without the attempts whose
    /// outcome was due by `now` and never reported.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn throttle(&self, key: &str, forget_before: OffsetDateTime, now: OffsetDateTime) -> Result<Throttle> {
        Ok(self.throttles(&[key], forget_before, now).await?.pop().unwrap_or_default())
    }
    /// [`LoginGuardRepository::throttle`] of each of `keys`, in their
    /// order, read at once.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn throttles(
        &self,
        keys: &[&str],
        forget_before: OffsetDateTime,
        now: OffsetDateTime,
    ) -> Result<Vec<Throttle>>;
    /// Counts an attempt on a key before the attempt is checked, in one
    /// atomic statement. `None`: the key is locked at `now` and nothing was
    /// counted. Otherwise the count including this attempt; of parallel
    /// calls each gets a different count. When the count reaches
    /// `hold_from`, the same statement locks the key until `hold_until`, so
    /// that parallel attempts wait for this one's outcome. The attempt is
    /// pending until reported ([`LoginGuardRepository::report_attempt`],
    /// [`LoginGuardRepository::uncount_attempt`],
    /// [`LoginGuardRepository::clear_throttle`]); attempts of the key still
    /// pending past their `report_by` are taken back first.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn count_attempt(&self, attempt: CountAttempt<'_>) -> Result<Option<u32>>;
    /// Takes back counted `attempt` that was not checked after all (or
    /// succeeded, on a key a success does not clear), and the hold it set,
    /// if any (`hold_until`: the key's lock is removed if it is still
    /// exactly that). An attempt already taken back as unreported is not
    /// taken back twice.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn uncount_attempt(&self, key: &str, attempt: Uuid, hold_until: Option<OffsetDateTime>) -> Result<()>;
    /// Reports that `attempt` was checked and failed: it stays counted.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn report_attempt(&self, key: &str, attempt: Uuid) -> Result<()>;
    /// Locks `key` until `until`, unless it is locked for longer already.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn lock_throttle(&self, key: &str, until: OffsetDateTime) -> Result<()>;
    /// Forgets `key`'s count, lock and pending attempts (a success).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn clear_throttle(&self, key: &str) -> Result<()> {
        self.attempt_succeeded(Uuid::nil(), &[key], &[]).await
    }
    /// A successful `attempt`: forgets the count, lock and pending attempts
    /// of each of `clear`, and takes the attempt back from each of
    /// `take_back` as [`LoginGuardRepository::uncount_attempt`] does without
    /// a hold, in one atomic write. The two lists do not share a key.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn attempt_succeeded(&self, attempt: Uuid, clear: &[&str], take_back: &[&str]) -> Result<()>;
    /// Removes the counters last changed before `before` whose lock (if
    /// any) ended before it too. Returns how many.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn remove_stale_throttles(&self, before: OffsetDateTime) -> Result<u64>;
}
