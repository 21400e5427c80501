//! The permission document: the format of `portico permissions import` and
//! of the admin API, and how it merges into a [`PermissionModel`].
//!
//! A document lists companies, catalog entries, roles and employees. Each
//! entry creates or replaces the entry with the same key (`cnum`, `object`,
//! role `code`, `user` + `cnum`); what the document does not mention stays.
//! Nothing is deleted: a contract ends with status `TERMINATED`, an
//! employment with `active: false`. A role's `grants`, when present, replace
//! all of that role's grants.
//!
//! The merged model is checked as a whole before anything is saved, and
//! every problem is reported with its place in the document
//! (`employees[3].role`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{ACC_OBJECT, CatalogObject, Company, ContractStatus, EIO, Employee, PermissionModel, Role, VIEW};
use crate::text::echo;

/// A required text field: only a string. A YAML `null`, `true` or number
/// is refused (quote it) instead of being read as the text "null", "true"
/// or "7700000001", so the document means what its schema says.
fn text<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    struct Text;
    impl serde::de::Visitor<'_> for Text {
        type Value = String;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("text (a quoted string)")
        }
        fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<String, E> {
            Ok(value.to_owned())
        }
        fn visit_string<E: serde::de::Error>(self, value: String) -> Result<String, E> {
            Ok(value)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<String, E> {
            Err(E::custom("must be text, not null"))
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<String, E> {
            Err(E::custom("must be text, not null"))
        }
    }
    deserializer.deserialize_any(Text)
}

/// Longest `cnum`, code, object segment or action name accepted.
const MAX_NAME: usize = 64;
/// Longest display name accepted.
const MAX_DISPLAY: usize = 256;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PermissionDocument {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub companies: Vec<CompanyEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub catalog: Vec<CatalogEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<RoleEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub employees: Vec<EmployeeEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CompanyEntry {
    #[serde(deserialize_with = "text")]
    pub cnum: String,
    #[serde(deserialize_with = "text")]
    pub name: String,
    pub contract_status: ContractStatus,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CatalogEntry {
    /// `object` or `object.sub-object`.
    #[serde(deserialize_with = "text")]
    pub object: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub actions: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleEntry {
    #[serde(deserialize_with = "text")]
    pub code: String,
    /// Kept when the role exists; a new role without one gets a random id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default = "yes")]
    pub available: bool,
    /// Object path → actions. Replaces the role's grants when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub grants: Option<BTreeMap<String, Vec<String>>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EmployeeEntry {
    pub user: UserRef,
    #[serde(deserialize_with = "text")]
    pub cnum: String,
    /// A role code; `null` or absent for an employee without a role.
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default = "yes")]
    pub active: bool,
}

fn yes() -> bool {
    true
}

/// A user named by id or by login.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(transparent)]
pub struct UserRef(pub String);

impl UserRef {
    pub fn as_id(&self) -> Option<Uuid> {
        Uuid::parse_str(&self.0).ok()
    }
}

impl fmt::Display for UserRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One problem in a document, and where it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{place}: {message}")]
pub struct DocumentError {
    /// `employees[3].role`, `catalog[0].actions[2]`.
    pub place: String,
    pub message: String,
}

struct Problems(Vec<DocumentError>);

impl Problems {
    fn add(&mut self, place: impl Into<String>, message: impl Into<String>) {
        self.0.push(DocumentError { place: place.into(), message: message.into() });
    }
}

fn name_problem(value: &str) -> Option<String> {
    if value.is_empty() {
        Some("must not be empty".to_owned())
    } else if value.len() > MAX_NAME {
        Some(format!("longer than {MAX_NAME} characters"))
    } else if !value.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        Some(format!("{} may hold only Latin letters, digits, '-' and '_'", echo(value)))
    } else {
        None
    }
}

fn display_problem(value: &str) -> Option<String> {
    if value.trim().is_empty() {
        Some("must not be empty".to_owned())
    } else if value.chars().count() > MAX_DISPLAY {
        Some(format!("longer than {MAX_DISPLAY} characters"))
    } else if value.chars().any(char::is_control) {
        Some("must not hold control characters".to_owned())
    } else {
        None
    }
}

impl PermissionDocument {
    /// Every user the document names, to be resolved before [`PermissionModel::merge`].
    pub fn user_refs(&self) -> BTreeSet<&UserRef> {
        self.employees.iter().map(|e| &e.user).collect()
    }
}

