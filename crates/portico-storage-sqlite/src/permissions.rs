//! The permission model, read and saved whole. A load reads every table in
//! one read transaction (one snapshot of the WAL); a save replaces every
//! table in one write transaction that bumps the revision it was based on.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use portico_model::permissions::{CatalogObject, Company, ContractStatus, Employee, PermissionModel, Role};
use portico_storage::PermissionRepository;
use portico_storage::memory::NodeMemory;
use rusqlite::{Connection, params};
use uuid::Uuid;

use crate::db::{Columns, Res, all, damaged, one, run, to_json};
use crate::{Result, SqliteStore};

pub(crate) fn revision(conn: &Connection) -> Res<i64> {
    one(conn, "SELECT revision FROM permission_revision WHERE id = 1", [], |row| Ok(row.get("revision")?))?
        .ok_or_else(|| damaged("the permission revision row is missing"))
}

fn load(conn: &Connection) -> Res<PermissionModel> {
    let snapshot = conn.unchecked_transaction()?;
    let revision = revision(&snapshot)?;
    let companies = all(&snapshot, "SELECT cnum, name, contract_status FROM companies", [], |row| {
        let status: String = row.get("contract_status")?;
        Ok(Company {
            cnum: row.get("cnum")?,
            name: row.get("name")?,
            contract_status: ContractStatus::parse(&status)
                .ok_or_else(|| damaged(&format!("contract status {status:?}")))?,
        })
    })?;
    let catalog = all(&snapshot, "SELECT path, name, actions FROM catalog_objects", [], |row| {
        Ok(CatalogObject { path: row.get("path")?, name: row.get("name")?, actions: row.json("actions")? })
    })?;
    let mut grants: BTreeMap<Uuid, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (role, object, action) in all(&snapshot, "SELECT role_id, object_path, action FROM role_grants", [], |row| {
        Ok((row.uuid("role_id")?, row.get::<_, String>("object_path")?, row.get::<_, String>("action")?))
    })? {
        grants.entry(role).or_default().entry(object).or_default().insert(action);
    }
    let roles = all(&snapshot, "SELECT id, code, name, available FROM roles", [], |row| {
        let id = row.uuid("id")?;
        Ok(Role {
            id,
            code: row.get("code")?,
            name: row.get("name")?,
            available: row.get("available")?,
            grants: grants.remove(&id).unwrap_or_default(),
        })
    })?;
    let employees = all(&snapshot, "SELECT user_id, cnum, role_id, active FROM employees", [], |row| {
        Ok(Employee {
            user_id: row.uuid("user_id")?,
            cnum: row.get("cnum")?,
            role_id: row.uuid_opt("role_id")?,
            active: row.get("active")?,
        })
    })?;
    snapshot.finish()?;
    Ok(PermissionModel::new(revision, companies, roles, catalog, employees))
}

fn save(conn: &Connection, model: &PermissionModel) -> Res<bool> {
    let sql = "UPDATE permission_revision SET revision = revision + 1 WHERE id = 1 AND revision = ?1";
    if run(conn, sql, [model.revision])? == 0 {
        return Ok(false);
    }
    for table in ["employees", "role_grants", "roles", "catalog_objects", "companies"] {
        conn.execute(&format!("DELETE FROM {table}"), [])?;
    }
    for c in model.companies.values() {
        let sql = "INSERT INTO companies (cnum, name, contract_status) VALUES (?1, ?2, ?3)";
        run(conn, sql, params![c.cnum, c.name, c.contract_status.as_str()])?;
    }
    for o in model.catalog.values() {
        let sql = "INSERT INTO catalog_objects (path, name, actions) VALUES (?1, ?2, ?3)";
        run(conn, sql, params![o.path, o.name, to_json(&o.actions)?])?;
    }
    for r in model.roles.values() {
        let id = r.id.to_string();
        let sql = "INSERT INTO roles (id, code, name, available) VALUES (?1, ?2, ?3, ?4)";
        run(conn, sql, params![id, r.code, r.name, r.available])?;
        for (object, actions) in &r.grants {
            for action in actions {
                let sql = "INSERT INTO role_grants (role_id, object_path, action) VALUES (?1, ?2, ?3)";
                run(conn, sql, params![id, object, action])?;
            }
        }
    }
    for e in model.employees.values() {
        let sql = "INSERT INTO employees (user_id, cnum, role_id, active) VALUES (?1, ?2, ?3, ?4)";
        run(conn, sql, params![e.user_id.to_string(), e.cnum, e.role_id.map(|id| id.to_string()), e.active])?;
    }
    Ok(true)
}

#[async_trait]
impl PermissionRepository for SqliteStore {
    async fn permission_revision(&self) -> Result<i64> {
        NodeMemory::permission_revision_or(self.memory(), self.db.read(revision)).await
    }

    async fn load_permissions(&self) -> Result<PermissionModel> {
        self.db.read(load).await
    }

    async fn save_permissions(&self, model: &PermissionModel) -> Result<bool> {
        let model = model.clone();
        let revision = model.revision + 1;
        let saved = self.db.write("permission row", move |tx| save(tx, &model)).await?;
        if let Some(memory) = self.memory().filter(|_| saved) {
            memory.revision_seen(revision);
        }
        Ok(saved)
    }
}
