//! The audit log.

use async_trait::async_trait;
use portico_model::audit::AuditEvent;
use portico_model::ids::{ClientId, UserId};
use portico_storage::{AuditEntry, AuditQuery, AuditRepository};
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
        actor: get(row, "actor")?,
    })
}

#[async_trait]
impl AuditRepository for PgStore {
    async fn record_audit(&self, event: &AuditEvent) -> Result<()> {
        let query = sqlx::query(
            "INSERT INTO audit_log (at, kind, user_id, client_id, detail, actor) VALUES ($1, $2, $3, $4, $5, $6)",
        );
        bind_audit(query, event)
            .bind(event.actor.as_deref())
            .execute(&mut *self.conn().await?)
            .await
            .map_err(storage_error("audit event"))?;
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

    async fn query_audit(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>> {
        let mut sql = String::from("SELECT * FROM audit_log WHERE true");
        let mut n = 0;
        let mut next = |condition: &str| {
            n += 1;
            format!(" AND {condition} ${n}")
        };
        if query.user_id.is_some() {
            sql.push_str(&next("user_id ="));
        }
        if query.client_id.is_some() {
            sql.push_str(&next("client_id ="));
        }
        if query.kind.is_some() {
            sql.push_str(&next("kind ="));
        }
        if query.actor.is_some() {
            sql.push_str(&next("actor ="));
        }
        if query.from.is_some() {
            sql.push_str(&next("at >="));
        }
        if query.to.is_some() {
            sql.push_str(&next("at <"));
        }
        if query.before.is_some() {
            sql.push_str(&next("id <"));
        }
        sql.push_str(&format!(" ORDER BY id DESC LIMIT {}", query.limit));
        let mut statement = sqlx::query(&sql);
        if let Some(user) = query.user_id {
            statement = statement.bind(user.as_uuid());
        }
        if let Some(client) = &query.client_id {
            statement = statement.bind(client.as_str());
        }
        if let Some(kind) = &query.kind {
            statement = statement.bind(kind);
        }
        if let Some(actor) = &query.actor {
            statement = statement.bind(actor);
        }
        if let Some(from) = query.from {
            statement = statement.bind(at(from));
        }
        if let Some(to) = query.to {
            statement = statement.bind(at(to));
        }
        if let Some(before) = query.before {
            statement = statement.bind(before);
        }
        statement
            .fetch_all(&mut *self.conn().await?)
            .await
            .map_err(storage_error("audit event"))?
            .iter()
            .map(|row| Ok(AuditEntry { id: get(row, "id")?, event: audit_from(row)? }))
            .collect()
    }
}
