//! Clients, users, operators and the audit log.

use super::permissions::generated_model;
use super::*;
use portico_storage::Update;

#[tokio::test]
async fn clients_and_users_round_trip_with_unique_keys() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let c = client("app");
        store.create_client(&c).await.unwrap();
        assert_eq!(store.find_client(&client_id("app")).await.unwrap(), Some(c.clone()), "{backend:?}");
        assert!(matches!(store.create_client(&c).await, Err(StorageError::Conflict(_))));
        assert_eq!(store.list_clients(portico_storage::KeyPage::ALL, None).await.unwrap().len(), 1);

        let u = user("anna");
        store.create_user(&u).await.unwrap();
        assert_eq!(store.find_user(u.id).await.unwrap(), Some(u.clone()));
        assert_eq!(store.find_user_by_login("anna").await.unwrap(), Some(u.clone()));
        assert!(matches!(store.create_user(&user("anna")).await, Err(StorageError::Conflict(_))));

        assert!(store.delete_client(&client_id("app")).await.unwrap());
        assert!(!store.delete_client(&client_id("app")).await.unwrap());
        assert_eq!(store.find_client(&client_id("app")).await.unwrap(), None);
    }
}

/// A registered client and the one-time initial access token it spends
/// are one write: a client whose id is taken stores nothing and leaves
/// the token; a spent or expired token stores nothing.
#[tokio::test]
async fn a_client_registered_with_a_one_time_token_spends_it_in_the_same_write() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        store.insert_initial_access_token("iat", t0(), t0() + Duration::minutes(10)).await.unwrap();
        store.create_client(&client("taken")).await.unwrap();
        let taken = store.create_client_spending(&client("taken"), "iat").await;
        assert!(matches!(taken, Err(StorageError::Conflict(_))), "{backend:?}: {taken:?}");
        assert!(store.create_client_spending(&client("first"), "iat").await.unwrap(), "{backend:?}: still unspent");
        assert!(!store.create_client_spending(&client("second"), "iat").await.unwrap(), "{backend:?}: spent");
        assert!(!store.create_client_spending(&client("second"), "unknown").await.unwrap(), "{backend:?}");
        store.insert_initial_access_token("late", t0(), t0() + Duration::minutes(10)).await.unwrap();
        let late = Client { created_at: t0() + Duration::minutes(10), ..client("second") };
        assert!(!store.create_client_spending(&late, "late").await.unwrap(), "{backend:?}: expired");
        assert_eq!(store.find_client(&client_id("second")).await.unwrap(), None, "{backend:?}");
        assert_eq!(
            store.list_clients(portico_storage::KeyPage::ALL, None).await.unwrap().len(),
            2,
            "{backend:?}: taken and first"
        );
    }
}

#[tokio::test]
async fn blocking_revokes_grants_and_sessions_and_cleanup_removes_what_expired() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (u, g) = granted(store.as_ref()).await;
        let session = session("s", u.id);
        store.create_session(&session).await.unwrap();
        assert_eq!(store.find_session(&session_hash("s"), t0()).await.unwrap(), Some(session));

        let blocked = store.set_user_blocked("anna", true, t0()).await.unwrap().unwrap();
        assert!(blocked.blocked, "{backend:?}");
        assert!(store.find_grant(g.id).await.unwrap().unwrap().revoked_at.is_some());
        assert_eq!(store.find_session(&session_hash("s"), t0()).await.unwrap(), None);
        assert_eq!(store.set_user_blocked("nobody", true, t0()).await.unwrap(), None);

        store.insert_code(&code("h2", "app", u.id)).await.unwrap();
        let later = t0() + Duration::days(31);
        let report = store.delete_expired(later, Duration::minutes(15), later).await.unwrap();
        assert_eq!((report.codes, report.refresh_tokens, report.grants), (2, 1, 1), "{report:?}");
        assert_eq!(store.find_grant(g.id).await.unwrap(), None);
        let again = store.delete_expired(later, Duration::minutes(15), later).await.unwrap();
        assert_eq!(again.total(), 0, "idempotent");
    }
}

