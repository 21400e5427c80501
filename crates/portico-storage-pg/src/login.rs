//! The browser login's storage: login processes (optimistically versioned),
//! trusted devices, consents, and the throttle counters of password
//! attempts.

use async_trait::async_trait;
use portico_model::audit::AuditEvent;
use portico_model::ids::{ClientId, LoginProcessId, SessionHash, UserId};
use portico_model::login::{LoginProcess, LoginState};
use portico_model::session::{EndedSession, TrustedDevice};
use portico_storage::{
    CompletedLogin, ConsentRepository, CountAttempt, DeviceRepository, LoginCompletion, LoginGuardRepository,
    LoginProcessRepository, Throttle,
};
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::error::{again_if_rolled_back, storage_error};
use crate::{PgStore, Result, at, at_opt, count, get, int};

fn process_from(row: &PgRow) -> Result<LoginProcess> {
    Ok(LoginProcess {
        id: get::<Uuid>(row, "id")?.into(),
        version: get(row, "version")?,
        created_at: get(row, "created_at")?,
        expires_at: get(row, "expires_at")?,
        state: get::<Json<LoginState>>(row, "state")?.0,
    })
}

#[async_trait]
impl LoginProcessRepository for PgStore {
    async fn create_login_process(&self, process: &LoginProcess) -> Result<()> {
        sqlx::query(
            "INSERT INTO login_processes (id, version, state, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(process.id.as_uuid())
        .bind(process.version)
        .bind(Json(&process.state))
        .bind(at(process.created_at))
        .bind(at(process.expires_at))
        .execute(&mut *self.conn().await?)
        .await
        .map_err(storage_error("login process"))?;
        Ok(())
    }

    async fn create_login_process_taking(&self, process: &LoginProcess, request_hash: &str) -> Result<bool> {
        // The process is inserted only when the pushed request it serves
        // was there to take: one row, or none.
        let make = || {
            sqlx::query(
                "WITH taken AS (DELETE FROM pushed_requests WHERE request_hash = $6 AND client_id = $7 \
                 AND expires_at > $4 RETURNING 1) \
                 INSERT INTO login_processes (id, version, state, created_at, expires_at) \
                 SELECT $1, $2, $3, $4, $5 WHERE EXISTS (SELECT 1 FROM taken)",
            )
            .bind(process.id.as_uuid())
            .bind(process.version)
            .bind(Json(&process.state))
            .bind(at(process.created_at))
            .bind(at(process.expires_at))
            .bind(request_hash)
            .bind(process.state.client_id.as_str())
        };
        let stored = async { Ok(self.find_login_process(process.id, process.created_at).await?.is_some()) };
        crate::oauth::take_pushed_settled(self, "login process", "pushed_login_process", make, stored).await
    }

    async fn find_login_process(&self, id: LoginProcessId, now: OffsetDateTime) -> Result<Option<LoginProcess>> {
        sqlx::query("SELECT * FROM login_processes WHERE id = $1 AND expires_at > $2")
            .bind(id.as_uuid())
            .bind(at(now))
            .fetch_optional(&mut *self.conn().await?)
            .await
            .map_err(storage_error("login process"))?
            .as_ref()
            .map(process_from)
            .transpose()
    }

    async fn update_login_process(&self, process: &LoginProcess) -> Result<bool> {
        // Sent until answered (docs/decisions.md, "A write whose answer was
        // lost"): answered 503, a step that stored a one-time code would
        // leave it stored and never sent. A second sending finds the
        // version moved if the first committed; the state stored then
        // tells whether the first sending was this one.
        let send = || async move {
            let update = sqlx::query(
                "UPDATE login_processes SET state = $3, expires_at = $4, version = version + 1 \
                 WHERE id = $1 AND version = $2",
            )
            .bind(process.id.as_uuid())
            .bind(process.version)
            .bind(Json(&process.state))
            .bind(at(process.expires_at));
            Ok(crate::oauth::execute_once(self, "login process", "login_process", update).await?.map(|rows| rows > 0))
        };
        let (updated, sent_again) = crate::oauth::until_answered("login_process", send).await?;
        if !sent_again || updated {
            return Ok(updated);
        }
        let stored = sqlx::query("SELECT * FROM login_processes WHERE id = $1")
            .bind(process.id.as_uuid())
            .fetch_optional(&mut *self.conn().await?)
            .await
            .map_err(storage_error("login process"))?
            .as_ref()
            .map(process_from)
            .transpose()?;
        // Compared as stored: times keep whole seconds there.
        let as_stored = |state: &LoginState| serde_json::to_value(state).ok();
        Ok(stored.is_some_and(|stored| {
            stored.version == process.version + 1 && as_stored(&stored.state) == as_stored(&process.state)
        }))
    }

    async fn complete_login_process(&self, completion: &LoginCompletion<'_>) -> Result<Option<CompletedLogin>> {
        again_if_rolled_back("login_completion", || self.complete_login_once(completion)).await
    }

    async fn delete_login_process(&self, id: LoginProcessId) -> Result<()> {
        sqlx::query("DELETE FROM login_processes WHERE id = $1")
            .bind(id.as_uuid())
            .execute(&mut *self.conn().await?)
            .await
            .map_err(storage_error("login process"))?;
        Ok(())
    }
}

/// Whether the completion's statement failed for a row it refers to that
/// is gone (SQLSTATE 23503): the user, deleted while signing in, whose
/// session and device could not be stored. Nothing of it was.
fn user_gone(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db) if db.is_foreign_key_violation())
}

