//! The token endpoint's two write transactions (redeem a code, rotate a
//! refresh token) on one synchronous writer connection.
//!
//! SQLite has one writer at a time, and the store's other writes go through
//! sqlx's single writer connection. The two never wait for each other on the
//! calling thread: this connection does not retry on a locked database
//! (`busy_timeout = 0`) and answers `None` instead, and the caller then runs
//! the same transaction on sqlx's writer, which waits for the lock on its own
//! thread. Both run the same SQL text (`portico_storage_sql::queries`), so the
//! outcome never depends on the path a request took.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use portico_model::audit::AuditEvent;
use portico_model::oauth::{Grant, Redemption, RefreshToken, Rotation};
use portico_storage::Result;
use portico_storage_sql::rows::Columns as _;
use portico_storage_sql::{queries, to_json, uuid};
use rusqlite::{Connection, ErrorCode, Transaction, TransactionBehavior};
use time::OffsetDateTime;

use crate::checkpoint;
use crate::fast::{FastPath, fail, named, one, open};

pub struct TokenWriter {
    conn: Mutex<Connection>,
}

/// What a transaction body decided.
enum Outcome<T> {
    Commit(T),
    Rollback(T),
}

impl TokenWriter {
    /// The writer connection to the database file at `path`.
    pub fn open(path: &Path) -> Result<Self> {
        let conn = open(path)?;
        conn.busy_timeout(Duration::ZERO).map_err(fail)?;
        // Per-connection settings, the same as the sqlx connections'.
        conn.pragma_update(None, "foreign_keys", true).map_err(fail)?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(fail)?;
        conn.pragma_update(None, "wal_autocheckpoint", checkpoint::WRITER_BOUND).map_err(fail)?;
        Ok(Self { conn: Mutex::new(conn) })
    }

    /// Runs `body` in an immediate transaction; `None` when another
    /// connection holds the write lock.
    fn transaction<T>(&self, body: impl FnOnce(&Transaction<'_>) -> Result<Outcome<T>>) -> Result<Option<T>> {
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
            Ok(tx) => tx,
            Err(rusqlite::Error::SqliteFailure(code, _))
                if matches!(code.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) =>
            {
                return Ok(None);
            }
            Err(other) => return Err(fail(other)),
        };
        match body(&tx)? {
            Outcome::Commit(done) => {
                tx.commit().map_err(fail)?;
                Ok(Some(done))
            }
            // Dropping the transaction rolls it back.
            Outcome::Rollback(done) => Ok(Some(done)),
        }
    }
}

/// The token writes of the fast path; `None` when another connection holds
/// the write lock.
impl FastPath {
    pub fn redeem_code(
        &self,
        code_hash: &str,
        now: OffsetDateTime,
        grant: &Grant,
        refresh: &RefreshToken,
        audit: &AuditEvent,
    ) -> Result<Option<Redemption>> {
        self.writer.transaction(|tx| {
            let grant_id = grant.id.to_string();
            if execute(tx, queries::SPEND_CODE_FOR_GRANT, &[&code_hash, &now.unix_timestamp(), &grant_id])? == 0 {
                let first = one(tx, queries::CODE_GRANT, &[&code_hash], |row| row.text_opt("grant_id"))?.flatten();
                let grant_id = first.as_deref().map(uuid).transpose()?;
                return Ok(Outcome::Rollback(Redemption::Replay { grant_id }));
            }
            execute(
                tx,
                queries::INSERT_GRANT,
                &[
                    &grant_id,
                    &grant.client_id,
                    &grant.user_id.to_string(),
                    &grant.scope,
                    &grant.auth_time.unix_timestamp(),
                    &grant.created_at.unix_timestamp(),
                    &grant.revoked_at.map(OffsetDateTime::unix_timestamp),
                    &grant.amr.join(" "),
                ],
            )?;
            insert_refresh(tx, refresh)?;
            insert_audit(tx, audit)?;
            Ok(Outcome::Commit(Redemption::Redeemed))
        })
    }

    pub fn rotate_refresh_token(
        &self,
        old_hash: &str,
        now: OffsetDateTime,
        successor: &RefreshToken,
        audit: &AuditEvent,
    ) -> Result<Option<Rotation>> {
        self.writer.transaction(|tx| {
            if execute(tx, queries::SPEND_REFRESH_TOKEN_FOR_SUCCESSOR, &[&old_hash, &now.unix_timestamp()])? == 0 {
                return Ok(Outcome::Rollback(Rotation::Replay));
            }
            if !insert_refresh(tx, successor)? {
                return Ok(Outcome::Rollback(Rotation::GrantRevoked));
            }
            insert_audit(tx, audit)?;
            Ok(Outcome::Commit(Rotation::Rotated))
        })
    }
}

/// Runs `sql` with `$1`, `$2`… bound to `params`: the rows it changed.
fn execute(conn: &Connection, sql: &str, params: &[&dyn rusqlite::ToSql]) -> Result<usize> {
    conn.prepare_cached(sql).map_err(fail)?.execute(named(params).as_slice()).map_err(fail)
}

/// Whether the token was stored (its grant is live).
fn insert_refresh(conn: &Connection, token: &RefreshToken) -> Result<bool> {
    let params: [&dyn rusqlite::ToSql; 4] = [
        &token.token_hash,
        &token.grant_id.to_string(),
        &token.created_at.unix_timestamp(),
        &token.expires_at.unix_timestamp(),
    ];
    Ok(execute(conn, queries::INSERT_REFRESH_TOKEN, &params)? > 0)
}

fn insert_audit(conn: &Connection, event: &AuditEvent) -> Result<()> {
    execute(
        conn,
        queries::INSERT_AUDIT,
        &[
            &event.at.unix_timestamp(),
            &event.kind,
            &event.user_id.map(|id| id.to_string()),
            &event.client_id,
            &to_json(&event.detail)?,
        ],
    )?;
    Ok(())
}
