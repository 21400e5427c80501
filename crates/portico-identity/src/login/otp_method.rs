//! `POST /login/user-settings/otp-method` (operation
//! `updateLoginOtpMethod`): on an SMS second factor, send the code by
//! e-mail instead (`otpMethod=email`, the contract's switch); on the e-mail
//! step, back to SMS (`otpMethod=sms`, Portico's way back); on the passkey
//! step, a code by either instead of the passkey. The code is
//! made at the next `GET /login`. When the switch is not available (another
//! step, no e-mail address or phone) nothing changes and the answer is
//! still 303 to `/login`.

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use portico_model::login::{StepType, ViewType};
use portico_model::otp::OtpChannel;

use super::answer::Answer;
use super::steps::otp::{email_available, sms_available};
use super::{SettingsRequest, error_page, settings_request};
use crate::IdentityState;
use crate::edge::OtpMethodRequest;

#[utoipa::path(
    post,
    path = "/login/user-settings/otp-method",
    operation_id = "updateLoginOtpMethod",
    tag = "login",
    params(crate::edge::LoginCookies, crate::edge::OptionalXsrfHeader),
    request_body(content = crate::edge::OtpMethodRequest, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "To `/login` (also when the switch is not available), or to `/error` \
                                      (a bad `otpMethod`, a CSRF failure, no process).",
         headers(("Location" = String), ("Set-Cookie" = String, description = "With `/error`: `error_page_details`."))),
        crate::edge::BrowserUnavailable
    )
)]
pub async fn update_otp_method(State(identity): State<IdentityState>, headers: HeaderMap, body: Body) -> Response {
    let answer = async {
        let (mut process, OtpMethodRequest { otp_method: channel, .. }) =
            match settings_request(&identity, &headers, body).await? {
                SettingsRequest::Ready(process, form) => (process, form),
                SettingsRequest::Refused(answer) => return Ok(answer),
            };
        let user = match process.state.user_id {
            Some(id) => identity.store.find_user(id).await?,
            None => None,
        };
        let (available, step) = match channel {
            OtpChannel::Email => (email_available(&process, user.as_ref()), StepType::EmailOtp),
            OtpChannel::Sms => (sms_available(&process, user.as_ref()), StepType::SmsOtp),
        };
        if available {
            // From the passkey step: a code instead, for the rest of the process.
            process.state.passkey_declined |= process.state.step == StepType::Passkey;
            process.state.otp_channel = channel;
            process.state.go_to(step, ViewType::SecondFactor);
            identity.store.update_login_process(&process).await?;
        }
        Ok(Answer::ToLogin)
    };
    answer.await.map_or_else(error_page::server_error, |answer| answer.respond(&identity))
}
