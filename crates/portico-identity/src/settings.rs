//! Identity settings, resolved from the server configuration.

use portico_model::client::{AuthMethod, ClientSecurity, SecurityProfile};
use portico_model::otp::OtpPolicy;
use time::Duration;

/// Lifetimes and addresses the identity service works with.
#[derive(Debug, Clone)]
pub struct IdentitySettings {
    /// The issuer (`iss`), the public base URL without a trailing slash.
    pub issuer: String,
    pub authorization_code_ttl: Duration,
    pub access_token_ttl: Duration,
    pub refresh_token_ttl: Duration,
    pub login_process_ttl: Duration,
    pub session_ttl: Duration,
    /// Most live SSO sessions one user may hold: a login beyond it ends
    /// the user's oldest (`login.max_sessions_per_user`).
    pub max_sessions_per_user: u32,
    /// Whether cookies carry `Secure` (off only for a plain-HTTP loopback demo).
    pub secure_cookies: bool,
    /// Where a browser goes when there is nothing to return to (the spec's
    /// "default logout page").
    pub logged_out_url: String,
    pub otp: OtpPolicy,
    /// The password steps' guard against guessing: CAPTCHA and pauses.
    pub guard: crate::login::guard::GuardPolicy,
    /// Failed phone numbers of one login process after which the `phone`
    /// step requires a CAPTCHA.
    pub phone_captcha_after_failures: u32,
    /// Proxies whose `X-Forwarded-For` names the client's address.
    pub trusted_proxies: Vec<crate::client_address::Cidr>,
    /// Whether client certificates can reach Portico (a TLS terminator's
    /// header is configured): discovery offers certificate authentication
    /// only then.
    pub client_certificates: bool,
    /// The base of the mutual-TLS endpoint aliases (`mtls.public_url`,
    /// RFC 8705 §5): discovery publishes them, and assertions and DPoP
    /// proofs may name an endpoint under it.
    pub mtls_aliases: Option<String>,
    /// The authorities whose client certificates `tls_client_auth` takes;
    /// `None`: that method is not offered.
    pub client_authorities: Option<std::sync::Arc<portico_crypto::certificate::ClientAuthorities>>,
    /// How long a device stays trusted after a login with a second factor.
    pub device_trust_ttl: Duration,
    /// Most devices trusted for one user: trusting one beyond it forgets
    /// the user's least recently trusted (`login.max_trusted_devices_per_user`).
    pub max_trusted_devices_per_user: u32,
    /// Whether a passkey sign-in completes the login without a code.
    pub passkey_replaces_code: bool,
    /// After a login with a password and a code, a user without a passkey
    /// is offered to create one, and once declined not again for this
    /// long; `None`: never offered.
    pub passkey_offer_pause: Option<Duration>,
    /// The pages' language when neither the process nor the `svc.locale`
    /// cookie says; `None`: the browser's `Accept-Language`.
    pub default_locale: Option<portico_model::login::Locale>,
    /// `themeViewData` of the login pages.
    pub theme: crate::theme::Theme,
    /// The bank's name, logo, colours and notices on the pages.
    pub branding: crate::theme::Branding,
    /// How back-channel logouts are delivered.
    pub logout_delivery: crate::backchannel::LogoutDelivery,
    /// Whether dynamic client registration is on (an initial access token
    /// is configured): discovery then names `registration_endpoint`.
    pub registration: bool,
    /// The internal token (`internal_token`), with which the bank's own
    /// resource servers may introspect access tokens without a client.
    pub internal_token: Option<portico_crypto::hash::BearerSecret>,
    /// How long a pushed authorization request's `request_uri` may be used
    /// (RFC 9126; always under ten minutes).
    pub pushed_request_ttl: Duration,
    /// Every client's authorization requests must be pushed, whatever its
    /// own `require_pushed_authorization_requests`.
    pub require_pushed_requests: bool,
    /// DPoP proofs at the token and PAR endpoints must carry a nonce the
    /// server gave (`DPoP-Nonce`, RFC 9449 §8).
    pub dpop_require_nonce: bool,
}

