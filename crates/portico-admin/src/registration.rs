//! Dynamic client registration (RFC 7591) at `POST /oauth2/register`, and
//! its management (RFC 7592) at `/oauth2/register/{client_id}`: a third
//! party registers itself with the bank's initial access token (or a
//! one-time one an operator issued, while registration is on), and reads,
//! replaces or removes its registration with the registration access token
//! it was given (stored only as its hash).
//!
//! The rules are the admin API's ([`AdminService::create_client`] and
//! [`AdminService::update_client`] judge every field), and stricter on
//! redirect addresses: `https`, or `http` on a loopback address, never a
//! private-use scheme. Metadata Portico does not know is ignored (RFC 7591
//! §2); metadata it knows but cannot honour is refused. Errors are the
//! RFC's: `invalid_redirect_uri`, `invalid_client_metadata`,
//! `invalid_software_statement`, `unapproved_software_statement` (400), and
//! `invalid_token` (401) for a missing or wrong token; nothing is
//! registered or changed by a refused request.
//!
//! A `software_statement` (RFC 7591 §2.3) is a JWT an issuer the bank
//! trusts (a directory of third parties, `registration.software_statement_issuers`)
//! signed about the client software: its signature is checked with that
//! issuer's keys, its `exp`, `nbf` and `iat` against Portico's clock, and
//! its claims take precedence over the same members of the body. A
//! statement of an issuer not configured is `unapproved_software_statement`;
//! with `registration.require_software_statement` a registration (and a
//! replacement) without one is `invalid_software_statement`.

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use portico_api::{PathParams, Problem};
use portico_crypto::jose::{self, AssertionError, KeySet};
use portico_crypto::jwt::Algorithm;
use portico_model::audit::Actor;
use portico_model::client::{AuthMethod, Client, ClientSecurity, SecurityProfile};
use portico_model::ids::ClientId;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::service::{AdminService, ClientChanges, NewClient, SecurityChanges, ServiceError};

/// Largest registration body read.
pub const MAX_BODY: usize = 64 * 1024;
/// The grant types Portico serves.
const GRANT_TYPES: [&str; 2] = ["authorization_code", "refresh_token"];

/// What the registration endpoints share.
pub struct Registration {
    pub service: Arc<AdminService>,
    /// `registration.initial_access_token`; `None`: registration is off.
    pub initial_access_token: Option<String>,
    /// The issuer, for `registration_client_uri`.
    pub issuer: String,
    /// Whose software statements are trusted, and whether one is required.
    pub statements: SoftwareStatements,
    /// `registration.require_approval`: new clients wait for an operator.
    pub hold_for_approval: bool,
}

/// An issuer of software statements the bank trusts, with its public keys.
pub struct TrustedIssuer {
    /// The statements' `iss`.
    pub issuer: String,
    pub keys: KeySet,
}

/// The software statement rules (`registration.software_statement_issuers`,
/// `registration.require_software_statement`).
#[derive(Default)]
pub struct SoftwareStatements {
    pub issuers: Vec<TrustedIssuer>,
    /// Whether a registration must carry a statement of a trusted issuer.
    pub required: bool,
}

/// Claims of a software statement that are about the JWT, not the client,
/// and members a statement may not set.
const NOT_METADATA: [&str; 10] =
    ["iss", "sub", "aud", "exp", "nbf", "iat", "jti", "client_id", "client_secret", "software_statement"];

impl SoftwareStatements {
    /// The metadata a statement asserts, once its signature and times are
    /// checked (at `now`, Unix seconds).
    ///
    /// # Errors
    /// `invalid_software_statement` for a statement that is not a JWT, is
    /// badly signed, expired or not yet valid; `unapproved_software_statement`
    /// for one of an issuer not trusted here.
    fn verify(&self, statement: &str, now: i64) -> Result<serde_json::Map<String, Value>, RegistrationError> {
        let invalid = |why: String| RegistrationError::statement("invalid_software_statement", why);
        let parsed = jose::Assertion::parse(statement).map_err(|_| invalid("not a signed JWT".into()))?;
        let issuer = parsed.claims().get("iss").and_then(Value::as_str);
        let issuer = issuer.ok_or_else(|| invalid("has no iss".into()))?;
        let Some(trusted) = self.issuers.iter().find(|trusted| trusted.issuer == issuer) else {
            return Err(RegistrationError::statement(
                "unapproved_software_statement",
                format!("the issuer {issuer:?} is not one this bank trusts"),
            ));
        };
        parsed.verify_signature(&trusted.keys).map_err(|error| {
            invalid(match error {
                AssertionError::UnknownKey => "no key of its issuer matches its kid and alg".into(),
                AssertionError::Algorithm(alg, _) => {
                    format!("is signed with {alg}; statements are signed with PS256, ES256, EdDSA or RS256")
                }
                _ => "its signature does not verify with its issuer's keys".into(),
            })
        })?;
        let time = |name: &str| {
            parsed.claims().get(name).map(|v| v.as_i64().ok_or_else(|| invalid(format!("{name} is not a number"))))
        };
        if let Some(exp) = time("exp").transpose()?
            && exp + jose::LEEWAY <= now
        {
            return Err(invalid("has expired".into()));
        }
        for name in ["nbf", "iat"] {
            if time(name).transpose()?.is_some_and(|at| at > now + jose::LEEWAY) {
                return Err(invalid(format!("is not valid yet ({name} in the future)")));
            }
        }
        let mut claims = parsed.claims().as_object().cloned().unwrap_or_default();
        claims.retain(|name, _| !NOT_METADATA.contains(&name.as_str()));
        Ok(claims)
    }
}

