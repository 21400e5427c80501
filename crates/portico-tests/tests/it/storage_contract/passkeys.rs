//! Passkeys: stored per user, unique credential ids, a bounded number, a
//! counter that must advance (exactly one of parallel uses showing one
//! value), locks, renames and removals with their audit events.

use portico_model::passkey::{MAX_PER_USER, Passkey};
use portico_storage::PasskeyStored;

use super::*;

fn passkey(user: &User, credential_id: &str, sign_count: u32) -> Passkey {
    Passkey {
        id: Uuid::new_v4(),
        user_id: user.id,
        credential_id: credential_id.into(),
        name: format!("key {credential_id}"),
        credential: format!(r#"{{"cred_id":"{credential_id}"}}"#),
        sign_count,
        created_at: t0(),
        last_used_at: None,
        locked_at: None,
    }
}

fn event(kind: AuditKind, user: &User) -> AuditEvent {
    AuditEvent::new(t0(), kind).user(user.id)
}

/// How many audit events of `kind` the store holds.
pub(crate) async fn audited(store: &dyn Storage, kind: AuditKind) -> usize {
    store.recent_audit(1_000).await.unwrap().iter().filter(|e| e.kind == kind.as_str()).count()
}

#[tokio::test]
async fn passkeys_are_stored_per_user_with_unique_credentials_and_a_limit() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (ivan, maria) = two_users(&*store).await;
        let created = event(AuditKind::PasskeyCreated, &ivan);
        let first = Passkey { created_at: t0() - Duration::minutes(1), ..passkey(&ivan, "cred-1", 0) };
        assert_eq!(store.insert_passkey(&first, &created).await.unwrap(), PasskeyStored::Stored);
        let taken = passkey(&maria, "cred-1", 0);
        assert_eq!(
            store.insert_passkey(&taken, &created).await.unwrap(),
            PasskeyStored::CredentialTaken,
            "{backend:?}"
        );
        let ghost = passkey(&user("ghost"), "cred-ghost", 0);
        assert_eq!(store.insert_passkey(&ghost, &created).await.unwrap(), PasskeyStored::NoUser);
        assert_eq!(store.find_passkey("cred-1").await.unwrap(), Some(first.clone()));
        assert_eq!(store.find_passkey("cred-2").await.unwrap(), None);
        assert!(store.passkeys_of(maria.id).await.unwrap().is_empty());
        assert_eq!(audited(&*store, AuditKind::PasskeyCreated).await, 1, "only what was stored is audited");

        // Parallel enrolments of one user: no more than the limit.
        let mut attempts = tokio::task::JoinSet::new();
        for i in 0..32 {
            let store = store.clone();
            let (key, created) = (passkey(&ivan, &format!("many-{i}"), 0), created.clone());
            attempts.spawn(async move { store.insert_passkey(&key, &created).await.unwrap() });
        }
        let outcomes = attempts.join_all().await;
        let stored = outcomes.iter().filter(|o| **o == PasskeyStored::Stored).count();
        let refused = outcomes.iter().filter(|o| **o == PasskeyStored::TooMany).count();
        assert_eq!((stored, refused), (MAX_PER_USER - 1, 32 - (MAX_PER_USER - 1)), "{backend:?}");
        let kept = store.passkeys_of(ivan.id).await.unwrap();
        assert_eq!(kept.len(), MAX_PER_USER);
        assert_eq!(kept[0], first, "oldest first");
        assert_eq!(audited(&*store, AuditKind::PasskeyCreated).await, MAX_PER_USER);

        // A page of users' passkeys in one read: each carries its owner.
        let marias = passkey(&maria, "cred-maria", 0);
        store.insert_passkey(&marias, &event(AuditKind::PasskeyCreated, &maria)).await.unwrap();
        let page = store.passkeys_of_users(&[ivan.id, maria.id, UserId::random()]).await.unwrap();
        assert_eq!(page.len(), MAX_PER_USER + 1, "{backend:?}");
        assert_eq!(page.iter().filter(|p| p.user_id == maria.id).collect::<Vec<_>>(), vec![&marias]);
        assert_eq!(page.iter().filter(|p| p.user_id == ivan.id).cloned().collect::<Vec<_>>(), kept, "oldest first");
        assert_eq!(store.passkeys_of_users(&[maria.id]).await.unwrap(), vec![marias]);
        assert!(store.passkeys_of_users(&[]).await.unwrap().is_empty());

        // A removed user's passkeys go with them.
        store.delete_user(ivan.id).await.unwrap();
        assert_eq!(store.find_passkey("cred-1").await.unwrap(), None, "{backend:?}");
    }
}

