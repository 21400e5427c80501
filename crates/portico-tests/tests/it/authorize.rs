//! Every row of the spec's authorize error table.

use portico_tests::{Pkce, TestApp, backends, code_from, location, location_param, location_params};

/// Parameters to change in a valid request (`None` removes one).
type Changes<'a> = Vec<(&'a str, Option<&'a str>)>;

async fn get(app: &TestApp, url: &str) -> reqwest::Response {
    app.browser().get(url).send().await.unwrap()
}

async fn assert_plain_400(app: &TestApp, url: &str, parameter: &str) {
    let response = get(app, url).await;
    assert_eq!(response.status(), 400, "{url}");
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/plain"));
    assert!(response.headers().get("location").is_none(), "never redirects");
    assert_eq!(response.text().await.unwrap(), format!("OAuth 2.0 Parameter: {parameter}"));
}

async fn assert_error_redirect(app: &TestApp, url: &str, error: &str, parameter: &str, state: Option<&str>) {
    let response = get(app, url).await;
    assert_eq!(response.status(), 302, "{url}");
    assert!(location(&response).starts_with(&app.redirect_uri()), "to the registered redirect_uri");
    assert_eq!(location_param(&response, "error").as_deref(), Some(error), "{url}");
    let description = format!("OAuth 2.0 Parameter: {parameter}");
    assert_eq!(location_param(&response, "error_description").as_deref(), Some(description.as_str()));
    assert_eq!(location_param(&response, "state").as_deref(), state, "{url}");
    assert_eq!(location_param(&response, "iss").as_deref(), Some(app.base.as_str()), "RFC 9207: {url}");
    assert!(location_param(&response, "code").is_none());
}

#[tokio::test]
async fn client_id_and_redirect_uri_errors_are_plain_400() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let pkce = Pkce::new();
        assert_plain_400(&app, &app.authorize_url(&pkce, &[("client_id", None)]), "client_id").await;
        assert_plain_400(&app, &app.authorize_url(&pkce, &[("client_id", Some("nobody"))]), "client_id").await;
        let repeated = format!("{}&client_id=demo-app", app.authorize_url(&pkce, &[]));
        assert_plain_400(&app, &repeated, "client_id").await;
        assert_plain_400(&app, &app.authorize_url(&pkce, &[("redirect_uri", None)]), "redirect_uri").await;
        let evil = app.authorize_url(&pkce, &[("redirect_uri", Some("https://evil.example/cb"))]);
        assert_plain_400(&app, &evil, "redirect_uri").await;
        let prefix = app.authorize_url(&pkce, &[("redirect_uri", Some(&format!("{}/x", app.redirect_uri())))]);
        assert_plain_400(&app, &prefix, "redirect_uri").await;
        // Both wrong: client_id is named first.
        let both = app.authorize_url(&pkce, &[("client_id", None), ("redirect_uri", None)]);
        assert_plain_400(&app, &both, "client_id").await;
    }
}

#[tokio::test]
async fn parameter_errors_redirect_with_error_description_and_state() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let p = Pkce::new();
        let st = Some("st-123");
        let cases: Vec<(Changes, &str, &str)> = vec![
            (vec![("response_type", None)], "invalid_request", "response_type"),
            (vec![("response_type", Some("token"))], "unsupported_response_type", "response_type"),
            (vec![("scope", None)], "invalid_request", "scope"),
            (vec![("scope", Some("openid payments"))], "invalid_scope", "scope"),
            (vec![("scope", Some("open\"id"))], "invalid_scope", "scope"),
            (vec![("code_challenge", None)], "invalid_request", "code_challenge"),
            (vec![("code_challenge", Some("too-short"))], "invalid_request", "code_challenge"),
            (vec![("code_challenge_method", None)], "invalid_request", "code_challenge_method"),
            (vec![("code_challenge_method", Some("plain"))], "invalid_request", "code_challenge_method"),
            (vec![("prompt", Some("always"))], "invalid_request", "prompt"),
            // A set where `none` stands alone (OpenID Connect Core §3.1.2.1).
            (vec![("prompt", Some("none login"))], "invalid_request", "prompt"),
            (vec![("prompt", Some("consent none"))], "invalid_request", "prompt"),
            (vec![("prompt", Some("login  consent"))], "invalid_request", "prompt"),
            // OpenID Connect Core §3.1.2.6: a self-issued provider's parameter.
            (vec![("registration", Some("{\"client_name\":\"x\"}"))], "registration_not_supported", "registration"),
        ];
        for (changes, error, parameter) in cases {
            assert_error_redirect(&app, &app.authorize_url(&p, &changes), error, parameter, st).await;
        }
        let long_nonce = "n".repeat(513);
        assert_error_redirect(
            &app,
            &app.authorize_url(&p, &[("nonce", Some(&long_nonce))]),
            "invalid_request",
            "nonce",
            st,
        )
        .await;
        let repeated = format!("{}&scope=openid", app.authorize_url(&p, &[]));
        assert_error_redirect(&app, &repeated, "invalid_request", "scope", st).await;
    }
}

