//! Random permission documents for property tests: a catalog with
//! sub-objects and ACC sections, roles with random grants, companies with
//! every contract status, and employees with random roles (at most one
//! active EIO per company, as the model requires).

use std::collections::BTreeMap;

use portico_model::permissions::{
    CatalogEntry, CompanyEntry, ContractStatus, EmployeeEntry, PermissionDocument, RoleEntry, UserRef,
};
use proptest::prelude::*;

pub const ACTIONS: [&str; 5] = ["view", "create", "edit", "sign", "delete"];
/// How many catalog entries a document has.
pub const OBJECTS: usize = 7;

/// The object paths of a document with `prefix`: objects with sub-objects,
/// the `acc` object (always just `view`, as everywhere) and an ACC section.
pub fn objects(prefix: &str) -> Vec<String> {
    let p = prefix;
    vec![
        format!("{p}o0"),
        format!("{p}o0.s0"),
        format!("{p}o0.s1"),
        format!("{p}o1"),
        format!("{p}o2"),
        "acc".into(),
        format!("acc.{p}sec0"),
    ]
}
pub const ROLES: [&str; 4] = ["EIO", "R1", "R2", "R3"];
pub const COMPANIES: usize = 3;
pub const USERS: usize = 5;

/// The login of generated user `i` with `prefix`.
pub fn login(prefix: &str, i: usize) -> String {
    format!("{prefix}u{i}")
}

/// The `cnum` of generated company `i` with `prefix`.
pub fn cnum(prefix: &str, i: usize) -> String {
    format!("{prefix}c{i}")
}

fn status() -> impl Strategy<Value = ContractStatus> {
    prop_oneof![
        4 => Just(ContractStatus::Active),
        1 => Just(ContractStatus::Blocked),
        1 => Just(ContractStatus::Terminated),
    ]
}

/// Action masks per object (`view` always for ACC sections and `acc`).
fn catalog() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(1u8..32, OBJECTS)
}

fn actions_of(object: &str, mask: u8) -> Vec<String> {
    let mask = match object {
        "acc" => 1,
        sub if sub.starts_with("acc.") => mask | 1,
        _ => mask,
    };
    ACTIONS.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, a)| (*a).to_owned()).collect()
}

/// A document whose companies, users and roles carry `prefix`, so that
/// several can live in one store. Role codes other than EIO get the prefix.
pub fn document(prefix: String) -> impl Strategy<Value = PermissionDocument> {
    let grants = proptest::collection::vec(proptest::collection::vec(any::<u8>(), OBJECTS), ROLES.len());
    let employees = proptest::collection::vec(
        proptest::option::weighted(0.7, (0..=ROLES.len(), any::<bool>(), 0u8..10)),
        USERS * COMPANIES,
    );
    let companies = proptest::collection::vec(status(), COMPANIES);
    (catalog(), grants, companies, employees).prop_map(move |(masks, grants, companies, employees)| {
        let catalog: Vec<CatalogEntry> = objects(&prefix)
            .iter()
            .zip(&masks)
            .map(|(object, mask)| CatalogEntry {
                object: object.clone(),
                name: Some(format!("Объект {object}")),
                actions: actions_of(object, *mask),
            })
            .collect();
        let role_code = |r: usize| if r == 0 { ROLES[0].to_owned() } else { format!("{prefix}{}", ROLES[r]) };
        let roles = grants
            .iter()
            .enumerate()
            .map(|(r, per_object)| {
                let granted: BTreeMap<String, Vec<String>> = catalog
                    .iter()
                    .zip(per_object)
                    .map(|(entry, bits)| {
                        let chosen = entry.actions.iter().enumerate().filter(|(i, _)| bits & (1 << i) != 0);
                        (entry.object.clone(), chosen.map(|(_, a)| a.clone()).collect())
                    })
                    .collect();
                RoleEntry {
                    code: role_code(r),
                    id: None,
                    name: Some(format!("Роль {r}")),
                    available: true,
                    grants: Some(granted),
                }
            })
            .collect();
        let mut eio_taken = [false; COMPANIES];
        let mut entries = Vec::new();
        for (slot, choice) in employees.iter().enumerate() {
            let Some((role, active, _)) = choice else { continue };
            let (user, company) = (slot / COMPANIES, slot % COMPANIES);
            let mut role = (*role < ROLES.len()).then_some(*role);
            if role == Some(0) && *active {
                if eio_taken[company] {
                    role = Some(1);
                }
                eio_taken[company] = true;
            }
            entries.push(EmployeeEntry {
                user: UserRef(login(&prefix, user)),
                cnum: cnum(&prefix, company),
                role: role.map(role_code),
                active: *active,
            });
        }
        PermissionDocument {
            companies: companies
                .iter()
                .enumerate()
                .map(|(i, status)| CompanyEntry {
                    cnum: cnum(&prefix, i),
                    name: format!("Компания {i}"),
                    contract_status: *status,
                })
                .collect(),
            catalog,
            roles,
            employees: entries,
        }
    })
}
