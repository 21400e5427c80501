//! `GET` and `POST /oauth2/logout` (operation `logout`): OpenID Connect
//! RP-Initiated Logout 1.0, the discovery document's `end_session_endpoint`.
//!
//! Parameters (the query, or a form body): `id_token_hint`, `client_id`,
//! `post_logout_redirect_uri`, `state`, `ui_locales`; `logout_hint` is
//! accepted and not needed (one account per browser). Each of these ends
//! nothing and answers 400 with a page in the user's language saying why,
//! checked in this order:
//! - a repeated parameter, or one with a NUL character (any of them, before
//!   anything a parameter names is looked at);
//! - an `id_token_hint` that is not an id_token Portico issued (signature by
//!   one of its keys, `typ`, `iss`); its expiry is not checked, since the
//!   relying party may hold an expired one for the session it ends (§2);
//! - a `client_id` that is unknown, or not the hint's `aud`;
//! - a `post_logout_redirect_uri` without a client to check it against, or
//!   not registered for the client (`--post-logout-redirect-uri`, exact
//!   match). Portico never redirects to an address it cannot vouch for.
//!
//! Then it ends, each once: the browser's session (cookie `svc.session`),
//! unless the hint names another user (that session is not the relying
//! party's to end); and the session the hint's `sid` names, when it belongs
//! to the hint's user. Ending revokes the grants issued under the session to
//! clients registered with `--logout-revokes-grants`. The user is not asked
//! to confirm: a forged logout can only sign a user out.
//!
//! The answer is a redirect to `post_logout_redirect_uri` with `state`
//! (302 after GET, 303 after POST), or, when there is none, the signed-out
//! page in the `ui_locales` language (else the browser's).

use axum::body::{Body, to_bytes};
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use portico_crypto::jwt::TYP_ID_TOKEN;
use portico_model::client::Client;
use portico_model::ids::ClientId;
use portico_model::login::Locale;
use portico_storage::StorageError;

use super::MAX_FORM_BODY;
use crate::cookies::{self, SetCookies};
use crate::edge::LogoutForm;
use crate::http::{redirect, with_query};
use crate::login::error_page::{LoggedOutPage, server_error};
use crate::login::session;
use crate::login::texts::{self, Texts};
use crate::{Identity, IdentityState};
use portico_model::form::{Form, FormError};
use portico_tokens::{AccessTokenError, IdClaims};

/// Why a logout request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    Malformed,
    Hint,
    Client,
    Redirect,
}

impl Refusal {
    fn message(self, t: &Texts) -> &'static str {
        match self {
            Refusal::Malformed => t.logout_bad_request,
            Refusal::Hint => t.logout_bad_hint,
            Refusal::Client => t.logout_bad_client,
            Refusal::Redirect => t.logout_bad_redirect,
        }
    }
}

enum Failure {
    Refused(Refusal),
    Storage(StorageError),
}

impl From<Refusal> for Failure {
    fn from(refusal: Refusal) -> Self {
        Failure::Refused(refusal)
    }
}

impl From<FormError> for Failure {
    fn from(_: FormError) -> Self {
        Failure::Refused(Refusal::Malformed)
    }
}

impl From<StorageError> for Failure {
    fn from(error: StorageError) -> Self {
        Failure::Storage(error)
    }
}

/// A logout request that passed every check.
struct LogoutRequest {
    hint: Option<IdClaims>,
    /// Where to send the browser afterwards, with `state`.
    return_to: Option<String>,
    locale: Option<Locale>,
}

#[utoipa::path(
    get,
    path = "/oauth2/logout",
    operation_id = "logout",
    tag = "oauth2",
    params(crate::edge::LogoutForm),
    responses(
        (status = 200, description = "Signed out; no `post_logout_redirect_uri`: the signed-out page.",
         content_type = "text/html", body = String,
         headers(("Set-Cookie" = String, description = "Clears `svc.session`."))),
        (status = 302, description = "Signed out: to `post_logout_redirect_uri` with `state`.",
         headers(("Location" = String), ("Set-Cookie" = String, description = "Clears `svc.session`."))),
        (status = 400, description = "Refused, nothing ended: a repeated parameter, a foreign or damaged \
                                      `id_token_hint`, an unknown `client_id`, or an unregistered \
                                      `post_logout_redirect_uri`. A page saying which.",
         content_type = "text/html", body = String),
        crate::edge::BrowserUnavailable
    )
)]
pub async fn logout(State(identity): State<IdentityState>, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    let params = Form::parse(query.unwrap_or_default().as_bytes());
    answer(&identity, &headers, Some(params), StatusCode::FOUND).await
}

#[utoipa::path(
    post,
    path = "/oauth2/logout",
    operation_id = "logoutForm",
    tag = "oauth2",
    request_body(content = crate::edge::LogoutForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "Signed out; no `post_logout_redirect_uri`: the signed-out page.",
         content_type = "text/html", body = String,
         headers(("Set-Cookie" = String, description = "Clears `svc.session`."))),
        (status = 303, description = "Signed out: to `post_logout_redirect_uri` with `state`.",
         headers(("Location" = String), ("Set-Cookie" = String, description = "Clears `svc.session`."))),
        (status = 400, description = "Refused, nothing ended: as for `GET`, or a body over 16 KiB.",
         content_type = "text/html", body = String),
        crate::edge::BrowserUnavailable
    )
)]
pub async fn logout_form(State(identity): State<IdentityState>, headers: HeaderMap, body: Body) -> Response {
    let params = to_bytes(body, MAX_FORM_BODY).await.ok().map(|bytes| Form::parse(&bytes));
    answer(&identity, &headers, params, StatusCode::SEE_OTHER).await
}

