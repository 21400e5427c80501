//! Passkeys per user. Each change and its audit event are one statement
//! (the event inserted from the changed row), so neither is ever alone.

use async_trait::async_trait;
use portico_model::audit::AuditEvent;
use portico_model::ids::UserId;
use portico_model::passkey::{MAX_PER_USER, Passkey};
use portico_storage::{PasskeyRepository, PasskeyStored, PasskeySummary};
use sqlx::postgres::PgRow;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::audit::bind_audit;
use crate::error::storage_error;
use crate::{PgStore, Result, at, get};

fn passkey_from(row: &PgRow) -> Result<Passkey> {
    Ok(Passkey {
        id: get(row, "id")?,
        user_id: get::<Uuid>(row, "user_id")?.into(),
        credential_id: get(row, "credential_id")?,
        name: get(row, "name")?,
        credential: get(row, "credential")?,
        sign_count: u32::try_from(get::<i64>(row, "sign_count")?).unwrap_or(u32::MAX),
        created_at: get(row, "created_at")?,
        last_used_at: get(row, "last_used_at")?,
        locked_at: get(row, "locked_at")?,
    })
}

/// `change` (a data-modifying statement with `RETURNING`, its own
/// parameters from `$7` on) with `audit` recorded for each row it changed.
fn audited(change: &str) -> String {
    format!(
        "WITH done AS ({change}) INSERT INTO audit_log (at, kind, user_id, client_id, detail, actor) \
         SELECT $1, $2, $3, $4, $5, $6 FROM done"
    )
}

type Query<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

/// The query of an [`audited`] change with the audit event's parameters bound.
fn audited_query<'q>(sql: &'q str, audit: &'q AuditEvent) -> Query<'q> {
    bind_audit(sqlx::query(sql), audit).bind(audit.actor.as_deref())
}

impl PgStore {
    /// Runs an [`audited_query`]: how many rows it changed.
    async fn run_audited(&self, query: Query<'_>) -> Result<u64> {
        let done = query.execute(&mut *self.conn().await?).await.map_err(storage_error("passkey"))?;
        Ok(done.rows_affected())
    }
}

#[async_trait]
impl PasskeyRepository for PgStore {
    async fn insert_passkey(&self, passkey: &Passkey, audit: &AuditEvent) -> Result<PasskeyStored> {
        let mut tx = self.begin().await?;
        // The user's row, locked: parallel inserts for one user count in turn.
        let user = sqlx::query("SELECT 1 FROM users WHERE id = $1 FOR UPDATE")
            .bind(passkey.user_id.as_uuid())
            .fetch_optional(&mut *tx)
            .await
            .map_err(storage_error("passkey"))?;
        if user.is_none() {
            return Ok(PasskeyStored::NoUser);
        }
        let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM passkeys WHERE user_id = $1")
            .bind(passkey.user_id.as_uuid())
            .fetch_one(&mut *tx)
            .await
            .map_err(storage_error("passkey"))?;
        if usize::try_from(kept).unwrap_or(usize::MAX) >= MAX_PER_USER {
            return Ok(PasskeyStored::TooMany);
        }
        let sql = audited(
            "INSERT INTO passkeys (id, user_id, credential_id, name, credential, sign_count, created_at) \
             VALUES ($7, $8, $9, $10, $11, $12, $13) ON CONFLICT (credential_id) DO NOTHING RETURNING id",
        );
        let stored = audited_query(&sql, audit)
            .bind(passkey.id)
            .bind(passkey.user_id.as_uuid())
            .bind(&passkey.credential_id)
            .bind(&passkey.name)
            .bind(&passkey.credential)
            .bind(i64::from(passkey.sign_count))
            .bind(at(passkey.created_at))
            .execute(&mut *tx)
            .await
            .map_err(storage_error("passkey"))?
            .rows_affected();
        if stored == 0 {
            return Ok(PasskeyStored::CredentialTaken);
        }
        tx.commit().await.map_err(storage_error("passkey"))?;
        Ok(PasskeyStored::Stored)
    }

    async fn passkeys_of(&self, user_id: UserId) -> Result<Vec<Passkey>> {
        let rows = sqlx::query("SELECT * FROM passkeys WHERE user_id = $1 ORDER BY created_at, id")
            .bind(user_id.as_uuid())
            .fetch_all(&mut *self.conn().await?)
            .await
            .map_err(storage_error("passkey"))?;
        rows.iter().map(passkey_from).collect()
    }

