//! The browser login: processes (optimistically versioned), trusted
//! devices, consents, and the throttle counters of password attempts.

use async_trait::async_trait;
use portico_model::audit::AuditEvent;
use portico_model::ids::{ClientId, LoginProcessId, UserId};
use portico_model::login::LoginProcess;
use portico_model::session::{EndedSession, TrustedDevice};
use portico_storage::{
    CompletedLogin, ConsentRepository, CountAttempt, DeviceRepository, LoginCompletion, LoginGuardRepository,
    LoginProcessRepository, Throttle,
};
use rusqlite::{Row, params};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::db::{Columns, Res, all, one, run, secs, secs_opt, to_json, words};
use crate::{Result, SqliteStore};

fn process_from(row: &Row<'_>) -> Res<LoginProcess> {
    Ok(LoginProcess {
        id: row.uuid("id")?.into(),
        version: row.get("version")?,
        created_at: row.time("created_at")?,
        expires_at: row.time("expires_at")?,
        state: row.json("state")?,
    })
}

/// A count that cannot be negative.
fn count(row: &Row<'_>, column: &str) -> Res<u32> {
    Ok(u32::try_from(row.get::<_, i64>(column)?).unwrap_or(0))
}

fn update_process(tx: &rusqlite::Connection, p: &LoginProcess) -> Res<bool> {
    let updated = run(
        tx,
        "UPDATE login_processes SET state = ?3, expires_at = ?4, version = version + 1 WHERE id = ?1 AND version = ?2",
        params![p.id.to_string(), p.version, to_json(&p.state)?, secs(p.expires_at)],
    )?;
    Ok(updated > 0)
}

fn trust(
    tx: &rusqlite::Connection,
    user_id: UserId,
    device_id: &str,
    user_agent: Option<&str>,
    now: OffsetDateTime,
) -> Res<()> {
    run(
        tx,
        "INSERT INTO trusted_devices (user_id, device_id, trusted_at, user_agent) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (user_id, device_id) DO UPDATE SET trusted_at = excluded.trusted_at, user_agent = excluded.user_agent",
        params![user_id.to_string(), device_id, secs(now), user_agent],
    )?;
    Ok(())
}

/// Forgets `user_id`'s least recently trusted devices other than `kept`
/// until at most `limit` remain, `kept` among them.
fn untrust_beyond(tx: &rusqlite::Connection, user_id: UserId, kept: &str, limit: u32) -> Res<()> {
    run(
        tx,
        "DELETE FROM trusted_devices WHERE user_id = ?1 AND device_id IN (SELECT device_id FROM trusted_devices \
         WHERE user_id = ?1 AND device_id <> ?2 ORDER BY trusted_at DESC, device_id DESC LIMIT -1 OFFSET ?3)",
        params![user_id.to_string(), kept, limit.saturating_sub(1)],
    )?;
    Ok(())
}

/// Takes back a pending attempt; only one still pending: one taken back
/// as unreported already is not taken twice.
fn uncount(tx: &rusqlite::Connection, key: &str, attempt: Uuid, hold_until: Option<OffsetDateTime>) -> Res<()> {
    let pending = run(
        tx,
        "DELETE FROM login_attempts_pending WHERE key = ?1 AND attempt = ?2",
        params![key, attempt.to_string()],
    )?;
    run(
        tx,
        "UPDATE login_throttles SET failures = failures - ?3, \
         locked_until = CASE WHEN locked_until = ?2 THEN NULL ELSE locked_until END \
         WHERE key = ?1 AND failures > 0",
        params![key, secs_opt(hold_until), i64::from(pending > 0)],
    )?;
    Ok(())
}

fn clear(tx: &rusqlite::Connection, key: &str) -> Res<()> {
    run(tx, "DELETE FROM login_throttles WHERE key = ?1", [key])?;
    run(tx, "DELETE FROM login_attempts_pending WHERE key = ?1", [key])?;
    Ok(())
}

fn insert_process(tx: &rusqlite::Connection, p: &LoginProcess) -> Res<()> {
    run(
        tx,
        "INSERT INTO login_processes (id, version, state, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![p.id.to_string(), p.version, to_json(&p.state)?, secs(p.created_at), secs(p.expires_at)],
    )?;
    Ok(())
}

