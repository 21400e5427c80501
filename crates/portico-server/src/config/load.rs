//! Reading the settings (defaults, the file, the environment) and checking
//! them: every problem is refused with the setting's name and how to set it.

use std::net::SocketAddr;
use std::path::Path;

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};

use super::*;

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

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
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
        self.tokens.algorithms()?;
        self.mtls.edge().map_err(ConfigError)?;
        self.mtls.authorities().map_err(ConfigError)?;
        self.mtls.server_tls().map_err(ConfigError)?;
        self.mtls.alias_base().map_err(ConfigError)?;
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
        if self.registration.initial_access_token.as_ref().is_some_and(|t| t.len() < 24) {
            return Err(ConfigError(
                "registration.initial_access_token (PORTICO_REGISTRATION__INITIAL_ACCESS_TOKEN) must be at least \
                 24 characters"
                    .into(),
            ));
        }
        if self.internal_token.as_ref().is_some_and(|t| t.len() < 24) {
            return Err(ConfigError("internal_token (PORTICO_INTERNAL_TOKEN) must be at least 24 characters".into()));
        }
        self.registration.software_statements()?;
        if self.registration.default_security_profile == portico_model::client::SecurityProfile::FapiRu
            && !self.mtls.presents_certificates()
        {
            return Err(ConfigError(
                "registration.default_security_profile = fapi-ru binds every new client's access tokens to its TLS \
                 certificate, which needs mutual TLS: set mtls.certificate_header (with mtls.trusted_proxies) or \
                 mtls.listen, or choose fapi2 or standard"
                    .into(),
            ));
        }
        let t = &self.tokens;
        for (name, value) in [
            ("tokens.authorization_code_ttl_secs", u64::from(t.authorization_code_ttl_secs)),
            ("tokens.access_token_ttl_secs", u64::from(t.access_token_ttl_secs)),
            ("tokens.refresh_token_ttl_secs", u64::from(t.refresh_token_ttl_secs)),
            ("login.process_ttl_secs", u64::from(self.login.process_ttl_secs)),
            ("login.session_ttl_secs", u64::from(self.login.session_ttl_secs)),
            ("console_sign_in_max_age_secs", u64::from(self.console_sign_in_max_age_secs)),
            ("login.max_sessions_per_user", u64::from(self.login.max_sessions_per_user)),
            ("login.max_trusted_devices_per_user", u64::from(self.login.max_trusted_devices_per_user)),
            ("login.password_hash_concurrency", u64::from(self.login.password_hash_concurrency)),
            ("login.otp_ttl_secs", u64::from(self.login.otp_ttl_secs)),
            ("login.otp_max_failures", u64::from(self.login.otp_max_failures)),
            ("login.otp_max_codes", u64::from(self.login.otp_max_codes)),
            ("login.otp_sends_before_pause", u64::from(self.login.otp_sends_before_pause)),
            ("login.captcha_after_failures", u64::from(self.login.captcha_after_failures)),
            ("login.delay_after_failures", u64::from(self.login.delay_after_failures)),
            ("login.first_delay_secs", u64::from(self.login.first_delay_secs)),
            ("login.max_delay_secs", u64::from(self.login.max_delay_secs)),
            ("login.address_captcha_after_failures", u64::from(self.login.address_captcha_after_failures)),
            ("login.address_delay_after_failures", u64::from(self.login.address_delay_after_failures)),
            ("login.failure_memory_hours", u64::from(self.login.failure_memory_hours)),
            ("login.unreported_attempt_secs", u64::from(self.login.unreported_attempt_secs)),
            ("http.header_read_timeout_secs", u64::from(self.http.header_read_timeout_secs)),
            ("http.idle_timeout_secs", u64::from(self.http.idle_timeout_secs)),
            ("http.body_timeout_secs", u64::from(self.http.body_timeout_secs)),
            ("http.max_connections", u64::from(self.http.max_connections)),
            ("notifications.timeout_ms", self.notifications.timeout_ms),
            ("notifications.lease_secs", self.notifications.lease_secs),
            ("notifications.per_merchant", u64::from(self.notifications.per_merchant)),
            ("notifications.in_flight", u64::from(self.notifications.in_flight)),
            ("reports.workers", u64::from(self.reports.workers)),
            ("reports.max_unfinished_per_company", u64::from(self.reports.max_unfinished_per_company)),
            ("reports.lease_secs", self.reports.lease_secs),
            ("reports.interval_ms", self.reports.interval_ms),
        ] {
            if value == 0 {
                return Err(ConfigError(format!("{name} must be greater than 0")));
            }
        }
        if !(1..600).contains(&self.par.request_uri_ttl_secs) {
            return Err(ConfigError(
                "par.request_uri_ttl_secs (PORTICO_PAR__REQUEST_URI_TTL_SECS) must be between 1 and 599 seconds \
                 (RFC 9126 asks for a short lifetime)"
                    .into(),
            ));
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
