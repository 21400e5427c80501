//! The demo merchant: a shop (`demo-shop`) whose notification endpoint is a
//! page of Portico itself, so that a newcomer sees the whole path work in a
//! browser: an event submitted, queued, rendered in the shop's chosen
//! version, signed, delivered, and verified on arrival with
//! `portico-webhook`, the library a merchant's service would use.
//!
//! - `POST /demo/merchant/notifications`: the shop's endpoint; verifies the
//!   signature with the shop's key and keeps the last notifications;
//! - `GET /demo/merchant`: the shop's ids and key and what arrived;
//! - `POST /demo/merchant/events/{type}`: submits a sample event for the shop.
//!
//! The page then uses the merchant API itself (`/v1/notifications/settings`,
//! `/v1/notifications/deliveries`) with the shop's key.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use portico_model::notify::{EventKind, MerchantIds, NotificationSettings, OperationTypes};
use portico_notify::NotifyState;
use serde_json::{Value, json};
use time::format_description::well_known::Rfc3339;

pub const MERCHANT_ID: &str = "demo-shop";
pub const PUBLIC_ID: &str = "demo-shop-public";
pub const SBP_MERCHANT_ID: &str = "MA0000000001";
/// Notifications the demo endpoint keeps.
const KEPT: usize = 20;

/// The demo endpoint's address on a server at `issuer`.
pub fn callback_url(issuer: &str) -> String {
    format!("{issuer}/demo/merchant/notifications")
}

/// Seeds the shop, its key and its settings (notifications to the demo
/// endpoint, every type on in its current version).
///
/// # Errors
/// When storage fails.
pub async fn seed(notify: &portico_notify::Notify, issuer: &str) -> anyhow::Result<()> {
    let ids = MerchantIds {
        merchant_id: MERCHANT_ID.to_owned(),
        public_id: PUBLIC_ID.to_owned(),
        sbp_merchant_id: SBP_MERCHANT_ID.to_owned(),
    };
    portico_notify::merchants::create(notify.store.as_ref(), &notify.sealer, ids, notify.clock.now()).await?;
    let settings =
        NotificationSettings { callback_url: callback_url(issuer), operation_types: OperationTypes::default() };
    notify.store.save_notification_settings(MERCHANT_ID, &settings).await?;
    Ok(())
}

/// What the demo endpoint received, newest first.
#[derive(Default)]
pub struct Inbox(Mutex<VecDeque<Value>>);

#[derive(Clone)]
struct Demo {
    notify: NotifyState,
    inbox: Arc<Inbox>,
}

pub fn router(notify: NotifyState) -> Router {
    Router::new()
        .route("/demo/merchant", get(shop))
        .route("/demo/merchant/notifications", post(receive))
        .route("/demo/merchant/events/{kind}", post(submit))
        .with_state(Demo { notify, inbox: Arc::default() })
}

/// The shop's API key, opened for the page (a demo shows its secrets).
async fn key(notify: &NotifyState) -> Result<String, Response> {
    let fail = |e: &dyn std::fmt::Display| {
        tracing::error!(error = %e, "the demo merchant is unavailable");
        (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({"message": "the demo merchant is unavailable"})))
            .into_response()
    };
    let merchant = match notify.store.find_merchant(MERCHANT_ID).await {
        Ok(Some(merchant)) => merchant,
        Ok(None) => return Err(fail(&"the database holds no demo merchant")),
        Err(e) => return Err(fail(&e)),
    };
    let key = portico_notify::merchants::signing_key(&notify.sealer, &merchant).map_err(|e| fail(&e))?;
    String::from_utf8(key).map_err(|e| fail(&e))
}

async fn shop(State(demo): State<Demo>) -> Response {
    let key = match key(&demo.notify).await {
        Ok(key) => key,
        Err(response) => return response,
    };
    let received: Vec<Value> = demo.inbox.0.lock().map(|inbox| inbox.iter().cloned().collect()).unwrap_or_default();
    Json(json!({
        "merchantId": MERCHANT_ID,
        "publicId": PUBLIC_ID,
        "sbpMerchantId": SBP_MERCHANT_ID,
        "apiKey": key,
        "received": received,
    }))
    .into_response()
}

/// The shop's endpoint: 200 for a notification whose signature verifies,
/// 401 otherwise; either way it is shown on the page.
async fn receive(State(demo): State<Demo>, headers: HeaderMap, body: Bytes) -> Response {
    let key = match key(&demo.notify).await {
        Ok(key) => key,
        Err(response) => return response,
    };
    let signature = headers.get("x-api-signature-sha256").and_then(|v| v.to_str().ok()).unwrap_or("");
    let verified = portico_webhook::verify(&body, signature, key.as_bytes(), PUBLIC_ID);
    let at = demo.notify.clock.now().format(&Rfc3339).unwrap_or_default();
    let entry = json!({
        "at": at,
        "verified": verified.is_ok(),
        "problem": verified.as_ref().err().map(ToString::to_string),
        "signature": signature,
        "body": serde_json::from_slice::<Value>(&body).unwrap_or_else(|_| String::from_utf8_lossy(&body).into()),
    });
    if let Ok(mut inbox) = demo.inbox.0.lock() {
        inbox.push_front(entry);
        inbox.truncate(KEPT);
    }
    if verified.is_ok() { StatusCode::OK } else { StatusCode::UNAUTHORIZED }.into_response()
}

async fn submit(State(demo): State<Demo>, Path(kind): Path<String>) -> Response {
    let Some(kind) = EventKind::parse(&kind) else {
        let message = "the event type must be payment, refund or subscription";
        return (StatusCode::NOT_FOUND, Json(json!({"message": message}))).into_response();
    };
    let now = demo.notify.clock.now();
    match portico_notify::samples::queue(demo.notify.store.as_ref(), MERCHANT_ID, kind, 1, now).await {
        Ok(ids) => {
            demo.notify.queued.notify_one();
            (StatusCode::ACCEPTED, Json(json!({"eventId": ids.first(), "result": "accepted"}))).into_response()
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot queue a demo event");
            (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({"message": "the event could not be stored"})))
                .into_response()
        }
    }
}
