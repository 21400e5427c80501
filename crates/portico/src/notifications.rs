//! `portico notifications listen`: a local receiver for merchants developing
//! their endpoint. It verifies each notification with `portico-webhook`,
//! prints what arrived, and answers 200 when the signature is right (401
//! when it is not), as a merchant's endpoint should.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use clap::Subcommand;
use portico_model::clock::{Clock as _, SystemClock};
use portico_model::notify::EventKind;

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

async fn simulate(config: &portico_server::Config, merchant_id: &str, kind: &str, count: u32) -> anyhow::Result<()> {
    let kind = EventKind::parse(kind).ok_or_else(|| anyhow::anyhow!("--type: payment, refund or subscription"))?;
    let store = portico_server::app::open_store(config).await?;
    if store.find_merchant(merchant_id).await?.is_none() {
        anyhow::bail!("there is no merchant {merchant_id:?}");
    }
    let now = SystemClock.now().replace_nanosecond(0)?;
    for event_id in portico_notify::samples::queue(store.as_ref(), merchant_id, kind, count, now).await? {
        println!("{} event {event_id} queued for {merchant_id}", kind.as_str());
    }
    Ok(())
}
