//! The SQLite store: Portico's embedded default, one file in the data folder.
//!
//! The database runs in WAL mode with `synchronous = NORMAL`: a crash of the
//! process loses no committed transaction; a power loss may lose the last
//! few. Production deployments use PostgreSQL.
//!
//! SQLite has one writer at a time. Writes go through a pool of one
//! connection, so they queue in the process instead of contending for the
//! file lock (whose busy handler sleeps for milliseconds); reads use a
//! separate pool and, in WAL mode, never wait for the writer. The token
//! endpoint's and the liveness check's reads and writes bypass sqlx
//! altogether (see [`fast`] and [`writer`]), and WAL checkpoints run on a
//! thread of their own (see [`checkpoint`]).

mod checkpoint;
mod fast;
mod writer;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use portico_storage::StorageError;
use portico_storage_sql::storage_error;
use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

/// Connections that serve reads.
const READERS: u32 = 8;

/// Every repository, on one SQLite database.
#[derive(Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    read_pool: SqlitePool,
    /// The synchronous hot paths and the WAL checkpoint thread; absent for
    /// an in-memory database.
    fast: Option<Arc<fast::FastPath>>,
}

impl SqliteStore {
    /// Opens (creating if missing) the database at `url`, e.g.
    /// `sqlite://data/portico.db`.
    ///
    /// # Errors
    /// When the URL is malformed or the file cannot be opened.
    pub async fn connect(url: &str) -> Result<Self, StorageError> {
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|e| StorageError::Other(format!("invalid SQLite URL {url:?}: {e}")))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true)
            .pragma("wal_autocheckpoint", checkpoint::WRITER_BOUND.to_string());
        // A connection to a local file does not go stale in the pool, and
        // sqlx checks each one when it comes back: no second check (a round
        // trip to the connection's thread) on the way out.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .test_before_acquire(false)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options.clone())
            .await
            .map_err(storage_error("database"))?;
        let read_pool = SqlitePoolOptions::new()
            .max_connections(READERS)
            .test_before_acquire(false)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options.clone().create_if_missing(false))
            .await
            .map_err(storage_error("database"))?;
        let file = options.get_filename();
        let in_memory = file.as_os_str().is_empty() || file.to_string_lossy().contains(":memory:");
        let fast = if in_memory { None } else { Some(Arc::new(fast::FastPath::new(file)?)) };
        Ok(Self { pool, read_pool, fast })
    }

    /// Applies the migrations that have not run yet.
    ///
    /// # Errors
    /// When a migration fails; nothing of that migration is kept.
    pub async fn migrate(&self) -> Result<(), StorageError> {
        sqlx::migrate!("./migrations")
            .run(&self.pool)
            .await
            .map_err(|e| StorageError::Other(format!("SQLite migration failed: {e}")))
    }

    /// Closes every connection, waiting for running queries.
    pub async fn close(&self) {
        self.pool.close().await;
        self.read_pool.close().await;
    }
}

portico_storage_sql::sql_repositories!(SqliteStore, sqlx::Sqlite, sqlx::sqlite::SqliteRow, "sqlite", fast_path = fast);
portico_storage_sql::sql_login_repositories!(SqliteStore, sqlx::Sqlite);
portico_storage_sql::sql_notify_repositories!(SqliteStore, sqlx::Sqlite, skip_locked = "", batches = values);
portico_storage_sql::sql_report_repositories!(SqliteStore, sqlx::Sqlite, skip_locked = "");
portico_storage_sql::sql_permission_repository!(SqliteStore, sqlx::Sqlite, sqlx::sqlite::SqliteRow, fast_reads = fast);
