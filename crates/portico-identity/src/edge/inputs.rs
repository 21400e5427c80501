//! What the identity endpoints read: the queries, forms, headers and
//! cookies. The login pages' forms are the types their handlers read,
//! through the one deserializer ([`portico_model::form`]); the token and
//! revoke forms are assembled from the types their handlers read
//! ([`crate::oauth2::forms`]). Authorize reads [`AuthorizeQuery`], each
//! parameter's reading kept so that it can check them in its contract's
//! order; logout reads [`LogoutForm`] whole.

use portico_model::form::{Form, Param};
use portico_model::oauth::{Prompt, ResponseMode};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

/// The values the protocol parameters take, for the documents only (the
/// handlers compare the raw strings).
mod values {
    use utoipa::ToSchema;

    #[derive(ToSchema)]
    #[schema(rename_all = "snake_case")]
    #[allow(dead_code)]
    pub enum ResponseType {
        Code,
    }

    #[derive(ToSchema)]
    #[allow(dead_code)]
    pub enum CodeChallengeMethod {
        S256,
    }

    #[derive(ToSchema)]
    #[schema(rename_all = "snake_case")]
    #[allow(dead_code)]
    pub enum ResponseMode {
        Query,
        FormPost,
        #[schema(rename = "jwt")]
        Jwt,
        #[schema(rename = "query.jwt")]
        QueryJwt,
        #[schema(rename = "form_post.jwt")]
        FormPostJwt,
    }

    #[derive(ToSchema)]
    #[schema(rename_all = "UPPERCASE")]
    #[allow(dead_code)]
    pub enum AuthMethod {
        Password,
        Phone,
    }

    #[derive(ToSchema)]
    #[schema(rename_all = "lowercase")]
    #[allow(dead_code)]
    pub enum OtpMethod {
        Email,
        Sms,
    }

    #[derive(ToSchema)]
    #[schema(rename_all = "lowercase")]
    #[allow(dead_code)]
    pub enum Locale {
        Ru,
        En,
    }
}

