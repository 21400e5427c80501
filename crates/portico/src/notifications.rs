//! `portico notifications listen`: a local receiver for merchants developing
//! their endpoint. It verifies each notification with `portico-webhook`,
//! prints what arrived, and answers 200 when the signature is right (401
//! when it is not), as a merchant's endpoint should.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use clap::Subcommand;

#[derive(Subcommand)]
pub enum NotificationCommand {
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

pub async fn run(command: NotificationCommand) -> anyhow::Result<()> {
    let NotificationCommand::Listen { secret, port, public_id } = command;
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
