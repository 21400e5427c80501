//! `POST /internal/v1/notifications/events/{payment|refund|subscription}`:
//! other bank systems submit events, authenticated by the internal token
//! (`Authorization: Bearer <token>`).
//!
//! Body: `{"eventId": "...", "merchantId": "...", "event": {...}}` with the
//! canonical event of the kind. An accepted event is stored with its pending
//! delivery in one transaction before the answer (202), so nothing
//! acknowledged is lost. The same event id with the same content is
//! answered 202 `duplicate` and changes nothing; with other content, 409.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use portico_model::notify::{Delivery, EventKind, PaymentEvent, RefundEvent, StoredEvent, SubscriptionEvent};
use portico_storage::{Intake, StorageError};
use serde::Deserialize;
use serde_json::Value;

use crate::NotifyState;
use portico_api::ApiError;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Submission {
    event_id: String,
    merchant_id: String,
    event: Value,
}

/// The canonical event `T` from JSON; an error names the field.
fn parse<T: serde::de::DeserializeOwned>(event: &Value) -> Result<T, String> {
    serde_path_to_error::deserialize(event).map_err(|e| {
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

/// Names the first string (or key) of `value` that holds U+0000: no field
/// of any event is meant to carry it, and PostgreSQL cannot store it.
fn no_nul(value: &Value, path: &str) -> Result<(), String> {
    let refused = |path: &str| Err(format!("{path}: the character U+0000 is not allowed"));
    match value {
        Value::String(text) if text.contains('\0') => refused(path),
        Value::Array(items) => items.iter().enumerate().try_for_each(|(i, item)| no_nul(item, &format!("{path}[{i}]"))),
        Value::Object(fields) => fields.iter().try_for_each(|(key, item)| {
            let inner = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
            if key.contains('\0') { refused(&inner) } else { no_nul(item, &inner) }
        }),
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
    let parsed = parsed.map_err(|e| e.to_string())?;
    no_nul(&parsed, "")?;
    Ok(parsed)
}

/// The submission of an event of each kind, as the document describes it.
macro_rules! submission_schema {
    ($name:ident, $event:ty, $doc:literal) => {
        #[doc = $doc]
        #[derive(utoipa::ToSchema)]
        #[schema(rename_all = "camelCase")]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        pub struct $name {
            /// The event's id: idempotency key; 1 to 64 of `A-Z a-z 0-9 - _ . :`.
            #[schema(pattern = "^[A-Za-z0-9._:-]{1,64}$", example = "pay-2026-000001")]
            event_id: String,
            /// The merchant to notify.
            #[schema(example = "demo-shop")]
            merchant_id: String,
            event: $event,
        }
    };
}

submission_schema!(PaymentSubmission, PaymentEvent, "A payment event for a merchant.");
submission_schema!(RefundSubmission, RefundEvent, "A refund event for a merchant.");
submission_schema!(SubscriptionSubmission, SubscriptionEvent, "A subscription event for a merchant.");

/// What was done with a submitted event.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IntakeAnswer {
    pub event_id: String,
    /// `accepted` (stored with its delivery) or `duplicate` (the same event was stored before).
    #[schema(example = "accepted")]
    pub result: &'static str,
}

/// Every error of the event intake.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum IntakeErrors {
    /// `bad_request`: the body is not a submission, or a field is missing, malformed or over its bound (named).
    #[response(status = 400)]
    BadRequest(portico_api::error::ErrorBody),
    /// `unauthorized`: the internal token is missing or wrong.
    #[response(status = 401)]
    Unauthorized(portico_api::error::ErrorBody),
    /// `merchant_not_found`: `merchantId` names no merchant; `internal_api_disabled`: no internal token is configured.
    #[response(status = 404)]
    NotFound(portico_api::error::ErrorBody),
    /// `event_id_reused`: this `eventId` was submitted before with other content.
    #[response(status = 409)]
    Conflict(portico_api::error::ErrorBody),
    /// `internal_error`: nothing was stored.
    #[response(status = 500)]
    Internal(portico_api::error::ErrorBody),
    /// `temporarily_unavailable`: the database cannot be reached; nothing was stored. Submit again after `Retry-After` seconds.
    #[response(status = 503, headers(("Retry-After" = u32, description = "Seconds to wait before submitting again.")))]
    Unavailable(portico_api::error::ErrorBody),
}

#[utoipa::path(
    post,
    path = "/internal/v1/notifications/events/payment",
    operation_id = "submitPaymentEvent",
    tag = "notification events",
    request_body = PaymentSubmission,
    security(("internalToken" = [])),
    responses((status = 202, description = "Stored with its delivery (or stored before).", body = IntakeAnswer), IntakeErrors)
)]
pub async fn submit_payment(
    State(api): State<NotifyState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    submit(&api, &headers, EventKind::Payment, body).await
}

