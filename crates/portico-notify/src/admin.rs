//! The merchants' admin API, for the bank's operators and systems, with
//! the admin token (`Authorization: Bearer <token>`); the same work as
//! `portico merchants add|list|rotate-key`:
//!
//! - `GET /admin/v1/merchants`: every merchant and its callback address;
//! - `POST /admin/v1/merchants`: registers one; the answer carries its API
//!   key, shown this once (Portico keeps only its hash and a sealed copy);
//! - `POST /admin/v1/merchants/{merchantId}/key`: a new key; the old one
//!   stops working at once;
//! - `GET /admin/v1/merchants/{merchantId}/deliveries`: the merchant's
//!   deliveries with every attempt, as the merchant sees them;
//! - `POST /admin/v1/merchants/{merchantId}/deliveries/{id}/resend`: a new
//!   delivery of the same event, now.
//!
//! Without a configured admin token the API is off (404 naming the setting).
//! Registrations and new keys are recorded in the audit log with the token
//! that made them.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use portico_api::openapi::AdminErrors;
use portico_api::{Admin, ApiError, PageParams, Params, pagination};
use portico_model::audit::{AuditEvent, AuditKind};
use portico_model::notify::MerchantIds;
use portico_storage::StorageError;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::NotifyState;

/// A merchant as the admin API lists it (never its key).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MerchantView {
    #[schema(example = "shop-1")]
    pub merchant_id: String,
    /// The id notifications name the merchant by.
    #[schema(example = "pub-shop-1")]
    pub public_id: String,
    /// The merchant's id in the fast payment system.
    #[schema(example = "MA0000000001")]
    pub sbp_merchant_id: String,
    /// Where notifications go; `null` until the merchant sets it.
    pub callback_url: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
}

/// A merchant to register.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewMerchant {
    /// 1 to 64 Latin letters, digits, `-`, `_` or `.`.
    #[schema(pattern = "^[A-Za-z0-9._-]{1,64}$", example = "shop-1")]
    pub merchant_id: String,
    /// 1 to 64 Latin letters, digits, `-`, `_` or `.`.
    #[schema(pattern = "^[A-Za-z0-9._-]{1,64}$", example = "pub-shop-1")]
    pub public_id: String,
    /// 1 to 12 Latin letters, digits, `-`, `_` or `.`.
    #[schema(pattern = "^[A-Za-z0-9._-]{1,12}$", example = "MA0000000001")]
    pub sbp_merchant_id: String,
}

/// A page of merchants, by id.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MerchantPage {
    pub merchants: Vec<MerchantView>,
    /// Pass as `after` for the next page; absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// A merchant's new API key, shown this once: the merchant authenticates
/// with it and verifies its notifications' signatures with it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MerchantKey {
    pub merchant_id: String,
    pub api_key: String,
}

#[utoipa::path(
    get,
    path = "/admin/v1/merchants",
    operation_id = "listMerchants",
    tag = "merchants",
    security(("adminToken" = [])),
    params(PageParams),
    responses(
        (status = 200, description = "A page of merchants, by id.", body = MerchantPage),
        (status = 400, description = "`bad_request`: a parameter is unknown or malformed (`limit` 1 to 200).", body = portico_api::error::ErrorBody),
        AdminErrors
    )
)]
pub async fn list(
    State(api): State<NotifyState>,
    _: Admin,
    Params(params): Params<PageParams>,
) -> Result<Response, ApiError> {
    let (page, limit) = params.read()?;
    match api.store.list_merchants(page).await {
        Ok(merchants) => {
            let (merchants, next) = pagination::split(merchants, limit, |m| m.ids.merchant_id.as_str());
            let merchants: Vec<MerchantView> = merchants
                .into_iter()
                .map(|m| MerchantView {
                    merchant_id: m.ids.merchant_id,
                    public_id: m.ids.public_id,
                    sbp_merchant_id: m.ids.sbp_merchant_id,
                    callback_url: m.settings.map(|s| s.callback_url),
                    created_at: m.created_at,
                })
                .collect();
            Ok(Json(MerchantPage { merchants, next }).into_response())
        }
        Err(e) => Err(ApiError::storage("listing merchants", &e)),
    }
}

