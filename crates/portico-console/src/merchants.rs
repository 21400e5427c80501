//! `/console/merchants` (admin): the merchants, a merchant's deliveries
//! with every attempt (by status, a page at a time) and their resend.

use askama::Template;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use portico_admin::ServiceError;
use portico_model::notify::{DeliveryStatus, MerchantIds};
use portico_notify::admin::MerchantKeeper;
use portico_notify::deliveries::{DeliveryView, Filter};
use portico_storage::StorageError;

use serde::Deserialize;

use crate::ConsoleState;
use crate::forms::{self, NoFields};
use crate::page::{self, Layout, MAX_FORM, Refusal, Segments, done, render};
use crate::session::AdminOperator;

/// Deliveries per page.
const PAGE: u32 = 20;

struct MerchantRow {
    id: String,
    public_id: String,
    callback: String,
}

#[derive(Template)]
#[template(path = "merchants.html")]
struct MerchantsPage {
    l: Layout,
    merchants: Vec<MerchantRow>,
    /// The next page's address.
    next: Option<String>,
}

/// `GET /console/merchants`.
pub async fn list(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    AdminOperator(operator): AdminOperator,
) -> Response {
    let here = page::here("/console/merchants", raw.as_deref());
    let query: page::ListQuery = page::query(raw.as_deref());
    let l = Layout::new(&headers, &operator, "merchants", &here);
    match console.notify.store.list_merchants(query.page()).await {
        Ok(merchants) => {
            let (merchants, next) = page::list_page(merchants, "/console/merchants", |m| m.ids.merchant_id.as_str());
            let merchants = merchants
                .into_iter()
                .map(|m| MerchantRow {
                    id: m.ids.merchant_id,
                    public_id: m.ids.public_id,
                    callback: m.settings.map(|s| s.callback_url).unwrap_or_default(),
                })
                .collect();
            render(StatusCode::OK, &MerchantsPage { l, merchants, next })
        }
        Err(error) => page::storage_error(l, &error),
    }
}

#[derive(Template)]
#[template(path = "deliveries.html")]
struct DeliveriesPage {
    l: Layout,
    merchant: String,
    status: String,
    deliveries: Vec<DeliveryView>,
    page: u32,
    pages: u64,
    total: u64,
}

impl DeliveriesPage {
    fn page_link(&self, page: u32) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        if !self.status.is_empty() {
            query.append_pair("status", &self.status);
        }
        format!("/console/merchants/{}?{}", self.merchant, query.append_pair("page", &page.to_string()).finish())
    }

    fn kind(delivery: &DeliveryView) -> String {
        delivery.kind.map(|k| k.as_str().to_owned()).unwrap_or_default()
    }

    fn status_of(delivery: &DeliveryView) -> &'static str {
        delivery.status.as_str()
    }
}

/// The delivery list's query.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct DeliverySearch {
    pub done: Option<String>,
    pub status: Option<String>,
    /// From 0.
    pub page: Option<String>,
}

/// `GET /console/merchants/{id}?status=&page=` (pages from 0).
pub async fn deliveries(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    Segments(merchant): Segments<String>,
    RawQuery(raw): RawQuery,
    AdminOperator(operator): AdminOperator,
) -> Response {
    let here = page::here(&format!("/console/merchants/{merchant}"), raw.as_deref());
    let query: DeliverySearch = page::query(raw.as_deref());
    let l = Layout::new(&headers, &operator, "merchants", &here).with_notice(query.done.as_deref());
    let status = query.status.as_deref().and_then(DeliveryStatus::parse);
    let page = query.page.and_then(|p| p.parse().ok()).filter(|p| *p <= 100_000).unwrap_or(0);
    let store = &console.notify.store;
    match store.find_merchant(&merchant).await {
        Ok(Some(_)) => {}
        Ok(None) => return page::message(l, StatusCode::NOT_FOUND, "error.no_merchant", "/console/merchants"),
        Err(error) => return page::storage_error(l, &error),
    }
    let filter = Filter { status, page, size: PAGE };
    match portico_notify::deliveries::page_of(&console.notify, &merchant, &filter).await {
        Ok(found) => render(
            StatusCode::OK,
            &DeliveriesPage {
                l,
                merchant,
                status: status.map(|s| s.as_str().to_owned()).unwrap_or_default(),
                deliveries: found.items,
                page,
                pages: found.total.div_ceil(u64::from(PAGE)),
                total: found.total,
            },
        ),
        Err(error) => page::storage_error(l, &error),
    }
}

