//! One module per step type: what a `POST /login` on that step does.

pub mod consent;
pub mod otp;
pub mod password;
pub mod phone;

use axum::response::Response;
use portico_model::login::{LoginFormErrors, LoginProcess};
use portico_storage::StorageError;

use super::flow::to_login;
use crate::Identity;
use crate::cookies::{self, SetCookies};

/// Which field of `LoginFormErrorDetails` an error code belongs to.
#[derive(Debug, Clone, Copy)]
pub enum Field {
    Principal,
    Credentials,
    Other,
}

/// The error details cookie `step_error_details` carries.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct StepErrorDetails<'a> {
    step_type: &'a str,
    error_code: &'a str,
}

/// The same step again, showing `code` once on the next `GET /login`; the
/// `step_error_details` cookie says what failed. `process` carries any
/// other change of this attempt, saved with it if no parallel request
/// changed the process first (see [`retry_saved`] where that matters).
///
/// # Errors
/// When storage fails.
pub async fn retry(
    identity: &Identity,
    process: LoginProcess,
    field: Field,
    code: &str,
    captcha_hint: bool,
) -> Result<Response, StorageError> {
    Ok(retry_saved(identity, process, field, code, captcha_hint).await?.1)
}

/// [`retry`], saying whether `process` was saved: `false` when a parallel
/// request changed it first, so that a step whose answer depends on a
/// count in the process (a wrong code's tries) reads it again and tries
/// once more instead of answering from a stale count.
///
/// # Errors
/// When storage fails.
pub async fn retry_saved(
    identity: &Identity,
    mut process: LoginProcess,
    field: Field,
    code: &str,
    captcha_hint: bool,
) -> Result<(bool, Response), StorageError> {
    let mut errors = LoginFormErrors::default();
    let slot = match field {
        Field::Principal => &mut errors.principal_error,
        Field::Credentials => &mut errors.credentials_error,
        Field::Other => &mut errors.other_error,
    };
    *slot = Some(code.to_owned());
    process.state.errors = Some(errors);
    let saved = identity.store.update_login_process(&process).await?;
    let mut response = to_login();
    let mut set = SetCookies::new(identity.settings.secure_cookies);
    let details = StepErrorDetails { step_type: process.state.step.as_str(), error_code: code };
    let ttl = Some(identity.settings.login_process_ttl.whole_seconds());
    set.set(
        cookies::STEP_ERROR_DETAILS,
        &cookies::seal_json(&identity.cookies, cookies::STEP_ERROR_DETAILS, &details),
        ttl,
    );
    if captcha_hint {
        set.set(cookies::CAPTCHA_REQUIRED, "true", ttl);
    }
    set.apply(response.headers_mut());
    Ok((saved, response))
}
