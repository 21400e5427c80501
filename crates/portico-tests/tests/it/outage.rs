//! A database outage: liveness answers 503, the token endpoint a clean 5xx
//! JSON error, readiness 503, the permissions API the spec's 500
//! `{"message": ...}`; the server recovers when the database returns.

use portico_tests::{Backend, POSTGRES_ENV, TcpProxy, TestApp};

/// A PostgreSQL server behind a proxy that can cut it off, and Portico on
/// it with `acquire_timeout_secs`; `None` (said as skipped) without one.
async fn behind_a_proxy(test: &str, acquire_timeout_secs: u32) -> Option<(TcpProxy, TestApp)> {
    let Ok(base) = std::env::var(POSTGRES_ENV) else {
        eprintln!("SKIPPED: {POSTGRES_ENV} is not set; {test} needs PostgreSQL");
        return None;
    };
    let upstream = url::Url::parse(&base).unwrap();
    let upstream = format!("{}:{}", upstream.host_str().unwrap(), upstream.port().unwrap_or(5432));
    let proxy = TcpProxy::start(upstream).await;
    let app = TestApp::spawn_with(Backend::Postgres, |config| {
        let mut url = url::Url::parse(config.database_url.as_deref().unwrap()).unwrap();
        url.set_host(Some("127.0.0.1")).unwrap();
        url.set_port(Some(proxy.addr.port())).unwrap();
        config.database_url = Some(url.to_string());
        config.database_acquire_timeout_secs = acquire_timeout_secs;
    })
    .await;
    Some((proxy, app))
}

#[tokio::test]
async fn a_database_outage_is_503_and_the_server_recovers() {
    let Some((proxy, app)) = behind_a_proxy("the database outage test", 1).await else { return };
    let tokens = app.tokens_for("ivan", "ivan-password").await;
    assert_eq!(app.liveness(&tokens.access_token).await, 200);
    let pair = app.token_pair("maria").await;
    let permissions = || pair.on(app.http().get(app.url("/api/v2/permissions"))).send();
    assert_eq!(permissions().await.unwrap().status(), 200);
    // More pooled connections than the outage below will touch: the ones it
    // does not touch must not serve a failure after the database is back.
    let mut parallel = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let (http, url, token) = (app.http(), app.url("/oauth2/token/liveness"), tokens.access_token.clone());
        parallel.spawn(async move { http.get(url).bearer_auth(token).send().await.unwrap().status() });
    }
    assert!(parallel.join_all().await.iter().all(|status| *status == 200));

    proxy.cut();
    assert_eq!(app.liveness(&tokens.access_token).await, 503);
    let response = app
        .token_request(&[("grant_type", "refresh_token"), ("refresh_token", tokens.refresh_token.as_deref().unwrap())])
        .await;
    assert_eq!(response.status(), 503);
    let body: serde_json::Value = response.json().await.expect("a JSON error body");
    assert_eq!(body["error"], "temporarily_unavailable");
    let ready = app.http().get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 503);
    let response = permissions().await.unwrap();
    assert_eq!(response.status(), 500);
    let body: serde_json::Value = response.json().await.unwrap();
    assert!(body["message"].as_str().unwrap().contains("unavailable"), "{body}");

    proxy.restore();
    for _ in 0..16 {
        assert_eq!(app.liveness(&tokens.access_token).await, 200, "recovered");
    }
    assert_eq!(permissions().await.unwrap().status(), 200);
    let response = app
        .token_request(&[("grant_type", "refresh_token"), ("refresh_token", tokens.refresh_token.as_deref().unwrap())])
        .await;
    assert_eq!(response.status(), 200, "the refresh token survived the outage unspent");
}

#[tokio::test]
async fn readiness_answers_within_a_second_when_the_database_is_cut_off() {
    let Some((proxy, app)) = behind_a_proxy("the readiness test", 5).await else { return };
    assert_eq!(app.http().get(app.url("/readyz")).send().await.unwrap().status(), 200);
    proxy.cut();
    let started = std::time::Instant::now();
    let ready = app.http().get(app.url("/readyz")).send().await.unwrap();
    let took = started.elapsed();
    assert_eq!(ready.status(), 503);
    assert!(took < std::time::Duration::from_millis(1500), "answered in {took:?}, not the 5 s acquire timeout");
    proxy.restore();
}
