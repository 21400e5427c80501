//! Single sign-on sessions.

use async_trait::async_trait;
use portico_model::audit::AuditEvent;
use portico_model::ids::{SessionHash, SessionId, UserId};
use portico_model::session::{EndedSession, SsoSession};
use portico_storage::SessionRepository;
use rusqlite::{Row, params};
use time::OffsetDateTime;

use crate::audit::insert_audit;
use crate::db::{Columns, Res, all, one, run, secs, words};
use crate::oauth::grant_from;
use crate::{Result, SqliteStore};

fn session_from(row: &Row<'_>) -> Res<SsoSession> {
    Ok(SsoSession {
        id: row.uuid("id")?.into(),
        token_hash: row.get::<_, String>("token_hash")?.into(),
        user_id: row.uuid("user_id")?.into(),
        auth_time: row.time("auth_time")?,
        created_at: row.time("created_at")?,
        expires_at: row.time("expires_at")?,
        amr: row.words("amr")?,
    })
}

#[async_trait]
impl SessionRepository for SqliteStore {
    async fn create_session(&self, session: &SsoSession) -> Result<()> {
        let s = session.clone();
        self.db
            .write("session", move |tx| {
                run(
                    tx,
                    "INSERT INTO sso_sessions (id, token_hash, user_id, auth_time, created_at, expires_at, amr) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![
                        s.id.to_string(),
                        s.token_hash.as_str(),
                        s.user_id.to_string(),
                        secs(s.auth_time),
                        secs(s.created_at),
                        secs(s.expires_at),
                        words(&s.amr)
                    ],
                )?;
                Ok(())
            })
            .await
    }

    async fn find_session(&self, token_hash: &SessionHash, now: OffsetDateTime) -> Result<Option<SsoSession>> {
        let token_hash = token_hash.as_str().to_owned();
        self.db
            .read(move |c| {
                let sql = "SELECT * FROM sso_sessions WHERE token_hash = ?1 AND expires_at > ?2";
                one(c, sql, params![token_hash, secs(now)], session_from)
            })
            .await
    }

    async fn find_session_by_id(&self, id: SessionId, now: OffsetDateTime) -> Result<Option<SsoSession>> {
        self.db
            .read(move |c| {
                let sql = "SELECT * FROM sso_sessions WHERE id = ?1 AND expires_at > ?2";
                one(c, sql, params![id.to_string(), secs(now)], session_from)
            })
            .await
    }

    async fn list_sessions(&self, user_id: UserId, now: OffsetDateTime) -> Result<Vec<SsoSession>> {
        self.db
            .read(move |c| {
                let sql = "SELECT * FROM sso_sessions WHERE user_id = ?1 AND expires_at > ?2 \
                           ORDER BY created_at DESC, id";
                all(c, sql, params![user_id.to_string(), secs(now)], session_from)
            })
            .await
    }

    async fn end_session(
        &self,
        id: SessionId,
        now: OffsetDateTime,
        audit: &AuditEvent,
    ) -> Result<Option<EndedSession>> {
        let audit = audit.clone();
        let ended = self
            .db
            .write("session", move |tx| {
                let sql = "DELETE FROM sso_sessions WHERE id = ?1 RETURNING *";
                let Some(session) = one(tx, sql, [id.to_string()], session_from)? else {
                    return Ok(None);
                };
                // Every live grant of the session comes back; only those of
                // clients that asked for it get a revocation time.
                let sql = "UPDATE grants SET revoked_at = CASE WHEN (SELECT logout_revokes_grants FROM clients c \
                           WHERE c.client_id = grants.client_id) THEN ?2 END \
                           WHERE session_id = ?1 AND revoked_at IS NULL RETURNING *";
                let mut grants = all(tx, sql, params![id.to_string(), secs(now)], grant_from)?;
                grants.sort_by_key(|g| (g.created_at, g.id));
                insert_audit(tx, &audit)?;
                Ok(Some(EndedSession { session, grants }))
            })
            .await?;
        if let (Some(memory), Some(ended)) = (self.memory(), &ended) {
            memory.grants_revoked(ended.grants.iter().filter(|g| g.revoked_at.is_some()).map(|g| g.id));
        }
        Ok(ended)
    }
}
