//! `LoginViewDataDTO` and `ErrorPageDataDTO`, exactly as the spec shapes
//! them, and their safe embedding in `<script type="application/json">`.

use portico_model::login::{Locale, LoginFormErrors, LoginProcess, StepType, ViewType};
use portico_model::otp::mask_phone;
use serde::Serialize;
use time::OffsetDateTime;
use utoipa::ToSchema;

/// `LoginViewDataDTO`: what `GET /login` embeds in `script#viewData`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = LoginViewDataDTO)]
pub struct LoginViewData {
    #[schema(value_type = String, inline, pattern = "^LOGIN_FORM_STEP$", example = "LOGIN_FORM_STEP")]
    pub page_type: &'static str,
    pub page_data: LoginPageData,
    pub locale: Option<Locale>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = LoginPageDataDTO)]
pub struct LoginPageData {
    pub authentication_flow_context: FlowContext,
    #[schema(required = true)]
    pub step_view_data: Option<StepViewData>,
    #[schema(required = true)]
    pub theme_view_data: Option<crate::theme::Theme>,
    #[schema(required = true)]
    pub errors: Option<LoginFormErrors>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = AuthenticationFlowContextDTO)]
pub struct FlowContext {
    pub authentication_flow_id: String,
    /// Time to the page's refresh (the process's end), in milliseconds.
    #[schema(required = true)]
    pub auth_page_refresh_ttl_ms: Option<i64>,
    #[schema(required = true)]
    pub device_id: Option<String>,
    pub csrf: String,
}

/// Step view data, discriminated by `stepType`; each variant carries exactly
/// the fields of the spec's table for its step.
#[derive(Debug, Serialize, ToSchema)]
#[serde(tag = "stepType", deny_unknown_fields)]
#[schema(as = StepViewDataDTO)]
pub enum StepViewData {
    #[serde(rename = "username-password", rename_all = "camelCase")]
    UsernamePassword {
        #[schema(schema_with = views::username_password)]
        view_type: ViewType,
        phone_number_view: Option<String>,
        principal: Option<String>,
        captcha_required: bool,
    },
    #[serde(rename = "password", rename_all = "camelCase")]
    Password {
        #[schema(schema_with = views::password)]
        view_type: ViewType,
        captcha_required: bool,
    },
    #[serde(rename = "phone", rename_all = "camelCase")]
    Phone {
        #[schema(schema_with = views::default)]
        view_type: ViewType,
        principal: Option<String>,
        captcha_required: bool,
    },
    #[serde(rename = "sms-otp", rename_all = "camelCase")]
    SmsOtp {
        #[schema(schema_with = views::sms_otp)]
        view_type: ViewType,
        sms_otp_address_view: Option<String>,
        sms_otp_process_id: Option<uuid::Uuid>,
        email_delivery_available: bool,
    },
    #[serde(rename = "email-otp", rename_all = "camelCase")]
    EmailOtp {
        #[schema(schema_with = views::second_factor)]
        view_type: ViewType,
        email_otp_process_id: Option<uuid::Uuid>,
    },
    /// Portico's own step: a passkey as the second factor (docs/decisions.md).
    #[serde(rename = "passkey", rename_all = "camelCase")]
    Passkey {
        #[schema(schema_with = views::second_factor)]
        view_type: ViewType,
        /// The `navigator.credentials.get` options (`publicKey` and
        /// `mediation`, Base64url as WebAuthn's JSON forms): the answer's
        /// credential JSON goes in `credentials`. Null when passkeys went
        /// off meanwhile: take a code.
        #[schema(value_type = Option<Object>)]
        passkey_request_options: Option<serde_json::Value>,
        sms_delivery_available: bool,
        email_delivery_available: bool,
    },
    /// Portico's own step: the offer to create a passkey after a login with
    /// a password and a code (docs/decisions.md).
    #[serde(rename = "passkey-enrolment", rename_all = "camelCase")]
    PasskeyEnrolment {
        #[schema(schema_with = views::default)]
        view_type: ViewType,
        /// The `navigator.credentials.create` options (`publicKey`,
        /// Base64url as WebAuthn's JSON forms): the new credential's JSON
        /// goes in `credentials`; `decline` declines. Null when passkeys
        /// went off meanwhile: decline.
        #[schema(value_type = Option<Object>)]
        passkey_creation_options: Option<serde_json::Value>,
    },
    #[serde(rename = "consent", rename_all = "camelCase")]
    Consent {
        #[schema(schema_with = views::default)]
        view_type: ViewType,
        client_name: Option<String>,
        /// Comma-separated.
        available_scope_groups: Option<String>,
        /// Portico's own: the client's home page, privacy policy and terms
        /// of service, as its registration named them (OpenID Connect
        /// Registration §2); the page links to each. Null when not
        /// registered.
        client_uri: Option<String>,
        policy_uri: Option<String>,
        tos_uri: Option<String>,
    },
}

/// The `viewType` values each step can show (the spec's table).
mod views {
    use utoipa::openapi::schema::{Object, ObjectBuilder, Type};

    fn one_of(values: &[&str]) -> Object {
        ObjectBuilder::new().schema_type(Type::String).enum_values(Some(values.iter().copied())).build()
    }

    pub fn username_password() -> Object {
        one_of(&["default", "phoneDuplicated"])
    }

    pub fn password() -> Object {
        one_of(&["default", "phoneAuthNotAllowed", "unknownDevice"])
    }

    pub fn default() -> Object {
        one_of(&["default"])
    }

    pub fn sms_otp() -> Object {
        one_of(&["default", "secondFactor"])
    }

