//! Users, and blocking one (which ends their grants and sessions).

use async_trait::async_trait;
use portico_model::ids::{GrantId, UserId};
use portico_model::user::{OperatorRole, User};
use portico_storage::columns::{OWNER, USER};
use portico_storage::{LoginKeyPlan, Update, UserQuery, UserRepository};
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::error::{again_if_rolled_back, storage_error};
use crate::{PgStore, Result, at, get};

fn user_from(row: &PgRow) -> Result<User> {
    user_named(row, &USER)
}

/// The user joined by [`OWNER_SELECT`]; `None` when there was none.
pub(crate) fn owner_from(row: &PgRow) -> Result<Option<User>> {
    match get::<Option<Uuid>>(row, OWNER[0])? {
        Some(_) => user_named(row, &OWNER).map(Some),
        None => Ok(None),
    }
}

fn user_named(
    row: &PgRow,
    [
        id,
        login,
        password_hash,
        phone,
        email,
        name,
        phone_login,
        blocked,
        deactivated,
        created_at,
        provisioned,
        revision,
    ]: &[&str; 12],
) -> Result<User> {
    Ok(User {
        id: get::<Uuid>(row, id)?.into(),
        login: get(row, login)?,
        password_hash: get(row, password_hash)?,
        phone: get(row, phone)?,
        email: get(row, email)?,
        name: get(row, name)?,
        phone_login_enabled: get(row, phone_login)?,
        blocked: get(row, blocked)?,
        deactivated: get(row, deactivated)?,
        created_at: get(row, created_at)?,
        provisioned: get::<Option<Json<serde_json::Value>>>(row, provisioned)?.map(|json| json.0),
        revision: get::<i64>(row, revision)?.try_into().unwrap_or_default(),
    })
}

impl PgStore {
    /// Sets a flag that keeps a user out (`sql` names it and the user by
    /// `$1`); setting it also revokes every grant of the user and ends the
    /// user's SSO sessions, in one transaction.
    async fn set_user_flag(&self, sql: &str, user: &str, set: bool, now: OffsetDateTime) -> Result<Option<User>> {
        again_if_rolled_back("user_flag", || self.set_user_flag_once(sql, user, set, now)).await
    }

    /// One try of [`PgStore::set_user_flag`].
    async fn set_user_flag_once(&self, sql: &str, user: &str, set: bool, now: OffsetDateTime) -> Result<Option<User>> {
        let mut tx = self.begin().await?;
        let Some(row) =
            sqlx::query(sql).bind(user).bind(set).fetch_optional(&mut *tx).await.map_err(storage_error("user"))?
        else {
            return Ok(None);
        };
        let user = user_from(&row)?;
        let mut revoked: Vec<Uuid> = Vec::new();
        if set {
            // Sessions before grants, the order in which a logout takes
            // them: a logout under way holds its session and waits for its
            // grants, so taking the grants first would deadlock with it.
            sqlx::query("DELETE FROM sso_sessions WHERE user_id = $1")
                .bind(user.id.as_uuid())
                .execute(&mut *tx)
                .await
                .map_err(storage_error("session"))?;
            revoked = sqlx::query_scalar(
                "UPDATE grants SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL RETURNING id",
            )
            .bind(user.id.as_uuid())
            .bind(at(now))
            .fetch_all(&mut *tx)
            .await
            .map_err(storage_error("grant"))?;
        }
        tx.commit().await.map_err(storage_error("user"))?;
        if let Some(memory) = self.memory() {
            memory.grants_revoked(revoked.into_iter().map(GrantId::from));
        }
        Ok(Some(user))
    }

