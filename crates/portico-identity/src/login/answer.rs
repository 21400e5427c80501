//! What a login step decided, and the one place it becomes an HTTP answer
//! ([`Answer::respond`]). The steps, [`super::flow`] and the error page
//! decide and store; none of them builds a response or sets a cookie.

use axum::http::StatusCode;
use axum::response::Response;
use portico_model::ids::LoginProcessId;
use portico_model::login::StepType;

use super::view::ErrorDetails;
use crate::Identity;
use crate::cookies::{self, SetCookies};
use crate::http::redirect;

/// A step's decision.
#[derive(Debug)]
pub enum Answer {
    /// Back to `/login`, as it is: a parallel request moved the process
    /// on (or ended it), and the page shows wherever it is.
    ToLogin,
    /// The step was passed: on to `/login` for the next one, the last
    /// attempt's error cookies cleared.
    NextStep,
    /// The same step again, `code` shown once (the `step_error_details`
    /// cookie), and the CAPTCHA asked for when `captcha`.
    Retry { step: StepType, code: String, captcha: bool },
    /// Every step is passed: back to the original `/oauth2/authorize`
    /// (`location`), with the cookie of the session the login opened.
    Completed { location: String, session_token: Option<String> },
    /// The error page with `details` (the `error_page_details` cookie).
    /// `process`: the process it belongs to, which keeps it and which
    /// `failed_authentication_flow_id` names; `ends`: it is no longer the
    /// browser's current process.
    Error { details: ErrorDetails, process: Option<LoginProcessId>, ends: bool },
}

/// The step's error details the `step_error_details` cookie carries.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct StepErrorDetails<'a> {
    step_type: &'a str,
    error_code: &'a str,
}

impl Answer {
    /// The answer: a 303 (to `/login`, the original authorize request or
    /// `/error`) with the cookies the decision sets and clears.
    pub fn respond(self, identity: &Identity) -> Response {
        let mut set = SetCookies::new(identity.settings.secure_cookies);
        let process_ttl = Some(identity.settings.login_process_ttl.whole_seconds());
        let mut response = match self {
            Self::ToLogin => redirect(StatusCode::SEE_OTHER, "/login"),
            Self::NextStep => {
                set.clear(cookies::STEP_ERROR_DETAILS).clear(cookies::CAPTCHA_REQUIRED);
                redirect(StatusCode::SEE_OTHER, "/login")
            }
            Self::Retry { step, code, captcha } => {
                let details = StepErrorDetails { step_type: step.as_str(), error_code: &code };
                let sealed = cookies::seal_json(&identity.cookies, cookies::STEP_ERROR_DETAILS, &details);
                set.set(cookies::STEP_ERROR_DETAILS, &sealed, process_ttl);
                if captcha {
                    set.set(cookies::CAPTCHA_REQUIRED, "true", process_ttl);
                }
                redirect(StatusCode::SEE_OTHER, "/login")
            }
            Self::Completed { location, session_token } => {
                if let Some(token) = &session_token {
                    super::session::set_cookie(identity, token, &mut set);
                }
                set.clear(cookies::STEP_ERROR_DETAILS).clear(cookies::CAPTCHA_REQUIRED);
                redirect(StatusCode::SEE_OTHER, &location)
            }
            Self::Error { details, process, ends } => {
                let sealed = cookies::seal_json(&identity.cookies, cookies::ERROR_PAGE_DETAILS, &details);
                set.set(cookies::ERROR_PAGE_DETAILS, &sealed, Some(300));
                if let Some(process) = process {
                    set.set(cookies::FAILED_AUTHENTICATION_FLOW_ID, &process.to_string(), process_ttl);
                }
                if ends {
                    set.clear(cookies::AUTHENTICATION_FLOW);
                }
                redirect(StatusCode::SEE_OTHER, "/error")
            }
        };
        set.apply(response.headers_mut());
        response
    }
}
