//! E-mail through SMTP (lettre). The server is given as a URL:
//! `smtp://host:25` (plain, for a local relay), `smtp://host:587?tls=required`
//! (STARTTLS) or `smtps://user:password@host:465` (TLS), as lettre reads it.

use async_trait::async_trait;
use lettre::message::{Mailbox, header::ContentType};
use lettre::{AsyncSmtpTransport, AsyncTransport as _, Message, Tokio1Executor};
use time::OffsetDateTime;

use super::{DeliveryError, OtpMessage, OtpSender};

pub struct SmtpMailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    subject: String,
}

impl SmtpMailer {
    /// # Errors
    /// For a URL or sender address lettre cannot use.
    pub fn new(url: &str, from: &str, subject: String) -> Result<Self, DeliveryError> {
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            .map_err(|e| DeliveryError(format!("SMTP URL: {e}")))?
            .build();
        let from = from.parse().map_err(|e| DeliveryError(format!("SMTP sender {from:?}: {e}")))?;
        Ok(Self { transport, from, subject })
    }
}

#[async_trait]
impl OtpSender for SmtpMailer {
    async fn send(&self, message: &OtpMessage, _now: OffsetDateTime) -> Result<(), DeliveryError> {
        let to: Mailbox = message.to.parse().map_err(|e| DeliveryError(format!("recipient: {e}")))?;
        let email = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(&self.subject)
            .header(ContentType::TEXT_PLAIN)
            .body(message.text.clone())
            .map_err(|e| DeliveryError(e.to_string()))?;
        self.transport.send(email).await.map_err(|e| DeliveryError(format!("SMTP: {e}")))?;
        tracing::info!("e-mail handed to the SMTP server");
        Ok(())
    }
}
