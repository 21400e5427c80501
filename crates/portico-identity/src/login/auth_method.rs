//! `POST /login/user-settings/auth-method` (operation
//! `updateLoginAuthMethod`): restarts the current process with method
//! `PASSWORD` or `PHONE`, keeping its request, device, language and CSRF
//! token.

use crate::edge::AuthMethodRequest;
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use super::answer::Answer;
use super::{SettingsRequest, error_page, settings_request};
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
    let answer = async {
        let (process, AuthMethodRequest { auth_method: method, .. }) =
            match settings_request(&identity, &headers, body).await? {
                SettingsRequest::Ready(process, form) => (process, form),
                SettingsRequest::Refused(answer) => return Ok(answer),
            };
        let mut restarted = (*process).clone();
        restarted.state = process.state.restarted(method);
        identity.store.update_login_process(&restarted).await?;
        Ok(Answer::ToLogin)
    };
    answer.await.map_or_else(error_page::server_error, |answer| answer.respond(&identity))
}
