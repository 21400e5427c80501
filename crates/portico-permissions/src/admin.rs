//! The admin API of the permission model, for the bank's own systems:
//! `GET /admin/v1/permissions` exports the whole model as a document, and
//! `POST /admin/v1/permissions` applies a document (JSON, or YAML with a
//! YAML content type), exactly as `portico permissions import` does.
//! Authenticated by the configured admin token (`Authorization: Bearer ...`).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use portico_model::permissions::PermissionDocument;

use crate::PermissionsState;
use crate::service::{ApplyError, ApplySummary, parse_document};

/// Largest document the admin API accepts.
pub const MAX_DOCUMENT: usize = 16 * 1024 * 1024;

/// The body of an admin API error.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(as = PermissionAdminError)]
pub struct AdminError {
    /// `unauthorized`, `admin_api_disabled`, `bad_request`, `invalid_document`, `internal_error`.
    #[schema(example = "invalid_document")]
    pub code: &'static str,
    pub message: String,
    /// With `invalid_document` from the model's checks: each problem and its place.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub problems: Option<Vec<AdminProblem>>,
}

/// One problem of a document, and where it is (`employees[3].role`).
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(as = PermissionDocumentProblem)]
pub struct AdminProblem {
    pub place: String,
    pub message: String,
}

fn error(status: StatusCode, code: &'static str, message: impl Into<String>) -> Response {
    (status, Json(AdminError { code, message: message.into(), problems: None })).into_response()
}

/// The errors of both operations.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum AdminErrors {
    /// `unauthorized`: the admin token is missing or wrong.
    #[response(status = 401)]
    Unauthorized(AdminError),
    /// `admin_api_disabled`: no admin token is configured.
    #[response(status = 404)]
    Disabled(AdminError),
    /// `internal_error`: the permission store failed; nothing was changed.
    #[response(status = 500)]
    Internal(AdminError),
}

/// `None` when the request carries the admin token, else the answer to give.
fn refusal(api: &PermissionsState, headers: &HeaderMap) -> Option<Response> {
    let Some(secret) = &api.admin_token else {
        return Some(error(
            StatusCode::NOT_FOUND,
            "admin_api_disabled",
            "the admin API is off; set admin_token (PORTICO_ADMIN_TOKEN) to turn it on",
        ));
    };
    let authorization = headers.get(axum::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    (!secret.authorizes(authorization)).then(|| {
        error(StatusCode::UNAUTHORIZED, "unauthorized", "send the admin token as Authorization: Bearer <token>")
    })
}

#[utoipa::path(
    get,
    path = "/admin/v1/permissions",
    operation_id = "exportPermissions",
    tag = "permission model",
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "The whole model as a document.", body = PermissionDocument,
         headers(("x-permission-revision" = String, description = "The model's revision."))),
        AdminErrors
    )
)]
pub async fn export(State(api): State<PermissionsState>, headers: HeaderMap) -> Response {
    if let Some(response) = refusal(&api, &headers) {
        return response;
    }
    match api.identity.store.load_permissions().await {
        Ok(model) => {
            let mut response = Json(model.to_document()).into_response();
            if let Ok(value) = model.revision.to_string().parse() {
                response.headers_mut().insert("x-permission-revision", value);
            }
            response
        }
        Err(e) => {
            tracing::error!(error = %e, "permission export failed");
            error(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "the permission store failed")
        }
    }
}

#[utoipa::path(
    post,
    path = "/admin/v1/permissions",
    operation_id = "applyPermissions",
    tag = "permission model",
    request_body(content(
        (PermissionDocument = "application/json"),
        (PermissionDocument = "application/yaml")
    )),
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "Applied: the new revision and what the document held.", body = ApplySummary),
        (status = 400, description = "`bad_request` (not UTF-8, unreadable) or `invalid_document` (every problem \
                                      with its place); nothing was changed.", body = AdminError),
        (status = 413, description = "The document is over 16 MiB.", body = AdminError),
        (status = 415, description = "`bad_request`: neither JSON nor YAML.", body = AdminError),
        AdminErrors
    )
)]
pub async fn apply(
    State(api): State<PermissionsState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    if let Some(response) = refusal(&api, &headers) {
        return response;
    }
    let body = match body {
        Ok(body) => body,
        Err(e) => {
            return (e.status(), Json(AdminError { code: "bad_request", message: e.body_text(), problems: None }))
                .into_response();
        }
    };
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let yaml = content_type.contains("yaml");
    if !yaml && !content_type.contains("json") {
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "bad_request",
            "send the document as application/json or application/yaml",
        );
    }
    let Ok(text) = std::str::from_utf8(&body) else {
        return error(StatusCode::BAD_REQUEST, "bad_request", "the document is not UTF-8");
    };
    let doc: PermissionDocument = match parse_document(text, yaml) {
        Ok(doc) => doc,
        Err(message) => return error(StatusCode::BAD_REQUEST, "invalid_document", message),
    };
    match api.service.apply(&doc).await {
        Ok(summary) => {
            tracing::info!(revision = summary.revision, "permission model changed through the admin API");
            Json(summary).into_response()
        }
        Err(ApplyError::Invalid(problems)) => (
            StatusCode::BAD_REQUEST,
            Json(AdminError {
                code: "invalid_document",
                message: format!("the document has {} problem(s); nothing was changed", problems.len()),
                problems: Some(
                    problems.into_iter().map(|p| AdminProblem { place: p.place, message: p.message }).collect(),
                ),
            }),
        )
            .into_response(),
        Err(ApplyError::Storage(e)) => {
            tracing::error!(error = %e, "permission import failed");
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                "the permission store failed; nothing was changed",
            )
        }
    }
}