impl PgStore {
    /// One try of [`LoginProcessRepository::complete_login_process`].
    async fn complete_login_once(&self, completion: &LoginCompletion<'_>) -> Result<Option<CompletedLogin>> {
        // One statement: the process is saved only if its version still
        // matches, and the session, the device and the audit entry are
        // inserted only from that saved row, so it is all or nothing. A
        // session opened makes it a transaction in which that statement
        // also takes the user's row (`locked`): completions for one user
        // take turns from there to the commit, so the statements after it
        // see the sessions of those before (each statement reads what was
        // committed when it starts), and those beyond the limit end in it.
        // The lock rides in the statement rather than in one of its own:
        // a round trip less for every login. The user of the session the
        // browser presented is locked with it, both in the order of their
        // ids: two browsers that swap two users at once each end the
        // session the other keeps, and would otherwise each hold one
        // session and wait for the other's (a deadlock the server breaks
        // by failing one login).
        let (process, session) = (completion.process, completion.session);
        let query = sqlx::query(
            "WITH saved AS (
                 UPDATE login_processes SET state = $3, expires_at = $4, version = version + 1
                 WHERE id = $1 AND version = $2 RETURNING 1
             ), session AS (
                 INSERT INTO sso_sessions (id, token_hash, user_id, auth_time, created_at, expires_at, amr, user_agent)
                 SELECT $5, $6, $7, $8, $9, $10, $11, $12 FROM saved WHERE $5::uuid IS NOT NULL
             ), device AS (
                 INSERT INTO trusted_devices (user_id, device_id, trusted_at, user_agent)
                 SELECT $13, $14, $15, $16 FROM saved WHERE $14::text IS NOT NULL
                 ON CONFLICT (user_id, device_id)
                 DO UPDATE SET trusted_at = excluded.trusted_at, user_agent = excluded.user_agent
             ), untrusted AS (
                 DELETE FROM trusted_devices WHERE user_id = $13 AND EXISTS (SELECT 1 FROM saved)
                 AND device_id IN (SELECT device_id FROM trusted_devices WHERE user_id = $13 AND device_id <> $14
                                   ORDER BY trusted_at DESC, device_id DESC OFFSET $23)
             ), audit AS (
                 INSERT INTO audit_log (at, kind, user_id, client_id, detail, actor)
                 SELECT $17, $18, $19, $20, $21, $22 FROM saved
             ), locked AS (
                 SELECT 1 FROM users
                 WHERE id = $7 OR id = (SELECT user_id FROM sso_sessions WHERE token_hash = $24)
                 ORDER BY id FOR NO KEY UPDATE
             )
             SELECT (SELECT count(*) FROM saved) AS saved, (SELECT count(*) FROM locked) AS locked",
        )
        .bind(process.id.as_uuid())
        .bind(process.version)
        .bind(Json(&process.state))
        .bind(at(process.expires_at))
        .bind(session.map(|s| s.id.as_uuid()))
        .bind(session.map(|s| s.token_hash.as_str()))
        .bind(session.map(|s| s.user_id.as_uuid()))
        .bind(session.map(|s| at(s.auth_time)))
        .bind(session.map(|s| at(s.created_at)))
        .bind(session.map(|s| at(s.expires_at)))
        .bind(session.map(|s| &s.amr))
        .bind(session.and_then(|s| s.user_agent.as_deref()))
        .bind(completion.trusted_device.map(|(user, _)| user.as_uuid()))
        .bind(completion.trusted_device.map(|(_, device)| device))
        .bind(at(completion.now))
        .bind(completion.user_agent);
        let query = crate::audit::bind_audit(query, completion.audit)
            .bind(completion.audit.actor.as_deref())
            .bind(i64::from(completion.device_limit.saturating_sub(1)))
            .bind(completion.replaces.map(SessionHash::as_str));
        let Some(session) = session else {
            let row = match query.fetch_one(&mut *self.conn().await?).await {
                Err(error) if user_gone(&error) => return Ok(None),
                row => row.map_err(storage_error("login process"))?,
            };
            return Ok((get::<i64>(&row, "saved")? > 0).then(CompletedLogin::default));
        };
        let mut tx = self.begin().await?;
        let row = match query.fetch_one(&mut *tx).await {
            Err(error) if user_gone(&error) => return Ok(None),
            row => row.map_err(storage_error("login process"))?,
        };
        if get::<i64>(&row, "saved")? == 0 {
            return Ok(None);
        }
        let replaced = match completion.replaces {
            Some(presented) => crate::sessions::end_replaced(&mut tx, presented, completion.now).await?,
            None => None,
        };
        let beyond_limit =
            crate::sessions::end_beyond_limit(&mut tx, session, completion.session_limit, completion.now).await?;
        tx.commit().await.map_err(storage_error("login process"))?;
        let completed = CompletedLogin { replaced, beyond_limit };
        if let Some(memory) = self.memory() {
            memory.grants_revoked(completed.ended().flat_map(EndedSession::revoked_grants).map(|g| g.id));
        }
        Ok(Some(completed))
    }
}

