//! Concurrent statements of one kind, combined into one.
//!
//! Under load the token endpoint's reads and writes arrive together, and
//! each costs PostgreSQL more in fixed work — a round trip, the executor's
//! start-up, for a write a commit and its WAL flush — than in the rows it
//! touches. A [`Batcher`] runs a few statements of its kind at once (an
//! eighth of the pool's connections); what arrives while they run waits
//! and goes into the next statement together, up to [`MAX_BATCH`] items. A
//! request that finds a free slot goes at once, alone, so a quiet node adds
//! no latency.
//!
//! Two items with the same key (one authorization code presented twice at
//! once) never share a statement: the second waits for the next one, and
//! then sees the first's effect, exactly as two separate statements would.
//!
//! Each statement is still one implicit transaction with the same
//! conditions per row as a statement of one item. When PostgreSQL rejects a
//! whole statement (a constraint one item breaks, a deadlock), nothing of it
//! committed, and its items run again one by one, so that one bad item
//! fails alone. Any other failure (a lost connection, the server going
//! away) is every item's answer, as it would have been for each of them
//! alone.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Mutex;

use portico_storage::StorageError;
use tokio::sync::oneshot;

use crate::PgStore;
use crate::error::{connection_lost, storage_error};

/// The most items one statement carries.
pub(crate) const MAX_BATCH: usize = 64;

/// One kind of statement that can carry many items.
pub(crate) trait Batch: Sized + Send + 'static {
    /// Each item's answer.
    type Output: Send + 'static;
    /// What a failure is about, for [`storage_error`].
    const WHAT: &'static str;
    /// The statement's name in `portico_database_batch_items`.
    const STATEMENT: &'static str;

    /// Items with equal keys never share a statement.
    fn key(&self) -> &str;

    /// Runs `items` as one statement: one answer per item, in their order.
    fn run(store: &PgStore, items: &[Self]) -> impl Future<Output = Result<Vec<Self::Output>, sqlx::Error>> + Send;

    /// The store's batcher of this kind.
    fn batcher(store: &PgStore) -> &Batcher<Self>;
}

/// Combines concurrent items of one [`Batch`] kind.
pub(crate) struct Batcher<B: Batch> {
    queue: Mutex<Queue<B>>,
    in_flight: usize,
    /// `portico_database_batch_items` of this kind.
    items: metrics::Histogram,
}

struct Queue<B: Batch> {
    waiting: Vec<Waiting<B>>,
    running: usize,
}

struct Waiting<B: Batch> {
    item: B,
    answer: oneshot::Sender<Result<B::Output, StorageError>>,
}

impl<B: Batch> Batcher<B> {
    /// A batcher running at most `in_flight` statements at once (at least
    /// one).
    pub(crate) fn new(in_flight: usize) -> Self {
        Self {
            queue: Mutex::new(Queue { waiting: Vec::new(), running: 0 }),
            in_flight: in_flight.max(1),
            items: metrics::histogram!("portico_database_batch_items", "statement" => B::STATEMENT),
        }
    }

