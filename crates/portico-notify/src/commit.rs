//! Group commit for the event intake. Each submission waits for the durable
//! write of its event and delivery before it is acknowledged, but
//! submissions arriving together share one transaction: a writer task takes
//! whatever has queued up (up to [`BATCH`]) and records it at once, so the
//! intake's throughput is not bounded by one commit per event.

use std::sync::Arc;

use portico_model::notify::{Delivery, StoredEvent};
use portico_storage::{Intake, Storage, StorageError};
use tokio::sync::{mpsc, oneshot};

/// Submissions recorded in one transaction at most.
pub const BATCH: usize = 256;

type Answer = oneshot::Sender<Result<Intake, StorageError>>;

/// The intake's writer; cheap to share.
pub struct IntakeWriter {
    queue: mpsc::Sender<(StoredEvent, Delivery, Answer)>,
}

impl IntakeWriter {
    /// Starts the writer task on the current runtime; it ends when the
    /// writer is dropped.
    pub fn start(store: Arc<dyn Storage>) -> Self {
        let (queue, pending) = mpsc::channel(BATCH * 4);
        tokio::spawn(write(store, pending));
        Self { queue }
    }

    /// Records `event` with its first `delivery`; returns once it is durable
    /// (or known to be a duplicate).
    ///
    /// # Errors
    /// When the store fails; then nothing of this event is stored.
    pub async fn record(&self, event: StoredEvent, delivery: Delivery) -> Result<Intake, StorageError> {
        let stopped = || StorageError::Other("the intake writer has stopped".into());
        let (answer, answered) = oneshot::channel();
        self.queue.send((event, delivery, answer)).await.map_err(|_| stopped())?;
        answered.await.map_err(|_| stopped())?
    }
}

async fn write(store: Arc<dyn Storage>, mut pending: mpsc::Receiver<(StoredEvent, Delivery, Answer)>) {
    let mut queued = Vec::with_capacity(BATCH);
    while pending.recv_many(&mut queued, BATCH).await > 0 {
        let (batch, answers): (Vec<_>, Vec<_>) = queued.drain(..).map(|(e, d, a)| ((e, d), a)).unzip();
        match store.record_events(&batch).await {
            Ok(results) => {
                for (answer, result) in answers.into_iter().zip(results) {
                    let _ = answer.send(Ok(result));
                }
            }
            // One at a time, so that one submission the store refuses
            // cannot fail the others.
            Err(error) if batch.len() > 1 => {
                tracing::info!(%error, submissions = batch.len(), "an intake batch failed; recording one by one");
                for (item, answer) in batch.into_iter().zip(answers) {
                    let result = store.record_events(std::slice::from_ref(&item)).await;
                    let _ = answer.send(result.and_then(|r| {
                        r.first().copied().ok_or_else(|| StorageError::Other("an event was not recorded".into()))
                    }));
                }
            }
            Err(error) => {
                for answer in answers {
                    let _ = answer.send(Err(StorageError::Other(error.to_string())));
                }
            }
        }
    }
}
