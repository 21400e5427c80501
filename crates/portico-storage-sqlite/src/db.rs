//! The connections: one writer on a thread of its own, readers on the
//! runtime's blocking threads, and the helpers every repository uses.
//!
//! SQLite has one writer at a time, so writes queue for one connection in
//! the process instead of contending for the file lock: each write is a job
//! sent to the writer thread, which answers through a channel. Reads take a
//! connection from a small pool on one of tokio's blocking threads; in WAL
//! mode a reader never waits for the writer. No SQLite call runs on the
//! async runtime's worker threads.
//!
//! Writes that queue together commit together (group commit): the writer
//! takes every write waiting (up to [`MAX_GROUP`]) into one immediate
//! transaction, each inside a savepoint of its own, and commits once. A
//! write whose body fails is rolled back to its savepoint alone, exactly as
//! its own transaction would have been; the others commit. Every write is
//! answered only after the commit (a failed commit is every write's
//! answer), so nothing is acknowledged that a crash could lose. Under load
//! a page that many writes touch (the end of the audit log, a table's last
//! leaf) goes to the log once per group instead of once per write; a
//! single write waits for no one.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use portico_storage::StorageError;
use rusqlite::{Connection, OpenFlags, Params, Row};
use serde::Serialize;
use serde::de::DeserializeOwned;
use time::OffsetDateTime;
use tokio::sync::oneshot;
use uuid::Uuid;

use crate::checkpoint::{self, Checkpointer};

/// Idle read connections kept for reuse; more are opened under load and
/// closed after.
const IDLE_READERS: usize = 8;

/// The most writes one transaction carries.
pub(crate) const MAX_GROUP: usize = 64;

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

/// What the writer thread runs.
enum Job {
    /// Runs on the connection, outside any transaction (migrations, checks).
    Alone(Box<dyn FnOnce(&mut Connection) + Send>),
    /// A write: runs inside the group's transaction (`None` when it could
    /// not begin), says whether its body succeeded, and hands back how to
    /// answer once the transaction's fate is known.
    Write(Write),
}

