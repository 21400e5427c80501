//! `GET` / `PUT /v1/notifications/settings`: the merchant, named by the API
//! key in `Authorization` (the key itself, or `Bearer <key>`), reads and
//! replaces its settings. The body has the spec's settings shape; absent
//! operation types get the current version, enabled.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, header};
use portico_model::notify::{Merchant, NotificationSettings};

use crate::NotifyState;
use crate::callback::check_callback_url;
use crate::error::{ErrorBody, NotifyError};
use crate::merchants::key_hash;

/// The merchant whose API key the request carries (`Authorization`, with
/// or without `Bearer `): the merchant API's caller. Without a valid key
/// the request is answered 401 `unauthorized` before anything else is read.
pub struct MerchantCaller(pub Merchant);

impl axum::extract::FromRequestParts<NotifyState> for MerchantCaller {
    type Rejection = NotifyError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        api: &NotifyState,
    ) -> Result<Self, NotifyError> {
        merchant(api, &parts.headers).await.map(MerchantCaller)
    }
}

/// The merchant whose key the request carries.
async fn merchant(api: &NotifyState, headers: &HeaderMap) -> Result<Merchant, NotifyError> {
    let key = portico_api::bearer(headers).filter(|v| v.len() <= 256);
    let Some(key) = key else {
        let missing = "send the merchant API key in Authorization";
        return Err(NotifyError::Unauthorized(missing, portico_api::Challenge::Credentials));
    };
    match api.store.find_merchant_by_key(&key_hash(key)).await {
        Ok(Some(merchant)) => Ok(merchant),
        Ok(None) => {
            Err(NotifyError::Unauthorized("the merchant API key is not valid", portico_api::Challenge::InvalidToken))
        }
        Err(e) => Err(NotifyError::storage("merchant look-up", &e)),
    }
}

/// The merchant's notification settings.
#[utoipa::path(
    get,
    path = "/v1/notifications/settings",
    operation_id = "getNotificationSettings",
    tag = "notifications",
    responses(
        (status = 200, description = "The settings.", body = NotificationSettings),
        (status = 404, description = "`settings_not_found`: none set yet.", body = ErrorBody),
        crate::error::Unauthorized,
        crate::error::Internal
    )
)]
pub async fn get_settings(MerchantCaller(merchant): MerchantCaller) -> Result<Json<NotificationSettings>, NotifyError> {
    merchant.settings.map(Json).ok_or(NotifyError::NotFound("settings_not_found", "no settings yet: PUT them first"))
}

/// Replaces the merchant's notification settings; operation types left out
/// get their current version, enabled.
#[utoipa::path(
    put,
    path = "/v1/notifications/settings",
    operation_id = "putNotificationSettings",
    tag = "notifications",
    request_body = NotificationSettings,
    responses(
        (status = 200, description = "The settings as stored.", body = NotificationSettings),
        (status = 400, description = "`bad_request`: not JSON, not the settings shape, or `callbackUrl` not an absolute https URL.", body = ErrorBody),
        crate::error::Unauthorized,
        crate::error::Internal
    )
)]
pub async fn put_settings(
    State(api): State<NotifyState>,
    MerchantCaller(merchant): MerchantCaller,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<NotificationSettings>, NotifyError> {
    let json_body = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json")));
    if !json_body {
        return Err(NotifyError::BadRequest("send the settings as application/json".into()));
    }
    let body = body.map_err(|_| NotifyError::BadRequest("the body could not be read".into()))?;
    let settings: NotificationSettings = serde_json::from_slice(&body)
        .map_err(|e| NotifyError::BadRequest(format!("the settings are not valid: {e}")))?;
    check_callback_url(&settings.callback_url, api.allow_insecure_callbacks)
        .map_err(|problem| NotifyError::BadRequest(format!("callbackUrl: {problem}")))?;
    api.store
        .save_notification_settings(&merchant.ids.merchant_id, &settings)
        .await
        .map_err(|e| NotifyError::storage("saving notification settings", &e))?;
    Ok(Json(settings))
}
