//! The configured ways out: where one-time codes go and who checks CAPTCHAs.
//! A way left unset is the development one (`portico serve` refuses that
//! outside the demo: [`crate::config::Config::check_serve`]).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use portico_identity::captcha::{CaptchaVerifier, DevCaptcha};
use portico_identity::captcha_http::HttpCaptcha;
use portico_identity::delivery::sms_http::HttpSmsGateway;
use portico_identity::delivery::smtp::SmtpMailer;
use portico_identity::delivery::{ByChannel, DevOutbox, OtpSender};

use crate::config::{CaptchaKind, Config, EmailDelivery, SmsDelivery};

/// The code sender the configuration asks for.
///
/// # Errors
/// For an SMS template or SMTP setting that cannot be used.
pub fn otp_sender(config: &Config) -> anyhow::Result<Arc<dyn OtpSender>> {
    let d = &config.delivery;
    let outbox: Arc<dyn OtpSender> = Arc::new(DevOutbox::new(config.data_dir.join("outbox.jsonl")));
    let sms: Arc<dyn OtpSender> = match d.sms.unwrap_or(SmsDelivery::Outbox) {
        SmsDelivery::Outbox => Arc::clone(&outbox),
        SmsDelivery::Http => Arc::new(
            HttpSmsGateway::new(
                d.sms_gateway_url.clone().unwrap_or_default(),
                d.sms_gateway_authorization.clone(),
                d.sms_gateway_body.clone(),
                Duration::from_secs(d.sms_gateway_timeout_secs.into()),
            )
            .context("delivery.sms_gateway_body")?,
        ),
    };
    let email: Arc<dyn OtpSender> = match d.email.unwrap_or(EmailDelivery::Outbox) {
        EmailDelivery::Outbox => outbox,
        EmailDelivery::Smtp => Arc::new(
            SmtpMailer::new(d.smtp_url.as_deref().unwrap_or_default(), &d.smtp_from, d.email_subject.clone())
                .context("delivery.smtp_url / delivery.smtp_from")?,
        ),
    };
    Ok(Arc::new(ByChannel { sms, email }))
}

/// The CAPTCHA verifier the configuration asks for.
///
/// # Errors
/// When the HTTP client cannot be built.
pub fn captcha(config: &Config) -> anyhow::Result<Arc<dyn CaptchaVerifier>> {
    let c = &config.captcha;
    Ok(match c.kind.unwrap_or(CaptchaKind::Dev) {
        CaptchaKind::Dev => Arc::new(DevCaptcha),
        CaptchaKind::Smartcaptcha => Arc::new(
            HttpCaptcha::new(
                c.validate_url.clone(),
                c.server_key.clone().unwrap_or_default(),
                c.site_key.clone().unwrap_or_default(),
            )
            .context("captcha")?,
        ),
    })
}
