//! The server-held login process: a state machine that a browser walks
//! through one step at a time.
//!
//! The process is stored as a row whose mutable part, [`LoginState`], is kept
//! as a JSON document, so that steps can be added without schema changes.
//! Updates are guarded by [`LoginProcess::version`] (optimistic concurrency):
//! two parallel requests on one process cannot both apply.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::ids::{ClientId, LoginProcessId, SessionHash, SessionId, UserId};
use crate::otp::{OtpChallenge, OtpChannel};

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
    /// A passkey (WebAuthn, user verified): possession and a user
    /// verification at once.
    Passkey,
    /// After a login with a password and a code: the offer to create a
    /// passkey (created, or declined). Not an authentication.
    PasskeyEnrolment,
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
            StepType::Passkey => "passkey",
            StepType::PasskeyEnrolment => "passkey-enrolment",
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

impl AuthMethod {
    /// As the contract writes it (`PASSWORD`, `PHONE`).
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMethod::Password => "PASSWORD",
            AuthMethod::Phone => "PHONE",
        }
    }
}

/// Language of the login pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
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

    /// The language's tag (`ru`, `en`).
    pub fn as_str(self) -> &'static str {
        match self {
            Locale::Ru => "ru",
            Locale::En => "en",
        }
    }

    /// The first language of an OpenID Connect `ui_locales` value (BCP 47
    /// tags separated by spaces, preferred first) that Portico speaks;
    /// others are passed over, as OIDC Core §3.1.2.1 asks ("not an error").
    pub fn from_ui_locales(tags: &str) -> Option<Self> {
        tags.split(' ').find_map(|tag| Self::parse(&tag.split('-').next().unwrap_or_default().to_ascii_lowercase()))
    }
}

/// Error codes shown on the next `GET /login` (`LoginFormErrorDetails`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = LoginFormErrorDetails)]
pub struct LoginFormErrors {
    #[schema(required = true)]
    pub principal_error: Option<String>,
    #[schema(required = true)]
    pub credentials_error: Option<String>,
    #[schema(required = true)]
    pub other_error: Option<String>,
}

