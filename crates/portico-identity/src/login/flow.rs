//! The order of the steps (PRODUCT.md, "Login flows") and what happens when
//! a process completes.
//!
//! - `PASSWORD`: `username-password` → a second factor when the device is not
//!   trusted for the user (`sms-otp`, or `email-otp` once chosen, both
//!   `secondFactor`) → `consent` when needed → done.
//! - `PHONE`: `phone` → `sms-otp` → `password` (`unknownDevice` when the
//!   device is not trusted) → `consent` when needed → done. A shared phone
//!   number diverts to `username-password` (`phoneDuplicated`), a user with
//!   phone login off to `password` (`phoneAuthNotAllowed`); both then go on
//!   as `PASSWORD`.
//! - Passkeys (when on): a user with an unlocked passkey gets the `passkey`
//!   step (`secondFactor`) instead of the code after the password, and may
//!   take a code instead; a passkey sign-in from the first page passes
//!   `passkey` at once and goes to `consent` when needed → done (a code
//!   follows when `login.passkey_replaces_code` is off).
//! - After a password and a code (either method), a user who keeps no
//!   usable passkey is offered to create one (`passkey-enrolment`, before
//!   `consent`), unless they declined within `login.passkey_offer_pause_days`.
//!
//! [`advance`] is called after every passed step: it works out the next step
//! from what was passed, never from where the browser says it is.

use portico_model::audit::{AuditEvent, AuditKind};
use portico_model::client::Client;
use portico_model::consent;
use portico_model::ids::{SessionId, UserId};
use portico_model::login::{AuthMethod, LoginOutcome, LoginProcess, LoginState, StepType, ViewType, codes};
use portico_model::otp::OtpChannel;
use portico_model::scope::ScopeSet;
use portico_model::user::User;
use portico_storage::{LoginCompletion, StorageError};
use serde_json::json;
use time::OffsetDateTime;

use super::answer::Answer;
use super::view::{ActionKind, ErrorAction, ErrorDetails};
use super::{authorize_url, error_page, return_url_of, session};
use crate::Identity;

/// The scope of a process's request, as authorize checked it.
pub fn requested_scope(state: &LoginState) -> ScopeSet {
    state
        .request
        .as_ref()
        .and_then(|r| ScopeSet::parse(&r.scope.join(" ")).ok())
        .unwrap_or_else(|| ScopeSet::parse("openid").expect("openid is a scope"))
}

/// Whether `user_id` must pass the consent step before `client` gets a
/// code for `scope` ([`portico_model::consent`]; the user's record is read
/// only when the request can need it).
///
/// # Errors
/// When storage fails.
pub async fn consent_due(
    identity: &Identity,
    client: &Client,
    scope: &ScopeSet,
    forced: bool,
    user_id: UserId,
) -> Result<bool, StorageError> {
    if !consent::asked(client.require_consent, scope) {
        return Ok(false);
    }
    if forced {
        return Ok(true);
    }
    let granted = identity.store.find_consent(user_id, &client.client_id).await?.unwrap_or_default();
    Ok(consent::due(scope, false, &granted))
}

/// Whether `user` must pass the consent step for this process's request.
///
/// # Errors
/// When storage fails.
pub async fn consent_needed(identity: &Identity, process: &LoginProcess, user: &User) -> Result<bool, StorageError> {
    let state = &process.state;
    let Some(client) = identity.store.find_client(&state.client_id).await? else { return Ok(false) };
    consent_due(identity, &client, &requested_scope(state), state.force_consent, user.id).await
}

/// Whether the process's device is trusted for `user`.
pub(crate) async fn device_trusted(
    identity: &Identity,
    process: &LoginProcess,
    user: &User,
) -> Result<bool, StorageError> {
    device_trusted_for(identity, process, user.id).await
}

/// Whether the process's device is trusted for the user `user`.
pub(crate) async fn device_trusted_for(
    identity: &Identity,
    process: &LoginProcess,
    user: UserId,
) -> Result<bool, StorageError> {
    let Some(device) = &process.state.device_id else { return Ok(false) };
    let not_before = identity.clock.now() - identity.settings.device_trust_ttl;
    identity.store.is_device_trusted(user, device, not_before).await
}

/// Whether `user` can pass the second factor with a passkey: passkeys are
/// on, they replace codes, and the user keeps one that is not locked.
async fn passkey_usable(identity: &Identity, user: &User) -> Result<bool, StorageError> {
    if identity.passkeys.unavailable().is_some() || !identity.settings.passkey_replaces_code {
        return Ok(false);
    }
    Ok(identity.store.passkey_summary(user.id).await?.usable > 0)
}