#[async_trait]
impl LoginProcessRepository for SqliteStore {
    async fn create_login_process(&self, process: &LoginProcess) -> Result<()> {
        let p = process.clone();
        self.db.write("login process", move |tx| insert_process(tx, &p)).await
    }

    async fn create_login_process_taking(&self, process: &LoginProcess, request_hash: &str) -> Result<bool> {
        let (p, hash) = (process.clone(), request_hash.to_owned());
        self.db
            .write("login process", move |tx| {
                if !crate::oauth::take_pushed(tx, &hash, &p.state.client_id, p.created_at)? {
                    return Ok(false);
                }
                insert_process(tx, &p)?;
                Ok(true)
            })
            .await
    }

    async fn find_login_process(&self, id: LoginProcessId, now: OffsetDateTime) -> Result<Option<LoginProcess>> {
        self.db
            .read(move |c| {
                let sql = "SELECT * FROM login_processes WHERE id = ?1 AND expires_at > ?2";
                one(c, sql, params![id.to_string(), secs(now)], process_from)
            })
            .await
    }

    async fn update_login_process(&self, process: &LoginProcess) -> Result<bool> {
        let p = process.clone();
        self.db.write("login process", move |tx| update_process(tx, &p)).await
    }

    async fn complete_login_process(&self, completion: &LoginCompletion<'_>) -> Result<Option<CompletedLogin>> {
        let process = completion.process.clone();
        let session = completion.session.cloned();
        let replaces = completion.replaces.cloned();
        let device = completion.trusted_device.map(|(user, device)| (user, device.to_owned()));
        let user_agent = completion.user_agent.map(str::to_owned);
        let (now, audit, limit) = (completion.now, completion.audit.clone(), completion.session_limit);
        let device_limit = completion.device_limit;
        let completed = self
            .db
            .write("login process", move |tx| {
                // A user deleted while signing in has nothing to complete.
                let users = session.as_ref().map(|s| s.user_id).into_iter().chain(device.as_ref().map(|d| d.0));
                for user in users {
                    if one(tx, "SELECT 1 FROM users WHERE id = ?1", [user.to_string()], |_| Ok(()))?.is_none() {
                        return Ok(None);
                    }
                }
                if !update_process(tx, &process)? {
                    return Ok(None);
                }
                crate::audit::insert_audit(tx, &audit)?;
                let mut completed = CompletedLogin::default();
                if let Some(session) = &session {
                    crate::sessions::insert_session(tx, session)?;
                    if let Some(presented) = &replaces {
                        completed.replaced = crate::sessions::end_replaced(tx, presented, now)?;
                    }
                    completed.beyond_limit = crate::sessions::end_beyond_limit(tx, session, limit, now)?;
                }
                if let Some((user, device)) = &device {
                    trust(tx, *user, device, user_agent.as_deref(), now)?;
                    untrust_beyond(tx, *user, device, device_limit)?;
                }
                Ok(Some(completed))
            })
            .await?;
        if let (Some(memory), Some(completed)) = (self.memory(), &completed) {
            memory.grants_revoked(completed.ended().flat_map(EndedSession::revoked_grants).map(|g| g.id));
        }
        Ok(completed)
    }

    async fn delete_login_process(&self, id: LoginProcessId) -> Result<()> {
        self.db
            .write("login process", move |tx| {
                run(tx, "DELETE FROM login_processes WHERE id = ?1", [id.to_string()])?;
                Ok(())
            })
            .await
    }
}

#[async_trait]
impl DeviceRepository for SqliteStore {
    async fn trust_device(&self, user_id: UserId, device_id: &str, now: OffsetDateTime) -> Result<()> {
        let device_id = device_id.to_owned();
        self.db.write("trusted device", move |tx| trust(tx, user_id, &device_id, None, now)).await
    }

