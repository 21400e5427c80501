//! The `sms-otp` and `email-otp` steps.
//!
//! A code is made and sent when the page of the step is shown without a
//! live code (the spec: "OTP created at next `GET /login`"): 6 CSPRNG
//! digits, stored only as a keyed hash inside the process, valid for
//! `otp.ttl`, spent after `otp.max_failures` wrong tries. A new code comes
//! with `POST /login` carrying `resend` (once `otp.resend_after` has
//! passed), at most `otp.max_codes` per process. Every change goes through
//! the process's version check, so parallel requests cannot exceed a limit.
//!
//! Beyond one process, every guess is counted by the guard before it is
//! checked ([`guard::before_code`]): wrong codes on the user's code key
//! pause code entry for that user (from untrusted devices) however many
//! processes the guesser starts.

use std::net::IpAddr;

use portico_model::audit::{AuditEvent, AuditKind};
use portico_model::ids::UserId;
use portico_model::login::{LoginFormErrors, LoginProcess, StepType, ViewType, codes};
use portico_model::otp::{OtpChallenge, OtpChannel, OtpCheck};
use portico_model::user::User;
use portico_storage::StorageError;
use time::OffsetDateTime;
use uuid::Uuid;

use super::{Field, retry, retry_saved};
use crate::Identity;
use crate::delivery::OtpMessage;
use crate::edge::LoginStepRequest;
use crate::login::answer::Answer;
use crate::login::flow::{self, advance, fatal_with};
use crate::login::guard::{self, AfterFailure, Counted, Gate};
use crate::login::texts::Texts;
use crate::login::view::ActionKind;

fn channel_of(step: StepType) -> OtpChannel {
    if step == StepType::EmailOtp { OtpChannel::Email } else { OtpChannel::Sms }
}

fn hash(identity: &Identity, challenge: Uuid, code: &str) -> String {
    identity.cookies.tag("otp", &format!("{challenge}:{code}"))
}

/// What showing an OTP step needs first.
pub enum Prepared {
    /// The process, with a live code (sent now or before), or with none
    /// because the process may send no more.
    Ready(Box<LoginProcess>),
    /// The page cannot be shown: answer this instead.
    Answer(Answer),
}

/// Makes and sends a code when the process is at an OTP step without a live
/// one and may still send one.
///
/// # Errors
/// When storage fails.
pub async fn prepare(
    identity: &Identity,
    mut process: LoginProcess,
    user: &User,
    texts: &Texts,
) -> Result<Prepared, StorageError> {
    let now = identity.clock.now();
    let policy = identity.settings.otp;
    let state = &process.state;
    if !matches!(state.step, StepType::SmsOtp | StepType::EmailOtp)
        || state.otp.is_some()
        || state.codes_sent >= policy.max_codes
    {
        return Ok(Prepared::Ready(Box::new(process)));
    }
    let channel = channel_of(state.step);
    let to = match channel {
        OtpChannel::Sms => user.phone.clone(),
        OtpChannel::Email => user.email.clone(),
    };
    let Some(to) = to else {
        return Ok(Prepared::Answer(
            fatal_with(identity, &process, codes::SMS_OTP_NO_PHONE, ActionKind::RetryLogin).await,
        ));
    };
    // Codes sent to the user across processes are counted (see the guard).
    let device = trusted_device(identity, &process, user.id).await?;
    let counted = match guard::before_send(identity, user.id, device.as_deref()).await? {
        Gate::Open(counted) => counted,
        Gate::Locked(until) => return Ok(Prepared::Ready(Box::new(send_paused(process, Some(until))))),
        // No send key asks for a CAPTCHA (see the guard).
        Gate::Captcha => return Ok(Prepared::Ready(Box::new(send_paused(process, None)))),
    };
    let code = portico_crypto::random::digits(policy.length);
    let id = Uuid::new_v4();
    process.state.otp = Some(OtpChallenge {
        id,
        channel,
        to: to.clone(),
        code_hash: hash(identity, id, &code),
        sent_at: now,
        expires_at: now + policy.ttl,
        failures: 0,
    });
    process.state.codes_sent += 1;
    if !identity.store.update_login_process(&process).await? {
        // A parallel request is sending; show the page it leaves.
        guard::not_checked(identity, counted).await?;
        return Ok(Prepared::Answer(Answer::ToLogin));
    }
    process.version += 1;
    let text = texts.otp_text.replace("{code}", &code);
    let sent = identity.otp_sender.send(&OtpMessage { channel, to, code, text }, now).await;
    let outcome = if sent.is_ok() { "sent" } else { "failed" };
    metrics::counter!("portico_login_codes_total", "channel" => channel.as_str(), "outcome" => outcome).increment(1);
    if let Err(error) = sent {
        tracing::warn!(%error, channel = channel.as_str(), "one-time code not delivered");
        guard::not_checked(identity, counted).await?;
        process.state.otp = None;
        identity.store.update_login_process(&process).await?;
        return Ok(Prepared::Answer(
            fatal_with(identity, &process, codes::SMS_OTP_DELIVERY_FAILED, ActionKind::Reload).await,
        ));
    }
    guard::sent(identity, counted).await?;
    Ok(Prepared::Ready(Box::new(process)))
}

