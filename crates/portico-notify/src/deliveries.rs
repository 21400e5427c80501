//! The merchant's view of its deliveries: `GET /v1/notifications/deliveries`
//! (query `status` = `PENDING` / `DELIVERED` / `FAILED`, `page` from 0,
//! `size` 1..=100, default 20), newest first, each with every attempt; and
//! `POST /v1/notifications/deliveries/{id}/resend`, which queues a new
//! delivery of the same event now (with a fresh 24 h window). Both take the
//! merchant key in `Authorization`, like the settings. A finished delivery
//! is listed for `notifications.retention_days` (see [`crate::retention`]).

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use portico_model::form::{Form, Problem};
use portico_model::ids::DeliveryId;
use portico_model::notify::EventKind;
use portico_model::notify::{Delivery, DeliveryStatus};
use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use utoipa::ToSchema;

use crate::NotifyState;
use crate::error::{ErrorBody, NotifyError};
use crate::settings::MerchantCaller;

/// The filters and paging of the delivery list as the query gives them,
/// read by the one reader ([`portico_model::form`]); a parameter it does
/// not know is refused.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DeliveryFilter {
    status: Option<DeliveryStatus>,
    /// The page, from 0.
    #[param(minimum = 0, maximum = 100_000, default = 0)]
    page: Option<u32>,
    /// Deliveries per page.
    #[param(minimum = 1, maximum = 100, default = 20)]
    size: Option<u32>,
}

const MAX_SIZE: u32 = 100;
/// The deepest page: beyond it a list would read millions of rows to skip.
const MAX_PAGE: u32 = 100_000;

fn time(value: time::OffsetDateTime) -> String {
    value.format(&Rfc3339).unwrap_or_default()
}

/// One attempt of a delivery.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = DeliveryAttempt)]
pub struct AttemptView {
    /// 1 for the first.
    pub attempt: u32,
    #[schema(format = DateTime)]
    pub at: String,
    /// The receiver's HTTP status; none when it did not answer.
    pub status_code: Option<u16>,
    /// Why the attempt failed without an answer (timeout, refused, ...).
    pub error: Option<String>,
    pub duration_ms: i64,
    /// The start of the receiver's answer (at most 512 bytes).
    pub response: Option<String>,
}

/// A delivery of one event to the merchant, with every attempt.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Delivery)]
pub struct DeliveryView {
    pub id: uuid::Uuid,
    pub event_id: String,
    #[serde(rename = "type")]
    pub kind: Option<EventKind>,
    pub status: DeliveryStatus,
    pub attempts: u32,
    /// While `PENDING`.
    #[schema(format = DateTime)]
    pub next_attempt_at: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub finished_at: Option<String>,
    pub attempt_log: Vec<AttemptView>,
}

/// A page of deliveries, newest first.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = DeliveryPage)]
pub struct DeliveryPage {
    pub items: Vec<DeliveryView>,
    pub page: u32,
    pub size: u32,
    pub total: u64,
}

async fn view(api: &NotifyState, delivery: &Delivery) -> Result<DeliveryView, portico_storage::StorageError> {
    let attempts = api.store.attempts_of(delivery.id).await?;
    let kind = api.store.find_event(&delivery.event_id).await?.map(|e| e.kind);
    Ok(DeliveryView {
        id: delivery.id.as_uuid(),
        event_id: delivery.event_id.clone(),
        kind,
        status: delivery.status,
        attempts: delivery.attempts,
        next_attempt_at: (delivery.status == DeliveryStatus::Pending).then(|| time(delivery.next_attempt_at)),
        created_at: time(delivery.created_at),
        finished_at: delivery.finished_at.map(time),
        attempt_log: attempts
            .iter()
            .map(|a| AttemptView {
                attempt: a.attempt,
                at: time(a.at),
                status_code: a.status_code,
                error: a.error.clone(),
                duration_ms: a.duration_ms,
                response: a.response_excerpt.clone(),
            })
            .collect(),
    })
}

/// The merchant's deliveries, newest first, each with every attempt.
#[utoipa::path(
    get,
    path = "/v1/notifications/deliveries",
    operation_id = "getNotificationDeliveries",
    tag = "notifications",
    params(DeliveryFilter),
    responses(
        (status = 200, description = "A page of deliveries.", body = DeliveryPage),
        (status = 400, description = "`bad_request`: a parameter is not valid or unknown.", body = ErrorBody),
        crate::error::Unauthorized,
        crate::error::Internal
    )
)]
pub async fn list(
    State(api): State<NotifyState>,
    MerchantCaller(merchant): MerchantCaller,
    RawQuery(query): RawQuery,
) -> Result<Json<DeliveryPage>, NotifyError> {
    let filter = Filter::parse(query.as_deref()).map_err(NotifyError::BadRequest)?;
    let page = page_of(&api, &merchant.ids.merchant_id, &filter)
        .await
        .map_err(|e| NotifyError::storage("delivery listing", &e))?;
    Ok(Json(page))
}

/// A listing's parameters: `status`, `page` (from 0), `size`.
pub struct Filter {
    pub status: Option<DeliveryStatus>,
    pub page: u32,
    pub size: u32,
}