    async fn is_device_trusted(&self, user_id: UserId, device_id: &str, not_before: OffsetDateTime) -> Result<bool> {
        let device_id = device_id.to_owned();
        self.db
            .read(move |c| {
                let sql = "SELECT 1 FROM trusted_devices WHERE user_id = ?1 AND device_id = ?2 AND trusted_at >= ?3";
                Ok(one(c, sql, params![user_id.to_string(), device_id, secs(not_before)], |_| Ok(()))?.is_some())
            })
            .await
    }
    async fn trusted_devices(&self, user_id: UserId, not_before: OffsetDateTime) -> Result<Vec<TrustedDevice>> {
        self.db
            .read(move |c| {
                let sql = "SELECT device_id, trusted_at, user_agent FROM trusted_devices \
                           WHERE user_id = ?1 AND trusted_at >= ?2 ORDER BY trusted_at DESC, device_id";
                all(c, sql, params![user_id.to_string(), secs(not_before)], |row| {
                    Ok(TrustedDevice {
                        device_id: row.get("device_id")?,
                        trusted_at: row.time("trusted_at")?,
                        user_agent: row.get("user_agent")?,
                    })
                })
            })
            .await
    }

    async fn forget_device(&self, user_id: UserId, device_id: &str, audit: &AuditEvent) -> Result<bool> {
        let (device_id, audit) = (device_id.to_owned(), audit.clone());
        self.db
            .write("trusted device", move |tx| {
                let sql = "DELETE FROM trusted_devices WHERE user_id = ?1 AND device_id = ?2";
                let gone = run(tx, sql, params![user_id.to_string(), device_id])? > 0;
                if gone {
                    crate::audit::insert_audit(tx, &audit)?;
                }
                Ok(gone)
            })
            .await
    }

    async fn remove_expired_devices(&self, trusted_before: OffsetDateTime) -> Result<u64> {
        self.db
            .write("trusted device", move |tx| {
                let removed = run(tx, "DELETE FROM trusted_devices WHERE trusted_at < ?1", [secs(trusted_before)])?;
                Ok(u64::try_from(removed).unwrap_or(u64::MAX))
            })
            .await
    }
}

#[async_trait]
impl ConsentRepository for SqliteStore {
    async fn find_consent(&self, user_id: UserId, client_id: &ClientId) -> Result<Option<Vec<String>>> {
        let client_id = client_id.as_str().to_owned();
        self.db
            .read(move |c| {
                let sql = "SELECT scope_groups FROM consents WHERE user_id = ?1 AND client_id = ?2";
                one(c, sql, params![user_id.to_string(), client_id], |row| row.words("scope_groups"))
            })
            .await
    }

    async fn grant_consent(
        &self,
        user_id: UserId,
        client_id: &ClientId,
        groups: &[String],
        now: OffsetDateTime,
    ) -> Result<()> {
        let (client_id, groups) = (client_id.as_str().to_owned(), words(groups));
        self.db
            .write("consent", move |tx| {
                run(
                    tx,
                    "INSERT INTO consents (user_id, client_id, scope_groups, granted_at) VALUES (?1, ?2, ?3, ?4) \
                     ON CONFLICT (user_id, client_id) DO UPDATE SET scope_groups = excluded.scope_groups, \
                     granted_at = excluded.granted_at",
                    params![user_id.to_string(), client_id, groups, secs(now)],
                )?;
                Ok(())
            })
            .await
    }
}

#[async_trait]
impl LoginGuardRepository for SqliteStore {
    async fn throttles(
        &self,
        keys: &[&str],
        forget_before: OffsetDateTime,
        now: OffsetDateTime,
    ) -> Result<Vec<Throttle>> {
        let keys: Vec<String> = keys.iter().map(|&key| key.to_owned()).collect();
        self.db
            .read(move |c| {
                keys.iter()
                    .map(|key| {
                        let found = one(
                            c,
                            "SELECT CASE WHEN updated_at < ?2 THEN 0 ELSE max(failures - \
                             (SELECT count(*) FROM login_attempts_pending p WHERE p.key = ?1 AND p.expires_at <= ?3), 0) \
                             END AS failures, locked_until FROM login_throttles WHERE key = ?1",
                            params![key, secs(forget_before), secs(now)],
                            |row| {
                                Ok(Throttle { failures: count(row, "failures")?, locked_until: row.time_opt("locked_until")? })
                            },
                        )?;
                        Ok(found.unwrap_or_default())
                    })
                    .collect()
            })
            .await
    }

