//! The repository implementation that the SQLite and PostgreSQL stores share.
//!
//! Both backends speak one subset of SQL: `$N` placeholders (sqlx's SQLite
//! driver maps them to argument N), `RETURNING`, `ON CONFLICT`, `EXISTS`,
//! timestamps as `BIGINT` Unix seconds, ids as `TEXT`, booleans as `BOOLEAN`.
//! [`sql_repositories!`] expands the implementation of every repository trait
//! for a concrete store type, so that each query is written once; each backend
//! crate keeps its own connection setup, migrations and anything
//! dialect-specific.

use portico_storage::StorageError;
use time::OffsetDateTime;
use uuid::Uuid;

#[doc(hidden)]
pub mod deps {
    pub use async_trait;
    pub use portico_model;
    pub use portico_storage;
    pub use serde_json;
    pub use sqlx;
    pub use time;
    pub use uuid;
}

pub mod login;
pub mod notify;
pub mod permissions;
pub mod queries;
pub mod reports;
mod repositories;
pub mod rows;

/// Maps a driver error to a [`StorageError`]; `what` names the thing whose
/// unique key a conflict is about.
pub fn storage_error(what: &'static str) -> impl Fn(sqlx::Error) -> StorageError {
    move |error| match &error {
        sqlx::Error::Database(db) if db.is_unique_violation() => StorageError::Conflict(what.to_owned()),
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => StorageError::Unavailable(error.to_string()),
        _ => StorageError::Other(error.to_string()),
    }
}

/// The placeholders of a multi-row `VALUES` list: `rows` rows of `width`
/// columns, numbered from `$1` (`($1, $2), ($3, $4)` for 2 × 2).
pub fn values(rows: usize, width: usize) -> String {
    (0..rows)
        .map(|r| {
            let row: Vec<String> = (1..=width).map(|c| format!("${}", r * width + c)).collect();
            format!("({})", row.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A `BIGINT` column back to a timestamp.
///
/// # Errors
/// For a value outside the range of dates.
pub fn timestamp(seconds: i64) -> Result<OffsetDateTime, StorageError> {
    OffsetDateTime::from_unix_timestamp(seconds)
        .map_err(|_| StorageError::Other(format!("timestamp out of range: {seconds}")))
}

/// An optional `BIGINT` column back to a timestamp.
///
/// # Errors
/// For a value outside the range of dates.
pub fn timestamp_opt(seconds: Option<i64>) -> Result<Option<OffsetDateTime>, StorageError> {
    seconds.map(timestamp).transpose()
}

/// A `TEXT` id column back to a UUID.
///
/// # Errors
/// For text that is not a UUID (a damaged row).
pub fn uuid(text: &str) -> Result<Uuid, StorageError> {
    Uuid::parse_str(text).map_err(|_| StorageError::Other(format!("not a uuid: {text:?}")))
}

/// A JSON `TEXT` column back to a value.
///
/// # Errors
/// For text that does not parse (a damaged row).
pub fn json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, StorageError> {
    serde_json::from_str(text).map_err(|e| StorageError::Other(format!("damaged JSON column: {e}")))
}

/// A value to its JSON `TEXT` column.
///
/// # Errors
/// Never for the types Portico stores; reported rather than unwrapped.
pub fn to_json<T: serde::Serialize>(value: &T) -> Result<String, StorageError> {
    serde_json::to_string(value).map_err(|e| StorageError::Other(format!("cannot encode JSON column: {e}")))
}