/// Answers a write with the outcome of its group's commit (`Err` when the
/// transaction could not begin or commit).
type Finish = Box<dyn FnOnce(std::result::Result<(), &rusqlite::Error>) + Send>;

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
    /// Transactions the writer committed (what the tests judge grouping by).
    #[cfg_attr(not(test), expect(dead_code, reason = "read by the tests"))]
    commits: Arc<AtomicU64>,
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
        let commits = Arc::new(AtomicU64::new(0));
        let committed = Arc::clone(&commits);
        let thread = std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || {
                let mut conn = conn;
                let groups = metrics::histogram!("portico_database_batch_items", "statement" => "sqlite_transaction");
                let mut next = None;
                while let Some(job) = next.take().or_else(|| jobs.recv().ok()) {
                    match job {
                        // A job that panics (a bug) answers nothing, and
                        // its caller reports the writer's silence; the
                        // next job still runs.
                        Job::Alone(job) => drop(catch_unwind(AssertUnwindSafe(|| job(&mut conn)))),
                        Job::Write(first) => {
                            let mut group = vec![first];
                            while group.len() < MAX_GROUP {
                                match jobs.try_recv() {
                                    Ok(Job::Write(write)) => group.push(write),
                                    Ok(alone) => {
                                        next = Some(alone);
                                        break;
                                    }
                                    Err(_) => break,
                                }
                            }
                            groups.record(group.len() as f64);
                            write_group(&conn, group, &committed);
                        }
                    }
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
            commits,
        })
    }

    /// Transactions the writer has committed.
    #[cfg(test)]
    fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Runs `job` on the writer connection, outside any transaction.
    pub(crate) async fn on_writer<T, F>(&self, what: &'static str, job: F) -> Result<T, StorageError>
    where
        F: FnOnce(&mut Connection) -> Res<T> + Send + 'static,
        T: Send + 'static,
    {
        let (answer, answered) = oneshot::channel();
        let queued = self.queued(what);
        let job = Job::Alone(Box::new(move |conn| {
            let _span = queued.start();
            let _ = answer.send(job(conn).map_err(|e| e.storage(what)));
        }));
        self.send(job, answered).await
    }

    /// A job about `what`, about to be queued: traced (when traces are on)
    /// as a child of the caller's span, and timed while it waits.
    fn queued(&self, what: &'static str) -> Queued {
        Queued {
            at: Instant::now(),
            wait_seconds: self.wait_seconds.clone(),
            waiting: self.waiting.clone(),
            span: tracing::debug_span!("sqlite write", otel.kind = "client", db.system = "sqlite", what),
        }
    }

    /// Queues `job` for the writer and waits for its answer.
    async fn send<T>(&self, job: Job, answered: oneshot::Receiver<Result<T, StorageError>>) -> Result<T, StorageError> {
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
        F: FnOnce(&Connection) -> Res<T> + Send + 'static,
        T: Send + 'static,
    {
        let (answer, answered) = oneshot::channel();
        let queued = self.queued(what);
        let job = Job::Write(Box::new(move |conn| {
            let _span = queued.start();
            let done = conn.map(body);
            let succeeded = matches!(done, Some(Ok(_)));
            let finish: Finish = Box::new(move |committed| {
                let answered = match (done, committed) {
                    (Some(Err(error)), _) => Err(error.storage(what)),
                    (_, Err(error)) => Err(Error::Sqlite(copy_error(error)).storage(what)),
                    (Some(Ok(done)), Ok(())) => Ok(done),
                    (None, Ok(())) => Err(StorageError::Other("the SQLite write did not run".into())),
                };
                let _ = answer.send(answered);
            });
            (succeeded, finish)
        }));
        self.send(job, answered).await
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

/// A job's time in the writer's queue.
struct Queued {
    at: Instant,
    wait_seconds: metrics::Histogram,
    waiting: metrics::Gauge,
    span: tracing::Span,
}

impl Queued {
    /// The job starts on the writer: its wait is recorded, its span entered.
    fn start(self) -> tracing::span::EnteredSpan {
        self.waiting.decrement(1.0);
        self.wait_seconds.record(self.at.elapsed().as_secs_f64());
        self.span.entered()
    }
}

/// A write as the writer thread holds it.
type Write = Box<dyn FnOnce(Option<&Connection>) -> (bool, Finish) + Send>;

/// Runs `group`'s writes in one immediate transaction, each in a savepoint
/// of its own, commits (counted in `commits`), and answers them all.
fn write_group(conn: &Connection, group: Vec<Write>, commits: &AtomicU64) {
    let mut finished: Vec<Finish> = Vec::with_capacity(group.len());
    let mut open = conn.execute_batch("BEGIN IMMEDIATE");
    for write in group {
        if let Err(error) = &open {
            let (_, finish) = write(None);
            finish(Err(error));
            continue;
        }
        match in_savepoint(conn, write) {
            Ok(finish) => finished.extend(finish),
            Err(lost) => {
                // What the writes before did is gone with the transaction.
                for finish in finished.drain(..) {
                    finish(Err(&lost));
                }
                if !conn.is_autocommit() {
                    let _ = conn.execute_batch("ROLLBACK");
                }
                open = conn.execute_batch("BEGIN IMMEDIATE");
            }
        }
    }
    if open.is_err() {
        return;
    }
    let committed = conn.execute_batch("COMMIT");
    if committed.is_ok() {
        commits.fetch_add(1, Ordering::Relaxed);
    } else if !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    for finish in finished {
        finish(committed.as_ref().copied());
    }
}

/// Runs one write in a savepoint, released when its body succeeded and
/// rolled back when it failed (or panicked: a bug, answered by the
/// writer's silence). Hands back how to answer it after the commit.
///
/// # Errors
/// When SQLite ended the whole transaction (an I/O error, a full disk);
/// the write is then answered already.
fn in_savepoint(conn: &Connection, write: Write) -> std::result::Result<Option<Finish>, rusqlite::Error> {
    // Prepared once per connection: every write of a group opens and
    // releases one.
    let statement = |sql: &str| conn.prepare_cached(sql)?.execute([]).map(|_| ());
    if let Err(error) = statement("SAVEPOINT portico_write") {
        let (_, finish) = write(None);
        finish(Err(&error));
        return Err(error);
    }
    let ran = catch_unwind(AssertUnwindSafe(|| write(Some(conn)))).ok();
    let succeeded = ran.as_ref().is_some_and(|(succeeded, _)| *succeeded);
    let finish = ran.map(|(_, finish)| finish);
    let closed = if succeeded {
        statement("RELEASE portico_write")
    } else {
        conn.execute_batch("ROLLBACK TO portico_write; RELEASE portico_write")
    };
    match closed {
        Ok(()) if !conn.is_autocommit() => Ok(finish),
        closed => {
            let lost = rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
                Some(match closed {
                    Err(error) => format!("the transaction was rolled back: {error}"),
                    Ok(()) => "the transaction was rolled back".to_owned(),
                }),
            );
            if let Some(finish) = finish {
                finish(Err(&lost));
            }
            Err(lost)
        }
    }
}

/// An owned copy of a SQLite error, for each write of a group it fails.
fn copy_error(error: &rusqlite::Error) -> rusqlite::Error {
    match error {
        rusqlite::Error::SqliteFailure(code, message) => rusqlite::Error::SqliteFailure(*code, message.clone()),
        other => rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            Some(other.to_string()),
        ),
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

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::Poll;

    use super::*;

    type Answer = Pin<Box<dyn Future<Output = Result<i64, StorageError>> + Send>>;

    #[tokio::test]
    async fn writes_queued_together_commit_once_and_a_failing_one_is_rolled_back_alone() {
        let path = std::env::temp_dir().join(format!("portico-group-{}.db", Uuid::new_v4()));
        let db = Arc::new(Db::open(&path).unwrap());
        db.on_writer("table", |c| Ok(c.execute_batch("CREATE TABLE t (n INTEGER PRIMARY KEY)")?)).await.unwrap();
        let commits = db.commits();
        // The writer is held while 40 writes queue behind it.
        let (release, hold) = mpsc::channel::<()>();
        let mut held = Box::pin(db.on_writer("hold", move |_| {
            hold.recv().unwrap_or_default();
            Ok(())
        }));
        let mut writes: Vec<Answer> = (0..40i64)
            .map(|n| {
                let db = Arc::clone(&db);
                Box::pin(async move {
                    db.write("row", move |c| {
                        run(c, "INSERT INTO t (n) VALUES (?1)", [n])?;
                        assert!(n != 13, "a bug in one write");
                        if n % 5 == 0 { Err(damaged("refused")) } else { Ok(n) }
                    })
                    .await
                }) as Answer
            })
            .collect();
        std::future::poll_fn(|cx| {
            assert!(held.as_mut().poll(cx).is_pending());
            for write in &mut writes {
                assert!(write.as_mut().poll(cx).is_pending(), "queued behind the held writer");
            }
            Poll::Ready(())
        })
        .await;
        release.send(()).unwrap();
        held.await.unwrap();
        let mut answers = Vec::new();
        for write in writes {
            answers.push(write.await);
        }

        assert_eq!(db.commits(), commits + 1, "one transaction for the 40 writes");
        for (n, answer) in (0..40i64).zip(&answers) {
            match answer {
                Ok(got) => assert_eq!(*got, n),
                Err(StorageError::Other(message)) if n == 13 => assert!(message.contains("failed to answer")),
                Err(StorageError::Other(message)) => {
                    assert!(n % 5 == 0 && message.contains("refused"), "{n}: {message}");
                }
                Err(other) => panic!("{n}: {other}"),
            }
        }
        let stored: Vec<i64> =
            db.read(|c| all(c, "SELECT n FROM t ORDER BY n", [], |row| Ok(row.get(0)?))).await.unwrap();
        let expected: Vec<i64> = (0..40).filter(|n| n % 5 != 0 && *n != 13).collect();
        assert_eq!(stored, expected, "the failed writes' rows are rolled back, the others committed");
        assert_eq!(stored.len(), 31);
        db.close();
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }

    #[tokio::test]
    async fn a_write_alone_commits_at_once() {
        let path = std::env::temp_dir().join(format!("portico-group-{}.db", Uuid::new_v4()));
        let db = Arc::new(Db::open(&path).unwrap());
        db.on_writer("table", |c| Ok(c.execute_batch("CREATE TABLE t (n INTEGER PRIMARY KEY)")?)).await.unwrap();
        let commits = db.commits();
        for n in 0..3i64 {
            assert_eq!(
                db.write("row", move |c| run(c, "INSERT INTO t (n) VALUES (?1)", [n]).map(|_| n)).await.unwrap(),
                n
            );
            assert_eq!(db.commits(), commits + 1 + n as u64, "each write its own commit when none waits");
        }
        db.close();
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
}
