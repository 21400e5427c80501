//! End users. Blocking one revokes their grants and ends their sessions in
//! the same transaction.

use async_trait::async_trait;
use portico_model::ids::UserId;
use portico_model::user::{OperatorRole, User};
use portico_storage::columns::{OWNER, USER};
use portico_storage::{Update, UserQuery, UserRepository};
use rusqlite::types::Value;
use rusqlite::{Row, params, params_from_iter};
use time::OffsetDateTime;

use crate::db::{Columns, Res, all, one, run, secs, to_json};
use crate::{Result, SqliteStore};

fn user_from(row: &Row<'_>) -> Res<User> {
    user_named(row, &USER)
}

/// The user joined by [`OWNER_SELECT`]; `None` when there was none.
pub(crate) fn owner_from(row: &Row<'_>) -> Res<Option<User>> {
    match row.get::<_, Option<String>>(OWNER[0])? {
        Some(_) => user_named(row, &OWNER).map(Some),
        None => Ok(None),
    }
}

fn user_named(
    row: &Row<'_>,
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
) -> Res<User> {
    Ok(User {
        id: row.uuid(id)?.into(),
        login: row.get(*login)?,
        password_hash: row.get(*password_hash)?,
        phone: row.get(*phone)?,
        email: row.get(*email)?,
        name: row.get(*name)?,
        phone_login_enabled: row.get(*phone_login)?,
        blocked: row.get(*blocked)?,
        deactivated: row.get(*deactivated)?,
        created_at: row.time(created_at)?,
        provisioned: row.json_opt(provisioned)?,
        revision: row.get::<_, i64>(*revision)?.try_into().unwrap_or_default(),
    })
}

