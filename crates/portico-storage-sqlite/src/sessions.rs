//! Single sign-on sessions.

use async_trait::async_trait;
use portico_model::ids::SessionHash;
use portico_model::session::SsoSession;
use portico_storage::SessionRepository;
use rusqlite::{Row, params};
use time::OffsetDateTime;

use crate::db::{Columns, Res, one, run, secs, words};
use crate::{Result, SqliteStore};

fn session_from(row: &Row<'_>) -> Res<SsoSession> {
    Ok(SsoSession {
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
                    "INSERT INTO sso_sessions (token_hash, user_id, auth_time, created_at, expires_at, amr) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![
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

    async fn delete_session(&self, token_hash: &SessionHash) -> Result<()> {
        let token_hash = token_hash.as_str().to_owned();
        self.db
            .write("session", move |tx| {
                run(tx, "DELETE FROM sso_sessions WHERE token_hash = ?1", [token_hash])?;
                Ok(())
            })
            .await
    }
}
