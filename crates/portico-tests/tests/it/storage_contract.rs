//! The storage contract: the same stories on every backend, straight
//! against the repository traits.

use std::sync::Arc;

use portico_model::audit::{AuditEvent, AuditKind};
use portico_model::client::{Client, LocalizedText};
use portico_model::ids::{ClientId, CodeHash, GrantId, RefreshTokenHash, SessionHash, SessionId, UserId};
use portico_model::login::{AuthMethod, LoginProcess, LoginState, PendingAuthorization};
use portico_model::oauth::{AuthorizationCode, Grant, Redemption, RefreshToken, Rotation};
use portico_model::session::SsoSession;
use portico_model::user::User;
use portico_storage::{Storage, StorageError};
use portico_storage_pg::PgStore;
use portico_storage_sqlite::SqliteStore;
use portico_tests::{Backend, TempDir, backends, fresh_database};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

pub(crate) async fn store(backend: Backend, dir: &TempDir) -> Arc<dyn Storage> {
    let url = fresh_database(backend, dir).await;
    match backend {
        Backend::Sqlite => {
            let store = SqliteStore::connect(&url).await.unwrap();
            store.migrate().await.unwrap();
            Arc::new(store)
        }
        Backend::Postgres => {
            let store = PgStore::connect(&url, 5, std::time::Duration::from_secs(5)).await.unwrap();
            store.migrate().await.unwrap();
            Arc::new(store)
        }
    }
}

pub(crate) fn code_hash(value: &str) -> CodeHash {
    CodeHash::new(value)
}

fn refresh_hash(value: &str) -> RefreshTokenHash {
    RefreshTokenHash::new(value)
}

pub(crate) fn session_hash(value: &str) -> SessionHash {
    SessionHash::new(value)
}

pub(crate) fn client_id(value: &str) -> ClientId {
    ClientId::new(value)
}

pub(crate) fn t0() -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap()
}

pub(crate) fn client(id: &str) -> Client {
    Client {
        client_id: id.into(),
        secret_hash: "sha256:00".into(),
        name: LocalizedText { ru: "Клиент".into(), en: "Client".into() },
        redirect_uris: vec!["https://a.example/cb".into(), "https://b.example/cb".into()],
        scopes: vec!["openid".into(), "email".into()],
        require_consent: true,
        post_logout_redirect_uris: vec!["https://a.example/bye".into()],
        logout_revokes_grants: false,
        backchannel_logout_uri: Some("https://a.example/logout".into()),
        created_at: t0(),
    }
}

pub(crate) fn user(login: &str) -> User {
    User {
        id: UserId::random(),
        login: login.into(),
        password_hash: "$argon2id$x".into(),
        phone: Some("+79000000000".into()),
        email: None,
        name: Some("Имя".into()),
        phone_login_enabled: false,
        blocked: false,
        created_at: t0(),
        provisioned: None,
    }
}

pub(crate) fn code(hash: &str, client_id: &str, user_id: UserId) -> AuthorizationCode {
    AuthorizationCode {
        code_hash: hash.into(),
        client_id: client_id.into(),
        user_id,
        redirect_uri: "https://a.example/cb".into(),
        scope: "openid".into(),
        code_challenge: "c".repeat(43),
        nonce: Some("n".into()),
        auth_time: t0(),
        created_at: t0(),
        expires_at: t0() + Duration::minutes(5),
        grant_id: None,
        amr: vec!["pwd".into(), "sms".into(), "mfa".into()],
        session_id: Some(sid("s1")),
    }
}

pub(crate) fn grant(client_id: &str, user_id: UserId) -> Grant {
    Grant {
        id: GrantId::now_v7(),
        client_id: client_id.into(),
        user_id,
        scope: "openid".into(),
        auth_time: t0(),
        created_at: t0(),
        revoked_at: None,
        amr: vec!["pwd".into(), "sms".into(), "mfa".into()],
        session_id: Some(sid("s1")),
    }
}

/// A fresh login process of client `app` at its first step.
fn login_process() -> LoginProcess {
    LoginProcess {
        id: Uuid::new_v4(),
        version: 0,
        created_at: t0(),
        expires_at: t0() + Duration::minutes(15),
        state: LoginState::start("app".into(), pending_request(), "csrf".into(), AuthMethod::Password),
    }
}

/// The authorization request a login process serves, with every field set.
fn pending_request() -> PendingAuthorization {
    PendingAuthorization {
        redirect_uri: "https://app.example/cb".into(),
        scope: vec!["openid".into(), "profile".into()],
        state: "st".into(),
        code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM".into(),
        nonce: Some("n".into()),
        prompt: Some(portico_model::oauth::Prompt::Login),
        max_age: Some(300),
        ui_locale: Some(portico_model::login::Locale::En),
        login_hint: Some("alice".into()),
        response_mode: portico_model::oauth::ResponseMode::FormPost,
    }
}

/// The id of the session with cookie hash `hash` (the same for the same hash).
pub(crate) fn sid(hash: &str) -> SessionId {
    Uuid::from_u128(hash.bytes().fold(0x5e55_u128, |id, b| id.wrapping_mul(257).wrapping_add(u128::from(b)))).into()
}

/// A session of `user_id` for 12 hours, by the hash `hash`.
pub(crate) fn session(hash: &str, user_id: UserId) -> SsoSession {
    SsoSession {
        id: sid(hash),
        token_hash: hash.into(),
        user_id,
        auth_time: t0(),
        created_at: t0(),
        expires_at: t0() + Duration::hours(12),
        amr: vec!["sms".into(), "pwd".into(), "mfa".into()],
    }
}

pub(crate) fn audit() -> AuditEvent {
    AuditEvent::new(t0(), AuditKind::TokenIssued)
}

pub(crate) fn refresh(hash: &str, grant_id: GrantId, days: i64) -> RefreshToken {
    RefreshToken { token_hash: hash.into(), grant_id, created_at: t0(), expires_at: t0() + Duration::days(days) }
}

/// A client `app`, a user `anna` and a grant made from a consumed code, with
/// refresh token `r1` valid 30 days.
pub(crate) async fn granted(store: &dyn Storage) -> (User, Grant) {
    store.create_client(&client("app")).await.unwrap();
    let u = user("anna");
    store.create_user(&u).await.unwrap();
    store.insert_code(&code("h", "app", u.id)).await.unwrap();
    let g = grant("app", u.id);
    assert_eq!(
        store.redeem_code(&code_hash("h"), t0(), &g, &refresh("r1", g.id, 30), &audit()).await.unwrap(),
        Redemption::Redeemed
    );
    (u, g)
}

#[tokio::test]
async fn clients_and_users_round_trip_with_unique_keys() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let c = client("app");
        store.create_client(&c).await.unwrap();
        assert_eq!(store.find_client(&client_id("app")).await.unwrap(), Some(c.clone()), "{backend:?}");
        assert!(matches!(store.create_client(&c).await, Err(StorageError::Conflict(_))));
        assert_eq!(store.list_clients().await.unwrap().len(), 1);

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

