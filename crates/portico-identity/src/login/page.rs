//! `GET /login` (operation `getLoginPage`).

use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};

use super::texts::{self, Texts};
use super::view::{LoginViewData, script_json};
use super::{authorize_url, current_process, no_process};
use crate::IdentityState;
use crate::cookies::{self, SetCookies};
use crate::oauth2::redirect;

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage<'a> {
    t: &'a Texts,
    csrf: &'a str,
    principal: &'a str,
    error: Option<&'a str>,
    view_json: String,
}

pub async fn login_page(State(identity): State<IdentityState>, headers: HeaderMap) -> Response {
    let now = identity.clock.now();
    let mut process = match current_process(&identity, &headers, now).await {
        Ok(Some(process)) => process,
        Ok(None) => return no_process(&identity, &headers),
        Err(error) => return super::error_page::server_error(error),
    };
    if process.state.is_complete() {
        return redirect(StatusCode::FOUND, &authorize_url(&process));
    }

    // Errors are shown once: clear them from the process as they are shown.
    let errors = process.state.errors.take();
    if errors.is_some()
        && let Err(error) = identity.store.update_login_process(&process).await
    {
        return super::error_page::server_error(error);
    }

    let locale = process.state.locale.unwrap_or_else(|| texts::negotiate(&headers));
    let t = texts::for_locale(locale);
    let wrong = errors.as_ref().and_then(|e| e.credentials_error.as_ref()).map(|_| t.wrong_credentials);
    let page = LoginPage {
        t,
        csrf: &process.state.csrf,
        principal: process.state.principal.as_deref().unwrap_or(""),
        error: wrong,
        view_json: script_json(&LoginViewData::of(&process, errors, locale, now)),
    };
    let Ok(html) = page.render() else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let mut response = Html(html).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if cookies::get(&headers, cookies::STEP_ERROR_DETAILS).is_some() {
        let mut set = SetCookies::new(identity.settings.secure_cookies);
        set.clear(cookies::STEP_ERROR_DETAILS);
        set.apply(response.headers_mut());
    }
    response
}
