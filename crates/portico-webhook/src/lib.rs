//! Parse and verify Portico's merchant notifications.
//!
//! ```ignore
//! let notification = portico_webhook::verify(&body, signature_header, key, "my-public-id")?;
//! match notification {
//!     Notification::PaymentV3(p) => { /* p.data.order.id, p.data.status.value, ... */ }
//!     _ => {}
//! }
//! ```
//!
//! [`verify`] recognises the payload version, rebuilds the check string
//! from the body's own text (numbers exactly as they stand in the JSON),
//! computes HMAC-SHA-256 with the merchant's key and compares it with the
//! `X-Api-Signature-SHA256` header in constant time. Only a verified body is
//! returned. `public_id` is the merchant's own public id: the payment v2 and
//! refund v1 check strings include it although their bodies do not carry it.

use hmac::{Hmac, Mac};
use serde::Deserialize;
use serde_json::value::RawValue;
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// Why a notification was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Not JSON, or not any known notification version.
    Malformed(String),
    /// The signature does not match: not from Portico, or not for this key.
    BadSignature,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Malformed(why) => write!(f, "not a Portico notification: {why}"),
            Error::BadSignature => f.write_str("the signature does not match"),
        }
    }
}

impl std::error::Error for Error {}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Status {
    pub value: String,
    pub date: String,
}

/// A number as the body writes it (`1500.50`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Amount(pub String);

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw: &RawValue = Deserialize::deserialize(d)?;
        Ok(Amount(raw.get().to_owned()))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentV3 {
    pub data: PaymentV3Data,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentV3Data {
    pub id: String,
    pub public_id: String,
    pub amount: Amount,
    pub order: OrderRef,
    pub status: Status,
    pub payment_method: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct OrderRef {
    pub id: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentV2 {
    pub transaction: PaymentV2Transaction,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentV2Transaction {
    pub id: i64,
    pub order_id: String,
    pub status: Status,
    pub amount: Amount,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentV1 {
    pub transaction_id: i64,
    pub sbp_merchant_id: String,
    pub amount: Amount,
    pub currency: String,
    pub transaction_date: String,
    pub payment_status: String,
    pub order: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RefundV1 {
    pub refund: Refund,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Refund {
    pub id: String,
    pub amount: Amount,
    pub status: Status,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Subscription {
    pub data: SubscriptionData,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionData {
    pub id: String,
    pub public_id: String,
    pub status: Status,
}

/// A verified notification, by version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notification {
    PaymentV3(PaymentV3),
    PaymentV2(PaymentV2),
    PaymentV1(PaymentV1),
    RefundV1(RefundV1),
    /// Subscription v1 and v2 share the signed fields.
    Subscription(Subscription),
}

fn parse<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(body).map_err(|e| Error::Malformed(e.to_string()))
}

/// The notification in `body` and its check string.
///
/// # Errors
/// [`Error::Malformed`] for a body that is no known version.
pub fn check_string(body: &[u8], public_id: &str) -> Result<(Notification, String), Error> {
    #[derive(Deserialize)]
    struct Probe {
        event: Option<String>,
        refund: Option<serde::de::IgnoredAny>,
        #[serde(rename = "transactionId")]
        transaction_id: Option<serde::de::IgnoredAny>,
    }
    let probe: Probe = parse(body)?;
    let join = |parts: &[&str]| parts.join("|");
    Ok(match (probe.event.as_deref(), probe.refund.is_some(), probe.transaction_id.is_some()) {
        (Some("PAYMENT"), _, _) => {
            let p: PaymentV3 = parse(body)?;
            let d = &p.data;
            let check = join(&[&d.amount.0, &d.public_id, &d.order.id, &d.status.value, &d.status.date]);
            (Notification::PaymentV3(p), check)
        }
        (Some("payment"), _, _) => {
            let p: PaymentV2 = parse(body)?;
            let t = &p.transaction;
            let check = join(&[&t.amount.0, public_id, &t.order_id, &t.status.value, &t.status.date]);
            (Notification::PaymentV2(p), check)
        }
        (Some("SUBSCRIPTION"), _, _) => {
            let s: Subscription = parse(body)?;
            let d = &s.data;
            let check = join(&[&d.public_id, &d.id, &d.status.value, &d.status.date]);
            (Notification::Subscription(s), check)
        }
        (None, true, _) => {
            let r: RefundV1 = parse(body)?;
            let f = &r.refund;
            let check = join(&[&f.amount.0, public_id, &f.id, &f.status.value, &f.status.date]);
            (Notification::RefundV1(r), check)
        }
        (None, false, true) => {
            let p: PaymentV1 = parse(body)?;
            let check = join(&[&p.amount.0, &p.sbp_merchant_id, &p.order, &p.payment_status, &p.transaction_date]);
            (Notification::PaymentV1(p), check)
        }
        _ => return Err(Error::Malformed("no known notification version".into())),
    })
}

/// Lowercase hex HMAC-SHA-256 of `check` under `key`.
pub fn signature(key: &[u8], check: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(check.as_bytes());
    mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

/// The notification in `body`, if `signature_header` is its signature under `key`.
///
/// # Errors
/// [`Error::Malformed`] or [`Error::BadSignature`].
pub fn verify(body: &[u8], signature_header: &str, key: &[u8], public_id: &str) -> Result<Notification, Error> {
    let (notification, check) = check_string(body, public_id)?;
    let expected = signature(key, &check);
    let given = signature_header.trim().to_ascii_lowercase();
    if expected.as_bytes().ct_eq(given.as_bytes()).into() { Ok(notification) } else { Err(Error::BadSignature) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"merchant-key-0123456789";

    #[test]
    fn verifies_a_payment_v3_signed_by_hand_and_refuses_a_changed_one() {
        let body = br#"{"event":"PAYMENT","data":{"id":"pay-1","publicId":"pub-42","amount":1500.50,"order":{"id":"order-7"},"status":{"value":"SUCCESS","date":"2026-11-22T13:45:00+03:00"},"paymentMethod":"SBP","parameters":{}}}"#;
        let signature = "1e12556faedcd2a91f4df08bbbed48baec8e6eead516c9cc83e5377889f2e8e7";
        let n = verify(body, signature, KEY, "pub-42").unwrap();
        assert!(matches!(n, Notification::PaymentV3(ref p) if p.data.amount.0 == "1500.50"));
        assert_eq!(verify(body, &signature.to_uppercase(), KEY, "pub-42"), Ok(n));
        let changed = String::from_utf8_lossy(body).replace("1500.50", "1500.5");
        assert_eq!(
            verify(changed.as_bytes(), signature, KEY, "pub-42"),
            Err(Error::BadSignature),
            "1500.5 is not 1500.50"
        );
        assert_eq!(verify(body, signature, b"other key", "pub-42"), Err(Error::BadSignature));
        assert!(matches!(verify(b"{}", signature, KEY, "pub-42"), Err(Error::Malformed(_))));
    }

    #[test]
    fn refund_v1_takes_the_public_id_from_the_merchant() {
        let body = br#"{"refund":{"id":"refund-3","sbp":{},"amount":99.05,"status":{"value":"COMPLETED","date":"2026-11-23T09:00:00Z"},"paymentParams":{"transactionId":9001,"orderId":"order-7"}}}"#;
        let signature = "8abac7369cbfe9f980145e99d8d67bd18314a78356b255197a03ff81dbdfb9a7";
        assert!(verify(body, signature, KEY, "pub-42").is_ok());
        assert_eq!(verify(body, signature, KEY, "pub-43"), Err(Error::BadSignature));
    }
}
