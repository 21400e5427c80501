//! `portico notifications listen`: a local receiver for merchants developing
//! their endpoint. It verifies each notification with `portico-webhook`,
//! prints what arrived, and answers 200 when the signature is right (401
//! when it is not), as a merchant's endpoint should.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use clap::Subcommand;
use portico_model::clock::{Clock as _, SystemClock};
use portico_model::notify::{
    Delivery, EventKind, Kopecks, PaymentEvent, PaymentMethod, RefundEvent, StoredEvent, SubscriptionEvent,
};

#[derive(Subcommand)]
pub enum NotificationCommand {
    /// Submit sample events for a merchant (stored with their deliveries, as the intake does);
    /// running servers and workers deliver them.
    Simulate {
        #[arg(long)]
        merchant_id: String,
        /// payment, refund or subscription.
        #[arg(long = "type", default_value = "payment")]
        kind: String,
        #[arg(long, default_value_t = 1)]
        count: u32,
    },
    /// Receive notifications on 127.0.0.1:PORT, verify and print them.
    Listen {
        /// The merchant's API key (the signing secret).
        #[arg(long)]
        secret: String,
        #[arg(long)]
        port: u16,
        /// The merchant's public id (payment v2 and refund v1 sign it without carrying it).
        #[arg(long, default_value = "")]
        public_id: String,
    },
}

pub async fn run(config: &portico_server::Config, command: NotificationCommand) -> anyhow::Result<()> {
    let (secret, port, public_id) = match command {
        NotificationCommand::Listen { secret, port, public_id } => (secret, port, public_id),
        NotificationCommand::Simulate { merchant_id, kind, count } => {
            return simulate(config, &merchant_id, &kind, count).await;
        }
    };
    let config = Arc::new((secret, public_id));
    let app = axum::Router::new().fallback(move |headers: HeaderMap, body: Bytes| {
        let config = Arc::clone(&config);
        async move {
            let signature = headers.get("x-api-signature-sha256").and_then(|v| v.to_str().ok()).unwrap_or("");
            match portico_webhook::verify(&body, signature, config.0.as_bytes(), &config.1) {
                Ok(notification) => {
                    println!("verified {notification:?}");
                    println!("{}", String::from_utf8_lossy(&body));
                    StatusCode::OK
                }
                Err(error) => {
                    println!("rejected ({error}): {}", String::from_utf8_lossy(&body));
                    StatusCode::UNAUTHORIZED
                }
            }
        }
    });
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on 127.0.0.1:{port}: {e}"))?;
    println!("listening on http://127.0.0.1:{port}/ (any path); Ctrl-C stops");
    axum::serve(listener, app).with_graceful_shutdown(portico_server::app::shutdown_signal()).await?;
    Ok(())
}

/// A sample event of `kind`, number `n`, at `now`.
fn sample(kind: EventKind, n: u32, now: time::OffsetDateTime) -> serde_json::Value {
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

async fn simulate(config: &portico_server::Config, merchant_id: &str, kind: &str, count: u32) -> anyhow::Result<()> {
    let kind = EventKind::parse(kind).ok_or_else(|| anyhow::anyhow!("--type: payment, refund or subscription"))?;
    let store = portico_server::app::open_store(config).await?;
    if store.find_merchant(merchant_id).await?.is_none() {
        anyhow::bail!("there is no merchant {merchant_id:?}");
    }
    let now = SystemClock.now().replace_nanosecond(0)?;
    for n in 1..=count {
        let event = StoredEvent {
            event_id: format!("sim-{}-{n}", uuid::Uuid::now_v7()),
            merchant_id: merchant_id.to_owned(),
            kind,
            payload: sample(kind, n, now),
            received_at: now,
        };
        let delivery = Delivery::new(event.event_id.clone(), event.merchant_id.clone(), now);
        store.record_event(&event, &delivery).await?;
        println!("{} event {} queued for {merchant_id}", kind.as_str(), event.event_id);
    }
    Ok(())
}
