//! Delivery of one-time codes, behind [`OtpSender`]:
//!
//! - [`DevOutbox`] for the demo and development: one JSON line per message,
//!   `{"channel","to","code","text","at"}`, appended to
//!   `<data dir>/outbox.jsonl`, and a log line without the code;
//! - [`sms_http::HttpSmsGateway`]: SMS through an HTTP gateway (URL,
//!   `Authorization` header, JSON body template);
//! - [`smtp::SmtpMailer`]: e-mail through SMTP;
//! - [`ByChannel`] sends each channel its own way.

pub mod sms_http;
pub mod smtp;

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use portico_model::otp::OtpChannel;
use serde::Serialize;
use time::OffsetDateTime;
use tokio::io::AsyncWriteExt as _;

/// A one-time code on its way to the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OtpMessage {
    pub channel: OtpChannel,
    /// E.164 phone number or e-mail address.
    pub to: String,
    pub code: String,
    /// The whole text the user receives.
    pub text: String,
}

#[derive(Debug, thiserror::Error)]
#[error("the code could not be delivered: {0}")]
pub struct DeliveryError(pub String);

/// Why a request to a service of the bank's own (the SMS gateway, the
/// CAPTCHA service) failed, with its causes, and without the request's
/// address: a gateway's address may carry its key in the query
/// (`…/send?api_id=…`), which would otherwise reach the log.
pub(crate) fn request_failure(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(&error);
    while let Some(error) = cause {
        text.push_str(": ");
        text.push_str(&error.to_string());
        cause = error.source();
    }
    text
}

#[async_trait]
pub trait OtpSender: Send + Sync {
    /// Sends `message` and returns once the channel accepted it.
    ///
    /// # Errors
    /// When the channel refused it or could not be reached.
    async fn send(&self, message: &OtpMessage, now: OffsetDateTime) -> Result<(), DeliveryError>;
}

/// Appends messages to a JSON-lines file.
pub struct DevOutbox {
    path: PathBuf,
    write: tokio::sync::Mutex<()>,
}

impl DevOutbox {
    pub fn new(path: PathBuf) -> Self {
        Self { path, write: tokio::sync::Mutex::new(()) }
    }
}

#[derive(Serialize)]
struct OutboxLine<'a> {
    channel: OtpChannel,
    to: &'a str,
    code: &'a str,
    text: &'a str,
    #[serde(with = "time::serde::rfc3339")]
    at: OffsetDateTime,
}

#[async_trait]
impl OtpSender for DevOutbox {
    async fn send(&self, message: &OtpMessage, now: OffsetDateTime) -> Result<(), DeliveryError> {
        let line =
            OutboxLine { channel: message.channel, to: &message.to, code: &message.code, text: &message.text, at: now };
        let mut text = serde_json::to_string(&line).map_err(|e| DeliveryError(e.to_string()))?;
        text.push('\n');
        let _one_writer = self.write.lock().await;
        let mut options = tokio::fs::OpenOptions::new();
        options.create(true).append(true);
        // Codes in clear: readable by Portico's own user only.
        #[cfg(unix)]
        options.mode(0o600);
        let mut file =
            options.open(&self.path).await.map_err(|e| DeliveryError(format!("{}: {e}", self.path.display())))?;
        file.write_all(text.as_bytes()).await.map_err(|e| DeliveryError(e.to_string()))?;
        file.flush().await.map_err(|e| DeliveryError(e.to_string()))?;
        tracing::info!(
            channel = message.channel.as_str(),
            outbox = %self.path.display(),
            "one-time code written to the dev outbox"
        );
        Ok(())
    }
}

/// SMS one way, e-mail another.
pub struct ByChannel {
    pub sms: Arc<dyn OtpSender>,
    pub email: Arc<dyn OtpSender>,
}

#[async_trait]
impl OtpSender for ByChannel {
    async fn send(&self, message: &OtpMessage, now: OffsetDateTime) -> Result<(), DeliveryError> {
        match message.channel {
            OtpChannel::Sms => self.sms.send(message, now).await,
            OtpChannel::Email => self.email.send(message, now).await,
        }
    }
}
