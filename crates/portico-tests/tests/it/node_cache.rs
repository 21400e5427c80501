//! Serving nodes answer revocation state and the permission revision from
//! memory, never staler than `database_cache_staleness_ms`, and their own
//! changes at once: on PostgreSQL kept current by `LISTEN`/`NOTIFY`, on
//! SQLite by watching for writes of another process.

use portico_crypto::jwt::Algorithm;
use std::time::Duration;

use portico_model::clock::Clock as _;
use portico_storage::{PermissionRepository as _, UserRepository as _};
use portico_storage_sqlite::SqliteStore;
use portico_tests::{Backend, POSTGRES_ENV, TcpProxy, TestApp, jwt_header};
use sqlx::Connection as _;

/// The instance secret both nodes share (32 bytes, base64).
const SECRET: &str = "bm9kZS1jYWNoZS10ZXN0LXNlY3JldC0zMi1ieXRlcyE=";

/// How stale the nodes of these tests may be.
const STALENESS_MS: u32 = 300;

/// Two nodes on one fresh PostgreSQL database; `None` (said as skipped)
/// without PostgreSQL.
async fn two_nodes(test: &str, staleness_ms: [u32; 2]) -> Option<(TestApp, TestApp)> {
    if std::env::var(POSTGRES_ENV).is_err() {
        portico_tests::skipped(&format!("{POSTGRES_ENV} is not set; {test} needs PostgreSQL"));
        return None;
    }
    let a = TestApp::spawn_with(Backend::Postgres, |config| {
        config.secret_key = Some(SECRET.to_owned());
        config.database_cache_staleness_ms = staleness_ms[0];
    })
    .await;
    let (url, issuer) = (a.config.database_url.clone(), a.config.public_url.clone());
    let b = TestApp::spawn_with(Backend::Postgres, |config| {
        config.secret_key = Some(SECRET.to_owned());
        config.public_url = issuer;
        config.database_url = url;
        config.database_cache_staleness_ms = staleness_ms[1];
    })
    .await;
    Some((a, b))
}