#[tokio::test]
async fn a_code_is_redeemed_once_and_a_replay_names_its_grant() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (u, g) = granted(store.as_ref()).await;
        let stored = store.find_code(&code_hash("h")).await.unwrap().unwrap();
        assert!(stored.spent, "{backend:?}");
        assert_eq!(stored.code.grant_id, Some(g.id));
        assert_eq!(stored.user.as_ref(), Some(&u), "read with its user");
        assert_eq!(store.find_grant(g.id).await.unwrap().unwrap().scope, "openid");
        assert_eq!(store.recent_audit(5).await.unwrap()[0].kind, "token.issued", "audited in the same transaction");

        let again = grant("app", u.id);
        let replay =
            store.redeem_code(&code_hash("h"), t0(), &again, &refresh("rx", again.id, 30), &audit()).await.unwrap();
        assert_eq!(replay, Redemption::Replay { grant_id: Some(g.id) });
        assert_eq!(store.find_grant(again.id).await.unwrap(), None, "a replay stores nothing");
        assert!(store.find_refresh_token(&refresh_hash("rx")).await.unwrap().is_none());

        // A code spent by a failed presentation cannot be redeemed.
        store.insert_code(&code("h2", "app", u.id)).await.unwrap();
        assert!(!store.find_code(&code_hash("h2")).await.unwrap().unwrap().spent);
        assert_eq!(store.spend_code(&code_hash("h2"), t0()).await.unwrap().unwrap().grant_id, None);
        let g2 = grant("app", u.id);
        let replay = store.redeem_code(&code_hash("h2"), t0(), &g2, &refresh("r2", g2.id, 30), &audit()).await.unwrap();
        assert_eq!(replay, Redemption::Replay { grant_id: None });
        assert_eq!(store.find_grant(g2.id).await.unwrap(), None);
        assert_eq!(store.find_code(&code_hash("nope")).await.unwrap(), None);
        assert_eq!(store.spend_code(&code_hash("nope"), t0()).await.unwrap(), None);

        // The user as stored now: a block shows at the next read.
        store.insert_code(&code("h-blocked", "app", u.id)).await.unwrap();
        store.set_user_blocked("anna", true, t0()).await.unwrap().expect("anna exists");
        let stored = store.find_code(&code_hash("h-blocked")).await.unwrap().unwrap();
        assert!(stored.user.is_some_and(|user| user.blocked), "{backend:?}: the code's user, blocked");
        let stored = store.find_refresh_token(&refresh_hash("r1")).await.unwrap().unwrap();
        assert!(stored.user.is_some_and(|user| user.blocked), "{backend:?}: the grant's user, blocked");
    }
}

#[tokio::test]
async fn refresh_tokens_rotate_once_and_revocation_reaches_access_tokens() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (u, g) = granted(store.as_ref()).await;

        let stored = store.find_refresh_token(&refresh_hash("r1")).await.unwrap().unwrap();
        assert!(!stored.spent, "{backend:?}");
        assert_eq!((stored.token.grant_id, stored.grant.id), (g.id, g.id));
        assert_eq!(stored.user.as_ref(), Some(&u), "read with the grant's user");
        assert_eq!(stored.token.expires_at, t0() + Duration::days(30));
        let rotated =
            store.rotate_refresh_token(&refresh_hash("r1"), t0(), &refresh("r2", g.id, 30), &audit()).await.unwrap();
        assert_eq!(rotated, Rotation::Rotated);
        let replay =
            store.rotate_refresh_token(&refresh_hash("r1"), t0(), &refresh("r3", g.id, 30), &audit()).await.unwrap();
        assert_eq!(replay, Rotation::Replay);
        assert!(store.find_refresh_token(&refresh_hash("r3")).await.unwrap().is_none(), "a replay stores nothing");
        assert!(store.find_refresh_token(&refresh_hash("r1")).await.unwrap().unwrap().spent);
        assert_eq!(store.find_refresh_token(&refresh_hash("unknown")).await.unwrap(), None);

        assert!(store.access_token_state(g.id, "jti-1").await.unwrap().is_live());
        store.revoke_access_token("jti-1", t0() + Duration::minutes(15), t0()).await.unwrap();
        store.revoke_access_token("jti-1", t0() + Duration::minutes(15), t0()).await.unwrap();
        let state = store.access_token_state(g.id, "jti-1").await.unwrap();
        assert!(state.token_revoked && !state.grant_revoked);
        assert!(store.access_token_state(g.id, "jti-2").await.unwrap().is_live());

        assert!(store.revoke_grant(g.id, t0()).await.unwrap());
        assert!(!store.revoke_grant(g.id, t0()).await.unwrap(), "already revoked");
        assert!(store.access_token_state(g.id, "jti-2").await.unwrap().grant_revoked);
        let revoked =
            store.rotate_refresh_token(&refresh_hash("r2"), t0(), &refresh("r4", g.id, 30), &audit()).await.unwrap();
        assert_eq!(revoked, Rotation::GrantRevoked);
        assert!(!store.find_refresh_token(&refresh_hash("r2")).await.unwrap().unwrap().spent, "nothing changed");
        store.spend_refresh_token(&refresh_hash("r2"), t0()).await.unwrap();
        assert!(store.find_refresh_token(&refresh_hash("r2")).await.unwrap().unwrap().spent);
        assert!(
            store.access_token_state(GrantId::from(Uuid::new_v4()), "x").await.unwrap().grant_revoked,
            "unknown grant"
        );
    }
}

#[tokio::test]
async fn parallel_redemptions_and_rotations_have_one_winner() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (u, g) = granted(store.as_ref()).await;

        // Eight rotations of `r1` at once: one successor, seven replays.
        let mut rotations = tokio::task::JoinSet::new();
        for i in 0..8 {
            let store = Arc::clone(&store);
            rotations.spawn(async move {
                let successor = refresh(&format!("next-{i}"), g.id, 30);
                (i, store.rotate_refresh_token(&refresh_hash("r1"), t0(), &successor, &audit()).await.unwrap())
            });
        }
        let results = rotations.join_all().await;
        let winners: Vec<usize> = results.iter().filter(|(_, r)| *r == Rotation::Rotated).map(|(i, _)| *i).collect();
        assert_eq!(winners.len(), 1, "{backend:?}: {results:?}");
        assert!(results.iter().all(|(_, r)| matches!(r, Rotation::Rotated | Rotation::Replay)), "{results:?}");
        for i in 0..8 {
            let stored = store.find_refresh_token(&refresh_hash(&format!("next-{i}"))).await.unwrap();
            assert_eq!(stored.is_some(), i == winners[0], "{backend:?}: only the winner's successor is stored");
        }

        // Eight redemptions of one code at once: one grant, seven replays naming it.
        store.insert_code(&code("h-par", "app", u.id)).await.unwrap();
        let mut redemptions = tokio::task::JoinSet::new();
        for i in 0..8 {
            let store = Arc::clone(&store);
            redemptions.spawn(async move {
                let g = grant("app", u.id);
                let token = refresh(&format!("first-{i}"), g.id, 30);
                (g.id, store.redeem_code(&code_hash("h-par"), t0(), &g, &token, &audit()).await.unwrap())
            });
        }
        let results = redemptions.join_all().await;
        let won: Vec<GrantId> = results.iter().filter(|(_, r)| *r == Redemption::Redeemed).map(|(id, _)| *id).collect();
        assert_eq!(won.len(), 1, "{backend:?}: {results:?}");
        for (id, result) in &results {
            if *result != Redemption::Redeemed {
                assert_eq!(*result, Redemption::Replay { grant_id: Some(won[0]) }, "{backend:?}");
                assert_eq!(store.find_grant(*id).await.unwrap(), None, "a replay stores nothing");
            }
        }
        assert_eq!(store.find_code(&code_hash("h-par")).await.unwrap().unwrap().code.grant_id, Some(won[0]));
    }
}

