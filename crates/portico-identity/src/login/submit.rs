//! `POST /login` (operation `submitLoginStep`).
//!
//! Order: find the process (none: back to the client or the logged-out
//! page); a completed process goes on to authorize; then CSRF (the `_csrf`
//! field or `X-XSRF-TOKEN` header must equal both the `XSRF-TOKEN` cookie and
//! the process's token, else `fatal-error`); then the current step
//! ([`super::steps`]). Fields of other steps are ignored: only the current
//! step's fields are read.

use axum::body::{Body, to_bytes};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use portico_model::login::{LoginProcess, StepType, codes};

use super::flow::fatal;
use super::steps;
use super::{error_page, process_to_submit};
use crate::IdentityState;
use crate::client_address::Peer;
use crate::cookies;
use crate::edge::LoginStepRequest;
use portico_model::form::Form;

const MAX_BODY: usize = 16 * 1024;

#[utoipa::path(
    post,
    path = "/login",
    operation_id = "submitLoginStep",
    tag = "login",
    params(crate::edge::LoginCookies, crate::edge::OptionalXsrfHeader),
    request_body(content = crate::edge::LoginStepRequest, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "To `/login` (the next step, or the same one with its errors), to the \
                                      original `/oauth2/authorize` when every step is done, or to `/error` \
                                      (a CSRF failure, or the process cannot go on).",
         headers(("Location" = String), ("Set-Cookie" = String, description = "`step_error_details`, `error_page_details`, \
                                                                               `failed_authentication_flow_id`, `svc.session` as the outcome needs."))),
        (status = 302, description = "No live process: to the client address of `login_client_entry` or to the logged-out page.",
         headers(("Location" = String), ("Set-Cookie" = String, description = "Clears `authentication_flow`, `login_client_entry`."))),
        crate::edge::BrowserUnavailable
    )
)]
pub async fn submit_step(
    State(identity): State<IdentityState>,
    Peer(peer): Peer,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let now = identity.clock.now();
    let mut process = match process_to_submit(&identity, &headers, now).await {
        Ok(process) => process,
        Err(answer) => return answer,
    };
    let form = match to_bytes(body, MAX_BODY).await {
        Ok(bytes) => LoginStepRequest::read(&Form::parse(&bytes)),
        Err(_) => return fatal(&identity, &process, codes::FATAL_ERROR).await.respond(&identity),
    };
    if !csrf_ok(&headers, form.csrf.as_deref(), &process) {
        return fatal(&identity, &process, codes::FATAL_ERROR).await.respond(&identity);
    }
    let address = identity.client_address(&headers, peer);
    // A login that opens a session replaces the browser's, in its own
    // write (OWASP session management: a new session on authentication,
    // the old one ended, as a logout would with `by: "replaced"`), before
    // the user's session bound is counted.
    process.state.presented_session = cookies::get(&headers, cookies::SESSION)
        .map(|token| portico_model::ids::SessionHash::new(portico_crypto::hash::token_hash(token)));
    let result = match process.state.step {
        StepType::UsernamePassword => steps::password::username_password(&identity, process, &form, address).await,
        StepType::Password => steps::password::password(&identity, process, &form, address).await,
        StepType::Phone => steps::phone::phone(&identity, process, &form, address).await,
        StepType::SmsOtp | StepType::EmailOtp => steps::otp::submit(&identity, process, &form, address).await,
        StepType::Consent => steps::consent::consent(&identity, process, &form).await,
        StepType::Passkey => super::passkey::submit(&identity, process, &form, address).await,
        StepType::PasskeyEnrolment => {
            let locale = process
                .state
                .locale
                .unwrap_or_else(|| super::texts::negotiate(&headers, identity.settings.default_locale));
            let t = super::texts::for_locale(locale);
            super::passkey_enrolment::submit(&identity, process, &form, &headers, t).await
        }
    };
    // Every step's decision is answered here, the one place it becomes a response.
    result.map_or_else(error_page::server_error, |answer| answer.respond(&identity))
}

/// Whether the request's CSRF token (`field`, the form's `_csrf`, else the
/// `X-XSRF-TOKEN` header) equals both the `XSRF-TOKEN` cookie and the
/// process's token.
pub fn csrf_ok(headers: &HeaderMap, field: Option<&str>, process: &LoginProcess) -> bool {
    let header = headers.get("x-xsrf-token").and_then(|v| v.to_str().ok());
    field.or(header).is_some_and(|sent| {
        cookies::xsrf_matches(headers, sent)
            && portico_crypto::constant_time_eq(sent.as_bytes(), process.state.csrf.as_bytes())
    })
}