    /// One try of [`UserRepository::delete_user`].
    async fn delete_user_once(&self, id: UserId) -> Result<bool> {
        // The grants go with the user (ON DELETE CASCADE); their deletion
        // is announced to every node's cache by the grants' trigger. A user
        // who was an employee changes the permission model: a new revision.
        let mut tx = self.begin().await?;
        // Rows in the order every writer takes them (docs/decisions.md,
        // "Lock order"): the permission revision (a save of the model takes
        // it before the employees it rewrites), the user (a login takes it
        // before the sessions it ends), the sessions, then the grants (a
        // logout takes its session, then the session's grants; left to the
        // cascade, the grants would go first), the refresh tokens before
        // their grants.
        sqlx::query("SELECT 1 FROM permission_revision WHERE id = 1 FOR NO KEY UPDATE")
            .execute(&mut *tx)
            .await
            .map_err(storage_error("permission revision"))?;
        sqlx::query("SELECT 1 FROM users WHERE id = $1 FOR UPDATE")
            .bind(id.as_uuid())
            .execute(&mut *tx)
            .await
            .map_err(storage_error("user"))?;
        sqlx::query("DELETE FROM sso_sessions WHERE user_id = $1")
            .bind(id.as_uuid())
            .execute(&mut *tx)
            .await
            .map_err(storage_error("session"))?;
        crate::oauth::lock_refresh_tokens(&mut tx, crate::oauth::TokensOf::User(id)).await?;
        let grants: Vec<Uuid> = sqlx::query_scalar("SELECT id FROM grants WHERE user_id = $1")
            .bind(id.as_uuid())
            .fetch_all(&mut *tx)
            .await
            .map_err(storage_error("grant"))?;
        let employed = sqlx::query("DELETE FROM employees WHERE user_id = $1")
            .bind(id.as_uuid())
            .execute(&mut *tx)
            .await
            .map_err(storage_error("employee"))?
            .rows_affected();
        let mut revision = None;
        if employed > 0 {
            let sql = "UPDATE permission_revision SET revision = revision + 1 WHERE id = 1 RETURNING revision";
            revision = Some(
                sqlx::query_scalar::<_, i64>(sql)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(storage_error("permission revision"))?,
            );
        }
        let done = sqlx::query("DELETE FROM users WHERE id = $1")
            .bind(id.as_uuid())
            .execute(&mut *tx)
            .await
            .map_err(storage_error("user"))?;
        tx.commit().await.map_err(storage_error("user"))?;
        if let Some(memory) = self.memory() {
            memory.grants_revoked(grants.into_iter().map(GrantId::from));
            if let Some(revision) = revision {
                memory.revision_seen(revision);
            }
        }
        Ok(done.rows_affected() > 0)
    }

    async fn users_where(&self, condition: &'static str, value: &str) -> Result<Vec<User>> {
        sqlx::query(&format!("SELECT * FROM users WHERE {condition} ORDER BY login"))
            .bind(value)
            .fetch_all(&mut *self.conn().await?)
            .await
            .map_err(storage_error("user"))?
            .iter()
            .map(user_from)
            .collect()
    }
}

/// The conditions of `query` as SQL, with the values to bind in order.
fn matching(query: &UserQuery) -> (String, Vec<String>) {
    let mut sql = String::from("true");
    let mut values: Vec<String> = Vec::new();
    for condition in query.text_conditions() {
        let mut tests = Vec::new();
        for (column, value) in condition.tests {
            values.push(value);
            let n = values.len();
            // Under "C", lower() changes ASCII letters only, as SQLite's does.
            let column =
                if condition.ascii_lowercase { format!("lower({column} COLLATE \"C\")") } else { column.to_owned() };
            tests.push(if condition.prefix {
                format!("starts_with({column}, ${n})")
            } else {
                format!("{column} = ${n}")
            });
        }
        sql.push_str(&format!(" AND ({})", tests.join(" OR ")));
    }
    if let Some(blocked) = query.blocked {
        sql.push_str(if blocked { " AND blocked" } else { " AND NOT blocked" });
    }
    if let Some(deactivated) = query.deactivated {
        sql.push_str(if deactivated { " AND deactivated" } else { " AND NOT deactivated" });
    }
    (sql, values)
}