/// A user blocked, or deleted, while signing out everywhere at once: four
/// rounds of thirty-one logouts (each session holding a grant) and the
/// block (rounds 0 and 1) or the deletion (2 and 3), all at once. Every
/// write completes (none is refused for a conflict with another), no
/// session stays, and every grant ends revoked (or gone with the user).
#[tokio::test]
async fn a_block_or_deletion_while_the_users_sessions_end_at_once_completes_every_write() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        store.create_client(&client("app")).await.unwrap();
        for round in 0..4 {
            let u = user(&format!("user{round}"));
            store.create_user(&u).await.unwrap();
            let mut grants = Vec::new();
            for i in 0..31 {
                let name = format!("r{round}s{i}");
                store.create_session(&session(&name, u.id)).await.unwrap();
                let issued = AuthorizationCode { session_id: Some(sid(&name)), ..code(&name, "app", u.id) };
                store.insert_code(&issued).await.unwrap();
                let g = Grant { session_id: Some(sid(&name)), ..grant("app", u.id) };
                let (hash, token) = (code_hash(&name), refresh(&name, g.id, 30));
                let redeemed = store.redeem_code(&hash, t0(), &g, &token, &audit()).await.unwrap();
                assert_eq!(redeemed, Redemption::Redeemed);
                grants.push(g.id);
            }
            let mut logouts = tokio::task::JoinSet::new();
            for i in 0..31 {
                let store = Arc::clone(&store);
                logouts.spawn(async move {
                    let id = sid(&format!("r{round}s{i}"));
                    let audit = AuditEvent::new(t0(), AuditKind::SessionEnded);
                    store.end_session(id, t0(), &audit).await.unwrap();
                });
            }
            let deleted = round >= 2;
            if deleted {
                assert!(store.delete_user(u.id).await.unwrap(), "{backend:?}");
            } else {
                let blocked = store.set_user_blocked(&u.login, true, t0()).await.unwrap();
                assert!(blocked.is_some_and(|u| u.blocked), "{backend:?}");
            }
            logouts.join_all().await;
            assert!(store.list_sessions(u.id, t0()).await.unwrap().is_empty(), "{backend:?}: no session stays");
            for id in grants {
                let grant = store.find_grant(id).await.unwrap();
                let ended = if deleted { grant.is_none() } else { grant.is_some_and(|g| g.revoked_at.is_some()) };
                assert!(ended, "{backend:?}: grant {id} ended (deleted: {deleted})");
            }
        }
    }
}

