//! Health checks and the removal of what has expired.

use async_trait::async_trait;
use portico_storage::{CleanupReport, Connections, Maintenance};
use time::{Duration, OffsetDateTime};

use crate::db::{one, run, secs};
use crate::{Result, SqliteStore};

#[async_trait]
impl Maintenance for SqliteStore {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    fn connections(&self) -> Option<Connections> {
        // One writer and readers opened on demand: no pool to size.
        None
    }

    async fn ping(&self) -> Result<()> {
        self.db.read(|c| one(c, "SELECT 1", [], |_| Ok(()))).await?;
        Ok(())
    }

    async fn delete_expired(
        &self,
        now: OffsetDateTime,
        access_token_ttl: Duration,
        keys_retired_before: OffsetDateTime,
    ) -> Result<CleanupReport> {
        let report = self
            .db
            .write("expired row", move |tx| {
                let remove = |sql: &str, time: OffsetDateTime| -> crate::db::Res<u64> {
                    Ok(u64::try_from(run(tx, sql, [secs(time)])?).unwrap_or(u64::MAX))
                };
                Ok(CleanupReport {
                    codes: remove("DELETE FROM authorization_codes WHERE expires_at <= ?1", now)?,
                    login_processes: remove("DELETE FROM login_processes WHERE expires_at <= ?1", now)?,
                    sessions: remove("DELETE FROM sso_sessions WHERE expires_at <= ?1", now)?,
                    refresh_tokens: remove("DELETE FROM refresh_tokens WHERE expires_at <= ?1", now)?,
                    revoked_access_tokens: remove("DELETE FROM revoked_access_tokens WHERE expires_at <= ?1", now)?,
                    grants: remove(
                        "DELETE FROM grants WHERE created_at <= ?1 AND NOT EXISTS \
                         (SELECT 1 FROM refresh_tokens r WHERE r.grant_id = grants.id)",
                        now - access_token_ttl,
                    )?,
                    signing_keys: remove(
                        "DELETE FROM signing_keys WHERE retired_at IS NOT NULL AND retired_at <= ?1",
                        keys_retired_before,
                    )?,
                    client_assertions: remove("DELETE FROM client_assertions WHERE expires_at <= ?1", now)?,
                    initial_access_tokens: remove("DELETE FROM initial_access_tokens WHERE expires_at <= ?1", now)?,
                    pushed_requests: remove("DELETE FROM pushed_requests WHERE expires_at <= ?1", now)?,
                })
            })
            .await?;
        if let Some(memory) = self.memory().filter(|_| report.grants > 0) {
            memory.forget_live_grants();
        }
        Ok(report)
    }
}
