//! Single sign-on sessions.

use async_trait::async_trait;
use portico_model::audit::AuditEvent;
use portico_model::ids::{SessionHash, SessionId, UserId};
use portico_model::session::{EndedSession, LogoutNotice, NoticeOutcome, SsoSession};
use portico_storage::SessionRepository;
use sqlx::postgres::PgRow;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::audit::bind_audit;
use crate::error::{again_if_rolled_back, storage_error};
use crate::oauth::grant_from;
use crate::{PgStore, Result, at, get};

fn session_from(row: &PgRow) -> Result<SsoSession> {
    Ok(SsoSession {
        id: get::<Uuid>(row, "id")?.into(),
        token_hash: get::<String>(row, "token_hash")?.into(),
        user_id: get::<Uuid>(row, "user_id")?.into(),
        auth_time: get(row, "auth_time")?,
        created_at: get(row, "created_at")?,
        expires_at: get(row, "expires_at")?,
        amr: get(row, "amr")?,
        user_agent: get(row, "user_agent")?,
    })
}

/// Ends session `id` within the transaction `tx`, as
/// [`SessionRepository::end_session`] does: `None` when it was gone.
pub(crate) async fn end_in(
    tx: &mut sqlx::PgConnection,
    id: SessionId,
    now: OffsetDateTime,
    audit: &AuditEvent,
) -> Result<Option<EndedSession>> {
    let Some(row) = sqlx::query("DELETE FROM sso_sessions WHERE id = $1 RETURNING *")
        .bind(id.as_uuid())
        .fetch_optional(&mut *tx)
        .await
        .map_err(storage_error("session"))?
    else {
        return Ok(None);
    };
    let session = session_from(&row)?;
    let mut grants = sqlx::query(
        "UPDATE grants g SET revoked_at = CASE WHEN c.logout_revokes_grants THEN $2 END \
         FROM clients c WHERE g.session_id = $1 AND g.revoked_at IS NULL AND c.client_id = g.client_id \
         RETURNING g.*",
    )
    .bind(id.as_uuid())
    .bind(at(now))
    .fetch_all(&mut *tx)
    .await
    .map_err(storage_error("grant"))?
    .iter()
    .map(grant_from)
    .collect::<Result<Vec<_>>>()?;
    grants.sort_by_key(|g| (g.created_at, g.id));
    // One notice per client with a back-channel address among the grants.
    let clients: Vec<&str> = grants.iter().map(|g| g.client_id.as_str()).collect();
    let notices = sqlx::query(
        "INSERT INTO logout_notices (id, client_id, uri, user_id, session_id, created_at, next_attempt_at) \
         SELECT gen_random_uuid(), client_id, backchannel_logout_uri, $2, $3, $4, $4 FROM clients \
         WHERE client_id = ANY($1) AND backchannel_logout_uri IS NOT NULL ON CONFLICT DO NOTHING",
    )
    .bind(&clients)
    .bind(session.user_id.as_uuid())
    .bind(id.as_uuid())
    .bind(at(now))
    .execute(&mut *tx)
    .await
    .map_err(storage_error("logout notice"))?
    .rows_affected();
    bind_audit(
        sqlx::query(
            "INSERT INTO audit_log (at, kind, user_id, client_id, detail, actor) VALUES ($1, $2, $3, $4, $5, $6)",
        ),
        audit,
    )
    .bind(audit.actor.as_deref())
    .execute(&mut *tx)
    .await
    .map_err(storage_error("audit"))?;
    Ok(Some(EndedSession { session, grants, notices: u32::try_from(notices).unwrap_or(u32::MAX) }))
}

/// Ends the live session whose cookie hashes to `presented`, replaced by
/// a new login (`by: "replaced"`), within `tx`
/// ([`portico_storage::LoginProcessRepository::complete_login_process`]).
pub(crate) async fn end_replaced(
    tx: &mut sqlx::PgConnection,
    presented: &SessionHash,
    now: OffsetDateTime,
) -> Result<Option<EndedSession>> {
    let Some(row) = sqlx::query("SELECT * FROM sso_sessions WHERE token_hash = $1 AND expires_at > $2")
        .bind(presented.as_str())
        .bind(at(now))
        .fetch_optional(&mut *tx)
        .await
        .map_err(storage_error("session"))?
    else {
        return Ok(None);
    };
    let session = session_from(&row)?;
    end_in(tx, session.id, now, &session.ended_event("replaced", now)).await
}

/// Ends the oldest of `kept`'s user's live sessions other than `kept`
/// until at most `limit` remain, `kept` among them, oldest first, within `tx`, which
/// holds the user's row locked
/// ([`portico_storage::LoginProcessRepository::complete_login_process`]).
pub(crate) async fn end_beyond_limit(
    tx: &mut sqlx::PgConnection,
    kept: &SsoSession,
    limit: u32,
    now: OffsetDateTime,
) -> Result<Vec<EndedSession>> {
    let beyond = sqlx::query(
        "SELECT * FROM sso_sessions WHERE user_id = $1 AND expires_at > $2 AND id <> $3 \
         ORDER BY created_at DESC, id DESC OFFSET $4",
    )
    .bind(kept.user_id.as_uuid())
    .bind(at(now))
    .bind(kept.id.as_uuid())
    .bind(i64::from(limit.saturating_sub(1)))
    .fetch_all(&mut *tx)
    .await
    .map_err(storage_error("session"))?;
    let mut ended = Vec::with_capacity(beyond.len());
    for row in beyond.iter().rev() {
        let session = session_from(row)?;
        ended.extend(end_in(tx, session.id, now, &session.ended_event("limit", now)).await?);
    }
    Ok(ended)
}

