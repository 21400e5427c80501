//! The identity and login interface's OpenAPI document (1.0.0), assembled
//! from the handlers' paths on top of the types below them: the answers
//! are the handlers' own types; what the endpoints read, and the answers
//! they share, are in [`crate::edge`].

use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::login::view::{ErrorPageData, LoginViewData};
use crate::oauth2::error::OAuth2ErrorDto;
use crate::oauth2::jwks::{PublicEcJwk, PublicJwk, PublicJwksResponse, PublicOkpJwk, PublicRsaJwk};
use crate::oauth2::userinfo::UserInfo;
use crate::tokens::TokenResponse;

use crate::edge::{
    AuthMethodRequest, AuthorizeFormDto, IntrospectionRequestDto, LocaleForm, LoginStepRequest, LogoutForm,
    OtpMethodRequest, PushedRequestDto, RevokeRequestDto, TokenRequestDto,
};

/// The identity document's schemes: the client's Basic credentials on the
/// token and revoke endpoints (`clientBasic`; `client_secret_post` puts
/// them in the form instead) and the access token as a Bearer JWT
/// (`bearerAuth`, the spec's name); the internal token at introspection
/// (`internalToken`).
struct IdentitySecurity;

impl Modify for IdentitySecurity {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let mut basic = Http::new(HttpAuthScheme::Basic);
        basic.description = Some(
            "`client_secret_basic`: client_id and client_secret joined by a colon, Base64 or Base64URL.".to_owned(),
        );
        components.add_security_scheme("clientBasic", SecurityScheme::Http(basic));
        let mut bearer = Http::new(HttpAuthScheme::Bearer);
        bearer.bearer_format = Some("JWT".to_owned());
        bearer.description = Some("The access token from POST /oauth2/token.".to_owned());
        components.add_security_scheme("bearerAuth", SecurityScheme::Http(bearer));
        let mut internal = Http::new(HttpAuthScheme::Bearer);
        internal.description = Some(
            "The internal token (`internal_token`): the bank's own resource servers introspect access tokens \
             with it instead of client credentials."
                .to_owned(),
        );
        components.add_security_scheme("internalToken", SecurityScheme::Http(internal));
    }
}

/// One client authentication method per request (RFC 6749 §2.3): a body
/// that carries a secret and an assertion is `invalid_request`, so the
/// request schemas of the endpoints that authenticate clients say so.
struct OneClientAuthentication;

impl Modify for OneClientAuthentication {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{RefOr, Schema};
        let Some(components) = openapi.components.as_mut() else { return };
        let two_methods = serde_json::json!({"anyOf": [
            {"required": ["client_secret", "client_assertion"]},
            {"required": ["client_secret", "client_assertion_type"]}
        ]});
        for name in ["TokenRequestDTO", "TokenRevocationRequestDTO", "TokenIntrospectionRequestDTO"] {
            // utoipa has no `not`; the extensions map writes it as it is.
            let extensions = match components.schemas.get_mut(name) {
                Some(RefOr::T(Schema::Object(object))) => &mut object.extensions,
                Some(RefOr::T(Schema::AllOf(all))) => &mut all.extensions,
                Some(RefOr::T(Schema::OneOf(one))) => &mut one.extensions,
                _ => panic!("{name} is not a schema of its own"),
            };
            extensions.get_or_insert_with(Default::default).insert("not".into(), two_methods.clone());
        }
    }
}

/// `POST /oauth2/userinfo` takes its form (a bearer token in the body, RFC
/// 6750 §2.2) only when the header does not carry the token: the body is
/// optional, which `utoipa`'s `request_body` cannot say of a plain type.
struct OptionalUserInfoBody;

impl Modify for OptionalUserInfoBody {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let body = openapi
            .paths
            .paths
            .get_mut("/oauth2/userinfo")
            .and_then(|item| item.post.as_mut())
            .and_then(|operation| operation.request_body.as_mut())
            .expect("POST /oauth2/userinfo has a request body");
        body.required = Some(utoipa::openapi::Required::False);
    }
}

/// Each step's view data allows no other properties (the spec's table):
/// every member of `StepViewDataDTO` gets `additionalProperties: false`.
struct ClosedStepViews;

