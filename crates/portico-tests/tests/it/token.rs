//! The token endpoint: both grants, every error, replay rules, expiry.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use portico_tests::{Pkce, TestApp, backends, demo};
use time::Duration;

async fn error_of(response: reqwest::Response) -> (u16, String, serde_json::Value) {
    let status = response.status().as_u16();
    let www = response.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    let body: serde_json::Value = response.json().await.expect("OAuth2ErrorDTO");
    (status, www, body)
}

async fn assert_error(response: reqwest::Response, status: u16, error: &str) -> serde_json::Value {
    let (actual, www, body) = error_of(response).await;
    assert_eq!((actual, body["error"].as_str().unwrap()), (status, error), "{body}");
    if status == 401 {
        assert!(www.starts_with("Basic"), "401 carries a Basic challenge");
    }
    body
}

/// A fresh code for ivan and its PKCE pair.
async fn code(app: &TestApp) -> (String, Pkce) {
    let pkce = Pkce::new();
    let code = app.login_for_code(&app.browser(), &pkce, "ivan", "ivan-password").await;
    (code, pkce)
}

async fn exchange(app: &TestApp, code: &str, verifier: &str) -> reqwest::Response {
    app.token_request(&[("grant_type", "authorization_code"), ("code", code), ("code_verifier", verifier)]).await
}

#[tokio::test]
async fn request_errors() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (code, pkce) = code(&app).await;
        let http = app.http();
        let token_url = app.url("/oauth2/token");

        assert_error(app.token_request(&[]).await, 400, "invalid_request").await;
        let body =
            assert_error(app.token_request(&[("grant_type", "password")]).await, 400, "unsupported_grant_type").await;
        assert_eq!(body["error_description"], "OAuth 2.0 Parameter: grant_type");
        let body =
            assert_error(app.token_request(&[("grant_type", "authorization_code")]).await, 400, "invalid_request")
                .await;
        assert_eq!(body["error_description"], "OAuth 2.0 Parameter: code");
        let missing_verifier = app.token_request(&[("grant_type", "authorization_code"), ("code", &code)]).await;
        assert_error(missing_verifier, 400, "invalid_request").await;
        assert_error(app.token_request(&[("grant_type", "refresh_token")]).await, 400, "invalid_request").await;

        // Repeated parameter.
        let response = app
            .token_request(&[("grant_type", "refresh_token"), ("grant_type", "refresh_token"), ("refresh_token", "x")])
            .await;
        let body = assert_error(response, 400, "invalid_request").await;
        assert_eq!(body["error_description"], "OAuth 2.0 Parameter: grant_type");

        // Wrong content type, oversized body.
        let response =
            http.post(&token_url).json(&serde_json::json!({"grant_type": "refresh_token"})).send().await.unwrap();
        assert_error(response, 400, "invalid_request").await;
        let huge = format!("grant_type=refresh_token&refresh_token={}", "a".repeat(64 * 1024));
        let response = http
            .post(&token_url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(huge)
            .send()
            .await
            .unwrap();
        assert_error(response, 400, "invalid_request").await;

        // The code still works after all that: nothing was changed.
        assert_eq!(exchange(&app, &code, &pkce.verifier).await.status(), 200);
    }
}

#[tokio::test]
async fn client_authentication() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let http = app.http();
        let url = app.url("/oauth2/token");
        let form = [("grant_type", "refresh_token"), ("refresh_token", "unknown")];

        // No credentials, unknown client, wrong secret, malformed Basic.
        let response = http.post(&url).form(&form).send().await.unwrap();
        assert_error(response, 401, "invalid_client").await;
        let response = http.post(&url).basic_auth("nobody", Some("whatever-secret")).form(&form).send().await.unwrap();
        assert_error(response, 401, "invalid_client").await;
        let response =
            http.post(&url).basic_auth(demo::CLIENT_ID, Some("wrong-secret-value")).form(&form).send().await.unwrap();
        assert_error(response, 401, "invalid_client").await;
        let response = http.post(&url).header("authorization", "Basic %%%").form(&form).send().await.unwrap();
        assert_error(response, 401, "invalid_client").await;
        let mut body = vec![("client_id", demo::CLIENT_ID), ("client_secret", "wrong-secret-value")];
        body.extend_from_slice(&form);
        assert_error(http.post(&url).form(&body).send().await.unwrap(), 401, "invalid_client").await;

        // Good credentials by every accepted encoding reach the grant check.
        let credentials = format!("{}:{}", demo::CLIENT_ID, demo::CLIENT_SECRET);
        for encoded in [STANDARD.encode(&credentials), URL_SAFE_NO_PAD.encode(&credentials)] {
            let response =
                http.post(&url).header("authorization", format!("Basic {encoded}")).form(&form).send().await.unwrap();
            assert_error(response, 400, "invalid_grant").await;
        }
        assert_error(app.token_request(&form).await, 400, "invalid_grant").await;

        // Two methods at once.
        let mut both = vec![("client_secret", demo::CLIENT_SECRET)];
        both.extend_from_slice(&form);
        let response =
            http.post(&url).basic_auth(demo::CLIENT_ID, Some(demo::CLIENT_SECRET)).form(&both).send().await.unwrap();
        assert_error(response, 400, "invalid_request").await;
    }
}

