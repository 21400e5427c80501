//! Sample events, as other bank systems would submit them: for
//! `portico notifications simulate` and the demo page.

use portico_model::notify::{
    Delivery, EventKind, Kopecks, PaymentEvent, PaymentMethod, RefundEvent, StoredEvent, SubscriptionEvent,
};
use portico_storage::{Storage, StorageError};
use time::OffsetDateTime;

/// A sample event of `kind`, number `n`, at `now`.
pub fn sample(kind: EventKind, n: u32, now: OffsetDateTime) -> serde_json::Value {
    let order = format!("demo-order-{}-{n}", now.unix_timestamp());
    let event = match kind {
        EventKind::Payment => serde_json::to_value(PaymentEvent {
            payment_id: format!("pay-{order}"),
            transaction_id: now.unix_timestamp() * 1000 + i64::from(n),
            order_id: order.clone(),
            amount: Kopecks(150_050 + i64::from(n)),
            currency: "RUB".into(),
            status: "SUCCESS".into(),
            status_date: now,
            payment_method: PaymentMethod::Sbp,
            sbp_transaction_id: Some(format!("sbp-{n}")),
            qr_id: Some(format!("QR{n:06}")),
            comment: Some("Оплата заказа".into()),
            additional_info: None,
            extra: serde_json::Map::new(),
            created_at: now,
        }),
        EventKind::Refund => serde_json::to_value(RefundEvent {
            refund_id: format!("refund-{order}"),
            sbp_transaction_id: None,
            amount: Kopecks(10_000),
            status: "COMPLETED".into(),
            status_date: now,
            transaction_id: now.unix_timestamp(),
            order_id: order.clone(),
            qr_id: None,
        }),
        EventKind::Subscription => serde_json::to_value(SubscriptionEvent {
            subscription_id: format!("sub-{order}"),
            status: "SUBSCRIBED".into(),
            status_date: now,
            purpose: Some("Подписка".into()),
            payment_method: Some("ACQUIRING".into()),
            payment_system: Some("MIR".into()),
            card_number: Some("220220******1234".into()),
            expiration_date: Some("2028-11".into()),
            bank_name: None,
            bank_member_id: None,
            qr_id: None,
        }),
    };
    event.unwrap_or_default()
}

/// Stores `count` sample events of `kind` for `merchant_id`, each with its
/// pending delivery, as the intake does. Returns their ids.
///
/// # Errors
/// When the store fails.
pub async fn queue(
    store: &dyn Storage,
    merchant_id: &str,
    kind: EventKind,
    count: u32,
    now: OffsetDateTime,
) -> Result<Vec<String>, StorageError> {
    let mut ids = Vec::new();
    for n in 1..=count {
        let event = StoredEvent {
            event_id: format!("sim-{}-{n}", uuid::Uuid::now_v7()),
            merchant_id: merchant_id.to_owned(),
            kind,
            payload: sample(kind, n, now),
            received_at: now,
            trace_parent: portico_storage::trace::current(),
        };
        let delivery = Delivery::new(event.event_id.clone(), event.merchant_id.clone(), now);
        store.record_event(&event, &delivery).await?;
        ids.push(event.event_id);
    }
    Ok(ids)
}
