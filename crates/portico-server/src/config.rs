//! Settings: compiled-in defaults, then an optional TOML file, then
//! `PORTICO_*` environment variables (nested keys with `__`, e.g.
//! `PORTICO_TOKENS__ACCESS_TOKEN_TTL_SECS`). Unknown keys and invalid values
//! stop the start with a message naming the setting. `docs/configuration.md`
//! lists every setting with its default.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use portico_identity::IdentitySettings;
use serde::{Deserialize, Serialize};
use time::Duration;

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
    /// Its PKCS#8 ECDSA P-256 key (PEM).
    pub signing_key: Option<std::path::PathBuf>,
    /// Days a finished task (`DONE` or `FAILED`) and its files are kept;
    /// `0` keeps them for ever.
    pub retention_days: u32,
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
            retention_days: 365,
            broker: portico_reports::generate::broker::Broker::default(),
        }
    }
}

/// Merchant notifications.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NotificationConfig {
    /// Accept plain `http` and private-network callback addresses (for the
    /// demo and local development only).
    pub allow_insecure_callbacks: bool,
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
            allow_insecure_callbacks: false,
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
    /// Connections open at once; past that, new ones wait to be accepted.
    pub max_connections: u32,
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
            max_connections: 1024,
            hsts_max_age_secs: 31_536_000,
            trusted_proxies: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TokenConfig {
    pub authorization_code_ttl_secs: u32,
    pub access_token_ttl_secs: u32,
    pub refresh_token_ttl_secs: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoginConfig {
    /// Lifetime of a login process.
    pub process_ttl_secs: u32,
    /// Lifetime of the SSO session after a completed login.
    pub session_ttl_secs: u32,
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
    /// How long a device stays trusted after a login with a second factor.
    pub device_trust_days: u32,
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
            internal_token: None,
            log: "info".to_owned(),
            log_format: LogFormat::Text,
            cookie_secure: None,
            cleanup_interval_secs: 300,
            http: HttpConfig::default(),
            telemetry: TelemetryConfig::default(),
            tokens: TokenConfig::default(),
            login: LoginConfig::default(),
            delivery: DeliveryConfig::default(),
            captcha: CaptchaConfig::default(),
            theme: portico_identity::theme::Theme::default(),
            notifications: NotificationConfig::default(),
            reports: ReportConfig::default(),
        }
    }
}

impl Default for TokenConfig {
    fn default() -> Self {
        Self { authorization_code_ttl_secs: 300, access_token_ttl_secs: 900, refresh_token_ttl_secs: 30 * 24 * 3600 }
    }
}