#[tokio::test]
async fn missing_state_redirects_without_state() {
    let app = TestApp::spawn(backends()[0]).await;
    let p = Pkce::new();
    let url = app.authorize_url(&p, &[("state", None)]);
    assert_error_redirect(&app, &url, "invalid_request", "state", None).await;
    let response = get(&app, &url).await;
    assert!(!location_params(&response).iter().any(|(k, _)| k == "state"));
    // Another error while state is missing: still no state.
    let url = app.authorize_url(&p, &[("state", None), ("response_type", Some("token"))]);
    assert_error_redirect(&app, &url, "unsupported_response_type", "response_type", None).await;
}

#[tokio::test]
async fn a_parameter_that_is_not_utf8_is_refused_never_answered_changed() {
    // `state` comes back unchanged or not at all: `%FF` decodes to no text,
    // and was answered as `%EF%BF%BD` (U+FFFD) beside a code.
    let app = TestApp::spawn(backends()[0]).await;
    let p = Pkce::new();
    let url = format!("{}&state=%FF", app.authorize_url(&p, &[("state", None)]));
    assert_error_redirect(&app, &url, "invalid_request", "state", None).await;
    let url = format!("{}&nonce=%C3%28", app.authorize_url(&p, &[("nonce", None)]));
    assert_error_redirect(&app, &url, "invalid_request", "nonce", Some("st-123")).await;
    // Text that merely looks unusual is the client's to send.
    let url = app.authorize_url(&p, &[("state", Some("é \u{FFFD}"))]);
    let response = get(&app, &url).await;
    assert!(location(&response).starts_with("/login"), "a login starts: {}", location(&response));
}

#[tokio::test]
async fn a_valid_request_starts_a_login_with_the_spec_cookies() {
    let app = TestApp::spawn(backends()[0]).await;
    let response = get(&app, &app.authorize_url(&Pkce::new(), &[])).await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/login");
    let cookies: Vec<String> =
        response.headers().get_all("set-cookie").iter().map(|v| v.to_str().unwrap().to_owned()).collect();
    for name in ["authentication_flow=", "XSRF-TOKEN=", "login_client_entry=", "svc.device.deviceId="] {
        let cookie = cookies.iter().find(|c| c.starts_with(name)).unwrap_or_else(|| panic!("sets {name}"));
        assert!(cookie.contains("HttpOnly"), "{cookie}");
        assert!(cookie.contains("SameSite=Lax"), "{cookie}");
        assert!(!cookie.contains("Secure"), "plain-HTTP loopback demo: {cookie}");
    }
}

#[tokio::test]
async fn cookies_are_secure_behind_https() {
    let app = TestApp::spawn_with(backends()[0], |c| c.cookie_secure = Some(true)).await;
    let response = get(&app, &app.authorize_url(&Pkce::new(), &[])).await;
    for cookie in response.headers().get_all("set-cookie") {
        assert!(cookie.to_str().unwrap().contains("; Secure"), "{cookie:?}");
    }
}

