//! One module per step type: what a `POST /login` on that step does.

pub mod consent;
pub mod otp;
pub mod password;
pub mod phone;

use portico_model::login::{LoginFormErrors, LoginProcess};
use portico_storage::StorageError;

use super::answer::Answer;
use crate::Identity;

/// Which field of `LoginFormErrorDetails` an error code belongs to.
#[derive(Debug, Clone, Copy)]
pub enum Field {
    Principal,
    Credentials,
    Other,
}

/// The same step again, showing `code` once on the next `GET /login`
/// ([`Answer::Retry`]). `process` carries any
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
) -> Result<Answer, StorageError> {
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
) -> Result<(bool, Answer), StorageError> {
    let mut errors = LoginFormErrors::default();
    let slot = match field {
        Field::Principal => &mut errors.principal_error,
        Field::Credentials => &mut errors.credentials_error,
        Field::Other => &mut errors.other_error,
    };
    *slot = Some(code.to_owned());
    process.state.errors = Some(errors);
    let saved = identity.store.update_login_process(&process).await?;
    Ok((saved, Answer::Retry { step: process.state.step, code: code.to_owned(), captcha: captcha_hint }))
}