/// SQLite's writes queue for the store's writer thread, never on the async
/// executor's threads: while another process holds the database's write
/// lock they wait for it there, and succeed once it is free.
#[tokio::test]
async fn sqlite_token_writes_wait_for_another_writer_and_succeed() {
    let dir = TempDir::new();
    let url = fresh_database(Backend::Sqlite, &dir).await;
    let store = store(Backend::Sqlite, &dir).await;
    let (u, g) = granted(store.as_ref()).await;
    store.insert_code(&code("h-locked", "app", u.id)).await.unwrap();

    let path = url.strip_prefix("sqlite://").unwrap().to_owned();
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let g2 = grant("app", u.id);
    let redeem = tokio::spawn({
        let (store, g2) = (Arc::clone(&store), g2.clone());
        async move { store.redeem_code(&code_hash("h-locked"), t0(), &g2, &refresh("r-locked", g2.id, 30), &audit()).await }
    });
    let rotate = tokio::spawn({
        let store = Arc::clone(&store);
        async move { store.rotate_refresh_token(&refresh_hash("r1"), t0(), &refresh("r2", g.id, 30), &audit()).await }
    });
    // Reads go on meanwhile: in WAL mode a reader never waits for a writer.
    assert!(store.find_code(&code_hash("h-locked")).await.unwrap().is_some_and(|c| !c.spent));
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!redeem.is_finished() && !rotate.is_finished(), "both wait while the lock is held");
    other.execute_batch("COMMIT").unwrap();

    assert_eq!(redeem.await.unwrap().unwrap(), Redemption::Redeemed);
    assert_eq!(rotate.await.unwrap().unwrap(), Rotation::Rotated);
    assert_eq!(store.find_code(&code_hash("h-locked")).await.unwrap().unwrap().code.grant_id, Some(g2.id));
    assert!(store.find_refresh_token(&refresh_hash("r-locked")).await.unwrap().is_some());
    assert!(store.find_refresh_token(&refresh_hash("r1")).await.unwrap().unwrap().spent);
    assert!(store.find_refresh_token(&refresh_hash("r2")).await.unwrap().is_some());
}

#[tokio::test]
async fn login_processes_update_optimistically_and_expire() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let mut process = login_process();
        store.create_login_process(&process).await.unwrap();
        let stale = process.clone();
        process.state.principal = Some("anna".into());
        assert!(store.update_login_process(&process).await.unwrap());
        assert!(!store.update_login_process(&stale).await.unwrap(), "{backend:?}: a stale version loses");
        let stored = store.find_login_process(process.id, t0()).await.unwrap().unwrap();
        assert_eq!(stored.version, 1);
        assert_eq!(stored.state.principal.as_deref(), Some("anna"));
        assert_eq!(store.find_login_process(process.id, t0() + Duration::minutes(15)).await.unwrap(), None, "expired");
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

#[tokio::test]
async fn one_first_key_and_one_active_key() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let key = |kid: &str| portico_model::key::SigningKeyRecord {
            kid: kid.into(),
            private_sealed: vec![1, 2, 3],
            created_at: t0(),
            retired_at: None,
        };
        assert!(store.insert_first_signing_key(&key("k1")).await.unwrap());
        assert!(!store.insert_first_signing_key(&key("k2")).await.unwrap(), "{backend:?}");
        assert_eq!(store.active_signing_kid().await.unwrap().as_deref(), Some("k1"));
        let mut k3 = key("k3");
        k3.created_at = t0() + Duration::seconds(1);
        store.rotate_signing_key(&k3, t0() + Duration::seconds(1)).await.unwrap();
        assert_eq!(store.active_signing_kid().await.unwrap().as_deref(), Some("k3"));
        let keys = store.list_signing_keys().await.unwrap();
        assert_eq!(keys.iter().map(|k| k.kid.as_str()).collect::<Vec<_>>(), ["k3", "k1"]);
        assert!(keys[1].retired_at.is_some());
    }
}

#[tokio::test]
async fn every_read_sees_every_committed_write() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        for i in 0..24 {
            let id = client_id(&format!("app-{i}"));
            store.create_client(&client(id.as_str())).await.unwrap();
            // Point reads that stop after one row, then a full scan: none may
            // see a snapshot from before the write.
            assert!(store.find_client(&id).await.unwrap().is_some(), "{backend:?}: client {i} visible");
            assert!(store.find_client(&client_id("app-0")).await.unwrap().is_some());
            assert_eq!(store.list_clients().await.unwrap().len(), i + 1, "{backend:?}: after write {i}");
            store.record_audit(&AuditEvent::new(t0(), AuditKind::UserBlocked).client(&id)).await.unwrap();
            let newest = store.recent_audit(1).await.unwrap();
            assert_eq!(newest[0].client_id.as_ref(), Some(&id), "{backend:?}: newest audit after write {i}");
        }
    }
}

/// A permission model generated (deterministically) from the document
/// strategy, its employees created as users named with `prefix`.
async fn generated_model(store: &dyn Storage, prefix: &str) -> portico_model::permissions::PermissionModel {
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

#[tokio::test]
async fn devices_and_consents_are_remembered_per_user() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (ivan, maria) = (user("ivan"), user("maria"));
        store.create_user(&ivan).await.unwrap();
        store.create_user(&maria).await.unwrap();
        store.create_client(&client("crm")).await.unwrap();

        assert_eq!(store.find_users_by_phone("+79000000000").await.unwrap().len(), 2, "{backend:?}");
        assert!(store.find_users_by_phone("+79000000001").await.unwrap().is_empty());

        assert!(!store.is_device_trusted(ivan.id, "d1", t0()).await.unwrap());
        store.trust_device(ivan.id, "d1", t0()).await.unwrap();
        assert!(store.is_device_trusted(ivan.id, "d1", t0()).await.unwrap());
        assert!(!store.is_device_trusted(ivan.id, "d1", t0() + Duration::seconds(1)).await.unwrap(), "too old");
        assert!(!store.is_device_trusted(maria.id, "d1", t0()).await.unwrap(), "per user");

        assert_eq!(store.find_consent(ivan.id, &client_id("crm")).await.unwrap(), None);
        store.grant_consent(ivan.id, &client_id("crm"), &["profile".into(), "email".into()], t0()).await.unwrap();
        store.grant_consent(ivan.id, &client_id("crm"), &["profile".into(), "phone".into()], t0()).await.unwrap();
        assert_eq!(
            store.find_consent(ivan.id, &client_id("crm")).await.unwrap(),
            Some(vec!["profile".into(), "phone".into()])
        );
    }
}

