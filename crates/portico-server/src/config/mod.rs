//! Settings: compiled-in defaults, then an optional TOML file, then
//! `PORTICO_*` environment variables (nested keys with `__`, e.g.
//! `PORTICO_TOKENS__ACCESS_TOKEN_TTL_SECS`). Unknown keys and invalid values
//! stop the start with a message naming the setting. `docs/configuration.md`
//! lists every setting with its default.
//!
//! This module says what the settings are and what they select; `load`
//! reads and checks them.

mod keys;
mod load;
mod openbanking;
#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::path::PathBuf;

use portico_identity::IdentitySettings;
use serde::{Deserialize, Serialize};
use time::Duration;

pub use keys::{HsmConfig, TokenCommandConfig, TokenConfig};
pub use openbanking::{DpopConfig, MtlsConfig, ParConfig, RegistrationConfig, StatementIssuerConfig};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Address the HTTP server listens on.
    pub listen: SocketAddr,
    /// A second address serving only `GET /metrics`; when set, the public
    /// listener does not answer `/metrics`. Default: none (`/metrics` on
    /// `listen`).
    pub metrics_listen: Option<SocketAddr>,
    /// Folder for the SQLite database, the instance secret and local files.
    pub data_dir: PathBuf,
    /// `sqlite://…` or `postgres://…`; default: `sqlite://<data_dir>/portico.db`.
    pub database_url: Option<String>,
    /// Most connections to PostgreSQL per node.
    pub database_max_connections: u32,
    /// Seconds a request waits for a database connection before it fails
    /// with 503 (PostgreSQL).
    pub database_acquire_timeout_secs: u32,
    /// PostgreSQL: how stale, at most, a node's in-memory answers to "is
    /// this token revoked" and "which permission revision is current" may
    /// be (milliseconds); 0 asks the database every time.
    pub database_cache_staleness_ms: u32,
    /// The public base URL, which is also the token issuer; default `http://<listen>`.
    pub public_url: Option<String>,
    /// Base64 of 32 random bytes; default: generated once into `<data_dir>/secret.key`.
    pub secret_key: Option<String>,
    /// Bearer token of the admin APIs (`/admin/v1/...`), named `admin` in
    /// the audit log; they are off without any admin token.
    pub admin_token: Option<String>,
    /// More admin tokens, each under a name the audit log records as the
    /// actor of what it changes (`[admin_tokens] ci = "..."`,
    /// `PORTICO_ADMIN_TOKENS__CI`).
    pub admin_tokens: std::collections::BTreeMap<String, String>,
    /// Bearer token of SCIM provisioning (`/scim/v2`); it is off without one.
    pub scim_token: Option<String>,
    /// The client whose access tokens act for operators (users with an
    /// operator role) on the admin APIs.
    pub operator_client_id: String,
    /// The operator console at `/console` (operators sign in through
    /// Portico's login; anyone else is refused).
    pub console: bool,
    /// How long after an operator authenticated (password, code) their
    /// single sign-on session still signs them in to the console without
    /// asking again: the console's `max_age`.
    pub console_sign_in_max_age_secs: u32,
    /// The client the customer's account page at `/account` signs in as.
    pub account_client_id: String,
    /// The customer's account page at `/account` (passkeys, sessions,
    /// trusted devices).
    pub account: bool,
    /// Bearer token of the internal APIs other bank systems call
    /// (`/internal/v1/...`); they are off without one.
    pub internal_token: Option<String>,
    /// Log filter, in `tracing` env-filter syntax.
    pub log: String,
    /// `text` or `json`.
    pub log_format: LogFormat,
    /// Force `Secure` cookies on or off; default: on unless the public URL is
    /// plain `http://`.
    pub cookie_secure: Option<bool>,
    /// Seconds between clean-ups of expired codes, processes and tokens.
    pub cleanup_interval_secs: u64,
    pub http: HttpConfig,
    pub telemetry: TelemetryConfig,
    pub tokens: TokenConfig,
    pub registration: RegistrationConfig,
    pub par: ParConfig,
    pub dpop: DpopConfig,
    pub mtls: MtlsConfig,
    pub login: LoginConfig,
    pub delivery: DeliveryConfig,
    pub captcha: CaptchaConfig,
    /// What the login pages show around the form (`themeViewData`).
    pub theme: portico_identity::theme::Theme,
    pub notifications: NotificationConfig,
    pub reports: ReportConfig,
}

