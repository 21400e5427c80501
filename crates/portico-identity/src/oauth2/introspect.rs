//! `POST /oauth2/introspect` (operation `introspectToken`, RFC 7662), and
//! its signed answer (RFC 9701).
//!
//! The caller authenticates as a client, as at the token endpoint, or with
//! the internal token (`Authorization: Bearer <internal_token>`), the
//! credential the bank's own systems already hold. Any client may
//! introspect an access token, whoever it was issued to: the bank's
//! resource servers are clients, and the tokens they are handed were issued
//! to the apps that call them. A refresh token is only ever introspected by
//! its own client (no resource server is handed one); for anyone else, the
//! internal token's holder too, it is not active.
//!
//! A token that is live answers `active: true` with what it carries; one
//! that is unknown, malformed, expired, revoked (itself, or its grant), of a
//! blocked or removed user, or spent (a rotated refresh token) answers
//! exactly `{"active": false}`. `token_type_hint` needs no trust: both kinds
//! are tried. Nothing is changed or audited: introspection only reads.
//!
//! With `Accept: application/token-introspection+jwt` the answer is a JWT
//! (`typ: token-introspection+jwt`) signed with the calling client's
//! `introspection_signed_response_alg` (the server's default algorithm for
//! the internal token): `iss`, `aud` (the calling client, or
//! [`INTERNAL_AUDIENCE`]), `iat`, and `token_introspection`, the JSON
//! answer.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use portico_crypto::certificate::Presented;
use portico_model::client::Client;
use portico_model::ids::{ClientId, RefreshTokenHash};
use serde::Serialize;
use utoipa::ToSchema;

use super::MAX_FORM_BODY;
use super::client_auth::authenticate;
use super::error::OAuthError;
use super::forms::{ClientCredentials, IntrospectionRequest};
use super::params::read_form;
use crate::{Identity, IdentityState};
use portico_tokens::AccessTokenError;

/// The media type of a signed introspection answer (RFC 9701).
pub const JWT_MEDIA_TYPE: &str = "application/token-introspection+jwt";
/// Its `typ`.
const JWT_TYP: &str = "token-introspection+jwt";
/// The `aud` of a signed answer to the internal token's holder.
pub const INTERNAL_AUDIENCE: &str = "internal";

/// `TokenIntrospectionResponseDTO` (RFC 7662 §2.2): `active`, and for an
/// active token what it carries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ToSchema)]
#[schema(as = TokenIntrospectionResponseDTO)]
pub struct Introspection {
    /// Whether the token is live now.
    pub active: bool,
    /// The scopes granted, separated by a space.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, example = "openid profile")]
    pub scope: Option<String>,
    /// The client the token was issued to.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, example = "demo-app")]
    pub client_id: Option<String>,
    /// `Bearer` (or `DPoP` for a DPoP-bound one) for an access token, `refresh_token` for a refresh token.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, example = "Bearer")]
    pub token_type: Option<&'static str>,
    /// Expiry, seconds since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub exp: Option<i64>,
    /// Issue time, seconds since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub iat: Option<i64>,
    /// The user.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub sub: Option<String>,
    /// The token's audience (an access token's: its client).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub aud: Option<String>,
    /// The issuer.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub iss: Option<String>,
    /// An access token's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub jti: Option<String>,
    /// What a bound access token is bound to: `{"jkt": …}` for a DPoP key
    /// (RFC 9449 §6.2), `{"x5t#S256": …}` for a client certificate (RFC
    /// 8705 §3.2).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>, nullable = false)]
    pub cnf: Option<portico_tokens::Confirmation>,
}

/// The claims of a signed introspection answer (RFC 9701 §5).
#[derive(Serialize)]
struct SignedIntrospection<'a> {
    iss: &'a str,
    aud: &'a str,
    iat: i64,
    token_introspection: &'a Introspection,
}