impl PgStore {
    /// One try of [`SessionRepository::end_session`].
    async fn end_session_once(
        &self,
        id: SessionId,
        now: OffsetDateTime,
        audit: &AuditEvent,
    ) -> Result<Option<EndedSession>> {
        let mut tx = self.begin().await?;
        let Some(ended) = end_in(&mut tx, id, now, audit).await? else {
            return Ok(None);
        };
        tx.commit().await.map_err(storage_error("session"))?;
        if let Some(memory) = self.memory() {
            memory.grants_revoked(ended.revoked_grants().map(|g| g.id));
        }
        Ok(Some(ended))
    }
}

#[async_trait]
impl SessionRepository for PgStore {
    async fn create_session(&self, session: &SsoSession) -> Result<()> {
        sqlx::query(
            "INSERT INTO sso_sessions (id, token_hash, user_id, auth_time, created_at, expires_at, amr, user_agent) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(session.id.as_uuid())
        .bind(session.token_hash.as_str())
        .bind(session.user_id.as_uuid())
        .bind(at(session.auth_time))
        .bind(at(session.created_at))
        .bind(at(session.expires_at))
        .bind(&session.amr)
        .bind(session.user_agent.as_deref())
        .execute(&mut *self.conn().await?)
        .await
        .map_err(storage_error("session"))?;
        Ok(())
    }

    async fn find_session(&self, token_hash: &SessionHash, now: OffsetDateTime) -> Result<Option<SsoSession>> {
        sqlx::query("SELECT * FROM sso_sessions WHERE token_hash = $1 AND expires_at > $2")
            .bind(token_hash.as_str())
            .bind(at(now))
            .fetch_optional(&mut *self.conn().await?)
            .await
            .map_err(storage_error("session"))?
            .as_ref()
            .map(session_from)
            .transpose()
    }

    async fn find_session_by_id(&self, id: SessionId, now: OffsetDateTime) -> Result<Option<SsoSession>> {
        sqlx::query("SELECT * FROM sso_sessions WHERE id = $1 AND expires_at > $2")
            .bind(id.as_uuid())
            .bind(at(now))
            .fetch_optional(&mut *self.conn().await?)
            .await
            .map_err(storage_error("session"))?
            .as_ref()
            .map(session_from)
            .transpose()
    }

    async fn list_sessions(&self, user_id: UserId, now: OffsetDateTime) -> Result<Vec<SsoSession>> {
        let rows = sqlx::query(
            "SELECT * FROM sso_sessions WHERE user_id = $1 AND expires_at > $2 ORDER BY created_at DESC, id",
        )
        .bind(user_id.as_uuid())
        .bind(at(now))
        .fetch_all(&mut *self.conn().await?)
        .await
        .map_err(storage_error("session"))?;
        rows.iter().map(session_from).collect()
    }

    async fn end_session(
        &self,
        id: SessionId,
        now: OffsetDateTime,
        audit: &AuditEvent,
    ) -> Result<Option<EndedSession>> {
        again_if_rolled_back("session_end", || self.end_session_once(id, now, audit)).await
    }

    async fn claim_logout_notices(
        &self,
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
        limit: u32,
    ) -> Result<Vec<LogoutNotice>> {
        let rows = sqlx::query(
            "UPDATE logout_notices SET lease_until = $2 WHERE id IN (SELECT id FROM logout_notices \
             WHERE next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1) \
             ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED) RETURNING *",
        )
        .bind(at(now))
        .bind(at(lease_until))
        .bind(i64::from(limit))
        .fetch_all(&mut *self.conn().await?)
        .await
        .map_err(storage_error("logout notice"))?;
        let mut notices = rows.iter().map(notice_from).collect::<Result<Vec<_>>>()?;
        notices.sort_by_key(|n| (n.next_attempt_at, n.id));
        Ok(notices)
    }

    async fn finish_logout_notice(
        &self,
        id: Uuid,
        leased_until: OffsetDateTime,
        outcome: &NoticeOutcome,
    ) -> Result<bool> {
        let done = match outcome {
            NoticeOutcome::Done => sqlx::query("DELETE FROM logout_notices WHERE id = $1 AND lease_until = $2")
                .bind(id)
                .bind(at(leased_until)),
            NoticeOutcome::Retry { at: next, error } => sqlx::query(
                "UPDATE logout_notices SET next_attempt_at = $3, attempts = attempts + 1, lease_until = NULL, \
                 last_error = $4 WHERE id = $1 AND lease_until = $2",
            )
            .bind(id)
            .bind(at(leased_until))
            .bind(at(*next))
            .bind(error),
        }
        .execute(&mut *self.conn().await?)
        .await
        .map_err(storage_error("logout notice"))?;
        Ok(done.rows_affected() > 0)
    }
}

fn notice_from(row: &PgRow) -> Result<LogoutNotice> {
    Ok(LogoutNotice {
        id: get(row, "id")?,
        client_id: get::<String>(row, "client_id")?.into(),
        uri: get(row, "uri")?,
        user_id: get::<Uuid>(row, "user_id")?.into(),
        session_id: get::<Uuid>(row, "session_id")?.into(),
        created_at: get(row, "created_at")?,
        next_attempt_at: get(row, "next_attempt_at")?,
        attempts: u32::try_from(get::<i32>(row, "attempts")?).unwrap_or(0),
        lease_until: get(row, "lease_until")?,
        last_error: get(row, "last_error")?,
    })
}
