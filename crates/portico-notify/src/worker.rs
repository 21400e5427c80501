//! The delivery worker: a pipeline that keeps up to `in_flight` deliveries
//! moving at once.
//!
//! - The claimer takes due deliveries whenever there is room, passing over
//!   the merchants that already have `per_merchant` deliveries in flight, so
//!   a slow receiver holds at most its own lanes, never the whole worker.
//! - New deliveries of this node's intake come straight from it, already
//!   leased ([`crate::commit`]); each merchant's may wait for its lanes up
//!   to as many again as it has, and those the worker has no room for go
//!   back to the queue, due at once.
//! - Each delivery is attempted in its own task, behind its merchant's
//!   semaphore (`per_merchant` permits).
//! - The recorder writes finished attempts in batches, one transaction each.
//!   Until its attempt is recorded a delivery stays leased; a worker that
//!   dies before recording leaves it to be claimed again when the lease runs
//!   out (at least once, never lost).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use portico_storage::{FinishedAttempt, Storage};
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::time::Instant;

use crate::commit::HandedOff;
use crate::delivery::{BATCH, Claimed, Deliverer};

/// Finished attempts recorded in one transaction at most.
const RECORD_BATCH: usize = 256;

/// How long freed lanes gather before they are refilled: one claim then
/// serves the deliveries that ended meanwhile, instead of one claim per
/// delivery (new events are claimed at once, when their intake commits).
const REFILL_PAUSE: Duration = Duration::from_millis(5);

/// Batches of new deliveries the intake may hand over while the worker
/// has not taken them yet.
const HANDOFF_BATCHES: usize = 2;

/// The deliveries in flight, by merchant, and their tasks.
struct Lanes {
    deliverer: Deliverer,
    finished: mpsc::Sender<FinishedAttempt>,
    /// Deliveries in flight at most, waiting for a lane or not.
    in_flight: usize,
    per_merchant: usize,
    active: HashMap<String, (usize, Arc<Semaphore>)>,
    tasks: tokio::task::JoinSet<String>,
}

impl Lanes {
    /// How many more deliveries may start.
    fn room(&self) -> usize {
        self.in_flight.saturating_sub(self.tasks.len())
    }

    /// Attempts `claimed` in its own task, behind its merchant's lanes.
    fn start(&mut self, claimed: Claimed) {
        let merchant = claimed.delivery.merchant_id.clone();
        let entry =
            self.active.entry(merchant.clone()).or_insert_with(|| (0, Arc::new(Semaphore::new(self.per_merchant))));
        entry.0 += 1;
        let lane = Arc::clone(&entry.1);
        let deliverer = self.deliverer.clone();
        let finished = self.finished.clone();
        self.tasks.spawn(async move {
            if let Ok(_permit) = lane.acquire_owned().await
                && let Some(done) = deliverer.attempt(claimed).await
            {
                let _ = finished.send(done).await;
            }
            merchant
        });
    }

    /// Counts a finished task off its merchant.
    fn finish(&mut self, done: Result<String, tokio::task::JoinError>) {
        let Ok(merchant) = done else {
            return;
        };
        if let Some(entry) = self.active.get_mut(&merchant) {
            entry.0 -= 1;
            if entry.0 == 0 {
                self.active.remove(&merchant);
            }
        }
    }

    /// Whether `merchant` already has all its lanes taken.
    fn busy(&self, merchant: &str) -> bool {
        self.active.get(merchant).is_some_and(|(n, _)| *n >= self.per_merchant)
    }

    /// Whether `merchant` has a lane free, or as many deliveries waiting
    /// for one as it has lanes: a handed-over delivery may wait behind it.
    fn can_queue(&self, merchant: &str) -> bool {
        self.active.get(merchant).is_none_or(|(n, _)| *n < 2 * self.per_merchant)
    }
}

