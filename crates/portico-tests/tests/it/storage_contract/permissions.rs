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
