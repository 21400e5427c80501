//! `GET /oauth2/jwks` (operation `getJwks`): `PublicJwksResponseDTO`.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use portico_crypto::jwt::Jwk;
use serde::Serialize;

use super::error::OAuthError;
use crate::IdentityState;

/// `PublicJwksResponseDTO`.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = PublicJwksResponseDTO)]
pub struct PublicJwksResponse {
    #[schema(value_type = Vec<PublicJwk>)]
    pub keys: Vec<Jwk>,
}

/// One key of the set, as [`Jwk`] writes it (a test holds them together):
/// an RSA key (RS256, PS256), an EC key (ES256) or an OKP key (EdDSA). With
/// the default configuration every key is an RS256 key.
#[derive(utoipa::ToSchema)]
#[schema(as = PublicJwkDTO)]
#[allow(dead_code)]
#[serde(untagged)]
pub enum PublicJwk {
    Rsa(PublicRsaJwk),
    Ec(PublicEcJwk),
    Okp(PublicOkpJwk),
}

/// An RSA public key (RS256 or PS256).
#[derive(utoipa::ToSchema)]
#[schema(as = PublicRsaJwkDTO)]
#[allow(dead_code)]
pub struct PublicRsaJwk {
    /// Key type.
    #[schema(example = "RSA")]
    kty: String,
    /// Key id; equals the `kid` header of the JWTs it verifies.
    kid: String,
    /// Purpose.
    #[schema(rename = "use", example = "sig")]
    use_: String,
    /// Signing algorithm: `RS256` or `PS256`.
    #[schema(example = "RS256")]
    alg: String,
    /// RSA modulus, Base64url.
    n: String,
    /// RSA public exponent, Base64url.
    #[schema(example = "AQAB")]
    e: String,
}

/// An EC public key on P-256 (ES256).
#[derive(utoipa::ToSchema)]
#[schema(as = PublicEcJwkDTO)]
#[allow(dead_code)]
pub struct PublicEcJwk {
    /// Key type.
    #[schema(example = "EC")]
    kty: String,
    /// Key id; equals the `kid` header of the JWTs it verifies.
    kid: String,
    /// Purpose.
    #[schema(rename = "use", example = "sig")]
    use_: String,
    /// Signing algorithm.
    #[schema(example = "ES256")]
    alg: String,
    /// The curve.
    #[schema(example = "P-256")]
    crv: String,
    /// The point's x coordinate, Base64url.
    x: String,
    /// The point's y coordinate, Base64url.
    y: String,
}

/// An Ed25519 public key (EdDSA, RFC 8037).
#[derive(utoipa::ToSchema)]
#[schema(as = PublicOkpJwkDTO)]
#[allow(dead_code)]
pub struct PublicOkpJwk {
    /// Key type.
    #[schema(example = "OKP")]
    kty: String,
    /// Key id; equals the `kid` header of the JWTs it verifies.
    kid: String,
    /// Purpose.
    #[schema(rename = "use", example = "sig")]
    use_: String,
    /// Signing algorithm.
    #[schema(example = "EdDSA")]
    alg: String,
    /// The curve.
    #[schema(example = "Ed25519")]
    crv: String,
    /// The public key, Base64url.
    x: String,
}

#[utoipa::path(
    get,
    path = "/oauth2/jwks",
    operation_id = "getJwks",
    tag = "oauth2",
    responses(
        (status = 200, description = "The published keys: the active one and those whose tokens may still be alive.",
         body = PublicJwksResponse, headers(("Cache-Control" = String, description = "`public, max-age=60`"),
                                           ("Access-Control-Allow-Origin" = String, description = "`*`"))),
        (status = 500, description = "`server_error`.", body = super::error::OAuth2ErrorDto),
        (status = 503, description = "`temporarily_unavailable`.", body = super::error::OAuth2ErrorDto)
    )
)]
pub async fn jwks(State(identity): State<IdentityState>) -> Result<Response, OAuthError> {
    let now = identity.clock.now();
    let keys = identity.tokens.keys.jwks(now, identity.settings.key_retention()).await?;
    Ok(super::discovery::public_document(Json(PublicJwksResponse { keys }).into_response(), "public, max-age=60"))
}
