//! A CAPTCHA verifier over HTTP, compatible with SmartCaptcha-style
//! validation: `POST <url>` with form fields `secret`, `token` and `ip`,
//! answered by `{"status": "ok"}` for a human. Anything else, including a
//! service that cannot be reached, is "not verified" (fail closed; the user
//! can try again).

use std::time::Duration;

use async_trait::async_trait;

use crate::captcha::CaptchaVerifier;

pub struct HttpCaptcha {
    client: reqwest::Client,
    url: String,
    server_key: String,
    site_key: String,
}

impl HttpCaptcha {
    /// # Errors
    /// When the HTTP client cannot be built.
    pub fn new(url: String, server_key: String, site_key: String) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder().timeout(Duration::from_secs(5)).build()?;
        Ok(Self { client, url, server_key, site_key })
    }
}

#[derive(serde::Deserialize)]
struct Answer {
    status: String,
}

#[async_trait]
impl CaptchaVerifier for HttpCaptcha {
    async fn verify(&self, token: &str, client_ip: Option<&str>) -> bool {
        let mut form = vec![("secret", self.server_key.as_str()), ("token", token)];
        if let Some(ip) = client_ip {
            form.push(("ip", ip));
        }
        let body: String = form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
        let response = self
            .client
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await;
        match response {
            Ok(response) => match response.json::<Answer>().await {
                Ok(answer) => answer.status == "ok",
                Err(error) => {
                    let error = crate::delivery::request_failure(error);
                    tracing::warn!(%error, "the CAPTCHA service gave an unreadable answer");
                    false
                }
            },
            Err(error) => {
                let error = crate::delivery::request_failure(error);
                tracing::warn!(%error, "the CAPTCHA service cannot be reached");
                false
            }
        }
    }

    fn site_key(&self) -> Option<&str> {
        Some(&self.site_key)
    }
}