/// Brokerage reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReportConfig {
    /// Run report workers inside `portico serve`.
    pub generate: bool,
    /// Report workers per process (each generates one task at a time).
    pub workers: u32,
    /// Seconds a worker holds a task; a generation must end within 80 % of it.
    pub lease_secs: u64,
    /// Milliseconds between looks for new tasks when none was waiting.
    pub interval_ms: u64,
    /// The folder produced files are kept in; default `<data_dir>/reports`.
    /// Used when `s3` is not set.
    pub files_dir: Option<std::path::PathBuf>,
    /// Keep produced files in an S3-compatible bucket instead of a folder
    /// (required when several nodes serve downloads).
    pub s3: Option<portico_reports::files::S3Settings>,
    /// The broker's facsimile signature and stamp, a PNG placed on the last
    /// page of `FACSIMILE` files; default: Portico's demo image.
    pub facsimile_png: Option<std::path::PathBuf>,
    /// The broker's signing certificate (PEM) for `QES` files; with
    /// `signing_key`. Default: a self-signed one made once in the data folder.
    pub signing_cert: Option<std::path::PathBuf>,
    /// Its PKCS#8 ECDSA P-256 key (PEM), unless `signature.command` signs.
    pub signing_key: Option<std::path::PathBuf>,
    /// The signature's algorithm, certificate chain and external signer.
    pub signature: portico_reports::generate::qes::Settings,
    /// Days a finished task (`DONE` or `FAILED`) and its files are kept;
    /// `0` keeps them for ever.
    pub retention_days: u32,
    /// Tasks `NEW` or `IN_PROGRESS` one company may have at once; a further
    /// request is answered 429 with `Retry-After`.
    pub max_unfinished_per_company: u32,
    /// The broker's details on every report, and its time zone.
    pub broker: portico_reports::generate::broker::Broker,
}

impl Default for ReportConfig {
    fn default() -> Self {
        Self {
            generate: true,
            workers: 2,
            lease_secs: 300,
            interval_ms: 1_000,
            files_dir: None,
            s3: None,
            facsimile_png: None,
            signing_cert: None,
            signing_key: None,
            signature: portico_reports::generate::qes::Settings::default(),
            retention_days: 365,
            max_unfinished_per_company: 20,
            broker: portico_reports::generate::broker::Broker::default(),
        }
    }
}

/// Merchant notifications.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NotificationConfig {
    /// Accept plain `http` and private-network callback addresses (for the
    /// demo and local development only). Unset: only with `--demo`; an
    /// explicit `false` holds in the demo too.
    pub allow_insecure_callbacks: Option<bool>,
    /// Run the delivery worker inside `portico serve`.
    pub deliver: bool,
    /// Milliseconds between delivery passes.
    pub delivery_interval_ms: u64,
    /// Milliseconds a receiver may take to answer before the attempt fails.
    pub timeout_ms: u64,
    /// The local address notifications are sent from (production sends
    /// from one fixed address); default: the system's choice.
    pub source_address: Option<std::net::IpAddr>,
    /// Seconds a worker holds a claimed delivery; when a worker dies, its
    /// deliveries are attempted again after this. At least twice `timeout_ms`.
    pub lease_secs: u64,
    /// Deliveries to one merchant in flight at once, per worker.
    pub per_merchant: u32,
    /// Deliveries in flight at once, per worker.
    pub in_flight: u32,
    /// Days a finished delivery (with its attempts and event) is kept; 0
    /// keeps every delivery for ever.
    pub retention_days: u32,
    /// Seconds to wait before the 2nd, 3rd, … attempt of a failed delivery
    /// (±10 % jitter); the last wait repeats.
    pub retry_waits_secs: Vec<u32>,
    /// Seconds after its creation within which a delivery is tried; then
    /// it is failed (and can be resent).
    pub retry_window_secs: u32,
}

