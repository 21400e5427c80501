//! Single sign-on sessions.

use async_trait::async_trait;
use portico_model::audit::AuditEvent;
use portico_model::ids::{SessionHash, SessionId, UserId};
use portico_model::session::{EndedSession, LogoutNotice, NoticeOutcome, SsoSession};
use portico_storage::SessionRepository;
use rusqlite::{Row, params};
use time::OffsetDateTime;
use uuid::Uuid;

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
        user_agent: row.get("user_agent")?,
    })
}

pub(crate) fn insert_session(tx: &rusqlite::Connection, s: &SsoSession) -> Res<()> {
    run(
        tx,
        "INSERT INTO sso_sessions (id, token_hash, user_id, auth_time, created_at, expires_at, amr, user_agent) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            s.id.to_string(),
            s.token_hash.as_str(),
            s.user_id.to_string(),
            secs(s.auth_time),
            secs(s.created_at),
            secs(s.expires_at),
            words(&s.amr),
            s.user_agent
        ],
    )?;
    Ok(())
}

/// Ends session `id` within the transaction `tx`, as
/// [`SessionRepository::end_session`] does: `None` when it was gone.
pub(crate) fn end_in(
    tx: &rusqlite::Connection,
    id: SessionId,
    now: OffsetDateTime,
    audit: &AuditEvent,
) -> Res<Option<EndedSession>> {
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
    let mut notices = 0;
    let mut clients: Vec<&str> = grants.iter().map(|g| g.client_id.as_str()).collect();
    clients.sort_unstable();
    clients.dedup();
    for client_id in clients {
        let sql = "SELECT backchannel_logout_uri FROM clients WHERE client_id = ?1";
        let Some(Some(uri)) = one(tx, sql, [client_id], |row| Ok(row.get::<_, Option<String>>(0)?))? else {
            continue;
        };
        notices += run(
            tx,
            "INSERT INTO logout_notices (id, client_id, uri, user_id, session_id, created_at, \
                 next_attempt_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6) ON CONFLICT DO NOTHING",
            params![Uuid::now_v7().to_string(), client_id, uri, session.user_id.to_string(), id.to_string(), secs(now)],
        )?;
    }
    insert_audit(tx, audit)?;
    let notices = u32::try_from(notices).unwrap_or(u32::MAX);
    Ok(Some(EndedSession { session, grants, notices }))
}

/// Ends the live session whose cookie hashes to `presented`, replaced by
/// a new login (`by: "replaced"`), within `tx`
/// ([`portico_storage::LoginProcessRepository::complete_login_process`]).
pub(crate) fn end_replaced(
    tx: &rusqlite::Connection,
    presented: &SessionHash,
    now: OffsetDateTime,
) -> Res<Option<EndedSession>> {
    let sql = "SELECT * FROM sso_sessions WHERE token_hash = ?1 AND expires_at > ?2";
    let Some(session) = one(tx, sql, params![presented.as_str(), secs(now)], session_from)? else {
        return Ok(None);
    };
    end_in(tx, session.id, now, &session.ended_event("replaced", now))
}

/// Ends the oldest of `user_id`'s live sessions other than `kept` until at
/// most `limit` remain, `kept` among them, oldest first, within `tx`
/// ([`portico_storage::LoginProcessRepository::complete_login_process`]).
pub(crate) fn end_beyond_limit(
    tx: &rusqlite::Connection,
    kept: &SsoSession,
    limit: u32,
    now: OffsetDateTime,
) -> Res<Vec<EndedSession>> {
    let sql = "SELECT * FROM sso_sessions WHERE user_id = ?1 AND expires_at > ?2 AND id <> ?3 \
               ORDER BY created_at DESC, rowid DESC LIMIT -1 OFFSET ?4";
    let others = limit.saturating_sub(1);
    let mut beyond =
        all(tx, sql, params![kept.user_id.to_string(), secs(now), kept.id.to_string(), others], session_from)?;
    beyond.reverse();
    let mut ended = Vec::with_capacity(beyond.len());
    for session in beyond {
        ended.extend(end_in(tx, session.id, now, &session.ended_event("limit", now))?);
    }
    Ok(ended)
}

#[async_trait]
impl SessionRepository for SqliteStore {
    async fn create_session(&self, session: &SsoSession) -> Result<()> {
        let s = session.clone();
        self.db.write("session", move |tx| insert_session(tx, &s)).await
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
        let ended = self.db.write("session", move |tx| end_in(tx, id, now, &audit)).await?;
        if let (Some(memory), Some(ended)) = (self.memory(), &ended) {
            memory.grants_revoked(ended.revoked_grants().map(|g| g.id));
        }
        Ok(ended)
    }

    async fn claim_logout_notices(
        &self,
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
        limit: u32,
    ) -> Result<Vec<LogoutNotice>> {
        self.db
            .write("logout notice", move |tx| {
                let sql = "UPDATE logout_notices SET lease_until = ?2 WHERE id IN (SELECT id FROM logout_notices \
                           WHERE next_attempt_at <= ?1 AND (lease_until IS NULL OR lease_until <= ?1) \
                           ORDER BY next_attempt_at, id LIMIT ?3) RETURNING *";
                let mut notices = all(tx, sql, params![secs(now), secs(lease_until), limit], notice_from)?;
                notices.sort_by_key(|n| (n.next_attempt_at, n.id));
                Ok(notices)
            })
            .await
    }

    async fn finish_logout_notice(
        &self,
        id: Uuid,
        leased_until: OffsetDateTime,
        outcome: &NoticeOutcome,
    ) -> Result<bool> {
        let outcome = outcome.clone();
        self.db
            .write("logout notice", move |tx| {
                let changed = match outcome {
                    NoticeOutcome::Done => run(
                        tx,
                        "DELETE FROM logout_notices WHERE id = ?1 AND lease_until = ?2",
                        params![id.to_string(), secs(leased_until)],
                    )?,
                    NoticeOutcome::Retry { at, error } => run(
                        tx,
                        "UPDATE logout_notices SET next_attempt_at = ?3, attempts = attempts + 1, lease_until = NULL, \
                         last_error = ?4 WHERE id = ?1 AND lease_until = ?2",
                        params![id.to_string(), secs(leased_until), secs(at), error],
                    )?,
                };
                Ok(changed > 0)
            })
            .await
    }
}

fn notice_from(row: &Row<'_>) -> Res<LogoutNotice> {
    Ok(LogoutNotice {
        id: row.uuid("id")?,
        client_id: row.get::<_, String>("client_id")?.into(),
        uri: row.get("uri")?,
        user_id: row.uuid("user_id")?.into(),
        session_id: row.uuid("session_id")?.into(),
        created_at: row.time("created_at")?,
        next_attempt_at: row.time("next_attempt_at")?,
        attempts: row.get("attempts")?,
        lease_until: row.time_opt("lease_until")?,
        last_error: row.get("last_error")?,
    })
}