#[async_trait]
impl UserRepository for PgStore {
    async fn create_user(&self, user: &User) -> Result<()> {
        sqlx::query(
            "INSERT INTO users (id, login, password_hash, phone, email, name, phone_login_enabled, blocked, \
             deactivated, created_at, provisioned, login_key) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        )
        .bind(user.id.as_uuid())
        .bind(&user.login)
        .bind(&user.password_hash)
        .bind(&user.phone)
        .bind(&user.email)
        .bind(&user.name)
        .bind(user.phone_login_enabled)
        .bind(user.blocked)
        .bind(user.deactivated)
        .bind(at(user.created_at))
        .bind(user.provisioned.as_ref().map(Json))
        .bind(portico_model::login_name::key(&user.login).ok())
        .execute(&mut *self.conn().await?)
        .await
        .map_err(storage_error("user login"))?;
        Ok(())
    }

    async fn find_user(&self, id: UserId) -> Result<Option<User>> {
        sqlx::query("SELECT * FROM users WHERE id = $1")
            .bind(id.as_uuid())
            .fetch_optional(&mut *self.conn().await?)
            .await
            .map_err(storage_error("user"))?
            .as_ref()
            .map(user_from)
            .transpose()
    }

    async fn find_user_by_login(&self, login: &str) -> Result<Option<User>> {
        // The login as stored first (a user whose login has no key), else
        // the user whose login is the same under the comparison rules.
        let row =
            sqlx::query("SELECT * FROM users WHERE login = $1 OR login_key = $2 ORDER BY (login = $1) DESC LIMIT 1")
                .bind(login)
                .bind(portico_model::login_name::key(login).ok())
                .fetch_optional(&mut *self.conn().await?)
                .await
                .map_err(storage_error("user"))?;
        row.as_ref().map(user_from).transpose()
    }

    async fn find_users_by_phone(&self, phone: &str) -> Result<Vec<User>> {
        self.users_where("phone = $1", phone).await
    }

    async fn list_users(&self) -> Result<Vec<User>> {
        sqlx::query("SELECT * FROM users ORDER BY login")
            .fetch_all(&mut *self.conn().await?)
            .await
            .map_err(storage_error("user"))?
            .iter()
            .map(user_from)
            .collect()
    }

    async fn set_user_blocked(&self, login: &str, blocked: bool, now: OffsetDateTime) -> Result<Option<User>> {
        self.set_user_flag("UPDATE users SET blocked = $2 WHERE login = $1 RETURNING *", login, blocked, now).await
    }

    async fn set_user_deactivated(&self, id: UserId, deactivated: bool, now: OffsetDateTime) -> Result<Option<User>> {
        let sql = "UPDATE users SET deactivated = $2 WHERE id = $1::uuid RETURNING *";
        self.set_user_flag(sql, &id.to_string(), deactivated, now).await
    }

    async fn update_user(&self, user: &User) -> Result<Update> {
        let (updated, stored): (bool, bool) = sqlx::query_as(
            "WITH u AS (UPDATE users SET login = $2, password_hash = $3, phone = $4, email = $5, name = $6, \
             phone_login_enabled = $7, provisioned = $8, \
             login_key = CASE WHEN login = $2 THEN login_key ELSE $9 END, revision = revision + 1 \
             WHERE id = $1 AND revision = $10 RETURNING 1) \
             SELECT EXISTS (SELECT 1 FROM u), EXISTS (SELECT 1 FROM users WHERE id = $1)",
        )
        .bind(user.id.as_uuid())
        .bind(&user.login)
        .bind(&user.password_hash)
        .bind(&user.phone)
        .bind(&user.email)
        .bind(&user.name)
        .bind(user.phone_login_enabled)
        .bind(user.provisioned.as_ref().map(Json))
        .bind(portico_model::login_name::key(&user.login).ok())
        .bind(i64::try_from(user.revision).unwrap_or(i64::MAX))
        .fetch_one(&mut *self.conn().await?)
        .await
        .map_err(storage_error("user login"))?;
        Ok(match (updated, stored) {
            (true, _) => Update::Updated,
            (false, true) => Update::Outdated,
            (false, false) => Update::Missing,
        })
    }

    async fn delete_user(&self, id: UserId) -> Result<bool> {
        again_if_rolled_back("user_deletion", || self.delete_user_once(id)).await
    }

    async fn search_users(&self, query: &UserQuery) -> Result<Vec<User>> {
        let (mut sql, mut values) = matching(query);
        if let Some(after) = &query.after {
            values.push(after.clone());
            sql.push_str(&format!(" AND login > ${}", values.len()));
        }
        sql.push_str(&format!(" ORDER BY login LIMIT {} OFFSET {}", query.limit, query.offset));
        let sql = format!("SELECT * FROM users WHERE {sql}");
        let mut statement = sqlx::query(&sql);
        for value in values {
            statement = statement.bind(value);
        }
        statement
            .fetch_all(&mut *self.conn().await?)
            .await
            .map_err(storage_error("user"))?
            .iter()
            .map(user_from)
            .collect()
    }

    async fn count_users(&self, query: &UserQuery) -> Result<u64> {
        let (sql, values) = matching(query);
        let sql = format!("SELECT count(*) FROM users WHERE {sql}");
        let mut statement = sqlx::query_scalar::<_, i64>(&sql);
        for value in values {
            statement = statement.bind(value);
        }
        let count = statement.fetch_one(&mut *self.conn().await?).await.map_err(storage_error("user"))?;
        Ok(u64::try_from(count).unwrap_or_default())
    }

    async fn operator_role(&self, id: UserId) -> Result<Option<OperatorRole>> {
        let role: Option<String> = sqlx::query_scalar("SELECT role FROM operators WHERE user_id = $1")
            .bind(id.as_uuid())
            .fetch_optional(&mut *self.conn().await?)
            .await
            .map_err(storage_error("operator"))?;
        Ok(role.as_deref().and_then(OperatorRole::parse))
    }

    async fn set_operator_role(&self, id: UserId, role: Option<OperatorRole>, now: OffsetDateTime) -> Result<bool> {
        let mut conn = self.conn().await?;
        let done = match role {
            Some(role) => sqlx::query(
                "INSERT INTO operators (user_id, role, granted_at) SELECT id, $2, $3 FROM users WHERE id = $1 \
                 ON CONFLICT (user_id) DO UPDATE SET role = EXCLUDED.role, granted_at = EXCLUDED.granted_at",
            )
            .bind(id.as_uuid())
            .bind(role.as_str())
            .bind(at(now))
            .execute(&mut *conn)
            .await
            .map_err(storage_error("operator"))?
            .rows_affected(),
            None => {
                sqlx::query("DELETE FROM operators WHERE user_id = $1")
                    .bind(id.as_uuid())
                    .execute(&mut *conn)
                    .await
                    .map_err(storage_error("operator"))?;
                sqlx::query_scalar::<_, i64>("SELECT count(*) FROM users WHERE id = $1")
                    .bind(id.as_uuid())
                    .fetch_one(&mut *conn)
                    .await
                    .map_err(storage_error("user"))? as u64
            }
        };
        Ok(done > 0)
    }
}

/// Gives every user without a login key theirs (users made before
/// migration 19), as [`LoginKeyPlan`] works out: one read of the keys held
/// already, then the keys stored 10,000 at a time in one transaction; says
/// at every start who is left without one.
pub(crate) async fn fill_login_keys(pool: &sqlx::PgPool) -> Result<()> {
    let users: Vec<(Uuid, String)> =
        sqlx::query_as("SELECT id, login FROM users WHERE login_key IS NULL ORDER BY created_at, id")
            .fetch_all(pool)
            .await
            .map_err(storage_error("user"))?;
    if users.is_empty() {
        return Ok(());
    }
    let held: Vec<(String, String)> = sqlx::query_as("SELECT login_key, login FROM users WHERE login_key = ANY($1)")
        .bind(LoginKeyPlan::candidates(&users))
        .fetch_all(pool)
        .await
        .map_err(storage_error("user"))?;
    let plan = LoginKeyPlan::new(users, &held.into_iter().collect());
    let mut tx = pool.begin().await.map_err(storage_error("user"))?;
    let mut done = 0;
    for chunk in plan.keys.chunks(10_000) {
        let (ids, keys): (Vec<Uuid>, Vec<String>) = chunk.iter().cloned().unzip();
        sqlx::query(
            "UPDATE users u SET login_key = v.key FROM UNNEST($1::uuid[], $2::text[]) AS v (id, key) WHERE u.id = v.id",
        )
        .bind(ids)
        .bind(keys)
        .execute(&mut *tx)
        .await
        .map_err(storage_error("user"))?;
        done += chunk.len();
        portico_storage::report_login_key_progress(done, plan.keys.len());
    }
    tx.commit().await.map_err(storage_error("user"))?;
    plan.report();
    Ok(())
}
