//! The v2 reads: `GET /api/v2/permissions`, `/api/v2/permissions/{obj}` and
//! `/api/v2/permissions/{obj}/{cnum}`.

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use crate::PermissionsState;
use crate::error::ApiError;
use crate::request::value;

fn segment_error(_: PathRejection) -> ApiError {
    ApiError::bad_request("path", "a path parameter is not a valid path segment")
}

pub async fn permissions(State(api): State<PermissionsState>, headers: HeaderMap) -> Result<Response, ApiError> {
    let caller = api.caller(&headers, true).await?;
    let model = api.service.model().await?;
    let view = model.permissions_v2(caller.user_id).map_err(|e| ApiError::lookup(e, "obj"))?;
    Ok(Json(view).into_response())
}

pub async fn by_object(
    State(api): State<PermissionsState>,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let caller = api.caller(&headers, true).await?;
    let Path(obj) = path.map_err(segment_error)?;
    let obj = value("obj", &obj)?;
    let model = api.service.model().await?;
    let view = model.permissions_v2_object(caller.user_id, &obj).map_err(|e| ApiError::lookup(e, "obj"))?;
    Ok(Json(view).into_response())
}

pub async fn by_object_and_company(
    State(api): State<PermissionsState>,
    headers: HeaderMap,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Response, ApiError> {
    let caller = api.caller(&headers, true).await?;
    let Path((obj, cnum)) = path.map_err(segment_error)?;
    let (obj, cnum) = (value("obj", &obj)?, value("cnum", &cnum)?);
    let model = api.service.model().await?;
    let view =
        model.permissions_v2_object_company(caller.user_id, &obj, &cnum).map_err(|e| ApiError::lookup(e, "obj"))?;
    Ok(Json(view).into_response())
}