impl IdentitySettings {
    /// Defaults for `issuer`, as PRODUCT.md decides them.
    pub fn with_issuer(issuer: impl Into<String>) -> Self {
        let issuer = issuer.into().trim_end_matches('/').to_owned();
        Self {
            logged_out_url: format!("{issuer}/logged-out"),
            secure_cookies: issuer.starts_with("https://"),
            issuer,
            authorization_code_ttl: Duration::minutes(5),
            access_token_ttl: Duration::minutes(15),
            refresh_token_ttl: Duration::days(30),
            login_process_ttl: Duration::minutes(15),
            session_ttl: Duration::hours(12),
            max_sessions_per_user: 30,
            otp: OtpPolicy::default(),
            guard: crate::login::guard::GuardPolicy::default(),
            phone_captcha_after_failures: 3,
            trusted_proxies: Vec::new(),
            client_certificates: false,
            mtls_aliases: None,
            client_authorities: None,
            device_trust_ttl: Duration::days(180),
            max_trusted_devices_per_user: 30,
            passkey_replaces_code: true,
            passkey_offer_pause: Some(Duration::days(30)),
            theme: crate::theme::Theme::default(),
            default_locale: None,
            logout_delivery: crate::backchannel::LogoutDelivery::default(),
            registration: false,
            internal_token: None,
            pushed_request_ttl: Duration::seconds(60),
            require_pushed_requests: false,
            dpop_require_nonce: false,
            branding: crate::theme::Branding::default(),
        }
    }

    /// How long an authorization code for a client of `profile` lives (and
    /// a signed authorization response, JARM, which carries it):
    /// `authorization_code_ttl`, at most the profile's limit (60 s under `fapi2`).
    pub fn code_ttl(&self, profile: portico_model::client::SecurityProfile) -> Duration {
        let ttl = self.authorization_code_ttl;
        profile.max_code_ttl().map_or(ttl, |max| ttl.min(max))
    }

    /// How long a retired signing key stays published: long enough for every
    /// token it signed to expire.
    pub fn key_retention(&self) -> Duration {
        self.access_token_ttl.max(self.authorization_code_ttl) + Duration::minutes(5)
    }

    /// What of mutual TLS this server can do.
    pub fn certificates(&self) -> CertificateSupport {
        CertificateSupport { presented: self.client_certificates, authorities: self.client_authorities.is_some() }
    }
}

/// What of mutual TLS (RFC 8705) a server can do: discovery offers, and
/// registration takes, only what a client can then use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CertificateSupport {
    /// Client certificates reach Portico (a terminator's header is
    /// configured, or Portico's own mutual-TLS listener).
    pub presented: bool,
    /// Authorities are configured to check `tls_client_auth` certificates
    /// against.
    pub authorities: bool,
}

impl CertificateSupport {
    /// Whether a client can authenticate with `method` here.
    pub fn takes(self, method: AuthMethod) -> bool {
        match method {
            AuthMethod::TlsClientAuth => self.presented && self.authorities,
            method => self.presented || !method.uses_certificate(),
        }
    }

    /// What in `security` under `profile` no client could meet here, named
    /// by its registration metadata, with what to use instead; `None` when
    /// all of it can work.
    pub fn unmet(self, security: &ClientSecurity, profile: SecurityProfile) -> Option<String> {
        const NO_CERTIFICATES: &str = "client certificates do not reach this server (it has no mutual TLS)";
        let method = security.token_endpoint_auth_method;
        if !self.takes(method) {
            return Some(if self.presented {
                format!(
                    "token_endpoint_auth_method: {method} is not offered, as this server trusts no certificate \
                     authority for it; use self_signed_tls_client_auth or private_key_jwt"
                )
            } else {
                format!(
                    "token_endpoint_auth_method: {method} is not offered, as {NO_CERTIFICATES}; use private_key_jwt"
                )
            });
        }
        if self.presented {
            return None;
        }
        if security.tls_client_certificate_bound_access_tokens {
            return Some(format!(
                "tls_client_certificate_bound_access_tokens: {NO_CERTIFICATES}; use dpop_bound_access_tokens"
            ));
        }
        (profile == SecurityProfile::FapiRu).then(|| {
            format!("security_profile: fapi-ru binds access tokens to the client's certificate, but {NO_CERTIFICATES}")
        })
    }
}