pub type RegistrationState = Arc<Registration>;

pub fn router(state: RegistrationState) -> axum::Router {
    use axum::routing::{get, post};
    axum::Router::new()
        .route("/oauth2/register", post(register))
        .route("/oauth2/register/{client_id}", get(read).put(replace).delete(remove))
        .with_state(state)
}

/// An RFC 7591 error answer.
#[derive(Debug)]
pub struct RegistrationError {
    status: StatusCode,
    error: &'static str,
    description: String,
    /// A 401's challenge (RFC 6750 §3): `Bearer` alone when no token came.
    challenge: portico_tokens::Challenge,
}

impl RegistrationError {
    fn new(status: StatusCode, error: &'static str, description: impl Into<String>) -> Self {
        let challenge = portico_tokens::Challenge::InvalidToken;
        Self { status, error, description: description.into(), challenge }
    }

    fn metadata(description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_client_metadata", description)
    }

    fn redirect(description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_redirect_uri", description)
    }

    fn statement(error: &'static str, description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, error, format!("software_statement: {}", description.into()))
    }

    fn token(description: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "invalid_token", description)
    }

    /// A request that carried no token (RFC 6750 §3.1: no error code in
    /// the challenge).
    fn no_token(description: impl Into<String>) -> Self {
        Self { challenge: portico_tokens::Challenge::Credentials, ..Self::token(description) }
    }

    fn from_service(error: ServiceError) -> Self {
        match error {
            ServiceError::Invalid(problems) => {
                let redirect =
                    problems.iter().any(|p| p.place.contains("RedirectUris") || p.place.starts_with("redirect"));
                let described = describe(&problems);
                if redirect { Self::redirect(described) } else { Self::metadata(described) }
            }
            ServiceError::Storage(e) => {
                tracing::warn!(error = %e, "client registration failed in storage");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "temporarily_unavailable",
                    "the registration could not be stored; try again",
                )
            }
            other => Self::metadata(other.to_string()),
        }
    }
}

/// The problems in RFC 7591's vocabulary: the admin API's field names
/// become the metadata names.
fn describe(problems: &[Problem]) -> String {
    problems.iter().map(|p| format!("{}: {}", snake(&p.place), p.message)).collect::<Vec<_>>().join("; ")
}

fn snake(place: &str) -> String {
    let place = match place {
        "nameRu" | "nameEn" => "client_name",
        "secret" => "client_secret",
        other => other,
    };
    place.chars().fold(String::new(), |mut out, c| {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
        out
    })
}

impl IntoResponse for RegistrationError {
    fn into_response(self) -> Response {
        let mut response = no_store(
            (self.status, Json(json!({ "error": self.error, "error_description": self.description }))).into_response(),
        );
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, self.challenge.header());
        }
        response
    }
}