#[utoipa::path(
    post,
    path = "/oauth2/introspect",
    operation_id = "introspectToken",
    tag = "oauth2",
    request_body(content = crate::edge::IntrospectionRequestDto, content_type = "application/x-www-form-urlencoded"),
    params(("Accept" = Option<String>, Header,
            description = "`application/token-introspection+jwt` for a signed answer (RFC 9701); otherwise JSON.")),
    security(("clientBasic" = []), ("internalToken" = []), ()),
    responses(
        (status = 200, description = "The token's state: `{\"active\": false}` for anything not live. \
                                      A JWT (`application/token-introspection+jwt`) when asked for.",
         headers(("Cache-Control" = String, description = "`no-store`")),
         content(
             (Introspection = "application/json"),
             (String = "application/token-introspection+jwt")
         )),
        crate::edge::ClientErrors
    )
)]
pub async fn introspect(
    State(identity): State<IdentityState>,
    certificate: Option<axum::Extension<Presented>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, OAuthError> {
    let identity: &Identity = &identity;
    let form = read_form(&headers, body, MAX_FORM_BODY).await?;
    let credentials: ClientCredentials = form.read()?;
    let internal = identity.settings.internal_token.as_ref().is_some_and(|secret| {
        secret.authorizes(headers.get(header::AUTHORIZATION).and_then(|value| value.to_str().ok()))
    });
    // The calling client; `None`: the internal token's holder.
    let caller: Option<Client> = if internal {
        if credentials.client_secret.is_some() || credentials.client_assertion.is_some() {
            return Err(OAuthError::bad_request("use one client authentication method, not two"));
        }
        None
    } else {
        Some(authenticate(identity, &headers, certificate.as_deref(), &credentials, "/oauth2/introspect").await?)
    };
    let request: IntrospectionRequest = form.read()?;
    let (own_client, signing_alg, audience) = match &caller {
        Some(client) => {
            (Some(&client.client_id), client.security.introspection_signed_response_alg, client.client_id.as_str())
        }
        None => (None, None, INTERNAL_AUDIENCE),
    };
    let answer = look_up(identity, own_client, &request.token).await?;
    metrics::counter!("portico_introspections_total", "active" => if answer.active { "true" } else { "false" })
        .increment(1);
    let response = if wants_jwt(&headers) {
        let key = identity.signing_key_for(signing_alg).await?;
        let claims = SignedIntrospection {
            iss: &identity.settings.issuer,
            aud: audience,
            iat: identity.clock.now().unix_timestamp(),
            token_introspection: &answer,
        };
        ([(header::CONTENT_TYPE, JWT_MEDIA_TYPE)], key.try_sign(JWT_TYP, &claims)?).into_response()
    } else {
        axum::Json(answer).into_response()
    };
    Ok(portico_api::no_store(response))
}

/// Whether the caller asked for the signed answer: `Accept` names its
/// media type with a weight above zero and at least that of JSON (RFC 9110
/// §12.5.1: `application/json`, else `application/*`, else `*/*`, the
/// most specific range that matches giving JSON's weight). JSON is the
/// answer otherwise, as it is without `Accept`.
fn wants_jwt(headers: &HeaderMap) -> bool {
    let mut jwt: Option<u16> = None;
    // JSON's weight from the most specific range naming it: (specificity, weight).
    let mut json: Option<(u8, u16)> = None;
    for (media, weight) in crate::negotiation::weighted(headers, &header::ACCEPT) {
        if media.eq_ignore_ascii_case(JWT_MEDIA_TYPE) {
            jwt = Some(jwt.map_or(weight, |w| w.max(weight)));
        }
        let specificity = match media.to_ascii_lowercase().as_str() {
            "application/json" => 3,
            "application/*" => 2,
            "*/*" => 1,
            _ => continue,
        };
        json = match json {
            Some((s, w)) if s > specificity || (s == specificity && w >= weight) => Some((s, w)),
            _ => Some((specificity, weight)),
        };
    }
    jwt.is_some_and(|jwt| jwt > 0 && jwt >= json.map_or(0, |(_, w)| w))
}

/// What `token` is, as the caller may learn it: a refresh token only by
/// `own_client`, the client it was issued to.
async fn look_up(identity: &Identity, own_client: Option<&ClientId>, token: &str) -> Result<Introspection, OAuthError> {
    if token.matches('.').count() == 2 {
        return match identity.tokens.check_access_token(token).await {
            Ok(claims) => Ok(Introspection {
                active: true,
                scope: Some(claims.scope.clone()),
                client_id: Some(claims.client_id.clone()),
                token_type: Some(if claims.cnf.as_ref().is_some_and(|cnf| cnf.jkt.is_some()) {
                    "DPoP"
                } else {
                    "Bearer"
                }),
                exp: Some(claims.exp),
                iat: Some(claims.iat),
                sub: Some(claims.sub.clone()),
                aud: Some(claims.aud.clone()),
                iss: Some(claims.iss.clone()),
                jti: Some(claims.jti.clone()),
                cnf: claims.cnf.clone(),
            }),
            Err(AccessTokenError::Invalid | AccessTokenError::InvalidProof) => Ok(Introspection::default()),
            Err(AccessTokenError::Unavailable(error)) => Err(error.into()),
        };
    }
    let now = identity.clock.now();
    let hash = RefreshTokenHash::new(portico_crypto::hash::token_hash(token));
    let Some(stored) = identity.store.find_refresh_token(&hash).await? else {
        return Ok(Introspection::default());
    };
    let live = own_client == Some(&stored.grant.client_id)
        && !stored.spent
        && stored.token.expires_at > now
        && stored.grant.revoked_at.is_none()
        && stored.user.as_ref().is_some_and(portico_model::user::User::may_sign_in);
    if !live {
        return Ok(Introspection::default());
    }
    Ok(Introspection {
        active: true,
        scope: Some(stored.grant.scope.clone()),
        client_id: Some(stored.grant.client_id.to_string()),
        token_type: Some("refresh_token"),
        exp: Some(stored.token.expires_at.unix_timestamp()),
        iat: Some(stored.token.created_at.unix_timestamp()),
        sub: stored.user.map(|user| user.id.to_string()),
        aud: None,
        iss: Some(identity.settings.issuer.clone()),
        jti: None,
        cnf: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    /// Whether a request with this `Accept` gets the signed answer.
    fn accept(value: &'static str) -> bool {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_static(value));
        wants_jwt(&headers)
    }

    #[test]
    fn the_signed_answer_is_asked_for_by_its_media_type() {
        assert!(accept("application/token-introspection+jwt"));
        assert!(accept("application/json;q=0.5, Application/Token-Introspection+JWT"));
        assert!(!accept("application/json"));
        assert!(!accept("application/jwt"));
        assert!(!wants_jwt(&HeaderMap::new()));
    }

    #[test]
    fn weights_decide_between_the_signed_answer_and_json() {
        // JSON preferred, or the signed answer refused: JSON.
        assert!(!accept("application/json, application/token-introspection+jwt;q=0.5"));
        assert!(!accept("application/token-introspection+jwt;q=0"));
        assert!(!accept("*/*;q=0.9, application/token-introspection+jwt;q=0.8"));
        assert!(!accept("application/token-introspection+jwt;q=0.5, application/*;q=0.7"));
        // Named at least as high as JSON: signed.
        assert!(accept("application/token-introspection+jwt, application/json"));
        assert!(accept("application/json;q=0.9, application/token-introspection+jwt"));
        assert!(accept("application/token-introspection+jwt;q=0.2, application/json;q=0.1, */*"));
        assert!(accept("application/json;q=0, application/token-introspection+jwt;q=0.001"));
        assert!(accept("*/*, application/token-introspection+jwt"));
        // `*/*` alone is no request for the signed answer.
        assert!(!accept("*/*"));
        // A weight that is no qvalue leaves its range out.
        assert!(!accept("application/token-introspection+jwt;q=2"));
        assert!(accept("application/json;q=high, application/token-introspection+jwt;q=0.5"));
    }

    #[test]
    fn an_inactive_token_is_exactly_active_false() {
        assert_eq!(serde_json::to_string(&Introspection::default()).unwrap(), r#"{"active":false}"#);
    }
}
