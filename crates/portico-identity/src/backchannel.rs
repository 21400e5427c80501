//! Back-channel logout (OpenID Connect Back-Channel Logout 1.0): the worker
//! that delivers the logout notices stored when a session ends.
//!
//! Each notice is a `POST` of the form `logout_token=<JWT>` to the client's
//! `backchannel_logout_uri`. The token is signed by the active key when it
//! is sent, header `typ: logout+jwt`, with `iss`, `aud` (the client), `iat`,
//! `exp` (two minutes later), `jti`, `sub`, `sid` and the `events` member
//! the spec names; never a `nonce`. Any 2xx answer acknowledges it
//! (the spec asks for 200; frameworks answer 204 too). Anything else (another
//! status, a timeout, a refused connection) is tried again after 5 s,
//! doubling up to an hour, for `login.logout_retry_window_secs` after the
//! session ended; then it is given up on, with a warning and the audit event
//! `logout.undelivered`. Redirects are not followed.
//!
//! A notice is leased while it is attempted; a worker that dies leaves it to
//! be claimed again when the lease runs out, so a client may receive a
//! logout twice (at least once, never lost), as the spec expects (`jti`).

use std::sync::Arc;
use std::time::Duration;

use portico_model::audit::{AuditEvent, AuditKind};
use portico_model::ids::SessionId;
use portico_model::session::{LogoutNotice, NoticeOutcome};
use portico_storage::StorageError;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::watch;
use uuid::Uuid;

use crate::Identity;

/// The `events` member of a logout token.
pub const EVENT: &str = "http://schemas.openid.net/event/backchannel-logout";
/// The `typ` header of a logout token (§2.4).
pub const TYP_LOGOUT_TOKEN: &str = "logout+jwt";
/// Notices claimed in one pass at most.
const BATCH: u32 = 64;
/// The first wait after a failed attempt; each further failure doubles it.
const FIRST_WAIT: time::Duration = time::Duration::seconds(5);
/// The longest wait between attempts.
const LONGEST_WAIT: time::Duration = time::Duration::hours(1);
/// How long a logout token is valid.
const TOKEN_LIFETIME: time::Duration = time::Duration::minutes(2);

/// How notices are delivered (`login.logout_*` settings).
#[derive(Debug, Clone)]
pub struct LogoutDelivery {
    /// Per attempt, connecting included.
    pub timeout: Duration,
    /// How long after the session ended a notice is still tried.
    pub retry_window: time::Duration,
}

impl Default for LogoutDelivery {
    fn default() -> Self {
        Self { timeout: Duration::from_secs(5), retry_window: time::Duration::days(1) }
    }
}

/// The claims of a logout token (§2.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogoutClaims {
    pub iss: String,
    pub aud: String,
    pub iat: i64,
    pub exp: i64,
    pub jti: String,
    pub sub: String,
    pub sid: SessionId,
    pub events: serde_json::Value,
}

/// Delivers logout notices for one identity service.
pub struct BackChannel {
    identity: Arc<Identity>,
    http: reqwest::Client,
    /// Whether addresses must be public `https` ones (with a resolver).
    public_only: bool,
}

impl BackChannel {
    /// `resolver`, when given, decides where host names lead (one that
    /// refuses internal addresses, outside the demo); then addresses
    /// written as IP literals are checked before each send too.
    ///
    /// # Errors
    /// When the HTTP client cannot be built.
    pub fn new(
        identity: Arc<Identity>,
        resolver: Option<Arc<dyn reqwest::dns::Resolve>>,
    ) -> Result<Self, reqwest::Error> {
        let mut builder = reqwest::Client::builder()
            .timeout(identity.settings.logout_delivery.timeout)
            .redirect(reqwest::redirect::Policy::none())
            // Directly: a proxy named in the environment would resolve the
            // host itself, out of the resolver's sight.
            .no_proxy();
        let public_only = resolver.is_some();
        if let Some(resolver) = resolver {
            builder = builder.dns_resolver(resolver);
        }
        Ok(Self { identity, http: builder.build()?, public_only })
    }

