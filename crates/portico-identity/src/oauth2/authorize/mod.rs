//! `GET /oauth2/authorize` (operation `authorize`).
//!
//! Validation order, each failure answered as the spec's table says:
//! 1. `client_id` absent, repeated or unknown: 400 `text/plain`
//!    `OAuth 2.0 Parameter: client_id`.
//! 2. `redirect_uri` absent, repeated or not registered for the client (exact
//!    match): 400 `OAuth 2.0 Parameter: redirect_uri`. Portico never
//!    redirects to an address it cannot vouch for.
//! 3. From here on, errors redirect (302) to `redirect_uri` with `error`,
//!    `error_description = OAuth 2.0 Parameter: <name>` and `state` (absent
//!    when `state` itself is missing): `response_type` (absent:
//!    `invalid_request`; not `code`: `unsupported_response_type`), `scope`
//!    (absent: `invalid_request`; malformed or not allowed for the client:
//!    `invalid_scope`), `state`, `code_challenge` (absent or not an S256
//!    challenge), `code_challenge_method` (absent or not `S256`), `nonce`
//!    (over 512 characters), `prompt` (not `none`, `login`, `consent` or
//!    `select_account`, which is answered as `login`), `max_age` (not a
//!    whole number of seconds), `login_hint` (over 256 characters or with a
//!    control character), `dpop_jkt` (not a thumbprint), `id_token_hint`
//!    (over 8 KiB, or not an ID token Portico issued — expired ones
//!    count), all `invalid_request`; `registration` (a self-issued
//!    provider's, OpenID Connect Core §7.2.1), `registration_not_supported`.
//!    A repeated parameter, or
//!    one with a NUL character, is `invalid_request` for it (or the 400
//!    above for `client_id` and `redirect_uri`). `ui_locales` names
//!    languages in order; those Portico does not speak are passed over.
//!
//! Then: a login process that has just completed for this very request (the
//! checked request equals the one the process kept), or
//! else a live SSO session (unless `prompt=login`, or the session is older
//! than `max_age` or another user's than `id_token_hint` names), gets a
//! code at once (302), or the consent step when it is due. `prompt=none`
//! without either gets `login_required`, and so does a login that ends
//! as another user than `id_token_hint` names (OpenID Connect Core
//! §3.1.2.1). Otherwise a
//! login process starts, in the `ui_locales` language with the
//! `login_hint` filled in: 303 to `/login` with its cookies. Every
//! answer to the client carries `iss` (RFC 9207).
//!
//! `response_mode` is read right after `redirect_uri`: `query` (the
//! default) answers the client with a 302, `form_post` with a page that
//! posts the same parameters ([`super::response`]), errors included;
//! `jwt`/`query.jwt` and `form_post.jwt` do the same with one signed
//! `response` (JARM); any other value is `invalid_request`, answered in
//! the query, as is a JARM mode whose algorithm the server keeps no key of.
//!
//! A request may also come as a signed request object (`request`, RFC
//! 9101, checked by [`super::request_object`]) or pushed beforehand
//! (`request_uri` from `POST /oauth2/par`, RFC 9126, [`super::par`]);
//! then only `client_id` is read beside it, and the other parameters come
//! from the object or the pushed request alone. A pushed request is taken
//! (used once) by the write that starts serving it, the login process's
//! or the code's, so that a write that fails leaves it for the browser's
//! retry (an error answered to the client takes it too); an object that does not
//! verify, or a `request_uri` that is unknown, used, expired or another
//! client's, gets the 400 page naming `request` or `request_uri` (there is
//! no address to answer to yet). A client registered with
//! `require_pushed_authorization_requests` (or every client, under
//! `par.required`) or `require_signed_request_object` gets
//! `invalid_request` naming `request_uri` or `request` for a request that
//! came otherwise; a client's security profile may add rules (a `fapi-ru`
//! client's request for `openid` without a `nonce` is `invalid_request`
//! naming `nonce`). The way back from the login steps names such a request
//! by its `request_uri` (a fresh one for an object by value), which the
//! login process holds: the parameters never travel again.
//!
//! `POST /oauth2/authorize` (OpenID Connect Core §3.1.2.1: an OpenID
//! Provider takes both methods) reads the same parameters from an
//! `application/x-www-form-urlencoded` body of at most
//! [`MAX_POST_BODY`] bytes and answers as `GET` does; a POST whose address
//! carries parameters too, or whose body is of another type or larger, is
//! the plain 400. A cross-site POST carries no `SameSite=Lax` cookie: the
//! user meets the login steps even with a single sign-on session, and the
//! way back from them is the `GET` of the checked request.
//!
//! The parameters are checked in `check`; the checked request, what a
//! login process keeps of it and the way back to it are `request`'s.

