//! Merchant notifications: merchants, their settings, and the canonical
//! events other bank systems submit (each holding every field that any
//! payload version needs).

use std::fmt;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

/// An amount in kopecks, written in rubles with two decimals (`1500.50`),
/// the same text in the body and in the check string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(transparent)]
#[schema(example = 150050)]
pub struct Kopecks(pub i64);

impl<'de> Deserialize<'de> for Kopecks {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        integral(deserializer).map(Kopecks)
    }
}

/// A JSON integer, also when written with a zero fraction (`8577.0`): JSON
/// Schema's `integer` is any number without a fractional part, and the
/// published documents say `integer`. A fraction, or a value outside i64,
/// is refused.
///
/// # Errors
/// The deserializer's error, naming what was found.
pub fn integral<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    struct Integral;
    impl serde::de::Visitor<'_> for Integral {
        type Value = i64;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an integer")
        }
        fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<i64, E> {
            Ok(value)
        }
        fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<i64, E> {
            i64::try_from(value).map_err(|_| E::custom(format!("{value} is too large")))
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
        fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<i64, E> {
            // 2^63 is exactly representable; every integral f64 below it fits.
            if value.fract() == 0.0 && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&value) {
                Ok(value as i64)
            } else {
                Err(E::custom(format!("{value} is not an integer")))
            }
        }
    }
    deserializer.deserialize_any(Integral)
}

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PaymentMethod {
    Sbp,
    Acquiring,
}

/// A payment outcome or status change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PaymentEvent {
    /// The payment's id (v3 `data.id`).
    pub payment_id: String,
    /// The bank's numeric operation id (v2 `transaction.id`, v1 `transactionId`).
    #[serde(deserialize_with = "integral")]
    pub transaction_id: i64,
    /// The merchant's order: 1 to 40 of `A-Z a-z 0-9 - _ .`.
    #[schema(pattern = "^[A-Za-z0-9._-]{1,40}$", example = "order-1001")]
    pub order_id: String,
    pub amount: Kopecks,
    /// ISO 4217, three capital letters.
    #[schema(pattern = "^[A-Z]{3}$", example = "RUB")]
    pub currency: String,
    /// `SUCCESS`, ...
    pub status: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub status_date: OffsetDateTime,
    pub payment_method: PaymentMethod,
    pub sbp_transaction_id: Option<String>,
    #[schema(max_length = 32)]
    pub qr_id: Option<String>,
    pub comment: Option<String>,
    #[schema(max_length = 140)]
    pub additional_info: Option<String>,
    /// Caller-defined extra parameters passed with the payment.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub extra: serde_json::Map<String, serde_json::Value>,
    /// When the event was formed (v1 `createDate`).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
}

/// A refund outcome or status change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RefundEvent {
    pub refund_id: String,
    pub sbp_transaction_id: Option<String>,
    pub amount: Kopecks,
    /// `COMPLETED`, ...
    pub status: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub status_date: OffsetDateTime,
    /// The refunded payment.
    #[serde(deserialize_with = "integral")]
    pub transaction_id: i64,
    pub order_id: String,
    #[schema(max_length = 32)]
    pub qr_id: Option<String>,
}

/// A subscription status change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubscriptionEvent {
    pub subscription_id: String,
    /// `SUBSCRIBED`, ...
    pub status: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
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
    #[schema(max_length = 32)]
    pub qr_id: Option<String>,
}

/// Payload versions of payments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum PaymentVersion {
    V1,
    V2,
    V3,
}

/// Payload versions of refunds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum RefundVersion {
    V1,
}

/// Payload versions of subscriptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum SubscriptionVersion {
    V1,
    V2,
}

/// `{version, enabled}` of one operation type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OperationSetting<V> {
    pub version: V,
    pub enabled: bool,
}

/// `operationTypes`: absent types get the current version, enabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OperationTypes {
    #[serde(default = "current_payment")]
    pub payment: OperationSetting<PaymentVersion>,
    #[serde(default = "current_refund")]
    pub refund: OperationSetting<RefundVersion>,
    #[serde(default = "current_subscription")]
    pub subscription: OperationSetting<SubscriptionVersion>,
}

fn current_payment() -> OperationSetting<PaymentVersion> {
    OperationSetting { version: PaymentVersion::V3, enabled: true }
}
fn current_refund() -> OperationSetting<RefundVersion> {
    OperationSetting { version: RefundVersion::V1, enabled: true }
}
fn current_subscription() -> OperationSetting<SubscriptionVersion> {
    OperationSetting { version: SubscriptionVersion::V2, enabled: true }
}

impl Default for OperationTypes {
    fn default() -> Self {
        Self { payment: current_payment(), refund: current_refund(), subscription: current_subscription() }
    }
}

