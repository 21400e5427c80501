//! The SQLite store: Portico's embedded default, one file in the data folder.
//!
//! The database runs in WAL mode with `synchronous = NORMAL`: a crash of the
//! process loses no committed transaction; a power loss may lose the last
//! few. Production deployments use PostgreSQL.
//!
//! One driver, rusqlite, and no SQLite call on the async runtime's worker
//! threads: writes are jobs for one writer thread, reads run on tokio's
//! blocking threads (see [`db`]), and WAL checkpoints on a thread of their
//! own (see [`checkpoint`]). One module per aggregate implements its
//! repository traits, with the SQL next to the code that binds it. Ids are
//! stored as text, times as Unix seconds and documents as JSON text.

mod audit;
mod checkpoint;
mod clients;
mod db;
mod keys;
mod login;
mod maintenance;
mod memory;
mod migrate;
mod notify;
mod oauth;
mod passkeys;
mod permissions;
mod reports;
mod sessions;
mod users;

use std::path::PathBuf;
use std::sync::Arc;

use portico_storage::StorageError;
use portico_storage::memory::NodeMemory;

use crate::db::Db;
use crate::memory::FileMemory;

type Result<T> = std::result::Result<T, StorageError>;

/// Every repository, on one SQLite database file.
#[derive(Clone)]
pub struct SqliteStore {
    db: Arc<Db>,
    /// Revocation state and the permission revision, answered from memory
    /// (see [`memory`]); `None`: every question goes to the file.
    memory: Option<Arc<FileMemory>>,
}

impl SqliteStore {
    /// Opens (creating if missing) the database at `url`:
    /// `sqlite://data/portico.db` (relative to the working directory) or
    /// `sqlite:///var/lib/portico/portico.db`.
    ///
    /// # Errors
    /// When the URL is not a file's, or the file cannot be opened.
    pub async fn connect(url: &str) -> Result<Self> {
        let path = file_of(url)?;
        let db = tokio::task::spawn_blocking(move || Db::open(&path))
            .await
            .map_err(|e| StorageError::Other(format!("cannot open the SQLite database: {e}")))??;
        Ok(Self { db: Arc::new(db), memory: None })
    }

    /// Answers revocation state and the permission revision from memory,
    /// never staler than `staleness` for another process's writes and at
    /// once for this store's own; a zero `staleness` leaves every question
    /// to the file. Must be called within a Tokio runtime.
    #[must_use]
    pub fn with_node_memory(mut self, staleness: std::time::Duration) -> Self {
        self.memory = (!staleness.is_zero()).then(|| FileMemory::start(&self.db, staleness));
        self
    }

    fn memory(&self) -> Option<&NodeMemory> {
        self.memory.as_deref().map(|m| &m.memory)
    }

    /// Applies the migrations that have not run yet.
    ///
    /// # Errors
    /// When a migration fails (nothing of it is kept), or one that ran
    /// before has been changed since.
    pub async fn migrate(&self) -> Result<()> {
        self.db.on_writer("migration", migrate::run).await
    }

    /// Finishes the writes already sent and closes every connection.
    pub async fn close(&self) {
        let db = Arc::clone(&self.db);
        let _ = tokio::task::spawn_blocking(move || db.close()).await;
    }
}

/// The file a `sqlite:` URL names; a query string (`?mode=rwc`) is ignored.
fn file_of(url: &str) -> Result<PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .ok_or_else(|| StorageError::Other(format!("{url:?} is not a sqlite:// URL")))?;
    let path = rest.split('?').next().unwrap_or_default();
    if path.is_empty() || path.contains(":memory:") {
        return Err(StorageError::Other(format!(
            "{url:?} names no file: Portico keeps its SQLite database in a file, e.g. sqlite://data/portico.db"
        )));
    }
    Ok(PathBuf::from(path))
}

#[cfg(test)]
mod tests {
    use super::file_of;

    #[test]
    fn urls_name_files() {
        assert_eq!(file_of("sqlite://data/portico.db").unwrap().to_str(), Some("data/portico.db"));
        assert_eq!(file_of("sqlite:///var/lib/p.db?mode=rwc").unwrap().to_str(), Some("/var/lib/p.db"));
        assert_eq!(file_of("sqlite:p.db").unwrap().to_str(), Some("p.db"));
        assert!(file_of("sqlite::memory:").is_err());
        assert!(file_of("sqlite://").is_err());
        assert!(file_of("postgres://x/y").is_err());
    }
}
