//! Group commit for the event intake. Each submission waits for the durable
//! write of its event and delivery before it is acknowledged, but
//! submissions arriving together share one transaction: a writer task takes
//! whatever has queued up (up to [`BATCH`]) and records it at once, so the
//! intake's throughput is not bounded by one commit per event.
//!
//! When this node runs a delivery worker with room for more, the writer
//! hands it the new deliveries directly: they are stored already leased to
//! it, and passed over in memory with their events, so they need neither a
//! claim nor a read of their events. Their lease protects them as a claim's
//! does: should the worker stop or die before recording an attempt, the
//! lease runs out and any worker claims them. Otherwise the deliveries are
//! stored due at once and the worker is woken to claim them.

use std::sync::{Arc, Mutex};

use portico_model::notify::{Delivery, StoredEvent};
use portico_storage::{Intake, Storage, StorageError};
use tokio::sync::{mpsc, oneshot};

/// Submissions recorded in one transaction at most.
pub const BATCH: usize = 256;

type Answer = oneshot::Sender<Result<Intake, StorageError>>;

/// A submission waiting for the writer, with when it was queued.
type Queued = (StoredEvent, Delivery, Answer, std::time::Instant);

/// New deliveries leased to this node's worker, with their events.
pub struct HandedOff {
    pub items: Vec<(StoredEvent, Delivery)>,
    /// When their lease started.
    pub leased_at: std::time::Instant,
}

/// Where new deliveries go when the worker takes them, and for how long
/// they are leased to it.
type Handoff = Mutex<Option<(mpsc::Sender<HandedOff>, time::Duration)>>;

/// The intake's writer; cheap to share.
pub struct IntakeWriter {
    queue: mpsc::Sender<Queued>,
    handoff: Arc<Handoff>,
}

impl IntakeWriter {
    /// Starts the writer task on the current runtime; it ends when the
    /// writer is dropped. `queued` is rung when deliveries are stored for
    /// claiming.
    pub fn start(store: Arc<dyn Storage>, queued: Arc<tokio::sync::Notify>) -> Self {
        let (queue, pending) = mpsc::channel(BATCH * 4);
        let handoff: Arc<Handoff> = Arc::default();
        tokio::spawn(write(store, pending, Arc::clone(&handoff), queued));
        Self { queue, handoff }
    }

    /// Records `event` with its first `delivery`; returns once it is durable
    /// (or known to be a duplicate).
    ///
    /// # Errors
    /// When the store fails; then nothing of this event is stored.
    pub async fn record(&self, event: StoredEvent, delivery: Delivery) -> Result<Intake, StorageError> {
        let stopped = || StorageError::Other("the intake writer has stopped".into());
        let (answer, answered) = oneshot::channel();
        let queued_at = std::time::Instant::now();
        self.queue.send((event, delivery, answer, queued_at)).await.map_err(|_| stopped())?;
        answered.await.map_err(|_| stopped())?
    }

    /// This node's worker takes new deliveries from `to`, each leased to it
    /// for `lease`, whenever `to` has room.
    pub fn attach(&self, to: mpsc::Sender<HandedOff>, lease: time::Duration) {
        if let Ok(mut handoff) = self.handoff.lock() {
            *handoff = Some((to, lease));
        }
    }

    /// The worker takes no more.
    pub fn detach(&self) {
        if let Ok(mut handoff) = self.handoff.lock() {
            *handoff = None;
        }
    }
}

/// A place in the worker's channel and the lease, when the worker has room.
fn reserve(handoff: &Handoff) -> Option<(mpsc::OwnedPermit<HandedOff>, time::Duration)> {
    let handoff = handoff.lock().ok()?;
    let (to, lease) = handoff.as_ref()?;
    to.clone().try_reserve_owned().ok().map(|permit| (permit, *lease))
}

async fn write(
    store: Arc<dyn Storage>,
    mut pending: mpsc::Receiver<Queued>,
    handoff: Arc<Handoff>,
    queued: Arc<tokio::sync::Notify>,
) {
    let mut queued_up = Vec::with_capacity(BATCH);
    // When the store last answered that the database is away, and what it said.
    let mut outage: Option<(std::time::Instant, String)> = None;
    while pending.recv_many(&mut queued_up, BATCH).await > 0 {
        // Submissions that were already waiting while the database was found
        // away have waited one acquire timeout: they get that answer now
        // rather than wait a second one (an answer within the timeout and a
        // little, not twice it).
        if let Some((found_at, message)) = &outage {
            let (waited, fresh): (Vec<Queued>, Vec<Queued>) =
                queued_up.drain(..).partition(|(.., queued_at)| queued_at <= found_at);
            for (.., answer, _) in waited {
                let _ = answer.send(Err(StorageError::Unavailable(message.clone())));
            }
            queued_up = fresh;
            if queued_up.is_empty() {
                continue;
            }
        }
        let (mut batch, answers): (Vec<_>, Vec<_>) = queued_up.drain(..).map(|(e, d, a, _)| ((e, d), a)).unzip();
        let permit = reserve(&handoff);
        let leased_at = std::time::Instant::now();
        if let Some((_, lease)) = &permit {
            for (_, delivery) in &mut batch {
                let until = delivery.created_at + *lease;
                delivery.lease_until = Some(until);
                delivery.next_attempt_at = until;
            }
        }
        match store.record_events(&batch).await {
            Ok(results) => {
                outage = None;
                let accepted: Vec<(StoredEvent, Delivery)> = batch
                    .into_iter()
                    .zip(&results)
                    .filter(|(_, result)| **result == Intake::Accepted)
                    .map(|(item, _)| item)
                    .collect();
                for (answer, result) in answers.into_iter().zip(results) {
                    let _ = answer.send(Ok(result));
                }
                match permit {
                    Some((permit, _)) if !accepted.is_empty() => {
                        permit.send(HandedOff { items: accepted, leased_at });
                    }
                    Some(_) => {}
                    None if !accepted.is_empty() => queued.notify_one(),
                    None => {}
                }
            }
            // The database is away: every submission of the batch gets that
            // answer now (503), instead of waiting for it once more each.
            Err(StorageError::Unavailable(message)) => {
                for answer in answers {
                    let _ = answer.send(Err(StorageError::Unavailable(message.clone())));
                }
                outage = Some((std::time::Instant::now(), message));
            }
            // One at a time, so that one submission the store refuses
            // cannot fail the others; due at once, for claiming.
            Err(error) if batch.len() > 1 => {
                tracing::info!(%error, submissions = batch.len(), "an intake batch failed; recording one by one");
                for ((event, mut delivery), answer) in batch.into_iter().zip(answers) {
                    delivery.lease_until = None;
                    delivery.next_attempt_at = delivery.created_at;
                    let result = store.record_events(&[(event, delivery)]).await;
                    let _ = answer.send(result.and_then(|r| {
                        r.first().copied().ok_or_else(|| StorageError::Other("an event was not recorded".into()))
                    }));
                }
                queued.notify_one();
            }
            Err(error) => {
                for answer in answers {
                    let _ = answer.send(Err(StorageError::Other(error.to_string())));
                }
            }
        }
    }
}
