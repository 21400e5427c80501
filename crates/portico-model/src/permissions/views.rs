//! What the permissions API answers, computed from a [`PermissionModel`].
//!
//! Every view is built from one rule, [`PermissionModel::allowed`], so the
//! views cannot disagree: the v1 lists hold exactly the `true` leaves of the
//! v2 map, the v2 per-object answers are slices of it, and the ACC answers
//! are the `acc` object's slice.

use std::collections::BTreeMap;

use serde::ser::SerializeMap as _;
use serde::{Deserialize, Serialize, Serializer};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{ACC_OBJECT, CatalogObject, ContractStatus, PermissionModel, VIEW};

/// Permissions context v1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = PermissionsContextV1)]
pub struct PermissionsContext {
    pub user_id: Uuid,
    pub aud: String,
    pub contracts: Vec<ContractContext>,
}

/// Contract context v1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ContractContextV1)]
pub struct ContractContext {
    pub cnum: String,
    pub contract_status: ContractStatus,
    pub permissions: Vec<PermissionV1>,
}

/// Permission v1: an object path and the actions allowed on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PermissionV1 {
    pub name: String,
    pub actions: Vec<String>,
}

/// ACC employee permission.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = AccEmployeePermission)]
pub struct AccPermission {
    pub code: String,
    pub name: AccPermissionName,
    pub view: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = AccPermissionName)]
pub struct AccPermissionName {
    pub ru: Option<String>,
}

/// Why a look-up has no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    /// The user is not an active employee of `cnum` (of any company when `None`).
    #[error("employee not found")]
    EmployeeNotFound { cnum: Option<String> },
    /// The user holds no role in `cnum` (in any company considered when `None`).
    #[error("role not found")]
    RoleNotFound { cnum: Option<String> },
    /// The catalog has no such object.
    #[error("unknown object {0:?}")]
    UnknownObject(String),
}

impl PermissionModel {
    /// The companies a read covers: `cnums` when given (each must employ the
    /// user), else every company that does. At least one must assign a role.
    ///
    /// # Errors
    /// [`LookupError::EmployeeNotFound`], [`LookupError::RoleNotFound`].
    pub fn read_scope(&self, user: Uuid, cnums: Option<&[String]>) -> Result<Vec<String>, LookupError> {
        let scope: Vec<String> = match cnums {
            Some(wanted) => {
                let mut scope = Vec::with_capacity(wanted.len());
                for cnum in wanted {
                    if self.employee(user, cnum).is_none() {
                        return Err(LookupError::EmployeeNotFound { cnum: Some(cnum.clone()) });
                    }
                    if !scope.contains(cnum) {
                        scope.push(cnum.clone());
                    }
                }
                scope.sort();
                scope
            }
            None => self.companies_of(user).to_vec(),
        };
        if scope.is_empty() {
            return Err(LookupError::EmployeeNotFound { cnum: None });
        }
        if !scope.iter().any(|cnum| self.role_of(user, cnum).is_some()) {
            let cnum = (scope.len() == 1).then(|| scope[0].clone());
            return Err(LookupError::RoleNotFound { cnum });
        }
        Ok(scope)
    }

    /// The catalog entry at `path`.
    ///
    /// # Errors
    /// [`LookupError::UnknownObject`].
    pub fn object(&self, path: &str) -> Result<&CatalogObject, LookupError> {
        self.catalog.get(path).ok_or_else(|| LookupError::UnknownObject(path.to_owned()))
    }

