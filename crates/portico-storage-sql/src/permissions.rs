//! [`sql_permission_repository!`]: the permission model, saved whole.

/// Rows inserted by one statement when a model is saved.
pub const INSERT_CHUNK: usize = 500;

/// Implements `PermissionRepository` for `$store` (see
/// [`sql_repositories!`](crate::sql_repositories) for the fields it needs).
/// With `fast_reads = field`, the revision read asks `self.field` first, as
/// the liveness read does.
///
/// A load reads the revision before and after the tables and starts again
/// when they differ: every save bumps the revision in its own transaction,
/// so equal revisions mean the reads in between saw one saved model, on any
/// isolation level.
#[macro_export]
macro_rules! sql_permission_repository {
    ($store:ident, $db:ty, $row:ty $(, fast_reads = $fast:ident)?) => {
        const _: () = {
            use std::collections::{BTreeMap, BTreeSet};

            use $crate::deps::async_trait::async_trait;
            use $crate::deps::portico_model::permissions::{
                CatalogObject, Company, ContractStatus, Employee, PermissionModel, Role,
            };
            use $crate::deps::portico_storage::{PermissionRepository, Result, StorageError};
            use $crate::deps::sqlx::{self, QueryBuilder, Row};
            use $crate::deps::uuid::Uuid;
            use $crate::permissions::INSERT_CHUNK;
            use $crate::{json, storage_error, to_json, uuid};

            const ROW: &str = "permission row";
            const REVISION: &str = "SELECT revision FROM permission_revision WHERE id = 1";

            fn get<'r, T: sqlx::Decode<'r, $db> + sqlx::Type<$db>>(row: &'r $row, column: &str) -> Result<T> {
                row.try_get(column).map_err(storage_error(ROW))
            }

            impl $store {
                async fn read_revision(&self) -> Result<i64> {
                    sqlx::query_scalar(REVISION).fetch_one(&self.read_pool).await.map_err(storage_error(ROW))
                }

                async fn read_model(&self, revision: i64) -> Result<PermissionModel> {
                    let pool = &self.read_pool;
                    let fetch = |sql: &'static str| async move {
                        sqlx::query(sql).fetch_all(pool).await.map_err(storage_error(ROW))
                    };
                    let companies = fetch("SELECT cnum, name, contract_status FROM companies")
                        .await?
                        .iter()
                        .map(|row| {
                            let status: String = get(row, "contract_status")?;
                            Ok(Company {
                                cnum: get(row, "cnum")?,
                                name: get(row, "name")?,
                                contract_status: ContractStatus::parse(&status)
                                    .ok_or_else(|| StorageError::Other(format!("contract status {status:?}")))?,
                            })
                        })
                        .collect::<Result<Vec<_>>>()?;
                    let catalog = fetch("SELECT path, name, actions FROM catalog_objects")
                        .await?
                        .iter()
                        .map(|row| {
                            let actions: String = get(row, "actions")?;
                            Ok(CatalogObject { path: get(row, "path")?, name: get(row, "name")?, actions: json(&actions)? })
                        })
                        .collect::<Result<Vec<_>>>()?;
                    let mut grants: BTreeMap<Uuid, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
                    for row in fetch("SELECT role_id, object_path, action FROM role_grants").await?.iter() {
                        let role: String = get(row, "role_id")?;
                        grants.entry(uuid(&role)?).or_default().entry(get(row, "object_path")?).or_default().insert(get(row, "action")?);
                    }
                    let roles = fetch("SELECT id, code, name, available FROM roles")
                        .await?
                        .iter()
                        .map(|row| {
                            let id = uuid(&get::<String>(row, "id")?)?;
                            Ok(Role {
                                id,
                                code: get(row, "code")?,
                                name: get(row, "name")?,
                                available: get(row, "available")?,
                                grants: grants.remove(&id).unwrap_or_default(),
                            })
                        })
                        .collect::<Result<Vec<_>>>()?;
                    let employees = fetch("SELECT user_id, cnum, role_id, active FROM employees")
                        .await?
                        .iter()
                        .map(|row| {
                            let role: Option<String> = get(row, "role_id")?;
                            Ok(Employee {
                                user_id: uuid(&get::<String>(row, "user_id")?)?,
                                cnum: get(row, "cnum")?,
                                role_id: role.as_deref().map(uuid).transpose()?,
                                active: get(row, "active")?,
                            })
                        })
                        .collect::<Result<Vec<_>>>()?;
                    Ok(PermissionModel::new(revision, companies, roles, catalog, employees))
                }
            }

            #[async_trait]
            impl PermissionRepository for $store {
                async fn permission_revision(&self) -> Result<i64> {
                    $( if let Some(fast) = &self.$fast { return fast.permission_revision(); } )?
                    self.read_revision().await
                }

                async fn load_permissions(&self) -> Result<PermissionModel> {
                    loop {
                        let before = self.read_revision().await?;
                        let model = self.read_model(before).await?;
                        if self.read_revision().await? == before {
                            return Ok(model);
                        }
                    }
                }

                async fn save_permissions(&self, model: &PermissionModel) -> Result<bool> {
                    let mut tx = self.pool.begin().await.map_err(storage_error(ROW))?;
                    let bumped = sqlx::query(
                        "UPDATE permission_revision SET revision = revision + 1 WHERE id = 1 AND revision = $1",
                    )
                    .bind(model.revision)
                    .execute(&mut *tx)
                    .await
                    .map_err(storage_error(ROW))?;
                    if bumped.rows_affected() == 0 {
                        return Ok(false);
                    }
                    for table in ["employees", "role_grants", "roles", "catalog_objects", "companies"] {
                        sqlx::query(&format!("DELETE FROM {table}"))
                            .execute(&mut *tx)
                            .await
                            .map_err(storage_error(ROW))?;
                    }
                    let companies: Vec<_> = model.companies.values().collect();
                    for chunk in companies.chunks(INSERT_CHUNK) {
                        QueryBuilder::<$db>::new("INSERT INTO companies (cnum, name, contract_status) ")
                            .push_values(chunk, |mut b, c| {
                                b.push_bind(c.cnum.clone()).push_bind(c.name.clone()).push_bind(c.contract_status.as_str());
                            })
                            .build()
                            .execute(&mut *tx)
                            .await
                            .map_err(storage_error(ROW))?;
                    }
                    let mut catalog = Vec::with_capacity(model.catalog.len());
                    for object in model.catalog.values() {
                        catalog.push((object, to_json(&object.actions)?));
                    }
                    for chunk in catalog.chunks(INSERT_CHUNK) {
                        QueryBuilder::<$db>::new("INSERT INTO catalog_objects (path, name, actions) ")
                            .push_values(chunk, |mut b, (o, actions)| {
                                b.push_bind(o.path.clone()).push_bind(o.name.clone()).push_bind(actions.clone());
                            })
                            .build()
                            .execute(&mut *tx)
                            .await
                            .map_err(storage_error(ROW))?;
                    }
                    let roles: Vec<_> = model.roles.values().collect();
                    for chunk in roles.chunks(INSERT_CHUNK) {
                        QueryBuilder::<$db>::new("INSERT INTO roles (id, code, name, available) ")
                            .push_values(chunk, |mut b, r| {
                                b.push_bind(r.id.to_string()).push_bind(r.code.clone()).push_bind(r.name.clone()).push_bind(r.available);
                            })
                            .build()
                            .execute(&mut *tx)
                            .await
                            .map_err(storage_error(ROW))?;
                    }
                    let grants: Vec<(Uuid, &String, &String)> = model
                        .roles
                        .values()
                        .flat_map(|r| r.grants.iter().flat_map(move |(o, actions)| actions.iter().map(move |a| (r.id, o, a))))
                        .collect();
                    for chunk in grants.chunks(INSERT_CHUNK) {
                        QueryBuilder::<$db>::new("INSERT INTO role_grants (role_id, object_path, action) ")
                            .push_values(chunk, |mut b, (role, object, action)| {
                                b.push_bind(role.to_string()).push_bind((*object).clone()).push_bind((*action).clone());
                            })
                            .build()
                            .execute(&mut *tx)
                            .await
                            .map_err(storage_error(ROW))?;
                    }
                    let employees: Vec<_> = model.employees.values().collect();
                    for chunk in employees.chunks(INSERT_CHUNK) {
                        QueryBuilder::<$db>::new("INSERT INTO employees (user_id, cnum, role_id, active) ")
                            .push_values(chunk, |mut b, e| {
                                b.push_bind(e.user_id.to_string())
                                    .push_bind(e.cnum.clone())
                                    .push_bind(e.role_id.map(|id| id.to_string()))
                                    .push_bind(e.active);
                            })
                            .build()
                            .execute(&mut *tx)
                            .await
                            .map_err(storage_error(ROW))?;
                    }
                    tx.commit().await.map_err(storage_error(ROW))?;
                    Ok(true)
                }
            }
        };
    };
}
