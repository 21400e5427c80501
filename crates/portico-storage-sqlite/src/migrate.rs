//! The schema's migrations, applied in order, each in a transaction.
//!
//! Which ones have run is kept in `_sqlx_migrations`, the table (and
//! checksums: SHA-384 of the file) of earlier releases, so that their
//! databases upgrade in place.

use std::collections::HashMap;
use std::time::Instant;

use aws_lc_rs::digest::{SHA384, digest};
use portico_storage::{LoginKeyPlan, StorageError};
use rusqlite::{Connection, OptionalExtension as _, params};

use crate::db::{Error, Res};

/// Every migration: version, description, SQL.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "identity", include_str!("../migrations/0001_identity.sql")),
    (2, "permissions", include_str!("../migrations/0002_permissions.sql")),
    (3, "login", include_str!("../migrations/0003_login.sql")),
    (4, "notifications", include_str!("../migrations/0004_notifications.sql")),
    (5, "reports", include_str!("../migrations/0005_reports.sql")),
    (6, "delivery indexes", include_str!("../migrations/0006_delivery_indexes.sql")),
    (7, "login throttles", include_str!("../migrations/0007_login_throttles.sql")),
    (8, "session ids", include_str!("../migrations/0008_session_ids.sql")),
    (9, "backchannel logout", include_str!("../migrations/0009_backchannel_logout.sql")),
    (10, "trace context", include_str!("../migrations/0010_trace_context.sql")),
    (11, "audit actor", include_str!("../migrations/0011_audit_actor.sql")),
    (12, "user provisioning", include_str!("../migrations/0012_user_provisioning.sql")),
    (13, "operators", include_str!("../migrations/0013_operators.sql")),
    (14, "user deactivation", include_str!("../migrations/0014_user_deactivation.sql")),
    (15, "throttle pending", include_str!("../migrations/0015_throttle_pending.sql")),
    (16, "login keys", include_str!("../migrations/0016_login_keys.sql")),
    (17, "key algorithms", include_str!("../migrations/0017_key_algorithms.sql")),
    (18, "client security", include_str!("../migrations/0018_client_security.sql")),
    (19, "client registration", include_str!("../migrations/0019_client_registration.sql")),
    (20, "initial access tokens", include_str!("../migrations/0020_initial_access_tokens.sql")),
    (21, "client approval", include_str!("../migrations/0021_client_approval.sql")),
    (22, "client assertions in one tree", include_str!("../migrations/0022_client_assertions_one_tree.sql")),
    (23, "pushed requests", include_str!("../migrations/0023_pushed_requests.sql")),
    (24, "code dpop binding", include_str!("../migrations/0024_code_dpop_binding.sql")),
    (25, "passkeys", include_str!("../migrations/0025_passkeys.sql")),
    (26, "passkey offers", include_str!("../migrations/0026_passkey_offers.sql")),
    (27, "browsers", include_str!("../migrations/0027_browsers.sql")),
    (28, "client revision", include_str!("../migrations/0028_client_revision.sql")),
    (29, "user revision", include_str!("../migrations/0029_user_revision.sql")),
    (30, "held clients", include_str!("../migrations/0030_held_clients.sql")),
    (31, "device trust expiry", include_str!("../migrations/0031_device_trust_expiry.sql")),
];

/// Applies the migrations that have not run yet.
pub(crate) fn run(conn: &mut Connection) -> Res<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS _sqlx_migrations (version BIGINT PRIMARY KEY, description TEXT NOT NULL, \
         installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, success BOOLEAN NOT NULL, \
         checksum BLOB NOT NULL, execution_time BIGINT NOT NULL)",
    )?;
    for &(version, description, sql) in MIGRATIONS {
        let checksum = digest(&SHA384, sql.as_bytes());
        let applied: Option<(Vec<u8>, bool)> = conn
            .query_row("SELECT checksum, success FROM _sqlx_migrations WHERE version = ?1", [version], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .map(Some)
            .or_else(|e| if e == rusqlite::Error::QueryReturnedNoRows { Ok(None) } else { Err(e) })?;
        match applied {
            Some((stored, true)) if stored == checksum.as_ref() => continue,
            Some((_, true)) => {
                return Err(failed(format!(
                    "migration {version} ({description}) was changed after it was applied to this database"
                )));
            }
            Some((_, false)) => {
                return Err(failed(format!("migration {version} ({description}) failed earlier; restore a backup")));
            }
            None => {}
        }
        let started = Instant::now();
        let tx = conn.transaction()?;
        tx.execute_batch(sql).map_err(|e| failed(format!("migration {version} ({description}) failed: {e}")))?;
        let took = i64::try_from(started.elapsed().as_nanos()).unwrap_or(i64::MAX);
        tx.execute(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES (?1, ?2, TRUE, ?3, ?4)",
            params![version, description, checksum.as_ref(), took],
        )?;
        tx.commit()?;
        tracing::info!(version, description, "applied a SQLite migration");
    }
    fill_login_keys(conn)
}

/// Gives every user without a login key theirs (users made before
/// migration 16), as [`LoginKeyPlan`] works out, in one transaction; says
/// at every start who is left without one.
fn fill_login_keys(conn: &mut Connection) -> Res<()> {
    let users: Vec<(String, String)> = {
        let mut statement =
            conn.prepare("SELECT id, login FROM users WHERE login_key IS NULL ORDER BY created_at, id")?;
        statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?.collect::<Result<_, _>>()?
    };
    if users.is_empty() {
        return Ok(());
    }
    let mut held = HashMap::new();
    {
        let mut holder = conn.prepare("SELECT login FROM users WHERE login_key = ?1")?;
        for key in LoginKeyPlan::candidates(&users) {
            if let Some(login) = holder.query_row([&key], |row| row.get::<_, String>(0)).optional()? {
                held.insert(key, login);
            }
        }
    }
    let plan = LoginKeyPlan::new(users, &held);
    let tx = conn.transaction()?;
    {
        let mut store = tx.prepare("UPDATE users SET login_key = ?2 WHERE id = ?1")?;
        for (done, (id, key)) in plan.keys.iter().enumerate() {
            store.execute(params![id, key])?;
            portico_storage::report_login_key_progress(done + 1, plan.keys.len());
        }
    }
    tx.commit()?;
    plan.report();
    Ok(())
}

fn failed(message: String) -> Error {
    Error::Storage(StorageError::Other(format!("SQLite migration: {message}")))
}
