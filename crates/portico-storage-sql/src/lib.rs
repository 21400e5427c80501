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
pub mod notify_batches;
pub mod permissions;
pub mod queries;
pub mod reports;
mod repositories;
pub mod rows;

/// Maps a driver error to a [`StorageError`]; `what` names the thing whose
/// unique key a conflict is about.
///
/// A lost connection (an I/O, TLS or pool error) is also recorded for
/// [`idle_through_a_failure`], so that the pool checks the connections that
/// sat idle meanwhile before it hands them out again.
pub fn storage_error(what: &'static str) -> impl Fn(sqlx::Error) -> StorageError {
    move |error| match &error {
        sqlx::Error::Database(db) if db.is_unique_violation() => StorageError::Conflict(what.to_owned()),
        sqlx::Error::Database(db) if db.code().is_some_and(|code| outage_code(&code)) => {
            connection_failures::record();
            StorageError::Unavailable(error.to_string())
        }
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => {
            connection_failures::record();
            StorageError::Unavailable(error.to_string())
        }
        _ => StorageError::Other(error.to_string()),
    }
}

/// Whether a database error code means the server is going away, starting,
/// or out of room for us, rather than that the statement was wrong: an
/// outage (503), not an internal error. PostgreSQL: class 08 (connection
/// exception), 57P01–57P03 (terminated by an administrator's or a crash's
/// shutdown; cannot connect now), 53300 (too many connections). SQLite:
/// busy or locked past the busy timeout (5, 6 and their extended codes).
fn outage_code(code: &str) -> bool {
    code.starts_with("08")
        || matches!(code, "57P01" | "57P02" | "57P03" | "53300")
        || matches!(code.parse::<u32>(), Ok(number) if matches!(number & 0xff, 5 | 6))
}

/// Whether a connection idle for `idle_for` has been idle since before a
/// lost connection was last seen (by any pool of this process): after a
/// database restart or a cut network path, the connections that sat in the
/// pool are as dead as the one that failed, and are worth a check.
pub fn idle_through_a_failure(idle_for: std::time::Duration) -> bool {
    connection_failures::since(idle_for)
}

mod connection_failures {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    /// Nanoseconds after [`origin`] of the last lost connection, plus one
    /// (zero: none yet).
    static LAST: AtomicU64 = AtomicU64::new(0);

    fn origin() -> Instant {
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        *ORIGIN.get_or_init(Instant::now)
    }

    fn now() -> u64 {
        u64::try_from(origin().elapsed().as_nanos()).unwrap_or(u64::MAX - 1) + 1
    }

    pub(super) fn record() {
        LAST.fetch_max(now(), Ordering::Relaxed);
    }

    pub(super) fn since(idle_for: Duration) -> bool {
        idle_through(LAST.load(Ordering::Relaxed), now(), idle_for)
    }

    /// Whether a connection idle for `idle_for` at `now` went idle no later
    /// than the failure at `last` (both in [`now`]'s units; `last` zero: no
    /// failure yet).
    fn idle_through(last: u64, now: u64, idle_for: Duration) -> bool {
        let idle_for = u64::try_from(idle_for.as_nanos()).unwrap_or(u64::MAX);
        last != 0 && last >= now.saturating_sub(idle_for)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn connections_idle_since_before_the_last_failure_are_suspect() {
            let second = Duration::from_secs(1);
            assert!(!idle_through(0, 5_000_000_000, Duration::from_secs(3600)), "no failure yet");
            // A failure 2 s after the origin, asked about at 5 s.
            let (last, now) = (2_000_000_001, 5_000_000_001);
            assert!(idle_through(last, now, 4 * second), "idle since 1 s");
            assert!(idle_through(last, now, 3 * second), "idle since the failure");
            assert!(!idle_through(last, now, second), "idle since 4 s, after the failure");
            assert!(!idle_through(last, now, Duration::ZERO), "just given back");
        }

        #[test]
        fn a_recorded_failure_is_seen_by_idle_connections() {
            record();
            assert!(since(Duration::from_secs(3600)));
        }
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

#[cfg(test)]
mod outage_tests {
    #[test]
    fn outage_codes_are_told_from_statement_errors() {
        for code in ["08006", "08003", "57P01", "57P02", "57P03", "53300", "5", "517", "6", "262"] {
            assert!(super::outage_code(code), "{code}");
        }
        for code in ["23505", "23503", "42P01", "22P02", "40001", "19", "1", "2067"] {
            assert!(!super::outage_code(code), "{code}");
        }
    }
}