/// A completed login whose code cannot be stored (the store fails on the
/// way) is still there when the browser comes back: the retry gets the
/// code, and the code works. Otherwise the process would be gone and the
/// user sent to log in again (`prompt=login`: the single sign-on session
/// does not stand in for the process).
#[tokio::test]
async fn a_code_that_cannot_be_stored_leaves_the_completed_login_for_the_retry() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let browser = app.browser();
        let pkce = Pkce::new();
        let started = browser.get(app.authorize_url(&pkce, &[("prompt", Some("login"))])).send().await.unwrap();
        assert_eq!(location(&started), "/login");
        let view = app.login_view(&browser).await;
        let csrf = view["pageData"]["authenticationFlowContext"]["csrf"].as_str().unwrap().to_owned();
        let form = [("_csrf", csrf.as_str()), ("principal", "ivan"), ("credentials", "ivan-password")];
        let password = browser.post(app.url("/login")).form(&form).send().await.unwrap();
        let back = app.second_factor_if_asked(&browser, &csrf, "ivan", location(&password)).await;
        assert!(back.starts_with("/oauth2/authorize?"), "{back}");

        app.run_sql("ALTER TABLE authorization_codes RENAME TO authorization_codes_away").await;
        let failed = browser.get(app.url(&back)).send().await.unwrap();
        assert_ne!(failed.status(), 302, "{backend:?}: no code without its row");
        app.run_sql("ALTER TABLE authorization_codes_away RENAME TO authorization_codes").await;

        let retried = browser.get(app.url(&back)).send().await.unwrap();
        assert_eq!(retried.status(), 302, "{backend:?}: the completed login was kept for the retry");
        let code = code_from(&retried, &app.redirect_uri());
        assert_eq!(app.exchange(&code, &pkce.verifier).await.status(), 200);
    }
}

/// A last login step whose session cannot be stored (the store fails on
/// the way) completes nothing: sent again once the store is back, the same
/// step completes the login and the code follows. Had the process been
/// marked complete first, it would name a session that does not exist and
/// authorize would send the user to log in again.
#[tokio::test]
async fn a_last_step_whose_session_cannot_be_stored_completes_when_sent_again() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let browser = app.browser();
        let pkce = Pkce::new();
        let started = browser.get(app.authorize_url(&pkce, &[])).send().await.unwrap();
        assert_eq!(location(&started), "/login");
        let view = app.login_view(&browser).await;
        let csrf = view["pageData"]["authenticationFlowContext"]["csrf"].as_str().unwrap().to_owned();
        let form = [("_csrf", csrf.as_str()), ("principal", "ivan"), ("credentials", "ivan-password")];
        let password = browser.post(app.url("/login")).form(&form).send().await.unwrap();
        assert_eq!(location(&password), "/login", "a second factor on a new device");
        // The SMS code goes out when the step's page is shown.
        assert_eq!(app.login_view(&browser).await["pageData"]["stepViewData"]["stepType"], "sms-otp");
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
        let code = app.last_code(ivan.phone.as_deref().unwrap());
        let step = [("_csrf", csrf.as_str()), ("credentials", code.as_str())];

        app.run_sql("ALTER TABLE sso_sessions RENAME TO sso_sessions_away").await;
        let failed = browser.post(app.url("/login")).form(&step).send().await.unwrap();
        assert!(!location(&failed).starts_with("/oauth2/authorize"), "{backend:?}: not completed without its session");
        app.run_sql("ALTER TABLE sso_sessions_away RENAME TO sso_sessions").await;

        let again = browser.post(app.url("/login")).form(&step).send().await.unwrap();
        let back = location(&again);
        assert!(back.starts_with("/oauth2/authorize?"), "{backend:?}: the step completes when sent again: {back}");
        let issued = browser.get(app.url(&back)).send().await.unwrap();
        assert_eq!(issued.status(), 302, "{backend:?}: the code, not a new login");
        let code = code_from(&issued, &app.redirect_uri());
        assert_eq!(app.exchange(&code, &pkce.verifier).await.status(), 200);
    }
}

/// The query of `url` as form pairs.
fn query_pairs(url: &str) -> Vec<(String, String)> {
    url::Url::parse(url).unwrap().query_pairs().into_owned().collect()
}