impl Modify for ClosedStepViews {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::RefOr;
        use utoipa::openapi::schema::{AdditionalProperties, Schema};
        let Some(components) = openapi.components.as_mut() else { return };
        if let Some(RefOr::T(Schema::OneOf(one_of))) = components.schemas.get_mut("StepViewDataDTO") {
            for member in &mut one_of.items {
                if let RefOr::T(Schema::Object(object)) = member {
                    object.additional_properties = Some(Box::new(AdditionalProperties::FreeForm(false)));
                }
            }
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Portico identity and login",
        version = "1.0.0",
        description = "OAuth 2.1 / OpenID Connect with PKCE S256, and the server-held browser login \
                       (spec 1). The login pages are HTML; the data they embed in `script#viewData` is \
                       described by `LoginViewDataDTO` and `ErrorPageDataDTO`."
    ),
    paths(
        crate::oauth2::authorize::authorize,
        crate::oauth2::authorize::authorize_form,
        crate::oauth2::token::token,
        crate::oauth2::par::par,
        crate::oauth2::revoke::revoke,
        crate::oauth2::introspect::introspect,
        crate::oauth2::jwks::jwks,
        crate::oauth2::liveness::liveness,
        crate::oauth2::userinfo::userinfo,
        crate::oauth2::userinfo::userinfo_post,
        crate::oauth2::logout::logout,
        crate::oauth2::logout::logout_form,
        crate::oauth2::discovery::openid_configuration,
        crate::oauth2::discovery::authorization_server_metadata,
        crate::login::page::login_page,
        crate::login::submit::submit_step,
        crate::login::restart::restart,
        crate::login::auth_method::update_auth_method,
        crate::login::locale::update_locale,
        crate::login::locale::submit_locale,
        crate::login::otp_method::update_otp_method,
        crate::login::passkey::options,
        crate::login::passkey::sign_in,
        crate::login::error_page::error_page
    ),
    components(schemas(
        TokenResponse,
        OAuth2ErrorDto,
        PublicJwksResponse,
        PublicJwk,
        PublicRsaJwk,
        PublicEcJwk,
        PublicOkpJwk,
        LoginViewData,
        ErrorPageData,
        TokenRequestDto,
        RevokeRequestDto,
        PushedRequestDto,
        AuthorizeFormDto,
        crate::oauth2::par::PushedAuthorizationResponse,
        IntrospectionRequestDto,
        crate::oauth2::introspect::Introspection,
        LoginStepRequest,
        AuthMethodRequest,
        OtpMethodRequest,
        LocaleForm,
        LogoutForm,
        UserInfo,
        crate::theme::DrawerSection,
        crate::theme::DrawerItem
    )),
    modifiers(&IdentitySecurity, &ClosedStepViews, &OneClientAuthentication, &OptionalUserInfoBody),
    tags(
        (name = "oauth2", description = "Authorization, tokens, keys"),
        (name = "login", description = "The browser login and its error page")
    )
)]
pub struct IdentityOpenApi;

#[cfg(test)]
mod tests {
    use utoipa::PartialSchema;

    /// The key set's schema names exactly the fields a key of each
    /// algorithm is written with, each required.
    #[test]
    fn the_jwk_schema_matches_the_keys_served() {
        use portico_crypto::jwt::{Algorithm, SigningKey};
        for alg in Algorithm::ALL {
            let pair = SigningKey::generate(alg).expect("a key");
            let served = serde_json::to_value(pair.jwk()).expect("JSON");
            let schema = match alg {
                Algorithm::Rs256 | Algorithm::Ps256 => super::PublicRsaJwk::schema(),
                Algorithm::Es256 => super::PublicEcJwk::schema(),
                Algorithm::EdDsa => super::PublicOkpJwk::schema(),
            };
            let schema = serde_json::to_value(schema).expect("schema JSON");
            let mut served_fields: Vec<&String> = served.as_object().expect("an object").keys().collect();
            let mut described: Vec<&String> = schema["properties"].as_object().expect("properties").keys().collect();
            served_fields.sort();
            described.sort();
            assert_eq!(served_fields, described, "{alg}");
            let required = schema["required"].as_array().map(Vec::len);
            assert_eq!(required, Some(described.len()), "{alg}: every field is required");
        }
        let rsa = serde_json::to_value(super::PublicRsaJwk::schema()).expect("schema JSON");
        assert_eq!(rsa["required"].as_array().map(Vec::len), Some(6), "an RSA key: the spec's six fields");
    }