/// The query of `GET /oauth2/authorize`, each parameter as it was given
/// ([`Param`]): the handler checks them in the order its contract names
/// ([`crate::oauth2::authorize`]) and answers the first problem. Each
/// parameter at most once.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(default)]
#[into_params(parameter_in = Query)]
pub struct AuthorizeQuery {
    /// Only `code`.
    #[param(inline, value_type = values::ResponseType, required = true)]
    pub response_type: Param<String>,
    /// BASE64URL(SHA256(ASCII(code_verifier))): 43 characters.
    #[param(
        value_type = String,
        required = true,
        example = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        pattern = "^[A-Za-z0-9_-]{43}$"
    )]
    pub code_challenge: Param<String>,
    /// Only `S256`.
    #[param(inline, value_type = values::CodeChallengeMethod, required = true)]
    pub code_challenge_method: Param<String>,
    /// A registered client.
    #[param(value_type = String, required = true, example = "demo-app")]
    pub client_id: Param<String>,
    /// One of the client's registered addresses, exactly (a registered `http`
    /// address on a loopback IP literal at any port, RFC 8252 §7.3).
    #[param(value_type = String, required = true, example = "http://127.0.0.1:8080/demo/callback")]
    pub redirect_uri: Param<String>,
    /// Scopes separated by a space.
    #[param(value_type = String, required = true, example = "openid profile email phone")]
    pub scope: Param<String>,
    /// Returned unchanged; at most 2048 characters. Required, but of
    /// `fapi2` clients and of `fapi-ru` clients asking for `openid`
    /// (docs/openbanking.md).
    #[param(value_type = String, required = false, min_length = 1, max_length = 2048)]
    pub state: Param<String>,
    /// Carried into the id_token; at most 512 characters.
    #[param(value_type = String, required = false, min_length = 1, max_length = 512)]
    pub nonce: Param<String>,
    /// `none` alone, or `login`, `consent` and `select_account` (answered
    /// as `login`) separated by single spaces, in any order.
    #[param(
        value_type = String,
        required = false,
        example = "login consent",
        pattern = "^(none|(login|consent|select_account)( (login|consent|select_account))*)$"
    )]
    pub prompt: Param<Prompt>,
    /// `query` (the default: a 302 to `redirect_uri`) or `form_post` (a page
    /// that posts the response to `redirect_uri`).
    #[param(inline, value_type = values::ResponseMode, required = false)]
    pub response_mode: Param<ResponseMode>,
    /// Seconds: a single sign-on session authenticated longer ago does not count.
    #[param(value_type = u32, required = false, minimum = 0)]
    pub max_age: Param<u32>,
    /// Languages for the login pages, preferred first; those Portico does not speak are passed over.
    #[param(value_type = String, required = false, example = "en")]
    pub ui_locales: Param<String>,
    /// The login (or phone number) the first step shows.
    #[param(value_type = String, required = false, max_length = 256)]
    pub login_hint: Param<String>,
    /// A request object (RFC 9101): a JWT signed with one of the client's
    /// keys whose claims are the request's parameters; beside it the query
    /// needs only `client_id`, and its other parameters are not read.
    #[param(value_type = String, required = false)]
    pub request: Param<String>,
    /// What `POST /oauth2/par` answered for a pushed request (RFC 9126),
    /// used once; beside it the query needs only `client_id`, and its other
    /// parameters are not read.
    #[param(value_type = String, required = false, example = "urn:ietf:params:oauth:request_uri:5ZbZ2dCJ3m0n0Q8yq3yGqZrC")]
    pub request_uri: Param<String>,
    /// The thumbprint (RFC 7638, 43 Base64url characters) of the DPoP key
    /// the code is to be bound to (RFC 9449 §10): the token request must
    /// carry a proof of that key.
    #[param(value_type = String, required = false, pattern = "^[A-Za-z0-9_-]{43}$")]
    pub dpop_jkt: Param<String>,
    /// An ID token Portico issued (expired ones count) naming the user the
    /// client expects: a browser signed in as another user logs in again
    /// (`prompt=none`: `login_required`), and a login as another user is
    /// answered `login_required`.
    #[param(value_type = String, required = false, max_length = 8192)]
    pub id_token_hint: Param<String>,
    /// Not taken: OpenID Connect's client metadata for a self-issued
    /// provider (Core §7.2.1); a request carrying it is answered
    /// `registration_not_supported` (§3.1.2.6). A client registers at
    /// `registration_endpoint` instead.
    #[param(value_type = String, required = false)]
    pub registration: Param<String>,
}

/// The parameters of RP-initiated logout: the query of `GET
/// /oauth2/logout` and the form of `POST`, read by the one strict reader
/// (each at most once, no NUL, empty is absent) before anything they name
/// is looked at.
#[derive(Debug, Default, Deserialize, IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
pub struct LogoutForm {
    /// An id_token Portico issued to the client (expired ones count): names
    /// the user, the client and the session to end.
    #[param(value_type = String, required = false)]
    #[schema(nullable = false)]
    pub id_token_hint: Option<String>,
    /// The client asking; must be the hint's `aud` when both are given.
    #[param(value_type = String, required = false, example = "demo-app")]
    #[schema(nullable = false)]
    pub client_id: Option<String>,
    /// One of the client's registered post-logout addresses, exactly.
    #[param(value_type = String, required = false)]
    #[schema(nullable = false)]
    pub post_logout_redirect_uri: Option<String>,
    /// Returned unchanged with the redirect.
    #[param(value_type = String, required = false)]
    #[schema(nullable = false)]
    pub state: Option<String>,
    /// Languages for the signed-out page, preferred first (`ru`, `en`).
    #[param(value_type = String, required = false, example = "en")]
    #[schema(nullable = false)]
    pub ui_locales: Option<String>,
    /// Accepted and not needed: a browser has one account.
    #[param(value_type = String, required = false)]
    #[schema(nullable = false)]
    pub logout_hint: Option<String>,
}

