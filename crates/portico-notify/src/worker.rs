//! The delivery worker: a pipeline that keeps up to `in_flight` deliveries
//! moving at once.
//!
//! - The claimer takes due deliveries whenever there is room, passing over
//!   the merchants that already have `per_merchant` deliveries in flight, so
//!   a slow receiver holds at most its own lanes, never the whole worker.
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

use crate::delivery::{BATCH, Deliverer};

/// Finished attempts recorded in one transaction at most.
const RECORD_BATCH: usize = 256;

/// How long freed lanes gather before they are refilled: one claim then
/// serves the deliveries that ended meanwhile, instead of one claim per
/// delivery (new events are claimed at once, when their intake commits).
const REFILL_PAUSE: Duration = Duration::from_millis(5);

/// Runs the pipeline until `stop` turns true; `interval` is the pause
/// between claims when nothing was due. On stop it claims nothing more,
/// lets the attempts in flight end and records them.
pub async fn run(deliverer: Deliverer, interval: Duration, mut stop: watch::Receiver<bool>) {
    let notify = Arc::clone(deliverer.notify());
    let (finished_tx, finished_rx) = mpsc::channel(RECORD_BATCH * 4);
    let recorder = tokio::spawn(record(Arc::clone(&notify.store), finished_rx));
    let per_merchant = notify.per_merchant.max(1);
    let in_flight = notify.in_flight.max(1);
    let mut active: HashMap<String, (usize, Arc<Semaphore>)> = HashMap::new();
    let mut tasks = tokio::task::JoinSet::new();
    let mut next_claim = Instant::now();
    while !*stop.borrow() {
        let room = in_flight.saturating_sub(tasks.len());
        if room > 0 && Instant::now() >= next_claim {
            let busy: Vec<String> =
                active.iter().filter(|(_, (n, _))| *n >= per_merchant).map(|(m, _)| m.clone()).collect();
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
                        let merchant = claimed.delivery.merchant_id.clone();
                        let entry = active
                            .entry(merchant.clone())
                            .or_insert_with(|| (0, Arc::new(Semaphore::new(per_merchant))));
                        entry.0 += 1;
                        let lane = Arc::clone(&entry.1);
                        let deliverer = deliverer.clone();
                        let finished_tx = finished_tx.clone();
                        tasks.spawn(async move {
                            if let Ok(_permit) = lane.acquire_owned().await
                                && let Some(finished) = deliverer.attempt(claimed).await
                            {
                                let _ = finished_tx.send(finished).await;
                            }
                            merchant
                        });
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
            Some(done) = tasks.join_next(), if !tasks.is_empty() => {
                release(&mut active, done);
                while let Some(done) = tasks.try_join_next() {
                    release(&mut active, done);
                }
                // A merchant's lane is free: what the last claim passed
                // over may be claimable now, after lanes have gathered.
                next_claim = next_claim.min(Instant::now() + REFILL_PAUSE);
            }
            () = tokio::time::sleep_until(next_claim), if room > 0 => {}
            () = notify.queued.notified(), if room > 0 => next_claim = Instant::now(),
            _ = stop.changed() => {}
        }
    }
    while let Some(done) = tasks.join_next().await {
        release(&mut active, done);
    }
    drop(finished_tx);
    let _ = recorder.await;
}

/// Counts a finished task off its merchant.
fn release(active: &mut HashMap<String, (usize, Arc<Semaphore>)>, done: Result<String, tokio::task::JoinError>) {
    let Ok(merchant) = done else {
        return;
    };
    if let Some(entry) = active.get_mut(&merchant) {
        entry.0 -= 1;
        if entry.0 == 0 {
            active.remove(&merchant);
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
