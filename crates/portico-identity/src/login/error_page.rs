//! `GET /error` (operation `getErrorPage`), the redirect that leads there,
//! and the logged-out page (the spec's "default logout page").

use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use portico_model::login::LoginProcess;
use portico_storage::StorageError;

use super::answer::Answer;
use super::texts::{self, Texts};
use super::view::{ActionKind, ErrorDetails, ErrorPageBody, ErrorPageContext, ErrorPageData, script_json};
use crate::cookies::{self, SetCookies};
use crate::http::redirect;
use crate::{Identity, IdentityState};

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    t: &'a Texts,
    brand: crate::theme::BrandView<'a>,
    csrf: &'a str,
    message: &'a str,
    actions: Vec<(String, &'a str)>,
    view_json: String,
}

/// The logged-out page, and the pages of logout: a heading and one message.
#[derive(Template)]
#[template(path = "logged_out.html")]
pub(crate) struct LoggedOutPage<'a> {
    pub t: &'a Texts,
    pub brand: crate::theme::BrandView<'a>,
    pub heading: &'a str,
    pub message: &'a str,
}

impl<'a> LoggedOutPage<'a> {
    pub(crate) fn new(identity: &'a Identity, t: &'a Texts, heading: &'a str, message: &'a str) -> Self {
        Self { t, brand: identity.settings.branding.view(t.locale(), None), heading, message }
    }

    /// The page as a response with `status`.
    pub(crate) fn respond(&self, status: StatusCode) -> Response {
        match self.render() {
            Ok(html) => super::assets::secure(portico_api::no_store((status, Html(html)))),
            Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        }
    }
}

/// Rounds of read-and-update when keeping an error on its process (a
/// parallel request of the same browser may win the version check).
const KEEP_ROUNDS: usize = 8;

/// The error page with `details`. With the process the error belongs
/// to, the error is also kept on it (and the answer names it in
/// `failed_authentication_flow_id`), so that the page survives a reload
/// and a language switch for as long as the process lives, and "log in
/// again" can restart it. An error whose only way on is `RELOAD` leaves the
/// process current; any other ends it.
pub async fn error(identity: &Identity, details: ErrorDetails, process: Option<&LoginProcess>) -> Answer {
    let ends = !details.actions.iter().all(|a| matches!(a.action, ActionKind::Reload));
    if let Some(process) = process {
        keep_on_process(identity, process, &details, ends).await;
    }
    Answer::Error { details, process: process.map(|p| p.id), ends }
}

/// [`error`], answered: 303 to `/error` with its cookies.
pub async fn redirect_to_error(
    identity: &Identity,
    details: &ErrorDetails,
    process: Option<&LoginProcess>,
) -> Response {
    error(identity, details.clone(), process).await.respond(identity)
}

/// Stores `details` on the process (and ends it when `ends`). A failure is
/// logged, not shown: the cookie still carries the page once.
async fn keep_on_process(identity: &Identity, process: &LoginProcess, details: &ErrorDetails, ends: bool) {
    let Ok(value) = serde_json::to_value(details) else { return };
    let kept = async {
        let mut current = process.clone();
        for _ in 0..KEEP_ROUNDS {
            current.state.error_page = Some(value.clone());
            if ends {
                current.state.end();
            }
            if identity.store.update_login_process(&current).await? {
                return Ok(());
            }
            match identity.store.find_login_process(process.id, identity.clock.now()).await? {
                Some(fresh) => current = fresh,
                None => return Ok(()),
            }
        }
        Ok::<(), StorageError>(())
    };
    if let Err(error) = kept.await {
        tracing::warn!(%error, "the error page could not be kept on its login process");
    }
}

/// A storage failure while serving a browser: a plain page with the right status.
pub fn server_error(error: StorageError) -> Response {
    let status = match &error {
        StorageError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    tracing::error!(%error, "login request failed");
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "The service is temporarily unavailable. Please try again.",
    )
        .into_response()
}

#[utoipa::path(
    get,
    path = "/error",
    operation_id = "getErrorPage",
    tag = "login",
    params(crate::edge::ErrorPageCookies),
    responses(
        (status = 200, description = "The error page; `script#viewData` holds `ErrorPageDataDTO`.",
         content_type = "text/html", body = String,
         headers(("Set-Cookie" = String, description = "Clears `error_page_details`; sets `XSRF-TOKEN`."))),
        (status = 302, description = "No error data, or damaged: to the logged-out page.", headers(("Location" = String))),
        (status = 500, description = "The page could not be made.")
    )
)]
pub async fn error_page(State(identity): State<IdentityState>, headers: HeaderMap) -> Response {
    let cookie = cookies::get(&headers, cookies::ERROR_PAGE_DETAILS);
    let failed = failed_process(&identity, &headers).await;
    let kept = || {
        let kept = failed.as_ref()?.state.error_page.clone()?;
        serde_json::from_value::<ErrorDetails>(kept).ok()
    };
    let Some(details) =
        cookies::open_json::<ErrorDetails>(&identity.cookies, cookies::ERROR_PAGE_DETAILS, cookie).or_else(kept)
    else {
        return redirect(StatusCode::FOUND, &identity.settings.logged_out_url);
    };
    let locale = failed.as_ref().and_then(|process| process.state.locale);
    let t = texts::for_locale(locale.unwrap_or_else(|| texts::negotiate(&headers, identity.settings.default_locale)));
    let message = t.for_code(&details.error_code);
    let actions = details
        .actions
        .iter()
        .filter_map(|a| {
            let label = match a.action {
                ActionKind::Reload => t.action_reload,
                ActionKind::RetryLogin => t.action_retry,
                ActionKind::Redirect => t.action_redirect,
            };
            a.url.clone().map(|url| (url, label))
        })
        .collect();
    let csrf = portico_crypto::random::token();
    let data = ErrorPageData {
        page_type: "ERROR",
        page_data: ErrorPageBody {
            error_page_context: ErrorPageContext { csrf: csrf.clone() },
            error_details: details,
        },
    };
    let brand = identity.settings.branding.view(t.locale(), None);
    let page = ErrorPage { t, brand, csrf: &csrf, message, actions, view_json: script_json(&data) };
    let Ok(html) = page.render() else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let mut response = portico_api::no_store(Html(html));
    let mut set = SetCookies::new(identity.settings.secure_cookies);
    set.clear(cookies::ERROR_PAGE_DETAILS).set(cookies::XSRF_TOKEN, &csrf, None);
    set.apply(response.headers_mut());
    super::assets::secure(response)
}

/// The process named by `failed_authentication_flow_id`, while it lives.
async fn failed_process(identity: &Identity, headers: &HeaderMap) -> Option<LoginProcess> {
    let id = cookies::process_id(headers, cookies::FAILED_AUTHENTICATION_FLOW_ID)?;
    identity.store.find_login_process(id, identity.clock.now()).await.ok()?
}

pub async fn logged_out(State(identity): State<IdentityState>, headers: HeaderMap) -> Response {
    let t = texts::for_locale(texts::negotiate(&headers, identity.settings.default_locale));
    LoggedOutPage::new(&identity, t, t.signed_out_heading, t.logged_out).respond(StatusCode::OK)
}

/// A browser's page at an address Portico does not serve: "page not found"
/// in the browser's language, with the brand, 404.
pub fn not_found_page(identity: &Identity, headers: &HeaderMap) -> Response {
    let t = texts::for_locale(texts::negotiate(headers, identity.settings.default_locale));
    LoggedOutPage::new(identity, t, t.not_found_heading, t.not_found).respond(StatusCode::NOT_FOUND)
}