/// Client metadata as RFC 7591 §2 (and OpenID Connect Dynamic Client
/// Registration 1.0) name it. Unknown members are ignored.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(default)]
pub struct ClientMetadata {
    /// `https`, or `http` on a loopback address; no fragment. At least one.
    pub redirect_uris: Vec<String>,
    pub client_name: Option<String>,
    /// The name in Russian (OpenID Connect Registration §2.1: `client_name`
    /// with a language tag; `client_name#ru-RU` is taken as this too), for
    /// pages shown in Russian; left out, `client_name`.
    #[serde(rename = "client_name#ru")]
    pub client_name_ru: Option<String>,
    /// The name in English (`client_name#en`, `#en-GB`, …); left out,
    /// `client_name`.
    #[serde(rename = "client_name#en")]
    pub client_name_en: Option<String>,
    /// An `https` address of the client's logo.
    pub logo_uri: Option<String>,
    /// Space-separated, among `openid profile email phone`; default all four.
    pub scope: Option<String>,
    /// Among `authorization_code` and `refresh_token`; default both.
    pub grant_types: Option<Vec<String>>,
    /// `["code"]`, the only one.
    pub response_types: Option<Vec<String>>,
    /// `client_secret_basic` (default), `client_secret_post`, `client_secret_jwt`, `private_key_jwt`.
    pub token_endpoint_auth_method: Option<String>,
    /// The client's public keys (a JWK Set), for `private_key_jwt`.
    #[schema(value_type = Option<Object>)]
    pub jwks: Option<Value>,
    /// Where the client publishes its public keys, for `private_key_jwt`.
    pub jwks_uri: Option<String>,
    pub id_token_signed_response_alg: Option<String>,
    pub userinfo_signed_response_alg: Option<String>,
    pub access_token_signed_response_alg: Option<String>,
    pub introspection_signed_response_alg: Option<String>,
    /// JARM: the algorithm of the client's signed authorization responses.
    pub authorization_signed_response_alg: Option<String>,
    /// RFC 9126: authorization requests only pushed to `/oauth2/par`.
    pub require_pushed_authorization_requests: bool,
    /// RFC 9101: authorization requests only as signed request objects
    /// (needs `jwks` or `jwks_uri`).
    pub require_signed_request_object: bool,
    /// RFC 9101: the one algorithm of the client's request objects.
    pub request_object_signing_alg: Option<String>,
    /// RFC 9449: every token request must carry a DPoP proof.
    pub dpop_bound_access_tokens: bool,
    /// RFC 8705: every token request over mutual TLS, the access tokens
    /// bound to the client's certificate.
    pub tls_client_certificate_bound_access_tokens: bool,
    /// RFC 8705 §2.1.2, for `tls_client_auth`: exactly one of the subject
    /// DN (RFC 4514) and the four alternative names.
    pub tls_client_auth_subject_dn: Option<String>,
    pub tls_client_auth_san_dns: Option<String>,
    pub tls_client_auth_san_uri: Option<String>,
    pub tls_client_auth_san_ip: Option<String>,
    pub tls_client_auth_san_email: Option<String>,
    /// Portico's own: the rules the client is held to, `standard`, `fapi2`
    /// or `fapi-ru`; left out, the bank's default
    /// (`registration.default_security_profile`) on registration, the
    /// current one on a `PUT`. Never `standard` when that default, or the
    /// client's current profile, is stricter.
    pub security_profile: Option<String>,
    /// Portico's own: whether each refresh hands out a new refresh token;
    /// left out, the profile's default (on, except under `fapi2`).
    pub refresh_token_rotation: Option<bool>,
    pub post_logout_redirect_uris: Vec<String>,
    pub backchannel_logout_uri: Option<String>,
    /// A JWT of an issuer the bank trusts, asserting metadata that takes
    /// precedence over the body's (RFC 7591 §2.3).
    pub software_statement: Option<String>,
    /// On `PUT` (RFC 7592): the client's id, which must match.
    pub client_id: Option<String>,
    /// On `PUT`: ignored unless given, and then it must be the current one.
    pub client_secret: Option<String>,
}

/// The metadata read and checked: what the admin service takes.
struct Checked {
    /// The name for Russian pages and for English ones.
    name_ru: Option<String>,
    name_en: Option<String>,
    security: ClientSecurity,
    /// The profile the metadata names, if any.
    profile: Option<SecurityProfile>,
}

impl Checked {
    /// The profile named, unless it is `standard` under a stricter `floor`
    /// (the bank's default, or the client's current profile).
    fn profile_over(&self, floor: SecurityProfile) -> Result<Option<SecurityProfile>, RegistrationError> {
        if self.profile == Some(SecurityProfile::Standard) && floor != SecurityProfile::Standard {
            return Err(RegistrationError::metadata(format!(
                "security_profile: standard is below this client's {floor} profile; only an operator can lower it"
            )));
        }
        Ok(self.profile)
    }
}

fn algorithm(name: &str, value: Option<&str>) -> Result<Option<Algorithm>, RegistrationError> {
    value
        .map(|v| {
            Algorithm::parse(v).ok_or_else(|| {
                RegistrationError::metadata(format!("{name}: {v:?} is not one of RS256, PS256, ES256, EdDSA"))
            })
        })
        .transpose()
}

/// A request object's algorithm: one Portico verifies, never `none` or a
/// symmetric one.
fn request_object_algorithm(value: Option<&str>) -> Result<Option<Algorithm>, RegistrationError> {
    value
        .map(|v| {
            Algorithm::parse(v).ok_or_else(|| {
                RegistrationError::metadata(format!(
                    "request_object_signing_alg: {v:?} is not one of PS256, ES256, EdDSA, RS256"
                ))
            })
        })
        .transpose()
}

