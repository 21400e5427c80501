//! Portico's own web applications (the operator console at `/console`,
//! the customer's account page at `/account`) are OpenID Connect clients
//! of Portico itself. This is what they share:
//!
//! 1. [`OwnClient::start`] makes a `state`, a `nonce` and a PKCE verifier
//!    (kept by the application in a sealed cookie of its own) and the
//!    address of `/oauth2/authorize` (code flow, S256, scope `openid`,
//!    `ui_locales` the page's language).
//! 2. Portico's own login runs as for any client (password, codes,
//!    passkeys, CAPTCHA, single sign-on).
//! 3. [`OwnClient::finish`] checks `state` (constant time), redeems the
//!    code with the verifier through the token endpoint's own code (in
//!    process: same checks, one redemption, replay handling) and checks
//!    the id_token (Portico's signature, `aud`, `nonce`).
//! 4. [`OwnClient::sign_out_url`] is Portico's RP-initiated logout, back
//!    to the application's start.
//!
//! The client is registered at start ([`OwnClient::register`]):
//! confidential with a random secret nobody holds (the application redeems
//! its codes in process), its redirect and post-logout addresses under
//! `public_url`, no consent, and its grants revoked when the single
//! sign-on session ends.

use portico_crypto::jwt::TYP_ID_TOKEN;
use portico_model::client::{Client, LocalizedText};
use portico_model::ids::ClientId;
use portico_model::login::Locale;
use portico_storage::StorageError;
use portico_tokens::IdClaims;
use serde::{Deserialize, Serialize};

use crate::Identity;
use crate::tokens::TokenResponse;

/// One of Portico's own applications as a client of Portico.
#[derive(Debug, Clone)]
pub struct OwnClient {
    pub client_id: ClientId,
    /// Where the application lives (`/console`, `/account`).
    pub base: &'static str,
    /// Its name on Portico's pages.
    pub name: LocalizedText,
    /// `public_url`, without a trailing slash.
    pub public_url: String,
    /// How long ago (seconds) the user may have authenticated for a
    /// single sign-on session to answer the application's sign-in
    /// (`max_age`); `None`: any live one does.
    pub max_age: Option<u32>,
}

/// A sign-in under way, kept sealed by the application until the browser
/// returns.
#[derive(Debug, Serialize, Deserialize)]
pub struct SignInStarted {
    pub state: String,
    pub nonce: String,
    pub verifier: String,
    /// The application's page to show afterwards.
    pub back: String,
}

/// The authorization response's query.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Callback {
    pub state: Option<String>,
    pub error: Option<String>,
    pub code: Option<String>,
}

/// A sign-in that came back with a code, redeemed and checked.
#[derive(Debug)]
pub struct SignedIn {
    pub tokens: TokenResponse,
    pub claims: IdClaims,
}

/// Why a sign-in did not end with a user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignInFailed {
    /// No sign-in of this browser under way, or an answer that is not its
    /// own (state, code, id_token): start again.
    Lost,
    /// Portico's login ended with an error (the user cancelled, was
    /// blocked).
    Refused,
    /// The application's client is not registered.
    NoClient,
    /// The store is unavailable.
    Unavailable,
}

/// An address of the application under `base` to return to: a path under
/// `base` (visible ASCII, no `//` or backslash, at most 1 KiB), else `base/`.
pub fn safe_back(base: &str, back: &str) -> String {
    let under = back.strip_prefix(base).is_some_and(|rest| rest.is_empty() || rest.starts_with(['/', '?']));
    let fine = back.len() <= 1024
        && under
        // Visible ASCII only: what a `Location` header can carry as it is
        // (NUL and other control characters, spaces and raw non-ASCII not).
        && back.bytes().all(|b| b.is_ascii_graphic())
        && !back.contains('\\')
        && !back.contains("//");
    if fine { back.to_owned() } else { format!("{base}/") }
}

/// A 303 to `location` (a path on this server), never cached; to
/// `fallback` should `location` be nothing a header can carry, so that no
/// 303 goes out without a `Location`.
pub fn see_other(location: &str, fallback: &'static str) -> axum::response::Response {
    use axum::http::{HeaderValue, StatusCode, header};
    let value = HeaderValue::from_str(location).unwrap_or_else(|_| HeaderValue::from_static(fallback));
    portico_api::no_store((StatusCode::SEE_OTHER, [(header::LOCATION, value)]))
}

