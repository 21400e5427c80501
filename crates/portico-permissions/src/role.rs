//! `POST /api/v1/employee/role`: an EIO looks up the role of an employee.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, header};
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use crate::PermissionsState;
use crate::error::PermissionError;
use crate::request::{Refusal, SystemId, value};
use portico_api::TokenPair;
use portico_model::text::echo;

/// `EmployeeRoleResponse`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EmployeeRoleResponse {
    pub id: Uuid,
    pub code: Option<String>,
    pub name: Option<String>,
}

/// The role request, checked field by field so that each problem names its field.
fn parse(headers: &HeaderMap, body: Result<Bytes, BytesRejection>) -> Result<(Uuid, String), PermissionError> {
    let body =
        body.map_err(|e| PermissionError::bad_request("body", format!("the request body could not be read: {e}")))?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(PermissionError::bad_request(
            "body",
            "the request body is missing; send {\"userId\": ..., \"cnum\": ...}",
        ));
    }
    let json =
        headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).and_then(|v| v.split(';').next()).is_some_and(
            |v| {
                let v = v.trim();
                v.eq_ignore_ascii_case("application/json") || v.to_ascii_lowercase().ends_with("+json")
            },
        );
    if !json {
        return Err(PermissionError::bad_request(
            "body",
            "the request body must be JSON (Content-Type: application/json)",
        ));
    }
    let parsed: Value = serde_json::from_slice(&body)
        .map_err(|e| PermissionError::bad_request("body", format!("the request body is not valid JSON: {e}")))?;
    let Value::Object(fields) = parsed else {
        return Err(PermissionError::bad_request("body", "the request body must be a JSON object"));
    };
    if let Some(unknown) = fields.keys().find(|k| !matches!(k.as_str(), "userId" | "cnum")) {
        return Err(PermissionError::bad_request(
            "body",
            format!("unknown field {}; only userId and cnum are accepted", echo(unknown)),
        ));
    }
    let user_id = match fields.get("userId") {
        None | Some(Value::Null) => return Err(PermissionError::bad_request("userId", "userId is missing")),
        Some(Value::String(text)) => Uuid::parse_str(text.trim())
            .map_err(|_| PermissionError::bad_request("userId", format!("userId {} is not a UUID", echo(text))))?,
        Some(_) => return Err(PermissionError::bad_request("userId", "userId must be a UUID string")),
    };
    let cnum = match fields.get("cnum") {
        None | Some(Value::Null) => return Err(PermissionError::bad_request("cnum", "cnum is missing")),
        Some(Value::String(text)) => value("cnum", text)?,
        Some(_) => return Err(PermissionError::bad_request("cnum", "cnum must be a string")),
    };
    Ok((user_id, cnum))
}

/// The role of an employee, for the EIO of the company.
#[utoipa::path(
    post,
    path = "/api/v1/employee/role",
    operation_id = "employeeRole",
    tag = "permissions",
    params(crate::edge::SystemId),
    request_body = crate::edge::EmployeeRoleRequest,
    responses(
        (status = 200, description = "The employee's role.", body = EmployeeRoleResponse),
        (status = 400, description = "`header_is_missing`, `bad_request`, `employee_not_found`, `user_not_found`, `role_not_found`.", body = crate::error::ErrorResponseDto),
        (status = 403, description = "`executive_not_eio`, `unavailable_role`.", body = crate::error::ErrorResponseDto),
        crate::edge::Unauthorized,
        crate::edge::Internal
    )
)]
pub async fn employee_role(
    State(api): State<PermissionsState>,
    TokenPair(caller, _): TokenPair<Refusal>,
    _: SystemId,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<EmployeeRoleResponse>, PermissionError> {
    let (user_id, cnum) = parse(&headers, body)?;
    let model = api.service.model().await?;
    if !model.is_eio(caller.user_id.as_uuid(), &cnum) {
        return Err(PermissionError::NotEio(format!("the caller is not the EIO of company {cnum:?} (cnum)")));
    }
    if api.store.find_user(user_id.into()).await?.is_none() {
        return Err(PermissionError::UserNotFound(format!("there is no user {user_id} (userId)")));
    }
    if model.employee(user_id, &cnum).is_none() {
        return Err(PermissionError::EmployeeNotFound(format!(
            "user {user_id} (userId) is not an active employee of company {cnum:?} (cnum)"
        )));
    }
    let role = model.role_of(user_id, &cnum).ok_or_else(|| {
        PermissionError::RoleNotFound(format!("user {user_id} (userId) has no role in company {cnum:?}"))
    })?;
    if !role.available {
        return Err(PermissionError::UnavailableRole(format!("the role of user {user_id} (userId) is not available")));
    }
    Ok(Json(EmployeeRoleResponse { id: role.id, code: Some(role.code.clone()), name: role.name.clone() }))
}