/// `POST /console/merchants/{id}/deliveries/{delivery}/resend`: a new
/// delivery of the same event now, with a fresh 24 h window.
pub async fn resend(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    Segments((merchant, delivery)): Segments<(String, String)>,
    body: Body,
) -> Result<Response, Refusal> {
    let here = format!("/console/merchants/{merchant}");
    let action = page::Action {
        admin: true,
        section: "merchants",
        here: here.clone(),
        question: "confirm.resend",
        button: "delivery.resend",
        path: format!("{here}/deliveries/{delivery}/resend"),
    };
    let missing = || ServiceError::NotFound("delivery_not_found", "the merchant has no such delivery".into());
    let id = delivery.parse::<portico_model::ids::DeliveryId>().ok();
    page::confirmed(
        &console,
        &headers,
        body,
        action,
        async |_| {
            let found = console.notify.store.find_delivery(id.ok_or_else(missing)?).await?;
            let found = found.filter(|d| d.merchant_id == merchant).ok_or_else(missing)?;
            Ok(format!("{} · {}", found.event_id, found.id))
        },
        async |operator, _: &NoFields| {
            portico_notify::admin::resend_delivery(
                &console.notify,
                &operator.admin.actor,
                &merchant,
                id.ok_or_else(missing)?,
            )
            .await?
            .ok_or_else(missing)?;
            Ok(done(&here, "resent"))
        },
    )
    .await
}

/// A new merchant's form.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct MerchantFields {
    #[serde(deserialize_with = "forms::trimmed")]
    pub merchant_id: Option<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub public_id: Option<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub sbp_merchant_id: Option<String>,
}

/// `POST /console/merchants`: registers a merchant (`merchant_id`,
/// `public_id`, `sbp_merchant_id`); its API key is shown once.
pub async fn create(State(console): State<ConsoleState>, headers: HeaderMap, body: Body) -> Result<Response, Refusal> {
    let (form, _, operator): (MerchantFields, _, _) =
        console.read_form(&headers, body, "/console/merchants", true, MAX_FORM).await?;
    let l = Layout::new(&headers, &operator, "merchants", "/console/merchants");
    let ids = MerchantIds {
        merchant_id: form.merchant_id.unwrap_or_default(),
        public_id: form.public_id.unwrap_or_default(),
        sbp_merchant_id: form.sbp_merchant_id.unwrap_or_default(),
    };
    if let Err(problem) = portico_notify::merchants::check_ids(&ids) {
        let problem = portico_api::Problem::new("", problem.to_string());
        return Ok(page::service_error(l, ServiceError::Invalid(vec![problem]), "/console/merchants"));
    }
    let merchant_id = ids.merchant_id.clone();
    Ok(
        match portico_notify::admin::register_merchant(&MerchantKeeper::of(&console.notify), &operator.admin.actor, ids)
            .await
        {
            Ok(key) => page::shown_once(
                l,
                "merchant.id",
                merchant_id.clone(),
                key,
                &format!("/console/merchants/{merchant_id}"),
            ),
            Err(StorageError::Conflict(_)) => {
                let taken = ServiceError::Conflict(
                    "merchant_exists",
                    "a merchant with this merchant id or public id exists".into(),
                );
                page::service_error(l, taken, "/console/merchants")
            }
            Err(error) => page::storage_error(l, &error),
        },
    )
}

/// `POST /console/merchants/{id}/key`: a new API key, shown once; the old
/// one stops working at once.
pub async fn rotate_key(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    Segments(merchant): Segments<String>,
    body: Body,
) -> Result<Response, Refusal> {
    let here = format!("/console/merchants/{merchant}");
    let (_, form, operator): (NoFields, _, _) = console.read_form(&headers, body, &here, true, MAX_FORM).await?;
    let l = Layout::new(&headers, &operator, "merchants", &here);
    if !form.confirmed() {
        return Ok(page::confirm(
            l,
            &form,
            "confirm.merchant_key",
            merchant.clone(),
            &format!("{here}/key"),
            "merchant.new_key",
        ));
    }
    Ok(
        match portico_notify::admin::rotate_merchant_key(
            &MerchantKeeper::of(&console.notify),
            &operator.admin.actor,
            &merchant,
        )
        .await
        {
            Ok(Some(key)) => page::shown_once(l, "merchant.id", merchant, key, &here),
            Ok(None) => page::message(l, StatusCode::NOT_FOUND, "error.no_merchant", "/console/merchants"),
            Err(error) => page::storage_error(l, &error),
        },
    )
}