fn encode(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

impl OwnClient {
    /// Where Portico returns the browser after the user signed in.
    pub fn redirect_uri(&self) -> String {
        format!("{}{}/callback", self.public_url, self.base)
    }

    /// Where Portico returns the browser after the user signed out.
    pub fn post_logout_redirect_uri(&self) -> String {
        format!("{}{}/", self.public_url, self.base)
    }

    /// A new sign-in returning to `back`, and the address that starts it;
    /// `fresh` asks Portico's login to authenticate the user again even
    /// with a live single sign-on session (`max_age=0`), else the
    /// application's own [`OwnClient::max_age`] applies.
    pub fn start(&self, back: String, locale: Locale, fresh: bool) -> (SignInStarted, String) {
        let started = SignInStarted {
            state: portico_crypto::random::token(),
            nonce: portico_crypto::random::token(),
            verifier: portico_crypto::random::token(),
            back,
        };
        let location = format!(
            "/oauth2/authorize?response_type=code&client_id={}&redirect_uri={}&scope=openid&state={}&nonce={}\
             &code_challenge={}&code_challenge_method=S256&ui_locales={}{}",
            encode(self.client_id.as_str()),
            encode(&self.redirect_uri()),
            started.state,
            started.nonce,
            portico_crypto::hash::pkce_s256(&started.verifier),
            locale.as_str(),
            if fresh { Some(0) } else { self.max_age }.map(|seconds| format!("&max_age={seconds}")).unwrap_or_default(),
        );
        (started, location)
    }

    /// The end of a sign-in: `query` checked against `started`, the code
    /// redeemed, the id_token checked.
    ///
    /// # Errors
    /// [`SignInFailed`] says why there is no user.
    pub async fn finish(
        &self,
        identity: &Identity,
        started: Option<&SignInStarted>,
        query: &Callback,
    ) -> Result<SignedIn, SignInFailed> {
        let started = started.ok_or(SignInFailed::Lost)?;
        let state = query.state.as_deref().unwrap_or_default();
        if !portico_crypto::constant_time_eq(state.as_bytes(), started.state.as_bytes()) {
            return Err(SignInFailed::Lost);
        }
        if let Some(error) = &query.error {
            tracing::info!(error, app = self.base, "a sign-in to one of Portico's own pages ended without a code");
            return Err(SignInFailed::Refused);
        }
        let code = query.code.as_deref().ok_or(SignInFailed::Lost)?;
        let client = match identity.store.find_client(&self.client_id).await {
            Ok(Some(client)) => client,
            Ok(None) => return Err(SignInFailed::NoClient),
            Err(_) => return Err(SignInFailed::Unavailable),
        };
        let redirect_uri = self.redirect_uri();
        let tokens = crate::oauth2::token::redeem(identity, &client, code, &started.verifier, Some(&redirect_uri))
            .await
            .map_err(|error| {
                let (_, code, description) = error.parts();
                tracing::info!(error = code, description, app = self.base, "a code of Portico's own pages was refused");
                SignInFailed::Lost
            })?;
        let claims = match tokens.id_token.as_deref() {
            Some(id_token) => identity.tokens.verify_issued::<IdClaims>(id_token, TYP_ID_TOKEN).await.ok(),
            None => None,
        };
        let claims = claims
            .filter(|c| {
                c.aud == self.client_id.as_str()
                    && c.nonce
                        .as_deref()
                        .is_some_and(|n| portico_crypto::constant_time_eq(n.as_bytes(), started.nonce.as_bytes()))
            })
            .ok_or_else(|| {
                tracing::warn!(app = self.base, "a sign-in returned an id_token that is not this sign-in's");
                SignInFailed::Lost
            })?;
        Ok(SignedIn { tokens, claims })
    }

    /// Portico's RP-initiated logout for this client, back to its start.
    pub fn sign_out_url(&self) -> String {
        format!(
            "/oauth2/logout?client_id={}&post_logout_redirect_uri={}",
            encode(self.client_id.as_str()),
            encode(&self.post_logout_redirect_uri())
        )
    }

    /// Registers the client, or adds the application's addresses to it
    /// when it exists without them. Several nodes starting at once register
    /// it once.
    ///
    /// # Errors
    /// When the store fails.
    pub async fn register(&self, identity: &Identity) -> Result<(), StorageError> {
        let store = &identity.store;
        let redirect_uri = self.redirect_uri();
        let after_logout = self.post_logout_redirect_uri();
        for _ in 0..3 {
            match store.find_client(&self.client_id).await? {
                None => {
                    let client = Client {
                        client_id: self.client_id.clone(),
                        secret_hash: portico_crypto::hash::client_secret_hash(&portico_crypto::random::token()),
                        name: self.name.clone(),
                        redirect_uris: vec![redirect_uri.clone()],
                        scopes: vec!["openid".to_owned()],
                        require_consent: false,
                        post_logout_redirect_uris: vec![after_logout.clone()],
                        logout_revokes_grants: true,
                        backchannel_logout_uri: None,
                        security: Default::default(),
                        secret_sealed: None,
                        registration_token_hash: None,
                        awaiting_approval: false,
                        created_at: identity.clock.now(),
                        revision: 0,
                    };
                    match store.create_client(&client).await {
                        Ok(()) => {
                            tracing::info!(client_id = %self.client_id, app = self.base, "registered a client of Portico's own pages");
                            return Ok(());
                        }
                        Err(StorageError::Conflict(_)) => continue,
                        Err(error) => return Err(error),
                    }
                }
                Some(mut client) => {
                    let mut changed = false;
                    if !client.has_redirect_uri(&redirect_uri) {
                        client.redirect_uris.push(redirect_uri.clone());
                        changed = true;
                    }
                    if !client.has_post_logout_redirect_uri(&after_logout) {
                        client.post_logout_redirect_uris.push(after_logout.clone());
                        changed = true;
                    }
                    if !client.allows_scope("openid") {
                        client.scopes.push("openid".to_owned());
                        changed = true;
                    }
                    if changed {
                        // Another node (or an operator) changed it meanwhile: read it again.
                        if store.update_client(&client).await? != portico_storage::Update::Updated {
                            continue;
                        }
                        tracing::info!(client_id = %self.client_id, app = self.base, "added the addresses of Portico's own pages to their client");
                    }
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::safe_back;

    #[test]
    fn only_paths_under_the_base_are_returned_to() {
        assert_eq!(safe_back("/account", "/account"), "/account");
        assert_eq!(safe_back("/account", "/account?done=x"), "/account?done=x");
        assert_eq!(safe_back("/account", "/account/passkeys/1/remove"), "/account/passkeys/1/remove");
        for hostile in ["/accounts", "/console/", "//evil.example", "/account//evil", "/account/\\x", "/account/a b"] {
            assert_eq!(safe_back("/account", hostile), "/account/", "{hostile}");
        }
        assert_eq!(safe_back("/account", &format!("/account/{}", "a".repeat(1100))), "/account/", "too long");
    }
}
