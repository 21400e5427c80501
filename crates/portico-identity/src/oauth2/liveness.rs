//! `GET /oauth2/token/liveness` (operation `tokenLiveness`).
//!
//! 200 for an access token signed by Portico, not expired, not revoked and
//! whose grant is not revoked; 401 otherwise (also for a missing or malformed
//! header); 503 when the revocation state cannot be read. No body, ever.

use axum::Extension;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use portico_crypto::certificate::Presented;

use crate::IdentityState;
use portico_tokens::AccessTokenError;

#[utoipa::path(
    get,
    path = "/oauth2/token/liveness",
    operation_id = "tokenLiveness",
    tag = "oauth2",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The token is active."),
        (status = 401, description = "The header is missing or malformed, or the token is not valid.",
         headers(("WWW-Authenticate" = String, description = "`Bearer` when no token came; `Bearer error=\"invalid_token\"` for a bad one; \
                `DPoP error=\"invalid_dpop_proof\"` (or `\"invalid_token\"`) with `algs` for a token sent with \
                the `DPoP` scheme (RFC 6750 §3.1, RFC 9449 §7.1)"))),
        (status = 503, description = "The check is temporarily unavailable.")
    )
)]
pub async fn liveness(
    State(identity): State<IdentityState>,
    certificate: Option<Extension<Presented>>,
    headers: HeaderMap,
) -> Response {
    let certificate = certificate.as_deref();
    match identity.tokens.check_request(&headers, certificate, "GET", "/oauth2/token/liveness").await {
        Ok(_) => StatusCode::OK.into_response(),
        Err(AccessTokenError::Unavailable(error)) => {
            tracing::warn!(%error, "liveness check unavailable");
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
        Err(error) => crate::tokens::refused_for(&headers, &error),
    }
}
