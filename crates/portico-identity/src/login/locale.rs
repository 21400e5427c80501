//! `PATCH /login/user-settings/locale` (operation `updateLoginLocale`).
//!
//! Answers are bare statuses, never a redirect: 200 the language is stored
//! and the step is unchanged; 400 `locale` missing or unsupported, or no
//! process; 403 the `X-XSRF-TOKEN` header does not match the `XSRF-TOKEN`
//! cookie (and, for an active process, the process's own token); 500 the
//! store failed. The process is the active one (`authentication_flow`) or, on
//! the error page, the failed one (`failed_authentication_flow_id`). A 200
//! also sets `svc.locale`, so that the next login in this browser starts in
//! the chosen language.
//!
//! `POST` on the same path does the same from a form (`_csrf`, `locale`),
//! for pages shown without JavaScript, and answers 303 back to the page.

use axum::body::{Body, to_bytes};
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use portico_model::login::Locale;

use crate::cookies;
use crate::edge::{LocaleForm, LocaleQuery};
use crate::{Identity, IdentityState};
use portico_model::form::Form;

/// Rounds of read-and-update before giving up with 500 (a parallel writer
/// that wins this many times in a row is no user's browser).
const MAX_ROUNDS: usize = 64;

#[utoipa::path(
    patch,
    path = "/login/user-settings/locale",
    operation_id = "updateLoginLocale",
    tag = "login",
    params(crate::edge::LocaleQuery, crate::edge::XsrfHeader, crate::edge::LocaleCookies),
    responses(
        (status = 200, description = "The language is stored; the step is unchanged.",
         headers(("Set-Cookie" = String, description = "`svc.locale`, for the next login in this browser."))),
        (status = 400, description = "`locale` missing or unsupported, or no process."),
        (status = 403, description = "The CSRF check failed."),
        (status = 500, description = "A temporary failure.")
    )
)]
pub async fn update_locale(
    State(identity): State<IdentityState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    // A language Portico does not speak is no language: 400 below.
    let LocaleQuery { locale } = Form::parse(query.unwrap_or_default().as_bytes()).read_lenient().unwrap_or_default();
    let sent = headers.get("x-xsrf-token").and_then(|v| v.to_str().ok());
    set_locale(&identity, &headers, locale, sent).await
}

#[utoipa::path(
    post,
    path = "/login/user-settings/locale",
    operation_id = "submitLoginLocale",
    tag = "login",
    params(crate::edge::LocaleCookies),
    request_body(content = crate::edge::LocaleForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "The language is stored: back to `/login` (an active process) or `/error`.",
         headers(("Location" = String), ("Set-Cookie" = String, description = "`svc.locale`."))),
        (status = 400, description = "`locale` missing or unsupported, an unreadable form, or no process."),
        (status = 403, description = "The CSRF check failed (`_csrf` is not the `XSRF-TOKEN` cookie)."),
        (status = 500, description = "A temporary failure.")
    )
)]
/// The language switch of pages shown without JavaScript: the same change
/// as [`update_locale`], from a form, answered with the page again.
pub async fn submit_locale(State(identity): State<IdentityState>, headers: HeaderMap, body: Body) -> Response {
    let Ok(bytes) = to_bytes(body, 4096).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let LocaleForm { locale, csrf } = Form::parse(&bytes).read_lenient().unwrap_or_default();
    let mut response = set_locale(&identity, &headers, locale, csrf.as_deref()).await;
    if response.status() == StatusCode::OK {
        let back =
            if cookies::process_id(&headers, cookies::AUTHENTICATION_FLOW).is_some() { "/login" } else { "/error" };
        *response.status_mut() = StatusCode::SEE_OTHER;
        response.headers_mut().insert(header::LOCATION, HeaderValue::from_static(back));
    }
    response
}

/// Stores `locale` on the active process or, on the error page, the failed
/// one, when `sent` is the `XSRF-TOKEN` cookie (and, for an active process,
/// its own token): 200 with `svc.locale`, or the status saying why not.
async fn set_locale(identity: &Identity, headers: &HeaderMap, locale: Option<Locale>, sent: Option<&str>) -> Response {
    let Some(locale) = locale else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let Some(sent) = sent.filter(|sent| cookies::xsrf_matches(headers, sent)) else {
        return StatusCode::FORBIDDEN.into_response();
    };

    let active = cookies::process_id(headers, cookies::AUTHENTICATION_FLOW);
    let failed = cookies::process_id(headers, cookies::FAILED_AUTHENTICATION_FLOW_ID);
    let now = identity.clock.now();
    // A parallel update of the same process (another tab, a double click, a
    // step submitted at the same moment) may win the version check: read
    // it again and apply the language to what it left. Each round lets at
    // least one of the parallel updates through, so this ends.
    for _ in 0..MAX_ROUNDS {
        let process = match active.or(failed) {
            Some(id) => identity.store.find_login_process(id, now).await,
            None => return StatusCode::BAD_REQUEST.into_response(),
        };
        let mut process = match process {
            Ok(Some(process)) => process,
            Ok(None) => return StatusCode::BAD_REQUEST.into_response(),
            Err(error) => {
                tracing::warn!(%error, "locale change failed");
                return StatusCode::INTERNAL_SERVER_ERROR.into_response();
            }
        };
        if active.is_some() && !portico_crypto::constant_time_eq(sent.as_bytes(), process.state.csrf.as_bytes()) {
            return StatusCode::FORBIDDEN.into_response();
        }
        process.state.locale = Some(locale);
        match identity.store.update_login_process(&process).await {
            Ok(true) => {
                let mut response = StatusCode::OK.into_response();
                let mut set = cookies::SetCookies::new(identity.settings.secure_cookies);
                set.set(cookies::LOCALE, locale.as_str(), Some(365 * 24 * 3600));
                set.apply(response.headers_mut());
                return response;
            }
            Ok(false) => tokio::task::yield_now().await,
            Err(error) => {
                tracing::warn!(%error, "locale change failed");
                return StatusCode::INTERNAL_SERVER_ERROR.into_response();
            }
        }
    }
    StatusCode::INTERNAL_SERVER_ERROR.into_response()
}
