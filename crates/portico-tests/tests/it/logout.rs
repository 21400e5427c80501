//! OpenID Connect RP-Initiated Logout 1.0 at `/oauth2/logout`, and the
//! single sign-on session it ends: driven by a certified relying-party
//! library (`openidconnect`) and by hand for the refusals.

use openidconnect::core::CoreAuthenticationFlow;
use openidconnect::{CsrfToken, LogoutRequest, Nonce, PkceCodeChallenge, PostLogoutRedirectUrl, Scope};
use portico_tests::{Pkce, TestApp, backends, demo, jwt_claims, location, location_param};
use reqwest::Client as Browser;
use time::Duration;

/// A browser of `login` signed in to the demo client: its tokens.
async fn signed_in(app: &TestApp, login: &str) -> (Browser, portico_tests::TokenResponse) {
    let browser = app.browser();
    let pkce = Pkce::new();
    let code = app.login_for_code(&browser, &pkce, login, &format!("{login}-password")).await;
    let response = app.exchange(&code, &pkce.verifier).await;
    assert_eq!(response.status(), 200);
    (browser, response.json().await.unwrap())
}

/// Whether the browser still has a live session: `prompt=none` gets a code.
async fn has_session(app: &TestApp, browser: &Browser) -> bool {
    let url = app.authorize_url(&Pkce::new(), &[("prompt", Some("none"))]);
    let response = browser.get(url).send().await.unwrap();
    assert_eq!(response.status(), 302);
    match location_param(&response, "error").as_deref() {
        None => true,
        Some("login_required") => false,
        Some(other) => panic!("prompt=none answered {other}"),
    }
}

/// Query parameters, in order.
type Query<'a> = Vec<(&'a str, &'a str)>;

fn clears_session_cookie(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .any(|c| c.to_str().unwrap().starts_with("svc.session=;") && c.to_str().unwrap().contains("Max-Age=0"))
}

#[tokio::test]
async fn openidconnect_crate_logs_out_with_id_token_hint_and_returns_with_state() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (http, client, metadata) = crate::oidc_client::demo_relying_party(&app).await;
        let end_session = metadata.additional_metadata().end_session_endpoint.clone().expect("end_session_endpoint");
        assert_eq!(end_session.url().as_str(), app.url("/oauth2/logout"));
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (auth_url, _, nonce) = client
            .authorize_url(CoreAuthenticationFlow::AuthorizationCode, CsrfToken::new_random, Nonce::new_random)
            .add_scope(Scope::new("profile".into()))
            .set_pkce_challenge(challenge)
            .url();
        let browser = app.browser();
        assert_eq!(location(&browser.get(auth_url.as_str()).send().await.unwrap()), "/login");
        let code = {
            let view = app.login_view(&browser).await;
            let csrf = view["pageData"]["authenticationFlowContext"]["csrf"].as_str().unwrap().to_owned();
            let form = [("_csrf", csrf.as_str()), ("principal", "ivan"), ("credentials", "ivan-password")];
            let response = browser.post(app.url("/login")).form(&form).send().await.unwrap();
            let next = app.second_factor_if_asked(&browser, &csrf, "ivan", location(&response)).await;
            location_param(&browser.get(app.url(&next)).send().await.unwrap(), "code").expect("a code")
        };
        let tokens = client
            .exchange_code(openidconnect::AuthorizationCode::new(code))
            .unwrap()
            .set_pkce_verifier(verifier)
            .request_async(&http)
            .await
            .expect("code exchange");
        let id_token = openidconnect::TokenResponse::id_token(&tokens).expect("id_token");
        id_token.claims(&client.id_token_verifier(), &nonce).expect("a valid id_token");
        let sid = jwt_claims(&id_token.to_string())["sid"].as_str().expect("sid in the id_token").to_owned();
        assert_eq!(
            app.store
                .list_sessions(user_id(&app, "ivan").await, portico_model::clock::Clock::now(app.clock.as_ref()))
                .await
                .unwrap()[0]
                .id
                .to_string(),
            sid
        );

        let logout_url = LogoutRequest::from(end_session)
            .set_id_token_hint(id_token)
            .set_post_logout_redirect_uri(PostLogoutRedirectUrl::new(demo::logout_return_uri(&app.base)).unwrap())
            .set_state(CsrfToken::new("bye-1".into()))
            .http_get_url();
        let response = browser.get(logout_url.as_str()).send().await.unwrap();
        assert_eq!(response.status(), 302, "{backend:?}");
        assert_eq!(location(&response), format!("{}?state=bye-1", demo::logout_return_uri(&app.base)));
        assert!(clears_session_cookie(&response), "{backend:?}: the session cookie is cleared");
        assert!(!has_session(&app, &browser).await, "{backend:?}: the session has ended");
        assert!(
            app.store
                .list_sessions(user_id(&app, "ivan").await, portico_model::clock::Clock::now(app.clock.as_ref()))
                .await
                .unwrap()
                .is_empty()
        );
        // The demo client registered --logout-revokes-grants: its tokens died with the session.
        let refresh = openidconnect::OAuth2TokenResponse::refresh_token(&tokens).unwrap();
        assert!(client.exchange_refresh_token(refresh).unwrap().request_async(&http).await.is_err(), "{backend:?}");
        let access = openidconnect::OAuth2TokenResponse::access_token(&tokens).secret().clone();
        assert_eq!(app.liveness(&access).await, 401, "{backend:?}");
    }
}

