//! The liveness check's revocation read runs synchronously on the calling
//! thread, on read-only connections of its own.
//!
//! sqlx runs each SQLite connection on a thread of its own and answers
//! through channels: two thread wake-ups per query, which cost far more than
//! SQLite's own work for an indexed point read (profiled: 40 % of the CPU of
//! a liveness load went to context switches). In WAL mode a reader never
//! waits for the writer, so this read takes microseconds and does not hold
//! up the async executor. The token endpoint's reads stay on sqlx: its
//! throughput is bound by the single writer, and work done synchronously on
//! the executor threads only delays that writer (see docs/benchmarks.md).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use portico_model::oauth::AccessTokenState;
use portico_storage::{Result, StorageError};
use portico_storage_sql::queries;
use portico_storage_sql::rows::{self, Columns};
use rusqlite::{Connection, OpenFlags, ToSql};
use uuid::Uuid;

/// Idle connections kept for reuse; more are opened under load and closed after.
const IDLE: usize = 8;

pub struct FastReads {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
}

fn fail(error: rusqlite::Error) -> StorageError {
    match error {
        rusqlite::Error::SqliteFailure(code, _)
            if matches!(code.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) =>
        {
            StorageError::Unavailable(error.to_string())
        }
        other => StorageError::Other(other.to_string()),
    }
}

struct Cols<'a, 'b>(&'a rusqlite::Row<'b>);

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

impl FastReads {
    /// Reads from the database file at `path` (which must exist).
    pub fn new(path: &Path) -> Self {
        Self { path: path.to_owned(), idle: Mutex::new(Vec::new()) }
    }

    fn connect(&self) -> Result<Connection> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(&self.path, flags).map_err(fail)?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(fail)?;
        conn.pragma_update(None, "query_only", true).map_err(fail)?;
        Ok(conn)
    }

    /// The first row of `sql` with `$1`, `$2`… bound to `params`, mapped by `map`.
    fn one<T>(
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
        let result = (|| {
            let mut statement = conn.prepare_cached(sql).map_err(fail)?;
            let names: Vec<String> = (1..=params.len()).map(|i| format!("${i}")).collect();
            let named: Vec<(&str, &dyn ToSql)> = names.iter().map(String::as_str).zip(params.iter().copied()).collect();
            let mut found = statement.query(named.as_slice()).map_err(fail)?;
            match found.next().map_err(fail)? {
                Some(row) => map(&Cols(row)).map(Some),
                None => Ok(None),
            }
        })();
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < IDLE {
            idle.push(conn);
        }
        result
    }

    pub fn access_token_state(&self, grant_id: Uuid, jti: &str) -> Result<AccessTokenState> {
        self.one(queries::ACCESS_TOKEN_STATE, &[&grant_id.to_string(), &jti], |row| rows::access_token_state(row))?
            .ok_or_else(|| StorageError::Other("the access token state query returned no row".into()))
    }

    pub fn permission_revision(&self) -> Result<i64> {
        self.one("SELECT revision FROM permission_revision WHERE id = 1", &[], |row| row.int("revision"))?
            .ok_or_else(|| StorageError::Other("the permission revision row is missing".into()))
    }
}
