//! A passkey sign-in from the first page ([`crate::passkeys`]): a button,
//! and the browser's autofill on the login field (conditional mediation).
//!
//! - `POST /login/passkey/options` (the `X-XSRF-TOKEN` header as every
//!   script call of the login): starts a challenge, keeps it in the
//!   process (replacing any earlier one) and answers the
//!   `navigator.credentials.get` options as JSON.
//! - `POST /login/passkey` (a form: `_csrf`, `credential` — the
//!   credential's JSON): takes the challenge out of the process in a write
//!   of its own (so that it is spent once, whatever the answer), checks the
//!   answer, and on success the passkey counts as the `passkey` step passed
//!   ([`super::flow::advance`]): with `login.passkey_replaces_code` the
//!   login completes without a code, else a code follows. A refusal is the
//!   first page again with its error, like a wrong password.
//!
//! Both are offered only at a process's first step, before anything is
//! passed, and only when passkeys are on.

use axum::Json;
use axum::body::{Body, to_bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use portico_model::form::Form;
use portico_model::login::{LoginProcess, PasskeyChallenge, StepType, codes};
use portico_storage::StorageError;

use super::answer::Answer;
use super::flow::{advance, fatal};
use super::steps::{Field, retry};
use super::submit::csrf_ok;
use super::{current_process, error_page, process_to_submit};
use std::net::IpAddr;

use super::guard::{self, Gate};
use crate::client_address::Peer;
use crate::edge::LoginStepRequest;
use crate::oauth2::error::OAuth2ErrorDto;
use crate::passkeys::{CHALLENGE_SECONDS, MAX_RESPONSE_BYTES, PasskeyError, Started};
use crate::{Identity, IdentityState};

/// Whether `process` may offer a passkey sign-in now: passkeys are on and
/// the process is at its first step with nothing passed.
pub fn offered(identity: &Identity, process: &LoginProcess) -> bool {
    identity.passkeys.unavailable().is_none()
        && !process.state.is_complete()
        && process.state.passed.is_empty()
        && matches!(process.state.step, StepType::UsernamePassword | StepType::Phone)
}

#[utoipa::path(
    post,
    path = "/login/passkey/options",
    operation_id = "startPasskeySignIn",
    tag = "login",
    params(crate::edge::LoginCookies, crate::edge::XsrfHeader),
    responses(
        (status = 200, description = "The `navigator.credentials.get` options of a new challenge, which the \
                                      process keeps (replacing an earlier one) for 5 minutes.",
         content_type = "application/json", body = Object),
        (status = 403, description = "`invalid_csrf`: the `X-XSRF-TOKEN` header is missing or not the login's.", body = OAuth2ErrorDto),
        (status = 404, description = "`no_login`: no login in progress in this browser.", body = OAuth2ErrorDto),
        (status = 409, description = "`not_offered`: passkeys are off, or the login is past its first step; \
                                      or `conflict`: the login changed meanwhile.", body = OAuth2ErrorDto),
        crate::edge::BrowserUnavailable
    )
)]
pub async fn options(State(identity): State<IdentityState>, headers: HeaderMap) -> Response {
    let now = identity.clock.now();
    let refused = |status: StatusCode, error: &str, why: &str| {
        let body = serde_json::json!({ "error": error, "error_description": why });
        (status, Json(body)).into_response()
    };
    // A call without the header is refused before anything is looked up.
    if !headers.contains_key("x-xsrf-token") {
        let why = "the X-XSRF-TOKEN header (the login's CSRF token) is required";
        return refused(StatusCode::FORBIDDEN, "invalid_csrf", why);
    }
    let mut process = match current_process(&identity, &headers, now).await {
        Ok(Some(process)) => process,
        Ok(None) => {
            return refused(StatusCode::NOT_FOUND, "no_login", "no login in progress: start from the application");
        }
        Err(error) => return error_page::server_error(error),
    };
    if !csrf_ok(&headers, None, &process) {
        let why = "the X-XSRF-TOKEN header does not match the login: reload the page";
        return refused(StatusCode::FORBIDDEN, "invalid_csrf", why);
    }
    if !offered(&identity, &process) {
        let why = "a passkey sign-in is offered only on the first page, when passkeys are on";
        return refused(StatusCode::CONFLICT, "not_offered", why);
    }
    let started = match identity.passkeys.start_sign_in() {
        Ok(started) => started,
        Err(error) => return refused(StatusCode::CONFLICT, "not_offered", &error.to_string()),
    };
    process.state.passkey_challenge =
        Some(PasskeyChallenge { state: started.state, options: started.options.clone(), issued_at: now });
    match identity.store.update_login_process(&process).await {
        Ok(true) => {}
        Ok(false) => return refused(StatusCode::CONFLICT, "conflict", "the login changed meanwhile: ask again"),
        Err(error) => return error_page::server_error(error),
    }
    portico_api::no_store(Json(started.options))
}

