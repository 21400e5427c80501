//! The `username-password` and `password` steps, with the CAPTCHA and the
//! lockout that guard them: after `captcha_after_failures` failed attempts
//! (of the user, or of this process) a valid `smart-token` is required
//! before the password is even checked; the attempt that reaches
//! `block_after_failures` blocks the user for `block_duration`.

use axum::response::Response;
use portico_model::audit::{AuditEvent, AuditKind};
use portico_model::login::{LoginProcess, StepType, codes};
use portico_model::user::User;
use portico_storage::StorageError;
use serde_json::json;

use super::{Field, retry};
use crate::Identity;
use crate::login::flow::{self, advance};
use crate::oauth2::params::Params;

/// Whether the step must show and check a CAPTCHA for `user` (if known).
pub async fn captcha_required(
    identity: &Identity,
    process: &LoginProcess,
    user: Option<&User>,
) -> Result<bool, StorageError> {
    let limit = identity.settings.captcha_after_failures;
    if process.state.password_failures >= limit {
        return Ok(true);
    }
    Ok(match user {
        Some(user) => identity.store.password_failures(user.id).await?.failures >= limit,
        None => false,
    })
}

/// Checks the CAPTCHA when one is required; `false` means the attempt stops here.
async fn captcha_passed(identity: &Identity, required: bool, params: &Params) -> bool {
    if !required {
        return true;
    }
    let token = params.one("smart-token").ok().flatten().unwrap_or("");
    !token.is_empty() && identity.captcha.verify(token, None).await
}

pub async fn username_password(
    identity: &Identity,
    mut process: LoginProcess,
    params: &Params,
) -> Result<Response, StorageError> {
    let principal = params.one("principal").ok().flatten().map(str::trim).unwrap_or("").to_owned();
    let user = if principal.is_empty() || principal.len() > 256 {
        None
    } else {
        identity.store.find_user_by_login(&principal).await?
    };
    process.state.principal = (!principal.is_empty() && principal.len() <= 256).then(|| principal.clone());
    check_password(identity, process, user, params, StepType::UsernamePassword).await
}

pub async fn password(identity: &Identity, process: LoginProcess, params: &Params) -> Result<Response, StorageError> {
    let user = match process.state.user_id {
        Some(id) => identity.store.find_user(id).await?,
        None => None,
    };
    if user.is_none() {
        return Ok(crate::login::submit::fatal(identity, &process, codes::UNKNOWN_ERROR));
    }
    check_password(identity, process, user, params, StepType::Password).await
}

async fn check_password(
    identity: &Identity,
    mut process: LoginProcess,
    user: Option<User>,
    params: &Params,
    step: StepType,
) -> Result<Response, StorageError> {
    let now = identity.clock.now();
    let wrong = match step {
        StepType::Password => codes::PASSWORD_WRONG,
        _ => codes::USERNAME_PASSWORD_WRONG,
    };
    let required = captcha_required(identity, &process, user.as_ref()).await?;
    if !captcha_passed(identity, required, params).await {
        return retry(identity, process, Field::Other, codes::CAPTCHA_REQUIRED, true).await;
    }
    let password = params.one("credentials").ok().flatten().unwrap_or("").to_owned();
    let ok = !password.is_empty()
        && password.len() <= 1024
        && identity.passwords.verify(user.as_ref().map(|u| u.password_hash.clone()), password).await;

    match user {
        // `advance` refuses a blocked or locked-out user first.
        Some(user) if ok => advance(identity, process, &user, step).await,
        user => {
            let event = AuditEvent::new(now, AuditKind::LoginFailed).client(&process.state.client_id);
            let event = match &user {
                Some(user) => event.user(user.id),
                None => event,
            };
            identity.audit(event.detail(json!({ "step": step.as_str() }))).await;
            process.state.password_failures += 1;
            let mut captcha = process.state.password_failures >= identity.settings.captcha_after_failures;
            if let Some(user) = &user {
                let until = now + identity.settings.block_duration;
                let failures = identity
                    .store
                    .record_password_failure(user.id, identity.settings.block_after_failures, until)
                    .await?;
                if failures.locked_until.is_some_and(|until| until > now) {
                    return flow::user_blocked(identity, &process, user).await;
                }
                captcha |= failures.failures >= identity.settings.captcha_after_failures;
            }
            retry(identity, process, Field::Credentials, wrong, captcha).await
        }
    }
}
