//! Addresses third parties gave (merchant callbacks, clients' back-channel
//! logout addresses) are reached directly from `portico worker`, never
//! through a proxy the environment names (`HTTP_PROXY`, `HTTPS_PROXY`,
//! `ALL_PROXY`): a proxy resolves the host name itself, so the guard that
//! refuses names leading into private networks would never see it.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use portico_model::audit::{AuditEvent, AuditKind};
use portico_model::client::{Client, LocalizedText};
use portico_model::clock::Clock as _;
use portico_model::ids::{GrantId, SessionId, UserId};
use portico_model::notify::MerchantIds;
use portico_model::oauth::{AuthorizationCode, Grant, Redemption, RefreshToken};
use portico_model::session::SsoSession;
use portico_model::user::User;
use portico_tests::{TestApp, backends};
use tokio::io::AsyncBufReadExt as _;

mod common;

/// A would-be proxy on a loopback port: the first line of every
/// connection it gets (`CONNECT host:443 …` or `POST http://…`).
async fn proxy() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let mut line = String::new();
            let mut reader = tokio::io::BufReader::new(socket);
            let _ = tokio::time::timeout(Duration::from_secs(5), reader.read_line(&mut line)).await;
            record.lock().unwrap().push(line.trim_end().to_owned());
        }
    });
    (url, seen)
}

/// Merchant `m0` with its callback at `url` and one payment event due at `now`.
async fn payment_due(app: &TestApp, url: &str, now: time::OffsetDateTime) {
    let ids =
        MerchantIds { merchant_id: "m0".into(), public_id: "pub0".into(), sbp_merchant_id: "MA0000000000".into() };
    common::merchant(app, &ids, url.into(), now).await;
    common::payment_due(app, "m0", "ord-1", 1, 10_000, now).await;
}

/// A session of a user signed in to client `bc`, whose back-channel
/// logout address is `uri`, ended at `now`: one logout notice due.
async fn logout_due(app: &TestApp, uri: &str, now: time::OffsetDateTime) {
    let client = Client {
        client_id: "bc".into(),
        secret_hash: "sha256:00".into(),
        name: LocalizedText { ru: "Клиент".into(), en: "Client".into() },
        redirect_uris: vec!["https://bc.example/cb".into()],
        scopes: vec!["openid".into()],
        require_consent: false,
        post_logout_redirect_uris: vec![],
        logout_revokes_grants: false,
        backchannel_logout_uri: Some(uri.into()),
        security: Default::default(),
        secret_sealed: None,
        registration_token_hash: None,
        awaiting_approval: false,
        created_at: now,
        revision: 0,
    };
    app.store.create_client(&client).await.unwrap();
    let user = User {
        id: UserId::random(),
        login: "outbound-check".into(),
        password_hash: "$argon2id$x".into(),
        phone: None,
        email: None,
        name: None,
        phone_login_enabled: false,
        blocked: false,
        deactivated: false,
        created_at: now,
        provisioned: None,
        revision: 0,
    };
    app.store.create_user(&user).await.unwrap();
    let session_id = SessionId::random();
    let amr = vec!["pwd".to_owned()];
    let code = AuthorizationCode {
        code_hash: "h".into(),
        client_id: "bc".into(),
        user_id: user.id,
        redirect_uri: "https://bc.example/cb".into(),
        scope: "openid".into(),
        code_challenge: "c".repeat(43),
        nonce: None,
        auth_time: now,
        created_at: now,
        expires_at: now + time::Duration::minutes(5),
        grant_id: None,
        amr: amr.clone(),
        session_id: Some(session_id),
        dpop_jkt: None,
    };
    app.store.insert_code(&code).await.unwrap();
    let grant = Grant {
        id: GrantId::now_v7(),
        client_id: "bc".into(),
        user_id: user.id,
        scope: "openid".into(),
        auth_time: now,
        created_at: now,
        revoked_at: None,
        amr: amr.clone(),
        session_id: Some(session_id),
    };
    let refresh = RefreshToken {
        token_hash: "r".into(),
        grant_id: grant.id,
        created_at: now,
        expires_at: now + time::Duration::days(1),
    };
    let issued = AuditEvent::new(now, AuditKind::TokenIssued);
    let redeemed = app.store.redeem_code(&"h".into(), now, &grant, &refresh, &issued).await.unwrap();
    assert_eq!(redeemed, Redemption::Redeemed);
    let session = SsoSession {
        id: session_id,
        token_hash: "s".into(),
        user_id: user.id,
        auth_time: now,
        created_at: now,
        expires_at: now + time::Duration::hours(1),
        amr,
        user_agent: None,
    };
    app.store.create_session(&session).await.unwrap();
    let ended = AuditEvent::new(now, AuditKind::SessionEnded).user(user.id);
    let ended = app.store.end_session(session_id, now, &ended).await.unwrap().expect("the session ended");
    assert_eq!(ended.notices, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn third_parties_are_reached_directly_never_through_a_proxy_the_environment_names() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.notifications.deliver = false;
            c.notifications.allow_insecure_callbacks = Some(false);
        })
        .await;
        // Due a second after the test server's clock, which stands still:
        // only the worker process, on the wall clock, finds them due.
        let now = app.clock.now() + time::Duration::seconds(1);
        // `.invalid` never resolves (RFC 6761): sent directly, each attempt
        // fails at once; through a proxy, the proxy would be asked for it.
        payment_due(&app, "https://notify.invalid/pub0", now).await;
        logout_due(&app, "https://logout.invalid/bc", now).await;
        let (proxy, asked) = proxy().await;

        let mut worker = std::process::Command::new(env!("CARGO_BIN_EXE_portico"))
            .arg("worker")
            .env_clear()
            .env("PORTICO_DATABASE_URL", app.config.database_url.as_deref().unwrap())
            .env("PORTICO_DATA_DIR", &app.config.data_dir)
            .env("PORTICO_LOG", "warn,portico_identity::backchannel=debug")
            .env("PORTICO_NOTIFICATIONS__ALLOW_INSECURE_CALLBACKS", "false")
            .env("PORTICO_NOTIFICATIONS__DELIVERY_INTERVAL_MS", "50")
            .env("PORTICO_LOGIN__LOGOUT_DELIVERY_INTERVAL_MS", "50")
            .envs(["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"].map(|name| (name, &proxy)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start portico worker");
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = worker.stderr.take().unwrap();
        let lines = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)).map_while(Result::ok) {
                let mut log = lines.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        let (notified, logged_out) = loop {
            let (deliveries, _) = app.store.list_deliveries("m0", None, 0, 10).await.unwrap();
            let notified = deliveries.first().is_some_and(|d| d.attempts > 0);
            let logged_out = log.lock().unwrap().contains("back-channel logout failed; will retry");
            if (notified && logged_out) || tokio::time::Instant::now() > deadline {
                break (notified, logged_out);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let _ = worker.kill();
        let _ = worker.wait();
        let log = log.lock().unwrap().clone();
        assert!(notified, "{backend:?}: the worker tried the merchant's callback; its log:\n{log}");
        assert!(logged_out, "{backend:?}: the worker tried the client's back-channel address; its log:\n{log}");
        assert_eq!(*asked.lock().unwrap(), Vec::<String>::new(), "{backend:?}: the proxy was never asked");
    }
}
