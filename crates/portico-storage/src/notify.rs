//! Merchants, their events and the deliveries of those events.

use crate::{KeyPage, Result, StorageError};
use async_trait::async_trait;
use portico_model::ids::DeliveryId;
use portico_model::notify::{Attempt, Delivery, Merchant, NotificationSettings, Outcome, StoredEvent};
use time::OffsetDateTime;

/// What one claim of due deliveries may take.
#[derive(Debug, Clone, Copy)]
pub struct DeliveryClaim<'a> {
    pub now: OffsetDateTime,
    pub lease_until: OffsetDateTime,
    /// Deliveries in all.
    pub limit: u32,
    /// Deliveries of one merchant.
    pub per_merchant: u32,
    /// Merchants to pass over (their worker is busy with them already).
    pub skip_merchants: &'a [String],
}

/// An attempt made under a lease, and what follows it.
#[derive(Debug, Clone)]
pub struct FinishedAttempt {
    pub attempt: Attempt,
    pub outcome: Outcome,
    /// The lease the attempt was made under.
    pub lease_until: OffsetDateTime,
}

/// Merchants of the notification service.
#[async_trait]
pub trait MerchantRepository: Send + Sync {
    /// # Errors
    /// [`StorageError::Conflict`] when the merchant id, public id or key is taken.
    async fn create_merchant(&self, merchant: &Merchant) -> Result<()>;
    /// # Errors
    /// Only when the store fails.
    async fn find_merchant(&self, merchant_id: &str) -> Result<Option<Merchant>>;
    /// The merchants of `merchant_ids` that exist, in no particular order.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_merchants(&self, merchant_ids: &[&str]) -> Result<Vec<Merchant>>;
    /// The merchant whose API key hashes to `key_hash`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_merchant_by_key(&self, key_hash: &str) -> Result<Option<Merchant>>;
    /// The merchants of `page`, by id.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn list_merchants(&self, page: KeyPage<'_>) -> Result<Vec<Merchant>>;
    /// Replaces the merchant's key. Returns whether the merchant exists.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn set_merchant_key(&self, merchant_id: &str, key_hash: &str, key_sealed: &[u8]) -> Result<bool>;
    /// Replaces the merchant's notification settings. Returns whether the merchant exists.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn save_notification_settings(&self, merchant_id: &str, settings: &NotificationSettings) -> Result<bool>;
}

/// What recording a submitted event did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intake {
    /// Stored, with its pending delivery.
    Accepted,
    /// The same event was stored before; nothing changed.
    Duplicate,
    /// The event id was used before with other content; nothing changed.
    Reused,
}

/// Events other bank systems submitted, and their deliveries.
#[async_trait]
pub trait NotificationRepository: Send + Sync {
    /// Stores `event` and its first pending delivery in one transaction.
    /// An event id seen before with the same content is a
    /// [`Intake::Duplicate`] and changes nothing.
    ///
    /// # Errors
    /// [`StorageError::Conflict`] when the event id was used with other content.
    async fn record_event(&self, event: &StoredEvent, delivery: &Delivery) -> Result<Intake> {
        match self.record_events(&[(event.clone(), delivery.clone())]).await?.first() {
            Some(Intake::Reused) => Err(StorageError::Conflict("event id (with other content)".into())),
            Some(intake) => Ok(*intake),
            None => Err(StorageError::Other("an event was not recorded".into())),
        }
    }
    /// Stores each event and its first pending delivery, all in one
    /// transaction (a group commit: many submissions, one durable write).
    /// Returns what happened to each, in order: an event id seen before
    /// (also earlier in the same batch) with the same content is a
    /// [`Intake::Duplicate`], with other content [`Intake::Reused`]; neither
    /// changes anything.
    ///
    /// # Errors
    /// Only when the store fails; then nothing is stored.
    async fn record_events(&self, batch: &[(StoredEvent, Delivery)]) -> Result<Vec<Intake>>;
    /// # Errors
    /// Only when the store fails.
    async fn find_event(&self, event_id: &str) -> Result<Option<StoredEvent>>;
    /// The events of `event_ids` that exist, in no particular order.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_events(&self, event_ids: &[&str]) -> Result<Vec<StoredEvent>>;
    /// The deliveries of an event, oldest first.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn deliveries_of(&self, event_id: &str) -> Result<Vec<Delivery>>;
    /// Takes pending deliveries due by `claim.now` and leases them until
    /// `claim.lease_until`, atomically: concurrent callers (on any node)
    /// never take the same delivery. A leased delivery is due again when its
    /// lease runs out (its worker died), so its `next_attempt_at` becomes the
    /// lease's end. Oldest first; see [`DeliveryClaim`] for the bounds.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn claim_due_deliveries(&self, claim: &DeliveryClaim<'_>) -> Result<Vec<Delivery>>;
    /// Records each attempt and moves its delivery on by the outcome,
    /// releasing the lease, all in one transaction. A delivery whose lease
    /// has moved on (another worker claimed it after this lease ran out)
    /// keeps the other worker's state; the attempt is still recorded.
    ///
    /// # Errors
    /// Only when the store fails; then nothing is recorded.
    async fn finish_attempts(&self, finished: &[FinishedAttempt]) -> Result<()>;
    /// Gives leased deliveries back to the queue, due at `now`: each only
    /// while it still holds the lease it is named with.
    ///
    /// # Errors
    /// Only when the store fails (the leases then simply run out).
    async fn release_deliveries(&self, leases: &[(DeliveryId, OffsetDateTime)], now: OffsetDateTime) -> Result<()>;
    /// A merchant's deliveries, newest first: `status` filters, `offset` and
    /// `limit` page. Returns the page and the number of all that match.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn list_deliveries(
        &self,
        merchant_id: &str,
        status: Option<portico_model::notify::DeliveryStatus>,
        offset: u32,
        limit: u32,
    ) -> Result<(Vec<Delivery>, u64)>;
    /// # Errors
    /// Only when the store fails.
    async fn find_delivery(&self, id: DeliveryId) -> Result<Option<Delivery>>;
    /// Adds a delivery of a stored event (a resend).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn create_delivery(&self, delivery: &Delivery) -> Result<()>;
    /// The attempts of a delivery, in order.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn attempts_of(&self, delivery_id: DeliveryId) -> Result<Vec<Attempt>>;
    /// Removes at most `limit` (and at most [`MAX_REMOVED_DELIVERIES`])
    /// deliveries that finished (`DELIVERED` or `FAILED`) before `before`,
    /// with their attempts, and the events of theirs that have no delivery
    /// left, all in one transaction. Pending deliveries and their events are never touched.
    /// Returns how many of each went; fewer deliveries than asked for means
    /// none are left.
    ///
    /// # Errors
    /// Only when the store fails; then nothing is removed.
    async fn remove_finished_deliveries(&self, before: OffsetDateTime, limit: u32) -> Result<RemovedDeliveries>;
}

/// The most deliveries one
/// [`NotificationRepository::remove_finished_deliveries`] call removes: each
/// is one parameter of a statement on SQLite.
pub const MAX_REMOVED_DELIVERIES: u32 = 500;

/// What one [`NotificationRepository::remove_finished_deliveries`] call
/// removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RemovedDeliveries {
    pub deliveries: u64,
    pub attempts: u64,
    pub events: u64,
}

impl std::ops::AddAssign for RemovedDeliveries {
    fn add_assign(&mut self, other: Self) {
        self.deliveries += other.deliveries;
        self.attempts += other.attempts;
        self.events += other.events;
    }
}
