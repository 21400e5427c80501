//! The node's memory of revocations and the permission revision on SQLite
//! (see [`portico_storage::memory`]), proven fresh by the file itself.
//!
//! Every write of this process goes through the store, which tells the
//! memory what it revoked or saved once it has committed. Another process
//! may write the same file (`portico users block` and the other admin
//! commands): SQLite's `PRAGMA data_version`, read on the writer connection,
//! changes exactly when another connection committed. A check on the writer
//! thread, several times within the staleness bound, reads it: unchanged,
//! nothing of another process was committed before the check began, and the
//! memory is trusted until the check's start plus the bound; changed, the
//! memory starts over from the file. A check that cannot run (the writer is
//! busy for longer than the bound) leaves the memory untrusted, and every
//! question goes to the file.

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use portico_storage::memory::NodeMemory;
use rusqlite::Connection;

use crate::db::{Db, Res, all};
use crate::permissions;

/// How often the file is checked: a quarter of the staleness bound, at
/// least every 250 ms.
fn check_every(staleness: Duration) -> Duration {
    (staleness / 4).clamp(Duration::from_millis(10), Duration::from_millis(250))
}

/// The memory and what proves it fresh.
pub(crate) struct FileMemory {
    pub(crate) memory: NodeMemory,
    staleness: Duration,
    /// `PRAGMA data_version` of the writer connection at the last check.
    data_version: Mutex<Option<i64>>,
}

impl FileMemory {
    /// Starts checking `db` for as long as the returned memory lives.
    pub(crate) fn start(db: &Arc<Db>, staleness: Duration) -> Arc<Self> {
        let memory = Arc::new(Self { memory: NodeMemory::new(), staleness, data_version: Mutex::new(None) });
        tokio::spawn(check_periodically(Arc::downgrade(&memory), Arc::downgrade(db)));
        memory
    }

    /// One check, on the writer connection (no write of this process runs
    /// meanwhile).
    fn check(&self, conn: &Connection) -> Res<()> {
        let started = Instant::now();
        let version: i64 = conn.query_row("PRAGMA data_version", [], |row| row.get(0))?;
        let mut known = self.data_version.lock().unwrap_or_else(|e| e.into_inner());
        if *known != Some(version) {
            self.memory.reset();
            let jtis = all(conn, "SELECT jti FROM revoked_access_tokens", [], |row| Ok(row.get::<_, String>(0)?))?;
            let revision = permissions::revision(conn)?;
            self.memory.load(jtis, revision, started);
            *known = Some(version);
        }
        self.memory.fresh_as_of(started, self.staleness);
        Ok(())
    }
}

async fn check_periodically(memory: Weak<FileMemory>, db: Weak<Db>) {
    let mut trouble_logged = false;
    loop {
        let Some(every) = memory.upgrade().map(|m| check_every(m.staleness)) else { return };
        let (Some(strong), Some(db)) = (memory.upgrade(), db.upgrade()) else { return };
        if db.is_closed() {
            return;
        }
        let checked = db.on_writer("node memory", move |conn| strong.check(conn)).await;
        drop(db);
        match checked {
            Ok(()) if trouble_logged => {
                tracing::info!("the node memory can check the SQLite file again");
                trouble_logged = false;
            }
            Ok(()) => {}
            Err(error) if !trouble_logged => {
                tracing::warn!(%error, "the node memory cannot check the SQLite file; answering from the file");
                trouble_logged = true;
            }
            Err(_) => {}
        }
        tokio::time::sleep(every).await;
    }
}
