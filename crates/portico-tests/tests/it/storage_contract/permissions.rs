//! The permission model: saved whole, one of two racing saves wins.

use super::*;

/// A permission model generated (deterministically) from the document
/// strategy, its employees created as users named with `prefix`.
pub(super) async fn generated_model(store: &dyn Storage, prefix: &str) -> portico_model::permissions::PermissionModel {
    use portico_model::permissions::{PermissionModel, UserRef};
    use proptest::strategy::{Strategy, ValueTree};
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let doc = portico_tests::permission_models::document(prefix.into()).new_tree(&mut runner).unwrap().current();
    let mut users = std::collections::HashMap::new();
    for login in doc.user_refs() {
        let employee = user(&login.0);
        store.create_user(&employee).await.unwrap();
        users.insert(UserRef(login.0.clone()), employee.id.as_uuid());
    }
    PermissionModel::default().merge(&doc, &users, Uuid::new_v4).unwrap()
}

#[tokio::test]
async fn the_permission_model_saves_whole_and_one_of_two_racing_saves_wins() {
    use portico_model::permissions::PermissionModel;
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        assert_eq!(store.permission_revision().await.unwrap(), 0);
        assert_eq!(store.load_permissions().await.unwrap(), PermissionModel::default());

        let model = generated_model(store.as_ref(), "s").await;
        assert!(store.save_permissions(&model).await.unwrap());
        assert_eq!(store.permission_revision().await.unwrap(), 1);
        let loaded = store.load_permissions().await.unwrap();
        let mut expected = model.clone();
        expected.revision = 1;
        assert_eq!(loaded, expected, "{backend:?}: a lossless round trip");

        // Two writers start from revision 1: exactly one save lands.
        let (a, b) = tokio::join!(store.save_permissions(&loaded), store.save_permissions(&loaded));
        assert_eq!([a.unwrap(), b.unwrap()].iter().filter(|saved| **saved).count(), 1);
        assert_eq!(store.permission_revision().await.unwrap(), 2);
        // A stale model changes nothing.
        assert!(!store.save_permissions(&model).await.unwrap());
        assert_eq!(store.load_permissions().await.unwrap().employees, model.employees);
    }
}

/// Employees deleted while the permission model is saved, all at once,
/// three rounds of sixteen deletions of employees and sixteen saves of
/// the model as read before them. Every call completes (none is refused
/// for a conflict with another), each deletion moves the revision on once,
/// at most one save a round (one that came before every deletion) lands,
/// and the stored model keeps none of the deleted users.
#[tokio::test]
async fn employees_deleted_while_the_model_is_saved_all_complete() {
    use portico_model::permissions::{Company, ContractStatus, Employee, PermissionModel};
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        for round in 0..3 {
            let mut users = Vec::new();
            for i in 0..16 {
                let employee = user(&format!("employee{round}-{i}"));
                store.create_user(&employee).await.unwrap();
                users.push(employee.id);
            }
            let cnum = "1001";
            let company =
                Company { cnum: cnum.into(), name: "Ромашка".into(), contract_status: ContractStatus::Active };
            let employees = users.iter().map(|id| Employee {
                user_id: id.as_uuid(),
                cnum: cnum.into(),
                role_id: None,
                active: true,
            });
            let start = store.permission_revision().await.unwrap();
            let model = PermissionModel::new(start, [company], [], [], employees);
            assert!(store.save_permissions(&model).await.unwrap(), "{backend:?}");
            let read = Arc::new(store.load_permissions().await.unwrap());
            let mut writes = tokio::task::JoinSet::new();
            for &id in &users {
                let (deleter, saver, read) = (Arc::clone(&store), Arc::clone(&store), Arc::clone(&read));
                writes.spawn(async move {
                    assert!(deleter.delete_user(id).await.unwrap(), "deleted");
                    false
                });
                writes.spawn(async move { saver.save_permissions(&read).await.unwrap() });
            }
            let saved = writes.join_all().await.into_iter().filter(|saved| *saved).count();
            assert!(saved <= 1, "{backend:?}: {saved} saves of one read landed");
            let revision = store.permission_revision().await.unwrap();
            let steps = 1 + 16 + i64::try_from(saved).unwrap();
            assert_eq!(revision, start + steps, "{backend:?}: one step per deletion and save");
            let stored = store.load_permissions().await.unwrap();
            assert!(stored.employees.is_empty(), "{backend:?}: {:?}", stored.employees);
        }
    }
}