    pub fn second_factor() -> Object {
        one_of(&["secondFactor"])
    }
}

/// The pages of a client that the consent step links to: its home page,
/// privacy policy and terms of service (`https` addresses its
/// registration named).
#[derive(Debug, Default, Clone)]
pub struct ClientPages {
    pub client_uri: Option<String>,
    pub policy_uri: Option<String>,
    pub tos_uri: Option<String>,
}

/// What the step view needs beyond the process itself.
#[derive(Debug, Default)]
pub struct StepContext {
    pub captcha_required: bool,
    pub email_delivery_available: bool,
    /// On the e-mail step: the code may go by SMS instead (Portico's way
    /// back; not in `viewData`).
    pub sms_delivery_available: bool,
    pub client_name: Option<String>,
    /// On the consent step: the pages the client's registration names.
    pub client_pages: ClientPages,
    pub available_scope_groups: Vec<String>,
    pub theme: crate::theme::Theme,
}

impl LoginViewData {
    /// The view of `process` at `now`, showing `errors`.
    pub fn of(
        process: &LoginProcess,
        errors: Option<LoginFormErrors>,
        locale: Locale,
        now: OffsetDateTime,
        context: &StepContext,
    ) -> Self {
        let state = &process.state;
        let view_type = state.view_type;
        let captcha_required = context.captcha_required;
        let step = Some(match state.step {
            StepType::UsernamePassword => StepViewData::UsernamePassword {
                view_type,
                phone_number_view: (view_type == ViewType::PhoneDuplicated)
                    .then(|| state.phone.as_deref().map(mask_phone))
                    .flatten(),
                principal: state.principal.clone(),
                captcha_required,
            },
            StepType::Password => StepViewData::Password { view_type, captcha_required },
            StepType::Phone => StepViewData::Phone { view_type, principal: state.principal.clone(), captcha_required },
            StepType::SmsOtp => StepViewData::SmsOtp {
                view_type,
                sms_otp_address_view: state.otp.as_ref().map(|o| mask_phone(&o.to)),
                sms_otp_process_id: state.otp.as_ref().map(|o| o.id),
                email_delivery_available: context.email_delivery_available,
            },
            StepType::EmailOtp => {
                StepViewData::EmailOtp { view_type, email_otp_process_id: state.otp.as_ref().map(|o| o.id) }
            }
            StepType::Passkey => StepViewData::Passkey {
                view_type,
                passkey_request_options: state.passkey_challenge.as_ref().map(|c| c.options.clone()),
                sms_delivery_available: context.sms_delivery_available,
                email_delivery_available: context.email_delivery_available,
            },
            StepType::PasskeyEnrolment => StepViewData::PasskeyEnrolment {
                view_type,
                passkey_creation_options: state.passkey_challenge.as_ref().map(|c| c.options.clone()),
            },
            StepType::Consent => StepViewData::Consent {
                view_type,
                client_name: context.client_name.clone(),
                available_scope_groups: (!context.available_scope_groups.is_empty())
                    .then(|| context.available_scope_groups.join(",")),
                client_uri: context.client_pages.client_uri.clone(),
                policy_uri: context.client_pages.policy_uri.clone(),
                tos_uri: context.client_pages.tos_uri.clone(),
            },
        });
        Self {
            page_type: "LOGIN_FORM_STEP",
            page_data: LoginPageData {
                authentication_flow_context: FlowContext {
                    authentication_flow_id: process.id.to_string(),
                    auth_page_refresh_ttl_ms: Some(((process.expires_at - now).whole_milliseconds()).max(0) as i64),
                    device_id: state.device_id.clone(),
                    csrf: state.csrf.clone(),
                },
                step_view_data: step,
                theme_view_data: Some(context.theme.view()),
                errors,
            },
            locale: Some(locale),
        }
    }
}

/// `ErrorPageDataDTO`: what `GET /error` embeds in `script#viewData`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ErrorPageDataDTO)]
pub struct ErrorPageData {
    #[schema(value_type = String, inline, pattern = "^ERROR$", example = "ERROR")]
    pub page_type: &'static str,
    pub page_data: ErrorPageBody,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ErrorPageBodyDTO)]
pub struct ErrorPageBody {
    pub error_page_context: ErrorPageContext,
    pub error_details: ErrorDetails,
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ErrorPageContextDTO)]
pub struct ErrorPageContext {
    pub csrf: String,
}

/// What `GET /error` shows; travels in the signed `error_page_details` cookie.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ErrorDetailsDTO)]
pub struct ErrorDetails {
    /// `unknown-error`, `fatal-error`, `user-is-blocked`, `consent.*`,
    /// `authenticate.sms-otp.*`, `challenge.sms-otp.*`.
    #[schema(example = "fatal-error")]
    pub error_code: String,
    pub actions: Vec<ErrorAction>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, ToSchema)]
#[schema(as = ErrorActionDTO)]
pub struct ErrorAction {
    pub action: ActionKind,
    #[schema(required = true)]
    pub url: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ActionKind {
    /// Reload through `/login`.
    Reload,
    /// Start over through `/login/restart`.
    RetryLogin,
    /// Leave for an external URL.
    Redirect,
}

/// JSON that is safe inside a `<script>` element: `<`, `>` and `&` escaped.
pub fn script_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value)
        .unwrap_or_else(|_| "null".to_owned())
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_json_cannot_close_the_script() {
        let text = script_json(&serde_json::json!({"a": "</script><b>&"}));
        assert!(!text.contains('<') && !text.contains('>') && !text.contains('&'));
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["a"], "</script><b>&");
    }
}
