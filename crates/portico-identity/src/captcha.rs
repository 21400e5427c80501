//! CAPTCHA verification behind a trait. The dev verifier accepts the token
//! that the dev widget on the page submits; production checks tokens with
//! the CAPTCHA service.

use async_trait::async_trait;

/// The token the dev widget submits when its box is ticked.
pub const DEV_TOKEN: &str = "dev-captcha-passed";

#[async_trait]
pub trait CaptchaVerifier: Send + Sync {
    /// Whether `token` (the form's `smart-token`) proves a human.
    async fn verify(&self, token: &str, client_ip: Option<&str>) -> bool;
    /// The site key the page's widget needs; `None` for the dev widget.
    fn site_key(&self) -> Option<&str>;
}

/// Accepts exactly [`DEV_TOKEN`].
pub struct DevCaptcha;

#[async_trait]
impl CaptchaVerifier for DevCaptcha {
    async fn verify(&self, token: &str, _client_ip: Option<&str>) -> bool {
        portico_crypto::constant_time_eq(token.as_bytes(), DEV_TOKEN.as_bytes())
    }

    fn site_key(&self) -> Option<&str> {
        None
    }
}
