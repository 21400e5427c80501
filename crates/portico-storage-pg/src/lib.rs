//! The PostgreSQL store: for production, shared by any number of nodes.

use std::time::Duration;

use portico_storage::StorageError;
use portico_storage_sql::{idle_through_a_failure, storage_error};
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;

/// A pooled connection idle this long is checked with a round trip before
/// it serves a query.
const PING_IDLE_AFTER: Duration = Duration::from_secs(1);

/// Every repository, on one PostgreSQL database.
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
    /// The same pool: PostgreSQL serves reads and writes alike.
    read_pool: PgPool,
}

impl PgStore {
    /// Connects to `url` (`postgres://user:password@host/database`) with at
    /// most `max_connections` connections; a query waits at most
    /// `acquire_timeout` for one.
    ///
    /// # Errors
    /// When the URL is malformed or the server cannot be reached.
    pub async fn connect(url: &str, max_connections: u32, acquire_timeout: Duration) -> Result<Self, StorageError> {
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
        Ok(Self { read_pool: pool.clone(), pool })
    }

    /// Applies the migrations that have not run yet. Several nodes may call
    /// this at once: sqlx serializes them with an advisory lock.
    ///
    /// # Errors
    /// When a migration fails; nothing of that migration is kept.
    pub async fn migrate(&self) -> Result<(), StorageError> {
        sqlx::migrate!("./migrations")
            .run(&self.pool)
            .await
            .map_err(|e| StorageError::Other(format!("PostgreSQL migration failed: {e}")))
    }

    /// Closes every connection, waiting for running queries.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

portico_storage_sql::sql_repositories!(PgStore, sqlx::Postgres, sqlx::postgres::PgRow, "postgres");
portico_storage_sql::sql_login_repositories!(PgStore, sqlx::Postgres);
portico_storage_sql::sql_notify_repositories!(
    PgStore,
    sqlx::Postgres,
    skip_locked = " FOR UPDATE SKIP LOCKED",
    batches = arrays
);
portico_storage_sql::sql_report_repositories!(PgStore, sqlx::Postgres, skip_locked = " FOR UPDATE SKIP LOCKED");
portico_storage_sql::sql_permission_repository!(PgStore, sqlx::Postgres, sqlx::postgres::PgRow);
