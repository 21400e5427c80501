//! `GET` / `PUT /v1/notifications/settings`: the merchant, named by the API
//! key in `Authorization` (the key itself, or `Bearer <key>`), reads and
//! replaces its settings. The body has the spec's settings shape; absent
//! operation types get the current version, enabled.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use portico_model::notify::{Merchant, NotificationSettings};

use crate::NotifyState;
use crate::callback::check_callback_url;
use crate::merchants::key_hash;

/// The body of every error of the merchant API.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(as = NotificationError)]
pub struct ErrorBody {
    /// `unauthorized`, `bad_request`, `settings_not_found`, `delivery_not_found`, `internal_error`;
    /// internal and admin APIs also `not_found`, `merchant_not_found`, `merchant_exists`,
    /// `event_id_reused`, `admin_api_disabled`.
    #[schema(example = "bad_request")]
    pub code: &'static str,
    pub message: String,
}

pub(crate) fn error(status: StatusCode, code: &'static str, message: impl Into<String>) -> Response {
    (status, Json(ErrorBody { code, message: message.into() })).into_response()
}

/// The merchant whose API key the request carries (`Authorization`, with
/// or without `Bearer `): the merchant API's caller. Without a valid key
/// the request is answered 401 `unauthorized` before anything else is read.
pub struct MerchantCaller(pub Merchant);

impl axum::extract::FromRequestParts<NotifyState> for MerchantCaller {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, api: &NotifyState) -> Result<Self, Response> {
        merchant(api, &parts.headers).await.map(MerchantCaller)
    }
}

/// The merchant whose key the request carries.
async fn merchant(api: &NotifyState, headers: &HeaderMap) -> Result<Merchant, Response> {
    let key = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .map(|v| v.strip_prefix("Bearer ").unwrap_or(v).trim())
        .filter(|v| !v.is_empty() && v.len() <= 256);
    let Some(key) = key else {
        return Err(error(StatusCode::UNAUTHORIZED, "unauthorized", "send the merchant API key in Authorization"));
    };
    match api.store.find_merchant_by_key(&key_hash(key)).await {
        Ok(Some(merchant)) => Ok(merchant),
        Ok(None) => Err(error(StatusCode::UNAUTHORIZED, "unauthorized", "the merchant API key is not valid")),
        Err(e) => {
            tracing::error!(error = %e, "merchant look-up failed");
            Err(error(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "internal error"))
        }
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
        crate::settings::Unauthorized,
        crate::settings::Internal
    )
)]
pub async fn get_settings(MerchantCaller(merchant): MerchantCaller) -> Response {
    match merchant.settings {
        Some(settings) => Json(settings).into_response(),
        None => error(StatusCode::NOT_FOUND, "settings_not_found", "no settings yet: PUT them first"),
    }
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
        crate::settings::Unauthorized,
        crate::settings::Internal
    )
)]
pub async fn put_settings(
    State(api): State<NotifyState>,
    MerchantCaller(merchant): MerchantCaller,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let json_body = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json")));
    if !json_body {
        return error(StatusCode::BAD_REQUEST, "bad_request", "send the settings as application/json");
    }
    let Ok(body) = body else {
        return error(StatusCode::BAD_REQUEST, "bad_request", "the body could not be read");
    };
    let settings: NotificationSettings = match serde_json::from_slice(&body) {
        Ok(settings) => settings,
        Err(e) => return error(StatusCode::BAD_REQUEST, "bad_request", format!("the settings are not valid: {e}")),
    };
    if let Err(problem) = check_callback_url(&settings.callback_url, api.allow_insecure_callbacks) {
        return error(StatusCode::BAD_REQUEST, "bad_request", format!("callbackUrl: {problem}"));
    }
    match api.store.save_notification_settings(&merchant.ids.merchant_id, &settings).await {
        Ok(_) => Json(settings).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "saving notification settings failed");
            error(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "internal error")
        }
    }
}

/// 401.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum Unauthorized {
    /// `unauthorized`: the merchant API key is missing or not valid.
    #[response(status = 401)]
    Unauthorized(ErrorBody),
}

/// 500.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum Internal {
    /// `internal_error`: details only in the log.
    #[response(status = 500)]
    Internal(ErrorBody),
}
