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

mod metadata;
mod statements;

use portico_api::no_store;
use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use portico_api::{PathParams, Problem};
use portico_model::audit::Actor;
use portico_model::client::{AuthMethod, Client, ClientSecurity, SecurityProfile};
use portico_model::ids::ClientId;
use portico_model::scope::OIDC_SCOPES;
use serde_json::{Value, json};

pub use metadata::ClientMetadata;
use metadata::read_metadata;
pub use statements::{SoftwareStatements, TrustedIssuer};

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
    /// What of mutual TLS this server can do: a registration that needs
    /// more is refused, as discovery does not offer it.
    pub certificates: portico_identity::settings::CertificateSupport,
}

impl Registration {
    /// Refuses `security` under `profile` when this server cannot serve it
    /// (RFC 7591 §2: metadata values the server does not support).
    fn check_supported(&self, security: &ClientSecurity, profile: SecurityProfile) -> Result<(), RegistrationError> {
        self.certificates.unmet(security, profile).map_or(Ok(()), |why| Err(RegistrationError::metadata(why)))
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
            // RFC 7592 §2: the client is gone (removed by a request that
            // raced this one), and its registration access token with it.
            ServiceError::NotFound(..) => Self::token("the registration access token is not valid for this client"),
            other => Self::metadata(other.to_string()),
        }
    }
}

/// The problems in RFC 7591's vocabulary: the admin API's field names
/// become the metadata names, and a problem two fields share (the Russian
/// and English names, both made from one `client_name`) is said once.
fn describe(problems: &[Problem]) -> String {
    let mut said: Vec<String> = Vec::new();
    for problem in problems {
        let line = format!("{}: {}", snake(&problem.place), problem.message);
        if !said.contains(&line) {
            said.push(line);
        }
    }
    said.join("; ")
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
        // RFC 7591 §3.2.2: ASCII; held to RFC 6749 §5.2's characters as
        // every OAuth error of Portico's is.
        let description = portico_model::text::oauth_description(&self.description);
        let mut response = no_store(
            (self.status, Json(json!({ "error": self.error, "error_description": description }))).into_response(),
        );
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, self.challenge.header());
        }
        response
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
    for (name, uri) in [
        ("logo_uri", &security.logo_uri),
        ("client_uri", &security.client_uri),
        ("policy_uri", &security.policy_uri),
        ("tos_uri", &security.tos_uri),
    ] {
        put(name, uri.clone().map(Value::from));
    }
    put("backchannel_logout_uri", client.backchannel_logout_uri.clone().map(Value::from));
    // RFC 7591 §3.2.1: the answer names what the server provisioned too.
    // An algorithm the client left unset is the server's default, which
    // the specifications' own default (RS256 for ID tokens, JARM and
    // introspection answers) need not be: the answer says which signs.
    // Userinfo left unset stays plain JSON, so it is named only when set.
    let default = registration.service.signing_algorithm;
    for (name, alg) in security.signing_choices() {
        let signs = if name == "userinfo_signed_response_alg" { alg } else { Some(alg.unwrap_or(default)) };
        put(name, signs.map(|alg| alg.as_str().into()));
    }
    put("token_endpoint_auth_signing_alg", security.token_endpoint_auth_signing_alg.map(|alg| alg.as_str().into()));
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
    // RFC 7591 §3.2.1: with a secret, when it expires (never); a key or
    // certificate client has none.
    if security.token_endpoint_auth_method.uses_secret() {
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
                                      methods only, shown once), `registration_access_token` (kept only as its hash) and \
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
    let checked = metadata.check(registration.certificates)?;
    let security_profile = checked.profile_over(registration.service.default_security_profile)?;
    let profile = security_profile.unwrap_or(registration.service.default_security_profile);
    registration.check_supported(&checked.security, profile)?;
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
    if let Some(secret) = secret {
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
        let checked = metadata.check(registration.certificates)?;
        let profile = checked.profile_over(client.security.security_profile)?;
        let security = checked.security;
        registration.check_supported(&security, profile.unwrap_or(client.security.security_profile))?;
        let before = client.security.token_endpoint_auth_method;
        let changes = ClientChanges {
            redirect_uris: Some(metadata.redirect_uris),
            scope: Some(metadata.scope.unwrap_or_else(|| OIDC_SCOPES.join(" "))),
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
        // (to client_secret_jwt without a sealed secret, or from a key or
        // certificate method to a secret one) gets a new one, answered
        // once (RFC 7592 §2.2).
        let method = client.security.token_endpoint_auth_method;
        if (method == AuthMethod::ClientSecretJwt && client.secret_sealed.is_none())
            || (method.sends_secret() && !before.uses_secret())
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
