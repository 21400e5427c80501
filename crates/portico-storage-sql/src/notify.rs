//! [`sql_notify_repositories!`]: merchants, submitted events and deliveries.

/// Implements `MerchantRepository` and `NotificationRepository` for
/// `$store` (see [`sql_repositories!`](crate::sql_repositories) for the
/// fields it needs).
#[macro_export]
macro_rules! sql_notify_repositories {
    ($store:ident, $db:ty) => {
        const _: () = {
            use $crate::deps::async_trait::async_trait;
            use $crate::deps::portico_model::notify::{
                Delivery, DeliveryStatus, EventKind, Merchant, MerchantIds, NotificationSettings, StoredEvent,
            };
            use $crate::deps::portico_storage::{
                Intake, MerchantRepository, NotificationRepository, Result, StorageError,
            };
            use $crate::deps::sqlx::{self, Row};
            use $crate::deps::time::OffsetDateTime;
            use $crate::{json, storage_error, timestamp, timestamp_opt, to_json, uuid};

            const ROW: &str = "notification row";
            type DbRow = <$db as sqlx::Database>::Row;

            fn get<'r, T: sqlx::Decode<'r, $db> + sqlx::Type<$db>>(row: &'r DbRow, column: &str) -> Result<T> {
                row.try_get(column).map_err(storage_error(ROW))
            }

            fn merchant_from(row: &DbRow) -> Result<Merchant> {
                let settings: Option<String> = get(row, "settings")?;
                Ok(Merchant {
                    ids: MerchantIds {
                        merchant_id: get(row, "merchant_id")?,
                        public_id: get(row, "public_id")?,
                        sbp_merchant_id: get(row, "sbp_merchant_id")?,
                    },
                    key_hash: get(row, "key_hash")?,
                    key_sealed: get(row, "key_sealed")?,
                    settings: settings.as_deref().map(json).transpose()?,
                    created_at: timestamp(get(row, "created_at")?)?,
                })
            }

            fn event_from(row: &DbRow) -> Result<StoredEvent> {
                let kind: String = get(row, "kind")?;
                let payload: String = get(row, "payload")?;
                Ok(StoredEvent {
                    event_id: get(row, "event_id")?,
                    merchant_id: get(row, "merchant_id")?,
                    kind: EventKind::parse(&kind).ok_or_else(|| StorageError::Other(format!("event kind {kind:?}")))?,
                    payload: json(&payload)?,
                    received_at: timestamp(get(row, "received_at")?)?,
                })
            }

            fn delivery_from(row: &DbRow) -> Result<Delivery> {
                let status: String = get(row, "status")?;
                let attempts: i32 = get(row, "attempts")?;
                Ok(Delivery {
                    id: uuid(&get::<String>(row, "id")?)?,
                    event_id: get(row, "event_id")?,
                    merchant_id: get(row, "merchant_id")?,
                    status: DeliveryStatus::parse(&status)
                        .ok_or_else(|| StorageError::Other(format!("delivery status {status:?}")))?,
                    attempts: attempts.max(0) as u32,
                    next_attempt_at: timestamp(get(row, "next_attempt_at")?)?,
                    lease_until: timestamp_opt(get(row, "lease_until")?)?,
                    created_at: timestamp(get(row, "created_at")?)?,
                    finished_at: timestamp_opt(get(row, "finished_at")?)?,
                })
            }

            #[async_trait]
            impl MerchantRepository for $store {
                async fn create_merchant(&self, merchant: &Merchant) -> Result<()> {
                    let settings = merchant.settings.as_ref().map(to_json).transpose()?;
                    sqlx::query(
                        "INSERT INTO merchants (merchant_id, public_id, sbp_merchant_id, key_hash, key_sealed, \
                         settings, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                    )
                    .bind(&merchant.ids.merchant_id)
                    .bind(&merchant.ids.public_id)
                    .bind(&merchant.ids.sbp_merchant_id)
                    .bind(&merchant.key_hash)
                    .bind(&merchant.key_sealed)
                    .bind(settings)
                    .bind(merchant.created_at.unix_timestamp())
                    .execute(&self.pool)
                    .await
                    .map_err(storage_error("merchant id, public id or key"))?;
                    Ok(())
                }

                async fn find_merchant(&self, merchant_id: &str) -> Result<Option<Merchant>> {
                    sqlx::query("SELECT * FROM merchants WHERE merchant_id = $1")
                        .bind(merchant_id)
                        .fetch_optional(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?
                        .as_ref()
                        .map(merchant_from)
                        .transpose()
                }

                async fn find_merchant_by_key(&self, key_hash: &str) -> Result<Option<Merchant>> {
                    sqlx::query("SELECT * FROM merchants WHERE key_hash = $1")
                        .bind(key_hash)
                        .fetch_optional(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?
                        .as_ref()
                        .map(merchant_from)
                        .transpose()
                }

                async fn list_merchants(&self) -> Result<Vec<Merchant>> {
                    sqlx::query("SELECT * FROM merchants ORDER BY merchant_id")
                        .fetch_all(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?
                        .iter()
                        .map(merchant_from)
                        .collect()
                }

                async fn set_merchant_key(&self, merchant_id: &str, key_hash: &str, key_sealed: &[u8]) -> Result<bool> {
                    let done =
                        sqlx::query("UPDATE merchants SET key_hash = $2, key_sealed = $3 WHERE merchant_id = $1")
                            .bind(merchant_id)
                            .bind(key_hash)
                            .bind(key_sealed)
                            .execute(&self.pool)
                            .await
                            .map_err(storage_error("merchant key"))?;
                    Ok(done.rows_affected() == 1)
                }

                async fn save_notification_settings(
                    &self,
                    merchant_id: &str,
                    settings: &NotificationSettings,
                ) -> Result<bool> {
                    let done = sqlx::query("UPDATE merchants SET settings = $2 WHERE merchant_id = $1")
                        .bind(merchant_id)
                        .bind(to_json(settings)?)
                        .execute(&self.pool)
                        .await
                        .map_err(storage_error(ROW))?;
                    Ok(done.rows_affected() == 1)
                }
            }

            #[async_trait]
            impl NotificationRepository for $store {
                async fn record_event(&self, event: &StoredEvent, delivery: &Delivery) -> Result<Intake> {
                    let mut tx = self.pool.begin().await.map_err(storage_error(ROW))?;
                    let inserted = sqlx::query(
                        "INSERT INTO notification_events (event_id, merchant_id, kind, payload, received_at) \
                         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (event_id) DO NOTHING",
                    )
                    .bind(&event.event_id)
                    .bind(&event.merchant_id)
                    .bind(event.kind.as_str())
                    .bind(to_json(&event.payload)?)
                    .bind(event.received_at.unix_timestamp())
                    .execute(&mut *tx)
                    .await
                    .map_err(storage_error(ROW))?;
                    if inserted.rows_affected() == 0 {
                        let existing = sqlx::query("SELECT * FROM notification_events WHERE event_id = $1")
                            .bind(&event.event_id)
                            .fetch_one(&mut *tx)
                            .await
                            .map_err(storage_error(ROW))?;
                        let existing = event_from(&existing)?;
                        tx.rollback().await.map_err(storage_error(ROW))?;
                        let same = existing.merchant_id == event.merchant_id
                            && existing.kind == event.kind
                            && existing.payload == event.payload;
                        return if same {
                            Ok(Intake::Duplicate)
                        } else {
                            Err(StorageError::Conflict("event id (with other content)".into()))
                        };
                    }
                    sqlx::query(
                        "INSERT INTO notification_deliveries (id, event_id, merchant_id, status, attempts, \
                         next_attempt_at, lease_until, created_at, finished_at) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                    )
                    .bind(delivery.id.to_string())
                    .bind(&delivery.event_id)
                    .bind(&delivery.merchant_id)
                    .bind(delivery.status.as_str())
                    .bind(i32::try_from(delivery.attempts).unwrap_or(i32::MAX))
                    .bind(delivery.next_attempt_at.unix_timestamp())
                    .bind(delivery.lease_until.map(OffsetDateTime::unix_timestamp))
                    .bind(delivery.created_at.unix_timestamp())
                    .bind(delivery.finished_at.map(OffsetDateTime::unix_timestamp))
                    .execute(&mut *tx)
                    .await
                    .map_err(storage_error(ROW))?;
                    tx.commit().await.map_err(storage_error(ROW))?;
                    Ok(Intake::Accepted)
                }

                async fn find_event(&self, event_id: &str) -> Result<Option<StoredEvent>> {
                    sqlx::query("SELECT * FROM notification_events WHERE event_id = $1")
                        .bind(event_id)
                        .fetch_optional(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?
                        .as_ref()
                        .map(event_from)
                        .transpose()
                }

                async fn deliveries_of(&self, event_id: &str) -> Result<Vec<Delivery>> {
                    sqlx::query("SELECT * FROM notification_deliveries WHERE event_id = $1 ORDER BY created_at, id")
                        .bind(event_id)
                        .fetch_all(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?
                        .iter()
                        .map(delivery_from)
                        .collect()
                }
            }
        };
    };
}
