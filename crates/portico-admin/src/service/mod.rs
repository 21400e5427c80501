//! The administrative operations, one rule set for every channel.
//!
//! Each operation checks its input completely before it changes anything
//! (every problem named with its place), makes the change, and records it
//! in the audit log with the [`Actor`] that asked for it.

mod clients;
mod users;

use portico_crypto::jwt::Algorithm;
use std::sync::Arc;

use portico_api::{ApiError, Problem};
use portico_crypto::seal::Sealer;
use portico_model::audit::{Actor, AuditEvent, AuditKind};
use portico_model::client::SecurityProfile;
use portico_model::clock::Clock;
use portico_model::key::SigningKeyRecord;
use portico_storage::{AuditEntry, AuditQuery, KeyPage, Storage, StorageError};

pub use clients::{ClientChanges, NewClient, SecurityChanges, check_security, check_uri, is_loopback};
pub use users::{NewUser, PASSWORD_MAX, PASSWORD_MIN, ProvisionedUser, UserChanges, check_password};

/// Why an operation was refused or failed; nothing was changed.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The input breaks a rule: every problem with its place.
    #[error("{}", describe(.0))]
    Invalid(Vec<Problem>),
    /// What was named does not exist: the code (`user_not_found`) and what to say.
    #[error("{1}")]
    NotFound(&'static str, String),
    /// It exists already: the code (`client_exists`) and what to say.
    #[error("{1}")]
    Conflict(&'static str, String),
    /// The caller may not do this to what was named: what to say.
    #[error("{0}")]
    Forbidden(String),
    /// The change was made from a revision that is no longer the stored
    /// one (`If-Match`, a console form read before another change): what
    /// to say. Nothing was changed.
    #[error("{0}")]
    Stale(String),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

fn describe(problems: &[Problem]) -> String {
    let lines: Vec<String> = problems
        .iter()
        .map(|p| if p.place.is_empty() { p.message.clone() } else { format!("{}: {}", p.place, p.message) })
        .collect();
    lines.join("; ")
}

impl ServiceError {
    pub(crate) fn invalid(place: &str, message: impl Into<String>) -> Self {
        Self::Invalid(vec![Problem::new(place, message)])
    }

    /// The admin API's answer.
    pub fn into_api(self, what: &str) -> ApiError {
        match self {
            ServiceError::Invalid(problems) => {
                let message = format!("{} problem(s); nothing was changed", problems.len());
                ApiError::invalid(message, problems)
            }
            ServiceError::NotFound(code, message) => ApiError::not_found(code, message),
            ServiceError::Conflict(code, message) => ApiError::conflict(code, message),
            ServiceError::Forbidden(message) => ApiError::forbidden(message),
            ServiceError::Stale(message) => ApiError::PreconditionFailed(message),
            ServiceError::Storage(e) => ApiError::storage(what, &e),
        }
    }
}

pub type Result<T, E = ServiceError> = std::result::Result<T, E>;

/// The administrative operations over one store.
pub struct AdminService {
    pub store: Arc<dyn Storage>,
    pub clock: Arc<dyn Clock>,
    /// Seals new signing keys (the instance secret's).
    pub sealer: Sealer,
    /// Whether clients' back-channel logout addresses may be plain `http`
    /// or not globally reachable (`notifications.allow_insecure_callbacks`:
    /// the demo and local development only).
    pub allow_insecure_addresses: bool,
    /// The algorithm tokens are signed with (`tokens.signing_algorithm`):
    /// the key a rotation without another named replaces.
    pub signing_algorithm: Algorithm,
    /// Every algorithm the server keeps a key of (`tokens.signing_algorithm`
    /// and `tokens.signing_algorithms`): the ones a client may choose.
    pub signing_algorithms: Vec<Algorithm>,
    /// The profile of a client registered without naming one
    /// (`registration.default_security_profile`).
    pub default_security_profile: SecurityProfile,
    /// What holds keys outside storage: the HSM new keys of its
    /// algorithms are made in (`tokens.hsm`), the signing program
    /// (`tokens.command`).
    pub key_holders: portico_tokens::KeyHolders,
    /// Where new passwords are hashed: the server's cap on Argon2id runs,
    /// shared with the login's checks (`login.password_hash_concurrency`).
    pub passwords: Arc<portico_identity::passwords::PasswordChecker>,
    /// Client changes on this node are made one at a time (another node's
    /// are kept apart by the client's revision).
    pub(crate) client_writes: tokio::sync::Mutex<()>,
    /// User changes on this node are made one at a time, as clients'.
    pub(crate) user_writes: tokio::sync::Mutex<()>,
}

/// Whether a change made from `revisions` (an `If-Match`; `None`: from
/// whatever is stored) may be made on what is stored at `stored`.
///
/// # Errors
/// `Stale`, saying that `what` changed since it was read.
pub(crate) fn check_revision(what: &str, revisions: Option<&[u64]>, stored: u64) -> Result<()> {
    match revisions {
        Some(revisions) if !revisions.contains(&stored) => Err(ServiceError::Stale(format!(
            "{what} was changed since it was read (it is at revision {stored} now): \
             read it again and make the change on what it is now; nothing was changed"
        ))),
        _ => Ok(()),
    }
}

/// Times a change of a client or a user is made again after others wrote
/// it meanwhile (on other nodes: this node's wait for each other).
pub(crate) const UPDATE_ATTEMPTS: usize = 20;

/// Argon2id runs at once of a service with no server's cap to share (the
/// CLI's): `login.password_hash_concurrency`'s default.
const DEFAULT_HASHES_AT_ONCE: usize = 2;

impl AdminService {
    pub fn new(store: Arc<dyn Storage>, clock: Arc<dyn Clock>, sealer: Sealer) -> Self {
        Self {
            store,
            clock,
            sealer,
            allow_insecure_addresses: false,
            signing_algorithm: Algorithm::Rs256,
            signing_algorithms: vec![Algorithm::Rs256],
            default_security_profile: SecurityProfile::Standard,
            key_holders: portico_tokens::KeyHolders::default(),
            passwords: Arc::new(portico_identity::passwords::PasswordChecker::new(DEFAULT_HASHES_AT_ONCE)),
            client_writes: tokio::sync::Mutex::new(()),
            user_writes: tokio::sync::Mutex::new(()),
        }
    }

    /// The same service, hashing new passwords under `passwords`' cap (the
    /// server's, which its logins share).
    #[must_use]
    pub fn hashing_with(mut self, passwords: Arc<portico_identity::passwords::PasswordChecker>) -> Self {
        self.passwords = passwords;
        self
    }

    /// The same service, making new keys of the HSM's algorithms inside
    /// it and registering keys the HSM or the signing program hold.
    #[must_use]
    pub fn with_key_holders(mut self, holders: portico_tokens::KeyHolders) -> Self {
        self.key_holders = holders;
        self
    }

    /// The same service, with `alg` the algorithm tokens are signed with
    /// and `all` every algorithm the server keeps a key of.
    #[must_use]
    pub fn signing_with(mut self, alg: Algorithm, all: &[Algorithm]) -> Self {
        self.signing_algorithm = alg;
        self.signing_algorithms = all.to_vec();
        self
    }

    /// The same service, registering clients that name no profile under `profile`.
    #[must_use]
    pub fn with_default_profile(mut self, profile: SecurityProfile) -> Self {
        self.default_security_profile = profile;
        self
    }

    /// The same service, allowing insecure addresses or not.
    #[must_use]
    pub fn allowing_insecure_addresses(mut self, allow: bool) -> Self {
        self.allow_insecure_addresses = allow;
        self
    }

    /// Records an administrative change; a failure to record is logged.
    pub(crate) async fn audit(&self, actor: &Actor, event: AuditEvent) {
        portico_api::audit(self.store.as_ref(), event.by(actor)).await;
    }

    /// Every signing key: the active one, then the retired ones, newest first.
    ///
    /// # Errors
    /// When the store fails.
    pub async fn list_keys(&self) -> Result<Vec<SigningKeyRecord>> {
        let mut keys = self.store.list_signing_keys().await?;
        keys.sort_by_key(|k| {
            (k.retired_at.is_some(), std::cmp::Reverse(k.retired_at), std::cmp::Reverse(k.created_at))
        });
        Ok(keys)
    }

    /// Makes a new signing key of `alg` (default: the algorithm tokens are
    /// signed with) active; the old one stays published until its tokens
    /// expire. Returns the new `kid`.
    ///
    /// # Errors
    /// When the store fails.
    pub async fn rotate_key(&self, actor: &Actor, alg: Option<Algorithm>) -> Result<String> {
        let now = self.clock.now();
        let alg = alg.unwrap_or(self.signing_algorithm);
        let kid = portico_tokens::KeyRing::rotate_with(self.store.as_ref(), &self.sealer, &self.key_holders, alg, now)
            .await?;
        tracing::info!(%kid, %alg, %actor, "signing key rotated");
        let event =
            AuditEvent::new(now, AuditKind::KeyRotated).detail(serde_json::json!({ "kid": kid, "alg": alg.as_str() }));
        self.audit(actor, event).await;
        Ok(kid)
    }

    /// Registers a key made outside Portico (by the HSM vendor's tools, or
    /// held by the signing program) as `alg`'s active key; the old one
    /// stays published until its tokens expire. Returns its `kid`.
    ///
    /// # Errors
    /// The key refused (the reason said) or the store failed.
    pub async fn import_key(&self, actor: &Actor, alg: Algorithm, key: &portico_tokens::ImportedKey) -> Result<String> {
        let now = self.clock.now();
        let kid = portico_tokens::KeyRing::import(self.store.as_ref(), &self.sealer, &self.key_holders, alg, key, now)
            .await?;
        let (holder, label) = match key {
            portico_tokens::ImportedKey::Hsm { label } => ("hsm", label),
            portico_tokens::ImportedKey::Command { label, .. } => ("command", label),
        };
        tracing::info!(%kid, %alg, holder, label = %label, %actor, "signing key imported");
        let detail = serde_json::json!({ "kid": kid, "alg": alg.as_str(), "imported": holder, "label": label });
        self.audit(actor, AuditEvent::new(now, AuditKind::KeyRotated).detail(detail)).await;
        Ok(kid)
    }

    /// Retires the active key of `alg` without a successor: Portico stops
    /// signing with the algorithm, and the key stays published until its
    /// tokens expire. Returns the retired `kid`.
    ///
    /// # Errors
    /// `Conflict` while the server is configured to sign with `alg`
    /// (`algorithm_configured`) or a client names it (`algorithm_in_use`);
    /// `key_not_found` when `alg` has no active key; the store failed.
    pub async fn retire_key(&self, actor: &Actor, alg: Algorithm) -> Result<String> {
        if self.signing_algorithms.contains(&alg) {
            return Err(ServiceError::Conflict(
                "algorithm_configured",
                format!(
                    "{alg} is configured (tokens.signing_algorithm or tokens.signing_algorithms): take it off the \
                     configuration of every node and restart them first"
                ),
            ));
        }
        let users: Vec<String> = self
            .store
            .list_clients(KeyPage::ALL, None)
            .await?
            .into_iter()
            .filter(|client| client.security.algorithms().any(|(_, used)| used == alg))
            .map(|client| client.client_id.to_string())
            .collect();
        if !users.is_empty() {
            return Err(ServiceError::Conflict(
                "algorithm_in_use",
                format!("clients still use {alg}: {}; give them another algorithm first", users.join(", ")),
            ));
        }
        let now = self.clock.now();
        let kid = self
            .store
            .retire_signing_key(alg.as_str(), now)
            .await?
            .ok_or_else(|| ServiceError::NotFound("key_not_found", format!("there is no active {alg} key")))?;
        tracing::info!(%kid, %alg, %actor, "signing algorithm retired");
        let event =
            AuditEvent::new(now, AuditKind::KeyRetired).detail(serde_json::json!({ "kid": kid, "alg": alg.as_str() }));
        self.audit(actor, event).await;
        Ok(kid)
    }

    /// A page of the audit log.
    ///
    /// # Errors
    /// When the store fails.
    pub async fn audit_log(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>> {
        Ok(self.store.query_audit(query).await?)
    }
}