/// `TokenRequestDTO`: the form of `POST /oauth2/token`, one shape per grant
/// type, assembled from the types the handler reads
/// ([`crate::oauth2::forms`]).
#[derive(ToSchema)]
#[schema(as = TokenRequestDTO)]
#[serde(tag = "grant_type", rename_all = "snake_case")]
#[allow(dead_code)]
pub enum TokenRequestDto {
    /// `authorization_code`: a code and its PKCE verifier.
    AuthorizationCode {
        #[serde(flatten)]
        #[schema(inline)]
        grant: crate::oauth2::forms::CodeGrant,
        #[serde(flatten)]
        #[schema(inline)]
        client: crate::oauth2::forms::ClientCredentials,
    },
    /// `refresh_token`: a refresh token, and a narrower scope if wanted.
    RefreshToken {
        #[serde(flatten)]
        #[schema(inline)]
        grant: crate::oauth2::forms::RefreshGrant,
        #[serde(flatten)]
        #[schema(inline)]
        client: crate::oauth2::forms::ClientCredentials,
    },
}

/// The form of `POST /oauth2/revoke` (RFC 7009), assembled from the types
/// the handler reads.
#[derive(ToSchema)]
#[schema(as = TokenRevocationRequestDTO)]
#[allow(dead_code)]
pub struct RevokeRequestDto {
    #[serde(flatten)]
    #[schema(inline)]
    request: crate::oauth2::forms::RevokeRequest,
    #[serde(flatten)]
    #[schema(inline)]
    client: crate::oauth2::forms::ClientCredentials,
}

/// The form of `POST /oauth2/par` (RFC 9126): an authorization request's
/// parameters as `GET /oauth2/authorize` takes them (`nonce`, `prompt`,
/// `response_mode`, `max_age`, `ui_locales` and `login_hint` too), or a
/// request object holding them, and the client's credentials.
#[derive(ToSchema)]
#[schema(as = PushedAuthorizationRequestDTO)]
#[allow(dead_code)]
pub struct PushedRequestDto {
    /// Only `code`.
    response_type: Option<String>,
    /// One of the client's registered addresses, exactly (a registered `http`
    /// address on a loopback IP literal at any port, RFC 8252 §7.3).
    redirect_uri: Option<String>,
    /// Scopes separated by a space.
    #[schema(example = "openid profile")]
    scope: Option<String>,
    /// Returned unchanged; at most 2048 characters. Required, but of
    /// `fapi2` clients and of `fapi-ru` clients asking for `openid`.
    state: Option<String>,
    /// BASE64URL(SHA256(ASCII(code_verifier))): 43 characters.
    #[schema(pattern = "^[A-Za-z0-9_-]{43}$")]
    code_challenge: Option<String>,
    /// Only `S256`.
    #[schema(example = "S256")]
    code_challenge_method: Option<String>,
    /// A request object (RFC 9101) holding the parameters instead: a JWT
    /// signed with one of the client's keys.
    request: Option<String>,
    #[serde(flatten)]
    #[schema(inline)]
    client: crate::oauth2::forms::ClientCredentials,
}

/// The form of `POST /oauth2/authorize` (OpenID Connect Core §3.1.2.1):
/// the parameters of `GET /oauth2/authorize` ([`AuthorizeQuery`], read
/// by the same reader), each at most once.
#[derive(ToSchema)]
#[schema(as = AuthorizationRequestFormDTO)]
#[allow(dead_code)]
pub struct AuthorizeFormDto {
    /// Only `code`.
    #[schema(example = "code")]
    response_type: String,
    /// A registered client.
    #[schema(example = "demo-app")]
    client_id: String,
    /// One of the client's registered addresses, exactly (a registered `http`
    /// address on a loopback IP literal at any port, RFC 8252 §7.3).
    redirect_uri: String,
    /// Scopes separated by a space.
    #[schema(example = "openid profile")]
    scope: String,
    /// Returned unchanged; at most 2048 characters. Required, but of
    /// `fapi2` clients and of `fapi-ru` clients asking for `openid`.
    #[schema(min_length = 1, max_length = 2048)]
    state: Option<String>,
    /// BASE64URL(SHA256(ASCII(code_verifier))): 43 characters.
    #[schema(pattern = "^[A-Za-z0-9_-]{43}$")]
    code_challenge: String,
    /// Only `S256`.
    #[schema(example = "S256")]
    code_challenge_method: String,
    /// As in `GET /oauth2/authorize`: `nonce`, `prompt`, `response_mode`,
    /// `max_age`, `ui_locales`, `login_hint`, `id_token_hint`, `request`,
    /// `request_uri` and `dpop_jkt` too.
    #[schema(min_length = 1, max_length = 512)]
    nonce: Option<String>,
}