impl Default for LoginConfig {
    fn default() -> Self {
        Self {
            process_ttl_secs: 900,
            session_ttl_secs: 12 * 3600,
            password_hash_concurrency: 2,
            otp_length: 6,
            otp_ttl_secs: 300,
            otp_max_failures: 3,
            otp_max_codes: 5,
            otp_resend_secs: 60,
            captcha_after_failures: 3,
            delay_after_failures: 5,
            first_delay_secs: 30,
            max_delay_secs: 3600,
            address_captcha_after_failures: 10,
            address_delay_after_failures: 30,
            failure_memory_hours: 24,
            device_trust_days: 180,
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
    /// Defaults, then `file` (if any), then the environment.
    ///
    /// # Errors
    /// [`ConfigError`] naming the setting that is unknown or invalid.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        if let Some(file) = file {
            if !file.exists() {
                return Err(ConfigError(format!("config file {} does not exist", file.display())));
            }
            figment = figment.merge(Toml::file(file));
        }
        // PORTICO_TEST_* belong to the test suite, not to the server; the
        // service links Kubernetes makes for a Service named `portico` are
        // not settings either.
        let links = kubernetes_service_links(std::env::vars());
        let env = Env::prefixed("PORTICO_").split("__").filter(move |key| {
            let key = key.as_str().to_ascii_lowercase();
            !key.starts_with("test_") && !links.contains(&key)
        });
        let config: Config = figment.merge(env).extract().map_err(|e| ConfigError(describe(e)))?;
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        self.theme.branding().map_err(ConfigError)?;
        let url = url::Url::parse(&self.public_url())
            .map_err(|e| ConfigError(format!("public_url (PORTICO_PUBLIC_URL): {e}")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
            return Err(ConfigError("public_url (PORTICO_PUBLIC_URL) must be an http:// or https:// URL".into()));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(ConfigError("public_url (PORTICO_PUBLIC_URL) must not have a query or fragment".into()));
        }
        self.database()?;
        if let Some(endpoint) = &self.telemetry.otlp_endpoint {
            let url = url::Url::parse(endpoint)
                .map_err(|e| ConfigError(format!("telemetry.otlp_endpoint (PORTICO_TELEMETRY__OTLP_ENDPOINT): {e}")))?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(ConfigError(
                    "telemetry.otlp_endpoint (PORTICO_TELEMETRY__OTLP_ENDPOINT) must be an http:// or https:// URL"
                        .into(),
                ));
            }
        }
        if self.metrics_listen.is_some_and(|metrics| metrics == self.listen && metrics.port() != 0) {
            return Err(ConfigError(
                "metrics_listen (PORTICO_METRICS_LISTEN) must differ from listen: it is a second listener".into(),
            ));
        }
        if self.admin_token.as_ref().is_some_and(|t| t.len() < 24) {
            return Err(ConfigError("admin_token (PORTICO_ADMIN_TOKEN) must be at least 24 characters".into()));
        }
        for (name, token) in &self.admin_tokens {
            let name_ok = !name.is_empty()
                && name.len() <= 32
                && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
            if !name_ok {
                return Err(ConfigError(format!(
                    "admin_tokens: the name {name:?} must be 1 to 32 of a-z 0-9 - _ (environment names are lowercased)"
                )));
            }
            if token.len() < 24 {
                return Err(ConfigError(format!("admin_tokens.{name} must be at least 24 characters")));
            }
            if name == "admin" && self.admin_token.is_some() {
                return Err(ConfigError(
                    "admin_tokens.admin: the name admin is admin_token's; choose another name".into(),
                ));
            }
        }
        let mut tokens: Vec<&String> = self.admin_tokens.values().chain(&self.admin_token).collect();
        tokens.sort();
        if tokens.windows(2).any(|pair| pair[0] == pair[1]) {
            return Err(ConfigError("admin_tokens: two admin tokens are the same; give each its own".into()));
        }
        if self.scim_token.as_ref().is_some_and(|t| t.len() < 24) {
            return Err(ConfigError("scim_token (PORTICO_SCIM_TOKEN) must be at least 24 characters".into()));
        }
        if self.internal_token.as_ref().is_some_and(|t| t.len() < 24) {
            return Err(ConfigError("internal_token (PORTICO_INTERNAL_TOKEN) must be at least 24 characters".into()));
        }
        let t = &self.tokens;
        for (name, value) in [
            ("tokens.authorization_code_ttl_secs", u64::from(t.authorization_code_ttl_secs)),
            ("tokens.access_token_ttl_secs", u64::from(t.access_token_ttl_secs)),
            ("tokens.refresh_token_ttl_secs", u64::from(t.refresh_token_ttl_secs)),
            ("login.process_ttl_secs", u64::from(self.login.process_ttl_secs)),
            ("login.session_ttl_secs", u64::from(self.login.session_ttl_secs)),
            ("login.password_hash_concurrency", u64::from(self.login.password_hash_concurrency)),
            ("login.otp_ttl_secs", u64::from(self.login.otp_ttl_secs)),
            ("login.otp_max_failures", u64::from(self.login.otp_max_failures)),
            ("login.otp_max_codes", u64::from(self.login.otp_max_codes)),
            ("login.captcha_after_failures", u64::from(self.login.captcha_after_failures)),
            ("login.delay_after_failures", u64::from(self.login.delay_after_failures)),
            ("login.first_delay_secs", u64::from(self.login.first_delay_secs)),
            ("login.max_delay_secs", u64::from(self.login.max_delay_secs)),
            ("login.address_captcha_after_failures", u64::from(self.login.address_captcha_after_failures)),
            ("login.address_delay_after_failures", u64::from(self.login.address_delay_after_failures)),
            ("login.failure_memory_hours", u64::from(self.login.failure_memory_hours)),
            ("http.header_read_timeout_secs", u64::from(self.http.header_read_timeout_secs)),
            ("http.idle_timeout_secs", u64::from(self.http.idle_timeout_secs)),
            ("http.max_connections", u64::from(self.http.max_connections)),
            ("notifications.timeout_ms", self.notifications.timeout_ms),
            ("notifications.lease_secs", self.notifications.lease_secs),
            ("notifications.per_merchant", u64::from(self.notifications.per_merchant)),
            ("notifications.in_flight", u64::from(self.notifications.in_flight)),
            ("reports.workers", u64::from(self.reports.workers)),
            ("reports.lease_secs", self.reports.lease_secs),
            ("reports.interval_ms", self.reports.interval_ms),
        ] {
            if value == 0 {
                return Err(ConfigError(format!("{name} must be greater than 0")));
            }
        }
        let d = &self.delivery;
        if d.sms == Some(SmsDelivery::Http) && d.sms_gateway_url.is_none() {
            return Err(ConfigError("delivery.sms = \"http\" needs delivery.sms_gateway_url".into()));
        }
        if d.email == Some(EmailDelivery::Smtp) && d.smtp_url.is_none() {
            return Err(ConfigError("delivery.email = \"smtp\" needs delivery.smtp_url".into()));
        }
        if self.captcha.kind == Some(CaptchaKind::Smartcaptcha)
            && (self.captcha.server_key.is_none() || self.captcha.site_key.is_none())
        {
            return Err(ConfigError(
                "captcha.kind = \"smartcaptcha\" needs captcha.server_key and captcha.site_key".into(),
            ));
        }
        if self.notifications.lease_secs.saturating_mul(1_000) < self.notifications.timeout_ms.saturating_mul(2) {
            return Err(ConfigError(
                "notifications.lease_secs must be at least twice notifications.timeout_ms, so that an attempt \
                 ends within its lease"
                    .into(),
            ));
        }
        let n = &self.notifications;
        if n.retry_waits_secs.is_empty() || n.retry_waits_secs.contains(&0) {
            return Err(ConfigError(
                "notifications.retry_waits_secs must list at least one wait, each greater than 0 seconds".into(),
            ));
        }
        if n.retry_window_secs == 0 || n.retry_waits_secs.iter().any(|w| *w > n.retry_window_secs) {
            return Err(ConfigError(
                "notifications.retry_window_secs must be greater than 0 and at least each of \
                 notifications.retry_waits_secs"
                    .into(),
            ));
        }
        if self.reports.retention_days > 36_500 {
            return Err(ConfigError(
                "reports.retention_days must be at most 36500 (100 years); 0 keeps reports for ever".into(),
            ));
        }
        let broker = self.reports.broker.problems();
        if !broker.is_empty() {
            return Err(ConfigError(broker.join("; ")));
        }
        if self.notifications.retention_days > 36_500 {
            return Err(ConfigError(
                "notifications.retention_days must be at most 36500 (100 years); 0 keeps deliveries for ever".into(),
            ));
        }
        if !(4..=10).contains(&self.login.otp_length) {
            return Err(ConfigError("login.otp_length must be between 4 and 10 digits".into()));
        }
        let l = &self.login;
        if l.delay_after_failures <= l.captcha_after_failures
            || l.address_delay_after_failures <= l.address_captcha_after_failures
        {
            return Err(ConfigError(
                "login.delay_after_failures must be greater than login.captcha_after_failures (and \
                 login.address_delay_after_failures greater than login.address_captcha_after_failures): \
                 a CAPTCHA comes before pauses"
                    .into(),
            ));
        }
        if l.max_delay_secs < l.first_delay_secs {
            return Err(ConfigError("login.max_delay_secs must not be shorter than login.first_delay_secs".into()));
        }
        if t.refresh_token_ttl_secs < t.access_token_ttl_secs {
            return Err(ConfigError(
                "tokens.refresh_token_ttl_secs must not be shorter than the access token's".into(),
            ));
        }
        if self.database_acquire_timeout_secs == 0 {
            return Err(ConfigError("database_acquire_timeout_secs must be greater than 0".into()));
        }
        if self.database_cache_staleness_ms > 60_000 {
            return Err(ConfigError(
                "database_cache_staleness_ms must be at most 60000: a revoked token would be accepted that long".into(),
            ));
        }
        if self.database_max_connections == 0 {
            return Err(ConfigError("database_max_connections must be greater than 0".into()));
        }
        if self.cleanup_interval_secs == 0 {
            return Err(ConfigError("cleanup_interval_secs must be greater than 0".into()));
        }
        Ok(())
    }

