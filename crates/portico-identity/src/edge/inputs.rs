//! What the identity endpoints read, as the document describes it: the
//! queries, forms, headers and cookies. The token and revoke forms are
//! assembled from the types their handlers read ([`crate::oauth2::forms`],
//! through the one strict deserializer, [`portico_model::form`]); the other
//! endpoints still read their parameters one by one (a repeated parameter
//! is an error, RFC 6749 §3.1), so their types here exist for the document
//! only, until they move the same way.

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
    pub enum Prompt {
        None,
        Login,
        Consent,
        SelectAccount,
    }

    #[derive(ToSchema)]
    #[schema(rename_all = "snake_case")]
    #[allow(dead_code)]
    pub enum ResponseMode {
        Query,
        FormPost,
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

/// The query of `GET /oauth2/authorize`. Each parameter at most once.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct AuthorizeQuery {
    /// Only `code`.
    #[param(inline, value_type = values::ResponseType)]
    response_type: String,
    /// BASE64URL(SHA256(ASCII(code_verifier))): 43 characters.
    #[param(example = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", pattern = "^[A-Za-z0-9_-]{43}$")]
    code_challenge: String,
    /// Only `S256`.
    #[param(inline, value_type = values::CodeChallengeMethod)]
    code_challenge_method: String,
    /// A registered client.
    #[param(example = "demo-app")]
    client_id: String,
    /// One of the client's registered addresses, exactly.
    #[param(example = "http://127.0.0.1:8080/demo/callback")]
    redirect_uri: String,
    /// Scopes separated by a space.
    #[param(example = "openid profile email phone")]
    scope: String,
    /// Returned unchanged; at most 2048 characters.
    #[param(min_length = 1, max_length = 2048)]
    state: String,
    /// Carried into the id_token; at most 512 characters.
    #[param(value_type = String, required = false, min_length = 1, max_length = 512)]
    nonce: Option<String>,
    /// `none`, `login`, `consent`, or `select_account` (answered as `login`).
    #[param(inline, value_type = values::Prompt, required = false)]
    prompt: Option<String>,
    /// `query` (the default: a 302 to `redirect_uri`) or `form_post` (a page
    /// that posts the response to `redirect_uri`).
    #[param(inline, value_type = values::ResponseMode, required = false)]
    response_mode: Option<String>,
    /// Seconds: a single sign-on session authenticated longer ago does not count.
    #[param(value_type = u32, required = false, minimum = 0)]
    max_age: Option<u32>,
    /// Languages for the login pages, preferred first; those Portico does not speak are passed over.
    #[param(value_type = String, required = false, example = "en")]
    ui_locales: Option<String>,
    /// The login (or phone number) the first step shows.
    #[param(value_type = String, required = false, max_length = 256)]
    login_hint: Option<String>,
}

/// The parameters of RP-initiated logout (`GET /oauth2/logout`).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct LogoutQuery {
    /// An id_token Portico issued to the client (expired ones count): names
    /// the user, the client and the session to end.
    #[param(value_type = String, required = false)]
    id_token_hint: Option<String>,
    /// The client asking; must be the hint's `aud` when both are given.
    #[param(value_type = String, required = false, example = "demo-app")]
    client_id: Option<String>,
    /// One of the client's registered post-logout addresses, exactly.
    #[param(value_type = String, required = false)]
    post_logout_redirect_uri: Option<String>,
    /// Returned unchanged with the redirect.
    #[param(value_type = String, required = false)]
    state: Option<String>,
    /// Languages for the signed-out page, preferred first (`ru`, `en`).
    #[param(value_type = String, required = false, example = "en")]
    ui_locales: Option<String>,
    /// Accepted and not needed: a browser has one account.
    #[param(value_type = String, required = false)]
    logout_hint: Option<String>,
}

/// The form of `POST /oauth2/logout`: the parameters of `GET`.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct LogoutForm {
    #[schema(nullable = false)]
    id_token_hint: Option<String>,
    #[schema(nullable = false)]
    client_id: Option<String>,
    #[schema(nullable = false)]
    post_logout_redirect_uri: Option<String>,
    #[schema(nullable = false)]
    state: Option<String>,
    #[schema(nullable = false)]
    ui_locales: Option<String>,
    #[schema(nullable = false)]
    logout_hint: Option<String>,
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

/// `LoginStepRequestDTO`: the form of `POST /login`; which fields apply
/// depends on the current `stepType`.
#[derive(ToSchema)]
#[schema(as = LoginStepRequestDTO)]
#[allow(dead_code)]
pub struct LoginStepRequest {
    /// `pageData.authenticationFlowContext.csrf`; the `X-XSRF-TOKEN` header may carry it instead.
    #[schema(rename = "_csrf")]
    csrf: String,
    /// The login (`username-password`) or the phone number (`phone`).
    #[schema(nullable = false)]
    principal: Option<String>,
    /// The password (`username-password`, `password`) or the code (`sms-otp`, `email-otp`).
    #[schema(nullable = false, format = Password)]
    credentials: Option<String>,
    /// `consent`: the accepted scope groups, comma-separated.
    #[schema(nullable = false)]
    selected_scope_groups: Option<String>,
    /// The CAPTCHA token, when `captchaRequired` is true.
    #[schema(nullable = false, rename = "smart-token")]
    smart_token: Option<String>,
}

/// The form of `POST /login/user-settings/auth-method`.
#[derive(ToSchema)]
#[schema(as = LoginAuthMethodRequestDTO)]
#[allow(dead_code)]
pub struct AuthMethodRequest {
    /// `PASSWORD` or `PHONE`.
    #[schema(rename = "authMethod", inline, value_type = values::AuthMethod)]
    auth_method: String,
    /// Required unless the `X-XSRF-TOKEN` header is sent.
    #[schema(nullable = false, rename = "_csrf")]
    csrf: Option<String>,
}

/// The form of `POST /login/user-settings/locale` (the language switch of a
/// page shown without JavaScript).
#[derive(ToSchema)]
#[schema(as = LoginLocaleFormDTO)]
#[allow(dead_code)]
pub struct LocaleForm {
    /// `ru` or `en`.
    #[schema(inline, value_type = values::Locale)]
    locale: String,
    /// The `XSRF-TOKEN` cookie's value.
    #[schema(rename = "_csrf")]
    csrf: String,
}

/// The form of `POST /login/user-settings/otp-method`.
#[derive(ToSchema)]
#[schema(as = LoginOtpMethodRequestDTO)]
#[allow(dead_code)]
pub struct OtpMethodRequest {
    /// `email` (the contract's switch from SMS); `sms` switches the e-mail
    /// step back to SMS (Portico's way back).
    #[schema(rename = "otpMethod", inline, value_type = values::OtpMethod)]
    otp_method: String,
    /// Required unless the `X-XSRF-TOKEN` header is sent.
    #[schema(nullable = false, rename = "_csrf")]
    csrf: Option<String>,
}

/// The query of `PATCH /login/user-settings/locale`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct LocaleQuery {
    /// `ru` or `en`.
    #[param(inline, value_type = values::Locale)]
    locale: String,
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