#[tokio::test]
async fn a_posted_request_is_answered_as_the_same_request_by_get() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let pkce = Pkce::new();
        let endpoint = app.url("/oauth2/authorize");

        // OpenID Connect Core §3.1.2.1: the form of a POST is the request;
        // the login ends with the code, which redeems.
        let browser = app.browser();
        let form = query_pairs(&app.authorize_url(&pkce, &[]));
        let started = browser.post(&endpoint).form(&form).send().await.unwrap();
        let done = app.login_after(&browser, started, "ivan", "ivan-password").await;
        assert_eq!(done.status(), 302, "{backend:?}");
        let code = code_from(&done, &app.redirect_uri());
        let tokens = app.exchange(&code, &pkce.verifier).await;
        assert_eq!(tokens.status(), 200, "{backend:?}");

        // With that browser's session, the next POST gets its code at once.
        let form = query_pairs(&app.authorize_url(&Pkce::new(), &[("prompt", Some("none"))]));
        let again = browser.post(&endpoint).form(&form).send().await.unwrap();
        assert!(location_param(&again, "code").is_some(), "{backend:?}: {}", location(&again));

        // Its errors are GET's: to the client, or the plain 400.
        let form = query_pairs(&app.authorize_url(&pkce, &[("scope", Some("openid payments"))]));
        let refused = app.browser().post(&endpoint).form(&form).send().await.unwrap();
        assert_eq!(refused.status(), 302, "{backend:?}");
        assert_eq!(location_param(&refused, "error").as_deref(), Some("invalid_scope"));
        assert_eq!(location_param(&refused, "iss").as_deref(), Some(app.base.as_str()));
        let form = query_pairs(&app.authorize_url(&pkce, &[("client_id", Some("nobody"))]));
        let refused = app.browser().post(&endpoint).form(&form).send().await.unwrap();
        assert_eq!(refused.status(), 400, "{backend:?}");
        assert_eq!(refused.text().await.unwrap(), "OAuth 2.0 Parameter: client_id");
    }
}

#[tokio::test]
async fn a_post_with_parameters_in_its_address_another_body_type_or_a_huge_body_is_the_plain_400() {
    let app = TestApp::spawn(backends()[0]).await;
    let pkce = Pkce::new();
    let url = app.authorize_url(&pkce, &[]);
    let form = query_pairs(&url);
    let endpoint = app.url("/oauth2/authorize");
    let both = app.browser().post(&url).form(&form).send().await.unwrap();
    let json = app.browser().post(&endpoint).json(&serde_json::json!({"client_id": "demo-app"})).send().await.unwrap();
    let mut huge = form.clone();
    huge.push(("login_hint".into(), "x".repeat(70_000)));
    let huge = app.browser().post(&endpoint).form(&huge).send().await.unwrap();
    for (case, response, says) in [
        ("address and body", both, "in its body only"),
        ("JSON", json, "x-www-form-urlencoded"),
        ("huge", huge, "at most"),
    ] {
        assert_eq!(response.status(), 400, "{case}");
        assert!(response.headers().get("location").is_none(), "{case}");
        assert!(response.headers().get("set-cookie").is_none(), "{case}: no login started");
        let text = response.text().await.unwrap();
        assert!(text.contains(says), "{case}: {text}");
    }
}