#[utoipa::path(
    post,
    path = "/internal/v1/notifications/events/refund",
    operation_id = "submitRefundEvent",
    tag = "notification events",
    request_body = RefundSubmission,
    security(("internalToken" = [])),
    responses((status = 202, description = "Stored with its delivery (or stored before).", body = IntakeAnswer), IntakeErrors)
)]
pub async fn submit_refund(
    State(api): State<NotifyState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    submit(&api, &headers, EventKind::Refund, body).await
}

#[utoipa::path(
    post,
    path = "/internal/v1/notifications/events/subscription",
    operation_id = "submitSubscriptionEvent",
    tag = "notification events",
    request_body = SubscriptionSubmission,
    security(("internalToken" = [])),
    responses((status = 202, description = "Stored with its delivery (or stored before).", body = IntakeAnswer), IntakeErrors)
)]
pub async fn submit_subscription(
    State(api): State<NotifyState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    submit(&api, &headers, EventKind::Subscription, body).await
}

/// Any other kind: 404 naming the kinds there are (401 first without the token).
pub async fn unknown_kind(State(api): State<NotifyState>, headers: HeaderMap) -> Response {
    if let Some(refused) = refuse(&api, &headers) {
        return refused;
    }
    ApiError::not_found("not_found", "events are payment, refund or subscription").into_response()
}

/// 401 unless the request carries the internal token (404 while the
/// internal API is off).
fn refuse(api: &NotifyState, headers: &HeaderMap) -> Option<Response> {
    api.api_tokens.internal(headers).err().map(IntoResponse::into_response)
}

async fn submit(
    api: &NotifyState,
    headers: &HeaderMap,
    kind: EventKind,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    if let Some(refused) = refuse(api, headers) {
        return refused;
    }
    let Ok(body) = body else {
        return ApiError::bad_request("the body could not be read").into_response();
    };
    let submission: Submission = match serde_json::from_slice(&body) {
        Ok(submission) => submission,
        Err(e) => return ApiError::bad_request(format!("the submission is not valid: {e}")).into_response(),
    };
    let id_ok = !submission.event_id.is_empty()
        && submission.event_id.len() <= 64
        && submission.event_id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
    if !id_ok {
        return ApiError::bad_request("eventId: 1 to 64 of A-Z a-z 0-9 - _ . :").into_response();
    }
    let payload = match check_event(kind, &submission.event) {
        Ok(payload) => payload,
        Err(problem) => return ApiError::bad_request(format!("event: {problem}")).into_response(),
    };
    match merchant_exists(api, &submission.merchant_id).await {
        Ok(true) => {}
        Ok(false) => return ApiError::not_found("merchant_not_found", "merchantId names no merchant").into_response(),
        Err(e) => return internal(&e),
    }
    let now = api.clock.now();
    let event = StoredEvent {
        event_id: submission.event_id,
        merchant_id: submission.merchant_id,
        kind,
        payload,
        received_at: now,
        trace_parent: portico_storage::trace::current(),
    };
    let delivery = Delivery::new(event.event_id.clone(), event.merchant_id.clone(), now);
    let event_id = event.event_id.clone();
    let result = match api.intake.record(event, delivery).await {
        Ok(Intake::Accepted) => "accepted",
        Ok(Intake::Duplicate) => "duplicate",
        Ok(Intake::Reused) => {
            let message = "this eventId was submitted before with other content";
            return ApiError::conflict("event_id_reused", message).into_response();
        }
        Err(e) => return internal(&e),
    };
    (StatusCode::ACCEPTED, Json(IntakeAnswer { event_id, result })).into_response()
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
    ApiError::storage("event intake", e).into_response()
}