/// Login form and error page codes that Portico emits (the full list is
/// in docs/decisions.md).
pub mod codes {
    /// Wrong login or password on the `username-password` step.
    pub const USERNAME_PASSWORD_WRONG: &str = "challenge.username-password.wrong-credentials";
    /// Wrong password on the `password` step.
    pub const PASSWORD_WRONG: &str = "challenge.password.wrong-credentials";
    /// A phone number that is not valid, or that no user has, on the `phone` step.
    pub const PHONE_WRONG: &str = "challenge.phone.wrong-credentials";
    /// Wrong SMS code.
    pub const SMS_OTP_WRONG: &str = "challenge.sms-otp.wrong-credentials";
    /// Wrong e-mail code.
    pub const EMAIL_OTP_WRONG: &str = "challenge.email-otp.wrong-credentials";
    /// The code expired or its tries are used up: ask for a new one.
    pub const SMS_OTP_EXPIRED: &str = "challenge.sms-otp.code-expired";
    pub const EMAIL_OTP_EXPIRED: &str = "challenge.email-otp.code-expired";
    /// A new code was asked for before the wait was over.
    pub const SMS_OTP_RESEND_TOO_EARLY: &str = "authentication.sms-otp.resend-too-early";
    pub const EMAIL_OTP_RESEND_TOO_EARLY: &str = "authentication.email-otp.resend-too-early";
    /// The process has sent all the codes it may.
    pub const SMS_OTP_PROCESS_LIMIT: &str = "authentication.sms-otp.process-limit-exceeded";
    pub const EMAIL_OTP_PROCESS_LIMIT: &str = "authentication.email-otp.process-limit-exceeded";
    /// The CAPTCHA was required and missing or not valid.
    pub const CAPTCHA_REQUIRED: &str = "challenge.captcha.required";
    /// No scope group was selected on the consent step.
    pub const CONSENT_NOTHING_SELECTED: &str = "challenge.consent.nothing-selected";
    /// Error page: the user declined the consent.
    pub const CONSENT_DENIED: &str = "consent.denied";
    /// Error page: the code could not be delivered.
    pub const SMS_OTP_DELIVERY_FAILED: &str = "authenticate.sms-otp.delivery-failed";
    /// Error page: the user has no phone number for the SMS step.
    pub const SMS_OTP_NO_PHONE: &str = "authenticate.sms-otp.no-phone";
    /// Error page: every code of the process was used up by wrong tries.
    pub const SMS_OTP_ATTEMPTS_EXCEEDED: &str = "challenge.sms-otp.attempts-exceeded";
    /// Error page: something unexpected; the user may retry.
    pub const UNKNOWN_ERROR: &str = "unknown-error";
    /// Error page: the process cannot continue (CSRF failure, broken state).
    pub const FATAL_ERROR: &str = "fatal-error";
    /// Error page: the user is blocked by an operator.
    pub const USER_IS_BLOCKED: &str = "user-is-blocked";
    /// Too many failed passwords: attempts from this device (or address)
    /// are paused for a while; the page says until when.
    pub const USERNAME_PASSWORD_PAUSED: &str = "challenge.username-password.temporarily-paused";
    pub const PASSWORD_PAUSED: &str = "challenge.password.temporarily-paused";
    /// Too many wrong codes for the user (from devices not trusted for
    /// them, or from this trusted one): code entry is paused for a while,
    /// across login processes; the page says until when.
    pub const SMS_OTP_PAUSED: &str = "challenge.sms-otp.temporarily-paused";
    pub const EMAIL_OTP_PAUSED: &str = "challenge.email-otp.temporarily-paused";
    /// Too many codes sent to the user (from devices not trusted for them,
    /// or to this trusted one), across login processes: no code is sent
    /// for a while; the page says until when.
    pub const SMS_OTP_SEND_PAUSED: &str = "authentication.sms-otp.send-paused";
    pub const EMAIL_OTP_SEND_PAUSED: &str = "authentication.email-otp.send-paused";
    /// A passkey sign-in refused: a bad answer, an unknown, another user's
    /// or a locked passkey, a counter that did not advance.
    pub const PASSKEY_REFUSED: &str = "challenge.passkey.wrong-credentials";
    /// A passkey sign-in without a live challenge (expired, or used by a
    /// parallel answer): start it again.
    pub const PASSKEY_EXPIRED: &str = "challenge.passkey.challenge-expired";
    /// The passkey the browser created was refused (another origin, a
    /// malformed answer, one registered already): create it again, or
    /// decline.
    pub const PASSKEY_ENROLMENT_REFUSED: &str = "challenge.passkey-enrolment.refused";
    /// The offer's challenge expired or was spent: create it again.
    pub const PASSKEY_ENROLMENT_EXPIRED: &str = "challenge.passkey-enrolment.challenge-expired";
}

