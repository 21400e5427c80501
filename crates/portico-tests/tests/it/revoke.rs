//! `POST /oauth2/revoke` (RFC 7009).

use portico_tests::{TestApp, backends, demo};

async fn revoke(app: &TestApp, form: &[(&str, &str)]) -> reqwest::Response {
    app.http()
        .post(app.url("/oauth2/revoke"))
        .basic_auth(demo::CLIENT_ID, Some(demo::CLIENT_SECRET))
        .form(form)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn revoking_an_access_token_kills_only_that_token() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let tokens = app.tokens_for("ivan", "ivan-password").await;
        let response = revoke(&app, &[("token", &tokens.access_token), ("token_type_hint", "access_token")]).await;
        assert_eq!(response.status(), 200);
        assert!(response.bytes().await.unwrap().is_empty());
        assert_eq!(app.liveness(&tokens.access_token).await, 401, "{backend:?}");
        // The grant lives on: the refresh token still works.
        let refresh = tokens.refresh_token.unwrap();
        let response = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", &refresh)]).await;
        assert_eq!(response.status(), 200);
    }
}

#[tokio::test]
async fn unknown_or_foreign_tokens_answer_200_and_change_nothing() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let tokens = app.tokens_for("ivan", "ivan-password").await;
        for junk in ["unknown-token", "a.b.c", "", "x"] {
            let response = revoke(&app, &[("token", junk)]).await;
            let expected = if junk.is_empty() { 400 } else { 200 };
            assert_eq!(response.status(), expected, "{junk:?}");
        }
        // Another client's attempt is answered 200 but revokes nothing.
        app.add_client("other-app", "other-app-secret-value").await;
        for token in [tokens.access_token.as_str(), tokens.refresh_token.as_deref().unwrap()] {
            let response = app
                .http()
                .post(app.url("/oauth2/revoke"))
                .form(&[("token", token), ("client_id", "other-app"), ("client_secret", "other-app-secret-value")])
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
        }
        assert_eq!(app.liveness(&tokens.access_token).await, 200, "{backend:?}");
    }
}

#[tokio::test]
async fn revoke_needs_client_authentication_and_a_token() {
    let app = TestApp::spawn(backends()[0]).await;
    let response = app.http().post(app.url("/oauth2/revoke")).form(&[("token", "x")]).send().await.unwrap();
    assert_eq!(response.status(), 401);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"], "invalid_client");
    let response = revoke(&app, &[("token_type_hint", "refresh_token")]).await;
    assert_eq!(response.status(), 400);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"], "invalid_request");
}
