//! The offer to create a passkey (step `passkey-enrolment`): after a login
//! that proved this device with a password and a one-time code, a user who
//! keeps no usable passkey may create one here, or decline (the offer then
//! waits `login.passkey_offer_pause_days`). See [`super::flow`] for when.
//!
//! - `GET /login` on the step holds an enrolment challenge in the process
//!   (as the `passkey` step holds a sign-in one) and hands its
//!   `navigator.credentials.create` options to the page.
//! - `POST /login` with `credentials` (the new credential's JSON) spends
//!   the challenge in a write of its own, checks the answer and stores the
//!   passkey (audited `passkey.created`), named after the browser; then the
//!   login goes on. A refused answer shows the step again with its error
//!   and stores nothing. With `decline` the offer is declined (recorded for
//!   the user) and the login goes on.
//!
//! The user is signed in already: the offer adds nothing to the login's
//! authentication (`amr` is unchanged), and a bad answer here is not
//! counted in the password throttles (it cannot guess anything).

use axum::http::HeaderMap;
use portico_model::login::{LoginProcess, StepType, codes};
use portico_model::user::User;
use portico_storage::StorageError;

use super::answer::Answer;
use super::flow::{advance, fatal};
use super::passkey::{prepare_with, spend_challenge};
use super::steps::{Field, retry};
use super::texts::Texts;
use crate::Identity;
use crate::edge::LoginStepRequest;
use crate::passkeys::PasskeyError;

/// The process at the `passkey-enrolment` step with a challenge its page
/// can offer (see [`super::passkey::prepare_with`]). `None` when a
/// parallel request changed the process first.
///
/// # Errors
/// When storage fails.
pub async fn prepare(
    identity: &Identity,
    process: LoginProcess,
    user: &User,
) -> Result<Option<LoginProcess>, StorageError> {
    let existing = identity.store.passkeys_of(user.id).await?;
    let shown = user.name.as_deref().unwrap_or(&user.login);
    prepare_with(identity, process, || identity.passkeys.start_enrolment(user.id, &user.login, shown, &existing)).await
}

/// A `POST /login` on the `passkey-enrolment` step.
///
/// # Errors
/// When storage fails.
pub async fn submit(
    identity: &Identity,
    process: LoginProcess,
    form: &LoginStepRequest,
    headers: &HeaderMap,
    t: &Texts,
) -> Result<Answer, StorageError> {
    let now = identity.clock.now();
    let user = match process.state.user_id {
        Some(id) => identity.store.find_user(id).await?,
        None => None,
    };
    let Some(user) = user else {
        return Ok(fatal(identity, &process, codes::FATAL_ERROR).await);
    };
    if form.decline.is_some() {
        identity.store.decline_passkey_offer(user.id, now).await?;
        metrics::counter!("portico_passkey_offers_total", "outcome" => "declined").increment(1);
        return advance(identity, process, &user, StepType::PasskeyEnrolment, None).await;
    }
    let credential = form.credentials.as_deref().unwrap_or_default();
    let (process, challenge) = match spend_challenge(identity, process, codes::PASSKEY_ENROLMENT_EXPIRED).await? {
        Ok(spent) => spent,
        Err(answer) => return Ok(answer),
    };
    // A blocked user signs in no further, and creates nothing on the way.
    if !user.may_sign_in() {
        return super::flow::user_blocked(identity, &process, &user).await;
    }
    let agent = headers.get(axum::http::header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let name = portico_model::user_agent::describe(agent).unwrap_or_else(|| t.passkey_default_name.to_owned());
    let store = identity.store.as_ref();
    match identity.passkeys.finish_enrolment(store, user.id, &challenge.state, credential, &name, now).await {
        Ok(passkey) => {
            metrics::counter!("portico_passkey_offers_total", "outcome" => "created").increment(1);
            tracing::info!(user = %user.id, passkey = %passkey.id, "a passkey was created at the login's offer");
            advance(identity, process, &user, StepType::PasskeyEnrolment, None).await
        }
        Err(PasskeyError::Storage(error)) => Err(error),
        // Room ran out meanwhile: nothing more to offer.
        Err(PasskeyError::TooMany) => advance(identity, process, &user, StepType::PasskeyEnrolment, None).await,
        Err(error) => {
            tracing::info!(user = %user.id, %error, "a passkey offered at login was refused");
            retry(identity, process, Field::Other, codes::PASSKEY_ENROLMENT_REFUSED, false).await
        }
    }
}
