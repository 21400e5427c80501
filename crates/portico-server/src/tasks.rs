//! Background tasks that run inside `portico serve`.

use std::sync::Arc;
use std::time::Duration;

use portico_identity::Identity;
use tokio::sync::watch;

/// Removes expired codes, login processes, sessions, tokens and retired keys,
/// login throttle counters past their memory, devices whose trust ran out,
/// deliveries and report tasks
/// past their retention, every `interval`, until `shutdown`
/// fires. Safe on any number of nodes at once: every pass is a set of
/// idempotent deletes. The first pass comes one interval after the start,
/// not with it: nodes started together (a deployment) do not all sweep
/// while they are starting, and what a node's owner does right after the
/// start (a test with its own clock) never meets a pass it did not ask for.
pub async fn cleaner(
    identity: Arc<Identity>,
    notify: Arc<portico_notify::Notify>,
    reports: Arc<portico_reports::Reports>,
    interval: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = shutdown.changed() => return,
        }
        let now = identity.clock.now();
        let settings = &identity.settings;
        match identity.store.delete_expired(now, settings.access_token_ttl, now - settings.key_retention()).await {
            Ok(report) if report.total() > 0 => tracing::debug!(?report, "removed expired rows"),
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "clean-up pass failed; will retry"),
        }
        match identity.store.remove_stale_throttles(now - settings.guard.memory).await {
            Ok(removed) if removed > 0 => tracing::debug!(removed, "removed stale login throttle counters"),
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "removing stale login throttle counters failed; will retry"),
        }
        match identity.store.remove_expired_devices(now - settings.device_trust_ttl).await {
            Ok(removed) if removed > 0 => tracing::debug!(removed, "removed devices whose trust ran out"),
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "removing devices whose trust ran out failed; will retry"),
        }
        match portico_notify::retention::remove_expired(&notify).await {
            Ok(removed) if removed.deliveries > 0 => {
                tracing::debug!(?removed, "removed deliveries past their retention")
            }
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "removing deliveries past their retention failed; will retry"),
        }
        match portico_reports::retention::remove_expired(&reports).await {
            Ok(removed) if removed.tasks > 0 => tracing::debug!(?removed, "removed report tasks past their retention"),
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "removing report tasks past their retention failed; will retry"),
        }
    }
}