#[tokio::test]
async fn throttle_counts_are_exact_under_parallel_attempts_and_holds_refuse_them() {
    use portico_storage::CountAttempt;
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let now = t0();
        let forget_before = now - Duration::hours(24);
        let attempt = move |key: &'static str, hold_from: u32| CountAttempt {
            key,
            now,
            forget_before,
            hold_from,
            hold_until: now + Duration::seconds(30),
        };

        // 32 attempts at once, no hold: each gets its own count, 1 to 32.
        let mut attempts = tokio::task::JoinSet::new();
        for _ in 0..32 {
            let store = Arc::clone(&store);
            attempts.spawn(async move { store.count_attempt(attempt("account:a", 1000)).await.unwrap() });
        }
        let mut counts: Vec<u32> = attempts.join_all().await.into_iter().map(Option::unwrap).collect();
        counts.sort_unstable();
        assert_eq!(counts, (1..=32).collect::<Vec<_>>(), "{backend:?}");
        assert_eq!(store.throttle("account:a", forget_before).await.unwrap().failures, 32);

        // From the hold count on, the attempt that reaches it holds the key:
        // of 32 parallel attempts on a key at 4 with hold_from 5, one is counted.
        for _ in 0..4 {
            store.count_attempt(attempt("account:b", 5)).await.unwrap().unwrap();
        }
        let mut attempts = tokio::task::JoinSet::new();
        for _ in 0..32 {
            let store = Arc::clone(&store);
            attempts.spawn(async move { store.count_attempt(attempt("account:b", 5)).await.unwrap() });
        }
        let results = attempts.join_all().await;
        assert_eq!(results.iter().filter(|r| r.is_some()).count(), 1, "{backend:?}: {results:?}");
        assert_eq!(results.iter().flatten().next(), Some(&5));
        let held = store.throttle("account:b", forget_before).await.unwrap();
        assert_eq!(held, portico_storage::Throttle { failures: 5, locked_until: Some(now + Duration::seconds(30)) });

        // Taking the holding attempt back releases its hold, not another lock.
        store.uncount_attempt("account:b", Some(now + Duration::seconds(30))).await.unwrap();
        assert_eq!(
            store.throttle("account:b", forget_before).await.unwrap(),
            portico_storage::Throttle { failures: 4, locked_until: None }
        );
        assert_eq!(store.count_attempt(attempt("account:b", 5)).await.unwrap(), Some(5), "held again");
        store.uncount_attempt("account:b", Some(now + Duration::seconds(1))).await.unwrap();
        let state = store.throttle("account:b", forget_before).await.unwrap();
        assert_eq!(state.locked_until, Some(now + Duration::seconds(30)), "another hold stays");
        store
            .count_attempt(CountAttempt { now: now + Duration::seconds(31), ..attempt("account:b", 5) })
            .await
            .unwrap();

        // A lock is never shortened; once over, counting goes on.
        store.lock_throttle("account:b", now + Duration::minutes(5)).await.unwrap();
        store.lock_throttle("account:b", now + Duration::minutes(1)).await.unwrap();
        let state = store.throttle("account:b", forget_before).await.unwrap();
        assert_eq!(state.locked_until, Some(now + Duration::minutes(5)));
        let later = CountAttempt { now: now + Duration::minutes(6), ..attempt("account:b", 5) };
        assert_eq!(store.count_attempt(later).await.unwrap(), Some(6));

        // An attempt taken back; a success clears; other keys untouched.
        store.uncount_attempt("account:a", None).await.unwrap();
        assert_eq!(store.throttle("account:a", forget_before).await.unwrap().failures, 31);
        store.clear_throttle("account:a").await.unwrap();
        assert_eq!(store.throttle("account:a", forget_before).await.unwrap(), Default::default());
        assert_eq!(store.throttle("account:b", forget_before).await.unwrap().failures, 6);

        // A count that did not move within the memory starts again.
        let next_day = now + Duration::hours(25);
        assert_eq!(store.throttle("account:b", next_day - Duration::hours(24)).await.unwrap().failures, 0);
        let fresh =
            CountAttempt { now: next_day, forget_before: next_day - Duration::hours(24), ..attempt("account:b", 5) };
        assert_eq!(store.count_attempt(fresh).await.unwrap(), Some(1));

        // Stale counters are removed; recent ones stay.
        store.count_attempt(attempt("address:192.0.2.1", 30)).await.unwrap();
        assert_eq!(store.remove_stale_throttles(now + Duration::hours(1)).await.unwrap(), 1, "{backend:?}");
        assert_eq!(store.throttle("account:b", forget_before).await.unwrap().failures, 1);
    }
}

#[tokio::test]
async fn merchants_and_events_are_stored_once_with_their_delivery() {
    use portico_model::notify::{
        Delivery, DeliveryStatus, EventKind, Merchant, MerchantIds, NotificationSettings, StoredEvent,
    };
    use portico_storage::Intake;
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let merchant = Merchant {
            ids: MerchantIds { merchant_id: "m-1".into(), public_id: "pub-1".into(), sbp_merchant_id: "MA01".into() },
            key_hash: "hash-1".into(),
            key_sealed: vec![1, 2, 3],
            settings: None,
            created_at: t0(),
        };
        store.create_merchant(&merchant).await.unwrap();
        assert!(matches!(store.create_merchant(&merchant).await, Err(StorageError::Conflict(_))), "{backend:?}");
        assert_eq!(store.find_merchant_by_key("hash-1").await.unwrap(), Some(merchant.clone()));
        let settings = NotificationSettings {
            callback_url: "https://shop.example/cb".into(),
            operation_types: Default::default(),
        };
        assert!(store.save_notification_settings("m-1", &settings).await.unwrap());
        assert!(!store.save_notification_settings("nobody", &settings).await.unwrap());
        assert!(store.set_merchant_key("m-1", "hash-2", &[9]).await.unwrap());
        let found = store.find_merchant("m-1").await.unwrap().unwrap();
        assert_eq!((found.settings, found.key_hash.as_str(), found.key_sealed), (Some(settings), "hash-2", vec![9]));
        assert_eq!(store.find_merchant_by_key("hash-1").await.unwrap(), None);
        let found: Vec<String> = store
            .find_merchants(&["nobody", "m-1", "m-1"])
            .await
            .unwrap()
            .into_iter()
            .map(|m| m.ids.merchant_id)
            .collect();
        assert_eq!(found, ["m-1"], "those that exist, each once");
        assert!(store.find_merchants(&[]).await.unwrap().is_empty());

        let event = StoredEvent {
            event_id: "ev-1".into(),
            merchant_id: "m-1".into(),
            kind: EventKind::Payment,
            payload: serde_json::json!({"amount": 100}),
            received_at: t0(),
            trace_parent: None,
        };
        let delivery = |id: u128| Delivery {
            id: Uuid::from_u128(id),
            event_id: "ev-1".into(),
            merchant_id: "m-1".into(),
            status: DeliveryStatus::Pending,
            attempts: 0,
            next_attempt_at: t0(),
            lease_until: None,
            created_at: t0(),
            finished_at: None,
        };
        assert_eq!(store.record_event(&event, &delivery(1)).await.unwrap(), Intake::Accepted);
        assert_eq!(store.record_event(&event, &delivery(2)).await.unwrap(), Intake::Duplicate);
        let other = StoredEvent { payload: serde_json::json!({"amount": 200}), ..event.clone() };
        assert!(matches!(store.record_event(&other, &delivery(3)).await, Err(StorageError::Conflict(_))));
        assert_eq!(store.find_event("ev-1").await.unwrap(), Some(event));
        assert_eq!(store.deliveries_of("ev-1").await.unwrap(), vec![delivery(1)], "one delivery, the first");
    }
}