#[tokio::test]
async fn clients_and_users_change_in_place_and_users_are_found_a_page_at_a_time() {
    use portico_storage::{TextMatch, UserQuery};
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let mut c = client("app");
        store.create_client(&c).await.unwrap();
        c.redirect_uris = vec!["https://c.example/cb".into()];
        c.secret_hash = "sha256:11".into();
        c.backchannel_logout_uri = None;
        c.scopes = vec!["openid".into()];
        let read = c.clone();
        assert_eq!(store.update_client(&c).await.unwrap(), Update::Updated);
        c.revision = 1;
        assert_eq!(store.find_client(&client_id("app")).await.unwrap(), Some(c.clone()), "{backend:?}");
        assert_eq!(store.update_client(&client("nobody")).await.unwrap(), Update::Missing);
        // A change made from the read before the update is refused, and
        // changes nothing; made again from what is stored, it is written.
        let mut late = read.clone();
        late.scopes = vec!["profile".into()];
        assert_eq!(store.update_client(&late).await.unwrap(), Update::Outdated, "{backend:?}");
        assert_eq!(store.find_client(&client_id("app")).await.unwrap(), Some(c.clone()), "{backend:?}: unchanged");
        let mut again = store.find_client(&client_id("app")).await.unwrap().unwrap();
        again.scopes = vec!["profile".into()];
        assert_eq!(store.update_client(&again).await.unwrap(), Update::Updated);
        assert_eq!(store.find_client(&client_id("app")).await.unwrap().unwrap().revision, 2);

        let mut anna = user("anna");
        anna.email = Some("anna@example.com".into());
        let mut andrei = user("andrei");
        andrei.phone = Some("+79001112233".into());
        andrei.email = Some("Андрей@пример.рф".into());
        let mut boris = user("boris");
        boris.email = Some("Boris@Example.COM".into());
        for u in [&anna, &andrei, &boris] {
            store.create_user(u).await.unwrap();
        }
        store.set_user_blocked("boris", true, t0()).await.unwrap();
        let logins = |users: Vec<User>| users.into_iter().map(|u| u.login).collect::<Vec<_>>();
        let page = |query: UserQuery| {
            let store = Arc::clone(&store);
            async move { logins(store.search_users(&query).await.unwrap()) }
        };
        assert_eq!(page(UserQuery::default()).await, ["andrei", "anna", "boris"], "{backend:?}: login order");
        let an = || Some(TextMatch::StartsWith("an".into()));
        assert_eq!(page(UserQuery { login: an(), limit: 1, ..Default::default() }).await, ["andrei"]);
        let after = Some("andrei".to_owned());
        assert_eq!(page(UserQuery { login: an(), after, limit: 1, ..Default::default() }).await, ["anna"]);
        let percent = Some(TextMatch::StartsWith("a%".into()));
        assert!(page(UserQuery { login: percent, ..Default::default() }).await.is_empty(), "a prefix is not a pattern");
        let phone = Some(TextMatch::Is("+79001112233".into()));
        assert_eq!(page(UserQuery { phone, ..Default::default() }).await, ["andrei"]);
        let email = Some(TextMatch::Is("anna@example.com".into()));
        assert_eq!(page(UserQuery { email, ..Default::default() }).await, ["anna"]);
        // E-mail addresses match with ASCII letters in either case, other
        // letters as they are, alike on both backends.
        for (asked, found) in [
            (TextMatch::Is("ANNA@Example.com".into()), vec!["anna"]),
            (TextMatch::Is("boris@example.com".into()), vec!["boris"]),
            (TextMatch::StartsWith("BOR".into()), vec!["boris"]),
            (TextMatch::Is("Андрей@пример.рф".into()), vec!["andrei"]),
            (TextMatch::Is("андрей@пример.рф".into()), vec![]),
        ] {
            let email = Some(asked.clone());
            assert_eq!(page(UserQuery { email, ..Default::default() }).await, found, "{backend:?}: {asked:?}");
        }
        assert_eq!(page(UserQuery { blocked: Some(true), ..Default::default() }).await, ["boris"]);
        assert_eq!(page(UserQuery { blocked: Some(false), ..Default::default() }).await, ["andrei", "anna"]);

        anna.login = "anna.k".into();
        anna.name = None;
        anna.password_hash = "$argon2id$y".into();
        let read = anna.clone();
        assert_eq!(store.update_user(&anna).await.unwrap(), Update::Updated);
        anna.revision = 1;
        assert_eq!(store.find_user(anna.id).await.unwrap(), Some(anna.clone()));
        assert_eq!(store.find_user_by_login("anna").await.unwrap(), None);
        // A change made from the read before the update (the old password
        // hash with it) is refused and changes nothing; made again from
        // what is stored, it is written.
        let mut late = read.clone();
        late.email = Some("late@example.com".into());
        assert_eq!(store.update_user(&late).await.unwrap(), Update::Outdated, "{backend:?}");
        assert_eq!(store.find_user(anna.id).await.unwrap(), Some(anna.clone()), "{backend:?}: unchanged");
        anna.email = Some("late@example.com".into());
        assert_eq!(store.update_user(&anna).await.unwrap(), Update::Updated);
        anna.revision = 2;
        assert_eq!(store.find_user(anna.id).await.unwrap(), Some(anna.clone()), "{backend:?}");
        anna.login = "andrei".into();
        assert!(matches!(store.update_user(&anna).await, Err(StorageError::Conflict(_))), "a taken login");
        assert_eq!(store.update_user(&user("nobody")).await.unwrap(), Update::Missing);
    }
}

#[tokio::test]
async fn a_deleted_user_takes_their_grants_sessions_and_employment_with_them() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (u, g) = granted(store.as_ref()).await;
        store.create_session(&session("s", u.id)).await.unwrap();
        let model = generated_model(store.as_ref(), "d").await;
        assert!(store.save_permissions(&model).await.unwrap());
        let employee = model.employees.values().next().expect("the document has employees").user_id;
        store.record_audit(&audit().user(u.id)).await.unwrap();

        assert!(store.delete_user(u.id).await.unwrap(), "{backend:?}");
        assert_eq!(store.find_user(u.id).await.unwrap(), None);
        assert_eq!(store.find_grant(g.id).await.unwrap(), None, "the grant goes with the user");
        assert!(!store.access_token_state(g.id, "jti").await.unwrap().is_live());
        assert_eq!(store.find_session(&session_hash("s"), t0()).await.unwrap(), None);
        assert_eq!(store.permission_revision().await.unwrap(), 1, "not an employee: the model is unchanged");
        assert_eq!(store.recent_audit(1).await.unwrap()[0].user_id, Some(u.id), "the audit log keeps their events");
        assert!(!store.delete_user(u.id).await.unwrap());

        assert!(store.delete_user(employee.into()).await.unwrap());
        assert_eq!(store.permission_revision().await.unwrap(), 2, "an employee's removal is a new revision");
        let loaded = store.load_permissions().await.unwrap();
        assert!(loaded.employees.values().all(|e| e.user_id != employee));
        assert_eq!(loaded.employees.len(), model.employees.values().filter(|e| e.user_id != employee).count());
    }
}

