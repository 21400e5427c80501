//! How long deliveries are kept. A delivery that finished (`DELIVERED`, or
//! `FAILED` after its day of retries) stays in the merchant's list, with
//! every attempt, for `notifications.retention_days`; then the clean-up
//! task removes it, its attempts, and its event once the event has no other
//! delivery (a resend keeps the event for as long as it is kept itself).
//! Pending deliveries are never removed.
//!
//! The intake's duplicate detection reaches as far back as the events kept:
//! an event id submitted again after its event was removed is a new event.
//!
//! A delivery at the end of its retention is no longer resent
//! ([`expiring`]): the clean-up on some node could be removing its event
//! at that moment, and the new delivery with it.

use portico_storage::{RemovedDeliveries, Result};
use time::OffsetDateTime;

use crate::Notify;

/// Deliveries removed per transaction: short transactions, so that the
/// intake and the workers never wait long behind a clean-up.
pub const BATCH: u32 = portico_storage::MAX_REMOVED_DELIVERIES;

/// How long before its removal a finished delivery can no longer be resent;
/// more than the clocks of two nodes differ.
pub const RESEND_MARGIN: std::time::Duration = std::time::Duration::from_secs(60);

/// Whether a delivery that finished at `finished_at` (`None`: still
/// pending) is past `retention` at `now`, or within [`RESEND_MARGIN`] of it:
/// the clean-up may be removing it.
pub fn expiring(
    retention: Option<std::time::Duration>,
    finished_at: Option<OffsetDateTime>,
    now: OffsetDateTime,
) -> bool {
    match (retention, finished_at) {
        (Some(retention), Some(finished)) => finished + retention <= now + RESEND_MARGIN,
        _ => false,
    }
}

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
        total += removed;
        if removed.deliveries < u64::from(BATCH) {
            return Ok(total);
        }
        tokio::task::yield_now().await;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use time::OffsetDateTime;

    use super::expiring;

    #[test]
    fn a_delivery_is_expiring_from_a_minute_before_its_removal_and_never_while_pending() {
        let finished = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        let thirty_days = Some(Duration::from_secs(30 * 24 * 3600));
        let removal = finished + time::Duration::days(30);
        let at = |seconds: i64| removal + time::Duration::seconds(seconds);
        assert!(!expiring(thirty_days, Some(finished), at(-61)));
        assert!(expiring(thirty_days, Some(finished), at(-60)));
        assert!(expiring(thirty_days, Some(finished), at(3600)));
        assert!(!expiring(thirty_days, None, at(3600)), "pending");
        assert!(!expiring(None, Some(finished), at(365 * 24 * 3600)), "kept for ever");
    }
}