#[tokio::test]
async fn an_id_token_hint_names_the_user_a_code_may_go_to() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        // Ivan's browser, signed in; an ID token of his and one of Maria's.
        let browser = app.browser();
        let pkce = Pkce::new();
        let code = app.login_for_code(&browser, &pkce, "ivan", "ivan-password").await;
        let exchanged = app.exchange(&code, &pkce.verifier).await;
        let ivan = exchanged.json::<serde_json::Value>().await.unwrap()["id_token"].as_str().unwrap().to_owned();
        let maria = app.tokens_for("maria", "maria-password").await.id_token.expect("an id_token");

        // His own hint, even expired: a code at once.
        app.clock.advance(time::Duration::hours(2));
        let own = app.authorize_url(&Pkce::new(), &[("prompt", Some("none")), ("id_token_hint", Some(&ivan))]);
        let answer = browser.get(&own).send().await.unwrap();
        assert!(location_param(&answer, "code").is_some(), "{backend:?}: {}", location(&answer));

        // Maria's hint in his browser: not without a login.
        let hers = app.authorize_url(&Pkce::new(), &[("prompt", Some("none")), ("id_token_hint", Some(&maria))]);
        let answer = browser.get(&hers).send().await.unwrap();
        assert_eq!(location_param(&answer, "error").as_deref(), Some("login_required"), "{backend:?}");
        assert_eq!(location_param(&answer, "state").as_deref(), Some("st-123"));

        // Without prompt=none the login steps come; Ivan logging in again
        // is answered login_required, the browser still his.
        let hers = app.authorize_url(&Pkce::new(), &[("id_token_hint", Some(&maria))]);
        let done = app.login_at(&browser, &hers, "ivan", "ivan-password").await;
        assert_eq!(location_param(&done, "error").as_deref(), Some("login_required"), "{backend:?}");
        let description = location_param(&done, "error_description").unwrap();
        assert!(description.contains("id_token_hint"), "{description}");
        let answer = browser.get(&own).send().await.unwrap();
        assert!(location_param(&answer, "code").is_some(), "{backend:?}: still signed in");

        // Maria logging in there gets her code.
        let pkce = Pkce::new();
        let hers = app.authorize_url(&pkce, &[("id_token_hint", Some(&maria))]);
        let done = app.login_at(&app.browser(), &hers, "maria", "maria-password").await;
        let code = code_from(&done, &app.redirect_uri());
        let tokens = app.exchange(&code, &pkce.verifier).await;
        assert_eq!(tokens.status(), 200, "{backend:?}");

        // A hint Portico did not issue: invalid_request, to the client.
        let (head, _) = maria.rsplit_once('.').unwrap();
        let forged = format!("{head}.{}", "A".repeat(86));
        for hint in [forged.as_str(), "not-a-jwt"] {
            let url = app.authorize_url(&Pkce::new(), &[("id_token_hint", Some(hint))]);
            assert_error_redirect(
                &app,
                &url,
                "invalid_request",
                "id_token_hint: not an ID token Portico issued",
                Some("st-123"),
            )
            .await;
        }
    }
}

/// RFC 8252 §7.3: a redirect URI registered on a loopback IP literal (the
/// demo client's `http://127.0.0.1:<port>/demo/callback`) matches at any
/// port, since a native app listens where its system lets it; nothing else
/// in it varies. The code goes to the port asked for and is redeemed with
/// that address only (RFC 6749 §4.1.3).
#[tokio::test]
async fn a_loopback_redirect_uri_may_name_any_port_and_nothing_else() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let registered = app.redirect_uri();
        let mut url = url::Url::parse(&registered).unwrap();
        assert_eq!(url.host_str(), Some("127.0.0.1"));
        let port = if url.port() == Some(53124) { 53125 } else { 53124 };
        url.set_port(Some(port)).unwrap();
        let elsewhere = url.to_string();

        let pkce = Pkce::new();
        let authorize = app.authorize_url(&pkce, &[("redirect_uri", Some(&elsewhere))]);
        let response = app.login_at(&app.browser(), &authorize, "ivan", "ivan-password").await;
        let code = code_from(&response, &elsewhere);
        let redeem = |code: String, verifier: String, redirect_uri: String| {
            let app = &app;
            async move {
                let form = [
                    ("grant_type", "authorization_code"),
                    ("code", code.as_str()),
                    ("code_verifier", verifier.as_str()),
                    ("redirect_uri", redirect_uri.as_str()),
                ];
                app.token_request(&form).await.status().as_u16()
            }
        };
        assert_eq!(redeem(code, pkce.verifier.clone(), elsewhere.clone()).await, 200, "{backend:?}");

        // A code sent to the registered address is not redeemed with
        // another port's.
        let browser = app.browser();
        let code = app.login_for_code(&browser, &pkce, "ivan", "ivan-password").await;
        assert_eq!(redeem(code, pkce.verifier.clone(), elsewhere.clone()).await, 400, "{backend:?}: exactly");

        // Only the port: another host spelling, path, scheme or an empty port is not the client's.
        let others = [
            registered.replace("127.0.0.1", "localhost"),
            registered.replace("127.0.0.1", "[::1]"),
            format!("{elsewhere}/"),
            elsewhere.replace("/demo/callback", "/demo/Callback"),
            elsewhere.replace("http:", "https:"),
            format!("http://127.0.0.1:/{}", url.path().trim_start_matches('/')),
        ];
        for other in others {
            assert_plain_400(&app, &app.authorize_url(&pkce, &[("redirect_uri", Some(&other))]), "redirect_uri").await;
        }
    }
}
