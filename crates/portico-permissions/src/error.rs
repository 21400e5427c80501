//! Every answer of the permissions API that is not a 200, in one place.
//!
//! Bodies: `ErrorResponseDTO` (`code`, `message`, `messageData`) unless
//! noted; 401 is `{"error": ...}` with an RFC 6750 challenge, 500 is
//! `{"message": ...}`, and ACC v1's "no active employee" is the spec's
//! `GenericError` (`message` only).

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use portico_model::permissions::LookupError;
use portico_model::text::capped;
use portico_storage::StorageError;
use portico_tokens::TokenPairError;
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

#[derive(Debug, thiserror::Error)]
pub enum PermissionError {
    #[error("the required header {0} is missing")]
    HeaderMissing(&'static str),
    /// A missing or invalid body, path or query parameter; `parameter` names it.
    #[error("{message}")]
    BadRequest { parameter: &'static str, message: String },
    #[error("{0}")]
    EmployeeNotFound(String),
    #[error("{0}")]
    UserNotFound(String),
    #[error("{0}")]
    RoleNotFound(String),
    #[error("{0}")]
    InvalidParameterFormat(&'static str),
    /// ACC v1: the caller is no active employee of the company.
    #[error("{0}")]
    Generic(String),
    #[error("{0}")]
    NotEio(String),
    #[error("{0}")]
    UnavailableRole(String),
    #[error("{0}")]
    NotEmployee(String),
    /// 404 `not_found`: no operation is at the path.
    #[error("{0}")]
    NoSuchOperation(String),
    /// 405 `method_not_allowed`: the path takes other methods (the
    /// router's `Allow` header names them).
    #[error("{0}")]
    MethodNotAllowed(String),
    #[error(transparent)]
    Unauthorized(TokenPairError),
    #[error(transparent)]
    Internal(StorageError),
}

impl PermissionError {
    pub fn bad_request(parameter: &'static str, message: impl Into<String>) -> Self {
        Self::BadRequest { parameter, message: message.into() }
    }

    /// Maps a failed look-up of `user`'s own permissions.
    pub fn lookup(error: LookupError, object_parameter: &'static str) -> Self {
        match error {
            LookupError::EmployeeNotFound { cnum: Some(cnum) } => {
                Self::EmployeeNotFound(format!("the caller is not an active employee of company {cnum:?} (cnum)"))
            }
            LookupError::EmployeeNotFound { cnum: None } => {
                Self::EmployeeNotFound("the caller is not an active employee of any company".into())
            }
            LookupError::RoleNotFound { cnum: Some(cnum) } => {
                Self::RoleNotFound(format!("the caller has no role in company {cnum:?}"))
            }
            LookupError::RoleNotFound { cnum: None } => {
                Self::RoleNotFound("the caller has no role in any of the companies".into())
            }
            LookupError::UnknownObject(object) => {
                Self::bad_request(object_parameter, format!("{object_parameter}: there is no object {object:?}"))
            }
        }
    }
}

impl From<TokenPairError> for PermissionError {
    fn from(error: TokenPairError) -> Self {
        match error {
            TokenPairError::Unavailable(e) => Self::Internal(e),
            other => Self::Unauthorized(other),
        }
    }
}

impl From<StorageError> for PermissionError {
    fn from(error: StorageError) -> Self {
        Self::Internal(error)
    }
}

/// `ErrorResponseDTO`: the body of most errors.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ErrorResponseDTO)]
pub struct ErrorResponseDto {
    #[schema(example = "bad_request")]
    pub code: &'static str,
    /// Names the offending parameter or id.
    pub message: String,
    /// `{"parameter": ...}` or `{"header": ...}` when one is at fault.
    #[schema(value_type = Option<Object>)]
    pub message_data: Value,
}

/// `GenericError`: a message only (internal errors; ACC v1's "no active employee").
#[derive(Debug, Serialize, ToSchema)]
pub struct GenericError {
    pub message: Option<String>,
}

/// The body of 401.
#[derive(Debug, Serialize, ToSchema)]
pub struct UnauthorizedError {
    pub error: String,
}

/// Characters an error message holds at most, whatever it repeats.
const MAX_MESSAGE: usize = 512;

fn dto(status: StatusCode, code: &'static str, message: String, message_data: Value) -> Response {
    let message = capped(message, MAX_MESSAGE);
    (status, Json(ErrorResponseDto { code, message, message_data })).into_response()
}

fn generic(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(GenericError { message: Some(capped(message.into(), MAX_MESSAGE)) })).into_response()
}

impl IntoResponse for PermissionError {
    fn into_response(self) -> Response {
        let message = self.to_string();
        match self {
            Self::HeaderMissing(name) => {
                dto(StatusCode::BAD_REQUEST, "header_is_missing", message, json!({ "header": name }))
            }
            Self::BadRequest { parameter, .. } => {
                dto(StatusCode::BAD_REQUEST, "bad_request", message, json!({ "parameter": parameter }))
            }
            Self::EmployeeNotFound(_) => dto(StatusCode::BAD_REQUEST, "employee_not_found", message, Value::Null),
            Self::UserNotFound(_) => dto(StatusCode::BAD_REQUEST, "user_not_found", message, Value::Null),
            Self::RoleNotFound(_) => dto(StatusCode::BAD_REQUEST, "role_not_found", message, Value::Null),
            Self::InvalidParameterFormat(parameter) => dto(
                StatusCode::BAD_REQUEST,
                "invalid_parameter_format",
                format!("{parameter} must be a UUID"),
                json!({ "parameter": parameter }),
            ),
            Self::Generic(_) => generic(StatusCode::BAD_REQUEST, message),
            Self::NotEio(_) => dto(StatusCode::FORBIDDEN, "executive_not_eio", message, Value::Null),
            Self::UnavailableRole(_) => dto(StatusCode::FORBIDDEN, "unavailable_role", message, Value::Null),
            Self::NotEmployee(_) => dto(StatusCode::FORBIDDEN, "not_employee", message, Value::Null),
            Self::NoSuchOperation(_) => dto(StatusCode::NOT_FOUND, "not_found", message, Value::Null),
            Self::MethodNotAllowed(_) => {
                dto(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", message, Value::Null)
            }
            // The challenge (`WWW-Authenticate`) is the token-pair extractor's,
            // which knows how the token came (portico_api::pair).
            Self::Unauthorized(_) => {
                (StatusCode::UNAUTHORIZED, Json(UnauthorizedError { error: message })).into_response()
            }
            // The spec lists only 500 as a server error: an outage is one
            // too, told apart by its message and `Retry-After`.
            Self::Internal(StorageError::Unavailable(error)) => {
                tracing::warn!(%error, "permission request: the database is unavailable");
                let mut response =
                    generic(StatusCode::INTERNAL_SERVER_ERROR, "the permission store is unavailable; try again later");
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
                response
            }
            Self::Internal(error) => {
                tracing::error!(%error, "permission request failed");
                generic(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
            }
        }
    }
}

/// Seconds a caller is asked to wait after an outage's 500.
const RETRY_AFTER_SECS: u32 = 5;
