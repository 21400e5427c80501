//! How long deliveries are kept. A delivery that finished (`DELIVERED`, or
//! `FAILED` after its day of retries) stays in the merchant's list, with
//! every attempt, for `notifications.retention_days`; then the clean-up
//! task removes it, its attempts, and its event once the event has no other
//! delivery (a resend keeps the event for as long as it is kept itself).
//! Pending deliveries are never removed.
//!
//! The intake's duplicate detection reaches as far back as the events kept:
//! an event id submitted again after its event was removed is a new event.

use portico_storage::{RemovedDeliveries, Result};

use crate::Notify;

/// Deliveries removed per transaction: short transactions, so that the
/// intake and the workers never wait long behind a clean-up.
pub const BATCH: u32 = 500;

/// Removes what finished more than the retention period ago (nothing when
/// deliveries are kept for ever), in batches of [`BATCH`]; how much went.
///
/// Safe on any number of nodes at once: each batch is a set of idempotent
/// deletes.
///
/// # Errors
/// When the store fails; the batches before stay removed.
pub async fn remove_expired(notify: &Notify) -> Result<RemovedDeliveries> {
    let mut total = RemovedDeliveries::default();
    let Some(retention) = notify.retention else {
        return Ok(total);
    };
    let before = notify.clock.now() - retention;
    loop {
        let removed = notify.store.remove_finished_deliveries(before, BATCH).await?;
        total.deliveries += removed.deliveries;
        total.attempts += removed.attempts;
        total.events += removed.events;
        if removed.deliveries < u64::from(BATCH) {
            return Ok(total);
        }
        tokio::task::yield_now().await;
    }
}
