//! [`sql_login_repositories!`]: trusted devices, consents and password
//! failures.

/// Implements `DeviceRepository`, `ConsentRepository` and
/// `LoginGuardRepository` for `$store` (see
/// [`sql_repositories!`](crate::sql_repositories) for the fields it needs).
#[macro_export]
macro_rules! sql_login_repositories {
    ($store:ident, $db:ty) => {
        const _: () = {
            use $crate::deps::async_trait::async_trait;
            use $crate::deps::portico_storage::{
                ConsentRepository, DeviceRepository, LoginGuardRepository, PasswordFailures, Result,
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

            fn failures_from(row: &<$db as sqlx::Database>::Row) -> Result<PasswordFailures> {
                let failures: i32 = row.try_get("failures").map_err(storage_error(ROW))?;
                let locked: Option<i64> = row.try_get("locked_until").map_err(storage_error(ROW))?;
                Ok(PasswordFailures { failures: failures.max(0) as u32, locked_until: timestamp_opt(locked)? })
            }

            #[async_trait]
            impl LoginGuardRepository for $store {
                async fn password_failures(&self, user_id: Uuid) -> Result<PasswordFailures> {
                    sqlx::query("SELECT failures, locked_until FROM login_failures WHERE user_id = $1")
                        .bind(user_id.to_string())
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(storage_error(ROW))?
                        .as_ref()
                        .map_or(Ok(PasswordFailures::default()), failures_from)
                }

                async fn record_password_failure(
                    &self,
                    user_id: Uuid,
                    block_after: u32,
                    locked_until: OffsetDateTime,
                ) -> Result<PasswordFailures> {
                    let block_after = i32::try_from(block_after).unwrap_or(i32::MAX);
                    let row = sqlx::query(
                        "INSERT INTO login_failures (user_id, failures, locked_until) \
                         VALUES ($1, CASE WHEN 1 >= $2 THEN 0 ELSE 1 END, CASE WHEN 1 >= $2 THEN $3 ELSE NULL END) \
                         ON CONFLICT (user_id) DO UPDATE SET \
                         failures = CASE WHEN login_failures.failures + 1 >= $2 THEN 0 \
                                         ELSE login_failures.failures + 1 END, \
                         locked_until = CASE WHEN login_failures.failures + 1 >= $2 THEN $3 \
                                             ELSE login_failures.locked_until END \
                         RETURNING failures, locked_until",
                    )
                    .bind(user_id.to_string())
                    .bind(block_after)
                    .bind(locked_until.unix_timestamp())
                    .fetch_one(&self.pool)
                    .await
                    .map_err(storage_error(ROW))?;
                    failures_from(&row)
                }

                async fn reset_password_failures(&self, user_id: Uuid) -> Result<()> {
                    sqlx::query("UPDATE login_failures SET failures = 0 WHERE user_id = $1")
                        .bind(user_id.to_string())
                        .execute(&self.pool)
                        .await
                        .map_err(storage_error(ROW))?;
                    Ok(())
                }
            }
        };
    };
}
