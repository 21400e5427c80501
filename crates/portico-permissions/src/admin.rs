//! The admin API of the permission model, for the bank's own systems:
//! `GET /admin/v1/permissions` exports the whole model as a document, and
//! `POST /admin/v1/permissions` applies a document (JSON, or YAML with a
//! YAML content type), exactly as `portico permissions import` does.
//! Authenticated by an admin token (`Authorization: Bearer ...`); each
//! applied document is recorded in the audit log with the token's name.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use portico_api::error::ErrorBody as AdminError;
use portico_api::openapi::AdminErrors;
use portico_api::{Admin, ApiError, Problem};
use portico_model::audit::{AuditEvent, AuditKind};
use portico_model::permissions::PermissionDocument;

use crate::PermissionsState;
use crate::service::{ApplyError, ApplySummary, read_document};

/// Largest document the admin API accepts.
pub const MAX_DOCUMENT: usize = 16 * 1024 * 1024;

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
pub async fn export(State(api): State<PermissionsState>, _: Admin) -> Result<Response, ApiError> {
    match api.store.load_permissions().await {
        Ok(model) => {
            let mut response = Json(model.to_document()).into_response();
            if let Ok(value) = model.revision.to_string().parse() {
                response.headers_mut().insert("x-permission-revision", value);
            }
            Ok(response)
        }
        Err(e) => Err(ApiError::storage("permission export", &e)),
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
        (status = 413, description = "`too_large`: the document is over 16 MiB.", body = AdminError),
        (status = 415, description = "`bad_request`: neither JSON nor YAML.", body = AdminError),
        AdminErrors
    )
)]
pub async fn apply(
    State(api): State<PermissionsState>,
    admin: Admin,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(|e| ApiError::unread(&e))?;
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let yaml = content_type.contains("yaml");
    if !yaml && !content_type.contains("json") {
        return Err(ApiError::UnsupportedMediaType("send the document as application/json or application/yaml".into()));
    }
    let text = String::from_utf8(body.into()).map_err(|_| ApiError::bad_request("the document is not UTF-8"))?;
    let doc: PermissionDocument =
        read_document(text, yaml).await.map_err(|message| ApiError::invalid(message, Vec::new()))?;
    match apply_by(&api.service, api.store.as_ref(), api.clock.as_ref(), &admin.actor, &doc).await {
        Ok(summary) => Ok(Json(summary).into_response()),
        Err(ApplyError::Invalid(problems)) => Err(ApiError::invalid(
            format!("the document has {} problem(s); nothing was changed", problems.len()),
            problems.into_iter().map(|p| Problem::new(p.place, p.message)).collect(),
        )),
        Err(ApplyError::Storage(e)) => Err(ApiError::storage("permission import", &e)),
    }
}

/// An operator's change of the permission model: `doc` merged and saved as
/// a new revision, recorded in the audit log with `actor`. The admin API
/// and the console share it.
///
/// # Errors
/// As [`crate::service::PermissionService::apply`].
pub async fn apply_by(
    service: &crate::service::PermissionService,
    store: &dyn portico_storage::Storage,
    clock: &dyn portico_model::clock::Clock,
    actor: &portico_model::audit::Actor,
    doc: &PermissionDocument,
) -> Result<crate::service::ApplySummary, ApplyError> {
    let summary = service.apply(doc).await?;
    tracing::info!(revision = summary.revision, %actor, "permission model changed by an operator");
    let event = AuditEvent::new(clock.now(), AuditKind::PermissionsImported).by(actor);
    portico_api::audit(store, event.detail(serde_json::json!({ "revision": summary.revision }))).await;
    Ok(summary)
}