/// A login process as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginProcess {
    pub id: LoginProcessId,
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
    pub client_id: ClientId,
    /// The authorization request the process serves, as authorize checked
    /// it. Absent only in a process stored by a release that kept the raw
    /// query instead: such a process is not continued (the user starts
    /// again from the client).
    #[serde(default)]
    pub request: Option<PendingAuthorization>,
    /// CSRF token for the process's forms (double-submitted with `XSRF-TOKEN`).
    pub csrf: String,
    pub method: AuthMethod,
    pub step: StepType,
    pub view_type: ViewType,
    /// The identifier the user typed (login or phone), shown again on error.
    pub principal: Option<String>,
    /// The user, once identified.
    pub user_id: Option<UserId>,
    pub locale: Option<Locale>,
    pub device_id: Option<String>,
    /// Errors to show on the next page view; cleared once shown.
    pub errors: Option<LoginFormErrors>,
    /// Where the process is: at [`LoginState::step`], completed with its
    /// outcome, or ended in an error. Stored as the fields `completed_at`,
    /// `outcome` and `ended`, as every release has stored them.
    #[serde(flatten)]
    pub stage: Stage,
    /// The steps passed so far, in order.
    #[serde(default)]
    pub passed: Vec<StepType>,
    /// The one-time code of the current OTP step, once sent.
    #[serde(default)]
    pub otp: Option<OtpChallenge>,
    /// One-time codes this process has sent.
    #[serde(default)]
    pub codes_sent: u32,
    /// Where second-factor codes go (SMS unless the user chose e-mail).
    #[serde(default = "sms")]
    pub otp_channel: OtpChannel,
    /// Phone numbers on the `phone` step that no user has, in this process.
    /// (Kept under its old name: processes stored before stay readable.)
    #[serde(default)]
    pub password_failures: u32,
    /// The next password attempt needs a CAPTCHA (the server demanded one,
    /// or the last failure reached the threshold): the page shows it.
    #[serde(default)]
    pub captcha: bool,
    /// Password (or code) attempts are paused until then (shown on the page).
    #[serde(with = "time::serde::timestamp::option", default)]
    pub paused_until: Option<OffsetDateTime>,
    /// Failures left before a pause, when the page should warn.
    #[serde(default)]
    pub tries_before_pause: Option<u32>,
    /// The phone number typed on the `phone` step (E.164).
    #[serde(default)]
    pub phone: Option<String>,
    /// The scope groups the user granted on the consent step.
    #[serde(default)]
    pub granted_groups: Option<Vec<String>>,
    /// What the user ticked on a consent submission that was refused (none
    /// at all): the page shows that choice again, not every box ticked.
    #[serde(default)]
    pub consent_choice: Option<Vec<String>>,
    /// The user must pass the consent step even when consent is on record
    /// (`prompt=consent`).
    #[serde(default)]
    pub force_consent: bool,
    /// The error page this process led to (as `error_page_details` carried
    /// it), kept so that the page survives a reload or a language switch
    /// for as long as the process lives.
    #[serde(default)]
    pub error_page: Option<serde_json::Value>,
    /// The single sign-on session the code is issued under: the one the
    /// completed login opened, or the live one a consent-only process
    /// started from.
    #[serde(default)]
    pub session_id: Option<SessionId>,
    /// The passkey sign-in challenge this process offered (the WebAuthn
    /// library's state, JSON) and when: taken out, once, by the answer
    /// that spends it.
    #[serde(default)]
    pub passkey_challenge: Option<PasskeyChallenge>,
    /// The user chose a one-time code over the passkey step.
    #[serde(default)]
    pub passkey_declined: bool,
    /// The browser of the login (its `User-Agent`, cut to
    /// [`crate::user_agent::MAX_KEPT`]): the session and the trusted device
    /// are named after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    /// Not stored: the session the request being answered presented (the
    /// hash of its `svc.session` cookie, set by `POST /login`). A login
    /// that opens a session replaces it, in the same write.
    #[serde(skip)]
    pub presented_session: Option<SessionHash>,
}

/// A passkey ceremony's server-side state, held in the login process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PasskeyChallenge {
    pub state: String,
    /// The `navigator.credentials.get` options it was offered with, for the
    /// page that shows it again.
    #[serde(default)]
    pub options: serde_json::Value,
    #[serde(with = "time::serde::timestamp")]
    pub issued_at: OffsetDateTime,
}

/// Where a login process is. Its transitions are [`LoginState::complete`]
/// and [`LoginState::end`]; a restart ([`LoginState::restarted`]) is a new
/// process in progress.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Stage {
    /// At its current step ([`LoginState::step`]), waiting for the user.
    #[default]
    InProgress,
    /// Every step passed at `at`; the authorize endpoint issues the code
    /// from `outcome`, once.
    Completed { at: OffsetDateTime, outcome: LoginOutcome },
    /// Ended in an error: never continued, only shown on the error page,
    /// switched in language, or restarted.
    Ended,
}

