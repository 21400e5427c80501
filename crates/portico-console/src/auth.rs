//! Signing operators in and out: the console is an OpenID Connect client
//! of Portico itself.
//!
//! 1. `GET /console/login?back=…` makes a `state`, a `nonce` and a PKCE
//!    verifier, keeps them in the sealed `svc.console.login` cookie and
//!    sends the browser to `/oauth2/authorize` (code flow, S256, scope
//!    `openid`, `ui_locales` the console's language).
//! 2. Portico's own login runs as for any client (password, codes,
//!    CAPTCHA, single sign-on).
//! 3. `GET /console/callback` checks `state` (constant time) against the
//!    cookie, redeems the code with the verifier through the token
//!    endpoint's own code (in process: same checks, one redemption, replay
//!    handling), checks the id_token (Portico's signature, `aud`, `nonce`),
//!    and asks the admin API's operator check whether the user holds a
//!    role. An operator gets the `svc.console` session; anyone else a page
//!    saying the account has no operator role, and the grant just issued
//!    is revoked.
//! 4. `POST /console/logout` revokes the console's grant, clears the
//!    session and goes through Portico's RP-initiated logout, which ends
//!    the single sign-on session and returns to the console's start.
//!
//! The client (`operator_client_id`, default `portico-console`) is
//! registered at start ([`register_client`]): confidential with a random
//! secret nobody holds (the console redeems its codes in process), its
//! redirect and post-logout addresses under `public_url`, no consent, and
//! its grants revoked when the single sign-on session ends.

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use portico_crypto::jwt::TYP_ID_TOKEN;
use portico_model::client::{Client, LocalizedText};
use portico_storage::StorageError;
use portico_tokens::IdClaims;

use serde::Deserialize;

use crate::forms::Form;
use crate::page::{self, Refusal};
use crate::session::{LOGIN, LOGIN_LABEL, LOGIN_MAX_AGE, LoginCookie, SESSION, safe_back, see_other};
use crate::{Console, ConsoleState};

fn encode(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// The sign-in's query: the page to come back to.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct SignIn {
    pub back: Option<String>,
}

/// The authorization response's query.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Callback {
    pub state: Option<String>,
    pub error: Option<String>,
    pub code: Option<String>,
}

/// `GET /console/login`: off to Portico's authorization endpoint.
pub async fn login(State(console): State<ConsoleState>, headers: HeaderMap, RawQuery(raw): RawQuery) -> Response {
    let query: SignIn = page::query(raw.as_deref());
    let started = LoginCookie {
        state: portico_crypto::random::token(),
        nonce: portico_crypto::random::token(),
        verifier: portico_crypto::random::token(),
        back: safe_back(query.back.as_deref().unwrap_or("/console/")),
    };
    let location = format!(
        "/oauth2/authorize?response_type=code&client_id={}&redirect_uri={}&scope=openid&state={}&nonce={}\
         &code_challenge={}&code_challenge_method=S256&ui_locales={}",
        encode(console.client_id.as_str()),
        encode(&console.redirect_uri()),
        started.state,
        started.nonce,
        portico_crypto::hash::pkce_s256(&started.verifier),
        page::language(&headers).as_str(),
    );
    let sealed = console.seal_cookie(LOGIN_LABEL, &started);
    let mut response = see_other(&location);
    let mut cookies = console.cookies("Lax");
    cookies.set(LOGIN, &sealed, Some(LOGIN_MAX_AGE));
    cookies.apply(response.headers_mut());
    response
}

/// `GET /console/callback`: the end of a sign-in.
pub async fn callback(State(console): State<ConsoleState>, headers: HeaderMap, RawQuery(raw): RawQuery) -> Response {
    let query: Callback = page::query(raw.as_deref());
    let mut response = finish(&console, &headers, &query).await.into_response();
    let mut cookies = console.cookies("Lax");
    cookies.clear(LOGIN);
    cookies.apply(response.headers_mut());
    response
}