/// The notification settings object of the spec, for request and response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NotificationSettings {
    /// Where notifications go: an absolute `https://` URL outside private
    /// networks (plain `http://` and private addresses only where the
    /// server allows insecure callbacks, as the demo does).
    #[schema(format = "uri", pattern = "^https?://[^\\s/?#]+[^\\s]*$", example = "https://shop.example/notifications")]
    pub callback_url: String,
    #[serde(default)]
    pub operation_types: OperationTypes,
}

/// A merchant. The API key is kept twice: as a hash, to find the merchant
/// by the key it presents, and sealed, to sign its notifications.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merchant {
    pub ids: MerchantIds,
    pub key_hash: String,
    pub key_sealed: Vec<u8>,
    /// `None` until the merchant sets a callback address.
    pub settings: Option<NotificationSettings>,
    pub created_at: OffsetDateTime,
}

/// Which kind of event, and which settings entry applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    Payment,
    Refund,
    Subscription,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Payment => "payment",
            Self::Refund => "refund",
            Self::Subscription => "subscription",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "payment" => Some(Self::Payment),
            "refund" => Some(Self::Refund),
            "subscription" => Some(Self::Subscription),
            _ => None,
        }
    }
}

/// A submitted event as stored: the canonical event as JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    pub event_id: String,
    pub merchant_id: String,
    pub kind: EventKind,
    pub payload: serde_json::Value,
    pub received_at: OffsetDateTime,
    /// The W3C `traceparent` of the request that submitted it, so that its
    /// delivery continues that trace (OpenTelemetry); not part of the
    /// event's identity.
    pub trace_parent: Option<String>,
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DeliveryStatus {
    Pending,
    Delivered,
    Failed,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "PENDING",
            Self::Delivered => "DELIVERED",
            Self::Failed => "FAILED",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "PENDING" => Some(Self::Pending),
            "DELIVERED" => Some(Self::Delivered),
            "FAILED" => Some(Self::Failed),
            _ => None,
        }
    }
}

/// One try to hand a notification over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub delivery_id: crate::ids::DeliveryId,
    /// 1 for the first.
    pub attempt: u32,
    pub at: OffsetDateTime,
    pub status_code: Option<u16>,
    pub error: Option<String>,
    /// The start of the receiver's answer (at most 512 bytes, lossy UTF-8).
    pub response_excerpt: Option<String>,
    pub duration_ms: i64,
}

/// What an attempt leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The receiver answered 200.
    Delivered,
    /// Try again at this time.
    RetryAt(OffsetDateTime),
    /// The retry window is over (or delivery is impossible).
    Failed,
}

impl Delivery {
    /// A new delivery of `event_id`, due at once, its window starting `now`.
    pub fn new(event_id: String, merchant_id: String, now: OffsetDateTime) -> Self {
        Self {
            id: crate::ids::DeliveryId::now_v7(),
            event_id,
            merchant_id,
            status: DeliveryStatus::Pending,
            attempts: 0,
            next_attempt_at: now,
            lease_until: None,
            created_at: now,
            finished_at: None,
        }
    }
}

/// One event's way to the merchant: attempted until a 200 or the end of
/// the retry window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub id: crate::ids::DeliveryId,
    pub event_id: String,
    pub merchant_id: String,
    pub status: DeliveryStatus,
    pub attempts: u32,
    pub next_attempt_at: OffsetDateTime,
    pub lease_until: Option<OffsetDateTime>,
    pub created_at: OffsetDateTime,
    pub finished_at: Option<OffsetDateTime>,
}

#[cfg(test)]
mod integral_tests {
    use super::Kopecks;

    #[test]
    fn integers_may_carry_a_zero_fraction_but_no_other() {
        assert_eq!(serde_json::from_str::<Kopecks>("8577").unwrap(), Kopecks(8577));
        assert_eq!(serde_json::from_str::<Kopecks>("8577.0").unwrap(), Kopecks(8577));
        assert_eq!(serde_json::from_str::<Kopecks>("-5").unwrap(), Kopecks(-5));
        assert!(serde_json::from_str::<Kopecks>("85.5").unwrap_err().to_string().contains("not an integer"));
        assert!(serde_json::from_str::<Kopecks>("1e19").is_err(), "outside i64");
        assert!(serde_json::from_str::<Kopecks>("18446744073709551615").is_err());
        assert!(serde_json::from_str::<Kopecks>("\"12\"").is_err(), "not a string");
        // Read exactly (serde_json's float_roundtrip), not one step off.
        assert_eq!(serde_json::from_str::<Kopecks>("2234578792381069.0").unwrap(), Kopecks(2_234_578_792_381_069));
    }
}