use axum::body::{Body, to_bytes};
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use portico_crypto::jwt::TYP_ID_TOKEN;
use portico_model::client::Client;
use portico_model::ids::{ClientId, CodeHash};
use portico_model::login::{LoginOutcome, LoginProcess};
use portico_model::oauth::{AuthorizationCode, Prompt};
use portico_model::scope::ScopeSet;
use portico_model::session::SsoSession;
use portico_storage::StorageError;
use portico_tokens::{AccessTokenError, IdClaims};
use time::OffsetDateTime;

use super::response::{Recipient, error_to_client, to_client};
use crate::cookies;
use crate::edge::AuthorizeQuery;
use crate::login;
use crate::{Identity, IdentityState};
use portico_model::form::Form;

mod check;
mod request;

pub(crate) use check::check;
pub(crate) use request::Origin;
pub use request::{AuthorizeRequest, location};

/// Largest body `POST /oauth2/authorize` reads.
pub const MAX_POST_BODY: usize = 64 * 1024;

/// Why a request is refused, and how the refusal is answered.
pub(crate) enum Rejection {
    /// The 400 page: `OAuth 2.0 Parameter: <name>`, and why when there is
    /// more to say.
    Plain(String),
    Redirect {
        to: Recipient,
        error: &'static str,
        description: String,
        state: Option<String>,
    },
    Storage(StorageError),
}

impl Rejection {
    fn plain(parameter: &str) -> Self {
        Self::Plain(format!("OAuth 2.0 Parameter: {parameter}"))
    }

    fn plain_because(parameter: &str, why: &str) -> Self {
        Self::Plain(format!("OAuth 2.0 Parameter: {parameter}: {why}"))
    }
}

impl From<StorageError> for Rejection {
    fn from(error: StorageError) -> Self {
        Rejection::Storage(error)
    }
}

#[utoipa::path(
    get,
    path = "/oauth2/authorize",
    operation_id = "authorize",
    tag = "oauth2",
    params(crate::edge::AuthorizeQuery, crate::edge::AuthorizeCookies),
    responses(
        (status = 200, description = "`response_mode` `form_post` or `form_post.jwt`: a page whose form posts the \
                                      answer to `redirect_uri`.",
         content_type = "text/html", body = String),
        (status = 302, description = "To `redirect_uri` with `code` and `state` (success), or with `error`, \
                                      `error_description` and `state` (a parameter error; no `state` when it was missing); \
                                      with `response_mode` `jwt` or `query.jwt`, all of it inside one signed `response`.",
         headers(
             ("Location" = String, description = "`redirect_uri` with its query."),
             ("Set-Cookie" = String, description = "Clears `authentication_flow` and `login_client_entry` after a login.")
         )),
        (status = 303, description = "The user must authenticate: a login process has started.",
         headers(
             ("Location" = String, description = "`/login`"),
             ("Set-Cookie" = String, description = "`authentication_flow`, `XSRF-TOKEN`, `login_client_entry`, `svc.device.deviceId`.")
         )),
        (status = 400, description = "`OAuth 2.0 Parameter: client_id` or `OAuth 2.0 Parameter: redirect_uri`: \
                                      missing, repeated, unknown or not registered.",
         content_type = "text/plain", body = String),
        crate::edge::BrowserUnavailable
    )
)]
pub async fn authorize(
    State(identity): State<IdentityState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let query = query.unwrap_or_default();
    answer(&identity, &headers, query.as_bytes()).await
}