/// The stored fields of a [`Stage`].
#[derive(Serialize, Deserialize)]
struct StageFields {
    #[serde(with = "time::serde::timestamp::option", default)]
    completed_at: Option<OffsetDateTime>,
    #[serde(default)]
    outcome: Option<LoginOutcome>,
    #[serde(default)]
    ended: bool,
}

impl Serialize for Stage {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let fields = match self {
            Self::InProgress => StageFields { completed_at: None, outcome: None, ended: false },
            Self::Completed { at, outcome } => {
                StageFields { completed_at: Some(*at), outcome: Some(outcome.clone()), ended: false }
            }
            Self::Ended => StageFields { completed_at: None, outcome: None, ended: true },
        };
        fields.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Stage {
    /// An ended process stays ended whatever else it holds; a process a
    /// release before outcomes completed (a time, no outcome) has nothing
    /// to issue a code from, so it ends cleanly.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let fields = StageFields::deserialize(deserializer)?;
        Ok(match fields {
            StageFields { ended: true, .. } => Self::Ended,
            StageFields { completed_at: Some(at), outcome: Some(outcome), .. } => Self::Completed { at, outcome },
            StageFields { completed_at: Some(_), outcome: None, .. } => Self::Ended,
            StageFields { completed_at: None, .. } => Self::InProgress,
        })
    }
}

/// The authorization request a login process serves, as the authorize
/// endpoint checked it (its client is [`LoginState::client_id`]). It is
/// never parsed again from a query: the way back to `/oauth2/authorize`
/// is built from it, and the code is issued only for a request equal to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingAuthorization {
    pub redirect_uri: String,
    /// The requested scopes, checked against the client's.
    pub scope: Vec<String>,
    /// `None` when the request carried none (its client's profile let it).
    #[serde(default)]
    pub state: Option<String>,
    /// The S256 PKCE challenge.
    pub code_challenge: String,
    #[serde(default)]
    pub nonce: Option<String>,
    #[serde(default)]
    pub prompt: Option<crate::oauth::Prompt>,
    /// `max_age` in seconds.
    #[serde(default)]
    pub max_age: Option<u32>,
    /// The first language of `ui_locales` that Portico speaks.
    #[serde(default)]
    pub ui_locale: Option<Locale>,
    #[serde(default)]
    pub login_hint: Option<String>,
    #[serde(default)]
    pub response_mode: crate::oauth::ResponseMode,
    /// For a request that came pushed (RFC 9126) or as a signed request
    /// object (RFC 9101): the `request_uri` the way back to authorize
    /// names instead of repeating the parameters (which may only come
    /// that way for the client).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_uri: Option<String>,
    /// The DPoP key the code is to be bound to (RFC 9449 §10): the pushed
    /// request's proof's, or authorize's `dpop_jkt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_jkt: Option<String>,
    /// `id_token_hint` (OpenID Connect Core §3.1.2.1): an ID token Portico
    /// issued, naming the user the client expects; a code goes to that
    /// user only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_token_hint: Option<String>,
}

/// How a completed login process ends: the authorize endpoint issues a code
/// to this user, under this session, for this scope, and nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoginOutcome {
    pub user_id: UserId,
    /// The SSO session the code is issued under (its `auth_time` and `amr`).
    pub session_id: SessionId,
    /// The scope granted: the request's, less what the user left unticked
    /// on the consent step ([`crate::consent::granted_scope`]).
    pub scope: String,
}

fn sms() -> OtpChannel {
    OtpChannel::Sms
}

impl LoginState {
    /// A fresh process at its first step for `method`.
    pub fn start(client_id: ClientId, request: PendingAuthorization, csrf: String, method: AuthMethod) -> Self {
        Self::fresh(client_id, Some(request), csrf, method)
    }