    /// The view data `GET /login` embeds has, for every step, exactly the
    /// properties its schema names, and every required one.
    #[test]
    fn the_login_view_data_of_every_step_has_the_documented_fields() {
        use portico_model::login::{AuthMethod, Locale, LoginProcess, LoginState, StepType, ViewType};
        use utoipa::OpenApi as _;

        use crate::login::view::{LoginViewData, StepContext};

        let document = serde_json::to_value(super::IdentityOpenApi::openapi()).expect("JSON");
        let schemas = &document["components"]["schemas"];
        let keys = |value: &serde_json::Value| {
            let mut keys: Vec<String> = value.as_object().expect("an object").keys().cloned().collect();
            keys.sort();
            keys
        };
        let now = time::OffsetDateTime::now_utc();
        for step in [
            StepType::UsernamePassword,
            StepType::Password,
            StepType::Phone,
            StepType::SmsOtp,
            StepType::EmailOtp,
            StepType::Consent,
            StepType::Passkey,
            StepType::PasskeyEnrolment,
        ] {
            let request = portico_model::login::PendingAuthorization {
                redirect_uri: "https://app.example/cb".into(),
                scope: vec!["openid".into()],
                state: Some("st".into()),
                code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM".into(),
                nonce: None,
                prompt: None,
                max_age: None,
                ui_locale: None,
                login_hint: None,
                response_mode: portico_model::oauth::ResponseMode::Query,
                request_uri: None,
                dpop_jkt: None,
                id_token_hint: None,
            };
            let mut state = LoginState::start("demo-app".into(), request, "csrf".into(), AuthMethod::Password);
            state.go_to(step, ViewType::Default);
            let process = LoginProcess {
                id: portico_model::ids::LoginProcessId::random(),
                version: 0,
                created_at: now,
                expires_at: now + time::Duration::minutes(10),
                state,
            };
            let view = LoginViewData::of(&process, None, Locale::En, now, &StepContext::default());
            let view = serde_json::to_value(&view).expect("JSON");
            assert_eq!(keys(&view), keys(&schemas["LoginViewDataDTO"]["properties"]));
            assert_eq!(keys(&view["pageData"]), keys(&schemas["LoginPageDataDTO"]["properties"]));
            let mut required: Vec<String> = schemas["LoginPageDataDTO"]["required"]
                .as_array()
                .expect("required")
                .iter()
                .map(|r| r.as_str().expect("a name").to_owned())
                .collect();
            required.sort();
            assert_eq!(required, keys(&view["pageData"]), "every pageData field is required");
            let step_view = &view["pageData"]["stepViewData"];
            let member = schemas["StepViewDataDTO"]["oneOf"]
                .as_array()
                .expect("oneOf")
                .iter()
                .find(|m| m["properties"]["stepType"]["enum"][0] == step_view["stepType"])
                .expect("a member for the step");
            assert_eq!(keys(step_view), keys(&member["properties"]), "{step_view}");
        }
    }

    /// Every step's view data is closed, and names the step it is for.
    #[test]
    fn each_step_view_allows_no_other_properties() {
        use utoipa::OpenApi as _;
        let document = serde_json::to_value(super::IdentityOpenApi::openapi()).expect("JSON");
        let members = document["components"]["schemas"]["StepViewDataDTO"]["oneOf"].as_array().expect("oneOf");
        let steps: Vec<&str> =
            members.iter().map(|m| m["properties"]["stepType"]["enum"][0].as_str().expect("a step")).collect();
        // The seeds' six and Portico's own `passkey` and `passkey-enrolment`.
        let expected = [
            "username-password",
            "password",
            "phone",
            "sms-otp",
            "email-otp",
            "passkey",
            "passkey-enrolment",
            "consent",
        ];
        assert_eq!(steps, expected);
        for member in members {
            assert_eq!(member["additionalProperties"], false, "{member}");
        }
    }
}