/// The form of `POST /oauth2/introspect` (RFC 7662), assembled from the
/// types the handler reads.
#[derive(ToSchema)]
#[schema(as = TokenIntrospectionRequestDTO)]
#[allow(dead_code)]
pub struct IntrospectionRequestDto {
    #[serde(flatten)]
    #[schema(inline)]
    request: crate::oauth2::forms::IntrospectionRequest,
    #[serde(flatten)]
    #[schema(inline)]
    client: crate::oauth2::forms::ClientCredentials,
}

/// `LoginStepRequestDTO`: the form of `POST /login`; which fields apply
/// depends on the current `stepType`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[schema(as = LoginStepRequestDTO)]
pub struct LoginStepRequest {
    /// `pageData.authenticationFlowContext.csrf`; the `X-XSRF-TOKEN` header may carry it instead.
    #[serde(rename = "_csrf")]
    #[schema(value_type = String)]
    pub csrf: Option<String>,
    /// The login (`username-password`) or the phone number (`phone`).
    #[schema(nullable = false)]
    pub principal: Option<String>,
    /// The password (`username-password`, `password`), the code (`sms-otp`,
    /// `email-otp`), the passkey credential's JSON (`passkey`), or the new
    /// passkey's credential JSON (`passkey-enrolment`).
    #[schema(nullable = false, format = Password)]
    pub credentials: Option<String>,
    /// `consent`: the accepted scope groups, comma-separated (or one per
    /// checkbox, on the page shown without JavaScript).
    #[serde(default)]
    #[schema(nullable = false, value_type = String, required = false)]
    pub selected_scope_groups: ScopeGroups,
    /// The CAPTCHA token, when `captchaRequired` is true.
    #[serde(rename = "smart-token")]
    #[schema(nullable = false)]
    pub smart_token: Option<String>,
    /// `consent`: any value refuses the consent.
    #[schema(nullable = false)]
    pub deny: Option<String>,
    /// `sms-otp`, `email-otp`: any value asks for a new code instead.
    #[schema(nullable = false)]
    pub resend: Option<String>,
    /// `passkey-enrolment`: any value declines the offer to create a passkey.
    #[schema(nullable = false)]
    pub decline: Option<String>,
}

/// `POST /login/passkey`: the answer of `navigator.credentials.get`.
#[derive(ToSchema)]
#[schema(as = PasskeySignInRequestDTO)]
#[allow(dead_code)]
pub struct PasskeySignInRequest {
    /// `pageData.authenticationFlowContext.csrf`.
    #[schema(rename = "_csrf")]
    csrf: String,
    /// The credential's JSON (WebAuthn's `PublicKeyCredential` JSON form), at most 16 KiB.
    #[schema(max_length = 16384)]
    credential: String,
}

/// The scope groups a consent accepts, in the order given, each once.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "Option<String>")]
pub struct ScopeGroups(pub Vec<String>);

impl From<Option<String>> for ScopeGroups {
    fn from(value: Option<String>) -> Self {
        Self::of(value.as_deref())
    }
}

impl ScopeGroups {
    fn of<'a>(values: impl IntoIterator<Item = &'a str>) -> Self {
        let mut groups: Vec<String> = Vec::new();
        for group in values.into_iter().flat_map(|v| v.split(',')).map(str::trim).filter(|g| !g.is_empty()) {
            if !groups.iter().any(|g| g == group) {
                groups.push(group.to_owned());
            }
        }
        Self(groups)
    }
}

