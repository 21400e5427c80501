//! `POST /internal/v1/notifications/events/{payment|refund|subscription}`:
//! other bank systems submit events, authenticated by the internal token.
//!
//! Body: `{"eventId": "...", "merchantId": "...", "event": {...}}` with the
//! canonical event of the kind. An accepted event is stored with its pending
//! delivery in one transaction before the answer (202), so nothing
//! acknowledged is lost. The same event id with the same content is
//! answered 202 `duplicate` and changes nothing; with other content, 409.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use portico_model::notify::{Delivery, EventKind, PaymentEvent, RefundEvent, StoredEvent, SubscriptionEvent};
use portico_storage::{Intake, StorageError};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::NotifyState;
use crate::settings::error;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Submission {
    event_id: String,
    merchant_id: String,
    event: Value,
}

/// The canonical event `T` from JSON; an error names the field.
fn parse<T: serde::de::DeserializeOwned>(event: &Value) -> Result<T, String> {
    serde_path_to_error::deserialize(event.clone()).map_err(|e| {
        let path = e.path().to_string();
        if path == "." { e.inner().to_string() } else { format!("{path}: {}", e.inner()) }
    })
}

/// A field over its bound, named.
fn bounded(field: &str, value: Option<&str>, max: usize) -> Result<(), String> {
    match value {
        Some(v) if v.chars().count() > max => Err(format!("{field} is longer than {max} characters")),
        _ => Ok(()),
    }
}

/// Parses and checks the canonical event of `kind` (the bounds of payment v1).
fn check_event(kind: EventKind, event: &Value) -> Result<Value, String> {
    let parsed = match kind {
        EventKind::Payment => {
            let e: PaymentEvent = parse(event)?;
            bounded("qrId", e.qr_id.as_deref(), 32)?;
            bounded("additionalInfo", e.additional_info.as_deref(), 140)?;
            bounded("orderId", Some(&e.order_id), 40)?;
            if e.order_id.is_empty()
                || !e.order_id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            {
                return Err("orderId must match ^[A-Za-z0-9-_.]+$".into());
            }
            if e.currency.len() != 3 || !e.currency.bytes().all(|b| b.is_ascii_uppercase()) {
                return Err("currency must be three capital letters (ISO 4217)".into());
            }
            serde_json::to_value(e)
        }
        EventKind::Refund => {
            let e: RefundEvent = parse(event)?;
            bounded("qrId", e.qr_id.as_deref(), 32)?;
            serde_json::to_value(e)
        }
        EventKind::Subscription => {
            let e: SubscriptionEvent = parse(event)?;
            bounded("qrId", e.qr_id.as_deref(), 32)?;
            serde_json::to_value(e)
        }
    };
    parsed.map_err(|e| e.to_string())
}

pub async fn submit(
    State(api): State<NotifyState>,
    headers: HeaderMap,
    Path(kind): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let authorized = api.internal_token.as_ref().is_some_and(|secret| {
        headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|token| secret.matches(token.trim()))
    });
    if !authorized {
        return error(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "send the internal token as Authorization: Bearer <token>",
        );
    }
    let Some(kind) = EventKind::parse(&kind) else {
        return error(StatusCode::NOT_FOUND, "not_found", "events are payment, refund or subscription");
    };
    let Ok(body) = body else {
        return error(StatusCode::BAD_REQUEST, "bad_request", "the body could not be read");
    };
    let submission: Submission = match serde_json::from_slice(&body) {
        Ok(submission) => submission,
        Err(e) => return error(StatusCode::BAD_REQUEST, "bad_request", format!("the submission is not valid: {e}")),
    };
    let id_ok = !submission.event_id.is_empty()
        && submission.event_id.len() <= 64
        && submission.event_id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
    if !id_ok {
        return error(StatusCode::BAD_REQUEST, "bad_request", "eventId: 1 to 64 of A-Z a-z 0-9 - _ . :");
    }
    let payload = match check_event(kind, &submission.event) {
        Ok(payload) => payload,
        Err(problem) => return error(StatusCode::BAD_REQUEST, "bad_request", format!("event: {problem}")),
    };
    match merchant_exists(&api, &submission.merchant_id).await {
        Ok(true) => {}
        Ok(false) => return error(StatusCode::NOT_FOUND, "merchant_not_found", "merchantId names no merchant"),
        Err(e) => return internal(&e),
    }
    let now = api.clock.now();
    let event = StoredEvent {
        event_id: submission.event_id.clone(),
        merchant_id: submission.merchant_id.clone(),
        kind,
        payload,
        received_at: now,
    };
    let delivery = Delivery::new(event.event_id.clone(), event.merchant_id.clone(), now);
    let event_id = event.event_id.clone();
    let result = match api.intake.record(event, delivery).await {
        Ok(Intake::Accepted) => {
            api.queued.notify_one();
            "accepted"
        }
        Ok(Intake::Duplicate) => "duplicate",
        Ok(Intake::Reused) => {
            let message = "this eventId was submitted before with other content";
            return error(StatusCode::CONFLICT, "event_id_reused", message);
        }
        Err(e) => return internal(&e),
    };
    (StatusCode::ACCEPTED, Json(json!({ "eventId": event_id, "result": result }))).into_response()
}

/// Whether `merchant_id` names a merchant. Merchants are never removed, so
/// a merchant once found is remembered and not read again.
async fn merchant_exists(api: &NotifyState, merchant_id: &str) -> Result<bool, StorageError> {
    if api.known_merchants.read().is_ok_and(|known| known.contains(merchant_id)) {
        return Ok(true);
    }
    let exists = api.store.find_merchant(merchant_id).await?.is_some();
    if exists && let Ok(mut known) = api.known_merchants.write() {
        known.insert(merchant_id.to_owned());
    }
    Ok(exists)
}

fn internal(e: &StorageError) -> Response {
    tracing::error!(error = %e, "event intake failed");
    error(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "internal error; nothing was stored")
}
