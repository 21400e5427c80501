//! E-mail through SMTP (lettre). The server is given as a URL:
//! `smtp://host:25` (plain, for a local relay), `smtp://host:587?tls=required`
//! (STARTTLS) or `smtps://user:password@host:465` (TLS), as lettre reads it.

use async_trait::async_trait;
use lettre::message::{Mailbox, header::ContentType};
use lettre::{Address, AsyncSmtpTransport, AsyncTransport as _, Message, Tokio1Executor};
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
        let to = Mailbox::new(None, address(&message.to).map_err(|e| DeliveryError(format!("recipient: {e}")))?);
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

/// Characters an e-mail address holds at most (RFC 5321 §4.5.3.1.3: a
/// path of 256 octets, its angle brackets included).
pub const MAX_ADDRESS: usize = 254;

/// `text` as an e-mail address the mailer sends to: one `local@domain`
/// (RFC 5322's `addr-spec`; RFC 6531's UTF-8 in either half, the domain
/// an IDN or an ASCII host name with a dot), no display name, no list, no
/// space or control character. What the admin API and SCIM store as a
/// user's e-mail is held to it, so every stored address can be sent to.
///
/// # Errors
/// What is wrong, in words.
pub fn address(text: &str) -> Result<Address, String> {
    if text.chars().count() > MAX_ADDRESS {
        return Err(format!("at most {MAX_ADDRESS} characters"));
    }
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("holds a space or a control character".to_owned());
    }
    let address: Address = text.parse().map_err(|e| format!("is not an e-mail address ({e})"))?;
    let domain = address.domain();
    if !domain.contains('.') || domain.starts_with('[') {
        return Err("is not an e-mail address (its domain is no host name with a dot)".to_owned());
    }
    Ok(address)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_one_local_part_at_one_host_name() {
        for ok in ["anna@example.com", "a.b+tag@sub.example.org", "пётр@пример.рф", "o'brien@example.co.uk"]
        {
            assert!(address(ok).is_ok(), "{ok}: {:?}", address(ok));
        }
        for bad in [
            "anna@",
            "@example.com",
            "a@b.c,d@e.f",
            "x<attacker@evil.example>",
            "Anna <anna@example.com>",
            "a@@example.com",
            "a@example..com",
            ".a@example.com",
            "a@-example.com",
            "a@localhost",
            "a@[192.0.2.1]",
            "a b@example.com",
            "a@example.com\n",
            "a\u{0}@example.com",
        ] {
            assert!(address(bad).is_err(), "{bad} taken");
        }
        assert!(address(&format!("{}@example.com", "a".repeat(250))).is_err(), "over 254 characters");
    }
}
