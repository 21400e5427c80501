//! `/admin/v1/keys` and `/admin/v1/audit`.

use axum::Json;
use axum::extract::State;
use portico_api::error::ErrorBody;
use portico_api::openapi::AdminErrors;
use portico_api::{Admin, ApiError, Support};
use portico_model::ids::{ClientId, UserId};
use portico_storage::AuditQuery;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::AdminState;
use portico_api::{Params, page_size};

/// A signing key (its public half is in the JWKS while it is published).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyView {
    pub kid: String,
    /// The algorithm it signs with: `RS256`, `PS256`, `ES256` or `EdDSA`.
    #[schema(example = "ES256")]
    pub alg: String,
    /// Whether it signs new tokens.
    pub active: bool,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub retired_at: Option<OffsetDateTime>,
}

/// The key that signs from now on.
#[derive(Debug, Serialize, ToSchema)]
pub struct RotatedKey {
    pub kid: String,
}

#[utoipa::path(
    get,
    path = "/admin/v1/keys",
    operation_id = "listSigningKeys",
    tag = "signing keys",
    security(("adminToken" = [])),
    responses((status = 200, description = "Every signing key: the active one, then the retired ones, newest first.", body = Vec<KeyView>), AdminErrors)
)]
pub async fn keys(State(api): State<AdminState>, _: Admin) -> Result<Json<Vec<KeyView>>, ApiError> {
    let keys = api.service.list_keys().await.map_err(|e| e.into_api("listing signing keys"))?;
    Ok(Json(
        keys.into_iter()
            .map(|k| KeyView {
                kid: k.kid,
                alg: k.alg,
                active: k.retired_at.is_none(),
                created_at: k.created_at,
                retired_at: k.retired_at,
            })
            .collect(),
    ))
}

#[utoipa::path(
    post,
    path = "/admin/v1/keys/rotate",
    operation_id = "rotateSigningKey",
    tag = "signing keys",
    params(KeyAlgorithm),
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "A new key of the algorithm signs from now on; the previous one stays published until its tokens expire.", body = RotatedKey),
        (status = 400, description = "`bad_request`: an algorithm Portico does not sign with.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn rotate_key(
    State(api): State<AdminState>,
    admin: Admin,
    Params(which): Params<KeyAlgorithm>,
) -> Result<Json<RotatedKey>, ApiError> {
    let kid =
        api.service.rotate_key(&admin.actor, which.alg).await.map_err(|e| e.into_api("rotating the signing key"))?;
    Ok(Json(RotatedKey { kid }))
}

/// The key retired.
#[derive(Debug, Serialize, ToSchema)]
pub struct RetiredKey {
    pub kid: String,
}

#[utoipa::path(
    post,
    path = "/admin/v1/keys/retire",
    operation_id = "retireSigningAlgorithm",
    tag = "signing keys",
    params(RetiredAlgorithm),
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "The algorithm's active key is retired without a successor: nothing signs with the algorithm any more, and the key stays published until its tokens expire.", body = RetiredKey),
        (status = 400, description = "`bad_request`: not an algorithm Portico signs with.", body = ErrorBody),
        (status = 409, description = "`algorithm_configured`: the server is configured to sign with the algorithm; `algorithm_in_use`: clients still use it (named).", body = ErrorBody),
        (status = 404, description = "`key_not_found`: the algorithm has no active key.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn retire_key(
    State(api): State<AdminState>,
    admin: Admin,
    Params(which): Params<RetiredAlgorithm>,
) -> Result<Json<RetiredKey>, ApiError> {
    let kid = api
        .service
        .retire_key(&admin.actor, which.alg)
        .await
        .map_err(|e| e.into_api("retiring the signing algorithm"))?;
    Ok(Json(RetiredKey { kid }))
}

/// Which algorithm to stop signing with.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RetiredAlgorithm {
    /// `RS256`, `PS256`, `ES256` or `EdDSA`.
    #[param(inline)]
    pub alg: portico_crypto::jwt::Algorithm,
}

/// An event of the audit log.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditView {
    /// Its place in the log; pass the last one as `before` for the next page.
    pub id: i64,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: OffsetDateTime,
    #[schema(example = "user.blocked")]
    pub kind: String,
    pub user_id: Option<Uuid>,
    pub client_id: Option<String>,
    /// Who made the change through an administrative channel: `token:<name>`, `operator:<login>`, `cli`, `scim`.
    pub actor: Option<String>,
    /// Details of the kind (`{}` when it has none); never a secret.
    #[schema(value_type = Object)]
    pub detail: serde_json::Value,
}

/// A page of the audit log, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditPage {
    pub events: Vec<AuditView>,
    /// Pass as `before` for the next page; absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<i64>,
}

/// Which algorithm's key to replace.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct KeyAlgorithm {
    /// `RS256`, `PS256`, `ES256` or `EdDSA`; default: the server's signing algorithm.
    #[param(inline)]
    pub alg: Option<portico_crypto::jwt::Algorithm>,
}

/// Which events to read; every condition given must hold.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AuditSearch {
    pub user_id: Option<Uuid>,
    pub client_id: Option<String>,
    /// E.g. `login.failed`, `user.blocked`.
    pub kind: Option<String>,
    /// E.g. `token:ci`.
    pub actor: Option<String>,
    /// At or after this time (RFC 3339).
    #[serde(default, with = "time::serde::rfc3339::option")]
    #[param(value_type = Option<String>, format = DateTime)]
    pub from: Option<OffsetDateTime>,
    /// Before this time (RFC 3339).
    #[serde(default, with = "time::serde::rfc3339::option")]
    #[param(value_type = Option<String>, format = DateTime)]
    pub to: Option<OffsetDateTime>,
    /// The `next` of the previous page.
    pub before: Option<i64>,
    /// 1 to 200; default 50.
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
}

#[utoipa::path(
    get,
    path = "/admin/v1/audit",
    operation_id = "readAuditLog",
    tag = "audit",
    params(AuditSearch),
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "A page of matching events, newest first.", body = AuditPage),
        (status = 400, description = "`bad_request`: a parameter is unknown or malformed.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn audit(
    State(api): State<AdminState>,
    _: Support,
    Params(search): Params<AuditSearch>,
) -> Result<Json<AuditPage>, ApiError> {
    let limit = page_size(search.limit)?;
    let query = AuditQuery {
        user_id: search.user_id.map(UserId::from),
        client_id: search.client_id.map(ClientId::new),
        kind: search.kind,
        actor: search.actor,
        from: search.from,
        to: search.to,
        before: search.before,
        limit: limit + 1,
    };
    let mut entries = api.service.audit_log(&query).await.map_err(|e| e.into_api("reading the audit log"))?;
    let next = (entries.len() > limit as usize).then(|| {
        entries.truncate(limit as usize);
        entries.last().map(|e| e.id).unwrap_or_default()
    });
    let events = entries
        .into_iter()
        .map(|entry| AuditView {
            id: entry.id,
            at: entry.event.at,
            kind: entry.event.kind,
            user_id: entry.event.user_id.map(|id| id.as_uuid()),
            client_id: entry.event.client_id.map(|id| id.to_string()),
            actor: entry.event.actor,
            detail: match entry.event.detail {
                serde_json::Value::Null => serde_json::json!({}),
                detail => detail,
            },
        })
        .collect();
    Ok(Json(AuditPage { events, next }))
}
