//! Single sign-on sessions.

use async_trait::async_trait;
use portico_model::ids::SessionHash;
use portico_model::session::SsoSession;
use portico_storage::SessionRepository;
use sqlx::postgres::PgRow;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::error::storage_error;
use crate::{PgStore, Result, at, get};

fn session_from(row: &PgRow) -> Result<SsoSession> {
    Ok(SsoSession {
        token_hash: get::<String>(row, "token_hash")?.into(),
        user_id: get::<Uuid>(row, "user_id")?.into(),
        auth_time: get(row, "auth_time")?,
        created_at: get(row, "created_at")?,
        expires_at: get(row, "expires_at")?,
        amr: get(row, "amr")?,
    })
}

#[async_trait]
impl SessionRepository for PgStore {
    async fn create_session(&self, session: &SsoSession) -> Result<()> {
        sqlx::query(
            "INSERT INTO sso_sessions (token_hash, user_id, auth_time, created_at, expires_at, amr) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(session.token_hash.as_str())
        .bind(session.user_id.as_uuid())
        .bind(at(session.auth_time))
        .bind(at(session.created_at))
        .bind(at(session.expires_at))
        .bind(&session.amr)
        .execute(&self.pool)
        .await
        .map_err(storage_error("session"))?;
        Ok(())
    }

    async fn find_session(&self, token_hash: &SessionHash, now: OffsetDateTime) -> Result<Option<SsoSession>> {
        sqlx::query("SELECT * FROM sso_sessions WHERE token_hash = $1 AND expires_at > $2")
            .bind(token_hash.as_str())
            .bind(at(now))
            .fetch_optional(&self.pool)
            .await
            .map_err(storage_error("session"))?
            .as_ref()
            .map(session_from)
            .transpose()
    }

    async fn delete_session(&self, token_hash: &SessionHash) -> Result<()> {
        sqlx::query("DELETE FROM sso_sessions WHERE token_hash = $1")
            .bind(token_hash.as_str())
            .execute(&self.pool)
            .await
            .map_err(storage_error("session"))?;
        Ok(())
    }
}