#[async_trait]
impl DeviceRepository for PgStore {
    async fn trust_device(&self, user_id: UserId, device_id: &str, now: OffsetDateTime) -> Result<()> {
        sqlx::query(
            "INSERT INTO trusted_devices (user_id, device_id, trusted_at) VALUES ($1, $2, $3) \
             ON CONFLICT (user_id, device_id) DO UPDATE SET trusted_at = excluded.trusted_at",
        )
        .bind(user_id.as_uuid())
        .bind(device_id)
        .bind(at(now))
        .execute(&mut *self.conn().await?)
        .await
        .map_err(storage_error("trusted device"))?;
        Ok(())
    }

    async fn is_device_trusted(&self, user_id: UserId, device_id: &str, not_before: OffsetDateTime) -> Result<bool> {
        sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM trusted_devices \
             WHERE user_id = $1 AND device_id = $2 AND trusted_at >= $3)",
        )
        .bind(user_id.as_uuid())
        .bind(device_id)
        .bind(at(not_before))
        .fetch_one(&mut *self.conn().await?)
        .await
        .map_err(storage_error("trusted device"))
    }
    async fn trusted_devices(&self, user_id: UserId, not_before: OffsetDateTime) -> Result<Vec<TrustedDevice>> {
        let rows = sqlx::query(
            "SELECT device_id, trusted_at, user_agent FROM trusted_devices \
             WHERE user_id = $1 AND trusted_at >= $2 ORDER BY trusted_at DESC, device_id",
        )
        .bind(user_id.as_uuid())
        .bind(at(not_before))
        .fetch_all(&mut *self.conn().await?)
        .await
        .map_err(storage_error("trusted device"))?;
        rows.iter()
            .map(|row| {
                Ok(TrustedDevice {
                    device_id: get(row, "device_id")?,
                    trusted_at: get(row, "trusted_at")?,
                    user_agent: get(row, "user_agent")?,
                })
            })
            .collect()
    }

    async fn forget_device(&self, user_id: UserId, device_id: &str, audit: &AuditEvent) -> Result<bool> {
        let query = sqlx::query(
            "WITH gone AS (DELETE FROM trusted_devices WHERE user_id = $1 AND device_id = $2 RETURNING 1), \
             audit AS (INSERT INTO audit_log (at, kind, user_id, client_id, detail, actor) \
                       SELECT $3, $4, $5, $6, $7, $8 FROM gone) \
             SELECT count(*) AS gone FROM gone",
        )
        .bind(user_id.as_uuid())
        .bind(device_id);
        let row = crate::audit::bind_audit(query, audit)
            .bind(audit.actor.as_deref())
            .fetch_one(&mut *self.conn().await?)
            .await
            .map_err(storage_error("trusted device"))?;
        Ok(get::<i64>(&row, "gone")? > 0)
    }

    async fn remove_expired_devices(&self, trusted_before: OffsetDateTime) -> Result<u64> {
        let removed = sqlx::query("DELETE FROM trusted_devices WHERE trusted_at < $1")
            .bind(at(trusted_before))
            .execute(&mut *self.conn().await?)
            .await
            .map_err(storage_error("trusted device"))?;
        Ok(removed.rows_affected())
    }
}

