//! The audit log.

use async_trait::async_trait;
use portico_model::audit::AuditEvent;
use portico_model::ids::{ClientId, UserId};
use portico_storage::{AuditEntry, AuditQuery, AuditRepository};
use rusqlite::types::Value;
use rusqlite::{Connection, Row, params, params_from_iter};

use crate::db::{Columns, Res, all, run, secs, to_json};
use crate::{Result, SqliteStore};

/// Appends `event` to the log, in the caller's transaction.
pub(crate) fn insert_audit(conn: &Connection, event: &AuditEvent) -> Res<()> {
    run(
        conn,
        "INSERT INTO audit_log (at, kind, user_id, client_id, detail, actor) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            secs(event.at),
            event.kind,
            event.user_id.map(|id| id.to_string()),
            event.client_id.as_ref().map(ClientId::as_str),
            to_json(&event.detail)?,
            event.actor
        ],
    )?;
    Ok(())
}

fn audit_from(row: &Row<'_>) -> Res<AuditEvent> {
    Ok(AuditEvent {
        at: row.time("at")?,
        kind: row.get("kind")?,
        user_id: row.uuid_opt("user_id")?.map(UserId::from),
        client_id: row.get::<_, Option<String>>("client_id")?.map(ClientId::from),
        detail: row.json("detail")?,
        actor: row.get("actor")?,
    })
}

#[async_trait]
impl AuditRepository for SqliteStore {
    async fn record_audit(&self, event: &AuditEvent) -> Result<()> {
        let event = event.clone();
        self.db.write("audit event", move |tx| insert_audit(tx, &event)).await
    }

    async fn recent_audit(&self, limit: u32) -> Result<Vec<AuditEvent>> {
        self.db.read(move |c| all(c, "SELECT * FROM audit_log ORDER BY id DESC LIMIT ?1", [limit], audit_from)).await
    }

    async fn query_audit(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>> {
        let mut sql = String::from("SELECT * FROM audit_log WHERE 1");
        let mut values: Vec<Value> = Vec::new();
        let mut condition = |text: &str, value: Value| {
            values.push(value);
            sql.push_str(&format!(" AND {text} ?{}", values.len()));
        };
        if let Some(user) = query.user_id {
            condition("user_id =", Value::Text(user.to_string()));
        }
        if let Some(client) = &query.client_id {
            condition("client_id =", Value::Text(client.as_str().to_owned()));
        }
        if let Some(kind) = &query.kind {
            condition("kind =", Value::Text(kind.clone()));
        }
        if let Some(actor) = &query.actor {
            condition("actor =", Value::Text(actor.clone()));
        }
        if let Some(from) = query.from {
            condition("at >=", Value::Integer(secs(from)));
        }
        if let Some(to) = query.to {
            condition("at <", Value::Integer(secs(to)));
        }
        if let Some(before) = query.before {
            condition("id <", Value::Integer(before));
        }
        sql.push_str(&format!(" ORDER BY id DESC LIMIT {}", query.limit));
        self.db
            .read(move |c| {
                all(c, &sql, params_from_iter(values), |row| {
                    Ok(AuditEntry { id: row.get("id")?, event: audit_from(row)? })
                })
            })
            .await
    }
}