impl PermissionModel {
    /// The model with `doc` applied, or every problem found. `users` maps
    /// each resolvable [`UserRef`] of the document to the user's id; `new_id`
    /// makes ids for new roles.
    ///
    /// # Errors
    /// Every [`DocumentError`] found, in document order; the model is unchanged.
    pub fn merge(
        &self,
        doc: &PermissionDocument,
        users: &HashMap<UserRef, Uuid>,
        mut new_id: impl FnMut() -> Uuid,
    ) -> Result<PermissionModel, Vec<DocumentError>> {
        let mut next = self.clone();
        let mut problems = Problems(Vec::new());

        let mut seen = BTreeSet::new();
        for (i, entry) in doc.companies.iter().enumerate() {
            let place = format!("companies[{i}]");
            if let Some(p) = name_problem(&entry.cnum) {
                problems.add(format!("{place}.cnum"), p);
            } else if !seen.insert(&entry.cnum) {
                problems.add(format!("{place}.cnum"), format!("company {} appears twice", echo(&entry.cnum)));
            }
            if let Some(p) = display_problem(&entry.name) {
                problems.add(format!("{place}.name"), p);
            }
            next.companies.insert(
                entry.cnum.clone(),
                Company { cnum: entry.cnum.clone(), name: entry.name.clone(), contract_status: entry.contract_status },
            );
        }

        let mut seen = BTreeSet::new();
        for (i, entry) in doc.catalog.iter().enumerate() {
            let place = format!("catalog[{i}]");
            let segments: Vec<&str> = entry.object.split('.').collect();
            if segments.len() > 2 {
                problems.add(format!("{place}.object"), "an object path is `object` or `object.sub-object`");
            } else if let Some(p) = segments.iter().find_map(|s| name_problem(s)) {
                problems.add(format!("{place}.object"), p);
            } else if !seen.insert(&entry.object) {
                problems.add(format!("{place}.object"), format!("object {} appears twice", echo(&entry.object)));
            }
            if let Some(p) = entry.name.as_deref().and_then(display_problem) {
                problems.add(format!("{place}.name"), p);
            }
            if entry.actions.is_empty() {
                problems.add(format!("{place}.actions"), "an object needs at least one action");
            }
            let mut actions = BTreeSet::new();
            for (j, action) in entry.actions.iter().enumerate() {
                if let Some(p) = name_problem(action) {
                    problems.add(format!("{place}.actions[{j}]"), p);
                } else if !actions.insert(action.clone()) {
                    problems.add(format!("{place}.actions[{j}]"), format!("action {} appears twice", echo(action)));
                }
            }
            next.catalog.insert(
                entry.object.clone(),
                CatalogObject { path: entry.object.clone(), name: entry.name.clone(), actions },
            );
        }
        for (i, entry) in doc.catalog.iter().enumerate() {
            let place = format!("catalog[{i}].object");
            let Some((parent, child)) = entry.object.split_once('.') else { continue };
            match next.catalog.get(parent) {
                None => problems.add(place, format!("the parent object {} is not in the catalog", echo(parent))),
                Some(p) if p.actions.contains(child) => problems.add(
                    place,
                    format!(
                        "{} is already an action of {}; a sub-object needs another name",
                        echo(child),
                        echo(parent)
                    ),
                ),
                Some(_) => {}
            }
            if parent == ACC_OBJECT && !entry.actions.iter().any(|a| a == VIEW) {
                problems.add(format!("catalog[{i}].actions"), format!("an ACC section needs the action {VIEW:?}"));
            }
        }

        let mut seen = BTreeSet::new();
        for (i, entry) in doc.roles.iter().enumerate() {
            let place = format!("roles[{i}]");
            if let Some(p) = name_problem(&entry.code) {
                problems.add(format!("{place}.code"), p);
            } else if !seen.insert(&entry.code) {
                problems.add(format!("{place}.code"), format!("role {} appears twice", echo(&entry.code)));
            }
            if let Some(p) = entry.name.as_deref().and_then(display_problem) {
                problems.add(format!("{place}.name"), p);
            }
            let existing = next.role_by_code(&entry.code).cloned();
            let id = match (entry.id, &existing) {
                (Some(id), Some(old)) if id != old.id => {
                    problems.add(
                        format!("{place}.id"),
                        format!("role {} already has the id {}", echo(&entry.code), old.id),
                    );
                    old.id
                }
                (Some(id), None) => {
                    if let Some(other) = next.roles.get(&id) {
                        problems
                            .add(format!("{place}.id"), format!("the id {id} belongs to role {}", echo(&other.code)));
                    }
                    id
                }
                (_, Some(old)) => old.id,
                (None, None) => new_id(),
            };
            let mut grants = existing.map(|r| r.grants).unwrap_or_default();
            if let Some(wanted) = &entry.grants {
                grants.clear();
                for (object, actions) in wanted {
                    let grant_place = format!("{place}.grants.{object}");
                    let Some(catalog) = next.catalog.get(object) else {
                        problems.add(grant_place, format!("the object {} is not in the catalog", echo(object)));
                        continue;
                    };
                    for (j, action) in actions.iter().enumerate() {
                        if !catalog.actions.contains(action) {
                            problems.add(
                                format!("{grant_place}[{j}]"),
                                format!("the object {} has no action {}", echo(object), echo(action)),
                            );
                        }
                    }
                    if !actions.is_empty() {
                        grants.insert(object.clone(), actions.iter().cloned().collect());
                    }
                }
            }
            let role =
                Role { id, code: entry.code.clone(), name: entry.name.clone(), available: entry.available, grants };
            next.roles.insert(id, role);
        }

        let mut seen = BTreeSet::new();
        for (i, entry) in doc.employees.iter().enumerate() {
            let place = format!("employees[{i}]");
            let user = users.get(&entry.user).copied();
            if user.is_none() {
                problems.add(format!("{place}.user"), format!("there is no user {}", echo(&entry.user.0)));
            }
            if !next.companies.contains_key(&entry.cnum) {
                problems.add(format!("{place}.cnum"), format!("there is no company {}", echo(&entry.cnum)));
            }
            let role_id = match &entry.role {
                None => None,
                Some(code) => match next.role_by_code(code) {
                    Some(role) => Some(role.id),
                    None => {
                        problems.add(format!("{place}.role"), format!("there is no role {}", echo(code)));
                        None
                    }
                },
            };
            let Some(user_id) = user else { continue };
            if !seen.insert((user_id, entry.cnum.clone())) {
                problems.add(
                    format!("{place}.user"),
                    format!("user {} appears twice in company {}", echo(&entry.user.0), echo(&entry.cnum)),
                );
            }
            next.employees.insert(
                (user_id, entry.cnum.clone()),
                Employee { user_id, cnum: entry.cnum.clone(), role_id, active: entry.active },
            );
        }

        next.check_references(doc, &mut problems);
        if problems.0.is_empty() {
            next.reindex();
            Ok(next)
        } else {
            Err(problems.0)
        }
    }