impl Default for NotificationConfig {
    fn default() -> Self {
        Self {
            allow_insecure_callbacks: None,
            deliver: true,
            delivery_interval_ms: 1_000,
            timeout_ms: 10_000,
            source_address: None,
            lease_secs: 60,
            per_merchant: 8,
            in_flight: 128,
            retention_days: 30,
            retry_waits_secs: portico_notify::delivery::DEFAULT_WAITS_SECS.to_vec(),
            retry_window_secs: 24 * 3600,
        }
    }
}

/// How SMS and e-mail codes reach users.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DeliveryConfig {
    /// `http` (the SMS gateway) or `outbox` (development only: codes in
    /// clear in `<data_dir>/outbox.jsonl`). No default outside the demo:
    /// `portico serve` without `--demo` refuses to start until it is set.
    pub sms: Option<SmsDelivery>,
    /// `smtp` or `outbox` (development only). No default outside the demo.
    pub email: Option<EmailDelivery>,
    /// The gateway's URL (for `sms = "http"`).
    pub sms_gateway_url: Option<String>,
    /// `Authorization` header value for the gateway, if it wants one.
    pub sms_gateway_authorization: Option<String>,
    /// JSON body with `{to}`, `{text}` and `{code}` placeholders.
    pub sms_gateway_body: String,
    pub sms_gateway_timeout_secs: u32,
    /// `smtp://host:25`, `smtp://host:587?tls=required` or `smtps://user:pass@host:465`.
    pub smtp_url: Option<String>,
    /// Sender of code e-mails.
    pub smtp_from: String,
    /// Subject of code e-mails.
    pub email_subject: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SmsDelivery {
    Outbox,
    Http,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmailDelivery {
    Outbox,
    Smtp,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        Self {
            sms: None,
            email: None,
            sms_gateway_url: None,
            sms_gateway_authorization: None,
            sms_gateway_body: r#"{"to": "{to}", "text": "{text}"}"#.to_owned(),
            sms_gateway_timeout_secs: 10,
            smtp_url: None,
            smtp_from: "Portico <noreply@localhost>".to_owned(),
            email_subject: "Код для входа / Sign-in code".to_owned(),
        }
    }
}

/// The CAPTCHA verifier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CaptchaConfig {
    /// `smartcaptcha` or `dev` (a checkbox that anyone passes; development
    /// only). No default outside the demo.
    pub kind: Option<CaptchaKind>,
    /// Server key of the CAPTCHA service (`smartcaptcha`).
    pub server_key: Option<String>,
    /// Site key for the page's widget (`smartcaptcha`).
    pub site_key: Option<String>,
    /// The service's validation URL.
    pub validate_url: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CaptchaKind {
    Dev,
    Smartcaptcha,
}