    /// `action → allowed` for every action of `object`.
    pub fn flags<'a>(&'a self, user: Uuid, cnum: &'a str, object: &'a CatalogObject) -> Flags<'a> {
        Flags { model: self, user, cnum, object }
    }

    /// `GET /api/v2/permissions`: company → object → (action → allowed,
    /// sub-object → action → allowed).
    ///
    /// # Errors
    /// As [`PermissionModel::read_scope`].
    pub fn permissions_v2(&self, user: Uuid) -> Result<PermissionsV2<'_>, LookupError> {
        Ok(PermissionsV2 { model: self, user, scope: self.read_scope(user, None)? })
    }

    /// `GET /api/v2/permissions/{obj}`: company → action → allowed.
    ///
    /// # Errors
    /// As [`PermissionModel::read_scope`] and [`PermissionModel::object`].
    pub fn permissions_v2_object(&self, user: Uuid, path: &str) -> Result<PermissionsV2Object<'_>, LookupError> {
        let object = self.object(path)?;
        Ok(PermissionsV2Object { model: self, user, object, scope: self.read_scope(user, None)? })
    }

    /// `GET /api/v2/permissions/{obj}/{cnum}`: action → allowed.
    ///
    /// # Errors
    /// As [`PermissionModel::read_scope`] and [`PermissionModel::object`].
    pub fn permissions_v2_object_company<'a>(
        &'a self,
        user: Uuid,
        path: &str,
        cnum: &'a str,
    ) -> Result<Flags<'a>, LookupError> {
        let object = self.object(path)?;
        self.read_scope(user, Some(&[cnum.to_owned()]))?;
        Ok(self.flags(user, cnum, object))
    }

    /// `GET /api/v1/permissions[/{object_path}]`: per company, the objects
    /// (all, or those named in `objects`) with at least one allowed action.
    ///
    /// # Errors
    /// As [`PermissionModel::read_scope`] and [`PermissionModel::object`].
    pub fn permissions_v1(
        &self,
        user: Uuid,
        aud: &str,
        cnums: Option<&[String]>,
        objects: Option<&[String]>,
    ) -> Result<PermissionsContext, LookupError> {
        let objects: Vec<&CatalogObject> = match objects {
            Some(paths) => {
                let mut found = paths.iter().map(|p| self.object(p)).collect::<Result<Vec<_>, _>>()?;
                found.sort_by(|a, b| a.path.cmp(&b.path));
                found.dedup_by(|a, b| a.path == b.path);
                found
            }
            None => self.catalog.values().collect(),
        };
        let scope = self.read_scope(user, cnums)?;
        let contracts = scope
            .into_iter()
            .map(|cnum| {
                let permissions = objects
                    .iter()
                    .filter_map(|object| {
                        let actions: Vec<String> = object
                            .actions
                            .iter()
                            .filter(|a| self.allowed(user, &cnum, &object.path, a))
                            .cloned()
                            .collect();
                        (!actions.is_empty()).then(|| PermissionV1 { name: object.path.clone(), actions })
                    })
                    .collect();
                let contract_status = self.companies[&cnum].contract_status;
                ContractContext { cnum, contract_status, permissions }
            })
            .collect();
        Ok(PermissionsContext { user_id: user, aud: aud.to_owned(), contracts })
    }

    /// `GET /api/v1/acc-permissions/{cnum}`: ACC section → action → allowed,
    /// for `user` in `cnum`.
    pub fn acc_permissions_v1<'a>(&'a self, user: Uuid, cnum: &'a str) -> BTreeMap<&'a str, Flags<'a>> {
        self.acc_sections().map(|s| (section_code(s), self.flags(user, cnum, s))).collect()
    }

    /// `GET /api/v2/acc-permissions/{userId}/{cnum}`: each ACC section and
    /// whether `user` may view it in `cnum`.
    pub fn acc_permissions_v2(&self, user: Uuid, cnum: &str) -> Vec<AccPermission> {
        self.acc_sections()
            .map(|s| AccPermission {
                code: section_code(s).to_owned(),
                name: AccPermissionName { ru: s.name.clone() },
                view: self.allowed(user, cnum, &s.path, VIEW),
            })
            .collect()
    }
}

/// An ACC section's code: its sub-object name under [`ACC_OBJECT`].
fn section_code(section: &CatalogObject) -> &str {
    section.path.strip_prefix(ACC_OBJECT).and_then(|p| p.strip_prefix('.')).unwrap_or(&section.path)
}

/// The flags of one object for one user in one company; serializes as
/// `{"action": allowed, ...}` straight from the model, without building a map.
#[derive(Debug, Clone, Copy)]
pub struct Flags<'a> {
    model: &'a PermissionModel,
    user: Uuid,
    cnum: &'a str,
    object: &'a CatalogObject,
}

impl Flags<'_> {
    /// Whether `action` is allowed (false for an action the object lacks).
    pub fn get(&self, action: &str) -> bool {
        self.object.actions.contains(action) && self.model.allowed(self.user, self.cnum, &self.object.path, action)
    }

    fn entries<M: serde::ser::SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        for action in &self.object.actions {
            map.serialize_entry(action, &self.model.allowed(self.user, self.cnum, &self.object.path, action))?;
        }
        Ok(())
    }
}

impl Serialize for Flags<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.object.actions.len()))?;
        self.entries(&mut map)?;
        map.end()
    }
}

/// An object's flags with its sub-objects nested under their names.
struct ObjectTree<'a>(Flags<'a>);

impl Serialize for ObjectTree<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Flags { model, user, cnum, object } = self.0;
        let mut map = serializer.serialize_map(None)?;
        self.0.entries(&mut map)?;
        for child in model.children(&object.path) {
            let name = child.path.rsplit('.').next().unwrap_or(&child.path);
            map.serialize_entry(name, &ObjectTree(model.flags(user, cnum, child)))?;
        }
        map.end()
    }
}

/// The answer of `GET /api/v2/permissions`.
#[derive(Debug, Clone)]
pub struct PermissionsV2<'a> {
    model: &'a PermissionModel,
    user: Uuid,
    scope: Vec<String>,
}

impl Serialize for PermissionsV2<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Company<'a>(&'a PermissionModel, Uuid, &'a str);
        impl Serialize for Company<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let Company(model, user, cnum) = *self;
                let mut map = serializer.serialize_map(None)?;
                for object in model.objects() {
                    map.serialize_entry(&object.path, &ObjectTree(model.flags(user, cnum, object)))?;
                }
                map.end()
            }
        }
        let mut map = serializer.serialize_map(Some(self.scope.len()))?;
        for cnum in &self.scope {
            map.serialize_entry(cnum, &Company(self.model, self.user, cnum))?;
        }
        map.end()
    }
}

/// The answer of `GET /api/v2/permissions/{obj}`.
#[derive(Debug, Clone)]
pub struct PermissionsV2Object<'a> {
    model: &'a PermissionModel,
    user: Uuid,
    object: &'a CatalogObject,
    scope: Vec<String>,
}

impl Serialize for PermissionsV2Object<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.scope.len()))?;
        for cnum in &self.scope {
            map.serialize_entry(cnum, &self.model.flags(self.user, cnum, self.object))?;
        }
        map.end()
    }
}
