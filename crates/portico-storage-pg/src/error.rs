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
        sqlx::Error::Database(db) if db.code().is_some_and(|code| rolled_back_for_a_conflict(&code)) => {
            StorageError::Unavailable(format!("{ROLLED_BACK}: {error}; try again"))
        }
        _ => StorageError::Other(error.to_string()),
    }
}

/// How the error of a transaction the server rolled back to break a
/// conflict with another begins ([`storage_error`]).
const ROLLED_BACK: &str = "the database rolled the write back to break a conflict with another";

/// Whether a SQLSTATE means the server rolled the transaction back to
/// break a conflict with another one, so that running it again is safe
/// and likely to succeed: 40P01 (deadlock detected) and 40001
/// (serialization failure).
fn rolled_back_for_a_conflict(code: &str) -> bool {
    matches!(code, "40P01" | "40001")
}

/// How many times [`again_if_rolled_back`] runs a write at most.
const TRIES: u32 = 3;

/// Runs `write` (one whole transaction, or one statement) again when the
/// server rolled it back to break a conflict with another (a deadlock
/// among writers that lock rows in different orders), up to [`TRIES`]
/// times: nothing of a rolled-back try was kept, so another is safe. The
/// last try's error stands (answered 503: try again). Counted in
/// `portico_database_conflicts_total` by `outcome`.
pub(crate) async fn again_if_rolled_back<T, Written>(
    write: &'static str,
    mut send: impl FnMut() -> Written,
) -> Result<T, StorageError>
where
    Written: std::future::Future<Output = Result<T, StorageError>>,
{
    let mut tries = 1;
    loop {
        match send().await {
            Err(StorageError::Unavailable(message)) if message.starts_with(ROLLED_BACK) => {
                let outcome = if tries < TRIES { "retried" } else { "failed" };
                metrics::counter!("portico_database_conflicts_total", "write" => write, "outcome" => outcome)
                    .increment(1);
                if tries == TRIES {
                    tracing::warn!(write, tries, error = %message, "the database rolled a write back every time it was sent");
                    return Err(StorageError::Unavailable(message));
                }
                tracing::info!(write, tries, error = %message, "the database rolled a write back for a conflict");
                tries += 1;
            }
            answered => return answered,
        }
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
    use super::*;

    #[test]
    fn only_deadlocks_and_serialization_failures_are_rolled_back_for_a_conflict() {
        for code in ["40P01", "40001"] {
            assert!(rolled_back_for_a_conflict(code), "{code}");
        }
        for code in ["40002", "40003", "23505", "55P03", "57014", "08006"] {
            assert!(!rolled_back_for_a_conflict(code), "{code}");
        }
    }

    fn rolled_back() -> StorageError {
        StorageError::Unavailable(format!("{ROLLED_BACK}: deadlock detected; try again"))
    }

    fn run<T>(future: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(future)
    }

    #[test]
    fn a_write_rolled_back_for_a_conflict_is_sent_again_until_it_is_answered() {
        let mut sent = 0;
        let answer = run(again_if_rolled_back("test", || {
            sent += 1;
            let result = if sent < TRIES { Err(rolled_back()) } else { Ok(sent) };
            async move { result }
        }));
        assert_eq!(answer.unwrap(), TRIES, "answered by the last try");
    }

    #[test]
    fn a_write_rolled_back_every_time_fails_retryably_and_other_errors_are_not_retried() {
        let mut sent = 0;
        let answer: Result<(), _> = run(again_if_rolled_back("test", || {
            sent += 1;
            async { Err(rolled_back()) }
        }));
        assert!(matches!(answer, Err(StorageError::Unavailable(m)) if m.starts_with(ROLLED_BACK)));
        assert_eq!(sent, TRIES);
        for error in [StorageError::Unavailable("connection refused".into()), StorageError::Other("bug".into())] {
            let mut sent = 0;
            let answer: Result<(), _> = run(again_if_rolled_back("test", || {
                sent += 1;
                let error = error.clone();
                async move { Err(error) }
            }));
            assert!(answer.is_err());
            assert_eq!(sent, 1, "{error}: sent once");
        }
    }

    #[test]
    fn outage_codes_are_told_from_statement_errors() {
        for code in ["08006", "08003", "57P01", "57P02", "57P03", "53300"] {
            assert!(outage_code(code), "{code}");
        }
        for code in ["23505", "23503", "42P01", "22P02", "40001", "22P05"] {
            assert!(!outage_code(code), "{code}");
        }
    }
}