/// Checks the request, ends the sessions and answers; `redirect_status`
/// is the status of a redirect back to the client. `None` for a body that
/// could not be read.
async fn answer(
    identity: &Identity,
    headers: &HeaderMap,
    params: Option<Form>,
    redirect_status: StatusCode,
) -> Response {
    let locale_of = |locale: Option<Locale>| {
        texts::for_locale(locale.unwrap_or_else(|| texts::negotiate(headers, identity.settings.default_locale)))
    };
    let refuse = |refusal: Refusal, locale: Option<Locale>| {
        let t = locale_of(locale);
        tracing::info!(?refusal, "logout request refused");
        LoggedOutPage::new(identity, t, t.logout_refused_heading, refusal.message(t)).respond(StatusCode::BAD_REQUEST)
    };
    let Some(params) = params else {
        return refuse(Refusal::Malformed, None);
    };
    let request = match validate(identity, &params).await {
        Ok(request) => request,
        Err(Failure::Refused(refusal)) => {
            // The page's language even from a request refused as a whole.
            let ui_locales = params.read_lenient::<LogoutForm>().ok().and_then(|form| form.ui_locales);
            return refuse(refusal, ui_locales.as_deref().and_then(Locale::from_ui_locales));
        }
        Err(Failure::Storage(error)) => return server_error(error),
    };
    let browser_signed_out = match end_sessions(identity, headers, request.hint.as_ref()).await {
        Ok(signed_out) => signed_out,
        Err(error) => return server_error(error),
    };
    let mut response = match &request.return_to {
        Some(to) => redirect(redirect_status, to),
        None => {
            let t = locale_of(request.locale);
            let message = if browser_signed_out { t.signed_out } else { t.signed_out_elsewhere };
            LoggedOutPage::new(identity, t, t.signed_out_heading, message).respond(StatusCode::OK)
        }
    };
    if browser_signed_out {
        let mut set = SetCookies::new(identity.settings.secure_cookies);
        set.clear(cookies::SESSION);
        set.apply(response.headers_mut());
    }
    response
}

async fn validate(identity: &Identity, params: &Form) -> Result<LogoutRequest, Failure> {
    let form: LogoutForm = params.read()?;
    let hint = match &form.id_token_hint {
        None => None,
        Some(token) => match identity.tokens.verify_issued::<IdClaims>(token, TYP_ID_TOKEN).await {
            Ok(claims) => Some(claims),
            Err(AccessTokenError::Invalid | AccessTokenError::InvalidProof) => return Err(Refusal::Hint.into()),
            Err(AccessTokenError::Unavailable(error)) => return Err(error.into()),
        },
    };
    let client_id = match (form.client_id.as_deref(), &hint) {
        (Some(id), Some(hint)) if id != hint.aud => return Err(Refusal::Client.into()),
        (Some(id), _) => Some(id),
        (None, Some(hint)) => Some(hint.aud.as_str()),
        (None, None) => None,
    };
    let client: Option<Client> = match client_id {
        None => None,
        Some(id) => Some(identity.store.find_client(&ClientId::new(id)).await?.ok_or(Refusal::Client)?),
    };
    let return_to = match &form.post_logout_redirect_uri {
        None => None,
        Some(uri) => {
            let client = client.as_ref().ok_or(Refusal::Redirect)?;
            if !client.has_post_logout_redirect_uri(uri) {
                return Err(Refusal::Redirect.into());
            }
            Some(match &form.state {
                Some(state) => with_query(uri, &[("state", state)]),
                None => uri.clone(),
            })
        }
    };
    let locale = form.ui_locales.as_deref().and_then(Locale::from_ui_locales);
    Ok(LogoutRequest { hint, return_to, locale })
}

/// Ends the browser's session and the one the hint names (see the module).
/// Answers whether the browser is signed out (its cookie is to be cleared):
/// not when its session belongs to another user than the hint's.
async fn end_sessions(identity: &Identity, headers: &HeaderMap, hint: Option<&IdClaims>) -> Result<bool, StorageError> {
    let now = identity.clock.now();
    let hinted_user = hint.map(|h| h.sub.as_str());
    let mut browser_signed_out = true;
    if let Some(current) = session::from_cookie(identity, headers, now).await? {
        browser_signed_out = hinted_user.is_none_or(|sub| sub == current.user_id.to_string());
        if browser_signed_out {
            session::end(identity.store.as_ref(), &current, "logout", None, now).await?;
        }
    }
    if let Some(hint) = hint
        && let Some(sid) = hint.sid
        && let Some(named) = identity.store.find_session_by_id(sid, now).await?
        && named.user_id.to_string() == hint.sub
    {
        session::end(identity.store.as_ref(), &named, "logout", None, now).await?;
    }
    Ok(browser_signed_out)
}