async fn finish(console: &Console, headers: &HeaderMap, query: &Callback) -> Result<Response, Refusal> {
    let lost = || Refusal::page(headers, StatusCode::BAD_REQUEST, "error.sign_in_lost");
    let started = console.open_cookie::<LoginCookie>(headers, LOGIN, LOGIN_LABEL).ok_or_else(lost)?;
    let state = query.state.as_deref().unwrap_or_default();
    if !portico_crypto::constant_time_eq(state.as_bytes(), started.state.as_bytes()) {
        return Err(lost());
    }
    if let Some(error) = &query.error {
        tracing::info!(error, "an operator's sign-in to the console ended without a code");
        return Err(Refusal::page(headers, StatusCode::FORBIDDEN, "error.sign_in_refused"));
    }
    let code = query.code.as_deref().ok_or_else(lost)?;
    let identity = &console.identity;
    let client = match identity.store.find_client(&console.client_id).await {
        Ok(Some(client)) => client,
        Ok(None) => return Err(Refusal::page(headers, StatusCode::SERVICE_UNAVAILABLE, "error.no_client")),
        Err(_) => return Err(Refusal::unavailable(headers)),
    };
    let redirect_uri = console.redirect_uri();
    let tokens =
        match portico_identity::oauth2::token::redeem(identity, &client, code, &started.verifier, Some(&redirect_uri))
            .await
        {
            Ok(tokens) => tokens,
            Err(error) => {
                let (_, code, description) = error.parts();
                tracing::info!(error = code, description, "a console code was refused");
                return Err(lost());
            }
        };
    let claims = match tokens.id_token.as_deref() {
        Some(id_token) => identity.tokens.verify_issued::<IdClaims>(id_token, TYP_ID_TOKEN).await.ok(),
        None => None,
    };
    let Some(claims) = claims.filter(|c| {
        c.aud == console.client_id.as_str()
            && c.nonce
                .as_deref()
                .is_some_and(|n| portico_crypto::constant_time_eq(n.as_bytes(), started.nonce.as_bytes()))
    }) else {
        tracing::warn!("a console sign-in returned an id_token that is not this sign-in's");
        return Err(lost());
    };
    Ok(match console.operators.operator(&tokens.access_token).await {
        Ok(Some(operator)) => {
            tracing::info!(actor = %operator.actor, role = operator.role.as_str(), "an operator signed in to the console");
            let mut response = see_other(&started.back);
            console.session_cookie(tokens.access_token, tokens.expires_in).apply(response.headers_mut());
            response
        }
        Ok(None) => {
            // Nothing for this account to do here: the grant goes at once.
            if let Some(grant) = claims.gid
                && let Err(error) = identity.store.revoke_grant(grant, identity.clock.now()).await
            {
                tracing::warn!(%error, "the console could not revoke a non-operator's grant");
            }
            page::not_operator(headers, &sign_out_url(console))
        }
        Err(_) => return Err(Refusal::unavailable(headers)),
    })
}

/// Portico's RP-initiated logout for the console, back to its start.
fn sign_out_url(console: &Console) -> String {
    format!(
        "/oauth2/logout?client_id={}&post_logout_redirect_uri={}",
        encode(console.client_id.as_str()),
        encode(&console.post_logout_redirect_uri())
    )
}

/// `POST /console/logout`: the console's grant revoked, its session
/// cleared, then Portico's logout. A forged sign-out can only sign an
/// operator out, as with Portico's own logout.
pub async fn logout(State(console): State<ConsoleState>, headers: HeaderMap, body: Body) -> Response {
    let form = Form::read(&headers, body).await.unwrap_or_default();
    if let Ok(operator) = console.form_operator(&headers, &form, "/console/").await
        && let Ok(claims) = console.identity.tokens.check_access_token(&operator.token).await
    {
        let now = console.identity.clock.now();
        if let Err(error) = console.identity.store.revoke_grant(claims.gid, now).await {
            tracing::warn!(%error, "the console could not revoke an operator's grant at sign-out");
        }
        tracing::info!(actor = %operator.admin.actor, "an operator signed out of the console");
    }
    let mut response = see_other(&sign_out_url(&console));
    let mut cookies = console.cookies("Strict");
    cookies.clear(SESSION);
    cookies.apply(response.headers_mut());
    response
}

/// Registers the console's client, or adds the console's addresses to it
/// when it exists without them. Several nodes starting at once register
/// it once.
///
/// # Errors
/// When the store fails.
pub async fn register_client(console: &Console) -> Result<(), StorageError> {
    let store = &console.identity.store;
    let redirect_uri = console.redirect_uri();
    let after_logout = console.post_logout_redirect_uri();
    for _ in 0..3 {
        match store.find_client(&console.client_id).await? {
            None => {
                let client = Client {
                    client_id: console.client_id.clone(),
                    secret_hash: portico_crypto::hash::client_secret_hash(&portico_crypto::random::token()),
                    name: LocalizedText {
                        ru: "Консоль операторов".to_owned(), en: "Operator console".to_owned()
                    },
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
                    created_at: console.identity.clock.now(),
                };
                match store.create_client(&client).await {
                    Ok(()) => {
                        tracing::info!(client_id = %console.client_id, "registered the operator console's client");
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
                    store.update_client(&client).await?;
                    tracing::info!(client_id = %console.client_id, "added the operator console's addresses to its client");
                }
                return Ok(());
            }
        }
    }
    Ok(())
}
