//! The v2 reads: `GET /api/v2/permissions`, `/api/v2/permissions/{obj}` and
//! `/api/v2/permissions/{obj}/{cnum}`.

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};

use crate::PermissionsState;
use crate::error::PermissionError;
use crate::request::{Refusal, SystemId, segment_error, value};
use portico_api::TokenPair;

/// Every permission of the caller: company, object, nested groups, action flags.
#[utoipa::path(
    get,
    path = "/api/v2/permissions",
    operation_id = "permissionsV2",
    tag = "permissions",
    params(crate::edge::SystemId),
    responses(
        (status = 200, description = "Company number → object → groups → action → allowed.", body = crate::edge::PermissionTree),
        crate::edge::LookupErrors
    )
)]
pub async fn permissions(
    State(api): State<PermissionsState>,
    TokenPair(caller, _): TokenPair<Refusal>,
    _: SystemId,
) -> Result<Response, PermissionError> {
    let model = api.service.model().await?;
    let view = model.permissions_v2(caller.user_id.as_uuid()).map_err(|e| PermissionError::lookup(e, "obj"))?;
    Ok(Json(view).into_response())
}

/// The caller's actions on one object, per company.
#[utoipa::path(
    get,
    path = "/api/v2/permissions/{obj}",
    operation_id = "permissionsV2ByObj",
    tag = "permissions",
    params(("obj" = String, Path, description = "An object of the catalog.", example = "payments"), crate::edge::SystemId),
    responses(
        (status = 200, description = "Company number → action → allowed.", body = crate::edge::CompanyFlags),
        crate::edge::LookupErrors
    )
)]
pub async fn by_object(
    State(api): State<PermissionsState>,
    TokenPair(caller, _): TokenPair<Refusal>,
    _: SystemId,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, PermissionError> {
    let Path(obj) = path.map_err(|e| segment_error(&["obj"], &e))?;
    let obj = value("obj", &obj)?;
    let model = api.service.model().await?;
    let view =
        model.permissions_v2_object(caller.user_id.as_uuid(), &obj).map_err(|e| PermissionError::lookup(e, "obj"))?;
    Ok(Json(view).into_response())
}

/// The caller's actions on one object in one company.
#[utoipa::path(
    get,
    path = "/api/v2/permissions/{obj}/{cnum}",
    operation_id = "permissionsV2ByObjAndCnum",
    tag = "permissions",
    params(
        ("obj" = String, Path, description = "An object of the catalog.", example = "payments"),
        ("cnum" = String, Path, description = "The company number: up to 64 printable characters, no white space around it.", min_length = 1, max_length = 64, pattern = "^[^\\s\\x00-\\x1f\\x7f-\\x9f]([^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f])?$", example = "7700000001"),
        crate::edge::SystemId
    ),
    responses(
        (status = 200, description = "Action → allowed.", body = crate::edge::ActionFlags),
        crate::edge::LookupErrors
    )
)]
pub async fn by_object_and_company(
    State(api): State<PermissionsState>,
    TokenPair(caller, _): TokenPair<Refusal>,
    _: SystemId,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Response, PermissionError> {
    let Path((obj, cnum)) = path.map_err(|e| segment_error(&["obj", "cnum"], &e))?;
    let (obj, cnum) = (value("obj", &obj)?, value("cnum", &cnum)?);
    let model = api.service.model().await?;
    let view = model
        .permissions_v2_object_company(caller.user_id.as_uuid(), &obj, &cnum)
        .map_err(|e| PermissionError::lookup(e, "obj"))?;
    Ok(Json(view).into_response())
}