#[utoipa::path(
    post,
    path = "/oauth2/authorize",
    operation_id = "authorizeForm",
    tag = "oauth2",
    request_body(content = crate::edge::AuthorizeFormDto, content_type = "application/x-www-form-urlencoded",
                 description = "The parameters of `GET /oauth2/authorize`, as a form (OpenID Connect Core §3.1.2.1)."),
    params(crate::edge::AuthorizeCookies),
    responses(
        (status = 200, description = "As `GET /oauth2/authorize`: a `form_post` answer.", content_type = "text/html",
         body = String),
        (status = 302, description = "As `GET /oauth2/authorize`: the answer to `redirect_uri`.",
         headers(("Location" = String, description = "`redirect_uri` with its query."))),
        (status = 303, description = "As `GET /oauth2/authorize`: a login process has started.",
         headers(("Location" = String, description = "`/login`"))),
        (status = 400, description = "As `GET /oauth2/authorize`; also a body that is not a form, is larger than \
                                      64 KiB, or parameters in the address beside the body.",
         content_type = "text/plain", body = String),
        crate::edge::BrowserUnavailable
    )
)]
pub async fn authorize_form(
    State(identity): State<IdentityState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Body,
) -> Response {
    if query.is_some_and(|query| !query.is_empty()) {
        return plain_400(
            "a POST to /oauth2/authorize carries its parameters in its body only, not in its address".into(),
        );
    }
    if !super::params::is_form(&headers) {
        return plain_400(
            "a POST to /oauth2/authorize carries its parameters as application/x-www-form-urlencoded".into(),
        );
    }
    let Ok(body) = to_bytes(body, MAX_POST_BODY).await else {
        return plain_400(format!("the body of a POST to /oauth2/authorize must be at most {MAX_POST_BODY} bytes"));
    };
    answer(&identity, &headers, &body).await
}

/// The answer to the authorization request whose parameters `form` holds.
async fn answer(identity: &Identity, headers: &HeaderMap, form: &[u8]) -> Response {
    match handle(identity, headers, form).await {
        Ok(response) => response,
        Err(Rejection::Plain(description)) => plain_400(description),
        Err(Rejection::Redirect { to, error, description, state }) => {
            error_to_client(identity, headers, &to, error, &description, state.as_deref()).await
        }
        Err(Rejection::Storage(error)) => login::error_page::server_error(error),
    }
}

async fn handle(identity: &Identity, headers: &HeaderMap, form: &[u8]) -> Result<Response, Rejection> {
    // Every field is a `Param`, which holds any reading: this cannot fail.
    let query: AuthorizeQuery = Form::parse(form).read_each().unwrap_or_default();
    let request = validate(identity, headers, query).await?;
    let now = identity.clock.now();
    let hinted = match hinted_user(identity, &request).await {
        // An answer to the client uses up a pushed request, as any does.
        Err(refusal @ Rejection::Redirect { .. }) => {
            take_pushed(identity, &request, now).await?;
            return Err(refusal);
        }
        read => read?,
    };

    if let Some((process, outcome)) = completed_login(identity, headers, &request, now).await? {
        if hinted.as_ref().is_some_and(|sub| *sub != outcome.user_id.to_string()) {
            // Logged in as another user than the hint names.
            identity.store.delete_login_process(process.id).await?;
            let why = "the user who logged in is not the one id_token_hint names";
            let to = request.recipient();
            let response =
                error_to_client(identity, headers, &to, "login_required", why, request.state.as_deref()).await;
            return Ok(login::ended(identity, response));
        }
        let session = identity.store.find_session_by_id(outcome.session_id, now).await?;
        // The session the login opened (or continued) ended meanwhile, by a
        // logout or an operator: the user logs in again.
        let Some(session) = session.filter(|s| s.user_id == outcome.user_id) else {
            identity.store.delete_login_process(process.id).await?;
            return login::start(identity, headers, &request, now).await?.ok_or_else(used_request_uri);
        };
        // The code and the end of the process in one write: when it fails,
        // the completed process is still there for the browser's retry.
        let (code, stored) = new_code(identity, &request, &outcome.scope, &session);
        identity.store.insert_code_ending_login(&stored, process.id).await?;
        let response = code_redirect(identity, headers, &request, &code).await;
        return Ok(login::ended(identity, response));
    }

    let session = if request.prompt.is_some_and(Prompt::forces_login) {
        None
    } else {
        login::session::current(identity, headers, now).await?
    };
    // A session older than `max_age`, or another user's than the hint
    // names, is as good as none: log in again.
    let session = session
        .filter(|s| request.max_age.is_none_or(|max_age| now - s.auth_time <= time::Duration::seconds(max_age.into())))
        .filter(|s| hinted.as_ref().is_none_or(|sub| *sub == s.user_id.to_string()));
    if let Some(session) = session {
        let forced = request.prompt.is_some_and(Prompt::forces_consent);
        if !login::flow::consent_due(identity, &request.client, &request.scope, forced, session.user_id).await? {
            let scope = request.scope.to_string();
            return issue_code_redirect(identity, headers, &request, &scope, &session).await;
        }
        if request.prompt == Some(Prompt::None) {
            take_pushed(identity, &request, now).await?;
            let to = request.recipient();
            let why = "the user must consent";
            return Ok(error_to_client(identity, headers, &to, "consent_required", why, request.state.as_deref()).await);
        }
        return login::start_at(identity, headers, &request, now, Some(&session)).await?.ok_or_else(used_request_uri);
    }

    if request.prompt == Some(Prompt::None) {
        take_pushed(identity, &request, now).await?;
        let to = request.recipient();
        let why = "the user must log in";
        return Ok(error_to_client(identity, headers, &to, "login_required", why, request.state.as_deref()).await);
    }

    login::start(identity, headers, &request, now).await?.ok_or_else(used_request_uri)
}

