//! The permission model, saved whole. `permission_revision` counts the
//! saves, so that every node knows when its copy is stale.
//!
//! A load reads the tables in one repeatable-read transaction: it sees one
//! saved model and the revision that model was saved at.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use portico_model::permissions::{CatalogObject, Company, ContractStatus, Employee, PermissionModel, Role};
use portico_storage::memory::NodeMemory;
use portico_storage::{PermissionRepository, StorageError};
use uuid::Uuid;

use crate::error::{damaged, storage_error};
use crate::{PgStore, Result, get};

const WHAT: &str = "permission model";

#[async_trait]
impl PermissionRepository for PgStore {
    async fn permission_revision(&self) -> Result<i64> {
        NodeMemory::permission_revision_or(self.memory(), async {
            sqlx::query_scalar("SELECT revision FROM permission_revision WHERE id = 1")
                .fetch_one(&mut *self.conn().await?)
                .await
                .map_err(storage_error(WHAT))
        })
        .await
    }

    async fn load_permissions(&self) -> Result<PermissionModel> {
        let mut tx = self.begin().await?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await
            .map_err(storage_error(WHAT))?;
        let revision: i64 = sqlx::query_scalar("SELECT revision FROM permission_revision WHERE id = 1")
            .fetch_one(&mut *tx)
            .await
            .map_err(storage_error(WHAT))?;
        let companies = sqlx::query("SELECT cnum, name, contract_status FROM companies")
            .fetch_all(&mut *tx)
            .await
            .map_err(storage_error(WHAT))?
            .iter()
            .map(|row| {
                let status: String = get(row, "contract_status")?;
                Ok(Company {
                    cnum: get(row, "cnum")?,
                    name: get(row, "name")?,
                    contract_status: ContractStatus::parse(&status)
                        .ok_or_else(|| damaged("contract status", &status))?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let catalog = sqlx::query("SELECT path, name, actions FROM catalog_objects")
            .fetch_all(&mut *tx)
            .await
            .map_err(storage_error(WHAT))?
            .iter()
            .map(|row| {
                let actions: Vec<String> = get(row, "actions")?;
                Ok(CatalogObject {
                    path: get(row, "path")?,
                    name: get(row, "name")?,
                    actions: actions.into_iter().collect(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut grants: BTreeMap<Uuid, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
        for row in sqlx::query("SELECT role_id, object_path, action FROM role_grants")
            .fetch_all(&mut *tx)
            .await
            .map_err(storage_error(WHAT))?
        {
            grants
                .entry(get(&row, "role_id")?)
                .or_default()
                .entry(get(&row, "object_path")?)
                .or_default()
                .insert(get(&row, "action")?);
        }
        let roles = sqlx::query("SELECT id, code, name, available FROM roles")
            .fetch_all(&mut *tx)
            .await
            .map_err(storage_error(WHAT))?
            .iter()
            .map(|row| {
                let id: Uuid = get(row, "id")?;
                Ok(Role {
                    id,
                    code: get(row, "code")?,
                    name: get(row, "name")?,
                    available: get(row, "available")?,
                    grants: grants.remove(&id).unwrap_or_default(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let employees = sqlx::query("SELECT user_id, cnum, role_id, active FROM employees")
            .fetch_all(&mut *tx)
            .await
            .map_err(storage_error(WHAT))?
            .iter()
            .map(|row| {
                Ok(Employee {
                    user_id: get(row, "user_id")?,
                    cnum: get(row, "cnum")?,
                    role_id: get(row, "role_id")?,
                    active: get(row, "active")?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        tx.commit().await.map_err(storage_error(WHAT))?;
        Ok(PermissionModel::new(revision, companies, roles, catalog, employees))
    }

    async fn save_permissions(&self, model: &PermissionModel) -> Result<bool> {
        let mut tx = self.begin().await?;
        let bumped =
            sqlx::query("UPDATE permission_revision SET revision = revision + 1 WHERE id = 1 AND revision = $1")
                .bind(model.revision)
                .execute(&mut *tx)
                .await
                .map_err(storage_error(WHAT))?;
        if bumped.rows_affected() == 0 {
            return Ok(false);
        }
        // DELETE, not TRUNCATE: a load that began before this save keeps
        // seeing the model it began with.
        for table in ["employees", "role_grants", "roles", "catalog_objects", "companies"] {
            sqlx::query(&format!("DELETE FROM {table}")).execute(&mut *tx).await.map_err(storage_error(WHAT))?;
        }
        let companies: Vec<&Company> = model.companies.values().collect();
        sqlx::query(
            "INSERT INTO companies (cnum, name, contract_status) SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[])",
        )
        .bind(companies.iter().map(|c| c.cnum.as_str()).collect::<Vec<_>>())
        .bind(companies.iter().map(|c| c.name.as_str()).collect::<Vec<_>>())
        .bind(companies.iter().map(|c| c.contract_status.as_str()).collect::<Vec<_>>())
        .execute(&mut *tx)
        .await
        .map_err(storage_error(WHAT))?;
        // Each object's actions as a JSON array (`text[][]` must be rectangular).
        let catalog: Vec<&CatalogObject> = model.catalog.values().collect();
        let actions = catalog
            .iter()
            .map(|o| serde_json::to_string(&o.actions).map_err(|e| StorageError::Other(e.to_string())))
            .collect::<Result<Vec<_>>>()?;
        sqlx::query(
            "INSERT INTO catalog_objects (path, name, actions) \
             SELECT path, name, ARRAY(SELECT jsonb_array_elements_text(actions)) \
             FROM UNNEST($1::text[], $2::text[], $3::jsonb[]) AS v (path, name, actions)",
        )
        .bind(catalog.iter().map(|o| o.path.as_str()).collect::<Vec<_>>())
        .bind(catalog.iter().map(|o| o.name.as_deref()).collect::<Vec<_>>())
        .bind(actions)
        .execute(&mut *tx)
        .await
        .map_err(storage_error(WHAT))?;
        let roles: Vec<&Role> = model.roles.values().collect();
        sqlx::query(
            "INSERT INTO roles (id, code, name, available) \
             SELECT * FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::bool[])",
        )
        .bind(roles.iter().map(|r| r.id).collect::<Vec<_>>())
        .bind(roles.iter().map(|r| r.code.as_str()).collect::<Vec<_>>())
        .bind(roles.iter().map(|r| r.name.as_deref()).collect::<Vec<_>>())
        .bind(roles.iter().map(|r| r.available).collect::<Vec<_>>())
        .execute(&mut *tx)
        .await
        .map_err(storage_error(WHAT))?;
        let grants: Vec<(Uuid, &str, &str)> = roles
            .iter()
            .flat_map(|r| {
                r.grants
                    .iter()
                    .flat_map(move |(object, actions)| actions.iter().map(move |a| (r.id, object.as_str(), a.as_str())))
            })
            .collect();
        sqlx::query(
            "INSERT INTO role_grants (role_id, object_path, action) SELECT * FROM UNNEST($1::uuid[], $2::text[], $3::text[])",
        )
        .bind(grants.iter().map(|g| g.0).collect::<Vec<_>>())
        .bind(grants.iter().map(|g| g.1).collect::<Vec<_>>())
        .bind(grants.iter().map(|g| g.2).collect::<Vec<_>>())
        .execute(&mut *tx)
        .await
        .map_err(storage_error(WHAT))?;
        let employees: Vec<&Employee> = model.employees.values().collect();
        sqlx::query(
            "INSERT INTO employees (user_id, cnum, role_id, active) \
             SELECT * FROM UNNEST($1::uuid[], $2::text[], $3::uuid[], $4::bool[])",
        )
        .bind(employees.iter().map(|e| e.user_id).collect::<Vec<_>>())
        .bind(employees.iter().map(|e| e.cnum.as_str()).collect::<Vec<_>>())
        .bind(employees.iter().map(|e| e.role_id).collect::<Vec<_>>())
        .bind(employees.iter().map(|e| e.active).collect::<Vec<_>>())
        .execute(&mut *tx)
        .await
        .map_err(storage_error(WHAT))?;
        tx.commit().await.map_err(storage_error(WHAT))?;
        if let Some(memory) = self.memory() {
            memory.revision_seen(model.revision + 1);
        }
        Ok(true)
    }
}