async fn user_id(app: &TestApp, login: &str) -> portico_model::ids::UserId {
    app.store.find_user_by_login(login).await.unwrap().unwrap().id
}

#[tokio::test]
async fn one_session_signs_in_two_clients_with_one_sid_and_logout_revokes_only_for_the_client_that_asked() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        app.add_client("other", "other-secret-0123456789").await;
        let (browser, demo_tokens) = signed_in(&app, "ivan").await;
        // The other client gets a code from the same session, without a login.
        let pkce = Pkce::new();
        let url = app.authorize_url(
            &pkce,
            &[
                ("client_id", Some("other")),
                ("redirect_uri", Some("https://other.example/cb")),
                ("scope", Some("openid")),
            ],
        );
        let response = browser.get(url).send().await.unwrap();
        let code = location_param(&response, "code").expect("a code from the session");
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("code_verifier", pkce.verifier.as_str()),
            ("redirect_uri", "https://other.example/cb"),
            ("client_id", "other"),
            ("client_secret", "other-secret-0123456789"),
        ];
        let other: portico_tests::TokenResponse =
            app.http().post(app.url("/oauth2/token")).form(&form).send().await.unwrap().json().await.unwrap();
        let (demo_id, other_id) = (demo_tokens.id_token.unwrap(), other.id_token.unwrap());
        assert_eq!(jwt_claims(&demo_id)["sid"], jwt_claims(&other_id)["sid"], "{backend:?}: one session, one sid");

        // The other client logs the user out (it returns to its registered address).
        let response = browser
            .get(app.url("/oauth2/logout"))
            .query(&[("id_token_hint", other_id.as_str()), ("post_logout_redirect_uri", "https://other.example/bye")])
            .send()
            .await
            .unwrap();
        assert_eq!(location(&response), "https://other.example/bye", "{backend:?}: no state, none added");
        assert!(!has_session(&app, &browser).await);
        // The demo client asked for its grants to end with the session; `other` did not.
        assert_eq!(app.liveness(&demo_tokens.access_token).await, 401, "{backend:?}");
        assert_eq!(app.liveness(&other.access_token).await, 200, "{backend:?}");
    }
}

#[tokio::test]
async fn a_hint_of_another_user_ends_that_users_session_and_not_the_browsers() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (ivan_browser, _) = signed_in(&app, "ivan").await;
        let (maria_browser, maria) = signed_in(&app, "maria").await;
        let response = ivan_browser
            .get(app.url("/oauth2/logout"))
            .query(&[("id_token_hint", maria.id_token.as_deref().unwrap()), ("ui_locales", "en")])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{backend:?}");
        assert!(!clears_session_cookie(&response), "{backend:?}: ivan's cookie stays");
        let html = response.text().await.unwrap();
        assert!(html.contains("signed in as another user, and stays so"), "{backend:?}: the page says so: {html}");
        assert!(has_session(&app, &ivan_browser).await, "{backend:?}: ivan's session is not the hint's to end");
        assert!(!has_session(&app, &maria_browser).await, "{backend:?}: the session the hint's sid names ended");
    }
}

