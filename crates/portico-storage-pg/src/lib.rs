//! The PostgreSQL store: for production, shared by any number of nodes.
//!
//! The schema uses PostgreSQL's own types (`uuid`, `timestamptz`, `jsonb`,
//! `text[]`, `date`), so that an operator reading the tables in `psql`
//! sees times and documents, and the constraints state the rules the code
//! relies on. One module per aggregate implements its repository traits,
//! with the SQL next to the code that binds it. Times are stored to the
//! whole second, as the tokens carry them: a lease read back compares
//! equal to the one it was claimed with.

mod audit;
mod batch;
mod cache;
mod clients;
mod error;
mod keys;
mod login;
mod maintenance;
mod notify;
mod oauth;
mod passkeys;
mod permissions;
mod reports;
mod sessions;
mod users;

use std::sync::Arc;
use std::time::Duration;

use portico_storage::StorageError;
use sqlx::PgPool;
use sqlx::postgres::{PgPoolOptions, PgRow};
use time::OffsetDateTime;

use crate::cache::NodeCache;
use crate::error::{idle_through_a_failure, storage_error};

/// A pooled connection idle this long is checked with a round trip before
/// it serves a query.
const PING_IDLE_AFTER: Duration = Duration::from_secs(1);

/// Every repository, on one PostgreSQL database.
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
    /// How long operations waited for a pooled connection.
    waits: Waits,
    /// Node-local answers for revocation state and the permission
    /// revision (see [`cache`]); `None`: every question goes to the
    /// database.
    cache: Option<Arc<NodeCache>>,
    /// The token endpoint's statements, combined under load (see [`batch`]).
    batches: Arc<oauth::Batches>,
}

impl PgStore {
    /// Connects to `url` (`postgres://user:password@host/database`) with at
    /// most `max_connections` connections; a query waits at most
    /// `acquire_timeout` for one.
    ///
    /// # Errors
    /// When the URL is malformed or the server cannot be reached.
    pub async fn connect(url: &str, max_connections: u32, acquire_timeout: Duration) -> Result<Self> {
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(acquire_timeout)
            // sqlx checks every connection when it comes back to the pool;
            // checking it again on the way out only pays off after it sat
            // idle (a server restart, a dropped network path meanwhile) or
            // when another connection was lost while it sat in the pool.
            // Without this every query would cost two round trips.
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if meta.idle_for >= PING_IDLE_AFTER || idle_through_a_failure(meta.idle_for) {
                        sqlx::Connection::ping(conn).await?;
                    }
                    Ok(true)
                })
            })
            .connect(url)
            .await
            .map_err(storage_error("database"))?;
        // An eighth of the pool for each of the four kinds of combined
        // statement: at most half of it for the token endpoint, the rest
        // for everything else (docs/decisions.md).
        let in_flight = usize::try_from(max_connections / 8).unwrap_or(1);
        Ok(Self { pool, waits: Waits::new(), cache: None, batches: Arc::new(oauth::Batches::new(in_flight)) })
    }

    /// A pooled connection, its wait recorded (`portico_database_wait_seconds`).
    async fn conn(&self) -> Result<sqlx::pool::PoolConnection<sqlx::Postgres>> {
        self.acquire().await.map_err(storage_error("database"))
    }

    /// [`PgStore::conn`] with the driver's error.
    async fn acquire(&self) -> std::result::Result<sqlx::pool::PoolConnection<sqlx::Postgres>, sqlx::Error> {
        let started = std::time::Instant::now();
        self.waits.waiting.increment(1.0);
        let conn = self.pool.acquire().await;
        self.waits.waiting.decrement(1.0);
        self.waits.seconds.record(started.elapsed().as_secs_f64());
        conn
    }

    /// A transaction on a pooled connection, its wait recorded.
    async fn begin(&self) -> Result<sqlx::Transaction<'static, sqlx::Postgres>> {
        sqlx::Transaction::begin(self.conn().await?, None).await.map_err(storage_error("database"))
    }

    /// Answers revocation state and the permission revision from memory on
    /// this node, kept current through `LISTEN`/`NOTIFY`, and never staler
    /// than `staleness`; zero turns the memory off. Call after
    /// [`PgStore::migrate`] (migration 0009 adds the notifications) from
    /// within a tokio runtime.
    #[must_use]
    pub fn with_node_cache(mut self, staleness: Duration) -> Self {
        self.cache = (!staleness.is_zero()).then(|| NodeCache::start(self.pool.clone(), staleness));
        self
    }

    /// The node's memory, when it keeps one.
    fn memory(&self) -> Option<&portico_storage::memory::NodeMemory> {
        self.cache.as_deref().map(|cache| &cache.memory)
    }

    /// Applies the migrations that have not run yet, keeping every row of a
    /// database an earlier release made. Several nodes may call this at
    /// once: sqlx serializes them with an advisory lock.
    ///
    /// # Errors
    /// When a migration fails; nothing of that migration is kept.
    pub async fn migrate(&self) -> Result<()> {
        sqlx::migrate!("./migrations")
            .run(&self.pool)
            .await
            .map_err(|e| StorageError::Other(format!("PostgreSQL migration failed: {e}")))?;
        users::fill_login_keys(&self.pool).await
    }

    /// Closes every connection, waiting for running queries.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

type Result<T> = std::result::Result<T, StorageError>;

/// The metrics of connection waits, registered once per store.
#[derive(Clone)]
struct Waits {
    seconds: metrics::Histogram,
    waiting: metrics::Gauge,
}

impl Waits {
    fn new() -> Self {
        Self {
            seconds: metrics::histogram!("portico_database_wait_seconds", "backend" => "postgres"),
            waiting: metrics::gauge!("portico_database_waiting", "backend" => "postgres"),
        }
    }
}

/// One statement with its arguments.
type Query<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

/// A time as stored: to the whole second.
fn at(time: OffsetDateTime) -> OffsetDateTime {
    time.replace_nanosecond(0).unwrap_or(time)
}

/// An optional time as stored.
fn at_opt(time: Option<OffsetDateTime>) -> Option<OffsetDateTime> {
    time.map(at)
}

/// A column of `row`.
fn get<'r, T>(row: &'r PgRow, column: &str) -> Result<T>
where
    T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    sqlx::Row::try_get(row, column).map_err(storage_error("row"))
}

/// A count that cannot be negative, from an `integer` column.
fn count(row: &PgRow, column: &str) -> Result<u32> {
    Ok(u32::try_from(get::<i32>(row, column)?).unwrap_or(0))
}

/// A count as an `integer` column.
fn int(count: u32) -> i32 {
    i32::try_from(count).unwrap_or(i32::MAX)
}