/// A store holding merchant `m` and `count` events (`ev-1`, ...), each with
/// a pending delivery (ids 1, 2, ...) due at `due`, leased until `lease`.
async fn with_deliveries(
    backend: Backend,
    dir: &TempDir,
    count: u128,
    due: OffsetDateTime,
    lease: Option<OffsetDateTime>,
) -> Arc<dyn Storage> {
    use portico_model::notify::{Delivery, DeliveryStatus, EventKind, Merchant, MerchantIds, StoredEvent};
    let store = store(backend, dir).await;
    let ids = MerchantIds { merchant_id: "m".into(), public_id: "p".into(), sbp_merchant_id: "s".into() };
    let merchant = Merchant { ids, key_hash: "h".into(), key_sealed: vec![0], settings: None, created_at: t0() };
    store.create_merchant(&merchant).await.unwrap();
    for i in 1..=count {
        let event = StoredEvent {
            event_id: format!("ev-{i}"),
            merchant_id: "m".into(),
            kind: EventKind::Payment,
            payload: serde_json::json!({}),
            received_at: t0(),
            trace_parent: None,
        };
        let delivery = Delivery {
            id: Uuid::from_u128(i),
            event_id: event.event_id.clone(),
            merchant_id: "m".into(),
            status: DeliveryStatus::Pending,
            attempts: 0,
            next_attempt_at: due,
            lease_until: lease,
            created_at: t0(),
            finished_at: None,
        };
        store.record_event(&event, &delivery).await.unwrap();
    }
    store
}

#[tokio::test]
async fn parallel_claims_never_take_the_same_delivery_and_leases_run_out() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = with_deliveries(backend, &dir, 40, t0(), None).await;
        let mut claims = tokio::task::JoinSet::new();
        for _ in 0..6 {
            let store = Arc::clone(&store);
            claims.spawn(async move { store.claim_due_deliveries(&claim(t0(), 10, 10, &[])).await });
        }
        let mut taken: Vec<Uuid> = claims.join_all().await.into_iter().flat_map(|c| c.unwrap()).map(|d| d.id).collect();
        let total = taken.len();
        taken.sort();
        taken.dedup();
        assert_eq!(taken.len(), total, "{backend:?}: a delivery was claimed twice");
        assert_eq!(total, 40, "every due delivery was claimed once");
        assert!(store.claim_due_deliveries(&claim(t0(), 10, 10, &[])).await.unwrap().is_empty());
        // A worker that died: its lease runs out and the delivery is claimed again.
        let later = t0() + Duration::seconds(61);
        assert_eq!(store.claim_due_deliveries(&claim(later, 100, 100, &[])).await.unwrap().len(), 40);
    }
}

#[tokio::test]
async fn released_deliveries_are_due_at_once_and_only_under_their_own_lease() {
    for backend in backends() {
        let dir = TempDir::new();
        // Stored already leased, as the intake hands deliveries to its worker.
        let lease = t0() + Duration::seconds(60);
        let store = with_deliveries(backend, &dir, 3, lease, Some(lease)).await;
        assert!(store.claim_due_deliveries(&claim(t0(), 10, 10, &[])).await.unwrap().is_empty(), "{backend:?}");
        let stale = t0() + Duration::seconds(30);
        let released = [(Uuid::from_u128(1), lease), (Uuid::from_u128(2), stale), (Uuid::from_u128(3), lease)];
        store.release_deliveries(&released, t0()).await.unwrap();
        let claimed = store.claim_due_deliveries(&claim(t0(), 10, 10, &[])).await.unwrap();
        let mut claimed: Vec<Uuid> = claimed.iter().map(|d| d.id).collect();
        claimed.sort();
        assert_eq!(claimed, [Uuid::from_u128(1), Uuid::from_u128(3)], "only those released under their own lease");
        store.release_deliveries(&[], t0()).await.unwrap();
    }
}

#[tokio::test]
async fn finished_deliveries_go_in_batches_with_their_attempts_and_an_event_with_its_last_delivery() {
    use portico_model::notify::{Attempt, Delivery, DeliveryStatus, Outcome};
    use portico_storage::{FinishedAttempt, RemovedDeliveries};
    for backend in backends() {
        let dir = TempDir::new();
        let store = with_deliveries(backend, &dir, 4, t0(), None).await;
        let lease = t0() + Duration::seconds(60);
        assert_eq!(store.claim_due_deliveries(&claim(t0(), 10, 10, &[])).await.unwrap().len(), 4);
        let finish = |n: u128, outcome: Outcome, at: OffsetDateTime| FinishedAttempt {
            attempt: Attempt {
                delivery_id: Uuid::from_u128(n),
                attempt: 1,
                at,
                status_code: Some(200),
                error: None,
                response_excerpt: None,
                duration_ms: 1,
            },
            outcome,
            lease_until: lease,
        };
        let day = |n: i64| t0() + Duration::days(n);
        store
            .finish_attempts(&[
                finish(1, Outcome::Delivered, day(1)),
                finish(2, Outcome::Failed, day(1)),
                finish(3, Outcome::RetryAt(day(1)), day(1)),
                finish(4, Outcome::Delivered, day(10)),
            ])
            .await
            .unwrap();
        // A resend of ev-1 that finished later than its first delivery.
        let resend = Delivery {
            id: Uuid::from_u128(11),
            event_id: "ev-1".into(),
            merchant_id: "m".into(),
            status: DeliveryStatus::Delivered,
            attempts: 1,
            next_attempt_at: day(6),
            lease_until: None,
            created_at: day(5),
            finished_at: Some(day(6)),
        };
        store.create_delivery(&resend).await.unwrap();

        // Finished before day 5: deliveries 1 and 2, one per batch here.
        let first = store.remove_finished_deliveries(day(5), 1).await.unwrap();
        assert_eq!((first.deliveries, first.attempts), (1, 1), "{backend:?}");
        let second = store.remove_finished_deliveries(day(5), 500).await.unwrap();
        assert_eq!((second.deliveries, second.attempts), (1, 1));
        assert_eq!(first.events + second.events, 1, "ev-2 went; ev-1 keeps its resend");
        assert_eq!(store.remove_finished_deliveries(day(5), 500).await.unwrap(), RemovedDeliveries::default());
        for gone in [1, 2] {
            assert_eq!(store.find_delivery(Uuid::from_u128(gone)).await.unwrap(), None);
            assert!(store.attempts_of(Uuid::from_u128(gone)).await.unwrap().is_empty());
        }
        assert!(store.find_event("ev-2").await.unwrap().is_none());
        assert_eq!(store.deliveries_of("ev-1").await.unwrap(), vec![resend.clone()]);
        let pending = store.find_delivery(Uuid::from_u128(3)).await.unwrap().unwrap();
        assert_eq!(pending.status, DeliveryStatus::Pending, "a pending delivery stays, however old");

        // Later the resend goes, and its event with it; pending and recent stay.
        let removed = store.remove_finished_deliveries(day(30), 500).await.unwrap();
        assert_eq!((removed.deliveries, removed.attempts, removed.events), (2, 1, 2), "the resend and delivery 4");
        assert!(store.find_event("ev-1").await.unwrap().is_none());
        assert!(store.find_event("ev-3").await.unwrap().is_some());
        let (left, total) = store.list_deliveries("m", None, 0, 10).await.unwrap();
        assert_eq!((left.len(), total, left[0].id), (1, 1, Uuid::from_u128(3)));
    }
}