    /// What `portico serve` checks beyond [`Config::load`]: outside the demo,
    /// one-time codes and CAPTCHAs must have a way out chosen by name, so
    /// that production never runs on the development outbox or the
    /// development CAPTCHA by accident. Returns the warnings to log for a
    /// development choice made explicitly.
    ///
    /// # Errors
    /// [`ConfigError`] naming the setting to choose.
    pub fn check_serve(&self, demo: bool) -> Result<Vec<String>, ConfigError> {
        if demo {
            return Ok(Vec::new());
        }
        let unset = |setting: &str, env: &str, choices: &str| {
            ConfigError(format!(
                "{setting} ({env}) is not set: choose {choices}. Outside `--demo` Portico does not pick a \
                 development default for it"
            ))
        };
        let d = &self.delivery;
        let sms = d.sms.ok_or_else(|| {
            unset(
                "delivery.sms",
                "PORTICO_DELIVERY__SMS",
                "\"http\" (the SMS gateway) or \"outbox\" (development: codes in clear in a local file)",
            )
        })?;
        let email = d.email.ok_or_else(|| {
            unset(
                "delivery.email",
                "PORTICO_DELIVERY__EMAIL",
                "\"smtp\" or \"outbox\" (development: codes in clear in a local file)",
            )
        })?;
        let captcha = self.captcha.kind.ok_or_else(|| {
            unset(
                "captcha.kind",
                "PORTICO_CAPTCHA__KIND",
                "\"smartcaptcha\" or \"dev\" (development: a checkbox anyone passes)",
            )
        })?;
        let outbox = self.data_dir.join("outbox.jsonl");
        let mut warnings = Vec::new();
        if sms == SmsDelivery::Outbox || email == EmailDelivery::Outbox {
            warnings.push(format!(
                "development delivery: one-time codes are written in clear to {} (delivery.sms / delivery.email = \
                 \"outbox\"); do not use this in production",
                outbox.display()
            ));
        }
        if captcha == CaptchaKind::Dev {
            warnings.push(
                "development CAPTCHA: anyone passes it (captcha.kind = \"dev\"); do not use this in production".into(),
            );
        }
        Ok(warnings)
    }

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