#[tokio::test]
async fn the_audit_log_is_filtered_and_paged_newest_first() {
    use portico_model::audit::Actor;
    use portico_storage::AuditQuery;
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let anna = UserId::random();
        let ci = Actor::AdminToken("ci".into());
        let events = [
            AuditEvent::new(t0(), AuditKind::UserCreated).user(anna).by(&ci),
            AuditEvent::new(t0() + Duration::minutes(1), AuditKind::LoginSucceeded)
                .user(anna)
                .client(&client_id("app")),
            AuditEvent::new(t0() + Duration::minutes(2), AuditKind::KeyRotated).by(&Actor::Cli),
            AuditEvent::new(t0() + Duration::minutes(3), AuditKind::UserBlocked).user(anna).by(&ci),
        ];
        for event in &events {
            store.record_audit(event).await.unwrap();
        }
        let kinds = |query: AuditQuery| {
            let store = Arc::clone(&store);
            async move {
                let found = store.query_audit(&query).await.unwrap();
                found.into_iter().map(|e| e.event.kind).collect::<Vec<_>>()
            }
        };
        let all = store.query_audit(&AuditQuery::default()).await.unwrap();
        assert_eq!(all.iter().map(|e| &e.event).collect::<Vec<_>>(), events.iter().rev().collect::<Vec<_>>());
        assert!(all.windows(2).all(|w| w[0].id > w[1].id), "{backend:?}: newest first by id");
        let user_id = Some(anna);
        assert_eq!(
            kinds(AuditQuery { user_id, ..Default::default() }).await,
            ["user.blocked", "login.succeeded", "user.created"]
        );
        let actor = Some("token:ci".to_owned());
        assert_eq!(kinds(AuditQuery { actor, ..Default::default() }).await, ["user.blocked", "user.created"]);
        let client_id = Some(client_id("app"));
        assert_eq!(kinds(AuditQuery { client_id, ..Default::default() }).await, ["login.succeeded"]);
        let kind = Some("key.rotated".to_owned());
        assert_eq!(kinds(AuditQuery { kind, ..Default::default() }).await, ["key.rotated"]);
        let (from, to) = (Some(t0() + Duration::minutes(1)), Some(t0() + Duration::minutes(3)));
        assert_eq!(kinds(AuditQuery { from, to, ..Default::default() }).await, ["key.rotated", "login.succeeded"]);
        let first_page = store.query_audit(&AuditQuery { limit: 2, ..Default::default() }).await.unwrap();
        let before = Some(first_page[1].id);
        assert_eq!(kinds(AuditQuery { before, ..Default::default() }).await, ["login.succeeded", "user.created"]);
    }
}

#[tokio::test]
async fn operator_roles_are_set_changed_taken_away_and_go_with_the_user() {
    use portico_model::user::OperatorRole;
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let anna = user("anna");
        store.create_user(&anna).await.unwrap();
        assert_eq!(store.operator_role(anna.id).await.unwrap(), None, "{backend:?}");
        assert!(store.set_operator_role(anna.id, Some(OperatorRole::Support), t0()).await.unwrap());
        assert_eq!(store.operator_role(anna.id).await.unwrap(), Some(OperatorRole::Support));
        assert!(store.set_operator_role(anna.id, Some(OperatorRole::Admin), t0()).await.unwrap());
        assert_eq!(store.operator_role(anna.id).await.unwrap(), Some(OperatorRole::Admin), "changed in place");
        assert!(store.set_operator_role(anna.id, None, t0()).await.unwrap());
        assert_eq!(store.operator_role(anna.id).await.unwrap(), None);
        let nobody = UserId::random();
        assert!(!store.set_operator_role(nobody, Some(OperatorRole::Admin), t0()).await.unwrap(), "no such user");
        assert!(!store.set_operator_role(nobody, None, t0()).await.unwrap());
        assert_eq!(store.operator_role(nobody).await.unwrap(), None);
        store.set_operator_role(anna.id, Some(OperatorRole::Support), t0()).await.unwrap();
        assert!(store.delete_user(anna.id).await.unwrap());
        assert_eq!(store.operator_role(anna.id).await.unwrap(), None, "the role goes with the user");
    }
}