    /// What holds across entries: grants name catalog actions that still
    /// exist, and a company has at most one active EIO.
    fn check_references(&self, doc: &PermissionDocument, problems: &mut Problems) {
        for role in self.roles.values() {
            for (object, actions) in &role.grants {
                let known = self.catalog.get(object).map(|o| &o.actions);
                for action in actions.iter().filter(|a| known.is_none_or(|k| !k.contains(*a))) {
                    if let Some(i) = doc.catalog.iter().position(|c| &c.object == object) {
                        problems.add(
                            format!("catalog[{i}].actions"),
                            format!(
                                "role {} is granted {} on {}; keep the action",
                                echo(&role.code),
                                echo(action),
                                echo(object)
                            ),
                        );
                    }
                }
            }
        }
        let mut eio: BTreeMap<&str, Uuid> = BTreeMap::new();
        for employee in self.employees.values().filter(|e| e.active) {
            let is_eio = employee.role_id.and_then(|id| self.roles.get(&id)).is_some_and(|r| r.code == EIO);
            if is_eio && eio.insert(&employee.cnum, employee.user_id).is_some() {
                let place = doc
                    .employees
                    .iter()
                    .position(|e| e.cnum == employee.cnum && e.role.as_deref() == Some(EIO))
                    .map_or_else(|| "employees".to_owned(), |i| format!("employees[{i}].role"));
                problems.add(place, format!("company {} would have more than one active EIO", echo(&employee.cnum)));
            }
        }
    }

    /// The whole model as a document (users by id), for export.
    pub fn to_document(&self) -> PermissionDocument {
        PermissionDocument {
            companies: self
                .companies
                .values()
                .map(|c| CompanyEntry {
                    cnum: c.cnum.clone(),
                    name: c.name.clone(),
                    contract_status: c.contract_status,
                })
                .collect(),
            catalog: self
                .catalog
                .values()
                .map(|o| CatalogEntry {
                    object: o.path.clone(),
                    name: o.name.clone(),
                    actions: o.actions.iter().cloned().collect(),
                })
                .collect(),
            roles: self
                .roles
                .values()
                .map(|r| RoleEntry {
                    code: r.code.clone(),
                    id: Some(r.id),
                    name: r.name.clone(),
                    available: r.available,
                    grants: Some(r.grants.iter().map(|(o, a)| (o.clone(), a.iter().cloned().collect())).collect()),
                })
                .collect(),
            employees: self
                .employees
                .values()
                .map(|e| EmployeeEntry {
                    user: UserRef(e.user_id.to_string()),
                    cnum: e.cnum.clone(),
                    role: e.role_id.and_then(|id| self.roles.get(&id)).map(|r| r.code.clone()),
                    active: e.active,
                })
                .collect(),
        }
    }
}
