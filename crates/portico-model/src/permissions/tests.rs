use std::collections::HashMap;

use super::*;

fn doc(yaml: &str) -> PermissionDocument {
    serde_json::from_str(yaml).unwrap()
}

fn users() -> HashMap<UserRef, Uuid> {
    [("ivan", 1u128), ("maria", 2)].into_iter().map(|(l, n)| (UserRef(l.to_owned()), Uuid::from_u128(n))).collect()
}

fn base() -> PermissionModel {
    let d = doc(r#"{
        "companies": [{"cnum": "100", "name": "Romashka", "contractStatus": "ACTIVE"},
                      {"cnum": "200", "name": "Vasilek", "contractStatus": "BLOCKED"}],
        "catalog": [{"object": "payments", "actions": ["view", "sign"]},
                    {"object": "payments.drafts", "actions": ["view", "create"]},
                    {"object": "acc", "actions": ["view"]},
                    {"object": "acc.employees", "name": "Сотрудники", "actions": ["view", "manage"]}],
        "roles": [{"code": "EIO", "grants": {"payments": ["view", "sign"], "acc.employees": ["view", "manage"]}},
                  {"code": "ACCOUNTANT", "grants": {"payments.drafts": ["view"]}}],
        "employees": [{"user": "ivan", "cnum": "100", "role": "EIO"},
                      {"user": "maria", "cnum": "100", "role": "ACCOUNTANT"},
                      {"user": "maria", "cnum": "200", "role": "EIO"}]
    }"#);
    let mut n = 10;
    PermissionModel::default()
        .merge(&d, &users(), || {
            n += 1;
            Uuid::from_u128(n)
        })
        .unwrap()
}

#[test]
fn allowed_follows_role_grants_and_the_contract() {
    let m = base();
    let (ivan, maria) = (Uuid::from_u128(1), Uuid::from_u128(2));
    assert!(m.allowed(ivan, "100", "payments", "sign"));
    assert!(!m.allowed(ivan, "100", "payments.drafts", "view"));
    assert!(m.allowed(maria, "100", "payments.drafts", "view"));
    assert!(!m.allowed(maria, "100", "payments", "view"));
    // EIO of 200, but that contract is blocked.
    assert!(m.is_eio(maria, "200"));
    assert!(!m.allowed(maria, "200", "payments", "view"));
    assert!(!m.allowed(ivan, "200", "payments", "view"), "not an employee there");
}

#[test]
fn v2_map_nests_sub_objects_under_their_object() {
    let m = base();
    let map = serde_json::to_value(m.permissions_v2(Uuid::from_u128(1)).unwrap()).unwrap();
    let payments = &map["100"]["payments"];
    assert_eq!(payments["sign"], true);
    assert_eq!(payments["drafts"]["create"], false);
    assert_eq!(map["100"]["acc"]["employees"]["manage"], true);
}

/// A problem repeats at most [`crate::text::ECHO_CHARS`] characters of
/// what the document said: a 16 MiB document of unknown names is not
/// answered with 16 MiB of problems.
#[test]
fn a_problem_repeats_only_the_start_of_a_long_value() {
    let long = "x".repeat(100_000);
    let d = doc(&format!(
        r#"{{"roles": [{{"code": "R", "grants": {{"payments": ["{long}"], "{long}": ["view"]}}}}],
            "employees": [{{"user": "{long}", "cnum": "{long}", "role": "{long}"}}]}}"#
    ));
    let errors = base().merge(&d, &users(), Uuid::new_v4).unwrap_err();
    assert!(errors.len() >= 4, "{errors:?}");
    for error in &errors {
        assert!(error.message.chars().count() < 200, "{}: {}…", error.place, &error.message[..200]);
        assert!(error.message.contains("(100000 characters)"), "{}: {}", error.place, error.message);
    }
}

#[test]
fn inactive_employment_is_no_employment() {
    let m = base();
    let d = doc(r#"{"employees": [{"user": "ivan", "cnum": "100", "role": "EIO", "active": false}]}"#);
    let m = m.merge(&d, &users(), Uuid::new_v4).unwrap();
    let ivan = Uuid::from_u128(1);
    assert_eq!(m.permissions_v2(ivan).unwrap_err(), LookupError::EmployeeNotFound { cnum: None });
    assert!(m.knows_user(ivan));
    assert!(!m.allowed(ivan, "100", "payments", "view"));
}

#[test]
fn merge_reports_every_problem_with_its_place_and_changes_nothing() {
    let m = base();
    let d = doc(r#"{
        "companies": [{"cnum": "bad cnum", "name": "X", "contractStatus": "ACTIVE"}],
        "catalog": [{"object": "payments", "actions": ["view"]},
                    {"object": "nope.sub", "actions": ["view"]}],
        "roles": [{"code": "OPERATOR", "grants": {"payments": ["fly"]}}],
        "employees": [{"user": "ghost", "cnum": "100"},
                      {"user": "ivan", "cnum": "999", "role": "NOBODY"},
                      {"user": "maria", "cnum": "100", "role": "EIO"}]
    }"#);
    let errors = m.merge(&d, &users(), Uuid::new_v4).unwrap_err();
    let places: Vec<&str> = errors.iter().map(|e| e.place.as_str()).collect();
    for expected in [
        "companies[0].cnum",
        "catalog[1].object",
        "roles[0].grants.payments[0]",
        "employees[0].user",
        "employees[1].cnum",
        "employees[1].role",
        "catalog[0].actions",
        "employees[2].role",
    ] {
        assert!(places.contains(&expected), "{expected} missing from {places:?}");
    }
    assert_eq!(m, base(), "the model itself is untouched");
}

#[test]
fn document_round_trips() {
    let m = base();
    let ids: HashMap<UserRef, Uuid> = m.employees.keys().map(|(u, _)| (UserRef(u.to_string()), *u)).collect();
    let again = PermissionModel::default().merge(&m.to_document(), &ids, Uuid::new_v4).unwrap();
    assert_eq!(again, m);
}

#[test]
fn acc_views_come_from_the_acc_object() {
    let m = base();
    let ivan = Uuid::from_u128(1);
    let v1 = m.acc_permissions_v1(ivan, "100");
    assert!(v1["employees"].get("manage"));
    let v2 = m.acc_permissions_v2(Uuid::from_u128(2), "100");
    assert_eq!(
        v2,
        vec![AccPermission {
            code: "employees".into(),
            name: AccPermissionName { ru: Some("Сотрудники".into()) },
            view: false
        }]
    );
}
