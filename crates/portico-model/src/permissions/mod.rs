//! Corporate clients' companies, their employees, roles and what each role
//! may do.
//!
//! The model is small and read far more often than it changes, so it is
//! handled as one value: [`PermissionModel`] holds everything, carries the
//! store's revision number, and answers every question the permissions API
//! and the report API ask ([`PermissionModel::allowed`]) without I/O.
//! Changes arrive as a [`PermissionDocument`] (the import file and the admin
//! API speak the same format), are merged into a copy of the model, checked
//! as a whole, and saved as a new revision.
//!
//! The catalog names *objects* (`payments`), their *sub-objects*
//! (`payments.drafts`) and the *actions* of each. A role grants actions on
//! objects. The access control center (ACC) is the object [`ACC_OBJECT`]; its
//! sub-objects are the sections of the ACC, and each has a `view` action.

mod document;
mod views;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub use document::{CatalogEntry, CompanyEntry, DocumentError, EmployeeEntry, PermissionDocument, RoleEntry, UserRef};
pub use views::{AccPermission, AccPermissionName, ContractContext, LookupError, PermissionV1, PermissionsContext};

/// The role code of a company's sole executive body.
pub const EIO: &str = "EIO";

/// The catalog object whose sub-objects are the sections of the access
/// control center.
pub const ACC_OBJECT: &str = "acc";

/// The action that makes an ACC section visible to an employee.
pub const VIEW: &str = "view";

/// A company's contract with the bank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ContractStatus {
    Active,
    Blocked,
    Terminated,
}

impl ContractStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "ACTIVE",
            Self::Blocked => "BLOCKED",
            Self::Terminated => "TERMINATED",
        }
    }

    /// The status stored as text.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "ACTIVE" => Some(Self::Active),
            "BLOCKED" => Some(Self::Blocked),
            "TERMINATED" => Some(Self::Terminated),
            _ => None,
        }
    }
}

/// A corporate client, identified by its client number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Company {
    pub cnum: String,
    pub name: String,
    pub contract_status: ContractStatus,
}

/// A role an employee holds in a company, with the actions it grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Role {
    pub id: Uuid,
    pub code: String,
    pub name: Option<String>,
    /// Whether the role may be disclosed through the role lookup; a role
    /// that is not answers `unavailable_role`.
    pub available: bool,
    /// Object path → the actions granted on it.
    pub grants: BTreeMap<String, BTreeSet<String>>,
}

/// An object or sub-object of the catalog and the actions defined on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogObject {
    /// `object` or `object.sub-object`.
    pub path: String,
    /// Display name (Russian); for ACC sections, the `name.ru` of the answer.
    pub name: Option<String>,
    pub actions: BTreeSet<String>,
}

impl CatalogObject {
    /// The parent object of a sub-object.
    pub fn parent(&self) -> Option<&str> {
        self.path.split_once('.').map(|(parent, _)| parent)
    }
}

/// A user's employment in a company.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Employee {
    pub user_id: Uuid,
    pub cnum: String,
    pub role_id: Option<Uuid>,
    /// An inactive employee is kept for history and counts as no employee.
    pub active: bool,
}

/// The whole permission model at one revision.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PermissionModel {
    /// The store's revision this model was read at (0 for an empty store).
    pub revision: i64,
    pub companies: BTreeMap<String, Company>,
    pub roles: BTreeMap<Uuid, Role>,
    pub catalog: BTreeMap<String, CatalogObject>,
    /// Keyed by (user, company).
    pub employees: BTreeMap<(Uuid, String), Employee>,
    /// Derived: user → the companies where the user is an active employee.
    by_user: HashMap<Uuid, Vec<String>>,
}

impl PermissionModel {
    /// Builds a model from its parts (as read from the store).
    pub fn new(
        revision: i64,
        companies: impl IntoIterator<Item = Company>,
        roles: impl IntoIterator<Item = Role>,
        catalog: impl IntoIterator<Item = CatalogObject>,
        employees: impl IntoIterator<Item = Employee>,
    ) -> Self {
        let mut model = Self {
            revision,
            companies: companies.into_iter().map(|c| (c.cnum.clone(), c)).collect(),
            roles: roles.into_iter().map(|r| (r.id, r)).collect(),
            catalog: catalog.into_iter().map(|o| (o.path.clone(), o)).collect(),
            employees: employees.into_iter().map(|e| ((e.user_id, e.cnum.clone()), e)).collect(),
            by_user: HashMap::new(),
        };
        model.reindex();
        model
    }

    fn reindex(&mut self) {
        self.by_user.clear();
        for employee in self.employees.values().filter(|e| e.active) {
            self.by_user.entry(employee.user_id).or_default().push(employee.cnum.clone());
        }
    }

    /// The active employment of `user` in `cnum`.
    pub fn employee(&self, user: Uuid, cnum: &str) -> Option<&Employee> {
        self.employees.get(&(user, cnum.to_owned())).filter(|e| e.active)
    }

    /// The companies where `user` is an active employee, in `cnum` order.
    pub fn companies_of(&self, user: Uuid) -> &[String] {
        self.by_user.get(&user).map_or(&[], Vec::as_slice)
    }

    /// Whether `user` has any employment record, active or not.
    pub fn knows_user(&self, user: Uuid) -> bool {
        self.employees.range((user, String::new())..).next().is_some_and(|((u, _), _)| *u == user)
    }

    /// The role of an active employee, if one is assigned.
    pub fn role_of(&self, user: Uuid, cnum: &str) -> Option<&Role> {
        self.employee(user, cnum)?.role_id.and_then(|id| self.roles.get(&id))
    }

    pub fn role_by_code(&self, code: &str) -> Option<&Role> {
        self.roles.values().find(|r| r.code == code)
    }

    /// Whether `user` is the EIO of `cnum`.
    pub fn is_eio(&self, user: Uuid, cnum: &str) -> bool {
        self.role_of(user, cnum).is_some_and(|r| r.code == EIO)
    }

    /// The one authorization question every module asks: may `user` do
    /// `action` on `object` in company `cnum`? Yes only for an active
    /// employee of a company with an `ACTIVE` contract whose role grants it.
    pub fn allowed(&self, user: Uuid, cnum: &str, object: &str, action: &str) -> bool {
        let active = self.companies.get(cnum).is_some_and(|c| c.contract_status == ContractStatus::Active);
        active && self.role_of(user, cnum).is_some_and(|r| r.grants.get(object).is_some_and(|a| a.contains(action)))
    }

    /// The top-level objects of the catalog.
    pub fn objects(&self) -> impl Iterator<Item = &CatalogObject> {
        self.catalog.values().filter(|o| o.parent().is_none())
    }

    /// The sub-objects of `parent`.
    pub fn children<'a>(&'a self, parent: &'a str) -> impl Iterator<Item = &'a CatalogObject> + 'a {
        self.catalog.values().filter(move |o| o.parent() == Some(parent))
    }

    /// The sections of the access control center.
    pub fn acc_sections(&self) -> impl Iterator<Item = &CatalogObject> {
        self.children(ACC_OBJECT)
    }
}

#[cfg(test)]
mod tests;