impl LoginStepRequest {
    /// The step's form, read leniently ([`Form::read_lenient`]): a field
    /// given twice or holding a NUL is taken as absent (the contract has no
    /// error for either, so a repeated password is a wrong one), except the
    /// consent's checkboxes, each of which counts.
    pub fn read(form: &Form) -> Self {
        // Every field is optional text (an empty one absent): nothing can fail.
        let mut request: Self = form.read_lenient().unwrap_or_default();
        request.selected_scope_groups = ScopeGroups::of(form.all("selected_scope_groups"));
        request
    }
}

/// The form of `POST /login/user-settings/auth-method`.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = LoginAuthMethodRequestDTO)]
pub struct AuthMethodRequest {
    /// `PASSWORD` or `PHONE`.
    #[serde(rename = "authMethod")]
    #[schema(inline, value_type = values::AuthMethod)]
    pub auth_method: portico_model::login::AuthMethod,
    /// Required unless the `X-XSRF-TOKEN` header is sent.
    #[serde(rename = "_csrf")]
    #[schema(nullable = false)]
    pub csrf: Option<String>,
}

/// The form of `POST /login/user-settings/locale` (the language switch of a
/// page shown without JavaScript).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[schema(as = LoginLocaleFormDTO)]
pub struct LocaleForm {
    /// `ru` or `en`.
    #[schema(inline, value_type = values::Locale)]
    pub locale: Option<portico_model::login::Locale>,
    /// The `XSRF-TOKEN` cookie's value.
    #[serde(rename = "_csrf")]
    #[schema(value_type = String)]
    pub csrf: Option<String>,
}

/// The form of `POST /login/user-settings/otp-method`.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = LoginOtpMethodRequestDTO)]
pub struct OtpMethodRequest {
    /// `email` (the contract's switch from SMS); `sms` switches the e-mail
    /// step back to SMS (Portico's way back).
    #[serde(rename = "otpMethod")]
    #[schema(inline, value_type = values::OtpMethod)]
    pub otp_method: portico_model::otp::OtpChannel,
    /// Required unless the `X-XSRF-TOKEN` header is sent.
    #[serde(rename = "_csrf")]
    #[schema(nullable = false)]
    pub csrf: Option<String>,
}

/// The query of `PATCH /login/user-settings/locale`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LocaleQuery {
    /// `ru` or `en`.
    #[param(inline, value_type = values::Locale)]
    pub locale: Option<portico_model::login::Locale>,
}

/// `X-XSRF-TOKEN`, required.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)]
pub struct XsrfHeader {
    /// `authenticationFlowContext.csrf` or `errorPageContext.csrf`.
    #[param(rename = "X-XSRF-TOKEN")]
    xsrf: String,
}

/// `X-XSRF-TOKEN`, instead of the `_csrf` field.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)]
pub struct OptionalXsrfHeader {
    /// The CSRF token, when the form has no `_csrf`.
    #[param(value_type = String, required = false, rename = "X-XSRF-TOKEN")]
    xsrf: Option<String>,
}

/// The login cookies a browser keeps (all optional: their absence is an answer too).
#[derive(IntoParams)]
#[into_params(parameter_in = Cookie)]
#[allow(dead_code)]
pub struct LoginCookies {
    /// The current login process.
    #[param(value_type = String, required = false)]
    authentication_flow: Option<String>,
    /// Signed: where to return the browser when the process is gone.
    #[param(value_type = String, required = false)]
    login_client_entry: Option<String>,
    /// The CSRF cookie of the double submit.
    #[param(value_type = String, required = false, rename = "XSRF-TOKEN")]
    xsrf: Option<String>,
    /// Signed: the previous failed password or code attempt.
    #[param(value_type = String, required = false)]
    step_error_details: Option<String>,
    /// A hint to show the CAPTCHA; the server decides for itself.
    #[param(value_type = String, required = false, rename = "svc.captcha.required")]
    captcha_required: Option<String>,
}

