//! The audit log.

use async_trait::async_trait;
use portico_model::audit::AuditEvent;
use portico_model::ids::{ClientId, UserId};
use portico_storage::AuditRepository;
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use uuid::Uuid;

use crate::error::storage_error;
use crate::{PgStore, Query, Result, at, get};

/// Binds an audit event's five columns (at, kind, user, client, detail), in
/// the table's order.
pub(crate) fn bind_audit<'q>(query: Query<'q>, event: &'q AuditEvent) -> Query<'q> {
    query
        .bind(at(event.at))
        .bind(&event.kind)
        .bind(event.user_id.as_ref().map(UserId::as_uuid))
        .bind(event.client_id.as_ref().map(ClientId::as_str))
        .bind(Json(&event.detail))
}

fn audit_from(row: &PgRow) -> Result<AuditEvent> {
    Ok(AuditEvent {
        at: get(row, "at")?,
        kind: get(row, "kind")?,
        user_id: get::<Option<Uuid>>(row, "user_id")?.map(UserId::from),
        client_id: get::<Option<String>>(row, "client_id")?.map(ClientId::from),
        detail: get::<Json<serde_json::Value>>(row, "detail")?.0,
    })
}

#[async_trait]
impl AuditRepository for PgStore {
    async fn record_audit(&self, event: &AuditEvent) -> Result<()> {
        let query =
            sqlx::query("INSERT INTO audit_log (at, kind, user_id, client_id, detail) VALUES ($1, $2, $3, $4, $5)");
        bind_audit(query, event).execute(&mut *self.conn().await?).await.map_err(storage_error("audit event"))?;
        Ok(())
    }

    async fn recent_audit(&self, limit: u32) -> Result<Vec<AuditEvent>> {
        sqlx::query("SELECT * FROM audit_log ORDER BY id DESC LIMIT $1")
            .bind(i64::from(limit))
            .fetch_all(&mut *self.conn().await?)
            .await
            .map_err(storage_error("audit event"))?
            .iter()
            .map(audit_from)
            .collect()
    }
}