/// Whether `user`, having just proven this device with a password and a
/// code, is offered to create a passkey: the offer is on, passkeys are on,
/// the user keeps none that signs in (and has room for one), and has not
/// declined the offer within its pause.
async fn enrolment_offered(identity: &Identity, state: &LoginState, user: &User) -> Result<bool, StorageError> {
    let Some(pause) = identity.settings.passkey_offer_pause else { return Ok(false) };
    let proven = state.has_otp() && state.knows_password() && !state.has_passed(StepType::Passkey);
    if !proven || state.has_passed(StepType::PasskeyEnrolment) || identity.passkeys.unavailable().is_some() {
        return Ok(false);
    }
    let summary = identity.store.passkey_summary(user.id).await?;
    let now = identity.clock.now();
    Ok(summary.usable == 0
        && summary.kept < portico_model::passkey::MAX_PER_USER
        && summary.offer_declined_at.is_none_or(|declined| now - declined >= pause))
}

/// The step after those passed, or `None` when the login is done.
/// `known_trust`: whether the device is trusted for `user`, when the step
/// found out already; otherwise it is looked up only if the next step
/// depends on it.
async fn next_step(
    identity: &Identity,
    process: &LoginProcess,
    user: &User,
    known_trust: Option<bool>,
) -> Result<Option<(StepType, ViewType)>, StorageError> {
    let state = &process.state;
    let depends_on_trust = match state.method {
        AuthMethod::Phone => state.has_otp() && !state.knows_password(),
        AuthMethod::Password => !state.has_otp(),
    };
    let trusted = match known_trust {
        Some(trusted) => trusted,
        None if depends_on_trust => device_trusted(identity, process, user).await?,
        None => false,
    };
    let otp_step = match state.otp_channel {
        OtpChannel::Sms if user.phone.is_some() => StepType::SmsOtp,
        _ if user.email.is_some() => StepType::EmailOtp,
        _ => StepType::SmsOtp,
    };
    let next = match state.method {
        // A passkey is possession and user verification at once; a code
        // after it only where the bank asks for one.
        _ if state.has_passed(StepType::Passkey) => {
            (!identity.settings.passkey_replaces_code && !state.has_otp()).then_some((otp_step, ViewType::SecondFactor))
        }
        AuthMethod::Phone if !state.has_otp() => Some((StepType::SmsOtp, ViewType::Default)),
        AuthMethod::Phone if !state.knows_password() => {
            Some((StepType::Password, if trusted { ViewType::Default } else { ViewType::UnknownDevice }))
        }
        AuthMethod::Password if !state.has_otp() && !trusted => {
            let passkey = !state.passkey_declined && passkey_usable(identity, user).await?;
            Some((if passkey { StepType::Passkey } else { otp_step }, ViewType::SecondFactor))
        }
        _ => None,
    };
    if next.is_some() {
        return Ok(next);
    }
    if enrolment_offered(identity, state, user).await? {
        return Ok(Some((StepType::PasskeyEnrolment, ViewType::Default)));
    }
    if !state.has_passed(StepType::Consent) && consent_needed(identity, process, user).await? {
        return Ok(Some((StepType::Consent, ViewType::Default)));
    }
    Ok(None)
}

/// How a login started, for metrics and the audit log: `PASSWORD`,
/// `PHONE`, or `PASSKEY` for a sign-in with a passkey.
pub fn method_label(state: &LoginState) -> &'static str {
    if state.has_passed(StepType::Passkey) { "PASSKEY" } else { state.method.as_str() }
}

/// The user may not log in: the error page, back to the client.
pub async fn user_blocked(identity: &Identity, process: &LoginProcess, user: &User) -> Result<Answer, StorageError> {
    let now = identity.clock.now();
    let method = method_label(&process.state);
    metrics::counter!("portico_logins_total", "method" => method, "outcome" => "blocked_user").increment(1);
    identity.audit(AuditEvent::new(now, AuditKind::LoginBlockedUser).user(user.id)).await;
    let details = ErrorDetails {
        error_code: codes::USER_IS_BLOCKED.to_owned(),
        actions: vec![ErrorAction { action: ActionKind::Redirect, url: Some(return_url_of(identity, process)) }],
    };
    Ok(error_page::error(identity, details, Some(process)).await)
}