    /// Identity settings derived from this configuration.
    /// The admin tokens with their names, and the internal token.
    pub fn api_tokens(&self) -> portico_api::ApiTokens {
        let admin = self.admin_token.iter().map(|token| ("admin", token.as_str()));
        let named = self.admin_tokens.iter().map(|(name, token)| (name.as_str(), token.as_str()));
        portico_api::ApiTokens::new(admin.chain(named), self.internal_token.as_deref())
    }

    pub fn identity_settings(&self) -> IdentitySettings {
        let mut settings = IdentitySettings::with_issuer(self.public_url());
        let secs = |s: u32| Duration::seconds(i64::from(s));
        settings.authorization_code_ttl = secs(self.tokens.authorization_code_ttl_secs);
        settings.access_token_ttl = secs(self.tokens.access_token_ttl_secs);
        settings.refresh_token_ttl = secs(self.tokens.refresh_token_ttl_secs);
        settings.login_process_ttl = secs(self.login.process_ttl_secs);
        settings.session_ttl = secs(self.login.session_ttl_secs);
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
            memory: Duration::hours(i64::from(login.failure_memory_hours)),
        };
        settings.phone_captcha_after_failures = login.captcha_after_failures;
        settings.trusted_proxies = self.http.trusted_proxies.clone();
        settings.device_trust_ttl = Duration::days(i64::from(login.device_trust_days));
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

/// The `PORTICO_…` variables (lowercased, without the prefix) that
/// Kubernetes injects for a Service named `portico` ("service links"):
/// `PORTICO_SERVICE_HOST` (an IP address), `PORTICO_SERVICE_PORT` and
/// `PORTICO_SERVICE_PORT_<NAME>` (port numbers), `PORTICO_PORT`
/// (`tcp://ip:port`) and `PORTICO_PORT_<N>_<PROTO>[_PROTO|_PORT|_ADDR]`.
/// Each is recognised by its name and the shape of its value, so that a
/// misspelt setting is still refused.
fn kubernetes_service_links(vars: impl Iterator<Item = (String, String)>) -> Vec<String> {
    let is_port = |v: &str| v.parse::<u16>().is_ok();
    let is_ip = |v: &str| v.parse::<std::net::IpAddr>().is_ok();
    let is_url = |v: &str| {
        ["tcp://", "udp://", "sctp://"]
            .iter()
            .any(|scheme| v.strip_prefix(scheme).is_some_and(|a| a.parse::<SocketAddr>().is_ok()))
    };
    vars.filter_map(|(name, value)| {
        let key = name.strip_prefix("PORTICO_")?.to_ascii_lowercase();
        let link = match key.as_str() {
            "service_host" => is_ip(&value),
            "service_port" => is_port(&value),
            "port" => is_url(&value),
            _ if key.starts_with("service_port_") => is_port(&value),
            _ => match key.strip_prefix("port_").map(|rest| rest.split('_').collect::<Vec<_>>()).as_deref() {
                Some([number, proto, rest @ ..])
                    if number.parse::<u16>().is_ok() && matches!(*proto, "tcp" | "udp" | "sctp") =>
                {
                    match rest {
                        [] => is_url(&value),
                        ["proto"] => value.eq_ignore_ascii_case(proto),
                        ["port"] => is_port(&value),
                        ["addr"] => is_ip(&value),
                        _ => false,
                    }
                }
                _ => false,
            },
        };
        link.then_some(key)
    })
    .collect()
}

/// Figment's error, with the setting's environment variable spelled out.
fn describe(error: figment::Error) -> String {
    error
        .into_iter()
        .map(|e| {
            let path = e.path.join(".");
            let env = format!("PORTICO_{}", e.path.join("__").to_uppercase());
            match &e.kind {
                figment::error::Kind::UnknownField(field, _) => {
                    let full = if path.is_empty() { field.as_str() } else { path.as_str() };
                    format!("unknown setting `{full}` (from {}): see docs/configuration.md", source(&e))
                }
                _ if path.is_empty() => e.to_string(),
                kind => format!("setting `{path}` ({env}): {kind}"),
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn source(error: &figment::Error) -> String {
    error.metadata.as_ref().map_or_else(|| "configuration".to_owned(), |m| m.name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_documented_values() {
        let config = Config::default();
        config.validate().unwrap();
        assert_eq!(config.public_url(), "http://127.0.0.1:8080");
        assert_eq!(config.database().unwrap(), Database::Sqlite("sqlite://./data/portico.db".into()));
        assert!(!config.identity_settings().secure_cookies);
    }

    #[test]
    #[allow(clippy::result_large_err, reason = "figment::Jail fixes the closure's error type")]
    fn the_theme_and_delivery_come_from_the_file() {
        figment::Jail::expect_with(|jail| {
            jail.create_file(
                "portico.toml",
                r#"
[theme]
passwordResetEnabled = true
[theme.supportDrawer.ru]
title = "Поддержка"
chatButtonText = "Написать в чат"
[[theme.supportDrawer.ru.sections]]
title = "Телефоны"
items = [{ icon = "phone", title = "По России", value = "8 800 000-00-00" }]
[[theme.systemMessages.ru]]
id = "6f1c2a8e-8d5b-4a43-9d3e-2f1a9f0c7b11"
title = "Работы"
message = "Ночью возможны перерывы"

[delivery]
sms = "http"
"#,
            )?;
            let error = Config::load(Some(Path::new("portico.toml"))).unwrap_err().to_string();
            assert!(error.contains("sms_gateway_url"), "{error}");
            jail.set_env("PORTICO_DELIVERY__SMS_GATEWAY_URL", "https://sms.example/send");
            let config = Config::load(Some(Path::new("portico.toml"))).map_err(|e| e.to_string())?;
            let theme = config.identity_settings().theme;
            assert!(theme.password_reset_enabled);
            let view = serde_json::to_value(theme.view()).unwrap();
            assert_eq!(view["supportDrawer"]["ru"]["chatButtonText"], "Написать в чат");
            assert_eq!(view["supportDrawer"]["ru"]["sections"][0]["items"][0]["value"], "8 800 000-00-00");
            assert_eq!(view["systemMessages"]["ru"][0]["title"], "Работы");
            assert_eq!(view["passwordResetEnabled"], true);
            Ok(())
        });
    }

    #[test]
    #[allow(clippy::result_large_err, reason = "figment::Jail fixes the closure's error type")]
    fn a_theme_colour_too_faint_for_its_text_stops_the_start_naming_it() {
        figment::Jail::expect_with(|jail| {
            jail.create_file("portico.toml", "[theme]\naccentColor = \"#ffd400\"\nbankName = { ru = \"Банк\" }\n")?;
            let error = Config::load(Some(Path::new("portico.toml"))).unwrap_err().to_string();
            assert!(error.contains("theme.accentColor: #ffd400 has a contrast of 1.4:1"), "{error}");
            jail.create_file("portico.toml", "[theme]\naccentColor = \"#0b5d1e\"\n")?;
            let config = Config::load(Some(Path::new("portico.toml"))).map_err(|e| e.to_string())?;
            assert!(config.identity_settings().branding.css.contains("#0b5d1e"));
            Ok(())
        });
    }

    #[test]
    fn serve_outside_the_demo_needs_code_delivery_and_captcha_chosen_by_name() {
        let mut config = Config::default();
        assert!(config.check_serve(true).unwrap().is_empty(), "the demo picks the development ways");
        let error = config.check_serve(false).unwrap_err().to_string();
        assert!(error.contains("delivery.sms") && error.contains("PORTICO_DELIVERY__SMS"), "{error}");
        config.delivery.sms = Some(SmsDelivery::Http);
        let error = config.check_serve(false).unwrap_err().to_string();
        assert!(error.contains("delivery.email"), "{error}");
        config.delivery.email = Some(EmailDelivery::Smtp);
        let error = config.check_serve(false).unwrap_err().to_string();
        assert!(error.contains("captcha.kind"), "{error}");
        config.captcha.kind = Some(CaptchaKind::Smartcaptcha);
        assert!(config.check_serve(false).unwrap().is_empty(), "production ways: no warning");

        config.delivery.email = Some(EmailDelivery::Outbox);
        config.captcha.kind = Some(CaptchaKind::Dev);
        let warnings = config.check_serve(false).unwrap();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("outbox.jsonl") && warnings[1].contains("captcha.kind"), "{warnings:?}");
    }

    #[test]
    #[allow(clippy::result_large_err, reason = "figment::Jail fixes the closure's error type")]
    fn admin_tokens_come_named_from_the_environment_and_are_checked() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("PORTICO_ADMIN_TOKEN", "the-admin-token-0123456789");
            jail.set_env("PORTICO_ADMIN_TOKENS__CI", "the-ci-token-0123456789abc");
            let config = Config::load(None).unwrap();
            assert_eq!(config.admin_tokens.get("ci").map(String::as_str), Some("the-ci-token-0123456789abc"));
            let mut headers = axum::http::HeaderMap::new();
            headers.insert("authorization", "Bearer the-ci-token-0123456789abc".parse().unwrap());
            assert_eq!(config.api_tokens().admin(&headers).unwrap().actor.to_string(), "token:ci");
            jail.set_env("PORTICO_ADMIN_TOKENS__CI", "the-admin-token-0123456789");
            let error = Config::load(None).unwrap_err().to_string();
            assert!(error.contains("two admin tokens are the same"), "{error}");
            jail.set_env("PORTICO_ADMIN_TOKENS__CI", "short");
            assert!(Config::load(None).unwrap_err().to_string().contains("admin_tokens.ci must be at least 24"));
            jail.set_env("PORTICO_ADMIN_TOKENS__ADMIN", "another-token-0123456789ab");
            jail.set_env("PORTICO_ADMIN_TOKENS__CI", "the-ci-token-0123456789abc");
            assert!(Config::load(None).unwrap_err().to_string().contains("the name admin is admin_token's"));
            Ok(())
        });
    }

    #[test]
    fn the_retry_schedule_is_checked_at_start() {
        let mut config = Config::default();
        config.notifications.retry_waits_secs = vec![2, 5];
        config.notifications.retry_window_secs = 20;
        config.validate().unwrap();
        config.notifications.retry_waits_secs = vec![];
        assert!(config.validate().unwrap_err().to_string().contains("notifications.retry_waits_secs"));
        config.notifications.retry_waits_secs = vec![2, 0];
        assert!(config.validate().unwrap_err().to_string().contains("greater than 0"));
        config.notifications.retry_waits_secs = vec![30];
        assert!(config.validate().unwrap_err().to_string().contains("notifications.retry_window_secs"));
    }

    #[test]
    #[allow(clippy::result_large_err, reason = "figment::Jail fixes the closure's error type")]
    fn kubernetes_service_links_are_not_settings_but_misspelt_settings_still_are() {
        figment::Jail::expect_with(|jail| {
            for (name, value) in [
                ("PORTICO_PORT", "tcp://10.96.0.12:8080"),
                ("PORTICO_SERVICE_HOST", "10.96.0.12"),
                ("PORTICO_SERVICE_PORT", "8080"),
                ("PORTICO_SERVICE_PORT_HTTP", "8080"),
                ("PORTICO_PORT_8080_TCP", "tcp://10.96.0.12:8080"),
                ("PORTICO_PORT_8080_TCP_PROTO", "tcp"),
                ("PORTICO_PORT_8080_TCP_PORT", "8080"),
                ("PORTICO_PORT_8080_TCP_ADDR", "10.96.0.12"),
            ] {
                jail.set_env(name, value);
            }
            let config = Config::load(None).map_err(|e| e.to_string())?;
            assert_eq!(config.listen, Config::default().listen);

            jail.set_env("PORTICO_LISTNE", "0.0.0.0:8080");
            let error = Config::load(None).unwrap_err().to_string();
            assert!(error.contains("listne"), "{error}");
            jail.clear_env();
            // A `PORTICO_PORT` that is no service link is still refused.
            jail.set_env("PORTICO_PORT", "9000");
            let error = Config::load(None).unwrap_err().to_string();
            assert!(error.contains("unknown setting `port`"), "{error}");
            Ok(())
        });
    }

    #[test]
    #[allow(clippy::result_large_err, reason = "figment::Jail fixes the closure's error type")]
    fn unknown_and_invalid_settings_are_named() {
        figment::Jail::expect_with(|jail| {
            jail.create_file("portico.toml", "listen = \"127.0.0.1:9000\"\nlisten_port = 1\n")?;
            let error = Config::load(Some(Path::new("portico.toml"))).unwrap_err().to_string();
            assert!(error.contains("listen_port"), "{error}");

            jail.create_file("portico.toml", "[tokens]\naccess_token_ttl_secs = \"soon\"\n")?;
            let error = Config::load(Some(Path::new("portico.toml"))).unwrap_err().to_string();
            assert!(error.contains("tokens.access_token_ttl_secs"), "{error}");

            jail.create_file("portico.toml", "")?;
            jail.set_env("PORTICO_LISTEN", "not an address");
            let error = Config::load(Some(Path::new("portico.toml"))).unwrap_err().to_string();
            assert!(error.contains("PORTICO_LISTEN"), "{error}");

            jail.set_env("PORTICO_LISTEN", "127.0.0.1:9001");
            jail.set_env("PORTICO_DATABASE_URL", "mysql://x");
            let error = Config::load(None).unwrap_err().to_string();
            assert!(error.contains("PORTICO_DATABASE_URL"), "{error}");

            jail.set_env("PORTICO_DATABASE_URL", "postgres://u@h/db");
            jail.set_env("PORTICO_TEST_POSTGRES_URL", "ignored");
            jail.set_env("PORTICO_TOKENS__ACCESS_TOKEN_TTL_SECS", "60");
            let config = Config::load(None).unwrap();
            assert_eq!(config.listen.port(), 9001);
            assert_eq!(config.tokens.access_token_ttl_secs, 60);
            assert_eq!(config.database().unwrap(), Database::Postgres("postgres://u@h/db".into()));

            jail.set_env("PORTICO_LISTN", "1");
            let error = Config::load(None).unwrap_err().to_string();
            assert!(error.contains("listn"), "{error}");
            Ok(())
        });
    }

    #[test]
    #[allow(clippy::result_large_err, reason = "figment::Jail fixes the closure's error type")]
    fn metrics_listen_is_a_second_address() {
        figment::Jail::expect_with(|jail| {
            assert_eq!(Config::load(None).unwrap().metrics_listen, None, "off by default");
            jail.set_env("PORTICO_LISTEN", "127.0.0.1:9001");
            jail.set_env("PORTICO_METRICS_LISTEN", "127.0.0.1:9001");
            let error = Config::load(None).unwrap_err().to_string();
            assert!(error.contains("metrics_listen"), "the public address twice: {error}");
            jail.set_env("PORTICO_METRICS_LISTEN", "127.0.0.1:9100");
            assert_eq!(Config::load(None).unwrap().metrics_listen, Some("127.0.0.1:9100".parse().unwrap()));
            Ok(())
        });
    }
}
