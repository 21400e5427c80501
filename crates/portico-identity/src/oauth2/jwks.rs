//! `GET /oauth2/jwks` (operation `getJwks`): `PublicJwksResponseDTO`.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use portico_crypto::jwt::Jwk;
use serde::Serialize;

use super::error::OAuthError;
use crate::IdentityState;

#[derive(Serialize)]
pub struct PublicJwksResponse {
    pub keys: Vec<Jwk>,
}

pub async fn jwks(State(identity): State<IdentityState>) -> Response {
    let now = identity.clock.now();
    match identity.keys.jwks(now, identity.settings.key_retention()).await {
        Ok(keys) => {
            let mut response = Json(PublicJwksResponse { keys }).into_response();
            response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=60"));
            response
        }
        Err(error) => OAuthError::storage(error).into_response(),
    }
}