#[tokio::test]
async fn logout_without_a_return_address_shows_the_signed_out_page_in_the_asked_language() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (browser, tokens) = signed_in(&app, "ivan").await;
        // An id_token long expired still names the session (§2 of the spec).
        app.clock.advance(Duration::hours(2));
        let response = browser
            .get(app.url("/oauth2/logout"))
            .query(&[("id_token_hint", tokens.id_token.as_deref().unwrap()), ("ui_locales", "fr en-GB")])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{backend:?}");
        assert!(clears_session_cookie(&response));
        let html = response.text().await.unwrap();
        assert!(html.contains("<html lang=\"en\">") && html.contains("You are signed out."), "{html}");
        assert!(!has_session(&app, &browser).await, "{backend:?}");

        // With nothing to end, logout still answers the page (in Russian by default).
        let response = app.browser().get(app.url("/oauth2/logout")).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert!(response.text().await.unwrap().contains("Вы вышли из системы."));
    }
}

#[tokio::test]
async fn logout_by_form_post_answers_303_to_the_registered_address() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (browser, tokens) = signed_in(&app, "ivan").await;
        let back = demo::logout_return_uri(&app.base);
        let form = [
            ("id_token_hint", tokens.id_token.as_deref().unwrap()),
            ("client_id", demo::CLIENT_ID),
            ("post_logout_redirect_uri", back.as_str()),
            ("state", "s p&ce"),
        ];
        let response = browser.post(app.url("/oauth2/logout")).form(&form).send().await.unwrap();
        assert_eq!(response.status(), 303, "{backend:?}");
        assert_eq!(location(&response), format!("{back}?state=s+p%26ce"));
        assert!(!has_session(&app, &browser).await, "{backend:?}");
    }
}

#[tokio::test]
async fn refused_logouts_end_nothing_redirect_nowhere_and_say_why() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        app.add_client("other", "other-secret-0123456789").await;
        let (browser, tokens) = signed_in(&app, "ivan").await;
        let id_token = tokens.id_token.clone().unwrap();
        let back = demo::logout_return_uri(&app.base);
        let mut forged = id_token.clone();
        forged.replace_range(forged.len() - 6.., "AAAAAA");
        let cases: Vec<(&str, Query, &str)> = vec![
            (
                "an unregistered return address",
                vec![("id_token_hint", &id_token), ("post_logout_redirect_uri", "https://evil.example/")],
                "not registered for it",
            ),
            (
                "another client's return address",
                vec![("client_id", demo::CLIENT_ID), ("post_logout_redirect_uri", "https://other.example/bye")],
                "not registered for it",
            ),
            ("a return address without a client", vec![("post_logout_redirect_uri", &back)], "not registered for it"),
            (
                "a forged id_token_hint",
                vec![("id_token_hint", &forged), ("post_logout_redirect_uri", &back)],
                "damaged or not its own",
            ),
            ("an access token as the hint", vec![("id_token_hint", &tokens.access_token)], "damaged or not its own"),
            ("garbage as the hint", vec![("id_token_hint", "not-a-jwt")], "damaged or not its own"),
            (
                "a client other than the hint's",
                vec![("id_token_hint", &id_token), ("client_id", "other")],
                "not registered with the bank",
            ),
            (
                "an unknown client",
                vec![("client_id", "nobody"), ("post_logout_redirect_uri", &back)],
                "not registered with the bank",
            ),
            ("a repeated parameter", vec![("state", "a"), ("state", "b")], "malformed"),
            ("a NUL character", vec![("client_id", "demo\0")], "malformed"),
            (
                "a repeated parameter beside a forged hint: the form first",
                vec![("id_token_hint", &forged), ("state", "a"), ("state", "b")],
                "malformed",
            ),
        ];
        for (case, mut query, says) in cases {
            query.push(("ui_locales", "en"));
            let response = browser.get(app.url("/oauth2/logout")).query(&query).send().await.unwrap();
            assert_eq!(response.status(), 400, "{backend:?}: {case}");
            assert!(response.headers().get("location").is_none(), "{backend:?}: {case} redirects nowhere");
            assert!(!clears_session_cookie(&response), "{backend:?}: {case}");
            let html = response.text().await.unwrap();
            assert!(html.contains("You are still signed in") && html.contains(says), "{backend:?}: {case}: {html}");
            assert!(has_session(&app, &browser).await, "{backend:?}: {case} ended nothing");
        }
        let response =
            browser.get(app.url("/oauth2/logout?post_logout_redirect_uri=https://evil.example/")).send().await;
        let html = response.unwrap().text().await.unwrap();
        assert!(html.contains("Выход не выполнен"), "in Russian without ui_locales: {html}");
        assert_eq!(app.liveness(&tokens.access_token).await, 200, "{backend:?}: the grant lives");
    }
}
