//! The deprecated v1 reads: `GET /api/v1/permissions` and
//! `GET /api/v1/permissions/{object_path}`. `x-system-id` is optional here,
//! and every answer carries `Deprecation` (RFC 9745) and a `Link` to the
//! v2 successor.

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use portico_model::permissions::PermissionsContext;
use portico_tokens::Caller;

use crate::PermissionsState;
use crate::error::PermissionError;
use crate::request::{array, cnum_query, segment_error};
use portico_api::TokenPair;

/// When the v1 reads were deprecated (2026-01-01T00:00:00Z), as RFC 9745 writes it.
pub const DEPRECATED_SINCE: &str = "@1767225600";

/// The v1 reads' answer to a refused token pair: the API's 401, with the
/// deprecation headers every v1 answer carries.
pub struct Legacy;

impl portico_api::PairRefusal for Legacy {
    fn refusal(error: portico_tokens::TokenPairError) -> Response {
        deprecated(Err(PermissionError::from(error)))
    }
}

fn deprecated(result: Result<Json<PermissionsContext>, PermissionError>) -> Response {
    let mut response = result.into_response();
    let headers = response.headers_mut();
    headers.insert(HeaderName::from_static("deprecation"), HeaderValue::from_static(DEPRECATED_SINCE));
    headers
        .insert(axum::http::header::LINK, HeaderValue::from_static("</api/v2/permissions>; rel=\"successor-version\""));
    response
}

async fn context(
    api: &PermissionsState,
    caller: &Caller,
    query: Option<&str>,
    objects: Option<Vec<String>>,
) -> Result<Json<PermissionsContext>, PermissionError> {
    let cnums = cnum_query(query)?;
    let model = api.service.model().await?;
    model
        .permissions_v1(caller.user_id.as_uuid(), caller.client_id.as_str(), cnums.as_deref(), objects.as_deref())
        .map(Json)
        .map_err(|e| PermissionError::lookup(e, "object_path"))
}

/// The caller's permissions per company (deprecated: use `permissionsV2`).
#[utoipa::path(
    get,
    path = "/api/v1/permissions",
    operation_id = "permissionsV1Legacy",
    tag = "permissions",
    params(crate::edge::OptionalSystemId, crate::edge::CnumArray),
    responses(crate::edge::DeprecatedContext, crate::edge::LookupErrors)
)]
#[deprecated = "the v1 reads are deprecated; their handlers stay for old consumers"]
pub async fn permissions(
    State(api): State<PermissionsState>,
    TokenPair(caller, _): TokenPair<Legacy>,
    RawQuery(query): RawQuery,
) -> Response {
    let result = async { context(&api, &caller, query.as_deref(), None).await }.await;
    deprecated(result)
}

/// The caller's permissions on the given objects (deprecated: use `permissionsV2ByObj`).
#[utoipa::path(
    get,
    path = "/api/v1/permissions/{object_path}",
    operation_id = "permissionsV1LegacyByObj",
    tag = "permissions",
    params(
        ("object_path" = Vec<String>, Path, style = Simple, description = "Object paths, comma-separated.", example = json!(["payments", "reports"])),
        crate::edge::OptionalSystemId,
        crate::edge::CnumArray
    ),
    responses(
        crate::edge::DeprecatedContext,
        crate::edge::LookupErrors
    )
)]
#[deprecated = "the v1 reads are deprecated; their handlers stay for old consumers"]
pub async fn permissions_by_object(
    State(api): State<PermissionsState>,
    TokenPair(caller, _): TokenPair<Legacy>,
    path: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Response {
    let result = async {
        let Path(object_path) = path.map_err(|e| segment_error(&["object_path"], &e))?;
        let objects = array("object_path", [object_path.as_str()])?;
        context(&api, &caller, query.as_deref(), Some(objects)).await
    }
    .await;
    deprecated(result)
}
