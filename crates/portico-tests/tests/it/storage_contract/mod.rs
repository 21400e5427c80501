//! The storage contract: the same stories on every backend, straight
//! against the repository traits, one module per aggregate (tokens, people,
//! login, notifications, reports, permissions); the fixtures they share are
//! here.

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

mod login;
mod notifications;
pub(crate) mod passkeys;
mod people;
mod permissions;
mod reports;
mod tokens;

pub(crate) use reports::report_task;

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
        security: Default::default(),
        secret_sealed: None,
        registration_token_hash: None,
        awaiting_approval: false,
        created_at: t0(),
        revision: 0,
    }
}

/// Ivan and Maria, stored.
pub(crate) async fn two_users(store: &dyn Storage) -> (User, User) {
    let (ivan, maria) = (user("ivan"), user("maria"));
    store.create_user(&ivan).await.unwrap();
    store.create_user(&maria).await.unwrap();
    (ivan, maria)
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
        deactivated: false,
        created_at: t0(),
        provisioned: None,
        revision: 0,
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
        dpop_jkt: Some("NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs".into()),
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
        user_agent: Some("Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0".into()),
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
            assert_eq!(
                store.list_clients(portico_storage::KeyPage::ALL, None).await.unwrap().len(),
                i + 1,
                "{backend:?}: after write {i}"
            );
            store.record_audit(&AuditEvent::new(t0(), AuditKind::UserBlocked).client(&id)).await.unwrap();
            let newest = store.recent_audit(1).await.unwrap();
            assert_eq!(newest[0].client_id.as_ref(), Some(&id), "{backend:?}: newest audit after write {i}");
        }
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
