//! The merchant's view of its deliveries: `GET /v1/notifications/deliveries`
//! (query `status` = `PENDING` / `DELIVERED` / `FAILED`, `page` from 0,
//! `size` 1..=100, default 20), newest first, each with every attempt; and
//! `POST /v1/notifications/deliveries/{id}/resend`, which queues a new
//! delivery of the same event now (with a fresh 24 h window). Both take the
//! merchant key in `Authorization`, like the settings.

use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use portico_model::notify::{Delivery, DeliveryStatus};
use serde_json::{Value, json};
use time::format_description::well_known::Rfc3339;

use crate::NotifyState;
use crate::settings::{error, merchant};

const MAX_SIZE: u32 = 100;

fn time(value: time::OffsetDateTime) -> Value {
    value.format(&Rfc3339).map_or(Value::Null, Value::String)
}

async fn view(api: &NotifyState, delivery: &Delivery) -> Result<Value, portico_storage::StorageError> {
    let attempts = api.store.attempts_of(delivery.id).await?;
    let kind = api.store.find_event(&delivery.event_id).await?.map(|e| e.kind.as_str());
    Ok(json!({
        "id": delivery.id,
        "eventId": delivery.event_id,
        "type": kind,
        "status": delivery.status.as_str(),
        "attempts": delivery.attempts,
        "nextAttemptAt": (delivery.status == DeliveryStatus::Pending).then(|| time(delivery.next_attempt_at)),
        "createdAt": time(delivery.created_at),
        "finishedAt": delivery.finished_at.map(time),
        "attemptLog": attempts.iter().map(|a| json!({
            "attempt": a.attempt,
            "at": time(a.at),
            "statusCode": a.status_code,
            "error": a.error,
            "durationMs": a.duration_ms,
            "response": a.response_excerpt,
        })).collect::<Vec<_>>(),
    }))
}

fn internal(e: &portico_storage::StorageError) -> Response {
    tracing::error!(error = %e, "delivery listing failed");
    error(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "internal error")
}

pub async fn list(State(api): State<NotifyState>, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    let merchant = match merchant(&api, &headers).await {
        Ok(merchant) => merchant,
        Err(response) => return response,
    };
    let (mut status, mut page, mut size) = (None, 0u32, 20u32);
    for (name, value) in url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match name.as_ref() {
            "status" => match DeliveryStatus::parse(&value) {
                Some(s) => status = Some(s),
                None => return error(StatusCode::BAD_REQUEST, "bad_request", "status: PENDING, DELIVERED or FAILED"),
            },
            "page" => match value.parse() {
                Ok(p) => page = p,
                Err(_) => return error(StatusCode::BAD_REQUEST, "bad_request", "page: a number from 0"),
            },
            "size" => match value.parse() {
                Ok(s) if (1..=MAX_SIZE).contains(&s) => size = s,
                _ => return error(StatusCode::BAD_REQUEST, "bad_request", "size: a number from 1 to 100"),
            },
            other => return error(StatusCode::BAD_REQUEST, "bad_request", format!("unknown parameter {other:?}")),
        }
    }
    let offset = page.saturating_mul(size);
    let (deliveries, total) = match api.store.list_deliveries(&merchant.ids.merchant_id, status, offset, size).await {
        Ok(found) => found,
        Err(e) => return internal(&e),
    };
    let mut items = Vec::with_capacity(deliveries.len());
    for delivery in &deliveries {
        match view(&api, delivery).await {
            Ok(item) => items.push(item),
            Err(e) => return internal(&e),
        }
    }
    Json(json!({ "items": items, "page": page, "size": size, "total": total })).into_response()
}

pub async fn resend(State(api): State<NotifyState>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let merchant = match merchant(&api, &headers).await {
        Ok(merchant) => merchant,
        Err(response) => return response,
    };
    let Ok(id) = uuid::Uuid::parse_str(&id) else {
        return error(StatusCode::BAD_REQUEST, "bad_request", "id: a delivery id (UUID)");
    };
    let delivery = match api.store.find_delivery(id).await {
        Ok(Some(d)) if d.merchant_id == merchant.ids.merchant_id => d,
        Ok(_) => return error(StatusCode::NOT_FOUND, "delivery_not_found", "no such delivery of this merchant"),
        Err(e) => return internal(&e),
    };
    let now = api.clock.now();
    let again = Delivery::new(delivery.event_id, delivery.merchant_id, now);
    if let Err(e) = api.store.create_delivery(&again).await {
        return internal(&e);
    }
    api.queued.notify_one();
    match view(&api, &again).await {
        Ok(item) => (StatusCode::ACCEPTED, Json(item)).into_response(),
        Err(e) => internal(&e),
    }
}