impl ClientMetadata {
    fn check(&self) -> Result<Checked, RegistrationError> {
        if self.redirect_uris.is_empty() {
            return Err(RegistrationError::redirect("redirect_uris: at least one redirect URI"));
        }
        for uri in self.redirect_uris.iter().chain(&self.post_logout_redirect_uris) {
            check_redirect(uri).map_err(RegistrationError::redirect)?;
        }
        if let Some(types) = &self.grant_types
            && (types.iter().any(|t| !GRANT_TYPES.contains(&t.as_str()))
                || !types.iter().any(|t| t == "authorization_code"))
        {
            return Err(RegistrationError::metadata(
                "grant_types: authorization_code, and refresh_token if wanted; no other grant is served",
            ));
        }
        if self.response_types.as_ref().is_some_and(|types| types.iter().any(|t| t != "code")) {
            return Err(RegistrationError::metadata("response_types: only code is served"));
        }
        if let Some(logo) = &self.logo_uri
            && !url::Url::parse(logo).is_ok_and(|u| u.scheme() == "https" && u.host().is_some())
        {
            return Err(RegistrationError::metadata("logo_uri: an absolute https address"));
        }
        let method = match self.token_endpoint_auth_method.as_deref() {
            None => AuthMethod::ClientSecretBasic,
            Some(name) => AuthMethod::parse(name).ok_or_else(|| {
                RegistrationError::metadata(format!(
                    "token_endpoint_auth_method: {name:?} is not one of client_secret_basic, client_secret_post, \
                     client_secret_jwt, private_key_jwt, tls_client_auth, self_signed_tls_client_auth"
                ))
            })?,
        };
        let security = ClientSecurity {
            token_endpoint_auth_method: method,
            jwks: self.jwks.clone(),
            jwks_uri: self.jwks_uri.clone(),
            id_token_signed_response_alg: algorithm(
                "id_token_signed_response_alg",
                self.id_token_signed_response_alg.as_deref(),
            )?,
            userinfo_signed_response_alg: algorithm(
                "userinfo_signed_response_alg",
                self.userinfo_signed_response_alg.as_deref(),
            )?,
            access_token_signed_response_alg: algorithm(
                "access_token_signed_response_alg",
                self.access_token_signed_response_alg.as_deref(),
            )?,
            introspection_signed_response_alg: algorithm(
                "introspection_signed_response_alg",
                self.introspection_signed_response_alg.as_deref(),
            )?,
            authorization_signed_response_alg: algorithm(
                "authorization_signed_response_alg",
                self.authorization_signed_response_alg.as_deref(),
            )?,
            logo_uri: self.logo_uri.clone(),
            require_pushed_authorization_requests: self.require_pushed_authorization_requests,
            require_signed_request_object: self.require_signed_request_object,
            request_object_signing_alg: request_object_algorithm(self.request_object_signing_alg.as_deref())?,
            dpop_bound_access_tokens: self.dpop_bound_access_tokens,
            tls_client_certificate_bound_access_tokens: self.tls_client_certificate_bound_access_tokens,
            tls_client_auth_subject_dn: self.tls_client_auth_subject_dn.clone(),
            tls_client_auth_san_dns: self.tls_client_auth_san_dns.clone(),
            tls_client_auth_san_uri: self.tls_client_auth_san_uri.clone(),
            tls_client_auth_san_ip: self.tls_client_auth_san_ip.clone(),
            tls_client_auth_san_email: self.tls_client_auth_san_email.clone(),
            security_profile: SecurityProfile::Standard,
            refresh_token_rotation: self.refresh_token_rotation,
        };
        let profile = self
            .security_profile
            .as_deref()
            .map(|name| {
                SecurityProfile::parse(name).ok_or_else(|| {
                    RegistrationError::metadata(format!(
                        "security_profile: {name:?} is not one of standard, fapi2, fapi-ru"
                    ))
                })
            })
            .transpose()?;
        // A name in one language only serves the other too.
        let plain = self.client_name.as_ref();
        let name_ru = self.client_name_ru.as_ref().or(plain).or(self.client_name_en.as_ref()).cloned();
        let name_en = self.client_name_en.as_ref().or(plain).or(self.client_name_ru.as_ref()).cloned();
        Ok(Checked { name_ru, name_en, security, profile })
    }
}

/// A redirect address a third party may register: absolute, without a
/// fragment or user information, `https`, or `http` on a loopback address.
fn check_redirect(uri: &str) -> Result<(), String> {
    crate::service::check_uri(uri)?;
    let scheme = uri.split(':').next().unwrap_or_default().to_ascii_lowercase();
    if scheme == "https" || scheme == "http" {
        Ok(())
    } else {
        Err(format!("{uri}: a registered client's addresses are https (or http on a loopback address)"))
    }
}