#[async_trait]
impl ConsentRepository for PgStore {
    async fn find_consent(&self, user_id: UserId, client_id: &ClientId) -> Result<Option<Vec<String>>> {
        sqlx::query_scalar("SELECT scope_groups FROM consents WHERE user_id = $1 AND client_id = $2")
            .bind(user_id.as_uuid())
            .bind(client_id.as_str())
            .fetch_optional(&mut *self.conn().await?)
            .await
            .map_err(storage_error("consent"))
    }

    async fn grant_consent(
        &self,
        user_id: UserId,
        client_id: &ClientId,
        groups: &[String],
        now: OffsetDateTime,
    ) -> Result<()> {
        sqlx::query(
            "INSERT INTO consents (user_id, client_id, scope_groups, granted_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (user_id, client_id) DO UPDATE SET scope_groups = excluded.scope_groups, \
             granted_at = excluded.granted_at",
        )
        .bind(user_id.as_uuid())
        .bind(client_id.as_str())
        .bind(groups)
        .bind(at(now))
        .execute(&mut *self.conn().await?)
        .await
        .map_err(storage_error("consent"))?;
        Ok(())
    }
}

/// How many keys one throttle statement names. They are passed as that
/// many parameters (the unused ones empty, which no key is) rather than as
/// one array: PostgreSQL estimates an array parameter at ten elements, so
/// a plan made for any keys looked dearer than one made for the keys at
/// hand, and it planned every call anew (which cost as much as running
/// it). With fixed parameters it plans a statement once per connection.
const KEYS_AT_ONCE: usize = 4;

/// `keys` (at most [`KEYS_AT_ONCE`]) padded with empty names.
fn padded<'a>(keys: &[&'a str]) -> [&'a str; KEYS_AT_ONCE] {
    debug_assert!(keys.len() <= KEYS_AT_ONCE);
    let mut all = [""; KEYS_AT_ONCE];
    for (slot, key) in all.iter_mut().zip(keys) {
        *slot = key;
    }
    all
}

