//! The audit log.

use async_trait::async_trait;
use portico_model::audit::AuditEvent;
use portico_model::ids::{ClientId, UserId};
use portico_storage::AuditRepository;
use rusqlite::{Connection, Row, params};

use crate::db::{Columns, Res, all, run, secs, to_json};
use crate::{Result, SqliteStore};

/// Appends `event` to the log, in the caller's transaction.
pub(crate) fn insert_audit(conn: &Connection, event: &AuditEvent) -> Res<()> {
    run(
        conn,
        "INSERT INTO audit_log (at, kind, user_id, client_id, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            secs(event.at),
            event.kind,
            event.user_id.map(|id| id.to_string()),
            event.client_id.as_ref().map(ClientId::as_str),
            to_json(&event.detail)?
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
}
