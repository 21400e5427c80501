//! The `phone` step: the user names a phone number. One user with phone
//! login on goes to the SMS code; a number shared by several users diverts
//! to `username-password` (`phoneDuplicated`); a user with phone login off
//! to `password` (`phoneAuthNotAllowed`). Unknown and malformed numbers
//! count as failures, like wrong passwords, towards the CAPTCHA: in the
//! process, and across processes on the address's phone key
//! ([`guard::before_phone`]).

use std::net::IpAddr;

use portico_model::login::{AuthMethod, LoginProcess, StepType, ViewType, codes};
use portico_model::otp::normalize_phone;
use portico_storage::StorageError;

use super::{Field, retry};
use crate::Identity;
use crate::edge::LoginStepRequest;
use crate::login::answer::Answer;
use crate::login::flow::{self, advance};
use crate::login::guard::{self, Gate};

pub async fn phone(
    identity: &Identity,
    mut process: LoginProcess,
    form: &LoginStepRequest,
    address: Option<IpAddr>,
) -> Result<Answer, StorageError> {
    let typed = form.principal.as_deref().map(str::trim).unwrap_or("");
    let required = process.state.password_failures >= identity.settings.phone_captcha_after_failures;
    let token = form.smart_token.as_deref();
    if required && !guard::captcha_valid(identity, token).await {
        return retry(identity, process, Field::Other, codes::CAPTCHA_REQUIRED, true).await;
    }
    let counted = match guard::before_phone(identity, address, token, required).await? {
        Gate::Open(counted) => counted,
        // The phone key never pauses or holds: `Locked` cannot come of it.
        Gate::Captcha | Gate::Locked(_) => {
            return retry(identity, process, Field::Other, codes::CAPTCHA_REQUIRED, true).await;
        }
    };
    let number = normalize_phone(typed);
    let users = match &number {
        Some(number) => identity.store.find_users_by_phone(number).await?,
        None => Vec::new(),
    };
    process.state.principal = (!typed.is_empty() && typed.len() <= 32).then(|| typed.to_owned());
    if users.is_empty() {
        let after = guard::failed(identity, counted).await?;
        process.state.password_failures += 1;
        let captcha =
            process.state.password_failures >= identity.settings.phone_captcha_after_failures || after.captcha_next;
        return retry(identity, process, Field::Principal, codes::PHONE_WRONG, captcha).await;
    }
    // A customer's number is no failure of the address.
    guard::succeeded(identity, counted).await?;
    match users.as_slice() {
        [user] if user.phone_login_enabled => {
            process.state.phone = number;
            advance(identity, process, user, StepType::Phone, None).await
        }
        [user] => {
            if !user.may_sign_in() {
                return flow::user_blocked(identity, &process, user).await;
            }
            process.state.phone = number;
            process.state.user_id = Some(user.id);
            process.state.method = AuthMethod::Password;
            process.state.go_to(StepType::Password, ViewType::PhoneAuthNotAllowed);
            identity.store.update_login_process(&process).await?;
            Ok(Answer::ToLogin)
        }
        _ => {
            process.state.phone = number;
            process.state.principal = None;
            process.state.method = AuthMethod::Password;
            process.state.go_to(StepType::UsernamePassword, ViewType::PhoneDuplicated);
            identity.store.update_login_process(&process).await?;
            Ok(Answer::ToLogin)
        }
    }
}