    fn fresh(client_id: ClientId, request: Option<PendingAuthorization>, csrf: String, method: AuthMethod) -> Self {
        let step = match method {
            AuthMethod::Password => StepType::UsernamePassword,
            AuthMethod::Phone => StepType::Phone,
        };
        Self {
            client_id,
            request,
            csrf,
            method,
            step,
            view_type: ViewType::Default,
            principal: None,
            user_id: None,
            locale: None,
            device_id: None,
            errors: None,
            stage: Stage::InProgress,
            passed: Vec::new(),
            otp: None,
            codes_sent: 0,
            otp_channel: OtpChannel::Sms,
            password_failures: 0,
            captcha: false,
            paused_until: None,
            tries_before_pause: None,
            phone: None,
            granted_groups: None,
            consent_choice: None,
            force_consent: false,
            error_page: None,
            session_id: None,
            passkey_challenge: None,
            passkey_declined: false,
            user_agent: None,
            presented_session: None,
        }
    }

    /// The same process started again at the first step of `method`: the
    /// request, device, language and CSRF token stay, and so do the
    /// failures and codes sent, which count for the whole process.
    #[must_use]
    pub fn restarted(&self, method: AuthMethod) -> Self {
        let mut state = Self::fresh(self.client_id.clone(), self.request.clone(), self.csrf.clone(), method);
        state.device_id.clone_from(&self.device_id);
        state.user_agent.clone_from(&self.user_agent);
        state.locale = self.locale;
        state.force_consent = self.force_consent;
        state.password_failures = self.password_failures;
        state.captcha = self.captcha;
        state.codes_sent = self.codes_sent;
        state
    }

    /// Whether every step is passed (the authorize endpoint issues the code).
    pub fn is_complete(&self) -> bool {
        matches!(self.stage, Stage::Completed { .. })
    }

    /// Whether the process ended in an error.
    pub fn is_ended(&self) -> bool {
        self.stage == Stage::Ended
    }

    /// Whether the user may still act on the process's steps.
    pub fn in_progress(&self) -> bool {
        self.stage == Stage::InProgress
    }

    /// Every step is passed at `now`: the authorize endpoint issues the
    /// code from `outcome`. The current step's code is forgotten.
    pub fn complete(&mut self, outcome: LoginOutcome, now: OffsetDateTime) {
        self.stage = Stage::Completed { at: now, outcome };
        self.otp = None;
    }

    /// The process ends in an error: it is never continued again.
    pub fn end(&mut self) {
        self.stage = Stage::Ended;
    }

    /// The outcome of a completed process, taken out of it (the code is
    /// issued from it once).
    pub fn take_outcome(&mut self) -> Option<LoginOutcome> {
        match std::mem::replace(&mut self.stage, Stage::InProgress) {
            Stage::Completed { outcome, .. } => Some(outcome),
            other => {
                self.stage = other;
                None
            }
        }
    }

    pub fn has_passed(&self, step: StepType) -> bool {
        self.passed.contains(&step)
    }

    /// Whether the user proved knowledge of the password.
    pub fn knows_password(&self) -> bool {
        self.has_passed(StepType::UsernamePassword) || self.has_passed(StepType::Password)
    }

    /// Whether the user proved possession of the phone or mailbox.
    pub fn has_otp(&self) -> bool {
        self.has_passed(StepType::SmsOtp) || self.has_passed(StepType::EmailOtp)
    }

