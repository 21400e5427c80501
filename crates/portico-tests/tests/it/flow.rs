//! The whole protocol, as a browser and a client system walk it.

use portico_model::clock::Clock as _;
use portico_tests::{Pkce, TestApp, backends, demo, jwt_claims, jwt_header};

#[tokio::test]
async fn authorize_login_code_token_refresh_revoke_liveness() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let browser = app.browser();
        let pkce = Pkce::new();

        let code = app.login_for_code(&browser, &pkce, "ivan", "ivan-password").await;
        let response = app.exchange(&code, &pkce.verifier).await;
        assert_eq!(response.status(), 200, "{backend:?}");
        assert_eq!(response.headers()["cache-control"], "no-store");
        let body: serde_json::Value = response.json().await.unwrap();
        let keys: Vec<_> = body.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            keys,
            ["access_token", "expires_in", "id_token", "refresh_expires_at", "refresh_token", "scope", "token_type"],
            "exactly TokenResponseDTO"
        );
        assert_eq!(body["token_type"], "Bearer");
        assert_eq!(body["expires_in"], 900);
        assert_eq!(body["scope"], "openid profile email phone");
        let now = app.clock.now().unix_timestamp();
        assert_eq!(body["refresh_expires_at"], now + 30 * 24 * 3600);

        let access = body["access_token"].as_str().unwrap();
        let header = jwt_header(access);
        assert_eq!(header["alg"], "RS256");
        assert_eq!(header["typ"], "at+jwt");
        assert!(header["kid"].is_string());
        let claims = jwt_claims(access);
        for claim in ["iss", "sub", "aud", "exp", "iat", "jti"] {
            assert!(!claims[claim].is_null(), "access token has {claim}");
        }
        assert_eq!(claims["iss"], app.base);
        assert_eq!(claims["aud"], demo::CLIENT_ID);

        let id = jwt_claims(body["id_token"].as_str().unwrap());
        assert_eq!(id["nonce"], "n-456");
        assert_eq!(id["sub"], claims["sub"]);
        assert_eq!(id["name"], "Иван Петров");
        assert_eq!(id["email"], "ivan@example.com");
        assert_eq!(id["phone_number"], "+79001234567");
        assert_eq!(id["at_hash"], portico_crypto::hash::at_hash(access));
        assert!(id["auth_time"].is_i64());

        assert_eq!(app.liveness(access).await, 200);

        // Refresh: new tokens, rotated refresh token.
        let refresh = body["refresh_token"].as_str().unwrap();
        let response = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", refresh)]).await;
        assert_eq!(response.status(), 200);
        let renewed: serde_json::Value = response.json().await.unwrap();
        let new_refresh = renewed["refresh_token"].as_str().unwrap();
        assert_ne!(new_refresh, refresh, "a new refresh token on every refresh");
        let new_access = renewed["access_token"].as_str().unwrap();
        assert_eq!(app.liveness(new_access).await, 200);

        // Revoke the refresh token: the grant and every access token die.
        let response = app
            .http()
            .post(app.url("/oauth2/revoke"))
            .basic_auth(demo::CLIENT_ID, Some(demo::CLIENT_SECRET))
            .form(&[("token", new_refresh), ("token_type_hint", "refresh_token")])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert!(response.bytes().await.unwrap().is_empty(), "no body");
        assert_eq!(app.liveness(access).await, 401);
        assert_eq!(app.liveness(new_access).await, 401);
        let response = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", new_refresh)]).await;
        assert_eq!(response.status(), 400);
    }
}

#[tokio::test]
async fn sso_session_issues_the_next_code_at_once_and_prompt_login_forces_a_login() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let browser = app.browser();
        app.login_for_code(&browser, &Pkce::new(), "maria", "maria-password").await;

        let response = browser.get(app.authorize_url(&Pkce::new(), &[])).send().await.unwrap();
        assert_eq!(response.status(), 302, "{backend:?}: the session answers at once");
        portico_tests::code_from(&response, &app.redirect_uri());

        let response = browser.get(app.authorize_url(&Pkce::new(), &[("prompt", Some("login"))])).send().await.unwrap();
        assert_eq!(response.status(), 303);
        assert_eq!(portico_tests::location(&response), "/login");

        // prompt=none with a session: a code; without one: login_required.
        let response = browser.get(app.authorize_url(&Pkce::new(), &[("prompt", Some("none"))])).send().await.unwrap();
        assert_eq!(response.status(), 302);
        assert!(portico_tests::location_param(&response, "code").is_some());
        let iss = portico_tests::location_param(&response, "iss");
        assert_eq!(iss.as_deref(), Some(app.base.as_str()), "RFC 9207: the issuer beside the code");
        let stranger = app.browser();
        let response = stranger.get(app.authorize_url(&Pkce::new(), &[("prompt", Some("none"))])).send().await.unwrap();
        assert_eq!(response.status(), 302);
        let iss = portico_tests::location_param(&response, "iss");
        assert_eq!(iss.as_deref(), Some(app.base.as_str()), "RFC 9207: the issuer beside login_required");
        assert_eq!(portico_tests::location_param(&response, "error").as_deref(), Some("login_required"));
        assert_eq!(portico_tests::location_param(&response, "state").as_deref(), Some("st-123"));
    }
}

