//! The access control center: `GET /api/v1/acc-permissions/{cnum}` (the
//! calling EIO's own flags per ACC section) and
//! `GET /api/v2/acc-permissions/{userId}/{cnum}` (which sections a colleague
//! may view).

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use portico_model::permissions::AccPermission;
use uuid::Uuid;

use crate::PermissionsState;
use crate::error::PermissionError;
use crate::request::{Refusal, SystemId, segment_error, value};
use portico_api::TokenPair;

/// The calling EIO's own flags per section of the access control center.
#[utoipa::path(
    get,
    path = "/api/v1/acc-permissions/{cnum}",
    operation_id = "getAccPermissionsByCnum",
    tag = "permissions",
    params(("cnum" = String, Path, description = "The company number: up to 64 printable characters, no white space around it.", min_length = 1, max_length = 64, pattern = "^[^\\s\\x00-\\x1f\\x7f-\\x9f]([^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f])?$", example = "7700000001"), crate::edge::SystemId),
    responses(
        (status = 200, description = "Section → action → allowed.", body = crate::edge::CompanyFlags),
        (status = 400, description = "`header_is_missing`, `bad_request` (an `ErrorResponseDTO`), or no active employee found for the caller (a `GenericError`).", body = crate::error::GenericError),
        (status = 403, description = "`executive_not_eio`.", body = crate::error::ErrorResponseDto),
        crate::edge::Unauthorized,
        crate::edge::Internal
    )
)]
pub async fn by_company(
    State(api): State<PermissionsState>,
    TokenPair(caller, _): TokenPair<Refusal>,
    _: SystemId,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, PermissionError> {
    let Path(cnum) = path.map_err(|e| segment_error(&["cnum"], &e))?;
    let cnum = value("cnum", &cnum)?;
    let model = api.service.model().await?;
    if model.employee(caller.user_id.as_uuid(), &cnum).is_none() {
        return Err(PermissionError::Generic(format!(
            "no active employee found for the caller in company {cnum:?} (cnum)"
        )));
    }
    if !model.is_eio(caller.user_id.as_uuid(), &cnum) {
        return Err(PermissionError::NotEio(format!("the caller is not the EIO of company {cnum:?} (cnum)")));
    }
    Ok(Json(model.acc_permissions_v1(caller.user_id.as_uuid(), &cnum)).into_response())
}

/// Which sections of the access control center a colleague may view.
#[utoipa::path(
    get,
    path = "/api/v2/acc-permissions/{userId}/{cnum}",
    operation_id = "getAccPermissionsByUserIdAndCnum",
    tag = "permissions",
    params(
        ("userId" = uuid::Uuid, Path, description = "The colleague."),
        ("cnum" = String, Path, description = "The company number: up to 64 printable characters, no white space around it.", min_length = 1, max_length = 64, pattern = "^[^\\s\\x00-\\x1f\\x7f-\\x9f]([^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f])?$", example = "7700000001"),
        crate::edge::SystemId
    ),
    responses(
        (status = 200, description = "The sections.", body = Vec<AccPermission>),
        (status = 400, description = "`header_is_missing`, `bad_request`, `invalid_parameter_format`, `employee_not_found`, `role_not_found`.", body = crate::error::ErrorResponseDto),
        (status = 403, description = "`not_employee`.", body = crate::error::ErrorResponseDto),
        crate::edge::Unauthorized,
        crate::edge::Internal
    )
)]
pub async fn by_user_and_company(
    State(api): State<PermissionsState>,
    TokenPair(caller, _): TokenPair<Refusal>,
    _: SystemId,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<Vec<AccPermission>>, PermissionError> {
    let Path((user_id, cnum)) = path.map_err(|e| segment_error(&["userId", "cnum"], &e))?;
    let user_id = value("userId", &user_id)?;
    let user_id = Uuid::parse_str(&user_id).map_err(|_| PermissionError::InvalidParameterFormat("userId"))?;
    let cnum = value("cnum", &cnum)?;
    let model = api.service.model().await?;
    if model.employee(caller.user_id.as_uuid(), &cnum).is_none() {
        return Err(PermissionError::NotEmployee(format!(
            "the caller is not an active employee of company {cnum:?} (cnum)"
        )));
    }
    if !model.knows_user(user_id) {
        return Err(PermissionError::EmployeeNotFound(format!(
            "user {user_id} (userId) is not an employee of any company"
        )));
    }
    if model.employee(user_id, &cnum).is_none() {
        return Err(PermissionError::NotEmployee(format!(
            "user {user_id} (userId) and the caller do not share company {cnum:?} (cnum)"
        )));
    }
    if model.role_of(user_id, &cnum).is_none() {
        return Err(PermissionError::RoleNotFound(format!("user {user_id} (userId) has no role in company {cnum:?}")));
    }
    Ok(Json(model.acc_permissions_v2(user_id, &cnum)))
}