/// Runs the pipeline until `stop` turns true; `interval` is the pause
/// between claims when nothing was due. On stop it claims nothing more,
/// lets the attempts in flight end and records them.
pub async fn run(deliverer: Deliverer, interval: Duration, mut stop: watch::Receiver<bool>) {
    let notify = Arc::clone(deliverer.notify());
    let (finished_tx, finished_rx) = mpsc::channel(RECORD_BATCH * 4);
    let recorder = tokio::spawn(record(Arc::clone(&notify.store), finished_rx));
    let lease = time::Duration::try_from(notify.lease).unwrap_or(time::Duration::MINUTE);
    let (handoff_tx, mut handoff) = mpsc::channel(HANDOFF_BATCHES);
    notify.intake.attach(handoff_tx, lease);
    let mut lanes = Lanes {
        deliverer: deliverer.clone(),
        finished: finished_tx,
        in_flight: notify.in_flight.max(1),
        per_merchant: notify.per_merchant.max(1),
        active: HashMap::new(),
        tasks: tokio::task::JoinSet::new(),
    };
    let mut next_claim = Instant::now();
    while !*stop.borrow() {
        let room = lanes.room();
        if room > 0 && Instant::now() >= next_claim {
            let busy: Vec<String> = lanes.active.keys().filter(|m| lanes.busy(m)).cloned().collect();
            let asked = u32::try_from(room).unwrap_or(BATCH).min(BATCH);
            match deliverer.claim(asked, &busy).await {
                Ok(claimed) => {
                    // A full claim may have left more due: go on while there
                    // is room. A short one means nothing else is due (or
                    // every due delivery's merchant is busy): pause until
                    // something is queued or lanes free up.
                    let full = claimed.len() == asked as usize;
                    next_claim = match (full, room > claimed.len()) {
                        (true, true) => Instant::now(),
                        (true, false) => Instant::now() + REFILL_PAUSE,
                        (false, _) => Instant::now() + interval,
                    };
                    for claimed in claimed {
                        lanes.start(claimed);
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "cannot claim notification deliveries; retrying");
                    next_claim = Instant::now() + interval;
                }
            }
            continue;
        }
        tokio::select! {
            Some(done) = lanes.tasks.join_next(), if !lanes.tasks.is_empty() => {
                lanes.finish(done);
                while let Some(done) = lanes.tasks.try_join_next() {
                    lanes.finish(done);
                }
                // A merchant's lane is free: what the last claim passed
                // over may be claimable now, after lanes have gathered.
                next_claim = next_claim.min(Instant::now() + REFILL_PAUSE);
            }
            Some(handed) = handoff.recv(), if room > 0 => take(&mut lanes, handed).await,
            () = tokio::time::sleep_until(next_claim), if room > 0 => {}
            () = notify.queued.notified(), if room > 0 => next_claim = Instant::now(),
            _ = stop.changed() => {}
        }
    }
    // Nothing more is handed over; what was, goes back to the queue.
    notify.intake.detach();
    handoff.close();
    while let Some(handed) = handoff.recv().await {
        give_back(&lanes.deliverer, handed.items.into_iter().map(|(_, d)| d).collect()).await;
    }
    while let Some(done) = lanes.tasks.join_next().await {
        lanes.finish(done);
    }
    drop(lanes);
    let _ = recorder.await;
}

/// Starts what the intake handed over, as far as there is room and each
/// merchant has at most as many waiting for a lane as it has lanes; the
/// rest goes back to the queue.
async fn take(lanes: &mut Lanes, handed: HandedOff) {
    let items = handed.items.len();
    let prepared = match lanes.deliverer.take_handed(handed).await {
        Ok(prepared) => prepared,
        Err(error) => {
            // Their leases run out, and then they are claimed.
            tracing::warn!(%error, deliveries = items, "cannot prepare new deliveries; they wait for their lease");
            return;
        }
    };
    let mut back = Vec::new();
    for claimed in prepared {
        if lanes.room() > 0 && lanes.can_queue(&claimed.delivery.merchant_id) {
            lanes.start(claimed);
        } else {
            back.push(claimed.delivery);
        }
    }
    give_back(&lanes.deliverer, back).await;
}

/// Gives leased deliveries back to the queue, due at once.
async fn give_back(deliverer: &Deliverer, deliveries: Vec<portico_model::notify::Delivery>) {
    let leases: Vec<_> = deliveries.iter().filter_map(|d| Some((d.id, d.lease_until?))).collect();
    if leases.is_empty() {
        return;
    }
    let notify = deliverer.notify();
    match notify.store.release_deliveries(&leases, notify.clock.now()).await {
        Ok(()) => notify.queued.notify_one(),
        Err(error) => {
            tracing::warn!(%error, deliveries = leases.len(), "cannot give deliveries back; they wait for their lease");
        }
    }
}

/// Writes finished attempts as they come, in batches. A batch the store
/// refuses is retried a few times; after that its deliveries stay leased
/// and are attempted again when the lease runs out.
async fn record(store: Arc<dyn Storage>, mut finished: mpsc::Receiver<FinishedAttempt>) {
    let mut batch = Vec::with_capacity(RECORD_BATCH);
    while finished.recv_many(&mut batch, RECORD_BATCH).await > 0 {
        for pause in [0, 100, 1_000, 5_000] {
            tokio::time::sleep(Duration::from_millis(pause)).await;
            match store.finish_attempts(&batch).await {
                Ok(()) => break,
                Err(error) => {
                    tracing::warn!(%error, attempts = batch.len(), "cannot record notification attempts yet");
                }
            }
        }
        batch.clear();
    }
}
