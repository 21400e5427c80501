//! The identity service: an OAuth 2.1 / OpenID Connect provider
//! (Authorization Code + PKCE S256) with a server-held browser login.
//!
//! - [`oauth2`]: the protocol endpoints (`/oauth2/*`, discovery, userinfo).
//! - [`login`]: the login process and its pages (`/login*`, `/error`).
//! - [`http`]: the redirects all of them answer with.
//! - [`tokens`]: issuing access tokens, id_tokens and refresh tokens
//!   (checking them, and the signing keys, are `portico-tokens`', shared
//!   with every API that accepts them).

pub mod backchannel;
pub mod captcha;
pub mod captcha_http;
pub mod client_address;
pub mod client_keys;
pub mod cookies;
pub mod delivery;
pub mod dpop;
pub mod edge;
pub mod http;
pub mod login;
pub mod mtls;
pub mod negotiation;
pub mod oauth2;
pub mod openapi;
pub mod own_client;
pub mod passkeys;
pub mod passwords;
pub mod settings;
pub mod theme;
pub mod tokens;

use std::sync::Arc;

use axum::Router;
use portico_crypto::cookie::CookieSigner;
use portico_model::audit::AuditEvent;
use portico_model::clock::Clock;
use portico_storage::Storage;

pub use settings::IdentitySettings;

/// Everything the identity handlers need, shared by all requests.
pub struct Identity {
    pub store: Arc<dyn Storage>,
    pub clock: Arc<dyn Clock>,
    pub settings: IdentitySettings,
    /// The signing keys and the checking of tokens, shared with the APIs.
    pub tokens: Arc<portico_tokens::TokenVerifier>,
    pub cookies: CookieSigner,
    pub passwords: Arc<passwords::PasswordChecker>,
    /// Where one-time codes go.
    pub otp_sender: Arc<dyn delivery::OtpSender>,
    pub captcha: Arc<dyn captcha::CaptchaVerifier>,
    /// The keys client assertions are checked with.
    pub client_keys: client_keys::ClientKeys,
    /// The WebAuthn relying party (off on a public URL that is an IP address).
    pub passkeys: passkeys::Passkeys,
}

pub type IdentityState = Arc<Identity>;

impl Identity {
    /// Records a security event. A failure to record is logged, not raised:
    /// the request it belongs to has already been decided.
    pub async fn audit(&self, event: AuditEvent) {
        if let Err(error) = self.store.record_audit(&event).await {
            tracing::warn!(kind = %event.kind, %error, "could not record an audit event");
        }
    }
}

impl Identity {
    /// The client's address for a request (see [`client_address`]).
    pub fn client_address(
        &self,
        headers: &axum::http::HeaderMap,
        peer: Option<std::net::SocketAddr>,
    ) -> Option<std::net::IpAddr> {
        client_address::client_address(&self.settings.trusted_proxies, headers, peer)
    }
}

/// Every identity route.
pub fn router(state: IdentityState) -> Router {
    Router::new().merge(oauth2::router()).merge(login::router()).with_state(state)
}
