//! Delivering notifications: at least once, durable, only HTTP 200 counts.
//!
//! Deliveries live in the store. [`Deliverer::run_once`] claims the due ones
//! with a lease (so several workers, on one node or many, never send the
//! same delivery at once, and a worker that dies mid-way leaves a delivery
//! that another picks up when the lease runs out), renders each in the
//! version the merchant's settings name now, signs it, POSTs it, records the
//! attempt and schedules the next one ([`RetrySchedule`]; by default after about 1 min, 5 min, 10 min,
//! 30 min, 1 h, 2 h, 4 h, 8 h (±10 % jitter), then every 8 h, with a last
//! attempt at the end of the 24 h window; after that the delivery is
//! `FAILED`.
//!
//! [`crate::worker`] runs this continuously; [`Deliverer::run_once`] is one
//! synchronous pass (for tests and tools).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument as _;

use portico_model::notify::{
    Attempt, Delivery, EventKind, Merchant, Outcome, PaymentEvent, RefundEvent, StoredEvent, SubscriptionEvent,
};
use portico_storage::{DeliveryClaim, FinishedAttempt, StorageError};
use serde::Deserialize as _;
use time::{Duration, OffsetDateTime};

use crate::callback::{check_callback_url, is_internal};
use crate::{NotifyState, render};

/// Deliveries one claim takes at most.
pub const BATCH: u32 = 64;
/// Bytes of a receiver's answer kept with the attempt.
pub const EXCERPT: usize = 512;
/// When a failed delivery is tried again: after `waits[0]`, `waits[1]`, …
/// (the last one repeating), with ±10 % jitter, until `window` after the
/// delivery was created; then it is failed (`notifications.retry_waits_secs`,
/// `notifications.retry_window_secs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetrySchedule {
    pub waits: Vec<Duration>,
    pub window: Duration,
}

impl Default for RetrySchedule {
    /// About 1 min, 5 min, 10 min, 30 min, 1 h, 2 h, 4 h, 8 h, within a day (PRODUCT.md).
    fn default() -> Self {
        Self {
            waits: DEFAULT_WAITS_SECS.iter().map(|s| Duration::seconds(i64::from(*s))).collect(),
            window: Duration::hours(24),
        }
    }
}

/// The default waits, in seconds.
pub const DEFAULT_WAITS_SECS: [u32; 8] = [60, 300, 600, 1_800, 3_600, 7_200, 14_400, 28_800];

impl RetrySchedule {
    /// What follows attempt number `attempt` (1 for the first) of a
    /// delivery created at `created_at`, made at `now`; `jitter` in [-1, 1]
    /// spreads retries by ±10 %.
    pub fn next_after_failure(
        &self,
        created_at: OffsetDateTime,
        attempt: u32,
        now: OffsetDateTime,
        jitter: f64,
    ) -> Outcome {
        let end = created_at + self.window;
        let Some(last) = self.waits.len().checked_sub(1) else { return Outcome::Failed };
        if now >= end {
            return Outcome::Failed;
        }
        let index = usize::try_from(attempt.saturating_sub(1)).unwrap_or(usize::MAX).min(last);
        let base = self.waits[index].as_seconds_f64();
        let wait = Duration::seconds_f64(base + base * 0.1 * jitter.clamp(-1.0, 1.0));
        Outcome::RetryAt((now + wait).min(end))
    }
}

fn jitter() -> f64 {
    let [a, b] = portico_crypto::random::bytes::<2>();
    (f64::from(u16::from_le_bytes([a, b])) / f64::from(u16::MAX)) * 2.0 - 1.0
}

/// Resolves the hosts of addresses Portico sends to on someone else's word
/// (merchant callbacks, clients' back-channel logout addresses), refusing
/// every address that is not globally reachable.
pub struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = addrs.into_iter().filter(|a| !is_internal(a.ip())).collect();
            if public.is_empty() {
                return Err(format!("{host} resolves only to internal addresses").into());
            }
            let addrs: reqwest::dns::Addrs = Box::new(public.into_iter());
            Ok(addrs)
        })
    }
}

/// Sends notifications; cheap to clone (the pass's tasks share it).
#[derive(Clone)]
pub struct Deliverer {
    notify: NotifyState,
    client: reqwest::Client,
}

/// A claimed delivery, prepared: ready to send, or why it cannot be
/// (`(why, final)`).
pub struct Claimed {
    pub delivery: Delivery,
    ready: Result<Ready, (String, bool)>,
    /// The trace its event was submitted in.
    trace_parent: Option<String>,
    /// When it was claimed (its lease started).
    at: Instant,
}