fn claim<'a>(
    now: time::OffsetDateTime,
    limit: u32,
    per_merchant: u32,
    skip_merchants: &'a [String],
) -> portico_storage::DeliveryClaim<'a> {
    portico_storage::DeliveryClaim {
        now,
        lease_until: now + Duration::seconds(60),
        limit,
        per_merchant,
        skip_merchants,
    }
}

/// `count` pending deliveries for merchant `m`, due at `due`.
async fn pending(store: &dyn Storage, m: &str, count: u128, due: time::OffsetDateTime) {
    use portico_model::notify::{Delivery, EventKind, Merchant, MerchantIds, StoredEvent};
    let ids = MerchantIds { merchant_id: m.into(), public_id: format!("p-{m}"), sbp_merchant_id: "s".into() };
    let merchant = Merchant { ids, key_hash: format!("h-{m}"), key_sealed: vec![0], settings: None, created_at: t0() };
    store.create_merchant(&merchant).await.unwrap();
    for i in 0..count {
        let event = StoredEvent {
            event_id: format!("{m}-ev-{i}"),
            merchant_id: m.into(),
            kind: EventKind::Payment,
            payload: serde_json::json!({}),
            received_at: t0(),
            trace_parent: None,
        };
        let delivery = Delivery::new(event.event_id.clone(), m.into(), due);
        store.record_event(&event, &delivery).await.unwrap();
    }
}

#[tokio::test]
async fn claims_take_a_bounded_share_of_each_merchant_and_pass_over_busy_ones() {
    use portico_model::notify::{Attempt, DeliveryStatus, Outcome};
    use portico_storage::FinishedAttempt;
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        // The slow merchant's backlog is older than the fast one's events.
        pending(store.as_ref(), "slow", 30, t0() - Duration::seconds(10)).await;
        pending(store.as_ref(), "fast", 3, t0()).await;
        let first = store.claim_due_deliveries(&claim(t0(), 20, 4, &[])).await.unwrap();
        assert_eq!(first.len(), 4, "{backend:?}: at most 4 of one merchant");
        assert!(first.iter().all(|d| d.merchant_id == "slow"));
        let lease = t0() + Duration::seconds(60);
        assert!(first.iter().all(|d| d.lease_until == Some(lease) && d.next_attempt_at == lease));

        // The worker is busy with "slow": passing it over reaches "fast".
        let busy = ["slow".to_owned()];
        let second = store.claim_due_deliveries(&claim(t0(), 20, 4, &busy)).await.unwrap();
        assert_eq!(second.iter().map(|d| d.merchant_id.as_str()).collect::<Vec<_>>(), ["fast"; 3], "{backend:?}");
        assert_eq!(store.claim_due_deliveries(&claim(t0(), 20, 4, &[])).await.unwrap().len(), 4, "slow's next four");

        // Finishing releases the lease; a finish under a lease that has since
        // moved on records the attempt but leaves the delivery alone.
        let attempt = |d: &portico_model::notify::Delivery| Attempt {
            delivery_id: d.id,
            attempt: 1,
            at: t0(),
            status_code: Some(200),
            error: None,
            response_excerpt: None,
            duration_ms: 3,
        };
        let finished = vec![
            FinishedAttempt { attempt: attempt(&first[0]), outcome: Outcome::Delivered, lease_until: lease },
            FinishedAttempt {
                attempt: attempt(&first[1]),
                outcome: Outcome::Delivered,
                lease_until: lease - Duration::seconds(1),
            },
        ];
        store.finish_attempts(&finished).await.unwrap();
        let done = store.find_delivery(first[0].id).await.unwrap().unwrap();
        assert_eq!((done.status, done.attempts, done.lease_until), (DeliveryStatus::Delivered, 1, None));
        let other = store.find_delivery(first[1].id).await.unwrap().unwrap();
        assert_eq!((other.status, other.lease_until), (DeliveryStatus::Pending, Some(lease)), "{backend:?}");
        assert_eq!(store.attempts_of(first[1].id).await.unwrap().len(), 1, "the attempt is still on record");
        store.finish_attempts(&finished).await.unwrap();
        assert_eq!(store.attempts_of(first[0].id).await.unwrap().len(), 1, "recording twice is harmless");
    }
}

#[tokio::test]
async fn a_batch_of_events_is_recorded_in_one_go_with_duplicates_told_apart() {
    use portico_model::notify::{Delivery, EventKind, StoredEvent};
    use portico_storage::Intake;
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        pending(store.as_ref(), "m", 0, t0()).await;
        let event = |id: &str, amount: i64| StoredEvent {
            event_id: id.into(),
            merchant_id: "m".into(),
            kind: EventKind::Payment,
            payload: serde_json::json!({ "amount": amount }),
            received_at: t0(),
            trace_parent: None,
        };
        let with_delivery = |e: StoredEvent| {
            let delivery = Delivery::new(e.event_id.clone(), "m".into(), t0());
            (e, delivery)
        };
        store.record_event(&event("old", 1), &Delivery::new("old".into(), "m".into(), t0())).await.unwrap();
        let batch = vec![
            with_delivery(event("a", 1)),
            with_delivery(event("b", 2)),
            with_delivery(event("a", 1)),
            with_delivery(event("b", 3)),
            with_delivery(event("old", 1)),
            with_delivery(event("old", 9)),
        ];
        let results = store.record_events(&batch).await.unwrap();
        use Intake::{Accepted, Duplicate, Reused};
        assert_eq!(results, [Accepted, Accepted, Duplicate, Reused, Duplicate, Reused], "{backend:?}");
        for id in ["a", "b", "old"] {
            assert_eq!(store.deliveries_of(id).await.unwrap().len(), 1, "{backend:?}: one delivery for {id}");
        }
        assert_eq!(store.find_event("b").await.unwrap().unwrap().payload["amount"], 2, "the first content stays");
        let mut found: Vec<String> =
            store.find_events(&["a", "old", "missing"]).await.unwrap().into_iter().map(|e| e.event_id).collect();
        found.sort();
        assert_eq!(found, ["a", "old"]);
    }
}

