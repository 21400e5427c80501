//! Driver errors as [`StorageError`]s, and the memory of lost connections
//! that tells the pool when idle connections are worth a check.

use portico_storage::StorageError;

/// Maps a driver error to a [`StorageError`]; `what` names the thing whose
/// unique key a conflict is about.
///
/// A lost connection (an I/O, TLS or pool error, or a server going away) is
/// an outage ([`StorageError::Unavailable`], answered 503) and is recorded
/// for [`idle_through_a_failure`].
pub(crate) fn storage_error(what: &'static str) -> impl Fn(sqlx::Error) -> StorageError {
    move |error| match &error {
        sqlx::Error::Database(db) if db.is_unique_violation() => StorageError::Conflict(what.to_owned()),
        sqlx::Error::PoolTimedOut => {
            metrics::counter!("portico_database_wait_timeouts_total", "backend" => "postgres").increment(1);
            connection_failures::record();
            StorageError::Unavailable(error.to_string())
        }
        sqlx::Error::PoolClosed => {
            connection_failures::record();
            StorageError::Unavailable(error.to_string())
        }
        _ if connection_lost(&error) => StorageError::Unavailable(error.to_string()),
        _ => StorageError::Other(error.to_string()),
    }
}

/// Whether `error` is a lost connection (an I/O, TLS or protocol error, the
/// driver's worker gone, or the server going away), recorded for
/// [`idle_through_a_failure`] when it is. Met by a statement already sent,
/// it leaves unknown whether the statement committed.
pub(crate) fn connection_lost(error: &sqlx::Error) -> bool {
    let lost = match error {
        sqlx::Error::Database(db) => db.code().is_some_and(|code| outage_code(&code)),
        sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::Protocol(_) | sqlx::Error::WorkerCrashed => true,
        _ => false,
    };
    if lost {
        connection_failures::record();
    }
    lost
}

/// The error of a damaged row: a value the code never writes.
pub(crate) fn damaged(what: &str, value: &str) -> StorageError {
    StorageError::Other(format!("damaged row: {what} {value:?}"))
}

/// Whether a SQLSTATE means the server is going away, starting, or out of
/// room for us, rather than that the statement was wrong: class 08
/// (connection exception), 57P01–57P03 (terminated by an administrator's or
/// a crash's shutdown; cannot connect now), 53300 (too many connections).
fn outage_code(code: &str) -> bool {
    code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300")
}

/// Whether a connection idle for `idle_for` has been idle since before a
/// lost connection was last seen (by any pool of this process): after a
/// database restart or a cut network path, the connections that sat in the
/// pool are as dead as the one that failed, and are worth a check.
pub(crate) fn idle_through_a_failure(idle_for: std::time::Duration) -> bool {
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

#[cfg(test)]
mod tests {
    #[test]
    fn outage_codes_are_told_from_statement_errors() {
        for code in ["08006", "08003", "57P01", "57P02", "57P03", "53300"] {
            assert!(super::outage_code(code), "{code}");
        }
        for code in ["23505", "23503", "42P01", "22P02", "40001", "22P05"] {
            assert!(!super::outage_code(code), "{code}");
        }
    }
}