/// The JSON body, as RFC 7591 asks: `application/json`, at most
/// [`MAX_BODY`], with what its software statement asserts put over it.
async fn read_metadata(
    registration: &Registration,
    headers: &HeaderMap,
    body: Body,
) -> Result<ClientMetadata, RegistrationError> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json")));
    if !json {
        return Err(RegistrationError::metadata("the body must be application/json"));
    }
    let bytes = axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|_| RegistrationError::metadata(format!("the body is larger than {MAX_BODY} bytes")))?;
    let not_metadata = |e: serde_json::Error| RegistrationError::metadata(format!("not valid client metadata: {e}"));
    let mut metadata: serde_json::Map<String, Value> = serde_json::from_slice(&bytes).map_err(not_metadata)?;
    // `null` is no statement, as it is no value for every other member.
    if metadata.get("software_statement").is_some_and(Value::is_null) {
        metadata.remove("software_statement");
    }
    match metadata.get("software_statement") {
        Some(Value::String(statement)) => {
            let now = registration.service.clock.now().unix_timestamp();
            let asserted = registration.statements.verify(statement, now)?;
            metadata.extend(asserted);
        }
        Some(_) => return Err(RegistrationError::statement("invalid_software_statement", "a JWT, as a string")),
        None if registration.statements.required => {
            return Err(RegistrationError::statement(
                "invalid_software_statement",
                "this bank registers only clients with a software statement of an issuer it trusts",
            ));
        }
        None => {}
    }
    refuse_what_is_not_offered(&metadata)?;
    take_regional_names(&mut metadata);
    serde_json::from_value(Value::Object(metadata)).map_err(not_metadata)
}

/// `client_name` tagged with a regional variant of Russian or English
/// (`client_name#ru-RU`, `client_name#en-GB`; tags are case-insensitive,
/// BCP 47) as the language's own name, unless that is given too; names in
/// other languages are not kept (the pages speak Russian and English).
fn take_regional_names(metadata: &mut serde_json::Map<String, Value>) {
    for language in ["ru", "en"] {
        let exact = format!("client_name#{language}");
        if metadata.get(&exact).is_some_and(|value| !value.is_null()) {
            continue;
        }
        let regional = metadata.keys().find(|key| {
            key.strip_prefix("client_name#")
                .and_then(|tag| tag.split('-').next())
                .is_some_and(|primary| primary.eq_ignore_ascii_case(language))
        });
        if let Some(key) = regional.cloned()
            && let Some(value) = metadata.remove(&key)
        {
            metadata.insert(exact, value);
        }
    }
}

/// Members of OpenID Connect Dynamic Client Registration 1.0 (and of the
/// specifications beside it) that ask for what Portico does not do, with
/// what to do instead. Ignored, they would leave the client believing its
/// tokens encrypted, its logouts announced or its users re-authenticated;
/// RFC 7591 §2 lets a server refuse a value it does not support, so a
/// registration naming one is refused.
const NOT_OFFERED: [(&str, &str); 12] = [
    ("id_token_encrypted_response_alg", "Portico signs ID tokens and does not encrypt them"),
    ("id_token_encrypted_response_enc", "Portico signs ID tokens and does not encrypt them"),
    (
        "userinfo_encrypted_response_alg",
        "Portico signs userinfo answers (userinfo_signed_response_alg) and does not encrypt them",
    ),
    (
        "userinfo_encrypted_response_enc",
        "Portico signs userinfo answers (userinfo_signed_response_alg) and does not encrypt them",
    ),
    ("request_object_encryption_alg", "Portico takes signed request objects, not encrypted ones"),
    ("request_object_encryption_enc", "Portico takes signed request objects, not encrypted ones"),
    (
        "authorization_encrypted_response_alg",
        "Portico signs authorization responses (authorization_signed_response_alg) and does not encrypt them",
    ),
    (
        "authorization_encrypted_response_enc",
        "Portico signs authorization responses (authorization_signed_response_alg) and does not encrypt them",
    ),
    (
        "introspection_encrypted_response_alg",
        "Portico signs introspection answers (introspection_signed_response_alg) and does not encrypt them",
    ),
    (
        "introspection_encrypted_response_enc",
        "Portico signs introspection answers (introspection_signed_response_alg) and does not encrypt them",
    ),
    (
        "frontchannel_logout_uri",
        "Portico tells clients of a logout over the back channel; register backchannel_logout_uri",
    ),
    ("default_max_age", "send max_age with each authorization request that needs a recent login"),
];

