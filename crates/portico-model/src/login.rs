//! The server-held login process: a state machine that a browser walks
//! through one step at a time.
//!
//! The process is stored as a row whose mutable part, [`LoginState`], is kept
//! as a JSON document, so that steps can be added without schema changes.
//! Updates are guarded by [`LoginProcess::version`] (optimistic concurrency):
//! two parallel requests on one process cannot both apply.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

/// The step types of the spec (`stepType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepType {
    UsernamePassword,
    Password,
    Phone,
    SmsOtp,
    EmailOtp,
    Consent,
}

impl StepType {
    pub fn as_str(self) -> &'static str {
        match self {
            StepType::UsernamePassword => "username-password",
            StepType::Password => "password",
            StepType::Phone => "phone",
            StepType::SmsOtp => "sms-otp",
            StepType::EmailOtp => "email-otp",
            StepType::Consent => "consent",
        }
    }
}

/// Variants of a step's page (`viewType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ViewType {
    Default,
    PhoneDuplicated,
    PhoneAuthNotAllowed,
    UnknownDevice,
    SecondFactor,
}

/// How the user chose to start (`authMethod`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum AuthMethod {
    Password,
    Phone,
}

/// Language of the login pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Locale {
    Ru,
    En,
}

impl Locale {
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "ru" => Some(Locale::Ru),
            "en" => Some(Locale::En),
            _ => None,
        }
    }
}

/// Error codes shown on the next `GET /login` (`LoginFormErrorDetails`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoginFormErrors {
    pub principal_error: Option<String>,
    pub credentials_error: Option<String>,
    pub other_error: Option<String>,
}

/// Login form and error page codes that Portico emits.
pub mod codes {
    /// Wrong login or password on the `username-password` step.
    pub const USERNAME_PASSWORD_WRONG: &str = "challenge.username-password.wrong-credentials";
    /// Error page: something unexpected; the user may retry.
    pub const UNKNOWN_ERROR: &str = "unknown-error";
    /// Error page: the process cannot continue (CSRF failure, broken state).
    pub const FATAL_ERROR: &str = "fatal-error";
    /// Error page: the user is blocked.
    pub const USER_IS_BLOCKED: &str = "user-is-blocked";
}

/// A login process as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginProcess {
    pub id: Uuid,
    /// Incremented by every update; an update names the version it read.
    pub version: i64,
    pub created_at: OffsetDateTime,
    pub expires_at: OffsetDateTime,
    pub state: LoginState,
}

/// The mutable part of a login process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoginState {
    /// The client that started the authorization.
    pub client_id: String,
    /// The query string of the original `/oauth2/authorize` request.
    pub authorize_query: String,
    /// CSRF token for the process's forms (double-submitted with `XSRF-TOKEN`).
    pub csrf: String,
    pub method: AuthMethod,
    pub step: StepType,
    pub view_type: ViewType,
    /// The identifier the user typed (login or phone), shown again on error.
    pub principal: Option<String>,
    /// The user, once identified.
    pub user_id: Option<Uuid>,
    pub locale: Option<Locale>,
    pub device_id: Option<String>,
    /// Errors to show on the next page view; cleared once shown.
    pub errors: Option<LoginFormErrors>,
    /// Set when every step is done; the authorize endpoint then issues the code.
    #[serde(with = "time::serde::timestamp::option", default)]
    pub completed_at: Option<OffsetDateTime>,
}

impl LoginState {
    /// A fresh process at its first step for `method`.
    pub fn start(client_id: String, authorize_query: String, csrf: String, method: AuthMethod) -> Self {
        let step = match method {
            AuthMethod::Password => StepType::UsernamePassword,
            AuthMethod::Phone => StepType::Phone,
        };
        Self {
            client_id,
            authorize_query,
            csrf,
            method,
            step,
            view_type: ViewType::Default,
            principal: None,
            user_id: None,
            locale: None,
            device_id: None,
            errors: None,
            completed_at: None,
        }
    }

    pub fn is_complete(&self) -> bool {
        self.completed_at.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_through_json() {
        let mut state = LoginState::start("c".into(), "a=b".into(), "x".into(), AuthMethod::Password);
        state.completed_at = Some(OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap());
        let json = serde_json::to_string(&state).unwrap();
        assert!(json.contains("\"username-password\""));
        assert_eq!(serde_json::from_str::<LoginState>(&json).unwrap(), state);
    }
}
