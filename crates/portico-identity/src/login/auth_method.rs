//! `POST /login/user-settings/auth-method` (operation
//! `updateLoginAuthMethod`): restarts the current process with method
//! `PASSWORD` or `PHONE`, keeping its request, device, language and CSRF
//! token.

use crate::edge::AuthMethodRequest;
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use super::flow::to_login;
use super::submit::csrf_ok;
use super::{error_page, settings_failure, settings_request};
use crate::IdentityState;

#[utoipa::path(
    post,
    path = "/login/user-settings/auth-method",
    operation_id = "updateLoginAuthMethod",
    tag = "login",
    params(crate::edge::LoginCookies, crate::edge::OptionalXsrfHeader),
    request_body(content = crate::edge::AuthMethodRequest, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "To `/login` (the process restarted with the method), or to `/error` \
                                      (a bad `authMethod`, a CSRF failure, no process).",
         headers(("Location" = String), ("Set-Cookie" = String, description = "With `/error`: `error_page_details`."))),
        crate::edge::BrowserUnavailable
    )
)]
pub async fn update_auth_method(State(identity): State<IdentityState>, headers: HeaderMap, body: Body) -> Response {
    let (process, form) = match settings_request(&identity, &headers, body).await {
        Ok(request) => request,
        Err(response) => return *response,
    };
    let Ok(AuthMethodRequest { auth_method: method, csrf }) = form.read_lenient() else {
        return settings_failure(&identity, &headers, Some(&process)).await;
    };
    if !csrf_ok(&headers, csrf.as_deref(), &process) {
        return settings_failure(&identity, &headers, Some(&process)).await;
    }
    let mut restarted = process.clone();
    restarted.state = process.state.restarted(method);
    match identity.store.update_login_process(&restarted).await {
        Ok(_) => to_login(),
        Err(error) => error_page::server_error(error),
    }
}