/// The conditions of `query` as SQL, with the values to bind in order.
fn matching(query: &UserQuery) -> (String, Vec<Value>) {
    let mut sql = String::from("1");
    let mut values: Vec<Value> = Vec::new();
    for condition in query.text_conditions() {
        let mut tests = Vec::new();
        for (column, value) in condition.tests {
            values.push(Value::Text(value));
            let n = values.len();
            // SQLite's lower() changes ASCII letters only.
            let column = if condition.ascii_lowercase { format!("lower({column})") } else { column.to_owned() };
            tests.push(if condition.prefix {
                format!("substr({column}, 1, length(?{n})) = ?{n}")
            } else {
                format!("{column} = ?{n}")
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
impl UserRepository for SqliteStore {
    async fn create_user(&self, user: &User) -> Result<()> {
        let user = user.clone();
        self.db
            .write("user login", move |tx| {
                run(
                    tx,
                    "INSERT INTO users (id, login, password_hash, phone, email, name, phone_login_enabled, blocked, \
                     deactivated, created_at, provisioned, login_key) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                    params![
                        user.id.to_string(),
                        user.login,
                        user.password_hash,
                        user.phone,
                        user.email,
                        user.name,
                        user.phone_login_enabled,
                        user.blocked,
                        user.deactivated,
                        secs(user.created_at),
                        user.provisioned.as_ref().map(to_json).transpose()?,
                        portico_model::login_name::key(&user.login).ok(),
                    ],
                )?;
                Ok(())
            })
            .await
    }

    async fn find_user(&self, id: UserId) -> Result<Option<User>> {
        self.db.read(move |c| one(c, "SELECT * FROM users WHERE id = ?1", [id.to_string()], user_from)).await
    }

    async fn find_user_by_login(&self, login: &str) -> Result<Option<User>> {
        let login = login.to_owned();
        let key = portico_model::login_name::key(&login).ok();
        // The login as stored first (a user whose login has no key), else
        // the user whose login is the same under the comparison rules.
        let sql = "SELECT * FROM users WHERE login = ?1 OR login_key = ?2 ORDER BY (login = ?1) DESC LIMIT 1";
        self.db.read(move |c| one(c, sql, params![login, key], user_from)).await
    }

    async fn find_users_by_phone(&self, phone: &str) -> Result<Vec<User>> {
        let phone = phone.to_owned();
        self.db.read(move |c| all(c, "SELECT * FROM users WHERE phone = ?1 ORDER BY login", [phone], user_from)).await
    }

    async fn list_users(&self) -> Result<Vec<User>> {
        self.db.read(|c| all(c, "SELECT * FROM users ORDER BY login", [], user_from)).await
    }

    async fn set_user_blocked(&self, login: &str, blocked: bool, now: OffsetDateTime) -> Result<Option<User>> {
        self.set_user_flag("UPDATE users SET blocked = ?2 WHERE login = ?1 RETURNING *", login.to_owned(), blocked, now)
            .await
    }

    async fn set_user_deactivated(&self, id: UserId, deactivated: bool, now: OffsetDateTime) -> Result<Option<User>> {
        let sql = "UPDATE users SET deactivated = ?2 WHERE id = ?1 RETURNING *";
        self.set_user_flag(sql, id.to_string(), deactivated, now).await
    }

    async fn update_user(&self, user: &User) -> Result<Update> {
        let user = user.clone();
        self.db
            .write("user login", move |tx| {
                let sql = "UPDATE users SET login = ?2, password_hash = ?3, phone = ?4, email = ?5, name = ?6, \
                           phone_login_enabled = ?7, provisioned = ?8, \
                           login_key = CASE WHEN login = ?2 THEN login_key ELSE ?9 END, revision = revision + 1 \
                           WHERE id = ?1 AND revision = ?10";
                let key = portico_model::login_name::key(&user.login).ok();
                let values = params![
                    user.id.to_string(),
                    user.login,
                    user.password_hash,
                    user.phone,
                    user.email,
                    user.name,
                    user.phone_login_enabled,
                    user.provisioned.as_ref().map(to_json).transpose()?,
                    key,
                    i64::try_from(user.revision).unwrap_or(i64::MAX)
                ];
                if run(tx, sql, values)? > 0 {
                    return Ok(Update::Updated);
                }
                let id = user.id.to_string();
                let stored = one(tx, "SELECT 1 FROM users WHERE id = ?1", [id], |row| Ok(row.get::<_, i64>(0)?))?;
                Ok(if stored.is_some() { Update::Outdated } else { Update::Missing })
            })
            .await
    }

    async fn delete_user(&self, id: UserId) -> Result<bool> {
        // The grants, sessions and the rest go with the user (ON DELETE
        // CASCADE). A user who was an employee changes the permission
        // model: a new revision.
        let (deleted, revision) = self
            .db
            .write("user", move |tx| {
                let id = id.to_string();
                let mut revision = None;
                if run(tx, "DELETE FROM employees WHERE user_id = ?1", [&id])? > 0 {
                    let sql = "UPDATE permission_revision SET revision = revision + 1 WHERE id = 1 RETURNING revision";
                    revision = one(tx, sql, [], |row| Ok(row.get::<_, i64>("revision")?))?;
                }
                Ok((run(tx, "DELETE FROM users WHERE id = ?1", [&id])? > 0, revision))
            })
            .await?;
        if let Some(memory) = self.memory() {
            memory.forget_live_grants();
            if let Some(revision) = revision {
                memory.revision_seen(revision);
            }
        }
        Ok(deleted)
    }

    async fn search_users(&self, query: &UserQuery) -> Result<Vec<User>> {
        let (mut sql, mut values) = matching(query);
        if let Some(after) = &query.after {
            values.push(Value::Text(after.clone()));
            sql.push_str(&format!(" AND login > ?{}", values.len()));
        }
        let sql =
            format!("SELECT * FROM users WHERE {sql} ORDER BY login LIMIT {} OFFSET {}", query.limit, query.offset);
        self.db.read(move |c| all(c, &sql, params_from_iter(values), user_from)).await
    }

    async fn count_users(&self, query: &UserQuery) -> Result<u64> {
        let (sql, values) = matching(query);
        let sql = format!("SELECT count(*) AS n FROM users WHERE {sql}");
        let count =
            self.db.read(move |c| one(c, &sql, params_from_iter(values), |row| Ok(row.get::<_, i64>("n")?))).await?;
        Ok(count.and_then(|n| u64::try_from(n).ok()).unwrap_or_default())
    }

    async fn operator_role(&self, id: UserId) -> Result<Option<OperatorRole>> {
        let role = self
            .db
            .read(move |c| {
                one(c, "SELECT role FROM operators WHERE user_id = ?1", [id.to_string()], |row| {
                    Ok(row.get::<_, String>("role")?)
                })
            })
            .await?;
        Ok(role.as_deref().and_then(OperatorRole::parse))
    }

    async fn set_operator_role(&self, id: UserId, role: Option<OperatorRole>, now: OffsetDateTime) -> Result<bool> {
        self.db
            .write("operator", move |tx| {
                let id = id.to_string();
                let exists = one(tx, "SELECT 1 AS found FROM users WHERE id = ?1", [&id], |_| Ok(()))?.is_some();
                match role {
                    Some(role) if exists => {
                        run(
                            tx,
                            "INSERT INTO operators (user_id, role, granted_at) VALUES (?1, ?2, ?3) \
                             ON CONFLICT (user_id) DO UPDATE SET role = excluded.role, granted_at = excluded.granted_at",
                            params![id, role.as_str(), secs(now)],
                        )?;
                    }
                    Some(_) => {}
                    None => {
                        run(tx, "DELETE FROM operators WHERE user_id = ?1", [&id])?;
                    }
                }
                Ok(exists)
            })
            .await
    }
}

impl SqliteStore {
    /// Sets a flag that keeps a user out (`sql` names it, and the user by
    /// `?1`); setting it also revokes every grant of the user and ends the
    /// user's SSO sessions, in one transaction.
    async fn set_user_flag(
        &self,
        sql: &'static str,
        user: String,
        set: bool,
        now: OffsetDateTime,
    ) -> Result<Option<User>> {
        let user = self
            .db
            .write("user", move |tx| {
                let Some(user) = one(tx, sql, params![user, set], user_from)? else {
                    return Ok(None);
                };
                if set {
                    let id = user.id.to_string();
                    run(
                        tx,
                        "UPDATE grants SET revoked_at = ?2 WHERE user_id = ?1 AND revoked_at IS NULL",
                        params![id, secs(now)],
                    )?;
                    run(tx, "DELETE FROM sso_sessions WHERE user_id = ?1", [id])?;
                }
                Ok(Some(user))
            })
            .await?;
        if let Some(memory) = self.memory().filter(|_| set) {
            memory.forget_live_grants();
        }
        Ok(user)
    }
}
