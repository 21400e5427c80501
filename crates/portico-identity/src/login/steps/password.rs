//! The `username-password` and `password` steps, behind the guard against
//! guessing ([`crate::login::guard`]): the attempt is counted before the
//! password is checked, a CAPTCHA is required past the threshold, and a
//! pause stops the attempt before its check.

use std::net::IpAddr;

use portico_model::audit::{AuditEvent, AuditKind};
use portico_model::login::{LoginProcess, StepType, codes};
use portico_model::user::User;
use portico_storage::StorageError;
use serde_json::json;

use super::{Field, retry};
use crate::Identity;
use crate::edge::LoginStepRequest;
use crate::login::answer::Answer;
use crate::login::flow::{self, advance};
use crate::login::guard::{self, Attempt, Gate};

/// The device id of `process` when that device is trusted for `user`.
async fn trusted_device<'a>(
    identity: &Identity,
    process: &'a LoginProcess,
    user: Option<&User>,
) -> Result<Option<&'a str>, StorageError> {
    Ok(match user {
        Some(user) if flow::device_trusted(identity, process, user).await? => process.state.device_id.as_deref(),
        _ => None,
    })
}

/// Whether the page of a password step must show the CAPTCHA: whenever
/// the server will demand it of the next attempt.
///
/// # Errors
/// When storage fails.
pub async fn captcha_required(
    identity: &Identity,
    process: &LoginProcess,
    user: Option<&User>,
    address: Option<IpAddr>,
) -> Result<bool, StorageError> {
    if process.state.captcha {
        return Ok(true);
    }
    let found;
    let user = match (user, process.state.step, &process.state.principal) {
        (Some(user), _, _) => Some(user),
        (None, StepType::UsernamePassword, Some(principal)) => {
            found = identity.store.find_user_by_login(principal).await?;
            found.as_ref()
        }
        _ => None,
    };
    let principal = process.state.principal.as_deref().unwrap_or("");
    let trusted_device = trusted_device(identity, process, user).await?;
    guard::captcha_due(identity, &Attempt { user, principal, trusted_device, address }).await
}

pub async fn username_password(
    identity: &Identity,
    mut process: LoginProcess,
    form: &LoginStepRequest,
    address: Option<IpAddr>,
) -> Result<Answer, StorageError> {
    let principal = form.principal.as_deref().map(str::trim).unwrap_or("").to_owned();
    let usable = !principal.is_empty() && principal.len() <= 256;
    let user = if usable { identity.store.find_user_by_login(&principal).await? } else { None };
    process.state.principal = usable.then(|| principal.clone());
    check_password(identity, process, user, form, StepType::UsernamePassword, address).await
}

pub async fn password(
    identity: &Identity,
    process: LoginProcess,
    form: &LoginStepRequest,
    address: Option<IpAddr>,
) -> Result<Answer, StorageError> {
    let user = match process.state.user_id {
        Some(id) => identity.store.find_user(id).await?,
        None => None,
    };
    if user.is_none() {
        return Ok(crate::login::flow::fatal(identity, &process, codes::UNKNOWN_ERROR).await);
    }
    check_password(identity, process, user, form, StepType::Password, address).await
}

async fn check_password(
    identity: &Identity,
    mut process: LoginProcess,
    user: Option<User>,
    form: &LoginStepRequest,
    step: StepType,
    address: Option<IpAddr>,
) -> Result<Answer, StorageError> {
    let now = identity.clock.now();
    let (wrong, paused) = match step {
        StepType::Password => (codes::PASSWORD_WRONG, codes::PASSWORD_PAUSED),
        _ => (codes::USERNAME_PASSWORD_WRONG, codes::USERNAME_PASSWORD_PAUSED),
    };
    let principal = process.state.principal.clone().unwrap_or_default();
    let device = trusted_device(identity, &process, user.as_ref()).await?.map(str::to_owned);
    let attempt = Attempt { user: user.as_ref(), principal: &principal, trusted_device: device.as_deref(), address };
    let token = form.smart_token.as_deref();
    let counted = match guard::before_check(identity, &attempt, token).await? {
        Gate::Open(counted) => counted,
        Gate::Locked(until) => {
            process.state.paused_until = Some(until);
            process.state.tries_before_pause = None;
            let captcha = process.state.captcha;
            return retry(identity, process, Field::Other, paused, captcha).await;
        }
        Gate::Captcha => {
            process.state.captcha = true;
            return retry(identity, process, Field::Other, codes::CAPTCHA_REQUIRED, true).await;
        }
    };
    let password = form.credentials.clone().unwrap_or_default();
    let ok = !password.is_empty()
        && password.len() <= 1024
        && identity.passwords.verify(user.as_ref().map(|u| u.password_hash.clone()), password).await;

    match user {
        Some(user) if ok => {
            guard::succeeded(identity, counted).await?;
            process.state.captcha = false;
            process.state.paused_until = None;
            process.state.tries_before_pause = None;
            // `advance` refuses a user blocked by an operator.
            advance(identity, process, &user, step, Some(device.is_some())).await
        }
        user => {
            let after = guard::failed(identity, counted).await?;
            let method = process.state.method.as_str();
            metrics::counter!("portico_logins_total", "method" => method, "outcome" => "failed").increment(1);
            let event = AuditEvent::new(now, AuditKind::LoginFailed).client(&process.state.client_id);
            let event = match &user {
                Some(user) => event.user(user.id),
                None => event,
            };
            let detail = match after.locked_until {
                Some(until) => json!({ "step": step.as_str(), "pausedUntil": until.unix_timestamp() }),
                None => json!({ "step": step.as_str() }),
            };
            identity.audit(event.detail(detail)).await;
            process.state.captcha = after.captcha_next;
            process.state.paused_until = after.locked_until;
            process.state.tries_before_pause = after.tries_before_pause;
            retry(identity, process, Field::Credentials, wrong, after.captcha_next).await
        }
    }
}