#[utoipa::path(
    post,
    path = "/admin/v1/merchants",
    operation_id = "createMerchant",
    tag = "merchants",
    request_body = NewMerchant,
    security(("adminToken" = [])),
    responses(
        (status = 201, description = "Registered; the key is shown this once.", body = MerchantKey),
        (status = 400, description = "`bad_request`: the body is no `NewMerchant`, or an id is malformed (named).", body = portico_api::error::ErrorBody),
        (status = 409, description = "`merchant_exists`: the merchant id or public id is taken.", body = portico_api::error::ErrorBody),
        AdminErrors
    )
)]
pub async fn create(
    State(api): State<NotifyState>,
    admin: Admin,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(|_| ApiError::bad_request("the body could not be read"))?;
    let new: NewMerchant =
        serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(format!("the merchant is not valid: {e}")))?;
    let ids =
        MerchantIds { merchant_id: new.merchant_id, public_id: new.public_id, sbp_merchant_id: new.sbp_merchant_id };
    crate::merchants::check_ids(&ids).map_err(|problem| ApiError::bad_request(problem.to_string()))?;
    let merchant_id = ids.merchant_id.clone();
    match register_merchant(&MerchantKeeper::of(&api), &admin.actor, ids).await {
        Ok(api_key) => Ok((StatusCode::CREATED, Json(MerchantKey { merchant_id, api_key })).into_response()),
        Err(StorageError::Conflict(_)) => {
            Err(ApiError::conflict("merchant_exists", "a merchant with this merchant id or public id exists"))
        }
        Err(e) => Err(ApiError::storage("registering a merchant", &e)),
    }
}

/// Registers a merchant whose ids passed [`crate::merchants::check_ids`],
/// recorded in the audit log with `actor`; its new API key, shown once.
/// The admin API, the console and the CLI share it.
///
/// # Errors
/// `Conflict` when the merchant id or public id is taken; the store.
pub async fn register_merchant(
    keeper: &MerchantKeeper<'_>,
    actor: &portico_model::audit::Actor,
    ids: MerchantIds,
) -> Result<String, StorageError> {
    let merchant_id = ids.merchant_id.clone();
    let now = keeper.clock.now();
    let api_key = crate::merchants::create(keeper.store, keeper.sealer, ids, now).await?;
    tracing::info!(%merchant_id, %actor, "merchant registered");
    let event = AuditEvent::new(now, AuditKind::MerchantCreated).by(actor);
    portico_api::audit(keeper.store, event.detail(serde_json::json!({ "merchant_id": merchant_id }))).await;
    Ok(api_key)
}

/// What registering merchants and their keys needs: the store, the sealer
/// of their keys, the clock. The admin API, the console and the CLI each
/// hold them their own way.
pub struct MerchantKeeper<'a> {
    pub store: &'a dyn portico_storage::Storage,
    pub sealer: &'a portico_crypto::seal::Sealer,
    pub clock: &'a dyn portico_model::clock::Clock,
}

impl<'a> MerchantKeeper<'a> {
    /// The notification service's own.
    pub fn of(notify: &'a crate::Notify) -> Self {
        Self { store: notify.store.as_ref(), sealer: &notify.sealer, clock: notify.clock.as_ref() }
    }
}

#[utoipa::path(
    post,
    path = "/admin/v1/merchants/{merchantId}/key",
    operation_id = "rotateMerchantKey",
    tag = "merchants",
    params(("merchantId" = String, Path, description = "The merchant.")),
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "The new key, shown this once; the old one no longer works.", body = MerchantKey),
        (status = 401, description = "`unauthorized`: the admin token is missing or wrong.", body = portico_api::error::ErrorBody),
        (status = 404, description = "`merchant_not_found`, or `admin_api_disabled`.", body = portico_api::error::ErrorBody),
        (status = 503, description = "`temporarily_unavailable`: nothing was changed; try again after `Retry-After`.", body = portico_api::error::ErrorBody),
        (status = 500, description = "`internal_error`: nothing was changed.", body = portico_api::error::ErrorBody)
    )
)]
pub async fn rotate_key(
    State(api): State<NotifyState>,
    admin: Admin,
    merchant_id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    // A segment that is not UTF-8 names no merchant: 404 below, as JSON.
    let merchant_id = merchant_id.map(|Path(id)| id).unwrap_or_default();
    match rotate_merchant_key(&MerchantKeeper::of(&api), &admin.actor, &merchant_id).await {
        Ok(Some(api_key)) => Ok(Json(MerchantKey { merchant_id, api_key }).into_response()),
        Ok(None) => Err(ApiError::not_found("merchant_not_found", "there is no merchant with this id")),
        Err(e) => Err(ApiError::storage("rotating a merchant key", &e)),
    }
}