    /// Authentication methods used (RFC 8176), for the id_token's `amr`.
    pub fn amr(&self) -> Vec<&'static str> {
        let mut amr = Vec::new();
        if self.has_passed(StepType::Passkey) {
            // Proof of possession of a key, and the authenticator's user
            // verification (RFC 8176 `hwk`, `user`).
            amr.extend(["hwk", "user"]);
        }
        if self.knows_password() {
            amr.push("pwd");
        }
        if self.has_passed(StepType::SmsOtp) {
            amr.push("sms");
        }
        if self.has_passed(StepType::EmailOtp) {
            amr.push("otp");
        }
        if amr.len() > 1 {
            amr.push("mfa");
        }
        amr
    }

    /// Moves to `step` shown as `view`, forgetting the previous step's code
    /// and passkey challenge (a challenge belongs to the step that asked).
    pub fn go_to(&mut self, step: StepType, view: ViewType) {
        self.step = step;
        self.view_type = view;
        self.otp = None;
        self.passkey_challenge = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_through_json() {
        let request = PendingAuthorization {
            redirect_uri: "https://rp.example/cb".into(),
            scope: vec!["openid".into()],
            state: Some("s".into()),
            code_challenge: "c".repeat(43),
            nonce: Some("n".into()),
            prompt: Some(crate::oauth::Prompt::Consent),
            max_age: Some(0),
            ui_locale: Some(Locale::En),
            login_hint: Some("alice".into()),
            response_mode: crate::oauth::ResponseMode::FormPost,
            request_uri: None,
            dpop_jkt: None,
            id_token_hint: None,
        };
        let mut state = LoginState::start("c".into(), request, "x".into(), AuthMethod::Password);
        let in_progress = serde_json::to_string(&state).unwrap();
        assert_eq!(serde_json::from_str::<LoginState>(&in_progress).unwrap(), state);
        let outcome = LoginOutcome {
            user_id: UserId::from(uuid::Uuid::nil()),
            session_id: SessionId::random(),
            scope: "openid".into(),
        };
        state.complete(outcome.clone(), OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap());
        let json = serde_json::to_string(&state).unwrap();
        assert!(json.contains("\"username-password\""));
        assert!(json.contains("\"completed_at\":1700000000") && json.contains("\"ended\":false"), "{json}");
        assert_eq!(serde_json::from_str::<LoginState>(&json).unwrap(), state);
        assert_eq!(state.clone().take_outcome(), Some(outcome));
        state.end();
        assert!(serde_json::to_string(&state).unwrap().contains("\"ended\":true"));
        assert!(serde_json::from_str::<LoginState>(&serde_json::to_string(&state).unwrap()).unwrap().is_ended());
    }

    #[test]
    fn stages_stored_by_earlier_releases_load() {
        let state = LoginState::start("c".into(), pending(), "x".into(), AuthMethod::Password);
        let mut stored = serde_json::to_value(&state).unwrap();
        let fields = stored.as_object_mut().unwrap();
        for name in ["completed_at", "outcome", "ended"] {
            fields.remove(name);
        }
        let loaded: LoginState = serde_json::from_value(stored.clone()).unwrap();
        assert!(loaded.in_progress(), "none of the fields: in progress");
        stored["completed_at"] = 1_700_000_000.into();
        let loaded: LoginState = serde_json::from_value(stored.clone()).unwrap();
        assert!(loaded.is_ended(), "completed without an outcome: nothing to issue a code from, so ended");
        stored["ended"] = true.into();
        stored["outcome"] =
            serde_json::json!({"user_id": uuid::Uuid::nil(), "session_id": uuid::Uuid::nil(), "scope": "openid"});
        let loaded: LoginState = serde_json::from_value(stored).unwrap();
        assert!(loaded.is_ended(), "ended wins over an outcome");
    }

    fn pending() -> PendingAuthorization {
        PendingAuthorization {
            redirect_uri: "https://rp.example/cb".into(),
            scope: vec!["openid".into()],
            state: Some("s".into()),
            code_challenge: "c".repeat(43),
            nonce: None,
            prompt: None,
            max_age: None,
            ui_locale: None,
            login_hint: None,
            response_mode: crate::oauth::ResponseMode::Query,
            request_uri: None,
            dpop_jkt: None,
            id_token_hint: None,
        }
    }
}