    async fn count_attempt(&self, attempt: CountAttempt<'_>) -> Result<Option<u32>> {
        let key = attempt.key.to_owned();
        let (now, forget_before, hold_from, hold_until) =
            (attempt.now, attempt.forget_before, attempt.hold_from, attempt.hold_until);
        let (id, report_by) = (attempt.attempt.to_string(), attempt.report_by);
        self.db
            .write("login throttle", move |tx| {
                // Attempts whose outcome never came (their node died) count no more.
                let expired = run(
                    tx,
                    "DELETE FROM login_attempts_pending WHERE key = ?1 AND expires_at <= ?2",
                    params![key, secs(now)],
                )?;
                if expired > 0 {
                    run(
                        tx,
                        "UPDATE login_throttles SET failures = max(failures - ?2, 0) WHERE key = ?1",
                        params![key, i64::try_from(expired).unwrap_or(i64::MAX)],
                    )?;
                }
                // One statement: the count, the hold and the refusal of a
                // locked key are decided together.
                let counted = one(
                    tx,
                    "INSERT INTO login_throttles (key, failures, locked_until, updated_at) \
                     VALUES (?1, 1, CASE WHEN 1 >= ?4 THEN ?5 ELSE NULL END, ?2) \
                     ON CONFLICT (key) DO UPDATE SET \
                     failures = CASE WHEN login_throttles.updated_at < ?3 THEN 1 \
                                     ELSE login_throttles.failures + 1 END, \
                     locked_until = CASE WHEN (CASE WHEN login_throttles.updated_at < ?3 THEN 1 \
                                                    ELSE login_throttles.failures + 1 END) >= ?4 THEN ?5 \
                                         ELSE login_throttles.locked_until END, \
                     updated_at = ?2 \
                     WHERE login_throttles.locked_until IS NULL OR login_throttles.locked_until <= ?2 \
                     RETURNING failures",
                    params![key, secs(now), secs(forget_before), hold_from, secs(hold_until)],
                    |row| count(row, "failures"),
                )?;
                if counted.is_some() {
                    run(
                        tx,
                        "INSERT OR REPLACE INTO login_attempts_pending (key, attempt, expires_at) VALUES (?1, ?2, ?3)",
                        params![key, id, secs(report_by)],
                    )?;
                }
                Ok(counted)
            })
            .await
    }

    async fn uncount_attempt(&self, key: &str, attempt: Uuid, hold_until: Option<OffsetDateTime>) -> Result<()> {
        let key = key.to_owned();
        self.db.write("login throttle", move |tx| uncount(tx, &key, attempt, hold_until)).await
    }

    async fn report_attempt(&self, key: &str, attempt: Uuid) -> Result<()> {
        let key = key.to_owned();
        self.db
            .write("login throttle", move |tx| {
                run(
                    tx,
                    "DELETE FROM login_attempts_pending WHERE key = ?1 AND attempt = ?2",
                    params![key, attempt.to_string()],
                )?;
                Ok(())
            })
            .await
    }

    async fn lock_throttle(&self, key: &str, until: OffsetDateTime) -> Result<()> {
        let key = key.to_owned();
        self.db
            .write("login throttle", move |tx| {
                run(
                    tx,
                    "UPDATE login_throttles SET locked_until = ?2 \
                     WHERE key = ?1 AND (locked_until IS NULL OR locked_until < ?2)",
                    params![key, secs(until)],
                )?;
                Ok(())
            })
            .await
    }

    async fn attempt_succeeded(&self, attempt: Uuid, clear_keys: &[&str], take_back: &[&str]) -> Result<()> {
        let owned = |keys: &[&str]| keys.iter().map(|&key| key.to_owned()).collect::<Vec<_>>();
        let (clear_keys, take_back) = (owned(clear_keys), owned(take_back));
        self.db
            .write("login throttle", move |tx| {
                for key in &clear_keys {
                    clear(tx, key)?;
                }
                for key in &take_back {
                    uncount(tx, key, attempt, None)?;
                }
                Ok(())
            })
            .await
    }

    async fn remove_stale_throttles(&self, before: OffsetDateTime) -> Result<u64> {
        self.db
            .write("login throttle", move |tx| {
                let removed = run(
                    tx,
                    "DELETE FROM login_throttles WHERE updated_at < ?1 AND (locked_until IS NULL OR locked_until < ?1)",
                    [secs(before)],
                )?;
                run(tx, "DELETE FROM login_attempts_pending WHERE expires_at < ?1", [secs(before)])?;
                Ok(u64::try_from(removed).unwrap_or(u64::MAX))
            })
            .await
    }
}