#[async_trait]
impl LoginGuardRepository for PgStore {
    async fn throttles(
        &self,
        keys: &[&str],
        forget_before: OffsetDateTime,
        now: OffsetDateTime,
    ) -> Result<Vec<Throttle>> {
        let mut found = std::collections::HashMap::with_capacity(keys.len());
        for some in keys.chunks(KEYS_AT_ONCE) {
            let read = sqlx::query(
                "SELECT key, CASE WHEN updated_at < $5 THEN 0 ELSE greatest(failures - \
                 (SELECT count(*) FROM login_attempts_pending p WHERE p.key = t.key AND p.expires_at <= $6), 0)::int \
                 END AS failures, locked_until FROM login_throttles t WHERE key IN ($1, $2, $3, $4)",
            );
            let rows = padded(some)
                .into_iter()
                .fold(read, |query, key| query.bind(key))
                .bind(at(forget_before))
                .bind(at(now))
                .fetch_all(&mut *self.conn().await?)
                .await
                .map_err(storage_error("throttle"))?;
            for row in &rows {
                let throttle = Throttle { failures: count(row, "failures")?, locked_until: get(row, "locked_until")? };
                found.insert(get::<String>(row, "key")?, throttle);
            }
        }
        Ok(keys.iter().map(|&key| found.get(key).copied().unwrap_or_default()).collect())
    }