impl Default for CaptchaConfig {
    fn default() -> Self {
        Self {
            kind: None,
            server_key: None,
            site_key: None,
            validate_url: "https://smartcaptcha.yandexcloud.net/validate".to_owned(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

/// OpenTelemetry traces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    /// Where traces go over OTLP/HTTP (protobuf), e.g.
    /// `http://otel-collector:4318` (`/v1/traces` is added); none: no traces.
    pub otlp_endpoint: Option<String>,
    /// `service.name` of the spans.
    pub service_name: String,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self { otlp_endpoint: None, service_name: "portico".to_owned() }
    }
}

/// The HTTP listener's limits against slow and idle clients, and HSTS.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// Seconds within which a request's line and headers must arrive in
    /// full, counted from when the connection opens or its previous response
    /// was sent: so also how long an idle kept-alive connection stays open.
    pub header_read_timeout_secs: u32,
    /// Seconds a connection may move no byte either way (a stalled body, a
    /// client that stops reading) before it is closed.
    pub idle_timeout_secs: u32,
    /// Seconds within which a request's body must arrive in full, counted
    /// from its head; a slower client is answered 408 and disconnected.
    pub body_timeout_secs: u32,
    /// Bytes a second a request body must arrive at on average, judged
    /// after its first five seconds; 0 judges only `body_timeout_secs`.
    pub body_min_bytes_per_sec: u32,
    /// Connections open at once; past that, new ones wait to be accepted.
    pub max_connections: u32,
    /// Seconds the requests in flight may take to finish once the server
    /// is told to stop (SIGTERM); what is still open then is closed.
    pub shutdown_grace_secs: u32,
    /// `max-age` of `Strict-Transport-Security`, sent when `public_url` is
    /// `https://`; 0 sends none.
    pub hsts_max_age_secs: u32,
    /// Addresses or blocks (`10.0.0.0/8`) of the proxies in front of
    /// Portico, whose `X-Forwarded-For` names the client's address for the
    /// login guard; empty: the TCP peer is the client.
    pub trusted_proxies: Vec<portico_identity::client_address::Cidr>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            header_read_timeout_secs: 10,
            idle_timeout_secs: 60,
            body_timeout_secs: 30,
            body_min_bytes_per_sec: 1024,
            max_connections: 1024,
            shutdown_grace_secs: 25,
            hsts_max_age_secs: 31_536_000,
            trusted_proxies: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoginConfig {
    /// Lifetime of a login process.
    pub process_ttl_secs: u32,
    /// Lifetime of the SSO session after a completed login.
    pub session_ttl_secs: u32,
    /// Most live SSO sessions one user may hold: a login beyond it ends
    /// the user's oldest.
    pub max_sessions_per_user: u32,
    /// Most Argon2id password checks running at once.
    pub password_hash_concurrency: u32,
    /// Digits of a one-time code.
    pub otp_length: u32,
    /// Lifetime of a one-time code.
    pub otp_ttl_secs: u32,
    /// Wrong tries per code.
    pub otp_max_failures: u32,
    /// Codes one login process may send.
    pub otp_max_codes: u32,
    /// Wait before another code may be sent.
    pub otp_resend_secs: u32,
    /// Codes sent to one user (from devices not trusted for them, or to
    /// one trusted device), across login processes, from which each code
    /// sent pauses sending; a right code starts the count again.
    pub otp_sends_before_pause: u32,
    /// Failed passwords on an account (from devices not trusted for it), or
    /// on one trusted device, after which a CAPTCHA is required; also wrong
    /// phone numbers in one login process on the `phone` step.
    pub captcha_after_failures: u32,
    /// Failed passwords on an account (untrusted devices) or on one trusted
    /// device from which each failure pauses password attempts there.
    pub delay_after_failures: u32,
    /// The first pause; each further failure doubles it.
    pub first_delay_secs: u32,
    /// The longest pause.
    pub max_delay_secs: u32,
    /// Failed passwords from one client address (any login) after which a
    /// CAPTCHA is required.
    pub address_captcha_after_failures: u32,
    /// Failed passwords from one client address from which each failure
    /// pauses password attempts from it.
    pub address_delay_after_failures: u32,
    /// Hours after its last failure at which a count starts again.
    pub failure_memory_hours: u32,
    /// Seconds within which a counted password attempt must report its
    /// outcome; one never reported (its node died before the check) counts
    /// no more after them.
    pub unreported_attempt_secs: u32,
    /// How long a device stays trusted after a login with a second factor.
    pub device_trust_days: u32,
    /// Most devices trusted for one user: trusting one beyond it forgets
    /// the user's least recently trusted.
    pub max_trusted_devices_per_user: u32,
    /// Whether a passkey sign-in (user verified) completes the login
    /// without a one-time code; off: a code is asked for after it.
    pub passkey_replaces_code: bool,
    /// Whether a user without a passkey is offered to create one after a
    /// login with a password and a one-time code.
    pub offer_passkey: bool,
    /// Days after a declined offer before it is made again.
    pub passkey_offer_pause_days: u32,
    /// The authenticator models (AAGUIDs) accepted for new passkeys; empty:
    /// any. When set, attestation is asked for and must chain to a CA of
    /// `passkey_attestation_ca_file`.
    pub passkey_allowed_aaguids: Vec<String>,
    /// PEM file of the attestation CA certificates of the allowed models.
    pub passkey_attestation_ca_file: Option<std::path::PathBuf>,
    /// `ru` or `en`: the pages' language when neither the login process nor
    /// the browser's `svc.locale` cookie chose one; default: `Accept-Language`.
    pub default_locale: Option<portico_model::login::Locale>,
    /// How often due back-channel logouts are looked for.
    pub logout_delivery_interval_ms: u64,
    /// Per back-channel logout attempt, connecting included.
    pub logout_timeout_ms: u64,
    /// How long after a session ended its back-channel logouts are still tried.
    pub logout_retry_window_secs: u32,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            metrics_listen: None,
            data_dir: PathBuf::from("./data"),
            database_url: None,
            database_max_connections: 16,
            database_acquire_timeout_secs: 5,
            database_cache_staleness_ms: 1000,
            public_url: None,
            secret_key: None,
            admin_token: None,
            admin_tokens: Default::default(),
            scim_token: None,
            operator_client_id: "portico-console".into(),
            console: true,
            console_sign_in_max_age_secs: 3600,
            account_client_id: "portico-account".into(),
            account: true,
            internal_token: None,
            log: "info".to_owned(),
            log_format: LogFormat::Text,
            cookie_secure: None,
            cleanup_interval_secs: 300,
            http: HttpConfig::default(),
            telemetry: TelemetryConfig::default(),
            tokens: TokenConfig::default(),
            registration: RegistrationConfig::default(),
            par: ParConfig::default(),
            dpop: DpopConfig::default(),
            mtls: MtlsConfig::default(),
            login: LoginConfig::default(),
            delivery: DeliveryConfig::default(),
            captcha: CaptchaConfig::default(),
            theme: portico_identity::theme::Theme::default(),
            notifications: NotificationConfig::default(),
            reports: ReportConfig::default(),
        }
    }
}

