//! Property: every permission view agrees with every other. Random
//! companies, roles, grants and employees; then the v1 lists, the v2 full
//! map, v2 per object, v2 per object and company, and the ACC views are
//! compared — first on the model alone (many cases, shrinking), then over
//! HTTP against a real server on both backends, where the full map must
//! also equal what the model computes for the imported document.

use std::collections::{BTreeSet, HashMap};

use portico_model::permissions::{ACC_OBJECT, PermissionDocument, PermissionModel, UserRef, VIEW};
use portico_tests::permission_models::{self, COMPANIES, USERS};
use portico_tests::{TestApp, TokenPair, backends};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use uuid::Uuid;

type Leaf = (String, String, String);

/// The `true` leaves of a v2 map as (cnum, object path, action).
fn true_leaves(map: &Value) -> BTreeSet<Leaf> {
    fn walk(cnum: &str, path: &str, node: &Value, out: &mut BTreeSet<Leaf>) {
        for (key, value) in node.as_object().expect("an object") {
            match value {
                Value::Bool(true) => {
                    out.insert((cnum.to_owned(), path.to_owned(), key.clone()));
                }
                Value::Bool(false) => {}
                nested => walk(cnum, &format!("{path}.{key}"), nested, out),
            }
        }
    }
    let mut out = BTreeSet::new();
    for (cnum, objects) in map.as_object().expect("an object") {
        for (object, node) in objects.as_object().expect("an object") {
            walk(cnum, object, node, &mut out);
        }
    }
    out
}

