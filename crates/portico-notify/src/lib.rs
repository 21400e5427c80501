//! Merchant notifications (`spec/2-notifications-and-reports.md`, part A).
//!
//! - the canonical events and settings are plain data in
//!   [`portico_model::notify`];
//! - [`render`]: one renderer per payload version, producing the body that
//!   is sent and the check string that is signed, from the same values, so
//!   that a number or date is written in the check string exactly as it
//!   stands in the body;
//! - [`sign`]: the `X-Api-Signature-SHA256` header value;
//! - [`settings`]: `GET` / `PUT /v1/notifications/settings` for merchants;
//! - [`intake`]: the internal API other bank systems submit events to;
//! - [`merchants`]: merchants and their keys; [`admin`]: the same over the
//!   admin API (`/admin/v1/merchants`);
//! - [`retention`]: finished deliveries go after the retention period.

pub mod render;

/// The signature of a check string: lowercase hex HMAC-SHA-256 under the
/// merchant's key.
pub fn sign(key: &[u8], check: &str) -> String {
    portico_crypto::hash::hmac_sha256_hex(key, check.as_bytes())
}

pub mod admin;
pub mod callback;
pub mod commit;
pub mod deliveries;
pub mod delivery;
pub mod error;
pub mod intake;
pub mod merchants;
pub mod openapi;
pub mod retention;
pub mod samples;
pub mod settings;
pub mod worker;

use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};
use portico_crypto::seal::Sealer;
use portico_model::clock::Clock;
use portico_storage::Storage;

/// What the notification handlers share.
pub struct Notify {
    pub store: Arc<dyn Storage>,
    pub clock: Arc<dyn Clock>,
    /// Opens merchants' sealed keys for signing.
    pub sealer: Sealer,
    /// The admin and internal APIs' tokens; each API is off without its own.
    pub api_tokens: portico_api::ApiTokens,
    /// Plain `http` and private-network callback addresses (the demo).
    pub allow_insecure_callbacks: bool,
    /// How long a receiver may take to answer.
    pub timeout: std::time::Duration,
    /// The address notifications are sent from (`None`: the system's choice).
    pub source_address: Option<std::net::IpAddr>,
    /// How long a claimed delivery is reserved for its worker; longer than
    /// `timeout`.
    pub lease: std::time::Duration,
    /// Deliveries to one merchant in flight at once, per worker.
    pub per_merchant: usize,
    /// Deliveries in flight at once, per worker.
    pub in_flight: usize,
    /// Rung when a delivery is queued, so that this node's worker claims it
    /// at once instead of at its next pass.
    pub queued: Arc<tokio::sync::Notify>,
    /// Records submitted events in group commits.
    pub intake: commit::IntakeWriter,
    /// Merchants the intake has found (merchants are never removed).
    pub known_merchants: std::sync::RwLock<std::collections::HashSet<String>>,
    /// How long finished deliveries (with their attempts and events) are
    /// kept; `None`: for ever. See [`retention`].
    pub retention: Option<std::time::Duration>,
    /// When failed deliveries are tried again.
    pub retry: delivery::RetrySchedule,
}

pub type NotifyState = Arc<Notify>;

impl portico_api::HasApiTokens for Notify {
    fn api_tokens(&self) -> &portico_api::ApiTokens {
        &self.api_tokens
    }
}

/// The merchant settings API and the internal event intake.
pub fn router(state: NotifyState) -> Router {
    Router::new()
        .route("/v1/notifications/settings", get(settings::get_settings).put(settings::put_settings))
        .route("/v1/notifications/deliveries", get(deliveries::list))
        .route("/v1/notifications/deliveries/{id}/resend", post(deliveries::resend))
        .route("/internal/v1/notifications/events/payment", post(intake::submit_payment))
        .route("/internal/v1/notifications/events/refund", post(intake::submit_refund))
        .route("/internal/v1/notifications/events/subscription", post(intake::submit_subscription))
        .route("/internal/v1/notifications/events/{kind}", post(intake::unknown_kind))
        .route("/admin/v1/merchants", get(admin::list).post(admin::create))
        .route("/admin/v1/merchants/{merchant_id}/key", post(admin::rotate_key))
        .route("/admin/v1/merchants/{merchant_id}/deliveries", get(admin::deliveries))
        .route("/admin/v1/merchants/{merchant_id}/deliveries/{id}/resend", post(admin::resend))
        .with_state(state)
}