/// The process's device id when that device is trusted for `user`.
async fn trusted_device(
    identity: &Identity,
    process: &LoginProcess,
    user: UserId,
) -> Result<Option<String>, StorageError> {
    let trusted = flow::device_trusted_for(identity, process, user).await?;
    Ok(process.state.device_id.clone().filter(|_| trusted))
}

/// The process at its code step without a code: sending is paused until
/// `until`, which the page says. Nothing is saved: the next page asks again.
fn send_paused(mut process: LoginProcess, until: Option<OffsetDateTime>) -> LoginProcess {
    let code = if process.state.step == StepType::EmailOtp {
        codes::EMAIL_OTP_SEND_PAUSED
    } else {
        codes::SMS_OTP_SEND_PAUSED
    };
    process.state.paused_until = until;
    process.state.errors = Some(LoginFormErrors { other_error: Some(code.to_owned()), ..LoginFormErrors::default() });
    process
}

/// Rounds of "read the process, check the code, save" before a submission
/// gives up (each round lets at least one parallel submission through).
const MAX_ROUNDS: usize = 64;

/// What one round of a submission came to.
enum Round {
    Answer(Answer),
    /// A parallel request changed the process first: nothing was saved.
    Lost,
}

/// A guess's count on the guard's keys, reported once however many rounds
/// the submission takes.
#[derive(Default)]
struct Guess {
    counted: Option<Counted>,
    /// What the wrong guess left, once reported.
    after: Option<AfterFailure>,
    /// The user and the trusted device the guess was counted for.
    user: Option<UserId>,
    device: Option<String>,
}

impl Guess {
    /// The guess was checked against a live code and was wrong: reported
    /// (and audited) the first time; what it left for the next guess.
    async fn failed(&mut self, identity: &Identity, process: &LoginProcess) -> Result<AfterFailure, StorageError> {
        if let Some(counted) = self.counted.take() {
            let after = guard::failed(identity, counted).await?;
            let step = process.state.step.as_str();
            let mut event =
                AuditEvent::new(identity.clock.now(), AuditKind::LoginFailed).client(&process.state.client_id);
            if let Some(user) = process.state.user_id {
                event = event.user(user);
            }
            let detail = match after.locked_until {
                Some(until) => serde_json::json!({ "step": step, "pausedUntil": until.unix_timestamp() }),
                None => serde_json::json!({ "step": step }),
            };
            identity.audit(event.detail(detail)).await;
            self.after = Some(after);
        }
        Ok(self.after.unwrap_or_default())
    }