/// The flags of `path` (its own actions only) inside a v2 map's company entry.
fn slice(company: &Value, path: &str) -> Value {
    let mut node = company;
    for segment in path.split('.') {
        node = &node[segment];
    }
    Value::Object(
        node.as_object()
            .expect("an object")
            .iter()
            .filter(|(_, v)| v.is_boolean())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

fn v1_leaves(context: &Value) -> BTreeSet<Leaf> {
    let mut out = BTreeSet::new();
    for contract in context["contracts"].as_array().expect("contracts") {
        for permission in contract["permissions"].as_array().expect("permissions") {
            for action in permission["actions"].as_array().expect("actions") {
                out.insert((
                    contract["cnum"].as_str().unwrap().to_owned(),
                    permission["name"].as_str().unwrap().to_owned(),
                    action.as_str().unwrap().to_owned(),
                ));
            }
        }
    }
    out
}

/// The model a document makes on an empty store, users mapped to fresh ids.
fn model_of(doc: &PermissionDocument) -> (PermissionModel, HashMap<UserRef, Uuid>) {
    let users: HashMap<UserRef, Uuid> = doc.user_refs().into_iter().map(|u| (u.clone(), Uuid::new_v4())).collect();
    let model = PermissionModel::default().merge(doc, &users, Uuid::new_v4).expect("generated documents are valid");
    (model, users)
}

#[test]
fn the_views_of_a_model_agree_with_each_other() {
    let mut runner = TestRunner::new(Config { cases: 200, ..Config::default() });
    runner
        .run(&permission_models::document("p".into()), |doc| {
            let (model, users) = model_of(&doc);
            for user in users.values().copied() {
                let Ok(full) = model.permissions_v2(user) else {
                    assert!(model.permissions_v1(user, "aud", None, None).is_err());
                    continue;
                };
                let full = serde_json::to_value(full).unwrap();
                let v1 = serde_json::to_value(model.permissions_v1(user, "aud", None, None).unwrap()).unwrap();
                assert_eq!(v1_leaves(&v1), true_leaves(&full));
                for path in &permission_models::objects("p") {
                    let by_object = serde_json::to_value(model.permissions_v2_object(user, path).unwrap()).unwrap();
                    for (cnum, company) in full.as_object().unwrap() {
                        assert_eq!(by_object[cnum], slice(company, path));
                        let one = model.permissions_v2_object_company(user, path, cnum);
                        match one {
                            Ok(flags) => assert_eq!(serde_json::to_value(flags).unwrap(), slice(company, path)),
                            Err(e) => assert!(model.role_of(user, cnum).is_none(), "{e}"),
                        }
                    }
                }
                for cnum in model.companies_of(user) {
                    let acc = model.acc_permissions_v2(user, cnum);
                    for section in &acc {
                        let flags = slice(&full[cnum], &format!("{ACC_OBJECT}.{}", section.code));
                        assert_eq!(section.view, flags[VIEW] == true);
                    }
                }
            }
            Ok(())
        })
        .unwrap();
}

async fn get(app: &TestApp, pair: &TokenPair, path: &str) -> (u16, Value) {
    let response = pair.on(app.http().get(app.url(path))).send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

#[tokio::test]
async fn the_views_agree_over_http_on_both_backends() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let mut runner = TestRunner::deterministic();
        let (mut compared, mut acc_compared) = (0, 0);
        for case in 0..6 {
            let prefix = format!("k{case}");
            let doc = permission_models::document(prefix.clone()).new_tree(&mut runner).unwrap().current();
            let mut ids = HashMap::new();
            let mut pairs = Vec::new();
            for i in 0..USERS {
                let login = permission_models::login(&prefix, i);
                ids.insert(UserRef(login.clone()), app.add_user(&login).await);
                pairs.push(app.token_pair(&login).await);
            }
            let before = app.store.load_permissions().await.unwrap();
            let response = app.apply_permissions(&serde_json::to_value(&doc).unwrap()).await;
            assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
            let expected = before.merge(&doc, &ids, Uuid::new_v4).unwrap();

            for pair in &pairs {
                let (status, full) = get(&app, pair, "/api/v2/permissions").await;
                let (v1_status, v1) = get(&app, pair, "/api/v1/permissions").await;
                let Ok(model_full) = expected.permissions_v2(pair.user_id) else {
                    assert_eq!((status, v1_status), (400, 400), "{backend:?} {full}");
                    assert_eq!(full["code"], v1["code"]);
                    continue;
                };
                assert_eq!((status, v1_status), (200, 200), "{backend:?} {full}");
                let model_full = serde_json::to_value(model_full).unwrap();
                assert_eq!(full, model_full, "{backend:?}: the server computes what the model does");
                assert_eq!(v1_leaves(&v1), true_leaves(&full));
                compared += 1;
                for path in &permission_models::objects(&prefix) {
                    let (status, by_object) = get(&app, pair, &format!("/api/v2/permissions/{path}")).await;
                    assert_eq!(status, 200);
                    for (cnum, company) in full.as_object().unwrap() {
                        assert_eq!(by_object[cnum], slice(company, path));
                        let (status, one) = get(&app, pair, &format!("/api/v2/permissions/{path}/{cnum}")).await;
                        if status == 200 {
                            assert_eq!(one, slice(company, path));
                        } else {
                            assert_eq!(one["code"], "role_not_found", "{one}");
                        }
                    }
                }
            }

            // ACC v2: what an EIO sees for an employee is that employee's own view.
            for c in 0..COMPANIES {
                let cnum = permission_models::cnum(&prefix, c);
                let Some(eio) = pairs.iter().find(|p| expected.is_eio(p.user_id, &cnum)) else { continue };
                for employee in pairs.iter().filter(|p| expected.role_of(p.user_id, &cnum).is_some()) {
                    let path = format!("/api/v2/acc-permissions/{}/{cnum}", employee.user_id);
                    let (status, seen_by_eio) = get(&app, eio, &path).await;
                    assert_eq!(status, 200, "{seen_by_eio}");
                    acc_compared += 1;
                    let (status, own) = get(&app, employee, &path).await;
                    assert_eq!(status, 200);
                    assert_eq!(seen_by_eio, own);
                    let (_, full) = get(&app, employee, "/api/v2/permissions").await;
                    for section in seen_by_eio.as_array().unwrap() {
                        let code = section["code"].as_str().unwrap();
                        let flags = slice(&full[&cnum], &format!("{ACC_OBJECT}.{code}"));
                        assert_eq!(section["view"], json!(flags[VIEW] == true));
                    }
                }
            }
        }
        assert!(compared > 10 && acc_compared > 3, "the cases exercise the views: {compared}, {acc_compared}");
    }
}
