//! `OAuth2ErrorDTO` responses (RFC 6749 §5.2).

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use portico_storage::StorageError;
use serde::Serialize;

/// An error of the token or revoke endpoint.
#[derive(Debug)]
pub struct OAuthError {
    pub status: StatusCode,
    pub error: &'static str,
    pub description: String,
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
    fn new(status: StatusCode, error: &'static str, description: impl Into<String>) -> Self {
        Self { status, error, description: description.into() }
    }

    /// 400 `invalid_request`, describing `OAuth 2.0 Parameter: <name>`.
    pub fn invalid_request(parameter: &str) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", format!("OAuth 2.0 Parameter: {parameter}"))
    }

    /// 400 `invalid_request` with a free description.
    pub fn bad_request(description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", description)
    }

    pub fn invalid_grant(description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_grant", description)
    }

    pub fn invalid_scope(description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_scope", description)
    }

    pub fn unsupported_grant_type() -> Self {
        Self::new(StatusCode::BAD_REQUEST, "unsupported_grant_type", "OAuth 2.0 Parameter: grant_type")
    }

    /// 401 `invalid_client`, with a `WWW-Authenticate: Basic` challenge.
    pub fn invalid_client(description: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "invalid_client", description)
    }

    /// 503 `temporarily_unavailable` or 500 `server_error`, by the cause.
    pub fn storage(error: StorageError) -> Self {
        match error {
            StorageError::Unavailable(cause) => {
                tracing::warn!(%cause, "token store unavailable");
                Self::new(StatusCode::SERVICE_UNAVAILABLE, "temporarily_unavailable", "try again shortly")
            }
            other => {
                tracing::error!(error = %other, "token endpoint failed");
                Self::new(StatusCode::INTERNAL_SERVER_ERROR, "server_error", "internal error")
            }
        }
    }
}

impl From<StorageError> for OAuthError {
    fn from(error: StorageError) -> Self {
        Self::storage(error)
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let body = OAuth2ErrorDto { error: self.error, error_description: &self.description };
        let mut response = (self.status, Json(body)).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"portico\""));
        }
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        }
        response
    }
}