#[tokio::test]
async fn code_errors_burn_the_code() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;

        let (code_a, _) = code(&app).await;
        assert_error(exchange(&app, &code_a, &Pkce::new().verifier).await, 400, "invalid_grant").await;

        let (code_b, pkce) = code(&app).await;
        let response = app
            .token_request(&[
                ("grant_type", "authorization_code"),
                ("code", &code_b),
                ("code_verifier", &pkce.verifier),
                ("redirect_uri", "http://127.0.0.1:1/other"),
            ])
            .await;
        assert_error(response, 400, "invalid_grant").await;
        assert_error(exchange(&app, &code_b, &pkce.verifier).await, 400, "invalid_grant").await;

        assert_error(exchange(&app, "no-such-code", &pkce.verifier).await, 400, "invalid_grant").await;
    }
}

#[tokio::test]
async fn a_reused_code_revokes_what_its_first_use_issued() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (code, pkce) = code(&app).await;
        let first: serde_json::Value = exchange(&app, &code, &pkce.verifier).await.json().await.unwrap();
        let access = first["access_token"].as_str().unwrap();
        assert_eq!(app.liveness(access).await, 200);

        assert_error(exchange(&app, &code, &pkce.verifier).await, 400, "invalid_grant").await;
        assert_eq!(app.liveness(access).await, 401, "{backend:?}: the first use's tokens are revoked");
        let refresh = first["refresh_token"].as_str().unwrap();
        let response = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", refresh)]).await;
        assert_error(response, 400, "invalid_grant").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_exchanges_of_one_code_leave_no_live_tokens() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (code, pkce) = code(&app).await;
        let url = app.url("/oauth2/token");
        let attempts: Vec<_> = (0..6)
            .map(|_| {
                let (url, code, verifier) = (url.clone(), code.clone(), pkce.verifier.clone());
                tokio::spawn(async move {
                    let form = [
                        ("grant_type", "authorization_code"),
                        ("code", code.as_str()),
                        ("code_verifier", verifier.as_str()),
                        ("client_id", demo::CLIENT_ID),
                        ("client_secret", demo::CLIENT_SECRET),
                    ];
                    reqwest::Client::new().post(url).form(&form).send().await.unwrap()
                })
            })
            .collect();
        let mut issued = Vec::new();
        for attempt in attempts {
            let response = attempt.await.unwrap();
            if response.status() == 200 {
                let body: serde_json::Value = response.json().await.unwrap();
                issued.push(body["access_token"].as_str().unwrap().to_owned());
            } else {
                assert_error(response, 400, "invalid_grant").await;
            }
        }
        assert!(issued.len() <= 1, "{backend:?}: one code, at most one exchange");
        for access in issued {
            assert_eq!(app.liveness(&access).await, 401, "{backend:?}: the replays revoked it");
        }
    }
}

#[tokio::test]
async fn a_reused_refresh_token_revokes_the_whole_grant() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let tokens = app.tokens_for("ivan", "ivan-password").await;
        let first_refresh = tokens.refresh_token.clone().unwrap();
        let response = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", &first_refresh)]).await;
        let renewed: serde_json::Value = response.json().await.unwrap();
        let renewed_access = renewed["access_token"].as_str().unwrap();
        let second_refresh = renewed["refresh_token"].as_str().unwrap();

        let replay = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", &first_refresh)]).await;
        assert_error(replay, 400, "invalid_grant").await;
        assert_eq!(app.liveness(renewed_access).await, 401, "{backend:?}");
        assert_eq!(app.liveness(&tokens.access_token).await, 401);
        let response = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", second_refresh)]).await;
        assert_error(response, 400, "invalid_grant").await;
    }
}