pub(crate) fn report_task(id: u128, cnum: &str, period: (u8, u8)) -> portico_model::reports::ReportTask {
    use portico_model::reports::{FileType, ReportTask, ReportType, Source, TaskStatus};
    use time::{Date, Month};
    ReportTask {
        id: Uuid::from_u128(id),
        cnum: cnum.into(),
        report_type: ReportType::BrokerageReport,
        agreement_number: "БД-1".into(),
        account: None,
        period_from: Date::from_calendar_date(2026, Month::January, period.0).unwrap(),
        period_to: Date::from_calendar_date(2026, Month::March, period.1).unwrap(),
        handle_if_exists: false,
        file_types: vec![FileType::SimpleDocumentary, FileType::PrintedForm],
        status: TaskStatus::New,
        source: Source::PublicApiGateway,
        error: None,
        created_by: Some(Uuid::from_u128(99)),
        attempts: 0,
        lease_until: None,
        created_at: t0() + Duration::seconds(i64::try_from(id).unwrap()),
        updated_at: t0() + Duration::seconds(i64::try_from(id).unwrap()),
        files: Vec::new(),
        trace_parent: None,
    }
}

#[tokio::test]
async fn report_tasks_are_reused_listed_claimed_once_and_finished_under_their_lease() {
    use portico_model::reports::{FileType, ReportFile, SignatureType, TaskOutcome, TaskStatus};
    use portico_storage::ReportTaskFilter;
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let first = report_task(1, "7700000001", (1, 31));
        assert_eq!(store.create_report_task(&first, true).await.unwrap(), (first.clone(), true), "{backend:?}");
        let again = report_task(2, "7700000001", (1, 31));
        let (found, created) = store.create_report_task(&again, true).await.unwrap();
        assert_eq!((found.id, created), (first.id, false), "the earlier task is returned");
        let (_, created) = store.create_report_task(&again, false).await.unwrap();
        assert!(created, "handleIfExists: a new task");
        store.create_report_task(&report_task(3, "7700000001", (2, 28)), false).await.unwrap();
        store.create_report_task(&report_task(4, "7700000002", (1, 31)), false).await.unwrap();

        let list = |filter: ReportTaskFilter| {
            let store = Arc::clone(&store);
            async move { store.list_report_tasks(&filter).await.unwrap().iter().map(|t| t.id.as_u128()).collect::<Vec<_>>() }
        };
        let mine = ReportTaskFilter { cnums: vec!["7700000001".into()], limit: 10, ..Default::default() };
        assert_eq!(list(mine.clone()).await, [3, 2, 1], "newest first, one company");
        assert_eq!(list(ReportTaskFilter { limit: 10, ..Default::default() }).await, Vec::<u128>::new());
        let from = Some(time::Date::from_calendar_date(2026, time::Month::January, 2).unwrap());
        assert_eq!(list(ReportTaskFilter { from, ..mine.clone() }).await, [3]);
        assert_eq!(list(ReportTaskFilter { offset: 1, limit: 1, ..mine.clone() }).await, [2]);
        let both = ReportTaskFilter { cnums: vec!["7700000001".into(), "7700000002".into()], ..mine.clone() };
        assert_eq!(list(both).await, [4, 3, 2, 1]);

        // Two workers at once never take the same task; a dead worker's
        // task returns when its lease runs out.
        let lease = t0() + Duration::seconds(300);
        let (a, b) = tokio::join!(store.claim_report_task(t0(), lease), store.claim_report_task(t0(), lease));
        let (a, b) = (a.unwrap().expect("a claimed"), b.unwrap().expect("b claimed"));
        assert_ne!(a.id, b.id, "{backend:?}");
        assert_eq!((a.status, a.attempts, a.lease_until), (TaskStatus::InProgress, 1, Some(lease)));
        let later = lease + Duration::seconds(1);
        let mut reclaimed = Vec::new();
        while let Some(task) = store.claim_report_task(later, later + Duration::seconds(300)).await.unwrap() {
            reclaimed.push(task);
        }
        assert_eq!(reclaimed.len(), 4, "two new, two whose lease ran out");
        let retaken = reclaimed.iter().find(|t| t.id == a.id).unwrap();
        assert_eq!(retaken.attempts, 2);

        let file = ReportFile {
            id: Uuid::from_u128(500),
            task_id: a.id,
            file_type: FileType::SimpleDocumentary,
            name_rus: "Отчёт".into(),
            name_eng: "Report".into(),
            file_name: "report.xlsx".into(),
            signature_type: SignatureType::None,
            content_type: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet".into(),
            size: 1234,
            object_key: "reports/a/report.xlsx".into(),
        };
        let done = TaskOutcome::Done(vec![file.clone()]);
        assert!(!store.finish_report_task(a.id, lease, &done, later).await.unwrap(), "the old lease is not the holder");
        assert!(store.finish_report_task(a.id, retaken.lease_until.unwrap(), &done, later).await.unwrap());
        let finished = store.find_report_task(a.id).await.unwrap().unwrap();
        assert_eq!((finished.status, finished.files.clone()), (TaskStatus::Done, vec![file.clone()]));
        assert_eq!(store.find_report_file(file.id).await.unwrap(), Some((file, a.cnum.clone())));
        let failed = TaskOutcome::Failed("no data".into());
        let other = reclaimed.iter().find(|t| t.id != a.id).unwrap();
        assert!(store.finish_report_task(other.id, other.lease_until.unwrap(), &failed, later).await.unwrap());
        let other = store.find_report_task(other.id).await.unwrap().unwrap();
        assert_eq!((other.status, other.error.as_deref()), (TaskStatus::Failed, Some("no data")));
    }
}

