//! `POST /login` (operation `submitLoginStep`).
//!
//! Order: find the process (none: back to the client or the logged-out
//! page); a completed process goes on to authorize; then CSRF (the `_csrf`
//! field or `X-XSRF-TOKEN` header must equal both the `XSRF-TOKEN` cookie and
//! the process's token, else `fatal-error`); then the current step.

use axum::body::{Body, to_bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use portico_model::audit::{AuditEvent, AuditKind};
use portico_model::login::{LoginFormErrors, LoginProcess, StepType, codes};
use serde_json::json;

use super::view::{ActionKind, ErrorAction, ErrorDetails};
use super::{ClientEntry, authorize_url, current_process, error_page, no_process, session};
use crate::cookies::{self, SetCookies};
use crate::oauth2::params::Params;
use crate::oauth2::redirect;
use crate::{Identity, IdentityState};

const MAX_BODY: usize = 16 * 1024;

/// The error details cookie `step_error_details` carries.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct StepErrorDetails<'a> {
    step_type: &'a str,
    error_code: &'a str,
}

pub async fn submit_step(State(identity): State<IdentityState>, headers: HeaderMap, body: Body) -> Response {
    let now = identity.clock.now();
    let process = match current_process(&identity, &headers, now).await {
        Ok(Some(process)) => process,
        Ok(None) => return no_process(&identity, &headers),
        Err(error) => return error_page::server_error(error),
    };
    if process.state.is_complete() {
        return redirect(StatusCode::SEE_OTHER, &authorize_url(&process));
    }
    let params = match to_bytes(body, MAX_BODY).await {
        Ok(bytes) => Params::parse(&bytes),
        Err(_) => return fatal(&identity, &process, codes::FATAL_ERROR),
    };
    if !csrf_ok(&headers, &params, &process) {
        return fatal(&identity, &process, codes::FATAL_ERROR);
    }
    let result = match process.state.step {
        StepType::UsernamePassword => username_password(&identity, process.clone(), &params).await,
        _ => return fatal(&identity, &process, codes::UNKNOWN_ERROR),
    };
    result.unwrap_or_else(error_page::server_error)
}

fn csrf_ok(headers: &HeaderMap, params: &Params, process: &LoginProcess) -> bool {
    let header = headers.get("x-xsrf-token").and_then(|v| v.to_str().ok());
    params.one("_csrf").ok().flatten().or(header).is_some_and(|sent| {
        cookies::xsrf_matches(headers, sent)
            && portico_crypto::constant_time_eq(sent.as_bytes(), process.state.csrf.as_bytes())
    })
}

/// The process cannot go on: 303 to `/error` with a restart action.
fn fatal(identity: &Identity, process: &LoginProcess, code: &str) -> Response {
    let details = ErrorDetails {
        error_code: code.to_owned(),
        actions: vec![ErrorAction { action: ActionKind::RetryLogin, url: Some("/login/restart".to_owned()) }],
    };
    error_page::redirect_to_error(identity, &details, Some(process.id))
}

async fn username_password(
    identity: &Identity,
    mut process: LoginProcess,
    params: &Params,
) -> Result<Response, portico_storage::StorageError> {
    let now = identity.clock.now();
    let principal = params.one("principal").ok().flatten().map(str::trim).unwrap_or("");
    let password = params.one("credentials").ok().flatten().unwrap_or("").to_owned();
    let user = if principal.is_empty() { None } else { identity.store.find_user_by_login(principal).await? };
    let ok = !password.is_empty()
        && identity.passwords.verify(user.as_ref().map(|u| u.password_hash.clone()), password).await;

    let Some(user) = user.filter(|_| ok) else {
        let event = AuditEvent::new(now, AuditKind::LoginFailed).client(&process.state.client_id);
        identity.audit(event.detail(json!({ "step": "username-password", "principal": principal }))).await;
        process.state.principal = (!principal.is_empty()).then(|| principal.to_owned());
        process.state.errors = Some(LoginFormErrors {
            credentials_error: Some(codes::USERNAME_PASSWORD_WRONG.to_owned()),
            ..LoginFormErrors::default()
        });
        identity.store.update_login_process(&process).await?;
        let mut response = redirect(StatusCode::SEE_OTHER, "/login");
        let mut set = SetCookies::new(identity.settings.secure_cookies);
        let details = StepErrorDetails { step_type: "username-password", error_code: codes::USERNAME_PASSWORD_WRONG };
        set.set(
            cookies::STEP_ERROR_DETAILS,
            &cookies::seal_json(&identity.cookies, cookies::STEP_ERROR_DETAILS, &details),
            Some(identity.settings.login_process_ttl.whole_seconds()),
        );
        set.apply(response.headers_mut());
        return Ok(response);
    };

    if user.blocked {
        identity.audit(AuditEvent::new(now, AuditKind::LoginBlockedUser).user(user.id)).await;
        let back = return_url_of(identity, &process);
        let details = ErrorDetails {
            error_code: codes::USER_IS_BLOCKED.to_owned(),
            actions: vec![ErrorAction { action: ActionKind::Redirect, url: Some(back) }],
        };
        identity.store.delete_login_process(process.id).await?;
        return Ok(error_page::redirect_to_error(identity, &details, None));
    }

    process.state.user_id = Some(user.id);
    process.state.principal = Some(principal.to_owned());
    process.state.completed_at = Some(now);
    if !identity.store.update_login_process(&process).await? {
        // A parallel request moved the process on; show its current state.
        return Ok(redirect(StatusCode::SEE_OTHER, "/login"));
    }
    let event = AuditEvent::new(now, AuditKind::LoginSucceeded).user(user.id).client(&process.state.client_id);
    identity.audit(event.detail(json!({ "method": "PASSWORD" }))).await;

    let mut response = redirect(StatusCode::SEE_OTHER, &authorize_url(&process));
    let mut set = SetCookies::new(identity.settings.secure_cookies);
    session::open(identity, user.id, now, &mut set).await?;
    set.clear(cookies::STEP_ERROR_DETAILS);
    set.apply(response.headers_mut());
    Ok(response)
}

/// Where the process's client wants the browser back: the request's
/// `redirect_uri` with `access_denied` and its `state`, or else the
/// logged-out page.
fn return_url_of(identity: &Identity, process: &LoginProcess) -> String {
    let params = Params::parse(process.state.authorize_query.as_bytes());
    match (params.one("redirect_uri"), params.one("state")) {
        (Ok(Some(redirect_uri)), Ok(Some(state))) => ClientEntry {
            client_id: process.state.client_id.clone(),
            redirect_uri: redirect_uri.to_owned(),
            state: state.to_owned(),
        }
        .return_url(),
        _ => identity.settings.logged_out_url.clone(),
    }
}