/// The cookies of `GET /login/restart`.
#[derive(IntoParams)]
#[into_params(parameter_in = Cookie)]
#[allow(dead_code)]
pub struct RestartCookies {
    /// The process that ended in an error.
    #[param(value_type = String, required = false)]
    failed_authentication_flow_id: Option<String>,
    /// Signed: where to return the browser when the process is gone.
    #[param(value_type = String, required = false)]
    login_client_entry: Option<String>,
}

/// The cookies of the locale switch.
#[derive(IntoParams)]
#[into_params(parameter_in = Cookie)]
#[allow(dead_code)]
pub struct LocaleCookies {
    /// The current login process.
    #[param(value_type = String, required = false)]
    authentication_flow: Option<String>,
    /// On the error page: the process that ended in an error.
    #[param(value_type = String, required = false)]
    failed_authentication_flow_id: Option<String>,
    /// The CSRF cookie of the double submit.
    #[param(value_type = String, required = false, rename = "XSRF-TOKEN")]
    xsrf: Option<String>,
}

/// The cookies of `GET /error`.
#[derive(IntoParams)]
#[into_params(parameter_in = Cookie)]
#[allow(dead_code)]
pub struct ErrorPageCookies {
    /// Signed: what to show; read and cleared.
    #[param(value_type = String, required = false)]
    error_page_details: Option<String>,
    /// The process to restart or to take the language from.
    #[param(value_type = String, required = false)]
    failed_authentication_flow_id: Option<String>,
}

/// The cookies of `GET /oauth2/authorize`.
#[derive(IntoParams)]
#[into_params(parameter_in = Cookie)]
#[allow(dead_code)]
pub struct AuthorizeCookies {
    /// The device, kept for a year.
    #[param(value_type = String, required = false, rename = "svc.device.deviceId")]
    device_id: Option<String>,
    /// The login process that has just completed for this very request.
    #[param(value_type = String, required = false)]
    authentication_flow: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_step_form_reads_every_field_and_a_repeated_one_is_absent() {
        let form = Form::parse(
            b"_csrf=t&principal=ivan&credentials=a&credentials=b&smart-token=s&deny=1&resend=1\
              &selected_scope_groups=profile,email&selected_scope_groups=phone&selected_scope_groups=email",
        );
        let request = LoginStepRequest::read(&form);
        assert_eq!(request.csrf.as_deref(), Some("t"));
        assert_eq!(request.principal.as_deref(), Some("ivan"));
        assert_eq!(request.credentials, None, "given twice: no password, so a wrong one");
        assert_eq!(request.smart_token.as_deref(), Some("s"));
        assert_eq!((request.deny.is_some(), request.resend.is_some()), (true, true));
        assert_eq!(request.selected_scope_groups.0, ["profile", "email", "phone"], "each checkbox counts, once");
        let empty = LoginStepRequest::read(&Form::parse(b"_csrf=t&selected_scope_groups="));
        assert_eq!((empty.csrf.as_deref(), empty.selected_scope_groups.0.len()), (Some("t"), 0), "none selected");
        let nothing = LoginStepRequest::read(&Form::parse(b""));
        assert_eq!((nothing.csrf, nothing.selected_scope_groups), (None, ScopeGroups::default()));
    }

    #[test]
    fn a_settings_form_names_a_method_it_knows() {
        let form = Form::parse(b"authMethod=PHONE&_csrf=t");
        let request: AuthMethodRequest = form.read_lenient().unwrap();
        assert_eq!(request.auth_method, portico_model::login::AuthMethod::Phone);
        assert!(Form::parse(b"authMethod=EMAIL").read_lenient::<AuthMethodRequest>().is_err());
        assert!(Form::parse(b"authMethod=PHONE&authMethod=PHONE").read_lenient::<AuthMethodRequest>().is_err());
        let request: OtpMethodRequest = Form::parse(b"otpMethod=email").read_lenient().unwrap();
        assert_eq!((request.otp_method, request.csrf), (portico_model::otp::OtpChannel::Email, None));
    }
}