    /// The guess was right: the user's code and send keys start again.
    async fn succeeded(&mut self, identity: &Identity) -> Result<(), StorageError> {
        if let Some(counted) = self.counted.take() {
            guard::code_succeeded(identity, counted, self.user, self.device.as_deref()).await?;
        }
        Ok(())
    }

    /// The guess was never checked (the code was spent or gone): taken back.
    async fn not_checked(self, identity: &Identity) -> Result<(), StorageError> {
        match self.counted {
            Some(counted) => guard::not_checked(identity, counted).await,
            None => Ok(()),
        }
    }
}

/// `POST /login` on an OTP step. A guess is first counted by the guard (a
/// pause running refuses it unchecked, no try of the code spent). Every
/// wrong try is counted exactly: when a parallel submission changed the
/// process first, this one reads it again and checks against what it
/// left, so N parallel wrong guesses use up N tries, never fewer.
///
/// # Errors
/// When storage fails, or the process stays contended for every round.
pub async fn submit(
    identity: &Identity,
    mut process: LoginProcess,
    form: &LoginStepRequest,
    address: Option<IpAddr>,
) -> Result<Answer, StorageError> {
    let mut guess = Guess::default();
    let (now, policy) = (identity.clock.now(), identity.settings.otp);
    // Only a guess at a live code is counted: one at a spent or expired
    // code is answered as such, unchecked.
    if form.resend.is_none() && process.state.otp.as_ref().is_some_and(|otp| otp.usable(now, &policy)) {
        guess.user = process.state.user_id;
        guess.device = match guess.user {
            Some(user) => trusted_device(identity, &process, user).await?,
            None => None,
        };
        let gate = guard::before_code(identity, guess.user, guess.device.as_deref(), address).await?;
        let paused_until = match gate {
            Gate::Open(counted) => {
                guess.counted = Some(counted);
                None
            }
            Gate::Locked(until) => Some(Some(until)),
            // No code key asks for a CAPTCHA (see the guard).
            Gate::Captcha => Some(None),
        };
        if let Some(until) = paused_until {
            process.state.paused_until = until;
            process.state.tries_before_pause = None;
            let paused =
                if process.state.step == StepType::EmailOtp { codes::EMAIL_OTP_PAUSED } else { codes::SMS_OTP_PAUSED };
            return retry(identity, process, Field::Other, paused, false).await;
        }
    }
    let answer = rounds(identity, process, form, &mut guess).await?;
    guess.not_checked(identity).await?;
    Ok(answer)
}

/// Reads the process again and checks the guess against what it holds,
/// until one round's answer is saved.
async fn rounds(
    identity: &Identity,
    mut process: LoginProcess,
    form: &LoginStepRequest,
    guess: &mut Guess,
) -> Result<Answer, StorageError> {
    let (id, step) = (process.id, process.state.step);
    for _ in 0..MAX_ROUNDS {
        match submit_once(identity, process, form, guess).await? {
            Round::Answer(response) => return Ok(response),
            Round::Lost => {
                tokio::task::yield_now().await;
                match identity.store.find_login_process(id, identity.clock.now()).await? {
                    Some(again) if again.state.step == step && again.state.in_progress() => {
                        process = again;
                    }
                    // Moved on or gone: the page shows where it is now.
                    _ => return Ok(Answer::ToLogin),
                }
            }
        }
    }
    Err(StorageError::Unavailable("the login process stayed contended; try again".into()))
}

