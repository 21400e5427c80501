//! Every answer of the report API that is not a success, in one place: the
//! spec's `ErrorResponse` (`code`, `message`, `traceId`, `errors`) for every
//! status, `traceId` being the request id (`x-request-id`, also in the logs).
//!
//! Codes: `VALIDATION_ERROR` (400, `errors` names each invalid field),
//! `UNAUTHORIZED` (401), `FORBIDDEN` (403), `NOT_FOUND` (404, also for a
//! path no operation serves), `METHOD_NOT_ALLOWED` (405, with `Allow`),
//! `TOO_MANY_TASKS` (429), `INTERNAL_ERROR` (500). The spec lists no other server error, so a
//! database outage is a 500 too, told apart by its message and by
//! `Retry-After` (the other 500s are faults, with no time to wait).

use std::collections::BTreeMap;

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use portico_storage::StorageError;
use portico_tokens::TokenPairError;
use serde::Serialize;
use utoipa::ToSchema;

/// The body of every error answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorResponse {
    /// `VALIDATION_ERROR`, `UNAUTHORIZED`, `FORBIDDEN`, `NOT_FOUND`, `METHOD_NOT_ALLOWED`,
    /// `TOO_MANY_TASKS` or `INTERNAL_ERROR`.
    #[schema(example = "VALIDATION_ERROR")]
    pub code: &'static str,
    #[schema(example = "the request is not valid: toDate")]
    pub message: String,
    /// The request id (`x-request-id`), also in the logs.
    pub trace_id: String,
    /// For 400: each invalid field or parameter and what is wrong with it.
    #[schema(example = json!({"toDate": "must not be before fromDate"}))]
    pub errors: Option<BTreeMap<String, String>>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Field name → what is wrong with it.
    #[error("the request is not valid")]
    Validation(BTreeMap<String, String>),
    /// What failed, for the caller, and the challenge that says so.
    #[error("{0}")]
    Unauthorized(String, portico_tokens::Challenge),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    /// The path takes other methods; the router's `Allow` header names them.
    #[error("{0}")]
    MethodNotAllowed(String),
    #[error("internal error")]
    Internal(String),
    /// The company has this many unfinished tasks, its limit.
    #[error("the company has {0} report tasks not finished yet, its limit: ask again once one has finished")]
    TooManyTasks(u32),
    /// The database cannot be reached: try again later.
    #[error("the report store is unavailable; try again later")]
    Unavailable(String),
}

/// Seconds a caller is asked to wait after an outage's 500.
const RETRY_AFTER_SECS: u32 = 5;
/// Seconds a company at its limit of unfinished tasks is asked to wait:
/// about what a report takes to make.
const TASKS_RETRY_AFTER_SECS: u32 = 60;

impl ReportError {
    pub fn field(name: &str, problem: impl Into<String>) -> Self {
        Self::Validation(BTreeMap::from([(name.to_owned(), problem.into())]))
    }

    pub fn internal(error: &impl std::fmt::Display) -> Self {
        Self::Internal(error.to_string())
    }
}

/// The answer, its `traceId` the id of the request being answered.
impl IntoResponse for ReportError {
    fn into_response(self) -> Response {
        let trace_id = portico_api::request::id();
        let trace_id = trace_id.as_str();
        let (status, code) = match &self {
            Self::Validation(_) => (StatusCode::BAD_REQUEST, "VALIDATION_ERROR"),
            Self::Unauthorized(..) => (StatusCode::UNAUTHORIZED, "UNAUTHORIZED"),
            Self::Forbidden(_) => (StatusCode::FORBIDDEN, "FORBIDDEN"),
            Self::NotFound(_) => (StatusCode::NOT_FOUND, "NOT_FOUND"),
            Self::MethodNotAllowed(_) => (StatusCode::METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED"),
            Self::TooManyTasks(_) => (StatusCode::TOO_MANY_REQUESTS, "TOO_MANY_TASKS"),
            Self::Internal(_) | Self::Unavailable(_) => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL_ERROR"),
        };
        let message = match &self {
            Self::Validation(errors) => {
                let fields: Vec<&str> = errors.keys().map(String::as_str).collect();
                format!("the request is not valid: {}", fields.join(", "))
            }
            Self::Internal(detail) => {
                tracing::error!(trace_id, error = %detail, "report API failed");
                "internal error; try again later".to_owned()
            }
            Self::Unavailable(detail) => {
                tracing::warn!(trace_id, error = %detail, "report API: the database is unavailable");
                self.to_string()
            }
            other => other.to_string(),
        };
        let retry_after = match self {
            Self::Unavailable(_) => Some(RETRY_AFTER_SECS),
            Self::TooManyTasks(_) => Some(TASKS_RETRY_AFTER_SECS),
            _ => None,
        };
        let challenge = match &self {
            Self::Unauthorized(_, challenge) => Some(challenge.header()),
            _ => None,
        };
        let errors = match self {
            Self::Validation(errors) => Some(errors),
            _ => None,
        };
        let body = ErrorResponse { code, message, trace_id: trace_id.to_owned(), errors };
        let mut response = (status, Json(body)).into_response();
        if let Some(challenge) = challenge {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
        }
        if let Some(seconds) = retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

impl ReportError {
    /// A request with `headers` whose token pair was refused with `error`.
    pub fn refused_pair(headers: &axum::http::HeaderMap, error: TokenPairError) -> Self {
        let challenge = portico_tokens::Challenge::for_pair(headers, &error);
        match error {
            TokenPairError::Unavailable(e) => e.into(),
            other => Self::Unauthorized(format!("authentication failed: {other}"), challenge),
        }
    }
}

impl From<StorageError> for ReportError {
    fn from(error: StorageError) -> Self {
        match error {
            StorageError::Unavailable(detail) => Self::Unavailable(detail),
            other => Self::internal(&other),
        }
    }
}

/// The error answers of every operation (the spec's 400, 401, 403, 500).
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum Errors {
    /// `VALIDATION_ERROR`: a field or parameter is not valid; `errors` names each.
    #[response(status = 400)]
    Validation(ErrorResponse),
    /// `UNAUTHORIZED`: `Authorization` or `Id-Token` is missing or not valid.
    #[response(status = 401, headers(("WWW-Authenticate" = String, description = "`Bearer` when no token came; `Bearer error=\"invalid_token\"` for a bad one; \
                `DPoP error=\"invalid_dpop_proof\"` (or `\"invalid_token\"`) with `algs` for a token sent with \
                the `DPoP` scheme (RFC 6750 §3.1, RFC 9449 §7.1)")))]
    Unauthorized(ErrorResponse),
    /// `FORBIDDEN`: the user holds no report right for this in the company.
    #[response(status = 403)]
    Forbidden(ErrorResponse),
    /// `INTERNAL_ERROR`: details only in the log, under `traceId`. When the
    /// database is unavailable, with `Retry-After` and the message "the
    /// report store is unavailable; try again later".
    #[response(status = 500, headers(("Retry-After" = u32, description = "Seconds to wait, when the database is unavailable.")))]
    Internal(ErrorResponse),
}

/// `NOT_FOUND` of the look-ups by id.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum NotFound {
    /// `NOT_FOUND`: no such task or file (in the company named by `cnum`).
    #[response(status = 404)]
    NotFound(ErrorResponse),
}