    async fn count_attempt(&self, attempt: CountAttempt<'_>) -> Result<Option<u32>> {
        // One statement: attempts of the key whose outcome never came (their
        // node died) are taken back, then the count, the hold and the
        // refusal of a locked key are decided together, and this attempt is
        // recorded as pending. A parallel attempt's cannot interleave: it
        // waits for the key's row, and for the expired rows this one
        // deletes (then finds them gone). A locked key keeps its expired
        // attempts until it is counted again unlocked.
        let row = sqlx::query(
            "WITH expired AS (
                 DELETE FROM login_attempts_pending
                 WHERE key = $1 AND expires_at <= $2
                   AND NOT EXISTS (SELECT 1 FROM login_throttles t WHERE t.key = $1 AND t.locked_until > $2)
                 RETURNING 1
             ), counted AS (
                 INSERT INTO login_throttles (key, failures, locked_until, updated_at)
                 VALUES ($1, 1, CASE WHEN 1 >= $4 THEN $5 ELSE NULL END, $2)
                 ON CONFLICT (key) DO UPDATE SET
                 failures = CASE WHEN login_throttles.updated_at < $3 THEN 1
                                 ELSE greatest(login_throttles.failures - (SELECT count(*) FROM expired), 0) + 1 END,
                 locked_until = CASE WHEN (CASE WHEN login_throttles.updated_at < $3 THEN 1
                                                ELSE greatest(login_throttles.failures - (SELECT count(*) FROM expired),
                                                              0) + 1 END) >= $4 THEN $5
                                     ELSE login_throttles.locked_until END,
                 updated_at = $2
                 WHERE login_throttles.locked_until IS NULL OR login_throttles.locked_until <= $2
                 RETURNING failures
             ), pending AS (
                 INSERT INTO login_attempts_pending (key, attempt, expires_at) SELECT $1, $6, $7 FROM counted
             )
             SELECT failures FROM counted",
        )
        .bind(attempt.key)
        .bind(at(attempt.now))
        .bind(at(attempt.forget_before))
        .bind(int(attempt.hold_from))
        .bind(at(attempt.hold_until))
        .bind(attempt.attempt)
        .bind(at(attempt.report_by))
        .fetch_optional(&mut *self.conn().await?)
        .await
        .map_err(storage_error("throttle"))?;
        row.map(|row| count(&row, "failures")).transpose()
    }

    async fn uncount_attempt(&self, key: &str, attempt: Uuid, hold_until: Option<OffsetDateTime>) -> Result<()> {
        // Only an attempt still pending is taken back: one taken back as
        // unreported already is not taken twice.
        sqlx::query(
            "WITH reported AS (
                 DELETE FROM login_attempts_pending WHERE key = $1 AND attempt = $3 RETURNING 1
             )
             UPDATE login_throttles SET failures = failures - (SELECT count(*) FROM reported), \
             locked_until = CASE WHEN locked_until = $2 THEN NULL ELSE locked_until END \
             WHERE key = $1 AND failures > 0",
        )
        .bind(key)
        .bind(at_opt(hold_until))
        .bind(attempt)
        .execute(&mut *self.conn().await?)
        .await
        .map_err(storage_error("throttle"))?;
        Ok(())
    }

    async fn report_attempt(&self, key: &str, attempt: Uuid) -> Result<()> {
        sqlx::query("DELETE FROM login_attempts_pending WHERE key = $1 AND attempt = $2")
            .bind(key)
            .bind(attempt)
            .execute(&mut *self.conn().await?)
            .await
            .map_err(storage_error("throttle"))?;
        Ok(())
    }

    async fn lock_throttle(&self, key: &str, until: OffsetDateTime) -> Result<()> {
        sqlx::query(
            "UPDATE login_throttles SET locked_until = $2 \
             WHERE key = $1 AND (locked_until IS NULL OR locked_until < $2)",
        )
        .bind(key)
        .bind(at(until))
        .execute(&mut *self.conn().await?)
        .await
        .map_err(storage_error("throttle"))?;
        Ok(())
    }

    async fn attempt_succeeded(&self, attempt: Uuid, clear: &[&str], take_back: &[&str]) -> Result<()> {
        // One statement: the cleared keys go with their pending attempts;
        // on the others only this attempt, if still pending, is taken back
        // (the two lists share no key, so no row is changed twice). An
        // attempt is counted on two keys at most, so more than
        // `KEYS_AT_ONCE` of either (never asked for) go in further
        // statements, each key's change whole in one of them.
        let (mut clear, mut take_back) = (clear, take_back);
        while !clear.is_empty() || !take_back.is_empty() {
            let (clear_now, clear_later) = clear.split_at(clear.len().min(KEYS_AT_ONCE));
            let (back_now, back_later) = take_back.split_at(take_back.len().min(KEYS_AT_ONCE));
            let settle = sqlx::query(
                "WITH cleared_pending AS (
                     DELETE FROM login_attempts_pending WHERE key IN ($1, $2, $3, $4)
                 ), cleared AS (
                     DELETE FROM login_throttles WHERE key IN ($1, $2, $3, $4)
                 ), reported AS (
                     DELETE FROM login_attempts_pending WHERE key IN ($5, $6, $7, $8) AND attempt = $9 RETURNING key
                 )
                 UPDATE login_throttles t SET failures = t.failures - (SELECT count(*) FROM reported r WHERE r.key = t.key)
                 WHERE t.key IN ($5, $6, $7, $8) AND t.failures > 0",
            );
            padded(clear_now)
                .into_iter()
                .chain(padded(back_now))
                .fold(settle, |query, key| query.bind(key))
                .bind(attempt)
                .execute(&mut *self.conn().await?)
                .await
                .map_err(storage_error("throttle"))?;
            (clear, take_back) = (clear_later, back_later);
        }
        Ok(())
    }

    async fn remove_stale_throttles(&self, before: OffsetDateTime) -> Result<u64> {
        let done = sqlx::query(
            "DELETE FROM login_throttles WHERE updated_at < $1 AND (locked_until IS NULL OR locked_until < $1)",
        )
        .bind(at(before))
        .execute(&mut *self.conn().await?)
        .await
        .map_err(storage_error("throttle"))?;
        sqlx::query("DELETE FROM login_attempts_pending WHERE expires_at < $1")
            .bind(at(before))
            .execute(&mut *self.conn().await?)
            .await
            .map_err(storage_error("throttle"))?;
        Ok(done.rows_affected())
    }
}