/// A rendered notification ready to send.
struct Ready {
    url: String,
    body: String,
    signature: String,
}

impl Deliverer {
    /// # Errors
    /// When the HTTP client cannot be built.
    pub fn new(notify: NotifyState) -> Result<Self, reqwest::Error> {
        let mut builder = reqwest::Client::builder()
            .local_address(notify.source_address)
            .timeout(notify.timeout)
            .redirect(reqwest::redirect::Policy::none())
            // Directly, from the source address merchants allow: a proxy
            // named in the environment would resolve the callback's host
            // itself, out of the guard's sight.
            .no_proxy()
            .user_agent("Portico-Notifications/1");
        if !notify.allow_insecure_callbacks {
            builder = builder.dns_resolver(Arc::new(PublicOnly));
        }
        Ok(Self { notify, client: builder.build()? })
    }

    /// What the deliverer works with.
    pub fn notify(&self) -> &NotifyState {
        &self.notify
    }

    /// Claims up to `limit` due deliveries, at most the configured number
    /// per merchant, passing over `skip_merchants`, and prepares each (its
    /// event and merchant read in one go for the whole claim, the body
    /// rendered in the version the merchant's settings name now, signed).
    ///
    /// # Errors
    /// When the store fails (the claimed deliveries then return when their
    /// lease runs out).
    pub async fn claim(&self, limit: u32, skip_merchants: &[String]) -> Result<Vec<Claimed>, StorageError> {
        let now = self.notify.clock.now();
        let lease = Duration::try_from(self.notify.lease).unwrap_or(Duration::MINUTE);
        let claim = DeliveryClaim {
            now,
            lease_until: now + lease,
            limit,
            per_merchant: u32::try_from(self.notify.per_merchant).unwrap_or(u32::MAX),
            skip_merchants,
        };
        let at = Instant::now();
        let store = &self.notify.store;
        let deliveries = store.claim_due_deliveries(&claim).await?;
        if deliveries.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<&str> = deliveries.iter().map(|d| d.event_id.as_str()).collect();
        let mut events: HashMap<String, StoredEvent> =
            store.find_events(&ids).await?.into_iter().map(|e| (e.event_id.clone(), e)).collect();
        let items = deliveries
            .into_iter()
            .map(|delivery| {
                let event = events.remove(&delivery.event_id);
                (delivery, event)
            })
            .collect();
        self.prepare_all(items, at).await
    }

    /// Prepares deliveries handed over by the intake (leased to this
    /// worker when they were stored, their events at hand).
    ///
    /// # Errors
    /// When the merchants cannot be read (the deliveries then return when
    /// their lease runs out).
    pub async fn take_handed(&self, handed: crate::commit::HandedOff) -> Result<Vec<Claimed>, StorageError> {
        let items = handed.items.into_iter().map(|(event, delivery)| (delivery, Some(event))).collect();
        self.prepare_all(items, handed.leased_at).await
    }

    /// Renders and signs each delivery, its merchants read in one go;
    /// `at` is when their lease started.
    async fn prepare_all(
        &self,
        items: Vec<(Delivery, Option<StoredEvent>)>,
        at: Instant,
    ) -> Result<Vec<Claimed>, StorageError> {
        let mut merchant_ids: Vec<&str> = items.iter().map(|(d, _)| d.merchant_id.as_str()).collect();
        merchant_ids.sort_unstable();
        merchant_ids.dedup();
        let merchants: HashMap<String, (Merchant, Vec<u8>)> = self
            .notify
            .store
            .find_merchants(&merchant_ids)
            .await?
            .into_iter()
            .filter_map(|m| {
                let key = crate::merchants::signing_key(&self.notify.sealer, &m).ok()?;
                Some((m.ids.merchant_id.clone(), (m, key)))
            })
            .collect();
        Ok(items
            .into_iter()
            .map(|(delivery, event)| {
                let trace_parent = event.as_ref().and_then(|event| event.trace_parent.clone());
                let ready = match (event, merchants.get(&delivery.merchant_id)) {
                    (Some(event), Some((merchant, key))) => self.prepare(&event, merchant, key),
                    _ => Err(("the event or its merchant (or its key) is missing".to_owned(), true)),
                };
                Claimed { delivery, ready, trace_parent, at }
            })
            .collect())
    }