async fn submit_once(
    identity: &Identity,
    mut process: LoginProcess,
    form: &LoginStepRequest,
    guess: &mut Guess,
) -> Result<Round, StorageError> {
    let now = identity.clock.now();
    let policy = identity.settings.otp;
    let step = process.state.step;
    let email = step == StepType::EmailOtp;
    let (wrong, expired, too_early, limit) = if email {
        (
            codes::EMAIL_OTP_WRONG,
            codes::EMAIL_OTP_EXPIRED,
            codes::EMAIL_OTP_RESEND_TOO_EARLY,
            codes::EMAIL_OTP_PROCESS_LIMIT,
        )
    } else {
        (codes::SMS_OTP_WRONG, codes::SMS_OTP_EXPIRED, codes::SMS_OTP_RESEND_TOO_EARLY, codes::SMS_OTP_PROCESS_LIMIT)
    };

    if form.resend.is_some() {
        if process.state.codes_sent >= policy.max_codes {
            return Ok(Round::Answer(retry(identity, process, Field::Other, limit, false).await?));
        }
        if let Some(otp) = &process.state.otp
            && now < otp.resend_at(&policy)
        {
            return Ok(Round::Answer(retry(identity, process, Field::Other, too_early, false).await?));
        }
        process.state.otp = None;
        identity.store.update_login_process(&process).await?;
        return Ok(Round::Answer(Answer::ToLogin));
    }

    let Some(mut otp) = process.state.otp.take() else {
        // No code yet (or none left): the page says which.
        return Ok(Round::Answer(Answer::ToLogin));
    };
    let code = form.credentials.as_deref().map(str::trim).unwrap_or("");
    let matches = code.len() == policy.length
        && portico_crypto::constant_time_eq(hash(identity, otp.id, code).as_bytes(), otp.code_hash.as_bytes());
    let check = otp.check(matches, now, &policy);
    if matches!(check, OtpCheck::Wrong { .. }) {
        let after = guess.failed(identity, &process).await?;
        process.state.paused_until = after.locked_until;
        process.state.tries_before_pause = after.tries_before_pause;
    }
    match check {
        OtpCheck::Accepted => {
            guess.succeeded(identity).await?;
            process.state.paused_until = None;
            process.state.tries_before_pause = None;
            let Some(user) = (match process.state.user_id {
                Some(id) => identity.store.find_user(id).await?,
                None => None,
            }) else {
                return Ok(Round::Answer(
                    fatal_with(identity, &process, codes::UNKNOWN_ERROR, ActionKind::RetryLogin).await,
                ));
            };
            Ok(Round::Answer(advance(identity, process, &user, step, None).await?))
        }
        OtpCheck::Wrong { left } if left > 0 => {
            process.state.otp = Some(otp);
            answer_saved(retry_saved(identity, process, Field::Credentials, wrong, false).await?)
        }
        OtpCheck::Wrong { .. } | OtpCheck::Spent => {
            if process.state.codes_sent >= policy.max_codes {
                if !identity.store.update_login_process(&process).await? {
                    return Ok(Round::Lost);
                }
                return Ok(Round::Answer(
                    fatal_with(identity, &process, codes::SMS_OTP_ATTEMPTS_EXCEEDED, ActionKind::RetryLogin).await,
                ));
            }
            // Keep the spent code: it still dates the resend wait.
            otp.failures = policy.max_failures;
            process.state.otp = Some(otp);
            answer_saved(retry_saved(identity, process, Field::Credentials, expired, false).await?)
        }
    }
}

fn answer_saved((saved, answer): (bool, Answer)) -> Result<Round, StorageError> {
    Ok(if saved { Round::Answer(answer) } else { Round::Lost })
}

/// Whether the user may switch the second factor back to SMS now.
pub fn sms_available(process: &LoginProcess, user: Option<&User>) -> bool {
    matches!(process.state.step, StepType::EmailOtp | StepType::Passkey)
        && process.state.view_type == ViewType::SecondFactor
        && user.is_some_and(|u| u.phone.is_some())
}

/// Whether the user may switch the second factor to e-mail now.
pub fn email_available(process: &LoginProcess, user: Option<&User>) -> bool {
    matches!(process.state.step, StepType::SmsOtp | StepType::Passkey)
        && process.state.view_type == ViewType::SecondFactor
        && user.is_some_and(|u| u.email.is_some())
}