/// After `step` was passed by `user`: records it and moves on to the next
/// step, or completes the process. `known_trust`: whether the process's
/// device is trusted for `user`, when the step looked it up already.
///
/// # Errors
/// When storage fails.
pub async fn advance(
    identity: &Identity,
    mut process: LoginProcess,
    user: &User,
    step: StepType,
    known_trust: Option<bool>,
) -> Result<Answer, StorageError> {
    let now = identity.clock.now();
    if !user.may_sign_in() {
        return user_blocked(identity, &process, user).await;
    }
    process.state.user_id = Some(user.id);
    if !process.state.has_passed(step) {
        process.state.passed.push(step);
    }
    process.state.errors = None;
    match next_step(identity, &process, user, known_trust).await? {
        Some((next, view)) => {
            process.state.go_to(next, view);
            identity.store.update_login_process(&process).await?;
            Ok(Answer::NextStep)
        }
        None => complete(identity, process, user, now).await,
    }
}

/// Every step is passed: the process ends in its outcome (the authorize
/// endpoint then issues the code from it), the device is trusted after a
/// second factor, the SSO session opens.
async fn complete(
    identity: &Identity,
    mut process: LoginProcess,
    user: &User,
    now: OffsetDateTime,
) -> Result<Answer, StorageError> {
    // A consent-only process continues the session it started from; a
    // login opens a new one, named on the process so that the code is
    // issued under it.
    let opens = process.state.session_id.is_none();
    let session_id = *process.state.session_id.get_or_insert_with(SessionId::random);
    let scope = consent::granted_scope(&requested_scope(&process.state), process.state.granted_groups.as_deref());
    process.state.complete(LoginOutcome { user_id: user.id, session_id, scope }, now);
    let state = &process.state;
    let opened = opens.then(|| {
        let amr = state.amr().into_iter().map(str::to_owned).collect();
        session::new(identity, session_id, user.id, amr, state.user_agent.clone(), now)
    });
    let device = match &state.device_id {
        Some(device) if (state.has_otp() || state.has_passed(StepType::Passkey)) && state.knows_password() => {
            Some((user.id, device.as_str()))
        }
        _ => None,
    };
    let method = method_label(state);
    let event = AuditEvent::new(now, AuditKind::LoginSucceeded).user(user.id).client(&state.client_id);
    let audit = event.detail(json!({ "method": method, "amr": state.amr() }));
    // The outcome, its session, the trusted device and the audit entry are
    // stored together: an outcome never names a session that does not
    // exist, and a parallel request that got there first leaves nothing.
    let completion = LoginCompletion {
        process: &process,
        session: opened.as_ref().map(|(session, _)| session),
        session_limit: identity.settings.max_sessions_per_user,
        replaces: state.presented_session.as_ref(),
        trusted_device: device,
        device_limit: identity.settings.max_trusted_devices_per_user,
        user_agent: state.user_agent.as_deref(),
        now,
        audit: &audit,
    };
    let Some(completed) = identity.store.complete_login_process(&completion).await? else {
        return Ok(Answer::ToLogin);
    };
    if let Some(replaced) = &completed.replaced {
        session::ended(replaced, "replaced");
    }
    for old in &completed.beyond_limit {
        session::ended(old, "limit");
    }
    metrics::counter!("portico_logins_total", "method" => method, "outcome" => "succeeded").increment(1);
    if state.has_passed(StepType::Passkey) && !state.has_otp() {
        metrics::counter!("portico_login_codes_spared_total").increment(1);
    }
    let location = authorize_url(identity, &process);
    Ok(Answer::Completed { location, session_token: opened.map(|(_, token)| token) })
}

/// The process cannot go on: 303 to `/error` with a restart action.
pub async fn fatal(identity: &Identity, process: &LoginProcess, code: &str) -> Answer {
    fatal_with(identity, process, code, ActionKind::RetryLogin).await
}

/// 303 to `/error` showing `code` with one action: `RETRY_LOGIN` (restart
/// through `/login/restart`) or `RELOAD` (the same process, through `/login`).
pub async fn fatal_with(identity: &Identity, process: &LoginProcess, code: &str, action: ActionKind) -> Answer {
    let url = match action {
        ActionKind::Reload => "/login",
        _ => "/login/restart",
    };
    let details =
        ErrorDetails { error_code: code.to_owned(), actions: vec![ErrorAction { action, url: Some(url.to_owned()) }] };
    // A process that can be reloaded stays current; one that must restart
    // ends, and is kept for the error page and the restart only.
    error_page::error(identity, details, Some(process)).await
}