impl Filter {
    /// # Errors
    /// What is wrong with a parameter, or the unknown one.
    pub fn parse(query: Option<&str>) -> Result<Self, String> {
        const PAGE: &str = "page: a number from 0 to 100000";
        const SIZE: &str = "size: a number from 1 to 100";
        let given: DeliveryFilter =
            Form::parse(query.unwrap_or_default().as_bytes()).read_given().map_err(|e| {
                match (e.field.as_str(), &e.problem) {
                    (field, Problem::Unknown) => format!("unknown parameter {field:?}"),
                    (_, Problem::Repeated | Problem::Missing) => e.to_string(),
                    ("status", _) => "status: PENDING, DELIVERED or FAILED".to_owned(),
                    ("page", _) => PAGE.to_owned(),
                    ("size", _) => SIZE.to_owned(),
                    _ => e.to_string(),
                }
            })?;
        let page = given.page.unwrap_or(0);
        if page > MAX_PAGE {
            return Err(PAGE.to_owned());
        }
        let size = given.size.unwrap_or(20);
        if !(1..=MAX_SIZE).contains(&size) {
            return Err(SIZE.to_owned());
        }
        Ok(Self { status: given.status, page, size })
    }
}

/// A page of a merchant's deliveries, newest first, each with every attempt.
pub async fn page_of(
    api: &NotifyState,
    merchant_id: &str,
    filter: &Filter,
) -> Result<DeliveryPage, portico_storage::StorageError> {
    let offset = filter.page.saturating_mul(filter.size);
    let (deliveries, total) = api.store.list_deliveries(merchant_id, filter.status, offset, filter.size).await?;
    let mut items = Vec::with_capacity(deliveries.len());
    for delivery in &deliveries {
        items.push(view(api, delivery).await?);
    }
    Ok(DeliveryPage { items, page: filter.page, size: filter.size, total })
}

/// Queues a new delivery of the event of the merchant's delivery `id`
/// now; `None` when the merchant has no such delivery (or it is past its
/// retention and being removed).
pub async fn resend_of(
    api: &NotifyState,
    merchant_id: &str,
    id: DeliveryId,
) -> Result<Option<DeliveryView>, portico_storage::StorageError> {
    let Some(delivery) = api.store.find_delivery(id).await?.filter(|d| d.merchant_id == merchant_id) else {
        return Ok(None);
    };
    let now = api.clock.now();
    if crate::retention::expiring(api.retention, delivery.finished_at, now) {
        return Ok(None);
    }
    let again = Delivery::new(delivery.event_id, delivery.merchant_id, now);
    api.store.create_delivery(&again).await?;
    api.queued.notify_one();
    Ok(Some(view(api, &again).await?))
}

/// Queues a new delivery of the same event now, with a fresh 24 h window.
#[utoipa::path(
    post,
    path = "/v1/notifications/deliveries/{id}/resend",
    operation_id = "resendNotificationDelivery",
    tag = "notifications",
    params(("id" = uuid::Uuid, Path, description = "The delivery to repeat.")),
    responses(
        (status = 202, description = "The new delivery, `PENDING`.", body = DeliveryView),
        (status = 400, description = "`bad_request`: `id` is not a UUID.", body = ErrorBody),
        (status = 404, description = "`delivery_not_found`: no such delivery of this merchant.", body = ErrorBody),
        crate::error::Unauthorized,
        crate::error::Internal
    )
)]
pub async fn resend(
    State(api): State<NotifyState>,
    MerchantCaller(merchant): MerchantCaller,
    id: Result<Path<String>, PathRejection>,
) -> Result<(StatusCode, Json<DeliveryView>), NotifyError> {
    // A segment that is not UTF-8 is no delivery id: 400 below, as JSON.
    let id = id.map(|Path(id)| id).unwrap_or_default();
    let id: DeliveryId = id.parse().map_err(|_| NotifyError::BadRequest("id: a delivery id (UUID)".into()))?;
    let resent = resend_of(&api, &merchant.ids.merchant_id, id)
        .await
        .map_err(|e| NotifyError::storage("delivery resend", &e))?
        .ok_or(NotifyError::NotFound(
            "delivery_not_found",
            "no such delivery of this merchant (or it is past its retention period and being removed)",
        ))?;
    Ok((StatusCode::ACCEPTED, Json(resent)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(query: &str) -> String {
        Filter::parse(Some(query)).err().unwrap_or_default()
    }

    #[test]
    fn the_listing_query_is_read_by_the_one_reader() {
        let filter = Filter::parse(Some("status=FAILED&page=3&size=5")).unwrap();
        assert_eq!((filter.status, filter.page, filter.size), (Some(DeliveryStatus::Failed), 3, 5));
        let defaults = Filter::parse(None).unwrap();
        assert_eq!((defaults.status, defaults.page, defaults.size), (None, 0, 20));
        assert_eq!(refusal("status="), "status: PENDING, DELIVERED or FAILED", "an empty value is no status");
        assert_eq!(refusal("page="), "page: a number from 0 to 100000");
    }

    #[test]
    fn a_bad_listing_query_is_named() {
        assert_eq!(refusal("page=1&sort=asc"), "unknown parameter \"sort\"");
        assert_eq!(refusal("status=FAILED&status=PENDING"), "status: given more than once");
        assert_eq!(refusal("status=failed"), "status: PENDING, DELIVERED or FAILED");
        assert_eq!(refusal("status=FAILED%00"), "status: PENDING, DELIVERED or FAILED");
        assert_eq!(refusal("page=100001"), "page: a number from 0 to 100000");
        assert_eq!(refusal("page=-1"), "page: a number from 0 to 100000");
        assert_eq!(refusal("size=0"), "size: a number from 1 to 100");
        assert_eq!(refusal("size=101"), "size: a number from 1 to 100");
    }
}