    /// One pass: claims the due deliveries, attempts each (merchants side by
    /// side, each by at most the configured number of lanes) and records
    /// the attempts. Returns how many were attempted.
    ///
    /// # Errors
    /// When the store fails.
    pub async fn run_once(&self) -> Result<usize, StorageError> {
        let due = self.claim(BATCH, &[]).await?;
        let mut by_merchant: std::collections::BTreeMap<String, Vec<Claimed>> = std::collections::BTreeMap::new();
        for claimed in due {
            by_merchant.entry(claimed.delivery.merchant_id.clone()).or_default().push(claimed);
        }
        let mut tasks = tokio::task::JoinSet::new();
        for claims in by_merchant.into_values() {
            let lanes = claims.len().min(self.notify.per_merchant.max(1));
            let mut queues: Vec<Vec<Claimed>> = (0..lanes).map(|_| Vec::new()).collect();
            for (i, claimed) in claims.into_iter().enumerate() {
                queues[i % lanes].push(claimed);
            }
            for queue in queues {
                let this = self.clone();
                tasks.spawn(async move {
                    let mut finished = Vec::new();
                    for claimed in queue {
                        finished.extend(this.attempt(claimed).await);
                    }
                    finished
                });
            }
        }
        let finished: Vec<FinishedAttempt> = tasks.join_all().await.into_iter().flatten().collect();
        self.notify.store.finish_attempts(&finished).await?;
        Ok(finished.len())
    }

    /// Attempts one claimed delivery and says what follows; `None` when too
    /// little of its lease is left to be sure of finishing within it (the
    /// lease then runs out and the delivery is claimed again).
    pub async fn attempt(&self, claimed: Claimed) -> Option<FinishedAttempt> {
        let span = tracing::info_span!(
            "deliver",
            otel.name = "deliver notification",
            otel.kind = "client",
            delivery = %claimed.delivery.id,
            event_id = %claimed.delivery.event_id,
        );
        portico_storage::trace::continue_in(&span, claimed.trace_parent.as_deref());
        self.attempt_in(claimed).instrument(span).await
    }

    async fn attempt_in(&self, claimed: Claimed) -> Option<FinishedAttempt> {
        let Claimed { delivery, ready, at, .. } = claimed;
        let lease_until = delivery.lease_until?;
        let lease = self.notify.lease;
        if at.elapsed() + self.notify.timeout + lease / 10 > lease {
            return None;
        }
        let now = self.notify.clock.now();
        let number = delivery.attempts + 1;
        let started = Instant::now();
        let (status_code, error, excerpt, final_failure) = match ready {
            Ok(ready) => match self.send(&ready).await {
                Ok((200, excerpt)) => (Some(200), None, excerpt, false),
                Ok((status, excerpt)) => {
                    (Some(status), Some(format!("the receiver answered {status}")), excerpt, false)
                }
                Err(error) => (None, Some(error), None, false),
            },
            Err((error, final_failure)) => (None, Some(error), None, final_failure),
        };
        let outcome = match (&error, final_failure) {
            (None, _) => Outcome::Delivered,
            (Some(_), true) => Outcome::Failed,
            (Some(_), false) => self.notify.retry.next_after_failure(delivery.created_at, number, now, jitter()),
        };
        let counted = match outcome {
            Outcome::Delivered => "delivered",
            Outcome::RetryAt(_) => "retry",
            Outcome::Failed => "failed",
        };
        metrics::counter!("portico_delivery_attempts_total", "outcome" => counted).increment(1);
        if matches!(outcome, Outcome::Delivered) {
            let lag = (now - delivery.created_at).as_seconds_f64().max(0.0);
            metrics::histogram!("portico_delivery_lag_seconds").record(lag);
        }
        if let Some(error) = &error {
            tracing::info!(delivery = %delivery.id, attempt = number, %error, "notification not delivered yet");
        }
        let attempt = Attempt {
            delivery_id: delivery.id,
            attempt: number,
            at: now,
            status_code,
            error,
            response_excerpt: excerpt,
            duration_ms: i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX),
        };
        Some(FinishedAttempt { attempt, outcome, lease_until })
    }

    /// The body, its signature and the address; `Err((why, final))`.
    fn prepare(&self, event: &StoredEvent, merchant: &Merchant, key: &[u8]) -> Result<Ready, (String, bool)> {
        let Some(settings) = &merchant.settings else {
            return Err(("the merchant has no callback address yet".into(), false));
        };
        check_callback_url(&settings.callback_url, self.notify.allow_insecure_callbacks)
            .map_err(|e| (format!("callbackUrl: {e}"), false))?;
        let types = &settings.operation_types;
        let bad = |e: serde_json::Error| (format!("the stored event is damaged: {e}"), true);
        let rendered = match event.kind {
            EventKind::Payment if types.payment.enabled => {
                let e = PaymentEvent::deserialize(&event.payload).map_err(bad)?;
                render::payment(types.payment.version, &merchant.ids, &e)
            }
            EventKind::Refund if types.refund.enabled => {
                let e = RefundEvent::deserialize(&event.payload).map_err(bad)?;
                render::refund(types.refund.version, &merchant.ids, &e)
            }
            EventKind::Subscription if types.subscription.enabled => {
                let e = SubscriptionEvent::deserialize(&event.payload).map_err(bad)?;
                render::subscription(types.subscription.version, &merchant.ids, &e)
            }
            kind => return Err((format!("{} notifications are off in the merchant's settings", kind.as_str()), true)),
        }
        .map_err(|e| (e.to_string(), true))?;
        Ok(Ready {
            url: settings.callback_url.clone(),
            signature: crate::sign(key, &rendered.check),
            body: rendered.body,
        })
    }

    /// The receiver's status and the start of its answer. At most
    /// [`EXCERPT`] bytes are read, so an endless or huge answer costs nothing.
    async fn send(&self, ready: &Ready) -> Result<(u16, Option<String>), String> {
        let mut response = self
            .client
            .post(&ready.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("X-Api-Signature-SHA256", &ready.signature)
            .headers(trace_headers())
            .body(ready.body.clone())
            .send()
            .await
            .map_err(|e| format!("cannot reach the receiver: {e}"))?;
        let status = response.status().as_u16();
        let mut excerpt = Vec::new();
        while excerpt.len() < EXCERPT {
            match response.chunk().await {
                Ok(Some(chunk)) => excerpt.extend_from_slice(&chunk[..chunk.len().min(EXCERPT - excerpt.len())]),
                Ok(None) | Err(_) => break,
            }
        }
        let excerpt = (!excerpt.is_empty()).then(|| String::from_utf8_lossy(&excerpt).into_owned());
        Ok((status, excerpt))
    }
}