#[tokio::test]
async fn refresh_can_narrow_the_scope_but_not_widen_it() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let tokens = app.tokens_for("ivan", "ivan-password").await;
        let refresh = tokens.refresh_token.unwrap();
        let response = app
            .token_request(&[
                ("grant_type", "refresh_token"),
                ("refresh_token", &refresh),
                ("scope", "openid payments"),
            ])
            .await;
        assert_error(response, 400, "invalid_scope").await;
        // The refresh token was spent by that attempt (spend first, check after).
        let response = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", &refresh)]).await;
        assert_error(response, 400, "invalid_grant").await;

        let tokens = app.tokens_for("maria", "maria-password").await;
        let response = app
            .token_request(&[
                ("grant_type", "refresh_token"),
                ("refresh_token", tokens.refresh_token.as_deref().unwrap()),
                ("scope", "email"),
            ])
            .await;
        assert_eq!(response.status(), 200);
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["scope"], "email");
        assert!(body.get("id_token").is_none(), "no openid, no id_token");
    }
}

#[tokio::test]
async fn expired_codes_and_tokens_are_refused() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (code, pkce) = code(&app).await;
        app.clock.advance(Duration::minutes(5) + Duration::seconds(1));
        let body = assert_error(exchange(&app, &code, &pkce.verifier).await, 400, "invalid_grant").await;
        assert!(body["error_description"].as_str().unwrap().contains("expired"));

        let tokens = app.tokens_for("ivan", "ivan-password").await;
        assert_eq!(app.liveness(&tokens.access_token).await, 200);
        app.clock.advance(Duration::minutes(15));
        assert_eq!(app.liveness(&tokens.access_token).await, 401, "{backend:?}: access token expired");
        let refresh = tokens.refresh_token.unwrap();
        app.clock.advance(Duration::days(30));
        let response = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", &refresh)]).await;
        let body = assert_error(response, 400, "invalid_grant").await;
        assert!(body["error_description"].as_str().unwrap().contains("expired"));
    }
}

#[tokio::test]
async fn a_refresh_token_works_only_for_its_client() {
    let app = TestApp::spawn(backends()[0]).await;
    app.add_client("other-app", "other-app-secret-value").await;
    let tokens = app.tokens_for("ivan", "ivan-password").await;
    let response = app
        .http()
        .post(app.url("/oauth2/token"))
        .basic_auth("other-app", Some("other-app-secret-value"))
        .form(&[("grant_type", "refresh_token"), ("refresh_token", tokens.refresh_token.as_deref().unwrap())])
        .send()
        .await
        .unwrap();
    assert_error(response, 400, "invalid_grant").await;
}

/// A token response that cannot be signed (the signing key cannot be
/// read) fails before the code is redeemed or the refresh token rotated:
/// presented again once the key can be read, each still works. Otherwise
/// the retry would be a replay, and revoke the grant. (The node's memory is
/// off, so that the active key is read from the database each time.)
#[tokio::test]
async fn a_token_response_that_cannot_be_signed_spends_neither_the_code_nor_the_refresh_token() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |config| config.database_cache_staleness_ms = 0).await;
        let tokens = app.tokens_for("ivan", "ivan-password").await;
        let refresh = tokens.refresh_token.clone().unwrap();
        let pkce = Pkce::new();
        let code = app.login_for_code(&app.browser(), &pkce, "maria", "maria-password").await;

        app.run_sql("ALTER TABLE signing_keys RENAME TO signing_keys_away").await;
        let refreshed = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", &refresh)]).await;
        assert!(refreshed.status().is_server_error(), "{backend:?}: {}", refreshed.status());
        let exchanged = app.exchange(&code, &pkce.verifier).await;
        assert!(exchanged.status().is_server_error(), "{backend:?}: {}", exchanged.status());
        app.run_sql("ALTER TABLE signing_keys_away RENAME TO signing_keys").await;

        let refreshed = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", &refresh)]).await;
        assert_eq!(refreshed.status(), 200, "{backend:?}: the refresh token was not spent");
        let exchanged = app.exchange(&code, &pkce.verifier).await;
        assert_eq!(exchanged.status(), 200, "{backend:?}: the code was not redeemed");
    }
}
