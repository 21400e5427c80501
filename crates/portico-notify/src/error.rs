//! Every refusal of the merchant API (`/v1/notifications/...`), in one
//! place: [`NotifyError`], answered with the spec's body
//! `{"code": "...", "message": "..."}` ([`ErrorBody`]). The intake
//! (`/internal/v1/notifications/...`) is the internal API and answers as
//! it does ([`portico_api::ApiError`]).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use portico_storage::StorageError;

/// The body of every error of the merchant API.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(as = NotificationError)]
pub struct ErrorBody {
    /// `unauthorized`, `bad_request`, `settings_not_found`, `delivery_not_found`, `internal_error`;
    /// `not_found` for a path no operation serves, `method_not_allowed` (405) for a method the path
    /// does not take;
    /// internal and admin APIs also `not_found`, `merchant_not_found`, `merchant_exists`,
    /// `event_id_reused`, `admin_api_disabled`.
    #[schema(example = "bad_request")]
    pub code: &'static str,
    pub message: String,
}

/// A refusal of the merchant API.
#[derive(Debug)]
pub enum NotifyError {
    /// 401 `unauthorized`: what is wrong with the key.
    Unauthorized(&'static str, portico_api::Challenge),
    /// 400 `bad_request`: what is wrong with the request.
    BadRequest(String),
    /// 404 with its code (`settings_not_found`, `delivery_not_found`) and message.
    NotFound(&'static str, &'static str),
    /// 500 `internal_error`; the cause is only logged (by [`NotifyError::storage`]).
    Internal,
}

impl NotifyError {
    /// 500 for a failed storage call during `what`, logged with its cause.
    pub fn storage(what: &str, error: &StorageError) -> Self {
        tracing::error!(%error, "{what} failed");
        Self::Internal
    }
}

impl IntoResponse for NotifyError {
    fn into_response(self) -> Response {
        let challenge = match &self {
            Self::Unauthorized(_, challenge) => Some(challenge.header()),
            _ => None,
        };
        let (status, code, message) = match self {
            Self::Unauthorized(message, _) => (StatusCode::UNAUTHORIZED, "unauthorized", message.to_owned()),
            Self::BadRequest(message) => (StatusCode::BAD_REQUEST, "bad_request", message),
            Self::NotFound(code, message) => (StatusCode::NOT_FOUND, code, message.to_owned()),
            Self::Internal => (StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "internal error".to_owned()),
        };
        let mut response = (status, Json(ErrorBody { code, message })).into_response();
        // RFC 9110 §15.5.2: a 401 names how to authenticate.
        if let Some(challenge) = challenge {
            response.headers_mut().insert(axum::http::header::WWW_AUTHENTICATE, challenge);
        }
        response
    }
}

/// 401.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum Unauthorized {
    /// `unauthorized`: the merchant API key is missing or not valid.
    #[response(status = 401, headers(("WWW-Authenticate" = String, description = "`Bearer` when no key came; `Bearer error=\"invalid_token\"` for a wrong one (RFC 6750 §3)")))]
    Unauthorized(ErrorBody),
}

/// 500.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum Internal {
    /// `internal_error`: details only in the log.
    #[response(status = 500)]
    Internal(ErrorBody),
}