/// Refuses metadata asking for what Portico does not do ([`NOT_OFFERED`],
/// and subject identifiers other than `public`); `null` asks for nothing.
fn refuse_what_is_not_offered(metadata: &serde_json::Map<String, Value>) -> Result<(), RegistrationError> {
    let given = |name: &str| metadata.get(name).filter(|value| !value.is_null());
    if let Some((name, instead)) = NOT_OFFERED.iter().find(|(name, _)| given(name).is_some()) {
        return Err(RegistrationError::metadata(format!("{name}: not offered; {instead}")));
    }
    match given("subject_type") {
        None => Ok(()),
        Some(Value::String(kind)) if kind == "public" => Ok(()),
        Some(_) => Err(RegistrationError::metadata(
            "subject_type: Portico issues public subject identifiers only (subject_types_supported)",
        )),
    }
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

/// The registration as RFC 7592 §3 answers a read or a replacement: with
/// the registration access token the client called with, which stays its
/// token (Portico keeps only its hash, and never rotates it unasked: an
/// answer lost on the way would leave the client without one).
fn managed_answer(registration: &Registration, client: &Client, token: &str) -> Value {
    let mut body = answer(registration, client);
    body["registration_access_token"] = token.into();
    body
}

/// The registration as RFC 7591 §3.2.1 answers it (without the secrets).
fn answer(registration: &Registration, client: &Client) -> Value {
    let security = &client.security;
    let mut body = json!({
        "client_id": client.client_id.as_str(),
        "client_id_issued_at": client.created_at.unix_timestamp(),
        "client_name": client.name.en,
        "redirect_uris": client.redirect_uris,
        "post_logout_redirect_uris": client.post_logout_redirect_uris,
        "scope": client.scopes.join(" "),
        "grant_types": GRANT_TYPES,
        "response_types": ["code"],
        "token_endpoint_auth_method": security.token_endpoint_auth_method.as_str(),
        "registration_client_uri": format!("{}/oauth2/register/{}", registration.issuer, client.client_id),
    });
    let mut put = |name: &str, value: Option<Value>| {
        if let Some(value) = value {
            body[name] = value;
        }
    };
    put("jwks", security.jwks.clone());
    put("jwks_uri", security.jwks_uri.clone().map(Value::from));
    // The Russian name only where it is not the plain one, so that a
    // replacement renaming the client by `client_name` alone (sending the
    // rest of this answer back) renames it in both languages.
    put("client_name#ru", (client.name.ru != client.name.en).then(|| client.name.ru.clone().into()));
    put("logo_uri", security.logo_uri.clone().map(Value::from));
    put("backchannel_logout_uri", client.backchannel_logout_uri.clone().map(Value::from));
    // RFC 7591 §3.2.1: the answer names what the server provisioned too.
    // An algorithm the client left unset is the server's default, which
    // the specifications' own default (RS256 for ID tokens, JARM and
    // introspection answers) need not be: the answer says which signs.
    // Userinfo left unset stays plain JSON, so it is named only when set.
    let default = registration.service.signing_algorithm;
    for (name, alg) in [
        ("id_token_signed_response_alg", security.id_token_signed_response_alg),
        ("access_token_signed_response_alg", security.access_token_signed_response_alg),
        ("introspection_signed_response_alg", security.introspection_signed_response_alg),
        ("authorization_signed_response_alg", security.authorization_signed_response_alg),
    ] {
        put(name, Some(alg.unwrap_or(default).as_str().into()));
    }
    put("userinfo_signed_response_alg", security.userinfo_signed_response_alg.map(|alg| alg.as_str().into()));
    put("request_object_signing_alg", security.request_object_signing_alg.map(|alg| alg.as_str().into()));
    put("require_pushed_authorization_requests", security.require_pushed_authorization_requests.then_some(true.into()));
    put("require_signed_request_object", security.require_signed_request_object.then_some(true.into()));
    put("dpop_bound_access_tokens", security.dpop_bound_access_tokens.then_some(true.into()));
    for (name, value) in security.tls_client_auth_subject() {
        put(name, Some(value.into()));
    }
    put(
        "tls_client_certificate_bound_access_tokens",
        security.tls_client_certificate_bound_access_tokens.then_some(true.into()),
    );
    put("security_profile", Some(security.security_profile.as_str().into()));
    put("refresh_token_rotation", security.refresh_token_rotation.map(Value::from));
    if security.token_endpoint_auth_method != AuthMethod::PrivateKeyJwt {
        body["client_secret_expires_at"] = 0.into();
    }
    body
}

#[utoipa::path(
    post,
    path = "/oauth2/register",
    operation_id = "registerClient",
    tag = "registration",
    description = "RFC 7591: a third party registers itself with the bank's initial access token.",
    request_body = ClientMetadata,
    security(("initialAccessToken" = [])),
    responses(
        (status = 201, description = "Registered: the metadata, `client_id`, `client_secret` (for the secret \
                                      methods, shown once), `registration_access_token` (kept only as its hash) and \
                                      `registration_client_uri`.", body = Object),
        (status = 400, description = "`invalid_redirect_uri`, `invalid_client_metadata`, \
                                      `invalid_software_statement` or `unapproved_software_statement`; nothing \
                                      was registered.", body = Object),
        (status = 401, description = "`invalid_token`: no initial access token, a wrong one, or registration is off.",
         body = Object)
    )
)]
pub async fn register(State(registration): State<RegistrationState>, headers: HeaderMap, body: Body) -> Response {
    match register_client(&registration, &headers, body).await {
        Ok(body) => no_store((StatusCode::CREATED, Json(body)).into_response()),
        Err(error) => error.into_response(),
    }
}