impl Default for LoginConfig {
    fn default() -> Self {
        Self {
            process_ttl_secs: 900,
            session_ttl_secs: 12 * 3600,
            max_sessions_per_user: 30,
            password_hash_concurrency: 2,
            otp_length: 6,
            otp_ttl_secs: 300,
            otp_max_failures: 3,
            otp_max_codes: 5,
            otp_resend_secs: 60,
            otp_sends_before_pause: 10,
            captcha_after_failures: 3,
            delay_after_failures: 5,
            first_delay_secs: 30,
            max_delay_secs: 3600,
            address_captcha_after_failures: 10,
            address_delay_after_failures: 30,
            failure_memory_hours: 24,
            unreported_attempt_secs: 120,
            device_trust_days: 180,
            max_trusted_devices_per_user: 30,
            passkey_replaces_code: true,
            offer_passkey: true,
            passkey_offer_pause_days: 30,
            passkey_allowed_aaguids: Vec::new(),
            passkey_attestation_ca_file: None,
            default_locale: None,
            logout_delivery_interval_ms: 1000,
            logout_timeout_ms: 5000,
            logout_retry_window_secs: 24 * 3600,
        }
    }
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("invalid configuration: {0}")]
pub struct ConfigError(pub String);

/// The database a configuration selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Database {
    Sqlite(String),
    Postgres(String),
}

impl Config {
    /// The `Strict-Transport-Security` value to send: with an `https://`
    /// public URL and a max-age above 0.
    pub fn hsts(&self) -> Option<String> {
        (self.public_url().starts_with("https://") && self.http.hsts_max_age_secs > 0)
            .then(|| format!("max-age={}", self.http.hsts_max_age_secs))
    }

