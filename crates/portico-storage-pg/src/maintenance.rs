//! Health checks and the removal of what has expired.

use async_trait::async_trait;
use portico_storage::{CleanupReport, Connections, Maintenance};
use time::{Duration, OffsetDateTime};

use crate::error::storage_error;
use crate::{PgStore, Result, at};

impl PgStore {
    /// Runs a `DELETE` with one time parameter; the rows it removed.
    async fn remove(&self, sql: &'static str, time: OffsetDateTime) -> Result<u64> {
        let done = sqlx::query(sql)
            .bind(at(time))
            .execute(&mut *self.conn().await?)
            .await
            .map_err(storage_error("expired row"))?;
        Ok(done.rows_affected())
    }
}

#[async_trait]
impl Maintenance for PgStore {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    fn connections(&self) -> Option<Connections> {
        let open = self.pool.size();
        let idle = u32::try_from(self.pool.num_idle()).unwrap_or(u32::MAX).min(open);
        Some(Connections { busy: open - idle, idle, max: self.pool.options().get_max_connections() })
    }

    async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&mut *self.conn().await?).await.map_err(storage_error("database"))?;
        Ok(())
    }

    async fn delete_expired(
        &self,
        now: OffsetDateTime,
        access_token_ttl: Duration,
        keys_retired_before: OffsetDateTime,
    ) -> Result<CleanupReport> {
        Ok(CleanupReport {
            codes: self.remove("DELETE FROM authorization_codes WHERE expires_at <= $1", now).await?,
            login_processes: self.remove("DELETE FROM login_processes WHERE expires_at <= $1", now).await?,
            sessions: self.remove("DELETE FROM sso_sessions WHERE expires_at <= $1", now).await?,
            refresh_tokens: self.remove("DELETE FROM refresh_tokens WHERE expires_at <= $1", now).await?,
            revoked_access_tokens: self.remove("DELETE FROM revoked_access_tokens WHERE expires_at <= $1", now).await?,
            grants: self
                .remove(
                    "DELETE FROM grants WHERE created_at <= $1 AND NOT EXISTS \
                     (SELECT 1 FROM refresh_tokens r WHERE r.grant_id = grants.id)",
                    now - access_token_ttl,
                )
                .await?,
            signing_keys: self
                .remove(
                    "DELETE FROM signing_keys WHERE retired_at IS NOT NULL AND retired_at <= $1",
                    keys_retired_before,
                )
                .await?,
            client_assertions: self.remove("DELETE FROM client_assertions WHERE expires_at <= $1", now).await?,
            initial_access_tokens: self.remove("DELETE FROM initial_access_tokens WHERE expires_at <= $1", now).await?,
            pushed_requests: self.remove("DELETE FROM pushed_requests WHERE expires_at <= $1", now).await?,
        })
    }
}