async fn register_client(
    registration: &Registration,
    headers: &HeaderMap,
    body: Body,
) -> Result<Value, RegistrationError> {
    let Some(expected) = registration.initial_access_token.as_deref() else {
        let off = RegistrationError::token("dynamic registration is off at this bank");
        let challenge = portico_tokens::Challenge::for_request(headers, false);
        return Err(RegistrationError { challenge, ..off });
    };
    let given = bearer(headers).ok_or_else(|| RegistrationError::no_token("the initial access token is missing"))?;
    let configured = portico_crypto::constant_time_eq(given.as_bytes(), expected.as_bytes());
    let metadata = read_metadata(registration, headers, body).await?;
    let checked = metadata.check()?;
    let security_profile = checked.profile_over(registration.service.default_security_profile)?;
    // A one-time token is spent by the write that stores the client, so
    // that a mistaken body, or a write that fails, does not cost the third
    // party its token.
    let spends_initial_access_token = (!configured).then(|| portico_crypto::hash::token_hash(given));
    let registration_token = portico_crypto::random::token();
    let client_id = format!("dcr-{}", portico_crypto::random::token().chars().take(22).collect::<String>());
    let new = NewClient {
        client_id,
        secret: None,
        redirect_uris: metadata.redirect_uris,
        scope: metadata.scope,
        name_ru: checked.name_ru,
        name_en: checked.name_en,
        require_consent: true,
        post_logout_redirect_uris: metadata.post_logout_redirect_uris,
        logout_revokes_grants: false,
        backchannel_logout_uri: metadata.backchannel_logout_uri,
        security: checked.security,
        security_profile,
        registration_token_hash: Some(portico_crypto::hash::token_hash(&registration_token)),
        awaiting_approval: registration.hold_for_approval,
        spends_initial_access_token,
    };
    let (client, secret) =
        registration.service.create_client(&Actor::Registration, new).await.map_err(|error| match error {
            ServiceError::Forbidden(why) => RegistrationError::token(why),
            error => RegistrationError::from_service(error),
        })?;
    let mut body = answer(registration, &client);
    body["registration_access_token"] = registration_token.into();
    if let Some(statement) = metadata.software_statement {
        // Returned unmodified (RFC 7591 §3.2.1).
        body["software_statement"] = statement.into();
    }
    if client.security.token_endpoint_auth_method != AuthMethod::PrivateKeyJwt {
        body["client_secret"] = secret.into();
    }
    Ok(body)
}

/// The client whose registration access token the request carries, and
/// that token.
async fn managed<'h>(
    registration: &Registration,
    headers: &'h HeaderMap,
    client_id: &str,
) -> Result<(Client, &'h str), RegistrationError> {
    let given =
        bearer(headers).ok_or_else(|| RegistrationError::no_token("the registration access token is missing"))?;
    let client = registration
        .service
        .store
        .find_client(&ClientId::new(client_id))
        .await
        .map_err(|e| RegistrationError::from_service(ServiceError::Storage(e)))?;
    let hash = portico_crypto::hash::token_hash(given);
    // Compared even for an unknown client, so both answers take as long.
    let stored = client.as_ref().and_then(|c| c.registration_token_hash.as_deref()).unwrap_or_default();
    match client {
        Some(client) if portico_crypto::constant_time_eq(stored.as_bytes(), hash.as_bytes()) => Ok((client, given)),
        _ => Err(RegistrationError::token("the registration access token is not valid for this client")),
    }
}

#[utoipa::path(
    get,
    path = "/oauth2/register/{client_id}",
    operation_id = "readClientRegistration",
    tag = "registration",
    description = "RFC 7592: the client's registration, with its registration access token.",
    params(("client_id" = String, Path, description = "The registered client.")),
    security(("registrationAccessToken" = [])),
    responses(
        (status = 200, description = "The registered metadata, with `registration_client_uri` and \
                                      `registration_access_token` (the token the request presented; RFC 7592 \
                                      §3).", body = Object),
        (status = 401, description = "`invalid_token`.", body = Object)
    )
)]
pub async fn read(
    State(registration): State<RegistrationState>,
    headers: HeaderMap,
    PathParams(client_id): PathParams<String>,
) -> Response {
    match managed(&registration, &headers, &client_id).await {
        Ok((client, token)) => no_store(Json(managed_answer(&registration, &client, token)).into_response()),
        Err(error) => error.into_response(),
    }
}