    /// One pass: claims the notices due now and attempts them all at once.
    /// Answers how many were attempted.
    ///
    /// # Errors
    /// When the notices cannot be claimed.
    pub async fn deliver_due(self: &Arc<Self>) -> Result<usize, StorageError> {
        let now = self.identity.clock.now();
        let lease = now + self.identity.settings.logout_delivery.timeout + time::Duration::seconds(30);
        let notices = self.identity.store.claim_logout_notices(now, lease, BATCH).await?;
        let count = notices.len();
        let mut attempts = tokio::task::JoinSet::new();
        for notice in notices {
            let this = Arc::clone(self);
            attempts.spawn(async move { this.attempt(notice).await });
        }
        attempts.join_all().await;
        Ok(count)
    }

    async fn attempt(&self, notice: LogoutNotice) {
        let Some(leased_until) = notice.lease_until else { return };
        // The attempt's time decides what follows (the next try, or giving
        // up), whenever its answer comes.
        let now = self.identity.clock.now();
        let sent = self.send(&notice).await;
        let outcome = match sent {
            Ok(()) => {
                tracing::info!(client_id = %notice.client_id, sid = %notice.session_id, "back-channel logout delivered");
                NoticeOutcome::Done
            }
            Err(error) if now - notice.created_at >= self.identity.settings.logout_delivery.retry_window => {
                tracing::warn!(
                    client_id = %notice.client_id, sid = %notice.session_id, attempts = notice.attempts + 1, %error,
                    "back-channel logout given up: the client never acknowledged it"
                );
                let event = AuditEvent::new(now, AuditKind::LogoutUndelivered).user(notice.user_id);
                let detail = json!({ "sid": notice.session_id, "attempts": notice.attempts + 1, "error": error });
                self.identity.audit(event.client(&notice.client_id).detail(detail)).await;
                NoticeOutcome::Done
            }
            Err(error) => {
                let wait = FIRST_WAIT * 2_i32.saturating_pow(notice.attempts.min(20));
                tracing::debug!(client_id = %notice.client_id, %error, "back-channel logout failed; will retry");
                NoticeOutcome::Retry { at: now + wait.min(LONGEST_WAIT), error }
            }
        };
        match self.identity.store.finish_logout_notice(notice.id, leased_until, &outcome).await {
            Ok(true) => {}
            Ok(false) => tracing::debug!(id = %notice.id, "a logout notice's lease ran out before it was recorded"),
            Err(error) => tracing::warn!(%error, "a logout attempt could not be recorded; it will be tried again"),
        }
    }

    /// Signs the token and posts it; `Err` says why it did not arrive.
    async fn send(&self, notice: &LogoutNotice) -> Result<(), String> {
        // An address written as an IP literal never reaches the resolver.
        if self.public_only {
            portico_model::address::check_public_url(&notice.uri, false).map_err(|e| format!("not sent: {e}"))?;
        }
        let key = self.identity.tokens.keys.signing_key().await.map_err(|e| format!("no signing key: {e}"))?;
        let now = self.identity.clock.now();
        let claims = LogoutClaims {
            iss: self.identity.settings.issuer.clone(),
            aud: notice.client_id.to_string(),
            iat: now.unix_timestamp(),
            exp: (now + TOKEN_LIFETIME).unix_timestamp(),
            jti: Uuid::new_v4().to_string(),
            sub: notice.user_id.to_string(),
            sid: notice.session_id,
            events: json!({ EVENT: {} }),
        };
        let token = key.try_sign(TYP_LOGOUT_TOKEN, &claims).map_err(|e| format!("not signed: {e}"))?;
        let body = form_urlencoded::Serializer::new(String::new()).append_pair("logout_token", &token).finish();
        let response = self
            .http
            .post(&notice.uri)
            .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(reqwest::header::CACHE_CONTROL, "no-store")
            .body(body)
            .send()
            .await
            .map_err(|e| format!("not delivered: {e}"))?;
        if response.status().is_success() { Ok(()) } else { Err(format!("answered {}", response.status())) }
    }
}

/// Delivers due notices every `every` until `shutdown` fires.
pub async fn run(back: Arc<BackChannel>, every: Duration, mut shutdown: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval(every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = shutdown.changed() => return,
        }
        if let Err(error) = back.deliver_due().await {
            tracing::warn!(%error, "claiming back-channel logouts failed; will retry");
        }
    }
}
