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
use serde_json::json;

use crate::NotifyState;
use crate::callback::check_callback_url;
use crate::merchants::key_hash;

pub(crate) fn error(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    (status, Json(json!({ "code": code, "message": message.into() }))).into_response()
}

/// The merchant whose key the request carries.
pub(crate) async fn merchant(api: &NotifyState, headers: &HeaderMap) -> Result<Merchant, Response> {
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

pub async fn get_settings(State(api): State<NotifyState>, headers: HeaderMap) -> Response {
    match merchant(&api, &headers).await {
        Ok(merchant) => match merchant.settings {
            Some(settings) => Json(settings).into_response(),
            None => error(StatusCode::NOT_FOUND, "settings_not_found", "no settings yet: PUT them first"),
        },
        Err(response) => response,
    }
}

pub async fn put_settings(
    State(api): State<NotifyState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let merchant = match merchant(&api, &headers).await {
        Ok(merchant) => merchant,
        Err(response) => return response,
    };
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
