//! The connections: one writer on a thread of its own, readers on the
//! runtime's blocking threads, and the helpers every repository uses.
//!
//! SQLite has one writer at a time, so writes queue for one connection in
//! the process instead of contending for the file lock: each write is a job
//! sent to the writer thread, which runs it in an immediate transaction and
//! answers through a channel. Reads take a connection from a small pool on
//! one of tokio's blocking threads; in WAL mode a reader never waits for the
//! writer. No SQLite call runs on the async runtime's worker threads.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use portico_storage::StorageError;
use rusqlite::{Connection, OpenFlags, Params, Row, Transaction, TransactionBehavior};
use serde::Serialize;
use serde::de::DeserializeOwned;
use time::OffsetDateTime;
use tokio::sync::oneshot;
use uuid::Uuid;

use crate::checkpoint::{self, Checkpointer};

/// Idle read connections kept for reuse; more are opened under load and
/// closed after.
const IDLE_READERS: usize = 8;

/// How long a statement waits for a lock another process holds.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a repository's closure failed: SQLite, or a value it cannot store or
/// read back. Turned into a [`StorageError`] when the answer leaves the
/// store.
#[derive(Debug)]
pub(crate) enum Error {
    Sqlite(rusqlite::Error),
    Storage(StorageError),
}

impl From<rusqlite::Error> for Error {
    fn from(error: rusqlite::Error) -> Self {
        Self::Sqlite(error)
    }
}

impl From<StorageError> for Error {
    fn from(error: StorageError) -> Self {
        Self::Storage(error)
    }
}

impl Error {
    /// As a [`StorageError`]; `what` names the thing whose unique key a
    /// conflict is about.
    pub(crate) fn storage(self, what: &str) -> StorageError {
        match self {
            Self::Storage(error) => error,
            Self::Sqlite(rusqlite::Error::SqliteFailure(code, message)) => {
                let text = message.unwrap_or_else(|| code.to_string());
                match code.code {
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked => {
                        StorageError::Unavailable(text)
                    }
                    rusqlite::ErrorCode::ConstraintViolation
                        if matches!(
                            code.extended_code,
                            rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE | rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
                        ) =>
                    {
                        StorageError::Conflict(what.to_owned())
                    }
                    _ => StorageError::Other(text),
                }
            }
            Self::Sqlite(other) => StorageError::Other(other.to_string()),
        }
    }
}

/// What a repository's closure answers.
pub(crate) type Res<T> = std::result::Result<T, Error>;

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// One database file's connections.
pub(crate) struct Db {
    path: PathBuf,
    writer: Mutex<Option<Sender<Job>>>,
    writer_thread: Mutex<Option<JoinHandle<()>>>,
    readers: Mutex<Vec<Connection>>,
    checkpoints: Mutex<Option<Checkpointer>>,
    /// How long writes queued for the writer (`portico_database_wait_seconds`).
    wait_seconds: metrics::Histogram,
    /// Writes queued now (`portico_database_waiting`).
    waiting: metrics::Gauge,
}

