//! [`sql_login_repositories!`]: trusted devices, consents and the
//! throttle counters of password attempts.

/// Implements `DeviceRepository`, `ConsentRepository` and
/// `LoginGuardRepository` for `$store` (see
/// [`sql_repositories!`](crate::sql_repositories) for the fields it needs).
#[macro_export]
macro_rules! sql_login_repositories {
    ($store:ident, $db:ty) => {
        const _: () = {
            use $crate::deps::async_trait::async_trait;
            use $crate::deps::portico_storage::{
                ConsentRepository, CountAttempt, DeviceRepository, LoginGuardRepository, Result, Throttle,
            };
            use $crate::deps::sqlx::{self, Row};
            use $crate::deps::time::OffsetDateTime;
            use $crate::deps::uuid::Uuid;
            use $crate::{storage_error, timestamp_opt};

            const ROW: &str = "login row";

            #[async_trait]
            impl DeviceRepository for $store {
                async fn trust_device(&self, user_id: Uuid, device_id: &str, now: OffsetDateTime) -> Result<()> {
                    sqlx::query(
                        "INSERT INTO trusted_devices (user_id, device_id, trusted_at) VALUES ($1, $2, $3) \
                         ON CONFLICT (user_id, device_id) DO UPDATE SET trusted_at = excluded.trusted_at",
                    )
                    .bind(user_id.to_string())
                    .bind(device_id)
                    .bind(now.unix_timestamp())
                    .execute(&self.pool)
                    .await
                    .map_err(storage_error(ROW))?;
                    Ok(())
                }

                async fn is_device_trusted(
                    &self,
                    user_id: Uuid,
                    device_id: &str,
                    not_before: OffsetDateTime,
                ) -> Result<bool> {
                    let found = sqlx::query(
                        "SELECT 1 FROM trusted_devices WHERE user_id = $1 AND device_id = $2 AND trusted_at >= $3",
                    )
                    .bind(user_id.to_string())
                    .bind(device_id)
                    .bind(not_before.unix_timestamp())
                    .fetch_optional(&self.read_pool)
                    .await
                    .map_err(storage_error(ROW))?;
                    Ok(found.is_some())
                }
            }

            #[async_trait]
            impl ConsentRepository for $store {
                async fn find_consent(&self, user_id: Uuid, client_id: &str) -> Result<Option<Vec<String>>> {
                    let row = sqlx::query("SELECT scope_groups FROM consents WHERE user_id = $1 AND client_id = $2")
                        .bind(user_id.to_string())
                        .bind(client_id)
                        .fetch_optional(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?;
                    row.map(|row| {
                        let groups: String = row.try_get("scope_groups").map_err(storage_error(ROW))?;
                        Ok(groups.split_whitespace().map(str::to_owned).collect())
                    })
                    .transpose()
                }

                async fn grant_consent(
                    &self,
                    user_id: Uuid,
                    client_id: &str,
                    groups: &[String],
                    now: OffsetDateTime,
                ) -> Result<()> {
                    sqlx::query(
                        "INSERT INTO consents (user_id, client_id, scope_groups, granted_at) VALUES ($1, $2, $3, $4) \
                         ON CONFLICT (user_id, client_id) DO UPDATE SET scope_groups = excluded.scope_groups, \
                         granted_at = excluded.granted_at",
                    )
                    .bind(user_id.to_string())
                    .bind(client_id)
                    .bind(groups.join(" "))
                    .bind(now.unix_timestamp())
                    .execute(&self.pool)
                    .await
                    .map_err(storage_error(ROW))?;
                    Ok(())
                }
            }

            fn throttle_from(row: &<$db as sqlx::Database>::Row) -> Result<Throttle> {
                let failures: i32 = row.try_get("failures").map_err(storage_error(ROW))?;
                let locked: Option<i64> = row.try_get("locked_until").map_err(storage_error(ROW))?;
                Ok(Throttle { failures: failures.max(0) as u32, locked_until: timestamp_opt(locked)? })
            }

            #[async_trait]
            impl LoginGuardRepository for $store {
                async fn throttle(&self, key: &str, forget_before: OffsetDateTime) -> Result<Throttle> {
                    sqlx::query(
                        "SELECT CASE WHEN updated_at < $2 THEN 0 ELSE failures END AS failures, locked_until \
                         FROM login_throttles WHERE key = $1",
                    )
                    .bind(key)
                    .bind(forget_before.unix_timestamp())
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(storage_error(ROW))?
                    .as_ref()
                    .map_or(Ok(Throttle::default()), throttle_from)
                }

                async fn count_attempt(&self, attempt: CountAttempt<'_>) -> Result<Option<u32>> {
                    let hold_from = i32::try_from(attempt.hold_from).unwrap_or(i32::MAX);
                    // One statement: the count, the hold and the refusal of a
                    // locked key cannot interleave with a parallel attempt's.
                    let row = sqlx::query(
                        "INSERT INTO login_throttles (key, failures, locked_until, updated_at) \
                         VALUES ($1, 1, CASE WHEN 1 >= $4 THEN $5 ELSE NULL END, $2) \
                         ON CONFLICT (key) DO UPDATE SET \
                         failures = CASE WHEN login_throttles.updated_at < $3 THEN 1 \
                                         ELSE login_throttles.failures + 1 END, \
                         locked_until = CASE WHEN (CASE WHEN login_throttles.updated_at < $3 THEN 1 \
                                                        ELSE login_throttles.failures + 1 END) >= $4 THEN $5 \
                                             ELSE login_throttles.locked_until END, \
                         updated_at = $2 \
                         WHERE login_throttles.locked_until IS NULL OR login_throttles.locked_until <= $2 \
                         RETURNING failures",
                    )
                    .bind(attempt.key)
                    .bind(attempt.now.unix_timestamp())
                    .bind(attempt.forget_before.unix_timestamp())
                    .bind(hold_from)
                    .bind(attempt.hold_until.unix_timestamp())
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(storage_error(ROW))?;
                    row.map(|row| {
                        let failures: i32 = row.try_get("failures").map_err(storage_error(ROW))?;
                        Ok(failures.max(0) as u32)
                    })
                    .transpose()
                }

                async fn uncount_attempt(&self, key: &str, hold_until: Option<OffsetDateTime>) -> Result<()> {
                    sqlx::query(
                        "UPDATE login_throttles SET failures = failures - 1, \
                         locked_until = CASE WHEN locked_until = $2 THEN NULL ELSE locked_until END \
                         WHERE key = $1 AND failures > 0",
                    )
                    .bind(key)
                    .bind(hold_until.map(OffsetDateTime::unix_timestamp))
                    .execute(&self.pool)
                    .await
                    .map_err(storage_error(ROW))?;
                    Ok(())
                }

                async fn lock_throttle(&self, key: &str, until: OffsetDateTime) -> Result<()> {
                    sqlx::query(
                        "UPDATE login_throttles SET locked_until = $2 \
                         WHERE key = $1 AND (locked_until IS NULL OR locked_until < $2)",
                    )
                    .bind(key)
                    .bind(until.unix_timestamp())
                    .execute(&self.pool)
                    .await
                    .map_err(storage_error(ROW))?;
                    Ok(())
                }

                async fn clear_throttle(&self, key: &str) -> Result<()> {
                    sqlx::query("DELETE FROM login_throttles WHERE key = $1")
                        .bind(key)
                        .execute(&self.pool)
                        .await
                        .map_err(storage_error(ROW))?;
                    Ok(())
                }

                async fn remove_stale_throttles(&self, before: OffsetDateTime) -> Result<u64> {
                    let done = sqlx::query(
                        "DELETE FROM login_throttles \
                         WHERE updated_at < $1 AND (locked_until IS NULL OR locked_until < $1)",
                    )
                    .bind(before.unix_timestamp())
                    .execute(&self.pool)
                    .await
                    .map_err(storage_error(ROW))?;
                    Ok(done.rows_affected())
                }
            }
        };
    };
}