/// A new API key for the merchant (the old one stops working at once),
/// recorded in the audit log with `actor`; `None` for an unknown merchant.
/// The admin API and the console share it.
///
/// # Errors
/// When the store fails.
pub async fn rotate_merchant_key(
    keeper: &MerchantKeeper<'_>,
    actor: &portico_model::audit::Actor,
    merchant_id: &str,
) -> Result<Option<String>, StorageError> {
    let Some(api_key) = crate::merchants::rotate_key(keeper.store, keeper.sealer, merchant_id).await? else {
        return Ok(None);
    };
    tracing::info!(%merchant_id, %actor, "merchant key rotated");
    let event = AuditEvent::new(keeper.clock.now(), AuditKind::MerchantKeyRotated).by(actor);
    portico_api::audit(keeper.store, event.detail(serde_json::json!({ "merchant_id": merchant_id }))).await;
    Ok(Some(api_key))
}

#[utoipa::path(
    get,
    path = "/admin/v1/merchants/{merchantId}/deliveries",
    operation_id = "listMerchantDeliveries",
    tag = "merchants",
    params(("merchantId" = String, Path, description = "The merchant."), crate::deliveries::DeliveryFilter),
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "A page of the merchant's deliveries, newest first, each with every attempt.", body = crate::deliveries::DeliveryPage),
        (status = 400, description = "`bad_request`: a parameter is not valid or unknown.", body = portico_api::error::ErrorBody),
        (status = 404, description = "`merchant_not_found`, or `admin_api_disabled`.", body = portico_api::error::ErrorBody),
        AdminErrors
    )
)]
pub async fn deliveries(
    State(api): State<NotifyState>,
    _: Admin,
    merchant_id: Result<Path<String>, PathRejection>,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
) -> Result<Response, ApiError> {
    let merchant_id = merchant_id.map(|Path(id)| id).unwrap_or_default();
    let filter = crate::deliveries::Filter::parse(query.as_deref()).map_err(ApiError::bad_request)?;
    let storage = |e: StorageError| ApiError::storage("listing deliveries", &e);
    if api.store.find_merchant(&merchant_id).await.map_err(storage)?.is_none() {
        return Err(ApiError::not_found("merchant_not_found", "there is no merchant with this id"));
    }
    let page = crate::deliveries::page_of(&api, &merchant_id, &filter).await.map_err(storage)?;
    Ok(Json(page).into_response())
}

#[utoipa::path(
    post,
    path = "/admin/v1/merchants/{merchantId}/deliveries/{id}/resend",
    operation_id = "resendMerchantDelivery",
    tag = "merchants",
    params(
        ("merchantId" = String, Path, description = "The merchant."),
        ("id" = uuid::Uuid, Path, description = "The delivery to repeat.")
    ),
    security(("adminToken" = [])),
    responses(
        (status = 202, description = "The new delivery, `PENDING`, with a fresh 24 h window.", body = crate::deliveries::DeliveryView),
        (status = 404, description = "`delivery_not_found`: the merchant has no such delivery.", body = portico_api::error::ErrorBody),
        AdminErrors
    )
)]
pub async fn resend(
    State(api): State<NotifyState>,
    admin: Admin,
    ids: Result<Path<(String, String)>, PathRejection>,
) -> Result<Response, ApiError> {
    let (merchant_id, id) = ids.map(|Path(ids)| ids).unwrap_or_default();
    let gone = || ApiError::not_found("delivery_not_found", "the merchant has no such delivery");
    let id = id.parse::<portico_model::ids::DeliveryId>().map_err(|_| gone())?;
    let resent = resend_delivery(&api, &admin.actor, &merchant_id, id)
        .await
        .map_err(|e| ApiError::storage("resending a delivery", &e))?
        .ok_or_else(gone)?;
    Ok((StatusCode::ACCEPTED, Json(resent)).into_response())
}

/// An operator's resend of the merchant's delivery `id`: a new delivery of
/// its event, recorded in the audit log with `actor`; `None` when the
/// merchant has no such delivery. The admin API and the console share it.
///
/// # Errors
/// When the store fails.
pub async fn resend_delivery(
    api: &NotifyState,
    actor: &portico_model::audit::Actor,
    merchant_id: &str,
    id: portico_model::ids::DeliveryId,
) -> Result<Option<crate::deliveries::DeliveryView>, StorageError> {
    let Some(resent) = crate::deliveries::resend_of(api, merchant_id, id).await? else {
        return Ok(None);
    };
    tracing::info!(%merchant_id, delivery = %resent.id, %actor, "delivery resent by an operator");
    let detail = serde_json::json!({ "merchant_id": merchant_id, "delivery": id, "new_delivery": resent.id });
    let event = AuditEvent::new(api.clock.now(), AuditKind::DeliveryResent).by(actor).detail(detail);
    portico_api::audit(api.store.as_ref(), event).await;
    Ok(Some(resent))
}