#[utoipa::path(
    put,
    path = "/oauth2/register/{client_id}",
    operation_id = "replaceClientRegistration",
    tag = "registration",
    description = "RFC 7592: replaces the client's metadata; what the body leaves out returns to its default.",
    params(("client_id" = String, Path, description = "The registered client.")),
    request_body = ClientMetadata,
    security(("registrationAccessToken" = [])),
    responses(
        (status = 200, description = "The registered metadata now, with `registration_client_uri` and \
                                      `registration_access_token` (unchanged; RFC 7592 §3).", body = Object),
        (status = 400, description = "`invalid_redirect_uri`, `invalid_client_metadata`, \
                                      `invalid_software_statement` or `unapproved_software_statement`; nothing \
                                      was changed.", body = Object),
        (status = 401, description = "`invalid_token`.", body = Object)
    )
)]
pub async fn replace(
    State(registration): State<RegistrationState>,
    headers: HeaderMap,
    PathParams(client_id): PathParams<String>,
    body: Body,
) -> Response {
    let outcome = async {
        let (client, token) = managed(&registration, &headers, &client_id).await?;
        let metadata = read_metadata(&registration, &headers, body).await?;
        if metadata.client_id.as_deref() != Some(client_id.as_str()) {
            return Err(RegistrationError::metadata("client_id: the body names the client it replaces"));
        }
        if let Some(secret) = &metadata.client_secret
            && !portico_crypto::hash::client_secret_matches(&client.secret_hash, secret)
        {
            return Err(RegistrationError::metadata("client_secret: not the client's secret"));
        }
        let checked = metadata.check()?;
        let profile = checked.profile_over(client.security.security_profile)?;
        let security = checked.security;
        let before = client.security.token_endpoint_auth_method;
        let changes = ClientChanges {
            redirect_uris: Some(metadata.redirect_uris),
            scope: Some(metadata.scope.unwrap_or_else(|| "openid profile email phone".into())),
            name_ru: Some(checked.name_ru.unwrap_or_else(|| client_id.clone())),
            name_en: Some(checked.name_en.unwrap_or_else(|| client_id.clone())),
            require_consent: None,
            post_logout_redirect_uris: Some(metadata.post_logout_redirect_uris),
            logout_revokes_grants: None,
            backchannel_logout_uri: Some(metadata.backchannel_logout_uri),
            security: SecurityChanges { security_profile: profile, ..SecurityChanges::from(security) },
            // RFC 7592 §2.2: the client's whole registration, as it states it now.
            if_match: None,
        };
        let client = registration
            .service
            .update_client(&Actor::Registration, &client_id, changes)
            .await
            .map_err(RegistrationError::from_service)?;
        let mut body = managed_answer(&registration, &client, token);
        // A client that moves to a method whose secret it was never given
        // (to client_secret_jwt without a sealed secret, or from
        // private_key_jwt to a secret method) gets a new one, answered
        // once (RFC 7592 §2.2).
        let method = client.security.token_endpoint_auth_method;
        if (method == AuthMethod::ClientSecretJwt && client.secret_sealed.is_none())
            || (method.sends_secret() && before == AuthMethod::PrivateKeyJwt)
        {
            let secret = registration
                .service
                .rotate_client_secret(&Actor::Registration, &client_id, None)
                .await
                .map_err(RegistrationError::from_service)?;
            body["client_secret"] = secret.into();
        }
        Ok(body)
    }
    .await;
    match outcome {
        Ok(body) => no_store(Json(body).into_response()),
        Err(error) => error.into_response(),
    }
}

#[utoipa::path(
    delete,
    path = "/oauth2/register/{client_id}",
    operation_id = "deleteClientRegistration",
    tag = "registration",
    description = "RFC 7592: removes the client, with every grant and token issued to it.",
    params(("client_id" = String, Path, description = "The registered client.")),
    security(("registrationAccessToken" = [])),
    responses(
        (status = 204, description = "Removed."),
        (status = 401, description = "`invalid_token`.", body = Object)
    )
)]
pub async fn remove(
    State(registration): State<RegistrationState>,
    headers: HeaderMap,
    PathParams(client_id): PathParams<String>,
) -> Response {
    let outcome = async {
        managed(&registration, &headers, &client_id).await?;
        registration
            .service
            .delete_client(&Actor::Registration, &client_id)
            .await
            .map_err(RegistrationError::from_service)
    }
    .await;
    match outcome {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(error) => error.into_response(),
    }
}

fn no_store(mut response: Response) -> Response {
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
