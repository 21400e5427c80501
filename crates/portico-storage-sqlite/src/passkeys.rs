//! Passkeys per user.

use async_trait::async_trait;
use portico_model::audit::AuditEvent;
use portico_model::ids::UserId;
use portico_model::passkey::{MAX_PER_USER, Passkey};
use portico_storage::{PasskeyRepository, PasskeyStored, PasskeySummary};
use rusqlite::{Row, params, params_from_iter};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::audit::insert_audit;
use crate::db::{Columns, Res, all, one, run, secs};
use crate::{Result, SqliteStore};

fn passkey_from(row: &Row<'_>) -> Res<Passkey> {
    Ok(Passkey {
        id: row.uuid("id")?,
        user_id: row.uuid("user_id")?.into(),
        credential_id: row.get("credential_id")?,
        name: row.get("name")?,
        credential: row.get("credential")?,
        sign_count: u32::try_from(row.get::<_, i64>("sign_count")?).unwrap_or(u32::MAX),
        created_at: row.time("created_at")?,
        last_used_at: row.time_opt("last_used_at")?,
        locked_at: row.time_opt("locked_at")?,
    })
}

#[async_trait]
impl PasskeyRepository for SqliteStore {
    async fn insert_passkey(&self, passkey: &Passkey, audit: &AuditEvent) -> Result<PasskeyStored> {
        let (p, audit) = (passkey.clone(), audit.clone());
        self.db
            .write("passkey", move |tx| {
                let user = p.user_id.to_string();
                if one(tx, "SELECT 1 FROM users WHERE id = ?1", [&user], |_| Ok(()))?.is_none() {
                    return Ok(PasskeyStored::NoUser);
                }
                let sql = "SELECT count(*) FROM passkeys WHERE user_id = ?1";
                let kept: i64 = one(tx, sql, [&user], |row| Ok(row.get(0)?))?.unwrap_or_default();
                if usize::try_from(kept).unwrap_or(usize::MAX) >= MAX_PER_USER {
                    return Ok(PasskeyStored::TooMany);
                }
                let stored = run(
                    tx,
                    "INSERT INTO passkeys (id, user_id, credential_id, name, credential, sign_count, created_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (credential_id) DO NOTHING",
                    params![
                        p.id.to_string(),
                        user,
                        p.credential_id,
                        p.name,
                        p.credential,
                        i64::from(p.sign_count),
                        secs(p.created_at)
                    ],
                )?;
                if stored == 0 {
                    return Ok(PasskeyStored::CredentialTaken);
                }
                insert_audit(tx, &audit)?;
                Ok(PasskeyStored::Stored)
            })
            .await
    }

    async fn passkeys_of(&self, user_id: UserId) -> Result<Vec<Passkey>> {
        self.db
            .read(move |c| {
                let sql = "SELECT * FROM passkeys WHERE user_id = ?1 ORDER BY created_at, id";
                all(c, sql, [user_id.to_string()], passkey_from)
            })
            .await
    }

    async fn passkeys_of_users(&self, user_ids: &[UserId]) -> Result<Vec<Passkey>> {
        if user_ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = user_ids.iter().map(ToString::to_string).collect();
        let sql = format!(
            "SELECT * FROM passkeys WHERE user_id IN ({}) ORDER BY created_at, id",
            vec!["?"; ids.len()].join(", ")
        );
        self.db.read(move |c| all(c, &sql, params_from_iter(ids), passkey_from)).await
    }

    async fn find_passkey(&self, credential_id: &str) -> Result<Option<Passkey>> {
        let credential_id = credential_id.to_owned();
        self.db
            .read(move |c| one(c, "SELECT * FROM passkeys WHERE credential_id = ?1", [credential_id], passkey_from))
            .await
    }

    async fn record_passkey_use(
        &self,
        id: Uuid,
        credential: &str,
        sign_count: u32,
        now: OffsetDateTime,
        audit: &AuditEvent,
    ) -> Result<bool> {
        let (credential, audit) = (credential.to_owned(), audit.clone());
        self.db
            .write("passkey", move |tx| {
                // The rule of Passkey::counter_advances, against the stored counter.
                let sql = "UPDATE passkeys SET credential = ?2, sign_count = ?3, last_used_at = ?4 \
                           WHERE id = ?1 AND locked_at IS NULL AND (sign_count < ?3 OR (sign_count = 0 AND ?3 = 0))";
                let used = run(tx, sql, params![id.to_string(), credential, i64::from(sign_count), secs(now)])? == 1;
                if used {
                    insert_audit(tx, &audit)?;
                }
                Ok(used)
            })
            .await
    }

    async fn lock_passkey(&self, id: Uuid, now: OffsetDateTime, audit: &AuditEvent) -> Result<bool> {
        let audit = audit.clone();
        self.db
            .write("passkey", move |tx| {
                let sql = "UPDATE passkeys SET locked_at = ?2 WHERE id = ?1 AND locked_at IS NULL";
                let locked = run(tx, sql, params![id.to_string(), secs(now)])? == 1;
                if locked {
                    insert_audit(tx, &audit)?;
                }
                Ok(locked)
            })
            .await
    }

    async fn rename_passkey(&self, user_id: UserId, id: Uuid, name: &str) -> Result<bool> {
        let name = name.to_owned();
        self.db
            .write("passkey", move |tx| {
                let sql = "UPDATE passkeys SET name = ?3 WHERE id = ?1 AND user_id = ?2";
                Ok(run(tx, sql, params![id.to_string(), user_id.to_string(), name])? == 1)
            })
            .await
    }

    async fn delete_passkey(&self, user_id: UserId, id: Uuid, audit: &AuditEvent) -> Result<bool> {
        let audit = audit.clone();
        self.db
            .write("passkey", move |tx| {
                let sql = "DELETE FROM passkeys WHERE id = ?1 AND user_id = ?2";
                let deleted = run(tx, sql, params![id.to_string(), user_id.to_string()])? == 1;
                if deleted {
                    insert_audit(tx, &audit)?;
                }
                Ok(deleted)
            })
            .await
    }

    async fn passkey_summary(&self, user_id: UserId) -> Result<PasskeySummary> {
        self.db
            .read(move |c| {
                let sql = "SELECT (SELECT count(*) FROM passkeys WHERE user_id = ?1) AS kept, \
                           (SELECT count(*) FROM passkeys WHERE user_id = ?1 AND locked_at IS NULL) AS usable, \
                           (SELECT declined_at FROM passkey_offers WHERE user_id = ?1) AS declined_at";
                let summary = one(c, sql, [user_id.to_string()], |row| {
                    Ok(PasskeySummary {
                        kept: usize::try_from(row.get::<_, i64>("kept")?).unwrap_or_default(),
                        usable: usize::try_from(row.get::<_, i64>("usable")?).unwrap_or_default(),
                        offer_declined_at: row.time_opt("declined_at")?,
                    })
                })?;
                Ok(summary.unwrap_or_default())
            })
            .await
    }

    async fn decline_passkey_offer(&self, user_id: UserId, at: OffsetDateTime) -> Result<()> {
        self.db
            .write("passkey offer", move |tx| {
                let sql = "INSERT INTO passkey_offers (user_id, declined_at) \
                           SELECT ?1, ?2 WHERE EXISTS (SELECT 1 FROM users WHERE id = ?1) \
                           ON CONFLICT (user_id) DO UPDATE SET declined_at = excluded.declined_at";
                run(tx, sql, params![user_id.to_string(), secs(at)])?;
                Ok(())
            })
            .await
    }
}