#[tokio::test]
async fn nonce_is_optional() {
    let app = TestApp::spawn(backends()[0]).await;
    let browser = app.browser();
    app.login_for_code(&browser, &Pkce::new(), "ivan", "ivan-password").await;
    let pkce = Pkce::new();
    let response = browser.get(app.authorize_url(&pkce, &[("nonce", None)])).send().await.unwrap();
    let code = portico_tests::code_from(&response, &app.redirect_uri());
    let response = app
        .token_request(&[("grant_type", "authorization_code"), ("code", &code), ("code_verifier", &pkce.verifier)])
        .await;
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    assert!(jwt_claims(body["id_token"].as_str().unwrap()).get("nonce").is_none());
}

/// `max_age`, `prompt=select_account`, `ui_locales` and `login_hint`, as
/// relying parties send them (OIDC Core §3.1.2.1), and their bad values.
#[tokio::test]
async fn max_age_select_account_ui_locales_and_login_hint() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let browser = app.browser();
        app.login_for_code(&browser, &Pkce::new(), "maria", "maria-password").await;
        let authorize = |extra: Vec<(&'static str, Option<&'static str>)>| {
            let (app, browser) = (&app, &browser);
            async move { browser.get(app.authorize_url(&Pkce::new(), &extra)).send().await.unwrap() }
        };

        // A session younger than max_age answers at once; older, the user
        // logs in again (prompt=none: login_required).
        let response = authorize(vec![("max_age", Some("600"))]).await;
        assert_eq!(response.status(), 302, "{backend:?}");
        let code = portico_tests::code_from(&response, &app.redirect_uri());
        assert!(!code.is_empty());
        app.clock.advance(time::Duration::seconds(61));
        let response = authorize(vec![("max_age", Some("60"))]).await;
        assert_eq!((response.status().as_u16(), portico_tests::location(&response)), (303, "/login".to_owned()));
        let response = authorize(vec![("max_age", Some("0")), ("prompt", Some("none"))]).await;
        assert_eq!(portico_tests::location_param(&response, "error").as_deref(), Some("login_required"));
        for bad in ["-1", "soon", "1.5", "99999999999"] {
            let response =
                browser.get(app.authorize_url(&Pkce::new(), &[("max_age", Some(bad))])).send().await.unwrap();
            assert_eq!(portico_tests::location_param(&response, "error").as_deref(), Some("invalid_request"), "{bad}");
            let description = portico_tests::location_param(&response, "error_description");
            assert_eq!(description.as_deref(), Some("OAuth 2.0 Parameter: max_age"), "{bad}");
        }

        // select_account is answered as login: the session does not answer.
        let response = authorize(vec![("prompt", Some("select_account"))]).await;
        assert_eq!((response.status().as_u16(), portico_tests::location(&response)), (303, "/login".to_owned()));

        // ui_locales chooses the first language Portico speaks; login_hint
        // fills in the login.
        let stranger = app.browser();
        let extra = [("ui_locales", Some("fr-CA en-GB ru")), ("login_hint", Some("ivan"))];
        let response = stranger.get(app.authorize_url(&Pkce::new(), &extra)).send().await.unwrap();
        assert_eq!(response.status(), 303);
        let page = stranger.get(app.url("/login")).send().await.unwrap().text().await.unwrap();
        assert!(page.contains("<html lang=\"en\""), "{backend:?}: English first among those spoken");
        assert!(page.contains("value=\"ivan\""), "{backend:?}: the login is filled in");
        let unknown = app.browser();
        let response =
            unknown.get(app.authorize_url(&Pkce::new(), &[("ui_locales", Some("de"))])).send().await.unwrap();
        assert_eq!(response.status(), 303, "an unknown language is no error");
        let long = "x".repeat(257);
        let response =
            app.browser().get(app.authorize_url(&Pkce::new(), &[("login_hint", Some(long.as_str()))])).send().await;
        let description = portico_tests::location_param(&response.unwrap(), "error_description");
        assert_eq!(description.as_deref(), Some("OAuth 2.0 Parameter: login_hint"));
    }
}
