//! Signing operators in and out: the console is an OpenID Connect client
//! of Portico itself ([`portico_identity::own_client`]).
//!
//! 1. `GET /console/login?back=…` starts a sign-in, keeps it in the sealed
//!    `svc.console.login` cookie and sends the browser to
//!    `/oauth2/authorize`.
//! 2. Portico's own login runs as for any client.
//! 3. `GET /console/callback` finishes it (state, code, id_token) and asks
//!    the admin API's operator check whether the user holds a role. An
//!    operator gets the `svc.console` session; anyone else a page saying
//!    the account has no operator role, and the grant just issued is
//!    revoked.
//! 4. `POST /console/logout` revokes the console's grant, clears the
//!    session and goes through Portico's RP-initiated logout, which ends
//!    the single sign-on session and returns to the console's start.
//!
//! The client (`operator_client_id`, default `portico-console`) is
//! registered at start.

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use portico_identity::own_client::{Callback, SignInFailed, SignInStarted};
use serde::Deserialize;

use crate::forms::Form;
use crate::page::{self, Refusal};
use crate::session::{LOGIN, LOGIN_LABEL, LOGIN_MAX_AGE, SESSION, safe_back, see_other};
use crate::{Console, ConsoleState};

/// The sign-in's query: the page to come back to.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct SignIn {
    pub back: Option<String>,
}

/// `GET /console/login`: off to Portico's authorization endpoint.
pub async fn login(State(console): State<ConsoleState>, headers: HeaderMap, RawQuery(raw): RawQuery) -> Response {
    let query: SignIn = page::query(raw.as_deref());
    let back = safe_back(query.back.as_deref().unwrap_or("/console/"));
    let (started, location) = console.client.start(back, page::language(&headers), false);
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
    let started = console.open_cookie::<SignInStarted>(headers, LOGIN, LOGIN_LABEL);
    let identity = &console.identity;
    let signed_in = console.client.finish(identity, started.as_ref(), query).await.map_err(|failed| match failed {
        SignInFailed::Lost => Refusal::page(headers, StatusCode::BAD_REQUEST, "error.sign_in_lost"),
        SignInFailed::Refused => Refusal::page(headers, StatusCode::FORBIDDEN, "error.sign_in_refused"),
        SignInFailed::NoClient => Refusal::page(headers, StatusCode::SERVICE_UNAVAILABLE, "error.no_client"),
        SignInFailed::Unavailable => Refusal::unavailable(headers),
    })?;
    let (tokens, claims) = (signed_in.tokens, signed_in.claims);
    let back = started.map_or_else(|| "/console/".to_owned(), |s| s.back);
    Ok(match console.operators.operator(&tokens.access_token).await {
        Ok(Some(operator)) => {
            tracing::info!(actor = %operator.actor, role = operator.role.as_str(), "an operator signed in to the console");
            let mut response = see_other(&back);
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
            page::not_operator(headers, &console.client.sign_out_url())
        }
        Err(_) => return Err(Refusal::unavailable(headers)),
    })
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
    let mut response = see_other(&console.client.sign_out_url());
    let mut cookies = console.cookies("Strict");
    cookies.clear(SESSION);
    cookies.apply(response.headers_mut());
    response
}
