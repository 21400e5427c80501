//! SMS through an HTTP gateway: `POST <url>` with a JSON body made from a
//! template and an optional `Authorization` header; any 2xx answer is
//! delivery. The template is JSON text in which `{to}`, `{text}` and
//! `{code}` are replaced by the values, escaped for a JSON string, e.g.
//! `{"phone": "{to}", "message": "{text}"}`.

use std::time::Duration;

use async_trait::async_trait;
use time::OffsetDateTime;

use super::{DeliveryError, OtpMessage, OtpSender};

pub struct HttpSmsGateway {
    client: reqwest::Client,
    url: String,
    authorization: Option<String>,
    template: String,
}

impl HttpSmsGateway {
    /// # Errors
    /// When the template is not JSON once filled, or the HTTP client cannot be built.
    pub fn new(
        url: String,
        authorization: Option<String>,
        template: String,
        timeout: Duration,
    ) -> Result<Self, DeliveryError> {
        let probe = fill(
            &template,
            &OtpMessage {
                channel: portico_model::otp::OtpChannel::Sms,
                to: "+70000000000".into(),
                code: "000000".into(),
                text: "text \"quoted\"".into(),
            },
        );
        serde_json::from_str::<serde_json::Value>(&probe)
            .map_err(|e| DeliveryError(format!("the SMS body template is not JSON once filled: {e}")))?;
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| DeliveryError(e.to_string()))?;
        Ok(Self { client, url, authorization, template })
    }
}

/// `value` as the inside of a JSON string.
fn escaped(value: &str) -> String {
    let quoted = serde_json::Value::String(value.to_owned()).to_string();
    quoted[1..quoted.len() - 1].to_owned()
}

fn fill(template: &str, message: &OtpMessage) -> String {
    template
        .replace("{to}", &escaped(&message.to))
        .replace("{code}", &escaped(&message.code))
        .replace("{text}", &escaped(&message.text))
}

#[async_trait]
impl OtpSender for HttpSmsGateway {
    async fn send(&self, message: &OtpMessage, _now: OffsetDateTime) -> Result<(), DeliveryError> {
        let mut request = self
            .client
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(fill(&self.template, message));
        if let Some(authorization) = &self.authorization {
            request = request.header(reqwest::header::AUTHORIZATION, authorization);
        }
        let response =
            request.send().await.map_err(|e| DeliveryError(format!("SMS gateway: {}", super::request_failure(e))))?;
        if response.status().is_success() {
            tracing::info!(status = response.status().as_u16(), "SMS handed to the gateway");
            Ok(())
        } else {
            Err(DeliveryError(format!("SMS gateway answered {}", response.status())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_failure_says_why_without_the_gateways_address_and_its_key() {
        // A port nothing listens on: the connection is refused.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let url = format!("http://127.0.0.1:{port}/sms/send?api_id=key-of-the-gateway");
        let template = r#"{"to": "{to}", "text": "{text}"}"#.to_owned();
        let gateway = HttpSmsGateway::new(url, None, template, Duration::from_secs(5)).unwrap();
        let message = OtpMessage {
            channel: portico_model::otp::OtpChannel::Sms,
            to: "+79001234567".into(),
            code: "123456".into(),
            text: "Код: 123456".into(),
        };
        let error = gateway.send(&message, OffsetDateTime::UNIX_EPOCH).await.unwrap_err().to_string();
        assert!(!error.contains("key-of-the-gateway") && !error.contains("/sms/send"), "{error}");
        assert!(error.starts_with("the code could not be delivered: SMS gateway: error sending request"), "{error}");
        assert!(error.to_lowercase().contains("connect"), "the cause is named: {error}");
    }

    #[test]
    fn the_template_is_filled_with_json_escaped_values() {
        let message = OtpMessage {
            channel: portico_model::otp::OtpChannel::Sms,
            to: "+79001234567".into(),
            code: "123456".into(),
            text: "Код: \"123456\"\n".into(),
        };
        let body = fill(r#"{"to": "{to}", "text": "{text}", "code": "{code}"}"#, &message);
        let parsed: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(parsed["text"], "Код: \"123456\"\n");
        assert_eq!(parsed["to"], "+79001234567");
        assert_eq!(parsed["code"], "123456");
    }
}