impl Db {
    /// Opens (creating if missing) the database file at `path`.
    pub(crate) fn open(path: &Path) -> Result<Self, StorageError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| Error::from(e).storage("database"))?;
        configure_writer(&conn).map_err(|e| e.storage("database"))?;
        let (send, jobs) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || {
                let mut conn = conn;
                for job in jobs {
                    // A job that panics (a bug) answers nothing, and its
                    // caller reports the writer's silence; the next job
                    // still runs.
                    let _ = catch_unwind(AssertUnwindSafe(|| job(&mut conn)));
                }
            })
            .map_err(|e| StorageError::Other(format!("cannot start the SQLite writer thread: {e}")))?;
        Ok(Self {
            path: path.to_owned(),
            writer: Mutex::new(Some(send)),
            writer_thread: Mutex::new(Some(thread)),
            readers: Mutex::new(Vec::new()),
            checkpoints: Mutex::new(Some(Checkpointer::start(path)?)),
            wait_seconds: metrics::histogram!("portico_database_wait_seconds", "backend" => "sqlite"),
            waiting: metrics::gauge!("portico_database_waiting", "backend" => "sqlite"),
        })
    }

    /// Runs `job` on the writer connection, outside any transaction.
    pub(crate) async fn on_writer<T, F>(&self, what: &'static str, job: F) -> Result<T, StorageError>
    where
        F: FnOnce(&mut Connection) -> Res<T> + Send + 'static,
        T: Send + 'static,
    {
        let (answer, answered) = oneshot::channel();
        let (queued, wait_seconds, waiting) = (Instant::now(), self.wait_seconds.clone(), self.waiting.clone());
        // Traced (when traces are on) as a child of the caller's span.
        let span = tracing::debug_span!("sqlite write", otel.kind = "client", db.system = "sqlite", what);
        let job: Job = Box::new(move |conn| {
            let _span = span.enter();
            waiting.decrement(1.0);
            wait_seconds.record(queued.elapsed().as_secs_f64());
            let _ = answer.send(job(conn).map_err(|e| e.storage(what)));
        });
        self.waiting.increment(1.0);
        let sent = match &*self.writer.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(writer) => writer.send(job).is_ok(),
            None => false,
        };
        if !sent {
            self.waiting.decrement(1.0);
            return Err(StorageError::Unavailable("the SQLite store is closed".into()));
        }
        answered.await.map_err(|_| StorageError::Other("the SQLite writer failed to answer".into()))?
    }

    /// Runs `body` in an immediate transaction on the writer connection and
    /// commits what it did unless it fails; `what` names the thing whose
    /// unique key a conflict is about.
    pub(crate) async fn write<T, F>(&self, what: &'static str, body: F) -> Result<T, StorageError>
    where
        F: FnOnce(&Transaction<'_>) -> Res<T> + Send + 'static,
        T: Send + 'static,
    {
        self.on_writer(what, move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let done = body(&tx)?;
            tx.commit()?;
            Ok(done)
        })
        .await
    }

    /// Runs `body` on a read connection, on a blocking thread.
    pub(crate) async fn read<T, F>(self: &Arc<Self>, body: F) -> Result<T, StorageError>
    where
        F: FnOnce(&Connection) -> Res<T> + Send + 'static,
        T: Send + 'static,
    {
        let db = Arc::clone(self);
        let span = tracing::debug_span!("sqlite read", otel.kind = "client", db.system = "sqlite");
        tokio::task::spawn_blocking(move || span.in_scope(|| db.read_here(body)))
            .await
            .map_err(|e| StorageError::Other(format!("a SQLite read failed: {e}")))?
    }

    fn read_here<T>(&self, body: impl FnOnce(&Connection) -> Res<T>) -> Result<T, StorageError> {
        let pooled = self.readers.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let conn = match pooled {
            Some(conn) => conn,
            None => self.open_reader().map_err(|e| e.storage("database"))?,
        };
        let result = body(&conn).map_err(|e| e.storage("row"));
        let mut idle = self.readers.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < IDLE_READERS && conn.is_autocommit() {
            idle.push(conn);
        }
        result
    }

    fn open_reader(&self) -> Res<Connection> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(&self.path, flags)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.pragma_update(None, "query_only", true)?;
        Ok(conn)
    }

    /// Whether [`Db::close`] was called.
    pub(crate) fn is_closed(&self) -> bool {
        self.writer.lock().unwrap_or_else(|e| e.into_inner()).is_none()
    }

    /// Stops the writer after the jobs sent before, the checkpoint thread
    /// and the idle readers.
    pub(crate) fn close(&self) {
        drop(self.writer.lock().unwrap_or_else(|e| e.into_inner()).take());
        if let Some(thread) = self.writer_thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = thread.join();
        }
        drop(self.checkpoints.lock().unwrap_or_else(|e| e.into_inner()).take());
        self.readers.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        self.close();
    }
}

/// The writer's settings: WAL with `synchronous = NORMAL` (a crash of the
/// process loses no committed transaction), foreign keys enforced, and
/// checkpoints left to the checkpoint thread until the log is long.
fn configure_writer(conn: &Connection) -> Res<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", true)?;
    conn.pragma_update(None, "wal_autocheckpoint", checkpoint::WRITER_BOUND)?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
}

