//! [`sql_repositories!`]: every repository trait, once, for both backends.

/// Implements every `portico_storage` repository trait for `$store`, a struct
/// with fields `pool: sqlx::Pool<$db>` (for writes) and `read_pool` (for
/// queries that only read; the same pool where the backend has no reason to
/// separate them). `$row` is the backend's row type and
/// `$backend` the name [`Maintenance::backend`] reports. With
/// `fast_path = field`, the token endpoint's and the liveness check's
/// operations (`find_client`, `find_user`, `active_signing_kid`, `find_code`,
/// `find_refresh_token`, `access_token_state`, `redeem_code`,
/// `rotate_refresh_token`) first ask `self.field: Option<T>`, where `T` has
/// a synchronous method of each name, and use its answer when it is there.
/// The two writes answer `None` when `T` cannot take the write now (another
/// writer holds the database); they then run on `pool` as usual.
///
/// [`Maintenance::backend`]: portico_storage::Maintenance::backend
#[macro_export]
macro_rules! sql_repositories {
    ($store:ident, $db:ty, $row:ty, $backend:literal $(, fast_path = $fast:ident)?) => {
        const _: () = {
            use $crate::deps::async_trait::async_trait;
            use $crate::deps::portico_model::audit::AuditEvent;
            use $crate::deps::portico_model::client::Client;
            use $crate::deps::portico_model::key::SigningKeyRecord;
            use $crate::deps::portico_model::login::LoginProcess;
            use $crate::deps::portico_model::oauth::{
                AccessTokenState, AuthorizationCode, Grant, Redemption, RefreshToken, Rotation, StoredCode,
                StoredRefreshToken,
            };
            use $crate::deps::portico_model::session::SsoSession;
            use $crate::deps::portico_model::user::User;
            use $crate::deps::portico_storage::{
                AuditRepository, AuthorizationCodeRepository, CleanupReport, ClientRepository, GrantRepository,
                LoginProcessRepository, Maintenance, RefreshTokenRepository, Result, SessionRepository,
                SigningKeyRepository, UserRepository,
            };
            use $crate::deps::sqlx::{self, Row};
            use $crate::deps::time::{Duration, OffsetDateTime};
            use $crate::deps::uuid::Uuid;
            use $crate::queries::{self, CODE_COLUMNS};
            use $crate::rows::{self, Columns as _};
            use $crate::{storage_error, to_json};

            const ROW: &str = "row";

            /// A driver row as [`Columns`]($crate::rows::Columns).
            struct Cols<'r>(&'r $row);

            impl $crate::rows::Columns for Cols<'_> {
                fn text(&self, column: &str) -> Result<String> {
                    self.0.try_get(column).map_err(storage_error(ROW))
                }
                fn text_opt(&self, column: &str) -> Result<Option<String>> {
                    self.0.try_get(column).map_err(storage_error(ROW))
                }
                fn int(&self, column: &str) -> Result<i64> {
                    self.0.try_get(column).map_err(storage_error(ROW))
                }
                fn int_opt(&self, column: &str) -> Result<Option<i64>> {
                    self.0.try_get(column).map_err(storage_error(ROW))
                }
                fn flag(&self, column: &str) -> Result<bool> {
                    self.0.try_get(column).map_err(storage_error(ROW))
                }
                fn bytes(&self, column: &str) -> Result<Vec<u8>> {
                    self.0.try_get(column).map_err(storage_error(ROW))
                }
            }

            fn client_from_row(row: &$row) -> Result<Client> {
                rows::client(&Cols(row))
            }
            fn user_from_row(row: &$row) -> Result<User> {
                rows::user(&Cols(row))
            }
            fn key_from_row(row: &$row) -> Result<SigningKeyRecord> {
                rows::signing_key(&Cols(row))
            }
            fn code_from_row(row: &$row) -> Result<AuthorizationCode> {
                rows::code(&Cols(row))
            }
            fn grant_from_row(row: &$row) -> Result<Grant> {
                rows::grant(&Cols(row))
            }
            fn session_from_row(row: &$row) -> Result<SsoSession> {
                rows::session(&Cols(row))
            }
            fn process_from_row(row: &$row) -> Result<LoginProcess> {
                rows::login_process(&Cols(row))
            }
            fn audit_from_row(row: &$row) -> Result<AuditEvent> {
                rows::audit(&Cols(row))
            }

            #[async_trait]
            impl ClientRepository for $store {
                async fn create_client(&self, client: &Client) -> Result<()> {
                    sqlx::query(
                        "INSERT INTO clients (client_id, secret_hash, name_ru, name_en, redirect_uris, scopes, \
                         require_consent, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                    )
                    .bind(&client.client_id)
                    .bind(&client.secret_hash)
                    .bind(&client.name.ru)
                    .bind(&client.name.en)
                    .bind(to_json(&client.redirect_uris)?)
                    .bind(client.scopes.join(" "))
                    .bind(client.require_consent)
                    .bind(client.created_at.unix_timestamp())
                    .execute(&self.pool)
                    .await
                    .map_err(storage_error("client id"))?;
                    Ok(())
                }

                async fn find_client(&self, client_id: &str) -> Result<Option<Client>> {
                    $( if let Some(fast) = &self.$fast { return fast.find_client(client_id); } )?
                    sqlx::query(queries::FIND_CLIENT)
                        .bind(client_id)
                        .fetch_optional(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?
                        .as_ref()
                        .map(client_from_row)
                        .transpose()
                }

                async fn list_clients(&self) -> Result<Vec<Client>> {
                    sqlx::query("SELECT * FROM clients ORDER BY client_id")
                        .fetch_all(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?
                        .iter()
                        .map(client_from_row)
                        .collect()
                }

                async fn delete_client(&self, client_id: &str) -> Result<bool> {
                    let done = sqlx::query("DELETE FROM clients WHERE client_id = $1")
                        .bind(client_id)
                        .execute(&self.pool)
                        .await
                        .map_err(storage_error(ROW))?;
                    Ok(done.rows_affected() > 0)
                }
            }

            #[async_trait]
            impl UserRepository for $store {
                async fn create_user(&self, user: &User) -> Result<()> {
                    sqlx::query(
                        "INSERT INTO users (id, login, password_hash, phone, email, name, phone_login_enabled, \
                         blocked, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                    )
                    .bind(user.id.to_string())
                    .bind(&user.login)
                    .bind(&user.password_hash)
                    .bind(&user.phone)
                    .bind(&user.email)
                    .bind(&user.name)
                    .bind(user.phone_login_enabled)
                    .bind(user.blocked)
                    .bind(user.created_at.unix_timestamp())
                    .execute(&self.pool)
                    .await
                    .map_err(storage_error("user login"))?;
                    Ok(())
                }

                async fn find_user(&self, id: Uuid) -> Result<Option<User>> {
                    $( if let Some(fast) = &self.$fast { return fast.find_user(id); } )?
                    sqlx::query(queries::FIND_USER)
                        .bind(id.to_string())
                        .fetch_optional(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?
                        .as_ref()
                        .map(user_from_row)
                        .transpose()
                }

                async fn find_user_by_login(&self, login: &str) -> Result<Option<User>> {
                    sqlx::query("SELECT * FROM users WHERE login = $1")
                        .bind(login)
                        .fetch_optional(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?
                        .as_ref()
                        .map(user_from_row)
                        .transpose()
                }

                async fn find_users_by_phone(&self, phone: &str) -> Result<Vec<User>> {
                    sqlx::query("SELECT * FROM users WHERE phone = $1 ORDER BY login")
                        .bind(phone)
                        .fetch_all(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?
                        .iter()
                        .map(user_from_row)
                        .collect()
                }

                async fn list_users(&self) -> Result<Vec<User>> {
                    sqlx::query("SELECT * FROM users ORDER BY login")
                        .fetch_all(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?
                        .iter()
                        .map(user_from_row)
                        .collect()
                }

                async fn set_user_blocked(
                    &self,
                    login: &str,
                    blocked: bool,
                    now: OffsetDateTime,
                ) -> Result<Option<User>> {
                    let mut tx = self.pool.begin().await.map_err(storage_error(ROW))?;
                    let Some(row) = sqlx::query("UPDATE users SET blocked = $2 WHERE login = $1 RETURNING *")
                        .bind(login)
                        .bind(blocked)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(storage_error(ROW))?
                    else {
                        return Ok(None);
                    };
                    let user = user_from_row(&row)?;
                    if blocked {
                        sqlx::query("UPDATE grants SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL")
                            .bind(user.id.to_string())
                            .bind(now.unix_timestamp())
                            .execute(&mut *tx)
                            .await
                            .map_err(storage_error(ROW))?;
                        sqlx::query("DELETE FROM sso_sessions WHERE user_id = $1")
                            .bind(user.id.to_string())
                            .execute(&mut *tx)
                            .await
                            .map_err(storage_error(ROW))?;
                    }
                    tx.commit().await.map_err(storage_error(ROW))?;
                    Ok(Some(user))
                }
            }

            #[async_trait]
            impl SigningKeyRepository for $store {
                async fn insert_first_signing_key(&self, key: &SigningKeyRecord) -> Result<bool> {
                    let done = sqlx::query(
                        "INSERT INTO signing_keys (kid, private_sealed, created_at, retired_at) \
                         SELECT $1, $2, $3, NULL WHERE NOT EXISTS (SELECT 1 FROM signing_keys) \
                         ON CONFLICT DO NOTHING",
                    )
                    .bind(&key.kid)
                    .bind(&key.private_sealed)
                    .bind(key.created_at.unix_timestamp())
                    .execute(&self.pool)
                    .await
                    .map_err(storage_error("signing key"))?;
                    Ok(done.rows_affected() > 0)
                }

                async fn rotate_signing_key(&self, key: &SigningKeyRecord, now: OffsetDateTime) -> Result<()> {
                    let mut tx = self.pool.begin().await.map_err(storage_error(ROW))?;
                    sqlx::query("UPDATE signing_keys SET retired_at = $1 WHERE retired_at IS NULL")
                        .bind(now.unix_timestamp())
                        .execute(&mut *tx)
                        .await
                        .map_err(storage_error(ROW))?;
                    sqlx::query(
                        "INSERT INTO signing_keys (kid, private_sealed, created_at, retired_at) \
                         VALUES ($1, $2, $3, NULL)",
                    )
                    .bind(&key.kid)
                    .bind(&key.private_sealed)
                    .bind(key.created_at.unix_timestamp())
                    .execute(&mut *tx)
                    .await
                    .map_err(storage_error("active signing key"))?;
                    tx.commit().await.map_err(storage_error(ROW))?;
                    Ok(())
                }

                async fn active_signing_kid(&self) -> Result<Option<String>> {
                    $( if let Some(fast) = &self.$fast { return fast.active_signing_kid(); } )?
                    let row = sqlx::query(queries::ACTIVE_SIGNING_KID)
                        .fetch_optional(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?;
                    row.map(|row| Cols(&row).text("kid")).transpose()
                }

                async fn list_signing_keys(&self) -> Result<Vec<SigningKeyRecord>> {
                    sqlx::query("SELECT * FROM signing_keys ORDER BY created_at DESC, kid")
                        .fetch_all(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?
                        .iter()
                        .map(key_from_row)
                        .collect()
                }
            }

            #[async_trait]
            impl AuthorizationCodeRepository for $store {
                async fn insert_code(&self, code: &AuthorizationCode) -> Result<()> {
                    sqlx::query(
                        "INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri, scope, \
                         code_challenge, nonce, auth_time, created_at, expires_at, amr) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                    )
                    .bind(&code.code_hash)
                    .bind(&code.client_id)
                    .bind(code.user_id.to_string())
                    .bind(&code.redirect_uri)
                    .bind(&code.scope)
                    .bind(&code.code_challenge)
                    .bind(&code.nonce)
                    .bind(code.auth_time.unix_timestamp())
                    .bind(code.created_at.unix_timestamp())
                    .bind(code.expires_at.unix_timestamp())
                    .bind(code.amr.join(" "))
                    .execute(&self.pool)
                    .await
                    .map_err(storage_error("authorization code"))?;
                    Ok(())
                }

                async fn find_code(&self, code_hash: &str) -> Result<Option<StoredCode>> {
                    $( if let Some(fast) = &self.$fast { return fast.find_code(code_hash); } )?
                    let row = sqlx::query(queries::FIND_CODE)
                        .bind(code_hash)
                        .fetch_optional(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?;
                    row.map(|row| rows::stored_code(&Cols(&row))).transpose()
                }

                async fn redeem_code(
                    &self,
                    code_hash: &str,
                    now: OffsetDateTime,
                    grant: &Grant,
                    refresh: &RefreshToken,
                    audit: &AuditEvent,
                ) -> Result<Redemption> {
                    $(
                        if let Some(fast) = &self.$fast
                            && let Some(done) = fast.redeem_code(code_hash, now, grant, refresh, audit)?
                        {
                            return Ok(done);
                        }
                    )?
                    if $backend == "postgres" {
                        // One round trip. A parallel redemption of the same
                        // code makes this wait for its row and then find it
                        // spent.
                        let query = sqlx::query(queries::PG_REDEEM_CODE).bind(code_hash).bind(now.unix_timestamp());
                        let query = bind_grant(query, grant)
                            .bind(&refresh.token_hash)
                            .bind(refresh.created_at.unix_timestamp())
                            .bind(refresh.expires_at.unix_timestamp());
                        if counted_write(&self.pool, query, audit, "redeemed").await? {
                            return Ok(Redemption::Redeemed);
                        }
                        let code = self.spend_code(code_hash, now).await?;
                        return Ok(Redemption::Replay { grant_id: code.and_then(|c| c.grant_id) });
                    }
                    let mut tx = self.pool.begin().await.map_err(storage_error(ROW))?;
                    let spent = sqlx::query(queries::SPEND_CODE_FOR_GRANT)
                    .bind(code_hash)
                    .bind(now.unix_timestamp())
                    .bind(grant.id.to_string())
                    .execute(&mut *tx)
                    .await
                    .map_err(storage_error(ROW))?;
                    if spent.rows_affected() == 0 {
                        drop(tx);
                        let code = self.spend_code(code_hash, now).await?;
                        return Ok(Redemption::Replay { grant_id: code.and_then(|c| c.grant_id) });
                    }
                    insert_grant(&mut tx, grant).await?;
                    insert_refresh(&mut *tx, refresh).await?;
                    insert_audit(&mut *tx, audit).await?;
                    tx.commit().await.map_err(storage_error(ROW))?;
                    Ok(Redemption::Redeemed)
                }

                async fn spend_code(&self, code_hash: &str, now: OffsetDateTime) -> Result<Option<AuthorizationCode>> {
                    let row = sqlx::query(&format!(
                        "UPDATE authorization_codes SET consumed_at = COALESCE(consumed_at, $2) \
                         WHERE code_hash = $1 RETURNING {CODE_COLUMNS}"
                    ))
                    .bind(code_hash)
                    .bind(now.unix_timestamp())
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(storage_error(ROW))?;
                    row.map(|row| code_from_row(&row)).transpose()
                }
            }

            /// Binds a grant's eight columns (id, client, user, scope, auth
            /// time, created, revoked, amr), in the table's order.
            fn bind_grant<'q>(query: Query<'q>, grant: &'q Grant) -> Query<'q> {
                query
                    .bind(grant.id.to_string())
                    .bind(&grant.client_id)
                    .bind(grant.user_id.to_string())
                    .bind(&grant.scope)
                    .bind(grant.auth_time.unix_timestamp())
                    .bind(grant.created_at.unix_timestamp())
                    .bind(grant.revoked_at.map(OffsetDateTime::unix_timestamp))
                    .bind(grant.amr.join(" "))
            }

            async fn insert_grant(tx: &mut sqlx::Transaction<'_, $db>, grant: &Grant) -> Result<()> {
                bind_grant(sqlx::query(queries::INSERT_GRANT), grant)
                .execute(&mut **tx)
                .await
                .map_err(storage_error("grant"))?;
                Ok(())
            }

            async fn insert_refresh<'e, E>(executor: E, token: &RefreshToken) -> Result<bool>
            where
                E: sqlx::Executor<'e, Database = $db>,
            {
                let done = bind_refresh(sqlx::query(queries::INSERT_REFRESH_TOKEN), token)
                    .execute(executor)
                    .await
                    .map_err(storage_error("refresh token"))?;
                Ok(done.rows_affected() > 0)
            }

            /// Binds a refresh token's four columns (hash, grant, created,
            /// expires), in the table's order.
            fn bind_refresh<'q>(query: Query<'q>, token: &'q RefreshToken) -> Query<'q> {
                query
                    .bind(&token.token_hash)
                    .bind(token.grant_id.to_string())
                    .bind(token.created_at.unix_timestamp())
                    .bind(token.expires_at.unix_timestamp())
            }

            /// Runs a one-statement write that ends with the audit event's
            /// columns and answers one count named `column`: whether it
            /// counted anything.
            async fn counted_write<'q>(
                pool: &sqlx::Pool<$db>,
                query: Query<'q>,
                audit: &'q AuditEvent,
                column: &str,
            ) -> Result<bool> {
                let row = bind_audit(query, audit)?.fetch_one(pool).await.map_err(storage_error(ROW))?;
                let count: i64 = row.try_get(column).map_err(storage_error(ROW))?;
                Ok(count > 0)
            }

            type Query<'q> = sqlx::query::Query<'q, $db, <$db as sqlx::Database>::Arguments<'q>>;

            /// Binds an audit event's five columns (at, kind, user, client,
            /// detail), in the table's order.
            fn bind_audit<'q>(query: Query<'q>, event: &'q AuditEvent) -> Result<Query<'q>> {
                Ok(query
                    .bind(event.at.unix_timestamp())
                    .bind(&event.kind)
                    .bind(event.user_id.map(|id| id.to_string()))
                    .bind(&event.client_id)
                    .bind(to_json(&event.detail)?))
            }

            async fn insert_audit<'e, E>(executor: E, event: &AuditEvent) -> Result<()>
            where
                E: sqlx::Executor<'e, Database = $db>,
            {
                bind_audit(sqlx::query(queries::INSERT_AUDIT), event)?
                    .execute(executor)
                    .await
                    .map_err(storage_error(ROW))?;
                Ok(())
            }

            #[async_trait]
            impl GrantRepository for $store {
                async fn find_grant(&self, id: Uuid) -> Result<Option<Grant>> {
                    sqlx::query("SELECT * FROM grants WHERE id = $1")
                        .bind(id.to_string())
                        .fetch_optional(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?
                        .as_ref()
                        .map(grant_from_row)
                        .transpose()
                }

                async fn revoke_grant(&self, id: Uuid, now: OffsetDateTime) -> Result<bool> {
                    let done = sqlx::query("UPDATE grants SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL")
                        .bind(id.to_string())
                        .bind(now.unix_timestamp())
                        .execute(&self.pool)
                        .await
                        .map_err(storage_error(ROW))?;
                    Ok(done.rows_affected() > 0)
                }

                async fn revoke_access_token(
                    &self,
                    jti: &str,
                    expires_at: OffsetDateTime,
                    now: OffsetDateTime,
                ) -> Result<()> {
                    sqlx::query(
                        "INSERT INTO revoked_access_tokens (jti, expires_at, revoked_at) VALUES ($1, $2, $3) \
                         ON CONFLICT DO NOTHING",
                    )
                    .bind(jti)
                    .bind(expires_at.unix_timestamp())
                    .bind(now.unix_timestamp())
                    .execute(&self.pool)
                    .await
                    .map_err(storage_error(ROW))?;
                    Ok(())
                }

                async fn access_token_state(&self, grant_id: Uuid, jti: &str) -> Result<AccessTokenState> {
                    $( if let Some(fast) = &self.$fast { return fast.access_token_state(grant_id, jti); } )?
                    let row = sqlx::query(queries::ACCESS_TOKEN_STATE)
                        .bind(grant_id.to_string())
                        .bind(jti)
                        .fetch_one(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?;
                    rows::access_token_state(&Cols(&row))
                }
            }

            #[async_trait]
            impl RefreshTokenRepository for $store {
                async fn find_refresh_token(&self, token_hash: &str) -> Result<Option<StoredRefreshToken>> {
                    $( if let Some(fast) = &self.$fast { return fast.find_refresh_token(token_hash); } )?
                    let row = sqlx::query(queries::FIND_REFRESH_TOKEN)
                        .bind(token_hash)
                        .fetch_optional(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?;
                    row.map(|row| rows::stored_refresh_token(&Cols(&row))).transpose()
                }

                async fn rotate_refresh_token(
                    &self,
                    old_hash: &str,
                    now: OffsetDateTime,
                    successor: &RefreshToken,
                    audit: &AuditEvent,
                ) -> Result<Rotation> {
                    $(
                        if let Some(fast) = &self.$fast
                            && let Some(done) = fast.rotate_refresh_token(old_hash, now, successor, audit)?
                        {
                            return Ok(done);
                        }
                    )?
                    if $backend == "postgres" {
                        let query =
                            sqlx::query(queries::PG_ROTATE_REFRESH_TOKEN).bind(old_hash).bind(now.unix_timestamp());
                        if counted_write(&self.pool, bind_refresh(query, successor), audit, "rotated").await? {
                            return Ok(Rotation::Rotated);
                        }
                        // A statement of its own sees what a parallel
                        // rotation committed meanwhile.
                        let unspent: bool = sqlx::query_scalar(queries::PG_REFRESH_TOKEN_UNSPENT)
                            .bind(old_hash)
                            .fetch_one(&self.pool)
                            .await
                            .map_err(storage_error(ROW))?;
                        return Ok(if unspent { Rotation::GrantRevoked } else { Rotation::Replay });
                    }
                    let mut tx = self.pool.begin().await.map_err(storage_error(ROW))?;
                    let spent =
                        sqlx::query(queries::SPEND_REFRESH_TOKEN_FOR_SUCCESSOR)
                            .bind(old_hash)
                            .bind(now.unix_timestamp())
                            .execute(&mut *tx)
                            .await
                            .map_err(storage_error(ROW))?;
                    if spent.rows_affected() == 0 {
                        return Ok(Rotation::Replay);
                    }
                    if !insert_refresh(&mut *tx, successor).await? {
                        return Ok(Rotation::GrantRevoked);
                    }
                    insert_audit(&mut *tx, audit).await?;
                    tx.commit().await.map_err(storage_error(ROW))?;
                    Ok(Rotation::Rotated)
                }

                async fn spend_refresh_token(&self, token_hash: &str, now: OffsetDateTime) -> Result<()> {
                    sqlx::query("UPDATE refresh_tokens SET used_at = COALESCE(used_at, $2) WHERE token_hash = $1")
                        .bind(token_hash)
                        .bind(now.unix_timestamp())
                        .execute(&self.pool)
                        .await
                        .map_err(storage_error(ROW))?;
                    Ok(())
                }
            }

            #[async_trait]
            impl SessionRepository for $store {
                async fn create_session(&self, session: &SsoSession) -> Result<()> {
                    sqlx::query(
                        "INSERT INTO sso_sessions (token_hash, user_id, auth_time, created_at, expires_at, amr) \
                         VALUES ($1, $2, $3, $4, $5, $6)",
                    )
                    .bind(&session.token_hash)
                    .bind(session.user_id.to_string())
                    .bind(session.auth_time.unix_timestamp())
                    .bind(session.created_at.unix_timestamp())
                    .bind(session.expires_at.unix_timestamp())
                    .bind(session.amr.join(" "))
                    .execute(&self.pool)
                    .await
                    .map_err(storage_error("session"))?;
                    Ok(())
                }

                async fn find_session(&self, token_hash: &str, now: OffsetDateTime) -> Result<Option<SsoSession>> {
                    sqlx::query("SELECT * FROM sso_sessions WHERE token_hash = $1 AND expires_at > $2")
                        .bind(token_hash)
                        .bind(now.unix_timestamp())
                        .fetch_optional(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?
                        .as_ref()
                        .map(session_from_row)
                        .transpose()
                }

                async fn delete_session(&self, token_hash: &str) -> Result<()> {
                    sqlx::query("DELETE FROM sso_sessions WHERE token_hash = $1")
                        .bind(token_hash)
                        .execute(&self.pool)
                        .await
                        .map_err(storage_error(ROW))?;
                    Ok(())
                }
            }

            #[async_trait]
            impl LoginProcessRepository for $store {
                async fn create_login_process(&self, process: &LoginProcess) -> Result<()> {
                    sqlx::query(
                        "INSERT INTO login_processes (id, version, state, created_at, expires_at) \
                         VALUES ($1, $2, $3, $4, $5)",
                    )
                    .bind(process.id.to_string())
                    .bind(process.version)
                    .bind(to_json(&process.state)?)
                    .bind(process.created_at.unix_timestamp())
                    .bind(process.expires_at.unix_timestamp())
                    .execute(&self.pool)
                    .await
                    .map_err(storage_error("login process"))?;
                    Ok(())
                }

                async fn find_login_process(&self, id: Uuid, now: OffsetDateTime) -> Result<Option<LoginProcess>> {
                    sqlx::query("SELECT * FROM login_processes WHERE id = $1 AND expires_at > $2")
                        .bind(id.to_string())
                        .bind(now.unix_timestamp())
                        .fetch_optional(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?
                        .as_ref()
                        .map(process_from_row)
                        .transpose()
                }

                async fn update_login_process(&self, process: &LoginProcess) -> Result<bool> {
                    let done = sqlx::query(
                        "UPDATE login_processes SET state = $3, expires_at = $4, version = version + 1 \
                         WHERE id = $1 AND version = $2",
                    )
                    .bind(process.id.to_string())
                    .bind(process.version)
                    .bind(to_json(&process.state)?)
                    .bind(process.expires_at.unix_timestamp())
                    .execute(&self.pool)
                    .await
                    .map_err(storage_error(ROW))?;
                    Ok(done.rows_affected() > 0)
                }

                async fn delete_login_process(&self, id: Uuid) -> Result<()> {
                    sqlx::query("DELETE FROM login_processes WHERE id = $1")
                        .bind(id.to_string())
                        .execute(&self.pool)
                        .await
                        .map_err(storage_error(ROW))?;
                    Ok(())
                }
            }

            #[async_trait]
            impl AuditRepository for $store {
                async fn record_audit(&self, event: &AuditEvent) -> Result<()> {
                    insert_audit(&self.pool, event).await
                }

                async fn recent_audit(&self, limit: u32) -> Result<Vec<AuditEvent>> {
                    sqlx::query("SELECT * FROM audit_log ORDER BY id DESC LIMIT $1")
                        .bind(i64::from(limit))
                        .fetch_all(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?
                        .iter()
                        .map(audit_from_row)
                        .collect()
                }
            }

            #[async_trait]
            impl Maintenance for $store {
                fn backend(&self) -> &'static str {
                    $backend
                }

                async fn ping(&self) -> Result<()> {
                    sqlx::query("SELECT 1").execute(&self.read_pool).await.map_err(storage_error(ROW))?;
                    Ok(())
                }

                async fn delete_expired(
                    &self,
                    now: OffsetDateTime,
                    access_token_ttl: Duration,
                    keys_retired_before: OffsetDateTime,
                ) -> Result<CleanupReport> {
                    let now_s = now.unix_timestamp();
                    let run = |sql: &'static str, at: i64| {
                        let pool = &self.pool;
                        async move {
                            sqlx::query(sql)
                                .bind(at)
                                .execute(pool)
                                .await
                                .map(|done| done.rows_affected())
                                .map_err(storage_error(ROW))
                        }
                    };
                    Ok(CleanupReport {
                        codes: run("DELETE FROM authorization_codes WHERE expires_at <= $1", now_s).await?,
                        login_processes: run("DELETE FROM login_processes WHERE expires_at <= $1", now_s).await?,
                        sessions: run("DELETE FROM sso_sessions WHERE expires_at <= $1", now_s).await?,
                        refresh_tokens: run("DELETE FROM refresh_tokens WHERE expires_at <= $1", now_s).await?,
                        revoked_access_tokens: run("DELETE FROM revoked_access_tokens WHERE expires_at <= $1", now_s)
                            .await?,
                        grants: run(
                            "DELETE FROM grants WHERE created_at <= $1 AND NOT EXISTS \
                             (SELECT 1 FROM refresh_tokens r WHERE r.grant_id = grants.id)",
                            (now - access_token_ttl).unix_timestamp(),
                        )
                        .await?,
                        signing_keys: run(
                            "DELETE FROM signing_keys WHERE retired_at IS NOT NULL AND retired_at <= $1",
                            keys_retired_before.unix_timestamp(),
                        )
                        .await?,
                    })
                }
            }
        };
    };
}
