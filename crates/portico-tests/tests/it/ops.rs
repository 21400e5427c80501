//! Health, readiness, metrics, discovery, userinfo.

use portico_tests::{TestApp, backends};

#[tokio::test]
async fn health_readiness_and_metrics() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let http = app.http();
        assert_eq!(http.get(app.url("/healthz")).send().await.unwrap().status(), 200);
        assert_eq!(http.get(app.url("/readyz")).send().await.unwrap().status(), 200, "{backend:?}");
        let response = http.get(app.url("/metrics")).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let text = response.text().await.unwrap();
        assert!(text.contains("portico_http_requests_total"), "{text}");
        // Histograms (which add up across nodes), not summaries, with HELP.
        assert!(text.contains("# TYPE portico_http_request_duration_seconds histogram"), "{text}");
        assert!(text.contains("portico_http_request_duration_seconds_bucket{"), "{text}");
        assert!(!text.contains("quantile="), "no summaries: {text}");
        assert!(text.contains("# HELP portico_http_requests_total "), "{text}");
        assert!(text.contains("# HELP portico_http_request_duration_seconds "), "{text}");
        let response = http.get(app.url("/healthz")).send().await.unwrap();
        assert!(response.headers().contains_key("x-request-id"));
    }
}

#[tokio::test]
async fn discovery_names_every_endpoint() {
    let app = TestApp::spawn(backends()[0]).await;
    let response = app.http().get(app.url("/.well-known/openid-configuration")).send().await.unwrap();
    assert_eq!(response.headers()["access-control-allow-origin"], "*", "browser clients may read it");
    assert_eq!(response.headers()["cache-control"], "public, max-age=3600");
    let doc: serde_json::Value = response.json().await.unwrap();
    assert_eq!(doc["issuer"], app.base);
    assert_eq!(doc["authorization_response_iss_parameter_supported"], true);
    for claim in ["sub", "auth_time", "amr", "sid", "nonce"] {
        assert!(doc["claims_supported"].as_array().unwrap().iter().any(|c| c == claim), "{claim}");
    }
    let jwks = app.http().get(app.url("/oauth2/jwks")).send().await.unwrap();
    assert_eq!(jwks.headers()["access-control-allow-origin"], "*");
    assert_eq!(jwks.headers()["cache-control"], "public, max-age=60");
    assert_eq!(doc["authorization_endpoint"], app.url("/oauth2/authorize"));
    assert_eq!(doc["token_endpoint"], app.url("/oauth2/token"));
    assert_eq!(doc["jwks_uri"], app.url("/oauth2/jwks"));
    assert_eq!(doc["revocation_endpoint"], app.url("/oauth2/revoke"));
    assert_eq!(doc["userinfo_endpoint"], app.url("/oauth2/userinfo"));
    assert_eq!(doc["code_challenge_methods_supported"], serde_json::json!(["S256"]));
    assert_eq!(doc["response_types_supported"], serde_json::json!(["code"]));
}

#[tokio::test]
async fn userinfo_answers_by_scope() {
    let app = TestApp::spawn(backends()[0]).await;
    let tokens = app.tokens_for("ivan", "ivan-password").await;
    let response = app.http().get(app.url("/oauth2/userinfo")).bearer_auth(&tokens.access_token).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let info: serde_json::Value = response.json().await.unwrap();
    assert_eq!(info["preferred_username"], "ivan");
    assert_eq!(info["email"], "ivan@example.com");
    let response = app.http().get(app.url("/oauth2/userinfo")).bearer_auth("nope").send().await.unwrap();
    assert_eq!(response.status(), 401);
}

#[tokio::test]
async fn demo_client_page_is_served() {
    let app = TestApp::spawn(backends()[0]).await;
    let response = app.http().get(app.url("/demo")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let html = response.text().await.unwrap();
    assert!(html.contains("Sign in with Portico"));
    assert!(html.contains(&app.redirect_uri()), "configured with the demo client's redirect URI");
}