    /// The public URL without a trailing slash.
    pub fn public_url(&self) -> String {
        match &self.public_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            // A loopback address is named `localhost`: a secure context
            // for browsers on plain HTTP, and a host WebAuthn takes as its
            // relying party (it takes no IP address).
            None if self.listen.ip().is_loopback() => format!("http://localhost:{}", self.listen.port()),
            None => format!("http://{}", self.listen),
        }
    }

    /// The selected database.
    ///
    /// # Errors
    /// For a URL that is neither SQLite nor PostgreSQL.
    pub fn database(&self) -> Result<Database, ConfigError> {
        let url = match &self.database_url {
            Some(url) => url.clone(),
            None => format!("sqlite://{}", self.data_dir.join("portico.db").display()),
        };
        if url.starts_with("sqlite:") {
            Ok(Database::Sqlite(url))
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Database::Postgres(url))
        } else {
            Err(ConfigError("database_url (PORTICO_DATABASE_URL) must start with sqlite:// or postgres://".into()))
        }
    }

    /// The admin tokens with their names, and the internal token.
    pub fn api_tokens(&self) -> portico_api::ApiTokens {
        let admin = self.admin_token.iter().map(|token| ("admin", token.as_str()));
        let named = self.admin_tokens.iter().map(|(name, token)| (name.as_str(), token.as_str()));
        portico_api::ApiTokens::new(admin.chain(named), self.internal_token.as_deref())
    }

    /// Identity settings derived from this configuration.
    pub fn identity_settings(&self) -> IdentitySettings {
        let mut settings = IdentitySettings::with_issuer(self.public_url());
        let secs = |s: u32| Duration::seconds(i64::from(s));
        settings.authorization_code_ttl = secs(self.tokens.authorization_code_ttl_secs);
        settings.access_token_ttl = secs(self.tokens.access_token_ttl_secs);
        settings.refresh_token_ttl = secs(self.tokens.refresh_token_ttl_secs);
        settings.login_process_ttl = secs(self.login.process_ttl_secs);
        settings.session_ttl = secs(self.login.session_ttl_secs);
        settings.max_sessions_per_user = self.login.max_sessions_per_user;
        settings.registration = self.registration.initial_access_token.is_some();
        settings.pushed_request_ttl = secs(self.par.request_uri_ttl_secs);
        settings.require_pushed_requests = self.par.required;
        settings.dpop_require_nonce = self.dpop.require_nonce;
        settings.internal_token = self.internal_token.as_deref().map(portico_crypto::hash::BearerSecret::new);
        if let Some(secure) = self.cookie_secure {
            settings.secure_cookies = secure;
        }
        let login = &self.login;
        settings.otp = portico_model::otp::OtpPolicy {
            length: login.otp_length as usize,
            ttl: secs(login.otp_ttl_secs),
            max_failures: login.otp_max_failures,
            max_codes: login.otp_max_codes,
            resend_after: secs(login.otp_resend_secs),
        };
        settings.guard = portico_identity::login::guard::GuardPolicy {
            captcha_after: login.captcha_after_failures,
            delay_after: login.delay_after_failures,
            first_delay: secs(login.first_delay_secs),
            max_delay: secs(login.max_delay_secs),
            address_captcha_after: login.address_captcha_after_failures,
            address_delay_after: login.address_delay_after_failures,
            send_delay_after: login.otp_sends_before_pause,
            memory: Duration::hours(i64::from(login.failure_memory_hours)),
            report_within: secs(login.unreported_attempt_secs),
        };
        settings.phone_captcha_after_failures = login.captcha_after_failures;
        settings.trusted_proxies = self.http.trusted_proxies.clone();
        settings.client_certificates = self.mtls.presents_certificates();
        // Checked when the configuration was loaded.
        settings.mtls_aliases = self.mtls.alias_base().ok().flatten();
        // Checked when the configuration was loaded.
        settings.client_authorities = self.mtls.authorities().ok().flatten().map(std::sync::Arc::new);
        settings.device_trust_ttl = Duration::days(i64::from(login.device_trust_days));
        settings.max_trusted_devices_per_user = login.max_trusted_devices_per_user;
        settings.passkey_replaces_code = login.passkey_replaces_code;
        settings.passkey_offer_pause =
            login.offer_passkey.then(|| Duration::days(i64::from(login.passkey_offer_pause_days)));
        settings.theme = self.theme.clone();
        // Checked when the configuration was loaded.
        settings.branding = self.theme.branding().unwrap_or_default();
        settings.default_locale = login.default_locale;
        settings.logout_delivery = portico_identity::backchannel::LogoutDelivery {
            timeout: std::time::Duration::from_millis(login.logout_timeout_ms.max(1)),
            retry_window: secs(login.logout_retry_window_secs),
        };
        settings
    }
}
