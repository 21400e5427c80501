//! The hot paths (token endpoint, liveness check, permission revision) run
//! synchronously on the calling thread, on rusqlite connections of their own.
//!
//! sqlx runs each SQLite connection on a thread of its own and answers
//! through channels: two thread wake-ups per statement, which cost far more
//! than SQLite's own work for an indexed point read or a five-statement
//! write (profiled: in a token-exchange load a fifth of all CPU went to
//! waking sqlx's threads and switching to them, and 40 % of a liveness
//! load). Here a read takes a few microseconds: in WAL mode a reader never
//! waits for the writer. A write transaction takes tens of microseconds on
//! the one [`writer`](super::writer) connection; WAL checkpoints, which
//! `fsync`, run on a [thread of their own](super::checkpoint), so requests
//! do not wait for them (but for the writer's own checkpoint once the log
//! is long).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use portico_model::client::Client;
use portico_model::oauth::{AccessTokenState, StoredCode, StoredRefreshToken};
use portico_model::user::User;
use portico_storage::{Result, StorageError};
use portico_storage_sql::queries;
use portico_storage_sql::rows::{self, Columns};
use rusqlite::{Connection, OpenFlags, ToSql};
use uuid::Uuid;

use crate::checkpoint::Checkpointer;
use crate::writer::TokenWriter;

/// Idle read connections kept for reuse; more are opened under load and
/// closed after.
const IDLE: usize = 8;

/// `$1`, `$2`…: the parameter names of the shared SQL text.
const NAMES: [&str; 12] = ["$1", "$2", "$3", "$4", "$5", "$6", "$7", "$8", "$9", "$10", "$11", "$12"];

pub fn fail(error: rusqlite::Error) -> StorageError {
    match error {
        rusqlite::Error::SqliteFailure(code, _)
            if matches!(code.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) =>
        {
            StorageError::Unavailable(error.to_string())
        }
        other => StorageError::Other(other.to_string()),
    }
}

/// `params` named `$1`, `$2`… for the shared SQL text.
pub fn named<'p>(params: &[&'p dyn ToSql]) -> Vec<(&'static str, &'p dyn ToSql)> {
    assert!(params.len() <= NAMES.len(), "at most {} parameters", NAMES.len());
    NAMES.iter().copied().zip(params.iter().copied()).collect()
}

/// Opens the database file at `path` (which must exist).
pub fn open(path: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    Connection::open_with_flags(path, flags).map_err(fail)
}

pub struct Cols<'a, 'b>(pub &'a rusqlite::Row<'b>);

impl Columns for Cols<'_, '_> {
    fn text(&self, column: &str) -> Result<String> {
        self.0.get(column).map_err(fail)
    }
    fn text_opt(&self, column: &str) -> Result<Option<String>> {
        self.0.get(column).map_err(fail)
    }
    fn int(&self, column: &str) -> Result<i64> {
        self.0.get(column).map_err(fail)
    }
    fn int_opt(&self, column: &str) -> Result<Option<i64>> {
        self.0.get(column).map_err(fail)
    }
    fn flag(&self, column: &str) -> Result<bool> {
        self.0.get(column).map_err(fail)
    }
    fn bytes(&self, column: &str) -> Result<Vec<u8>> {
        self.0.get(column).map_err(fail)
    }
}

/// The first row of `sql` on `conn` with `$1`, `$2`… bound to `params`,
/// mapped by `map`.
pub fn one<T>(
    conn: &Connection,
    sql: &str,
    params: &[&dyn ToSql],
    map: impl FnOnce(&Cols<'_, '_>) -> Result<T>,
) -> Result<Option<T>> {
    let mut statement = conn.prepare_cached(sql).map_err(fail)?;
    let mut found = statement.query(named(params).as_slice()).map_err(fail)?;
    match found.next().map_err(fail)? {
        Some(row) => map(&Cols(row)).map(Some),
        None => Ok(None),
    }
}

/// The synchronous reads and token writes of one database file.
pub struct FastPath {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    /// The token writes (see [`crate::writer`]).
    pub(crate) writer: TokenWriter,
    /// Checkpoints the file's log for as long as the fast path lives.
    _checkpoints: Checkpointer,
}

impl FastPath {
    /// The fast path to the database file at `path` (which must exist),
    /// with its checkpoint thread.
    pub fn new(path: &Path) -> Result<Self> {
        Ok(Self {
            path: path.to_owned(),
            idle: Mutex::new(Vec::new()),
            writer: TokenWriter::open(path)?,
            _checkpoints: Checkpointer::start(path)?,
        })
    }

    fn connect(&self) -> Result<Connection> {
        let conn = open(&self.path)?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(fail)?;
        conn.pragma_update(None, "query_only", true).map_err(fail)?;
        Ok(conn)
    }

    /// The first row of `sql` on a pooled read connection.
    fn read<T>(
        &self,
        sql: &str,
        params: &[&dyn ToSql],
        map: impl FnOnce(&Cols<'_, '_>) -> Result<T>,
    ) -> Result<Option<T>> {
        let pooled = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let conn = match pooled {
            Some(conn) => conn,
            None => self.connect()?,
        };
        let result = one(&conn, sql, params, map);
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < IDLE {
            idle.push(conn);
        }
        result
    }

    pub fn access_token_state(&self, grant_id: Uuid, jti: &str) -> Result<AccessTokenState> {
        self.read(queries::ACCESS_TOKEN_STATE, &[&grant_id.to_string(), &jti], |row| rows::access_token_state(row))?
            .ok_or_else(|| StorageError::Other("the access token state query returned no row".into()))
    }

    pub fn permission_revision(&self) -> Result<i64> {
        self.read("SELECT revision FROM permission_revision WHERE id = 1", &[], |row| row.int("revision"))?
            .ok_or_else(|| StorageError::Other("the permission revision row is missing".into()))
    }

    pub fn find_client(&self, client_id: &str) -> Result<Option<Client>> {
        self.read(queries::FIND_CLIENT, &[&client_id], |row| rows::client(row))
    }

    pub fn find_user(&self, id: Uuid) -> Result<Option<User>> {
        self.read(queries::FIND_USER, &[&id.to_string()], |row| rows::user(row))
    }

    pub fn active_signing_kid(&self) -> Result<Option<String>> {
        self.read(queries::ACTIVE_SIGNING_KID, &[], |row| row.text("kid"))
    }

    pub fn find_code(&self, code_hash: &str) -> Result<Option<StoredCode>> {
        self.read(queries::FIND_CODE, &[&code_hash], |row| rows::stored_code(row))
    }

    pub fn find_refresh_token(&self, token_hash: &str) -> Result<Option<StoredRefreshToken>> {
        self.read(queries::FIND_REFRESH_TOKEN, &[&token_hash], |row| rows::stored_refresh_token(row))
    }
}
