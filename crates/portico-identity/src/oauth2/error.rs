//! `OAuth2ErrorDTO` responses (RFC 6749 §5.2).

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use portico_storage::StorageError;
use serde::Serialize;

/// An error of the token, revoke or JWKS endpoint: one variant per RFC
/// 6749 §5.2 code Portico answers with, each with its description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OAuthError {
    /// 400 `invalid_request`.
    InvalidRequest(String),
    /// 401 `invalid_client`, with a `WWW-Authenticate: Basic` challenge.
    InvalidClient(String),
    /// 400 `invalid_grant`.
    InvalidGrant(String),
    /// 400 `invalid_scope`.
    InvalidScope(String),
    /// 400 `unsupported_grant_type`.
    UnsupportedGrantType,
    /// 400 with another code of the OAuth registries (`invalid_request_object`,
    /// `unsupported_response_type`, …).
    Refused(&'static str, String),
    /// 400 `use_dpop_nonce` (RFC 9449 §8), with the nonce to use in `DPoP-Nonce`.
    UseDpopNonce(String),
    /// 503 `temporarily_unavailable`, with `Retry-After`: the database is unreachable.
    Unavailable,
    /// 500 `server_error`; the cause is only logged.
    Internal,
}

/// `OAuth2ErrorDTO`.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = OAuth2ErrorDTO)]
pub struct OAuth2ErrorDto<'a> {
    /// An RFC 6749 error code: `invalid_request`, `invalid_client`,
    /// `invalid_grant`, `invalid_scope`, `unsupported_grant_type`,
    /// `server_error`, `temporarily_unavailable`.
    #[schema(example = "invalid_grant")]
    error: &'a str,
    #[schema(example = "the authorization code is not valid")]
    error_description: &'a str,
}

impl OAuthError {
    /// 400 `invalid_request`, describing `OAuth 2.0 Parameter: <name>`.
    pub fn invalid_request(parameter: &str) -> Self {
        Self::InvalidRequest(format!("OAuth 2.0 Parameter: {parameter}"))
    }

    /// 400 `invalid_request` with a free description.
    pub fn bad_request(description: impl Into<String>) -> Self {
        Self::InvalidRequest(description.into())
    }

    pub fn invalid_grant(description: impl Into<String>) -> Self {
        Self::InvalidGrant(description.into())
    }

    pub fn invalid_scope(description: impl Into<String>) -> Self {
        Self::InvalidScope(description.into())
    }

    /// 400 with `code` and a free description.
    pub fn refused(code: &'static str, description: impl Into<String>) -> Self {
        Self::Refused(code, description.into())
    }

    pub fn unsupported_grant_type() -> Self {
        Self::UnsupportedGrantType
    }

    /// 401 `invalid_client`, with a `WWW-Authenticate: Basic` challenge.
    pub fn invalid_client(description: impl Into<String>) -> Self {
        Self::InvalidClient(description.into())
    }

    /// 503 `temporarily_unavailable` or 500 `server_error`, by the cause
    /// (logged here).
    pub fn storage(error: StorageError) -> Self {
        match error {
            StorageError::Unavailable(cause) => {
                tracing::warn!(%cause, "token store unavailable");
                Self::Unavailable
            }
            other => {
                tracing::error!(error = %other, "token endpoint failed");
                Self::Internal
            }
        }
    }

    /// The status, the RFC 6749 code and the description of the answer.
    pub fn parts(&self) -> (StatusCode, &'static str, &str) {
        match self {
            Self::InvalidRequest(description) => (StatusCode::BAD_REQUEST, "invalid_request", description),
            Self::InvalidClient(description) => (StatusCode::UNAUTHORIZED, "invalid_client", description),
            Self::InvalidGrant(description) => (StatusCode::BAD_REQUEST, "invalid_grant", description),
            Self::InvalidScope(description) => (StatusCode::BAD_REQUEST, "invalid_scope", description),
            Self::UnsupportedGrantType => {
                (StatusCode::BAD_REQUEST, "unsupported_grant_type", "OAuth 2.0 Parameter: grant_type")
            }
            Self::Refused(code, description) => (StatusCode::BAD_REQUEST, code, description),
            Self::UseDpopNonce(_) => {
                (StatusCode::BAD_REQUEST, "use_dpop_nonce", "the DPoP proof must carry the nonce in DPoP-Nonce")
            }
            Self::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, "temporarily_unavailable", "try again shortly"),
            Self::Internal => (StatusCode::INTERNAL_SERVER_ERROR, "server_error", "internal error"),
        }
    }
}

impl From<portico_crypto::jwt::SignError> for OAuthError {
    fn from(error: portico_crypto::jwt::SignError) -> Self {
        tracing::warn!(%error, "a token could not be signed");
        Self::Unavailable
    }
}

impl From<StorageError> for OAuthError {
    fn from(error: StorageError) -> Self {
        Self::storage(error)
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let (status, error, description) = self.parts();
        let error_description = &portico_model::text::oauth_description(description);
        let mut response = (status, Json(OAuth2ErrorDto { error, error_description })).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
        if let Self::InvalidClient(_) = self {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"portico\""));
        }
        if let Self::UseDpopNonce(nonce) = &self
            && let Ok(value) = HeaderValue::from_str(nonce)
        {
            headers.insert("dpop-nonce", value);
        }
        if let Self::Unavailable = self {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        }
        response
    }
}