#[tokio::test]
async fn a_use_must_advance_the_counter_and_of_parallel_uses_exactly_one_does() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let ivan = user("ivan");
        store.create_user(&ivan).await.unwrap();
        let key = passkey(&ivan, "cred-1", 5);
        store.insert_passkey(&key, &event(AuditKind::PasskeyCreated, &ivan)).await.unwrap();
        let used = event(AuditKind::PasskeyUsed, &ivan);
        let later = t0() + Duration::minutes(1);
        for stale in [0, 4, 5] {
            assert!(
                !store.record_passkey_use(key.id, "{}", stale, later, &used).await.unwrap(),
                "{backend:?}: {stale}"
            );
        }
        assert_eq!(store.find_passkey("cred-1").await.unwrap().unwrap().sign_count, 5, "nothing changed");

        let mut uses = tokio::task::JoinSet::new();
        for _ in 0..32 {
            let (store, used) = (store.clone(), used.clone());
            uses.spawn(async move { store.record_passkey_use(key.id, r#"{"n":6}"#, 6, later, &used).await.unwrap() });
        }
        let recorded = uses.join_all().await.into_iter().filter(|r| *r).count();
        assert_eq!(recorded, 1, "{backend:?}: one use per counter value");
        let stored = store.find_passkey("cred-1").await.unwrap().unwrap();
        assert_eq!(
            (stored.sign_count, stored.credential.as_str(), stored.last_used_at),
            (6, r#"{"n":6}"#, Some(later))
        );
        assert_eq!(audited(&*store, AuditKind::PasskeyUsed).await, 1);

        // A passkey without a counter is used again and again.
        let counterless = passkey(&ivan, "cred-0", 0);
        store.insert_passkey(&counterless, &event(AuditKind::PasskeyCreated, &ivan)).await.unwrap();
        for _ in 0..2 {
            assert!(store.record_passkey_use(counterless.id, "{}", 0, later, &used).await.unwrap(), "{backend:?}");
        }

        // A locked passkey is used no more.
        let locked = event(AuditKind::PasskeyLocked, &ivan);
        assert!(store.lock_passkey(key.id, later, &locked).await.unwrap());
        assert!(!store.lock_passkey(key.id, later, &locked).await.unwrap(), "locked once");
        assert_eq!(store.find_passkey("cred-1").await.unwrap().unwrap().locked_at, Some(later));
        assert!(!store.record_passkey_use(key.id, "{}", 99, later, &used).await.unwrap(), "{backend:?}");
        assert_eq!(audited(&*store, AuditKind::PasskeyLocked).await, 1);
    }
}

#[tokio::test]
async fn only_the_owner_renames_or_removes_a_passkey_and_a_removal_happens_once() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (ivan, maria) = two_users(&*store).await;
        let key = passkey(&ivan, "cred-1", 0);
        store.insert_passkey(&key, &event(AuditKind::PasskeyCreated, &ivan)).await.unwrap();
        assert!(!store.rename_passkey(maria.id, key.id, "mine").await.unwrap(), "{backend:?}");
        assert!(store.rename_passkey(ivan.id, key.id, "Phone").await.unwrap());
        assert_eq!(store.find_passkey("cred-1").await.unwrap().unwrap().name, "Phone");

        let removed = event(AuditKind::PasskeyRemoved, &ivan);
        assert!(!store.delete_passkey(maria.id, key.id, &removed).await.unwrap(), "{backend:?}");
        let mut removals = tokio::task::JoinSet::new();
        for _ in 0..32 {
            let (store, removed) = (store.clone(), removed.clone());
            removals.spawn(async move { store.delete_passkey(ivan.id, key.id, &removed).await.unwrap() });
        }
        let done = removals.join_all().await.into_iter().filter(|r| *r).count();
        assert_eq!(done, 1, "{backend:?}");
        assert_eq!(store.find_passkey("cred-1").await.unwrap(), None);
        assert_eq!(audited(&*store, AuditKind::PasskeyRemoved).await, 1);
    }
}

#[tokio::test]
async fn a_summary_counts_usable_passkeys_and_keeps_the_latest_declined_offer() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (ivan, maria) = two_users(&*store).await;
        assert_eq!(store.passkey_summary(ivan.id).await.unwrap(), portico_storage::PasskeySummary::default());

        let created = event(AuditKind::PasskeyCreated, &ivan);
        let (first, second) = (passkey(&ivan, "cred-1", 0), passkey(&ivan, "cred-2", 0));
        store.insert_passkey(&first, &created).await.unwrap();
        store.insert_passkey(&second, &created).await.unwrap();
        store.lock_passkey(second.id, t0(), &event(AuditKind::PasskeyLocked, &ivan)).await.unwrap();
        store.decline_passkey_offer(ivan.id, t0()).await.unwrap();
        store.decline_passkey_offer(ivan.id, t0() + Duration::days(3)).await.unwrap();
        let summary = store.passkey_summary(ivan.id).await.unwrap();
        assert_eq!((summary.kept, summary.usable), (2, 1), "{backend:?}: the locked one is kept, not usable");
        assert_eq!(summary.offer_declined_at, Some(t0() + Duration::days(3)), "{backend:?}: the latest decline");
        assert_eq!(store.passkey_summary(maria.id).await.unwrap().offer_declined_at, None, "per user");

        // A user who is gone leaves nothing behind, and is not recorded.
        let ghost = user("ghost");
        store.decline_passkey_offer(ghost.id, t0()).await.unwrap();
        assert_eq!(store.passkey_summary(ghost.id).await.unwrap(), portico_storage::PasskeySummary::default());
    }
}