/// The user `id_token_hint` names (its `sub`), if the request has one: an
/// ID token Portico issued, expired or not.
///
/// # Errors
/// `invalid_request` to the client for a hint that is not such a token;
/// storage errors (the signing keys could not be read).
async fn hinted_user(identity: &Identity, request: &AuthorizeRequest) -> Result<Option<String>, Rejection> {
    let Some(hint) = &request.id_token_hint else {
        return Ok(None);
    };
    match identity.tokens.verify_issued::<IdClaims>(hint, TYP_ID_TOKEN).await {
        Ok(claims) => Ok(Some(claims.sub)),
        Err(AccessTokenError::Unavailable(error)) => Err(error.into()),
        Err(_) => Err(Rejection::Redirect {
            to: request.recipient(),
            error: "invalid_request",
            description: "OAuth 2.0 Parameter: id_token_hint: not an ID token Portico issued".into(),
            state: request.state.clone(),
        }),
    }
}

/// Takes the pushed request that `request` was read from, if it was, for
/// an answer that stores nothing else (an error to the client): used once
/// all the same.
async fn take_pushed(identity: &Identity, request: &AuthorizeRequest, now: OffsetDateTime) -> Result<(), Rejection> {
    if let Some(hash) = &request.pushed_to_take {
        identity.store.take_pushed_request(hash, &request.client.client_id, now).await?.ok_or_else(used_request_uri)?;
    }
    Ok(())
}

/// The login process, named by the `authentication_flow` cookie, that
/// completed for exactly this authorize request, and its outcome.
async fn completed_login(
    identity: &Identity,
    headers: &HeaderMap,
    request: &AuthorizeRequest,
    now: OffsetDateTime,
) -> Result<Option<(LoginProcess, LoginOutcome)>, StorageError> {
    let Some(id) = cookies::process_id(headers, cookies::AUTHENTICATION_FLOW) else {
        return Ok(None);
    };
    let Some(mut process) = identity.store.find_login_process(id, now).await? else {
        return Ok(None);
    };
    let state = &process.state;
    let same_request = state.client_id == request.client.client_id && state.request == Some(request.pending());
    if !same_request {
        return Ok(None);
    }
    Ok(process.state.take_outcome().map(|outcome| (process, outcome)))
}

/// Reads the request, by value, as a request object or pushed, and checks
/// it (the module's docs).
async fn validate(
    identity: &Identity,
    headers: &HeaderMap,
    mut query: AuthorizeQuery,
) -> Result<AuthorizeRequest, Rejection> {
    let client_id = query.client_id.clone().ok().ok_or_else(|| Rejection::plain("client_id"))?;
    // A client awaiting an operator's approval is not one to send a
    // customer's browser back to.
    let client = identity
        .store
        .find_client(&ClientId::new(client_id))
        .await?
        .filter(|client| !client.awaiting_approval)
        .ok_or_else(|| Rejection::plain("client_id"))?;
    let request_uri = std::mem::take(&mut query.request_uri).value().map_err(|_| Rejection::plain("request_uri"))?;
    let object = std::mem::take(&mut query.request).value().map_err(|_| Rejection::plain("request"))?;
    match (request_uri, object) {
        (Some(_), Some(_)) => Err(Rejection::plain_because("request", "give request or request_uri, not both")),
        (Some(uri), None) => pushed(identity, headers, client, &uri).await,
        (None, Some(object)) => {
            let parameters = super::request_object::read(identity, &client, &object)
                .await
                .map_err(|why| Rejection::plain_because("request", &why))?;
            let mut request = check(identity, client, parameters, Origin { pushed: false, signed: true })?;
            request.request_uri = Some(super::par::new_request_uri());
            Ok(request)
        }
        (None, None) => check(identity, client, query, Origin::default()),
    }
}