/// Retention's two methods: only tasks that finished (`DONE`, `FAILED`)
/// before the cut-off are listed, oldest first, and removed with their
/// files' rows; `NEW` and `IN_PROGRESS` tasks stay whatever their age.
#[tokio::test]
async fn finished_report_tasks_are_listed_and_removed_by_age_and_unfinished_ones_never() {
    use portico_model::reports::{FileType, ReportFile, SignatureType, TaskOutcome, TaskStatus};
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        for id in 1..=4 {
            store.create_report_task(&report_task(id, "7700000001", (1, 31)), false).await.unwrap();
        }
        // 1 and 2 finish at t0 + 1 h (done with a file, failed); 3 is in
        // progress; 4 stays new.
        let finished_at = t0() + Duration::hours(1);
        let lease = t0() + Duration::hours(2);
        let mut claimed = Vec::new();
        for _ in 0..3 {
            claimed.push(store.claim_report_task(t0(), lease).await.unwrap().expect("a task"));
        }
        claimed.sort_by_key(|t| t.id);
        let file = ReportFile {
            id: Uuid::from_u128(600),
            task_id: claimed[0].id,
            file_type: FileType::SimpleDocumentary,
            name_rus: "Отчёт".into(),
            name_eng: "Report".into(),
            file_name: "report.xlsx".into(),
            signature_type: SignatureType::None,
            content_type: "application/octet-stream".into(),
            size: 10,
            object_key: "reports/1/report.xlsx".into(),
        };
        let done = TaskOutcome::Done(vec![file.clone()]);
        assert!(store.finish_report_task(claimed[0].id, lease, &done, finished_at).await.unwrap());
        let failed = TaskOutcome::Failed("no data".into());
        assert!(store.finish_report_task(claimed[1].id, lease, &failed, finished_at).await.unwrap());

        let ids =
            |tasks: Vec<portico_model::reports::ReportTask>| tasks.iter().map(|t| t.id.as_u128()).collect::<Vec<_>>();
        let far = t0() + Duration::days(400);
        assert_eq!(
            ids(store.list_finished_report_tasks(finished_at, 10).await.unwrap()),
            Vec::<u128>::new(),
            "{backend:?}"
        );
        let expired = store.list_finished_report_tasks(far, 10).await.unwrap();
        assert_eq!(ids(expired.clone()), [1, 2], "{backend:?}: finished ones only, oldest first");
        assert_eq!(expired[0].files, vec![file.clone()], "with their files");
        assert_eq!(ids(store.list_finished_report_tasks(far, 1).await.unwrap()), [1], "at most the limit");

        assert!(!store.delete_finished_report_task(claimed[0].id, finished_at).await.unwrap(), "not yet past");
        for task in &claimed {
            let removed = store.delete_finished_report_task(task.id, far).await.unwrap();
            assert_eq!(removed, task.id.as_u128() != 3, "{backend:?}: task {}", task.id);
        }
        assert!(!store.delete_finished_report_task(Uuid::from_u128(4), far).await.unwrap(), "a new task stays");
        assert_eq!(store.find_report_task(claimed[0].id).await.unwrap(), None);
        assert_eq!(store.find_report_file(file.id).await.unwrap(), None, "its files' rows go with it");
        let left = store.find_report_task(claimed[2].id).await.unwrap().expect("in progress stays");
        assert_eq!(left.status, TaskStatus::InProgress);
        assert_eq!(store.find_report_task(Uuid::from_u128(4)).await.unwrap().map(|t| t.status), Some(TaskStatus::New));
        assert!(!store.delete_finished_report_task(claimed[0].id, far).await.unwrap(), "twice is harmless");
    }
}

#[tokio::test]
async fn a_deleted_login_process_is_gone_and_deleting_twice_is_harmless() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (process, other) = (login_process(), login_process());
        store.create_login_process(&process).await.unwrap();
        store.create_login_process(&other).await.unwrap();
        store.delete_login_process(process.id).await.unwrap();
        assert_eq!(store.find_login_process(process.id, t0()).await.unwrap(), None, "{backend:?}");
        assert!(store.find_login_process(other.id, t0()).await.unwrap().is_some(), "only the one named");
        store.delete_login_process(process.id).await.unwrap();
    }
}

#[tokio::test]
async fn agreements_are_replaced_whole_and_listed_by_number() {
    use portico_reports::sample::{Shape, agreement};
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        assert_eq!(store.list_agreements().await.unwrap(), Vec::<(String, String)>::new());
        let first = agreement(&Shape { number: "БД-2", cnum: "7700000002", trades: 20, ..Shape::demo() });
        let second = agreement(&Shape { number: "БД-1", cnum: "7700000001", trades: 5, ..Shape::demo() });
        store.save_agreements(&[first.clone(), second.clone()], t0()).await.unwrap();
        assert_eq!(
            store.list_agreements().await.unwrap(),
            [("БД-1".to_owned(), "7700000001".to_owned()), ("БД-2".to_owned(), "7700000002".to_owned())],
            "{backend:?}: by number"
        );
        assert_eq!(store.find_agreement("БД-2").await.unwrap(), Some(first.clone()));

        // Saving again replaces the agreement whole: nothing of the old
        // document survives beside the new one.
        let mut replaced = first.clone();
        replaced.trades.truncate(3);
        replaced.client_name = "АО «Новое имя»".into();
        store.save_agreements(&[replaced.clone()], t0() + Duration::days(1)).await.unwrap();
        assert_eq!(store.find_agreement("БД-2").await.unwrap(), Some(replaced));
        assert_eq!(store.find_agreement("БД-1").await.unwrap(), Some(second));
        assert_eq!(store.list_agreements().await.unwrap().len(), 2);
        assert_eq!(store.find_agreement("БД-3").await.unwrap(), None);
    }
}

#[tokio::test]
async fn ping_answers_while_the_database_does_and_names_the_backend() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        store.ping().await.unwrap();
        let expected = match backend {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        };
        assert_eq!(store.backend(), expected);
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
        assert!(store.update_client(&c).await.unwrap());
        assert_eq!(store.find_client(&client_id("app")).await.unwrap(), Some(c.clone()), "{backend:?}");
        assert!(!store.update_client(&client("nobody")).await.unwrap());

        let mut anna = user("anna");
        anna.email = Some("anna@example.com".into());
        let mut andrei = user("andrei");
        andrei.phone = Some("+79001112233".into());
        let boris = user("boris");
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
        assert_eq!(page(UserQuery { blocked: Some(true), ..Default::default() }).await, ["boris"]);
        assert_eq!(page(UserQuery { blocked: Some(false), ..Default::default() }).await, ["andrei", "anna"]);

        anna.login = "anna.k".into();
        anna.name = None;
        anna.password_hash = "$argon2id$y".into();
        assert!(store.update_user(&anna).await.unwrap());
        assert_eq!(store.find_user(anna.id).await.unwrap(), Some(anna.clone()));
        assert_eq!(store.find_user_by_login("anna").await.unwrap(), None);
        anna.login = "andrei".into();
        assert!(matches!(store.update_user(&anna).await, Err(StorageError::Conflict(_))), "a taken login");
        assert!(!store.update_user(&user("nobody")).await.unwrap());
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
async fn a_users_live_grants_are_listed_newest_first() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (u, first) = granted(store.as_ref()).await;
        let mut second = grant("app", u.id);
        second.created_at = first.created_at + Duration::minutes(1);
        store.insert_code(&code("h2", "app", u.id)).await.unwrap();
        let redeemed =
            store.redeem_code(&code_hash("h2"), t0(), &second, &refresh("r2", second.id, 30), &audit()).await;
        assert_eq!(redeemed.unwrap(), Redemption::Redeemed, "{backend:?}");
        let ids = |grants: Vec<Grant>| grants.into_iter().map(|g| g.id).collect::<Vec<_>>();
        assert_eq!(ids(store.list_user_grants(u.id).await.unwrap()), [second.id, first.id], "{backend:?}");
        assert!(store.revoke_grant(first.id, t0()).await.unwrap());
        assert_eq!(ids(store.list_user_grants(u.id).await.unwrap()), [second.id], "revoked ones are not live");
        assert!(store.list_user_grants(UserId::random()).await.unwrap().is_empty());
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