/// The first row of `sql`, mapped by `map`.
pub(crate) fn one<T>(
    conn: &Connection,
    sql: &str,
    params: impl Params,
    map: impl FnOnce(&Row<'_>) -> Res<T>,
) -> Res<Option<T>> {
    let mut statement = conn.prepare_cached(sql)?;
    let mut rows = statement.query(params)?;
    match rows.next()? {
        Some(row) => map(row).map(Some),
        None => Ok(None),
    }
}

/// Every row of `sql`, mapped by `map`.
pub(crate) fn all<T>(
    conn: &Connection,
    sql: &str,
    params: impl Params,
    mut map: impl FnMut(&Row<'_>) -> Res<T>,
) -> Res<Vec<T>> {
    let mut statement = conn.prepare_cached(sql)?;
    let mut rows = statement.query(params)?;
    let mut found = Vec::new();
    while let Some(row) = rows.next()? {
        found.push(map(row)?);
    }
    Ok(found)
}

/// Runs `sql`: the rows it changed.
pub(crate) fn run(conn: &Connection, sql: &str, params: impl Params) -> Res<usize> {
    Ok(conn.prepare_cached(sql)?.execute(params)?)
}

/// A time as stored: Unix seconds.
pub(crate) fn secs(time: OffsetDateTime) -> i64 {
    time.unix_timestamp()
}

/// An optional time as stored.
pub(crate) fn secs_opt(time: Option<OffsetDateTime>) -> Option<i64> {
    time.map(OffsetDateTime::unix_timestamp)
}

/// A value as its JSON text column.
pub(crate) fn to_json<T: Serialize>(value: &T) -> Res<String> {
    serde_json::to_string(value)
        .map_err(|e| Error::Storage(StorageError::Other(format!("cannot encode a JSON column: {e}"))))
}

/// A list as its space-separated text column.
pub(crate) fn words(list: &[String]) -> String {
    list.join(" ")
}

/// Typed reads of the columns Portico stores in its own encodings.
pub(crate) trait Columns {
    fn time(&self, column: &str) -> Res<OffsetDateTime>;
    fn time_opt(&self, column: &str) -> Res<Option<OffsetDateTime>>;
    fn uuid(&self, column: &str) -> Res<Uuid>;
    fn uuid_opt(&self, column: &str) -> Res<Option<Uuid>>;
    fn json<T: DeserializeOwned>(&self, column: &str) -> Res<T>;
    fn json_opt<T: DeserializeOwned>(&self, column: &str) -> Res<Option<T>>;
    /// A space-separated list.
    fn words(&self, column: &str) -> Res<Vec<String>>;
}

impl Columns for Row<'_> {
    fn time(&self, column: &str) -> Res<OffsetDateTime> {
        time_from(self.get(column)?)
    }

    fn time_opt(&self, column: &str) -> Res<Option<OffsetDateTime>> {
        self.get::<_, Option<i64>>(column)?.map(time_from).transpose()
    }

    fn uuid(&self, column: &str) -> Res<Uuid> {
        uuid_from(&self.get::<_, String>(column)?)
    }

    fn uuid_opt(&self, column: &str) -> Res<Option<Uuid>> {
        self.get::<_, Option<String>>(column)?.as_deref().map(uuid_from).transpose()
    }

    fn json<T: DeserializeOwned>(&self, column: &str) -> Res<T> {
        self.json_opt(column)?.ok_or_else(|| damaged(&format!("JSON column {column} is NULL")))
    }

    fn json_opt<T: DeserializeOwned>(&self, column: &str) -> Res<Option<T>> {
        let Some(text) = self.get::<_, Option<String>>(column)? else { return Ok(None) };
        serde_json::from_str(&text).map(Some).map_err(|e| damaged(&format!("JSON column {column}: {e}")))
    }

    fn words(&self, column: &str) -> Res<Vec<String>> {
        Ok(self.get::<_, String>(column)?.split_whitespace().map(str::to_owned).collect())
    }
}

fn time_from(seconds: i64) -> Res<OffsetDateTime> {
    OffsetDateTime::from_unix_timestamp(seconds).map_err(|_| damaged(&format!("time {seconds}")))
}

fn uuid_from(text: &str) -> Res<Uuid> {
    Uuid::parse_str(text).map_err(|_| damaged(&format!("id {text:?}")))
}

/// The error of a damaged row: a value the code never writes.
pub(crate) fn damaged(what: &str) -> Error {
    Error::Storage(StorageError::Other(format!("damaged row: {what}")))
}