#[utoipa::path(
    post,
    path = "/login/passkey",
    operation_id = "finishPasskeySignIn",
    tag = "login",
    params(crate::edge::LoginCookies),
    request_body(content = crate::edge::PasskeySignInRequest, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "As `POST /login`: to the original `/oauth2/authorize` when the login \
                                      completed, to `/login` (the next step, or the first page with \
                                      `challenge.passkey.*`), or to `/error` (a CSRF failure, a blocked user).",
         headers(("Location" = String), ("Set-Cookie" = String, description = "As `POST /login`."))),
        (status = 302, description = "No live process: to the client address of `login_client_entry` or to the logged-out page.",
         headers(("Location" = String), ("Set-Cookie" = String, description = "Clears `authentication_flow`, `login_client_entry`."))),
        crate::edge::BrowserUnavailable
    )
)]
pub async fn sign_in(
    State(identity): State<IdentityState>,
    Peer(peer): Peer,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let now = identity.clock.now();
    let process = match process_to_submit(&identity, &headers, now).await {
        Ok(process) => process,
        Err(answer) => return answer,
    };
    // The credential's JSON, form-encoded, with room for the CSRF field.
    let form = match to_bytes(body, 3 * MAX_RESPONSE_BYTES).await {
        Ok(bytes) => Form::parse(&bytes),
        Err(_) => return fatal(&identity, &process, codes::FATAL_ERROR).await.respond(&identity),
    };
    let field = |name: &str| form.pairs().find(|(key, _)| *key == name).map(|(_, value)| value);
    if !csrf_ok(&headers, field("_csrf"), &process) {
        return fatal(&identity, &process, codes::FATAL_ERROR).await.respond(&identity);
    }
    let credential = field("credential").unwrap_or_default().to_owned();
    if !offered(&identity, &process) {
        return Answer::ToLogin.respond(&identity);
    }
    let address = identity.client_address(&headers, peer);
    let answer = check(&identity, process, &credential, address).await;
    answer.map_or_else(error_page::server_error, |answer| answer.respond(&identity))
}

/// A `POST /login` on the `passkey` step (the second factor): the form's
/// `credentials` field carries the credential's JSON.
///
/// # Errors
/// When storage fails.
pub async fn submit(
    identity: &Identity,
    process: LoginProcess,
    form: &LoginStepRequest,
    address: Option<IpAddr>,
) -> Result<Answer, StorageError> {
    let credential = form.credentials.as_deref().unwrap_or_default().to_owned();
    check(identity, process, &credential, address).await
}

/// The process at the `passkey` step with a challenge the page can offer:
/// the one it holds while it has at least a minute left, else a new one
/// (saved). `None` when a parallel request changed the process first.
///
/// # Errors
/// When storage fails.
pub async fn prepare(identity: &Identity, process: LoginProcess) -> Result<Option<LoginProcess>, StorageError> {
    prepare_with(identity, process, || identity.passkeys.start_sign_in()).await
}