    /// Runs `item` in the next statement of its kind and answers it.
    pub(crate) async fn submit(store: &PgStore, item: B) -> Result<B::Output, StorageError> {
        let (answer, answered) = oneshot::channel();
        let batch = {
            let mut queue = B::batcher(store).lock();
            queue.waiting.push(Waiting { item, answer });
            (queue.running < B::batcher(store).in_flight).then(|| {
                queue.running += 1;
                take(&mut queue.waiting)
            })
        };
        if let Some(batch) = batch {
            // The statement runs to its end even if this request goes away
            // meanwhile: other requests wait for its answers.
            tokio::spawn(drive(store.clone(), batch));
        }
        answered.await.unwrap_or_else(|_| Err(StorageError::Other(format!("the {} statement was abandoned", B::WHAT))))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue<B>> {
        self.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Runs `batch`, then whatever waited meanwhile, until nothing waits.
async fn drive<B: Batch>(store: PgStore, mut batch: Vec<Waiting<B>>) {
    let slot = Slot::<B> { store: &store, kind: std::marker::PhantomData };
    loop {
        answer(&store, batch).await;
        let mut queue = B::batcher(&store).lock();
        if queue.waiting.is_empty() {
            // The slot is given back under the lock that saw nothing
            // waiting: an item queued after this finds it free.
            queue.running -= 1;
            std::mem::forget(slot);
            return;
        }
        batch = take(&mut queue.waiting);
    }
}

/// Gives a running slot back if its statement panicked.
struct Slot<'a, B: Batch> {
    store: &'a PgStore,
    kind: std::marker::PhantomData<B>,
}

impl<B: Batch> Drop for Slot<'_, B> {
    fn drop(&mut self) {
        B::batcher(self.store).lock().running -= 1;
    }
}

/// Runs one statement and answers its items.
async fn answer<B: Batch>(store: &PgStore, batch: Vec<Waiting<B>>) {
    let (items, answers): (Vec<B>, Vec<_>) = batch.into_iter().map(|w| (w.item, w.answer)).unzip();
    B::batcher(store).items.record(items.len() as f64);
    match B::run(store, &items).await {
        Ok(outputs) if outputs.len() == items.len() => {
            for (answer, output) in answers.into_iter().zip(outputs) {
                let _ = answer.send(Ok(output));
            }
        }
        Ok(outputs) => {
            let error = format!("the {} statement answered {} of {} items", B::WHAT, outputs.len(), items.len());
            for answer in answers {
                let _ = answer.send(Err(StorageError::Other(error.clone())));
            }
        }
        // PostgreSQL rejected the statement, so none of it committed: each
        // item again, alone, so that only the one at fault fails. (A server
        // going away is no rejection: whether the statement committed is
        // unknown, and a write run again could take its own first run for
        // someone else's.)
        Err(error @ sqlx::Error::Database(_)) if items.len() > 1 && !connection_lost(&error) => {
            for (item, answer) in items.into_iter().zip(answers) {
                let alone = std::slice::from_ref(&item);
                let output = B::run(store, alone).await.map_err(storage_error(B::WHAT)).and_then(|mut outputs| {
                    outputs
                        .pop()
                        .ok_or_else(|| StorageError::Other(format!("the {} statement answered nothing", B::WHAT)))
                });
                let _ = answer.send(output);
            }
        }
        Err(error) => {
            let error = storage_error(B::WHAT)(error);
            for answer in answers {
                let _ = answer.send(Err(error.clone()));
            }
        }
    }
}

/// The next statement's items: the oldest waiting, at most [`MAX_BATCH`],
/// no two with the same key; the rest keep their order in `waiting`.
fn take<B: Batch>(waiting: &mut Vec<Waiting<B>>) -> Vec<Waiting<B>> {
    let mut keys = HashSet::new();
    let (mut batch, mut rest) = (Vec::new(), Vec::new());
    for next in waiting.drain(..) {
        if batch.len() < MAX_BATCH && keys.insert(next.item.key().to_owned()) {
            batch.push(next);
        } else {
            rest.push(next);
        }
    }
    *waiting = rest;
    batch
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Items that are only keys: enough to see which go together.
    struct Key(String);

    impl Batch for Key {
        type Output = ();
        const WHAT: &'static str = "test";
        const STATEMENT: &'static str = "test";

        fn key(&self) -> &str {
            &self.0
        }

        async fn run(_: &PgStore, items: &[Self]) -> Result<Vec<()>, sqlx::Error> {
            Ok(vec![(); items.len()])
        }

        fn batcher(_: &PgStore) -> &Batcher<Self> {
            unreachable!("taking items needs no store")
        }
    }

    fn queue(keys: &[&str]) -> Vec<Waiting<Key>> {
        keys.iter().map(|key| Waiting { item: Key((*key).to_owned()), answer: oneshot::channel().0 }).collect()
    }

    fn keys(items: &[Waiting<Key>]) -> Vec<&str> {
        items.iter().map(|waiting| waiting.item.key()).collect()
    }

    #[test]
    fn a_statement_takes_the_oldest_items_and_each_key_once() {
        let mut waiting = queue(&["a", "b", "a", "c", "b", "a", "d"]);
        let first = take(&mut waiting);
        assert_eq!(keys(&first), ["a", "b", "c", "d"]);
        assert_eq!(keys(&waiting), ["a", "b", "a"], "the repeated keys wait, in their order");
        assert_eq!(keys(&take(&mut waiting)), ["a", "b"]);
        assert_eq!(keys(&take(&mut waiting)), ["a"]);
        assert!(waiting.is_empty());
    }

    #[test]
    fn a_statement_carries_at_most_max_batch_items() {
        let names: Vec<String> = (0..MAX_BATCH + 3).map(|i| i.to_string()).collect();
        let mut waiting = queue(&names.iter().map(String::as_str).collect::<Vec<_>>());
        let first = take(&mut waiting);
        assert_eq!(first.len(), MAX_BATCH);
        assert_eq!(keys(&first)[0], "0");
        assert_eq!(keys(&waiting), [&names[MAX_BATCH], &names[MAX_BATCH + 1], &names[MAX_BATCH + 2]]);
    }
}