/// `traceparent` of the current span for the merchant, when tracing.
fn trace_headers() -> reqwest::header::HeaderMap {
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(value) = portico_storage::trace::current().and_then(|v| reqwest::header::HeaderValue::from_str(&v).ok())
    {
        headers.insert("traceparent", value);
    }
    headers
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn retries_grow_and_end_with_the_window() {
        let schedule = RetrySchedule::default();
        let next = |attempt, now, jitter| schedule.next_after_failure(created(), attempt, now, jitter);
        let created = created();
        assert_eq!(next(1, created, 0.0), Outcome::RetryAt(created + Duration::minutes(1)));
        let later = created + Duration::minutes(1);
        assert_eq!(next(2, later, 0.0), Outcome::RetryAt(later + Duration::minutes(5)));
        assert_eq!(next(2, later, 1.0), Outcome::RetryAt(later + Duration::seconds(330)));
        assert_eq!(next(2, later, -1.0), Outcome::RetryAt(later + Duration::seconds(270)));
        let late = created + Duration::hours(20);
        assert_eq!(next(12, late, 0.0), Outcome::RetryAt(created + Duration::hours(24)), "the last try at the end");
        assert_eq!(next(13, created + Duration::hours(24), 0.0), Outcome::Failed);
    }

    #[test]
    fn a_configured_schedule_is_followed() {
        let schedule =
            RetrySchedule { waits: vec![Duration::seconds(2), Duration::seconds(5)], window: Duration::seconds(20) };
        let created = created();
        assert_eq!(
            schedule.next_after_failure(created, 1, created, 0.0),
            Outcome::RetryAt(created + Duration::seconds(2))
        );
        let at = created + Duration::seconds(2);
        assert_eq!(schedule.next_after_failure(created, 2, at, 0.0), Outcome::RetryAt(at + Duration::seconds(5)));
        let at = created + Duration::seconds(7);
        assert_eq!(
            schedule.next_after_failure(created, 9, at, 0.0),
            Outcome::RetryAt(at + Duration::seconds(5)),
            "the last repeats"
        );
        assert_eq!(schedule.next_after_failure(created, 9, created + Duration::seconds(20), 0.0), Outcome::Failed);
    }

    fn created() -> OffsetDateTime {
        datetime!(2026-11-22 12:00 UTC)
    }
}
