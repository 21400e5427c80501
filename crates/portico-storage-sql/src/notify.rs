//! [`sql_notify_repositories!`]: merchants, submitted events and deliveries.

/// Implements `MerchantRepository` and `NotificationRepository` for
/// `$store` (see [`sql_repositories!`](crate::sql_repositories) for the
/// fields it needs). `skip_locked` is appended to the row selection of a
/// claim: `" FOR UPDATE SKIP LOCKED"` on PostgreSQL, so that concurrent
/// claims pass each other's rows by; `""` on SQLite, whose single writer
/// already serializes them. `batches` chooses how many-row statements are
/// written (see [`notify_batches`](crate::notify_batches)): `arrays` on
/// PostgreSQL, `values` elsewhere.
#[macro_export]
macro_rules! sql_notify_repositories {
    ($store:ident, $db:ty, skip_locked = $skip_locked:literal, batches = $batches:ident) => {
        const _: () = {
            use $crate::deps::async_trait::async_trait;
            use $crate::deps::portico_model::notify::{
                Attempt, Delivery, DeliveryStatus, EventKind, Merchant, MerchantIds, NotificationSettings, Outcome,
                StoredEvent,
            };
            use $crate::deps::portico_storage::{
                DeliveryClaim, FinishedAttempt, Intake, MerchantRepository, NotificationRepository, RemovedDeliveries,
                Result, StorageError,
            };
            use $crate::deps::sqlx::{self, Row};
            use $crate::deps::time::OffsetDateTime;
            use $crate::deps::uuid::Uuid;
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

            type Query<'q> = sqlx::query::Query<'q, $db, <$db as sqlx::Database>::Arguments<'q>>;

            /// Binds an event's five columns, in the table's order.
            fn bind_event<'q>(query: Query<'q>, event: &'q StoredEvent) -> Result<Query<'q>> {
                Ok(query
                    .bind(&event.event_id)
                    .bind(&event.merchant_id)
                    .bind(event.kind.as_str())
                    .bind(to_json(&event.payload)?)
                    .bind(event.received_at.unix_timestamp()))
            }

            /// Binds a delivery's nine columns, in the table's order.
            fn bind_delivery<'q>(query: Query<'q>, delivery: &'q Delivery) -> Query<'q> {
                query
                    .bind(delivery.id.to_string())
                    .bind(&delivery.event_id)
                    .bind(&delivery.merchant_id)
                    .bind(delivery.status.as_str())
                    .bind(i32::try_from(delivery.attempts).unwrap_or(i32::MAX))
                    .bind(delivery.next_attempt_at.unix_timestamp())
                    .bind(delivery.lease_until.map(OffsetDateTime::unix_timestamp))
                    .bind(delivery.created_at.unix_timestamp())
                    .bind(delivery.finished_at.map(OffsetDateTime::unix_timestamp))
            }

            async fn insert_delivery<'e, E: sqlx::Executor<'e, Database = $db>>(
                executor: E,
                delivery: &Delivery,
            ) -> Result<()> {
                let query = sqlx::query(
                    "INSERT INTO notification_deliveries (id, event_id, merchant_id, status, attempts, \
                     next_attempt_at, lease_until, created_at, finished_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                );
                bind_delivery(query, delivery).execute(executor).await.map_err(storage_error("delivery"))?;
                Ok(())
            }

            /// A finished attempt's delivery: its status, when it is due
            /// next, and when it finished.
            fn finished_columns(done: &FinishedAttempt) -> (DeliveryStatus, OffsetDateTime, Option<OffsetDateTime>) {
                let at = done.attempt.at;
                match done.outcome {
                    Outcome::Delivered => (DeliveryStatus::Delivered, at, Some(at)),
                    Outcome::RetryAt(next) => (DeliveryStatus::Pending, next, None),
                    Outcome::Failed => (DeliveryStatus::Failed, at, Some(at)),
                }
            }

            $crate::__notify_batches!($batches, $db);

            /// The rows of `table` whose `column` is one of `keys` (read in
            /// chunks), each made by `from`.
            async fn rows_in<T>(
                pool: &sqlx::Pool<$db>,
                table: &str,
                column: &str,
                keys: &[&str],
                from: fn(&DbRow) -> Result<T>,
            ) -> Result<Vec<T>> {
                let mut found = Vec::with_capacity(keys.len());
                for chunk in keys.chunks(500) {
                    let sql = format!("SELECT * FROM {table} WHERE {}", one_of(column, 1, chunk.len()));
                    for row in bind_all(sqlx::query(&sql), chunk).fetch_all(pool).await.map_err(storage_error(ROW))? {
                        found.push(from(&row)?);
                    }
                }
                Ok(found)
            }

            /// The merchant `sql` (one `$1` placeholder) finds for `value`.
            async fn find_merchant_by(
                pool: &sqlx::Pool<$db>,
                sql: &'static str,
                value: &str,
            ) -> Result<Option<Merchant>> {
                sqlx::query(sql)
                    .bind(value)
                    .fetch_optional(pool)
                    .await
                    .map_err(storage_error(ROW))?
                    .as_ref()
                    .map(merchant_from)
                    .transpose()
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
                    find_merchant_by(&self.read_pool, "SELECT * FROM merchants WHERE merchant_id = $1", merchant_id)
                        .await
                }

                async fn find_merchants(&self, merchant_ids: &[&str]) -> Result<Vec<Merchant>> {
                    rows_in(&self.read_pool, "merchants", "merchant_id", merchant_ids, merchant_from).await
                }

                async fn find_merchant_by_key(&self, key_hash: &str) -> Result<Option<Merchant>> {
                    find_merchant_by(&self.read_pool, "SELECT * FROM merchants WHERE key_hash = $1", key_hash).await
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
                async fn record_events(&self, batch: &[(StoredEvent, Delivery)]) -> Result<Vec<Intake>> {
                    // The first of each id in the batch goes in, with its
                    // delivery, in one batch; what the insert passed over
                    // was there before (or earlier in the batch) and is
                    // compared.
                    let mut first_index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
                    let mut fresh: Vec<usize> = Vec::new();
                    for (i, (event, _)) in batch.iter().enumerate() {
                        if !first_index.contains_key(event.event_id.as_str()) {
                            first_index.insert(&event.event_id, i);
                            fresh.push(i);
                        }
                    }
                    let fresh: Vec<&(StoredEvent, Delivery)> = fresh.iter().map(|&i| &batch[i]).collect();
                    let inserted = if fresh.is_empty() {
                        std::collections::HashSet::new()
                    } else {
                        insert_fresh(&self.pool, &fresh).await?
                    };
                    let mut results = Vec::with_capacity(batch.len());
                    for (i, (event, _)) in batch.iter().enumerate() {
                        if first_index.get(event.event_id.as_str()) == Some(&i) && inserted.contains(&event.event_id) {
                            results.push(Intake::Accepted);
                            continue;
                        }
                        let existing = sqlx::query("SELECT * FROM notification_events WHERE event_id = $1")
                            .bind(&event.event_id)
                            .fetch_one(&self.pool)
                            .await
                            .map_err(storage_error(ROW))?;
                        let existing = event_from(&existing)?;
                        let same = existing.merchant_id == event.merchant_id
                            && existing.kind == event.kind
                            && existing.payload == event.payload;
                        results.push(if same { Intake::Duplicate } else { Intake::Reused });
                    }
                    Ok(results)
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

                async fn find_events(&self, event_ids: &[&str]) -> Result<Vec<StoredEvent>> {
                    rows_in(&self.read_pool, "notification_events", "event_id", event_ids, event_from).await
                }

                async fn claim_due_deliveries(&self, claim: &DeliveryClaim<'_>) -> Result<Vec<Delivery>> {
                    // The oldest `limit` due rows (index order) that no
                    // concurrent claim holds are the candidates, locked; at
                    // most `per_merchant` of each merchant are taken.
                    let due = "status = 'PENDING' AND next_attempt_at <= $2";
                    let skip = format!(" AND NOT ({})", one_of("merchant_id", 5, claim.skip_merchants.len()));
                    let sql = format!(
                        "WITH candidates AS (SELECT id, merchant_id, next_attempt_at FROM notification_deliveries \
                         WHERE {due}{skip} ORDER BY next_attempt_at LIMIT $3{}), \
                         ranked AS (SELECT id, next_attempt_at, ROW_NUMBER() OVER \
                         (PARTITION BY merchant_id ORDER BY next_attempt_at) AS n FROM candidates) \
                         UPDATE notification_deliveries SET lease_until = $1, next_attempt_at = $1 WHERE id IN \
                         (SELECT id FROM ranked WHERE n <= $4 ORDER BY next_attempt_at LIMIT $3) \
                         AND {due} RETURNING *",
                        $skip_locked
                    );
                    let query = sqlx::query(&sql)
                        .bind(claim.lease_until.unix_timestamp())
                        .bind(claim.now.unix_timestamp())
                        .bind(i64::from(claim.limit))
                        .bind(i64::from(claim.per_merchant.max(1)));
                    let skipped: Vec<&str> = claim.skip_merchants.iter().map(String::as_str).collect();
                    let mut claimed = bind_all(query, &skipped)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(storage_error(ROW))?
                        .iter()
                        .map(delivery_from)
                        .collect::<Result<Vec<_>>>()?;
                    claimed.sort_by_key(|d| (d.created_at, d.id));
                    Ok(claimed)
                }

                async fn finish_attempts(&self, finished: &[FinishedAttempt]) -> Result<()> {
                    if finished.is_empty() {
                        return Ok(());
                    }
                    write_finished(&self.pool, finished).await
                }

                async fn release_deliveries(
                    &self,
                    leases: &[(Uuid, OffsetDateTime)],
                    now: OffsetDateTime,
                ) -> Result<()> {
                    if leases.is_empty() {
                        return Ok(());
                    }
                    write_released(&self.pool, leases, now).await
                }

                async fn attempts_of(&self, delivery_id: Uuid) -> Result<Vec<Attempt>> {
                    let rows = sqlx::query("SELECT * FROM delivery_attempts WHERE delivery_id = $1 ORDER BY attempt")
                        .bind(delivery_id.to_string())
                        .fetch_all(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?;
                    rows.iter()
                        .map(|row| {
                            let attempt: i32 = get(row, "attempt")?;
                            let status: Option<i32> = get(row, "status_code")?;
                            Ok(Attempt {
                                delivery_id: uuid(&get::<String>(row, "delivery_id")?)?,
                                attempt: attempt.max(0) as u32,
                                at: timestamp(get(row, "at")?)?,
                                status_code: status.and_then(|s| u16::try_from(s).ok()),
                                error: get(row, "error")?,
                                response_excerpt: get(row, "response")?,
                                duration_ms: get(row, "duration_ms")?,
                            })
                        })
                        .collect()
                }

                async fn list_deliveries(
                    &self,
                    merchant_id: &str,
                    status: Option<DeliveryStatus>,
                    offset: u32,
                    limit: u32,
                ) -> Result<(Vec<Delivery>, u64)> {
                    let status = status.map(DeliveryStatus::as_str);
                    let filter = "merchant_id = $1 AND ($2 IS NULL OR status = $2)";
                    let total: i64 =
                        sqlx::query_scalar(&format!("SELECT COUNT(*) FROM notification_deliveries WHERE {filter}"))
                            .bind(merchant_id)
                            .bind(status)
                            .fetch_one(&self.read_pool)
                            .await
                            .map_err(storage_error(ROW))?;
                    let page = sqlx::query(&format!(
                        "SELECT * FROM notification_deliveries WHERE {filter} \
                         ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4"
                    ))
                    .bind(merchant_id)
                    .bind(status)
                    .bind(i64::from(limit))
                    .bind(i64::from(offset))
                    .fetch_all(&self.read_pool)
                    .await
                    .map_err(storage_error(ROW))?
                    .iter()
                    .map(delivery_from)
                    .collect::<Result<Vec<_>>>()?;
                    Ok((page, u64::try_from(total).unwrap_or(0)))
                }

                async fn find_delivery(&self, id: Uuid) -> Result<Option<Delivery>> {
                    sqlx::query("SELECT * FROM notification_deliveries WHERE id = $1")
                        .bind(id.to_string())
                        .fetch_optional(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?
                        .as_ref()
                        .map(delivery_from)
                        .transpose()
                }

                async fn create_delivery(&self, delivery: &Delivery) -> Result<()> {
                    insert_delivery(&self.pool, delivery).await
                }

                async fn remove_finished_deliveries(
                    &self,
                    before: OffsetDateTime,
                    limit: u32,
                ) -> Result<RemovedDeliveries> {
                    // A finished delivery's `next_attempt_at` is when it
                    // finished, so the due index finds them.
                    let mut tx = self.pool.begin().await.map_err(storage_error(ROW))?;
                    let found = sqlx::query(
                        "SELECT id, event_id FROM notification_deliveries \
                         WHERE status IN ('DELIVERED', 'FAILED') AND next_attempt_at < $1 AND finished_at < $1 \
                         LIMIT $2",
                    )
                    .bind(before.unix_timestamp())
                    .bind(i64::from(limit.min($crate::deps::portico_storage::MAX_REMOVED_DELIVERIES)))
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(storage_error(ROW))?;
                    if found.is_empty() {
                        return Ok(RemovedDeliveries::default());
                    }
                    let ids: Vec<String> = found.iter().map(|row| get(row, "id")).collect::<Result<_>>()?;
                    let mut events: Vec<String> =
                        found.iter().map(|row| get(row, "event_id")).collect::<Result<_>>()?;
                    events.sort_unstable();
                    events.dedup();
                    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                    let events: Vec<&str> = events.iter().map(String::as_str).collect();
                    let mut removed = RemovedDeliveries::default();
                    for (table, column, keys, count) in [
                        ("delivery_attempts", "delivery_id", &ids, &mut removed.attempts),
                        ("notification_deliveries", "id", &ids, &mut removed.deliveries),
                    ] {
                        let sql = format!("DELETE FROM {table} WHERE {}", one_of(column, 1, keys.len()));
                        *count = bind_all(sqlx::query(&sql), keys)
                            .execute(&mut *tx)
                            .await
                            .map_err(storage_error(ROW))?
                            .rows_affected();
                    }
                    // An event goes with its last delivery (a resend may
                    // still be pending, or finished later).
                    let sql = format!(
                        "DELETE FROM notification_events WHERE {} AND NOT EXISTS \
                         (SELECT 1 FROM notification_deliveries d WHERE d.event_id = notification_events.event_id)",
                        one_of("event_id", 1, events.len())
                    );
                    removed.events = bind_all(sqlx::query(&sql), &events)
                        .execute(&mut *tx)
                        .await
                        .map_err(storage_error(ROW))?
                        .rows_affected();
                    tx.commit().await.map_err(storage_error(ROW))?;
                    Ok(removed)
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