/// The request a `request_uri` names: the one a login process of this
/// browser serves (the way back from the login steps), or else a pushed
/// request of this client, taken.
async fn pushed(
    identity: &Identity,
    headers: &HeaderMap,
    client: Client,
    uri: &str,
) -> Result<AuthorizeRequest, Rejection> {
    let now = identity.clock.now();
    let resumed = match cookies::process_id(headers, cookies::AUTHENTICATION_FLOW) {
        Some(id) => identity
            .store
            .find_login_process(id, now)
            .await?
            .filter(|process| process.state.client_id == client.client_id)
            .and_then(|process| process.state.request)
            .filter(|request| request.request_uri.as_deref() == Some(uri)),
        None => None,
    };
    let (pending, pushed_to_take) = match resumed {
        Some(pending) => (pending, None),
        None => {
            // Read, not taken yet: the write that starts serving it takes
            // it, so that a write that fails leaves it for the retry.
            let hash = portico_crypto::hash::token_hash(uri);
            let mut pending = identity
                .store
                .find_pushed_request(&hash, &client.client_id, now)
                .await?
                .ok_or_else(used_request_uri)?;
            pending.request_uri = Some(uri.to_owned());
            (pending, Some(hash))
        }
    };
    // The client's registration may have changed since.
    if !client.has_redirect_uri(&pending.redirect_uri) {
        return Err(Rejection::plain("redirect_uri"));
    }
    let scope = ScopeSet::parse(&pending.scope.join(" ")).map_err(|_| Rejection::plain("request_uri"))?;
    Ok(AuthorizeRequest {
        client,
        redirect_uri: pending.redirect_uri,
        scope,
        state: pending.state,
        code_challenge: pending.code_challenge,
        nonce: pending.nonce,
        prompt: pending.prompt,
        max_age: pending.max_age,
        ui_locale: pending.ui_locale,
        login_hint: pending.login_hint,
        response_mode: pending.response_mode,
        request_uri: pending.request_uri,
        dpop_jkt: pending.dpop_jkt,
        id_token_hint: pending.id_token_hint,
        pushed_to_take,
    })
}

/// The refusal of a `request_uri` that names no pushed request to serve.
fn used_request_uri() -> Rejection {
    Rejection::plain_because("request_uri", "unknown, used, expired or another client's")
}

/// Issues an authorization code under `session` (its user, `auth_time`
/// and `amr`) and answers the client's `redirect_uri` with `code`, `state`
/// and `iss`, in the request's response mode.
///
/// # Errors
/// When the code cannot be stored.
async fn issue_code_redirect(
    identity: &Identity,
    headers: &HeaderMap,
    request: &AuthorizeRequest,
    scope: &str,
    session: &SsoSession,
) -> Result<Response, Rejection> {
    let (code, stored) = new_code(identity, request, scope, session);
    match &request.pushed_to_take {
        Some(hash) => {
            if !identity.store.insert_code_taking(&stored, hash).await? {
                return Err(used_request_uri());
            }
        }
        None => identity.store.insert_code(&stored).await?,
    }
    Ok(code_redirect(identity, headers, request, &code).await)
}

/// A new authorization code for `request` under `session`: the code and
/// what is stored of it.
fn new_code(
    identity: &Identity,
    request: &AuthorizeRequest,
    scope: &str,
    session: &SsoSession,
) -> (String, AuthorizationCode) {
    let now = identity.clock.now();
    let code = portico_crypto::random::token();
    let stored = AuthorizationCode {
        code_hash: CodeHash::new(portico_crypto::hash::token_hash(&code)),
        client_id: request.client.client_id.clone(),
        user_id: session.user_id,
        redirect_uri: request.redirect_uri.clone(),
        scope: scope.to_owned(),
        code_challenge: request.code_challenge.clone(),
        nonce: request.nonce.clone(),
        auth_time: session.auth_time,
        created_at: now,
        expires_at: now + identity.settings.code_ttl(request.client.security.security_profile),
        grant_id: None,
        amr: session.amr.clone(),
        session_id: Some(session.id),
        dpop_jkt: request.dpop_jkt.clone(),
    };
    (code, stored)
}

/// The code's way back to the client.
async fn code_redirect(identity: &Identity, headers: &HeaderMap, request: &AuthorizeRequest, code: &str) -> Response {
    let mut pairs = vec![("code", code)];
    pairs.extend(request.state.as_deref().map(|state| ("state", state)));
    to_client(identity, headers, &request.recipient(), &pairs).await
}

fn plain_400(description: String) -> Response {
    (StatusCode::BAD_REQUEST, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], description).into_response()
}
