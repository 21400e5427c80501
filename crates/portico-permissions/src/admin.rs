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
use serde_json::json;

use crate::PermissionsState;
use crate::service::{ApplyError, parse_document};

/// Largest document the admin API accepts.
pub const MAX_DOCUMENT: usize = 16 * 1024 * 1024;

fn error(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    (status, Json(json!({ "code": code, "message": message.into() }))).into_response()
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
    match portico_identity::tokens::bearer(headers) {
        Some(token) if secret.matches(token) => None,
        _ => Some(error(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "send the admin token as Authorization: Bearer <token>",
        )),
    }
}

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
        Err(e) => return error(e.status(), "bad_request", e.body_text()),
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
            Json(json!({
                "code": "invalid_document",
                "message": format!("the document has {} problem(s); nothing was changed", problems.len()),
                "problems": problems.iter().map(|p| json!({ "place": p.place, "message": p.message })).collect::<Vec<_>>(),
            })),
        )
            .into_response(),
        Err(ApplyError::Storage(e)) => {
            tracing::error!(error = %e, "permission import failed");
            error(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "the permission store failed; nothing was changed")
        }
    }
}