/// The process with a challenge its page can offer: the one it holds
/// while it has at least a minute left, else a new one from `start`
/// (saved). `None` when a parallel request changed the process first.
///
/// # Errors
/// When storage fails.
pub(crate) async fn prepare_with(
    identity: &Identity,
    mut process: LoginProcess,
    start: impl FnOnce() -> Result<Started, PasskeyError>,
) -> Result<Option<LoginProcess>, StorageError> {
    let now = identity.clock.now();
    let fresh = process.state.passkey_challenge.as_ref().is_some_and(|c| {
        let age = (now - c.issued_at).whole_seconds();
        (0..i64::try_from(CHALLENGE_SECONDS).unwrap_or(i64::MAX) - 60).contains(&age)
    });
    if fresh {
        return Ok(Some(process));
    }
    let Ok(started) = start() else {
        // Passkeys went off: the page offers the other ways only.
        return Ok(Some(process));
    };
    process.state.passkey_challenge =
        Some(PasskeyChallenge { state: started.state, options: started.options, issued_at: now });
    if !identity.store.update_login_process(&process).await? {
        return Ok(None);
    }
    process.version += 1;
    Ok(Some(process))
}

/// Takes the process's challenge out in a write of its own, so that it is
/// spent once whatever the answer: `Ok(Err(answer))` when there is none,
/// it is too old (the step again with `expired`), or a parallel request
/// changed the process first.
///
/// # Errors
/// When storage fails.
pub(crate) async fn spend_challenge(
    identity: &Identity,
    mut process: LoginProcess,
    expired: &str,
) -> Result<Result<(LoginProcess, PasskeyChallenge), Answer>, StorageError> {
    let now = identity.clock.now();
    let Some(challenge) = process.state.passkey_challenge.take() else {
        return Ok(Err(retry(identity, process, Field::Other, expired, false).await?));
    };
    if !identity.store.update_login_process(&process).await? {
        return Ok(Err(Answer::ToLogin));
    }
    process.version += 1;
    let age = now - challenge.issued_at;
    if age.whole_seconds() > i64::try_from(CHALLENGE_SECONDS).unwrap_or(i64::MAX) || age.is_negative() {
        return Ok(Err(retry(identity, process, Field::Other, expired, false).await?));
    }
    Ok(Ok((process, challenge)))
}

/// Spends the process's challenge and checks `credential` against it. At
/// the second factor the passkey must be the identified user's.
async fn check(
    identity: &Identity,
    process: LoginProcess,
    credential: &str,
    address: Option<IpAddr>,
) -> Result<Answer, StorageError> {
    let now = identity.clock.now();
    let expected = process.state.user_id;
    // Spent before it is checked: a parallel answer finds it gone.
    let (mut process, challenge) = match spend_challenge(identity, process, codes::PASSKEY_EXPIRED).await? {
        Ok(spent) => spent,
        Err(answer) => return Ok(answer),
    };
    // Counted like a password attempt, on the address (see the guard).
    let counted = match guard::before_passkey(identity, address).await? {
        Gate::Open(counted) => counted,
        Gate::Locked(until) => {
            process.state.paused_until = Some(until);
            return retry(identity, process, Field::Other, codes::USERNAME_PASSWORD_PAUSED, false).await;
        }
        // No CAPTCHA is asked of a passkey (see the guard).
        Gate::Captcha => return retry(identity, process, Field::Other, codes::PASSKEY_REFUSED, false).await,
    };
    let outcome =
        match identity.passkeys.finish_sign_in(identity.store.as_ref(), &challenge.state, credential, now).await {
            Ok(signed_in) => match identity.store.find_user(signed_in.user_id).await? {
                Some(user) if expected.is_none_or(|id| id == user.id) => Ok(user),
                _ => Err("the passkey is not the identified user's".to_owned()),
            },
            Err(PasskeyError::Storage(error)) => return Err(error),
            Err(error) => Err(error.to_string()),
        };
    let user = match outcome {
        Ok(user) => {
            guard::succeeded(identity, counted).await?;
            user
        }
        Err(why) => {
            metrics::counter!("portico_logins_total", "method" => "PASSKEY", "outcome" => "failed").increment(1);
            tracing::info!(error = %why, "a passkey sign-in was refused");
            let after = guard::failed(identity, counted).await?;
            process.state.paused_until = after.locked_until;
            return retry(identity, process, Field::Other, codes::PASSKEY_REFUSED, false).await;
        }
    };
    if expected.is_none() {
        process.state.principal = Some(user.login.clone());
    }
    advance(identity, process, &user, StepType::Passkey, None).await
}
