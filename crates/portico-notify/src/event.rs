//! Canonical events, as other bank systems submit them.

use std::fmt;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// An amount in kopecks, written in rubles with two decimals (`1500.50`),
/// the same text in the body and in the check string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Kopecks(pub i64);

impl fmt::Display for Kopecks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        write!(f, "{sign}{}.{:02}", abs / 100, abs % 100)
    }
}

/// The merchant a notification goes to, as the payloads name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MerchantIds {
    pub merchant_id: String,
    pub public_id: String,
    pub sbp_merchant_id: String,
}

/// How a payment was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PaymentMethod {
    Sbp,
    Acquiring,
}

/// A payment outcome or status change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentEvent {
    /// The payment's id (v3 `data.id`).
    pub payment_id: String,
    /// The bank's numeric operation id (v2 `transaction.id`, v1 `transactionId`).
    pub transaction_id: i64,
    pub order_id: String,
    pub amount: Kopecks,
    pub currency: String,
    /// `SUCCESS`, ...
    pub status: String,
    #[serde(with = "time::serde::rfc3339")]
    pub status_date: OffsetDateTime,
    pub payment_method: PaymentMethod,
    pub sbp_transaction_id: Option<String>,
    pub qr_id: Option<String>,
    pub comment: Option<String>,
    pub additional_info: Option<String>,
    /// Caller-defined extra parameters passed with the payment.
    #[serde(default)]
    pub extra: serde_json::Map<String, serde_json::Value>,
    /// When the event was formed (v1 `createDate`).
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A refund outcome or status change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RefundEvent {
    pub refund_id: String,
    pub sbp_transaction_id: Option<String>,
    pub amount: Kopecks,
    /// `COMPLETED`, ...
    pub status: String,
    #[serde(with = "time::serde::rfc3339")]
    pub status_date: OffsetDateTime,
    /// The refunded payment.
    pub transaction_id: i64,
    pub order_id: String,
    pub qr_id: Option<String>,
}

/// A subscription status change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionEvent {
    pub subscription_id: String,
    /// `SUBSCRIBED`, ...
    pub status: String,
    #[serde(with = "time::serde::rfc3339")]
    pub status_date: OffsetDateTime,
    pub purpose: Option<String>,
    /// `ACQUIRING`, ...
    pub payment_method: Option<String>,
    /// `MIR`, ...
    pub payment_system: Option<String>,
    /// Masked: `220220******1234`.
    pub card_number: Option<String>,
    /// `2028-11`.
    pub expiration_date: Option<String>,
    pub bank_name: Option<String>,
    pub bank_member_id: Option<String>,
    pub qr_id: Option<String>,
}
