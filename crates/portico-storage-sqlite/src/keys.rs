//! Token signing keys (sealed); at most one active per algorithm.

use async_trait::async_trait;
use portico_model::key::SigningKeyRecord;
use portico_storage::SigningKeyRepository;
use portico_storage::memory::NodeMemory;
use rusqlite::{Row, params};
use time::OffsetDateTime;

use crate::db::{Columns, Res, all, one, run, secs};
use crate::{Result, SqliteStore};

fn key_from(row: &Row<'_>) -> Res<SigningKeyRecord> {
    Ok(SigningKeyRecord {
        kid: row.get("kid")?,
        alg: row.get("alg")?,
        private_sealed: row.get("private_sealed")?,
        created_at: row.time("created_at")?,
        retired_at: row.time_opt("retired_at")?,
    })
}

#[async_trait]
impl SigningKeyRepository for SqliteStore {
    async fn insert_first_signing_key(&self, key: &SigningKeyRecord) -> Result<bool> {
        let key = key.clone();
        let inserted = self
            .db
            .write("signing key", move |tx| {
                let stored = run(
                    tx,
                    "INSERT INTO signing_keys (kid, alg, private_sealed, created_at, retired_at) \
                     SELECT ?1, ?2, ?3, ?4, NULL WHERE NOT EXISTS (SELECT 1 FROM signing_keys WHERE alg = ?2) \
                     ON CONFLICT DO NOTHING",
                    params![key.kid, key.alg, key.private_sealed, secs(key.created_at)],
                )?;
                Ok(stored > 0)
            })
            .await;
        self.signing_keys_changed();
        inserted
    }

    async fn rotate_signing_key(&self, key: &SigningKeyRecord, now: OffsetDateTime) -> Result<()> {
        let key = key.clone();
        let rotated = self
            .db
            .write("active signing key", move |tx| {
                run(
                    tx,
                    "UPDATE signing_keys SET retired_at = ?1 WHERE retired_at IS NULL AND alg = ?2",
                    params![secs(now), key.alg],
                )?;
                run(
                    tx,
                    "INSERT INTO signing_keys (kid, alg, private_sealed, created_at, retired_at) \
                     VALUES (?1, ?2, ?3, ?4, NULL)",
                    params![key.kid, key.alg, key.private_sealed, secs(key.created_at)],
                )?;
                Ok(())
            })
            .await;
        self.signing_keys_changed();
        rotated
    }

    async fn retire_signing_key(&self, alg: &str, now: OffsetDateTime) -> Result<Option<String>> {
        let alg = alg.to_owned();
        let retired = self
            .db
            .write("signing key", move |tx| {
                let sql = "UPDATE signing_keys SET retired_at = ?1 WHERE retired_at IS NULL AND alg = ?2 RETURNING kid";
                one(tx, sql, params![secs(now), alg], |row| Ok(row.get("kid")?))
            })
            .await;
        self.signing_keys_changed();
        retired
    }

    async fn active_signing_kid(&self, alg: &str) -> Result<Option<String>> {
        let owned = alg.to_owned();
        let read = self.db.read(move |c| {
            let sql = "SELECT kid FROM signing_keys WHERE retired_at IS NULL AND alg = ?1";
            one(c, sql, [owned], |row| Ok(row.get("kid")?))
        });
        NodeMemory::signing_kid_or(self.memory(), alg, read).await
    }

    async fn list_signing_keys(&self) -> Result<Vec<SigningKeyRecord>> {
        self.db.read(|c| all(c, "SELECT * FROM signing_keys ORDER BY created_at DESC, kid", [], key_from)).await
    }
}

impl SqliteStore {
    /// A change of the signing keys (may have) committed: the node's memory
    /// forgets which key is active at once.
    fn signing_keys_changed(&self) {
        if let Some(memory) = self.memory() {
            memory.signing_keys_changed();
        }
    }
}