    async fn passkeys_of_users(&self, user_ids: &[UserId]) -> Result<Vec<Passkey>> {
        if user_ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<Uuid> = user_ids.iter().map(UserId::as_uuid).collect();
        let rows = sqlx::query("SELECT * FROM passkeys WHERE user_id = ANY($1) ORDER BY created_at, id")
            .bind(ids)
            .fetch_all(&mut *self.conn().await?)
            .await
            .map_err(storage_error("passkey"))?;
        rows.iter().map(passkey_from).collect()
    }

    async fn find_passkey(&self, credential_id: &str) -> Result<Option<Passkey>> {
        sqlx::query("SELECT * FROM passkeys WHERE credential_id = $1")
            .bind(credential_id)
            .fetch_optional(&mut *self.conn().await?)
            .await
            .map_err(storage_error("passkey"))?
            .as_ref()
            .map(passkey_from)
            .transpose()
    }

    async fn record_passkey_use(
        &self,
        id: Uuid,
        credential: &str,
        sign_count: u32,
        now: OffsetDateTime,
        audit: &AuditEvent,
    ) -> Result<bool> {
        // The rule of Passkey::counter_advances, against the stored counter.
        let sql = audited(
            "UPDATE passkeys SET credential = $8, sign_count = $9, last_used_at = $10 \
             WHERE id = $7 AND locked_at IS NULL AND (sign_count < $9 OR (sign_count = 0 AND $9 = 0)) RETURNING id",
        );
        let query = audited_query(&sql, audit).bind(id).bind(credential).bind(i64::from(sign_count)).bind(at(now));
        let used = self.run_audited(query).await?;
        Ok(used == 1)
    }

    async fn lock_passkey(&self, id: Uuid, now: OffsetDateTime, audit: &AuditEvent) -> Result<bool> {
        let sql = audited("UPDATE passkeys SET locked_at = $8 WHERE id = $7 AND locked_at IS NULL RETURNING id");
        Ok(self.run_audited(audited_query(&sql, audit).bind(id).bind(at(now))).await? == 1)
    }

    async fn rename_passkey(&self, user_id: UserId, id: Uuid, name: &str) -> Result<bool> {
        let done = sqlx::query("UPDATE passkeys SET name = $3 WHERE id = $1 AND user_id = $2")
            .bind(id)
            .bind(user_id.as_uuid())
            .bind(name)
            .execute(&mut *self.conn().await?)
            .await
            .map_err(storage_error("passkey"))?;
        Ok(done.rows_affected() == 1)
    }

    async fn delete_passkey(&self, user_id: UserId, id: Uuid, audit: &AuditEvent) -> Result<bool> {
        let sql = audited("DELETE FROM passkeys WHERE id = $7 AND user_id = $8 RETURNING id");
        Ok(self.run_audited(audited_query(&sql, audit).bind(id).bind(user_id.as_uuid())).await? == 1)
    }

    async fn passkey_summary(&self, user_id: UserId) -> Result<PasskeySummary> {
        let row = sqlx::query(
            "SELECT (SELECT count(*) FROM passkeys WHERE user_id = $1) AS kept, \
             (SELECT count(*) FROM passkeys WHERE user_id = $1 AND locked_at IS NULL) AS usable, \
             (SELECT declined_at FROM passkey_offers WHERE user_id = $1) AS declined_at",
        )
        .bind(user_id.as_uuid())
        .fetch_one(&mut *self.conn().await?)
        .await
        .map_err(storage_error("passkey"))?;
        Ok(PasskeySummary {
            kept: usize::try_from(get::<i64>(&row, "kept")?).unwrap_or_default(),
            usable: usize::try_from(get::<i64>(&row, "usable")?).unwrap_or_default(),
            offer_declined_at: get(&row, "declined_at")?,
        })
    }

    async fn decline_passkey_offer(&self, user_id: UserId, declined_at: OffsetDateTime) -> Result<()> {
        sqlx::query(
            "INSERT INTO passkey_offers (user_id, declined_at) SELECT $1, $2 \
             WHERE EXISTS (SELECT 1 FROM users WHERE id = $1) \
             ON CONFLICT (user_id) DO UPDATE SET declined_at = excluded.declined_at",
        )
        .bind(user_id.as_uuid())
        .bind(at(declined_at))
        .execute(&mut *self.conn().await?)
        .await
        .map_err(storage_error("passkey offer"))?;
        Ok(())
    }
}