async fn revoke(app: &TestApp, token: &str) {
    let response = app
        .http()
        .post(app.url("/oauth2/revoke"))
        .basic_auth(portico_tests::demo::CLIENT_ID, Some(portico_tests::demo::CLIENT_SECRET))
        .form(&[("token", token)])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn a_revocation_on_one_node_reaches_the_other_within_the_staleness_bound() {
    let Some((a, b)) = two_nodes("the node cache test", [STALENESS_MS; 2]).await else { return };
    let access = a.tokens_for("ivan", "ivan-password").await;
    let refresh = a.tokens_for("maria", "maria-password").await;
    for token in [&access.access_token, &refresh.access_token] {
        assert_eq!(a.liveness(token).await, 200);
        assert_eq!(b.liveness(token).await, 200, "both nodes now hold the grant as live");
    }

    // An access token revoked on node B, and a whole grant (through its
    // refresh token) on node A.
    revoke(&b, &access.access_token).await;
    revoke(&a, refresh.refresh_token.as_deref().unwrap()).await;
    assert_eq!(b.liveness(&access.access_token).await, 401, "the revoking node knows at once");
    assert_eq!(a.liveness(&refresh.access_token).await, 401, "the revoking node knows at once");
    tokio::time::sleep(Duration::from_millis(STALENESS_MS.into())).await;
    assert_eq!(a.liveness(&access.access_token).await, 401, "no longer than the bound on the other node");
    assert_eq!(b.liveness(&refresh.access_token).await, 401, "no longer than the bound on the other node");

    // A permission model saved on A is the current revision on B.
    let before = b.store.permission_revision().await.unwrap();
    let doc = serde_json::json!({"companies": [{"cnum": "7700000042", "name": "Узел", "contractStatus": "ACTIVE"}]});
    let saved = a.apply_permissions(&doc).await;
    assert!(saved.status().is_success(), "{}", saved.text().await.unwrap());
    assert_eq!(a.store.permission_revision().await.unwrap(), before + 1);
    tokio::time::sleep(Duration::from_millis(STALENESS_MS.into())).await;
    assert_eq!(b.store.permission_revision().await.unwrap(), before + 1);
}

/// A change that bypasses the notifications (triggers off for one session)
/// shows which node answers from memory: the caching node keeps its answer,
/// a node configured with `database_cache_staleness_ms = 0` asks the
/// database.
#[tokio::test]
async fn liveness_is_answered_from_node_memory_and_zero_staleness_asks_the_database() {
    let Some((cached, uncached)) = two_nodes("the node cache test", [60_000, 0]).await else { return };
    // The first tick (within 250 ms of the start) makes the memory trusted.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let tokens = cached.tokens_for("ivan", "ivan-password").await;
    assert_eq!(cached.liveness(&tokens.access_token).await, 200);
    assert_eq!(uncached.liveness(&tokens.access_token).await, 200);

    let mut conn = sqlx::PgConnection::connect(cached.config.database_url.as_deref().unwrap()).await.unwrap();
    sqlx::raw_sql(
        "SET session_replication_role = replica; UPDATE grants SET revoked_at = now(); \
         UPDATE clients SET secret_hash = 'sha256:' || repeat('0', 64);",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    assert_eq!(uncached.liveness(&tokens.access_token).await, 401, "straight from the database");
    assert_eq!(cached.liveness(&tokens.access_token).await, 200, "from memory: nothing was announced");
    let (client, secret) = (portico_tests::demo::CLIENT_ID, portico_tests::demo::CLIENT_SECRET);
    assert_eq!(client_answer(&uncached, client, secret).await, 401, "the secret, straight from the database");
    assert_eq!(client_answer(&cached, client, secret).await, 400, "the client, from memory");
}

/// A revocation committed while a node could not hear the database (its
/// connections cut, then restored) is never missed: the node forgets what
/// it held and asks again.
#[tokio::test]
async fn a_revocation_made_while_a_node_was_cut_off_is_seen_when_it_returns() {
    let Some((direct, _)) = two_nodes("the node cache test", [STALENESS_MS, STALENESS_MS]).await else { return };
    let url = url::Url::parse(direct.config.database_url.as_deref().unwrap()).unwrap();
    let proxy = TcpProxy::start(format!("{}:{}", url.host_str().unwrap(), url.port().unwrap_or(5432))).await;
    let issuer = direct.config.public_url.clone();
    let behind = TestApp::spawn_with(Backend::Postgres, |config| {
        config.database_url = Some(proxy.url_through(url.as_str()));
        config.secret_key = Some(SECRET.to_owned());
        config.public_url = issuer;
        // Long enough that only the reset after the cut, not the bound,
        // can make the node see the revocation in this test.
        config.database_cache_staleness_ms = 60_000;
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let tokens = direct.tokens_for("ivan", "ivan-password").await;
    assert_eq!(behind.liveness(&tokens.access_token).await, 200, "the grant is now held as live");

    proxy.cut();
    revoke(&direct, tokens.refresh_token.as_deref().unwrap()).await;
    assert_eq!(direct.liveness(&tokens.access_token).await, 401);
    tokio::time::sleep(Duration::from_millis(500)).await;
    proxy.restore();
    assert_eq!(behind.liveness(&tokens.access_token).await, 401, "not from the memory held before the cut");
    // Trusted again once it has reloaded and heard its own tick.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(behind.liveness(&tokens.access_token).await, 401);
}

/// The admin commands are another process on the same SQLite file: what
/// they change reaches the serving node within the bound, though it
/// answers from memory.
#[tokio::test]
async fn another_process_writing_the_sqlite_file_is_seen_within_the_staleness_bound() {
    let app = TestApp::spawn_with(Backend::Sqlite, |config| config.database_cache_staleness_ms = STALENESS_MS).await;
    let ivan = app.tokens_for("ivan", "ivan-password").await;
    let maria = app.tokens_for("maria", "maria-password").await;
    assert_eq!(app.liveness(&ivan.access_token).await, 200);
    assert_eq!(app.liveness(&maria.access_token).await, 200, "both grants are now held as live");
    let revision = app.store.permission_revision().await.unwrap();

    // Its own revocation: at once.
    revoke(&app, &maria.access_token).await;
    assert_eq!(app.liveness(&maria.access_token).await, 401, "the revoking node knows at once");

    let admin = SqliteStore::connect(app.config.database_url.as_deref().unwrap()).await.unwrap();
    admin.set_user_blocked("ivan", true, app.clock.now()).await.unwrap().expect("ivan exists");
    let mut model = admin.load_permissions().await.unwrap();
    model.revision = revision;
    assert!(admin.save_permissions(&model).await.unwrap());
    admin.close().await;
    tokio::time::sleep(Duration::from_millis(STALENESS_MS.into())).await;
    assert_eq!(app.liveness(&ivan.access_token).await, 401, "no longer than the bound");
    assert_eq!(app.store.permission_revision().await.unwrap(), revision + 1);
    assert_eq!(app.liveness(&maria.access_token).await, 401, "still refused after the memory started over");
}

/// The demo client's refresh of `refresh_token` on `app`: the response.
async fn refresh(app: &TestApp, refresh_token: &str) -> serde_json::Value {
    let response = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", refresh_token)]).await;
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// The status of a token request as `client_id` with `secret` (a refresh
/// token that does not exist: 400 once the client is authenticated, 401
/// when its secret is refused).
async fn client_answer(app: &TestApp, client_id: &str, secret: &str) -> u16 {
    let form = [("grant_type", "refresh_token"), ("refresh_token", "none")];
    let response =
        app.http().post(app.url("/oauth2/token")).basic_auth(client_id, Some(secret)).form(&form).send().await.unwrap();
    response.status().as_u16()
}

/// What a client is registered with and which key signs are answered from
/// memory as well: a change holds on the node that made it at once, and on
/// the other within the bound.
#[tokio::test]
async fn a_client_change_and_a_key_rotation_reach_the_other_node_within_the_staleness_bound() {
    let Some((a, b)) = two_nodes("the node cache test", [STALENESS_MS; 2]).await else { return };
    a.add_client("crm", "old-secret").await;
    let first = a.tokens_for("ivan", "ivan-password").await;
    // Node B signs too, and so holds the demo client and the active key.
    let on_b = refresh(&b, first.refresh_token.as_deref().unwrap()).await;
    let old_kid = jwt_header(&first.access_token)["kid"].clone();
    assert_eq!(jwt_header(on_b["access_token"].as_str().unwrap())["kid"], old_kid);
    for node in [&a, &b] {
        assert_eq!(client_answer(node, "crm", "old-secret").await, 400, "both nodes now hold the client");
    }

    // A new secret, set on node A.
    let mut crm = a.store.find_client(&"crm".into()).await.unwrap().unwrap();
    crm.secret_hash = portico_crypto::hash::client_secret_hash("new-secret");
    assert_eq!(a.store.update_client(&crm).await.unwrap(), portico_storage::Update::Updated);
    assert_eq!(client_answer(&a, "crm", "old-secret").await, 401, "the changing node knows at once");
    assert_eq!(client_answer(&a, "crm", "new-secret").await, 400);
    tokio::time::sleep(Duration::from_millis(STALENESS_MS.into())).await;
    assert_eq!(client_answer(&b, "crm", "old-secret").await, 401, "no longer than the bound on the other node");
    assert_eq!(client_answer(&b, "crm", "new-secret").await, 400);

    // Removed on node A.
    assert!(a.store.delete_client(&"crm".into()).await.unwrap());
    assert_eq!(client_answer(&a, "crm", "new-secret").await, 401, "the removing node knows at once");
    tokio::time::sleep(Duration::from_millis(STALENESS_MS.into())).await;
    assert_eq!(client_answer(&b, "crm", "new-secret").await, 401, "no longer than the bound on the other node");

    // A key rotated on node A signs there at once, and on node B within
    // the bound; earlier tokens still verify.
    let secret = portico_server::secret::InstanceSecret::load(&a.config).unwrap();
    let new_kid = portico_tokens::KeyRing::rotate(a.store.as_ref(), &secret.sealer(), Algorithm::Rs256, a.clock.now())
        .await
        .unwrap();
    let on_a = a.tokens_for("maria", "maria-password").await;
    assert_eq!(jwt_header(&on_a.access_token)["kid"], new_kid.as_str(), "the rotating node signs with it at once");
    tokio::time::sleep(Duration::from_millis(STALENESS_MS.into())).await;
    let on_b = refresh(&b, on_b["refresh_token"].as_str().unwrap()).await;
    assert_eq!(jwt_header(on_b["access_token"].as_str().unwrap())["kid"], new_kid.as_str(), "within the bound");
    assert_ne!(old_kid, new_kid.as_str());
    assert_eq!(a.liveness(&first.access_token).await, 200, "a token of the previous key still verifies");
}

/// A key rotated on node A signs there at once; node B, which has not yet
/// loaded it, reads it once on the first token that names it, and every
/// request that names it meanwhile waits for that read: 32 checks at once
/// of a token of the new key on B are all taken, none refused because
/// another was loading the key.
#[tokio::test]
async fn the_first_tokens_of_a_key_rotated_elsewhere_all_verify_at_once() {
    let Some((a, b)) = two_nodes("the node cache test", [STALENESS_MS; 2]).await else { return };
    let first = a.tokens_for("ivan", "ivan-password").await;
    assert_eq!(b.liveness(&first.access_token).await, 200, "node B holds the first key");
    let secret = portico_server::secret::InstanceSecret::load(&a.config).unwrap();
    let new_kid = portico_tokens::KeyRing::rotate(a.store.as_ref(), &secret.sealer(), Algorithm::Rs256, a.clock.now())
        .await
        .unwrap();
    let on_a = a.tokens_for("maria", "maria-password").await;
    assert_eq!(jwt_header(&on_a.access_token)["kid"], new_kid.as_str());
    let mut checks = tokio::task::JoinSet::new();
    for _ in 0..32 {
        let request = b.http().get(b.url("/oauth2/token/liveness")).bearer_auth(&on_a.access_token);
        checks.spawn(async move { request.send().await.unwrap().status().as_u16() });
    }
    let statuses = checks.join_all().await;
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 32, "{statuses:?}");
}
