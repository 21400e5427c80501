//! Signing keys: at most one active per algorithm (a partial unique index
//! says so).

use async_trait::async_trait;
use portico_model::key::SigningKeyRecord;
use portico_storage::SigningKeyRepository;
use portico_storage::memory::NodeMemory;
use sqlx::postgres::PgRow;
use time::OffsetDateTime;

use crate::error::storage_error;
use crate::{PgStore, Result, at, get};

fn key_from(row: &PgRow) -> Result<SigningKeyRecord> {
    Ok(SigningKeyRecord {
        kid: get(row, "kid")?,
        alg: get(row, "alg")?,
        private_sealed: get(row, "private_sealed")?,
        created_at: get(row, "created_at")?,
        retired_at: get(row, "retired_at")?,
    })
}

#[async_trait]
impl SigningKeyRepository for PgStore {
    async fn insert_first_signing_key(&self, key: &SigningKeyRecord) -> Result<bool> {
        let done = sqlx::query(
            "INSERT INTO signing_keys (kid, alg, private_sealed, created_at, retired_at) \
             SELECT $1, $2, $3, $4, NULL WHERE NOT EXISTS (SELECT 1 FROM signing_keys WHERE alg = $2) \
             ON CONFLICT DO NOTHING",
        )
        .bind(&key.kid)
        .bind(&key.alg)
        .bind(&key.private_sealed)
        .bind(at(key.created_at))
        .execute(&mut *self.conn().await?)
        .await;
        // Forgotten even when the answer was lost: the change may have
        // committed.
        self.signing_keys_changed();
        Ok(done.map_err(storage_error("signing key"))?.rows_affected() > 0)
    }

    async fn rotate_signing_key(&self, key: &SigningKeyRecord, now: OffsetDateTime) -> Result<()> {
        let rotated = self.rotate(key, now).await;
        self.signing_keys_changed();
        rotated
    }

    async fn retire_signing_key(&self, alg: &str, now: OffsetDateTime) -> Result<Option<String>> {
        let retired = sqlx::query_scalar(
            "UPDATE signing_keys SET retired_at = $1 WHERE retired_at IS NULL AND alg = $2 RETURNING kid",
        )
        .bind(at(now))
        .bind(alg)
        .fetch_optional(&mut *self.conn().await?)
        .await
        .map_err(storage_error("signing key"));
        self.signing_keys_changed();
        retired
    }

    async fn active_signing_kid(&self, alg: &str) -> Result<Option<String>> {
        NodeMemory::signing_kid_or(self.memory(), alg, async {
            sqlx::query_scalar("SELECT kid FROM signing_keys WHERE retired_at IS NULL AND alg = $1")
                .bind(alg)
                .fetch_optional(&mut *self.conn().await?)
                .await
                .map_err(storage_error("signing key"))
        })
        .await
    }

    async fn list_signing_keys(&self) -> Result<Vec<SigningKeyRecord>> {
        sqlx::query("SELECT * FROM signing_keys ORDER BY created_at DESC, kid")
            .fetch_all(&mut *self.conn().await?)
            .await
            .map_err(storage_error("signing key"))?
            .iter()
            .map(key_from)
            .collect()
    }
}

impl PgStore {
    /// Retires the active key and makes `key` active, in one transaction.
    async fn rotate(&self, key: &SigningKeyRecord, now: OffsetDateTime) -> Result<()> {
        let mut tx = self.begin().await?;
        sqlx::query("UPDATE signing_keys SET retired_at = $1 WHERE retired_at IS NULL AND alg = $2")
            .bind(at(now))
            .bind(&key.alg)
            .execute(&mut *tx)
            .await
            .map_err(storage_error("signing key"))?;
        sqlx::query(
            "INSERT INTO signing_keys (kid, alg, private_sealed, created_at, retired_at) VALUES ($1, $2, $3, $4, NULL)",
        )
        .bind(&key.kid)
        .bind(&key.alg)
        .bind(&key.private_sealed)
        .bind(at(key.created_at))
        .execute(&mut *tx)
        .await
        .map_err(storage_error("active signing key"))?;
        tx.commit().await.map_err(storage_error("signing key"))
    }

    /// A change of the signing keys (may have) committed: this node forgets
    /// which key is active at once (the others when they hear of it).
    fn signing_keys_changed(&self) {
        if let Some(memory) = self.memory() {
            memory.signing_keys_changed();
        }
    }
}
