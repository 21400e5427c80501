//! WAL checkpoints on a thread of their own.
//!
//! A checkpoint copies the write-ahead log back into the database file and
//! `fsync`s both: milliseconds of disk time. SQLite runs it by default inside
//! whichever commit grows the log past a thousand pages, and every write
//! queued behind that commit on the writer thread would wait. Here a thread
//! of the store checkpoints every
//! [`INTERVAL`] without blocking writers or readers (`PASSIVE`), so the
//! `fsync`s happen on this thread. The log starts over from its beginning
//! only once a checkpoint has copied all of it while no writer appended
//! more; under a steady stream of writes that happens when a writer reaches
//! [`WRITER_BOUND`] and checkpoints itself, which by then has only the
//! frames since this thread's last pass left to copy.

use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use portico_storage::StorageError;
use rusqlite::{Connection, OpenFlags};

/// How often the thread checkpoints.
pub const INTERVAL: Duration = Duration::from_millis(50);

/// The log size (in pages) at which a writer checkpoints itself: 40 MB
/// with 4 KiB pages.
pub const WRITER_BOUND: u32 = 10_000;

/// The running checkpoint thread; it stops when this is dropped.
pub struct Checkpointer {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts checkpointing the database file at `path`.
    pub fn start(path: &Path) -> Result<Self, StorageError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
        let cannot = |e: rusqlite::Error| StorageError::Other(format!("cannot open the checkpoint connection: {e}"));
        let conn = Connection::open_with_flags(path, flags).map_err(cannot)?;
        conn.busy_timeout(Duration::from_secs(1)).map_err(cannot)?;
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || {
                let mut failing = false;
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(INTERVAL) {
                    match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| row.get::<_, i64>(0)) {
                        Ok(_) if failing => {
                            failing = false;
                            tracing::info!("SQLite WAL checkpoints work again");
                        }
                        Ok(_) => {}
                        Err(error) if !failing => {
                            failing = true;
                            tracing::warn!(%error, "SQLite WAL checkpoint failed; retrying every {INTERVAL:?}");
                        }
                        Err(_) => {}
                    }
                }
            })
            .map_err(|e| StorageError::Other(format!("cannot start the checkpoint thread: {e}")))?;
        Ok(Self { stop: Some(stop), thread: Some(thread) })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
