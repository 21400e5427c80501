//! The operator console over HTTP, on both backends: signing in through
//! Portico's own login as an OpenID Connect client, the session and CSRF
//! rules, roles, confirmations, and the audit entries its actions leave.
//! (`browser_console` walks it in Chromium.)

use portico_model::user::OperatorRole;
use portico_tests::{TestApp, backends, location};

/// A cookie-keeping client signed in to the console as `login`: the
/// console's redirect to Portico's authorization endpoint, the login
/// pages (with the SMS code of a new device), the callback. Returns the
/// client and the callback's answer.
pub(crate) async fn sign_in(app: &TestApp, login: &str, password: &str) -> (reqwest::Client, reqwest::Response) {
    let browser = app.browser();
    let response = browser.get(app.url("/console/users")).send().await.unwrap();
    assert_eq!(
        (response.status().as_u16(), location(&response)),
        (303, "/console/login?back=%2Fconsole%2Fusers".into())
    );
    let response = browser.get(app.url(&location(&response))).send().await.unwrap();
    assert_eq!(response.status(), 303);
    let authorize = location(&response);
    assert!(authorize.starts_with("/oauth2/authorize?response_type=code&client_id=portico-console&"), "{authorize}");
    assert!(authorize.contains("code_challenge_method=S256") && authorize.contains("&nonce="), "{authorize}");
    let response = browser.get(app.url(&authorize)).send().await.unwrap();
    assert_eq!(location(&response), "/login");
    let view = app.login_view(&browser).await;
    let csrf = view["pageData"]["authenticationFlowContext"]["csrf"].as_str().unwrap().to_owned();
    let form = [("_csrf", csrf.as_str()), ("principal", login), ("credentials", password)];
    let response = browser.post(app.url("/login")).form(&form).send().await.unwrap();
    assert_eq!(response.status(), 303);
    let back = app.second_factor_if_asked(&browser, &csrf, login, location(&response)).await;
    let response = browser.get(app.url(&back)).send().await.unwrap();
    assert_eq!(response.status(), 302, "a completed login returns a code");
    let callback = location(&response);
    assert!(callback.starts_with(&app.url("/console/callback?code=")), "{callback}");
    let response = browser.get(&callback).send().await.unwrap();
    (browser, response)
}

/// The `_csrf` of the first form on a console page.
pub(crate) fn csrf_of(html: &str) -> String {
    let at = html.find("name=\"_csrf\" value=\"").expect("a form with _csrf") + 20;
    html[at..at + html[at..].find('"').unwrap()].to_owned()
}

async fn page(browser: &reqwest::Client, app: &TestApp, path: &str) -> (u16, String) {
    let response = browser.get(app.url(path)).send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

async fn post(browser: &reqwest::Client, app: &TestApp, path: &str, form: &[(&str, &str)]) -> reqwest::Response {
    browser.post(app.url(path)).form(form).send().await.unwrap()
}

#[tokio::test]
async fn an_operator_signs_in_through_portico_and_finds_blocks_and_unblocks_a_user_by_phone() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (browser, response) = sign_in(&app, "operator", "operator-password").await;
        assert_eq!((response.status().as_u16(), location(&response)), (303, "/console/users".into()), "{backend:?}");
        let cookie = response
            .headers()
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .find(|c| c.starts_with("svc.console="))
            .expect("the console session");
        for attribute in ["Path=/console", "HttpOnly", "SameSite=Strict", "Max-Age=900"] {
            assert!(cookie.contains(attribute), "{cookie}");
        }
        let audit = app.store.recent_audit(5).await.unwrap();
        assert!(
            audit
                .iter()
                .any(|e| e.kind == "token.issued"
                    && e.client_id.as_ref().is_some_and(|c| c.as_str() == "portico-console"))
        );

        // The phone in the form a customer dictates it.
        let response = browser.get(app.url("/console/users?by=phone&q=8%20900%20123-45-67")).send().await.unwrap();
        let csp = response.headers()["content-security-policy"].to_str().unwrap().to_owned();
        assert!(
            csp.contains("default-src 'none'") && csp.contains("form-action 'self'") && !csp.contains("script-src"),
            "{csp}"
        );
        let html = response.text().await.unwrap();
        assert!(html.contains(">ivan</a>") && !html.contains(">maria</a>"), "{html}");
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
        let path = format!("/console/users/{}", ivan.id.as_uuid());
        let (status, html) = page(&browser, &app, &path).await;
        assert_eq!(status, 200);
        let csrf = csrf_of(&html);

        // Blocking asks first; nothing changes until it is confirmed.
        let block = format!("{path}/block");
        let response = post(&browser, &app, &block, &[("_csrf", &csrf), ("reason", "lost phone")]).await;
        assert_eq!(response.status(), 200);
        let html = response.text().await.unwrap();
        assert!(html.contains("name=\"confirm\" value=\"yes\"") && html.contains("value=\"lost phone\""), "{html}");
        assert!(!app.store.find_user(ivan.id).await.unwrap().unwrap().blocked, "not blocked before confirming");
        // A forged form (another CSRF token) changes nothing.
        let response = post(&browser, &app, &block, &[("_csrf", "forged"), ("reason", "x"), ("confirm", "yes")]).await;
        assert_eq!(response.status(), 403);
        assert!(!app.store.find_user(ivan.id).await.unwrap().unwrap().blocked);

        let response =
            post(&browser, &app, &block, &[("_csrf", &csrf), ("reason", "lost phone"), ("confirm", "yes")]).await;
        assert_eq!((response.status().as_u16(), location(&response)), (303, format!("{path}?done=blocked")));
        assert!(app.store.find_user(ivan.id).await.unwrap().unwrap().blocked);
        let event = &app.store.recent_audit(1).await.unwrap()[0];
        assert_eq!((event.kind.as_str(), event.actor.as_deref()), ("user.blocked", Some("operator:operator")));
        assert_eq!(event.detail["reason"], "lost phone");

        let unblock = format!("{path}/unblock");
        let response =
            post(&browser, &app, &unblock, &[("_csrf", &csrf), ("reason", "found"), ("confirm", "yes")]).await;
        assert_eq!(response.status(), 303);
        assert!(!app.store.find_user(ivan.id).await.unwrap().unwrap().blocked);
        let (_, html) = page(&browser, &app, &format!("{path}?done=unblocked")).await;
        assert!(html.contains("id=\"notice\""), "the action's notice is shown");
    }
}

#[tokio::test]
async fn an_account_without_an_operator_role_is_refused_and_its_console_grant_revoked() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (browser, response) = sign_in(&app, "ivan", "ivan-password").await;
        assert_eq!(response.status(), 403, "{backend:?}");
        let html = response.text().await.unwrap();
        assert!(html.contains("/oauth2/logout?client_id=portico-console"), "a way to sign in as someone else: {html}");
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
        let grants = app.store.list_user_grants(ivan.id).await.unwrap();
        assert!(grants.iter().all(|g| g.client_id.as_str() != "portico-console"), "{grants:?}");
        // No session: the console sends the browser to sign in again.
        let response = browser.get(app.url("/console/users")).send().await.unwrap();
        assert_eq!(response.status(), 303);
        assert!(location(&response).starts_with("/console/login"));
    }
}

#[tokio::test]
async fn support_reads_and_blocks_but_admin_pages_and_actions_are_refused() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let maria = app.store.find_user_by_login("maria").await.unwrap().unwrap();
        let now = portico_model::clock::Clock::now(app.clock.as_ref());
        app.store.set_operator_role(maria.id, Some(OperatorRole::Support), now).await.unwrap();
        let (browser, response) = sign_in(&app, "maria", "maria-password").await;
        assert_eq!(response.status(), 303, "{backend:?}");
        let (status, html) = page(&browser, &app, "/console/users").await;
        assert_eq!(status, 200);
        assert!(
            !html.contains("href=\"/console/clients\"") && !html.contains("href=\"/console/keys\""),
            "support sees no admin sections"
        );
        let csrf = csrf_of(&html);
        for path in
            ["/console/clients", "/console/keys", "/console/merchants", "/console/reports", "/console/users/new"]
        {
            assert_eq!(page(&browser, &app, path).await.0, 403, "{path}");
        }
        let keys = app.store.list_signing_keys().await.unwrap();
        let response = post(&browser, &app, "/console/keys/rotate", &[("_csrf", &csrf), ("confirm", "yes")]).await;
        assert_eq!(response.status(), 403);
        assert_eq!(app.store.list_signing_keys().await.unwrap(), keys, "no key was made");
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
        let path = format!("/console/users/{}/delete", ivan.id.as_uuid());
        assert_eq!(post(&browser, &app, &path, &[("_csrf", &csrf), ("confirm", "yes")]).await.status(), 403);
        assert!(app.store.find_user(ivan.id).await.unwrap().is_some());
        // What support may do, it does.
        let path = format!("/console/users/{}/block", ivan.id.as_uuid());
        assert_eq!(post(&browser, &app, &path, &[("_csrf", &csrf), ("confirm", "yes")]).await.status(), 303);
        assert!(app.store.find_user(ivan.id).await.unwrap().unwrap().blocked);
        assert_eq!(page(&browser, &app, "/console/audit?kind=user.blocked").await.0, 200);

        // The role taken away ends the console at the next click.
        app.store.set_operator_role(maria.id, None, now).await.unwrap();
        let response = browser.get(app.url("/console/users")).send().await.unwrap();
        assert_eq!(response.status(), 303);
        assert!(location(&response).starts_with("/console/login"));
    }
}

#[tokio::test]
async fn a_forged_state_or_a_replayed_callback_signs_nobody_in() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let browser = app.browser();
        let response = browser.get(app.url("/console/login")).send().await.unwrap();
        let authorize = location(&response);
        // Another browser's callback (no sign-in cookie here), and a state that is not this sign-in's.
        let other = app.browser();
        assert_eq!(other.get(app.url("/console/callback?code=x&state=y")).send().await.unwrap().status(), 400);
        let forged = browser.get(app.url("/console/callback?code=x&state=forged")).send().await.unwrap();
        assert_eq!(forged.status(), 400, "{backend:?}");

        // A real sign-in; its callback presented twice signs in once.
        let response = browser.get(app.url(&authorize)).send().await.unwrap();
        assert_eq!(location(&response), "/login");
        let (browser, response) = sign_in(&app, "operator", "operator-password").await;
        assert_eq!(response.status(), 303);
        let url = response.url().clone();
        let again = browser.get(url).send().await.unwrap();
        assert_eq!(again.status(), 400, "the sign-in cookie is spent with the first callback");
    }
}

#[tokio::test]
async fn signing_out_revokes_the_consoles_grant_and_ends_the_single_sign_on_session() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (browser, _) = sign_in(&app, "operator", "operator-password").await;
        let (_, html) = page(&browser, &app, "/console/users").await;
        let csrf = csrf_of(&html);
        let operator = app.store.find_user_by_login("operator").await.unwrap().unwrap();
        let live = |grants: Vec<portico_model::oauth::Grant>| {
            grants.into_iter().filter(|g| g.client_id.as_str() == "portico-console" && g.revoked_at.is_none()).count()
        };
        assert_eq!(live(app.store.list_user_grants(operator.id).await.unwrap()), 1, "{backend:?}");
        let response = post(&browser, &app, "/console/logout", &[("_csrf", &csrf)]).await;
        assert_eq!(response.status(), 303);
        let logout = location(&response);
        assert!(logout.starts_with("/oauth2/logout?client_id=portico-console&post_logout_redirect_uri="), "{logout}");
        assert_eq!(live(app.store.list_user_grants(operator.id).await.unwrap()), 0);
        let response = browser.get(app.url(&logout)).send().await.unwrap();
        assert_eq!((response.status().as_u16(), location(&response)), (302, app.url("/console/")));
        // Signed out everywhere: the console starts a new sign-in, which asks for the password again.
        let response = browser.get(app.url("/console/users")).send().await.unwrap();
        assert!(location(&response).starts_with("/console/login"));
        let response = browser.get(app.url(&location(&response))).send().await.unwrap();
        let response = browser.get(app.url(&location(&response))).send().await.unwrap();
        assert_eq!(location(&response), "/login", "no single sign-on session is left");
    }
}

/// An operator's single sign-on session signs them in to the console
/// again only within `console_sign_in_max_age_secs` (an hour) of typing
/// their password: an unlocked browser left for longer asks for it again.
#[tokio::test]
async fn the_console_asks_for_the_password_again_an_hour_after_it_was_typed() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (browser, _) = sign_in(&app, "operator", "operator-password").await;
        assert_eq!(page(&browser, &app, "/console/users").await.0, 200, "{backend:?}");
        // The console's sign-in, once its 15-minute token has run out.
        let sign_in_again = async || {
            let response = browser.get(app.url("/console/users")).send().await.unwrap();
            assert!(location(&response).starts_with("/console/login"), "{backend:?}: the token ran out");
            let authorize = location(&browser.get(app.url(&location(&response))).send().await.unwrap());
            assert!(authorize.contains("&max_age=3600"), "{backend:?}: {authorize}");
            browser.get(app.url(&authorize)).send().await.unwrap()
        };
        // Within the hour, the single sign-on session answers at once.
        app.clock.advance(time::Duration::seconds(901));
        let response = sign_in_again().await;
        let callback = location(&response);
        assert!(callback.starts_with(&app.url("/console/callback?code=")), "{backend:?}: {callback}");
        let response = browser.get(&callback).send().await.unwrap();
        assert_eq!(location(&response), "/console/users", "{backend:?}");
        // Past it, the login asks for the password.
        app.clock.advance(time::Duration::seconds(3600 - 901 + 1));
        let response = sign_in_again().await;
        assert_eq!(location(&response), "/login", "{backend:?}: an hour after the password");
    }
}

#[tokio::test]
async fn the_consoles_client_is_registered_once_and_keeps_an_operators_own_settings() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let client = app.store.find_client(&"portico-console".into()).await.unwrap().expect("registered at start");
        assert_eq!(client.redirect_uris, vec![app.url("/console/callback")], "{backend:?}");
        assert_eq!(client.post_logout_redirect_uris, vec![app.url("/console/")]);
        assert!(client.logout_revokes_grants && !client.require_consent);
        // Another start (another node) changes nothing.
        let elsewhere =
            portico_console::Console::own_client("portico-console".into(), "https://console.bank.example/", 3600);
        elsewhere.register(&app.identity).await.unwrap();
        let again = app.store.find_client(&"portico-console".into()).await.unwrap().unwrap();
        assert_eq!(
            again.redirect_uris,
            vec![app.url("/console/callback"), "https://console.bank.example/console/callback".into()],
            "a node at another address adds its own, keeping what was there"
        );
        assert_eq!(again.secret_hash, client.secret_hash);
    }
}

#[tokio::test]
async fn admins_register_a_merchant_and_load_the_permission_model_and_brokerage_data_through_the_console() {
    use portico_reports::sample::{Shape, agreement};
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (browser, _) = sign_in(&app, "operator", "operator-password").await;
        let (status, html) = page(&browser, &app, "/console/merchants").await;
        assert_eq!(status, 200, "{backend:?}");
        let csrf = csrf_of(&html);

        // A merchant: its key shown once, and it authenticates the merchant API.
        let form = [
            ("_csrf", csrf.as_str()),
            ("merchant_id", "shop-c"),
            ("public_id", "pub-shop-c"),
            ("sbp_merchant_id", "MA0000000077"),
        ];
        let response = post(&browser, &app, "/console/merchants", &form).await;
        assert_eq!(response.headers()["cache-control"], "no-store");
        let html = response.text().await.unwrap();
        let at = html.find("id=\"secret\">").expect("the key is shown") + 12;
        let key = html[at..at + html[at..].find('<').unwrap()].to_owned();
        let settings = app
            .http()
            .put(app.url("/v1/notifications/settings"))
            .header("authorization", &key)
            .header("content-type", "application/json")
            .body(r#"{"callbackUrl": "https://shop.example/notify"}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(settings.status(), 200, "the shown key is the merchant's");
        let event = &app.store.recent_audit(1).await.unwrap()[0];
        assert_eq!((event.kind.as_str(), event.actor.as_deref()), ("merchant.created", Some("operator:operator")));
        let taken = post(&browser, &app, "/console/merchants", &form).await;
        assert_eq!(taken.status(), 409);
        let bad = [("_csrf", csrf.as_str()), ("merchant_id", "shop c"), ("public_id", "p"), ("sbp_merchant_id", "s")];
        assert_eq!(post(&browser, &app, "/console/merchants", &bad).await.status(), 400);
        assert!(app.store.find_merchant("shop c").await.unwrap().is_none());

        // The permission model: a check changes nothing; an application asks, then makes a revision.
        let before = app.store.load_permissions().await.unwrap().revision;
        let doc = "companies:\n  - cnum: \"7700000099\"\n    name: ООО «Тест»\n    contractStatus: ACTIVE\n";
        let form = [("_csrf", csrf.as_str()), ("document", doc), ("action", "check")];
        let response = post(&browser, &app, "/console/permissions", &form).await;
        let status = response.status();
        let html = response.text().await.unwrap();
        assert_eq!(status, 200, "{html}");
        assert!(html.contains("id=\"checked\""), "{html}");
        assert_eq!(app.store.load_permissions().await.unwrap().revision, before, "a check saves nothing");
        let form = [("_csrf", csrf.as_str()), ("document", doc), ("action", "apply")];
        let response = post(&browser, &app, "/console/permissions", &form).await;
        assert!(response.text().await.unwrap().contains("name=\"confirm\" value=\"yes\""));
        assert_eq!(app.store.load_permissions().await.unwrap().revision, before, "nothing before confirming");
        let form = [("_csrf", csrf.as_str()), ("document", doc), ("action", "apply"), ("confirm", "yes")];
        let response = post(&browser, &app, "/console/permissions", &form).await;
        assert_eq!(location(&response), "/console/permissions?done=applied");
        assert_eq!(app.store.load_permissions().await.unwrap().revision, before + 1);
        let event = &app.store.recent_audit(1).await.unwrap()[0];
        assert_eq!((event.kind.as_str(), event.actor.as_deref()), ("permissions.imported", Some("operator:operator")));
        let broken =
            [("_csrf", csrf.as_str()), ("document", "companies: [{cnum: x}]"), ("action", "apply"), ("confirm", "yes")];
        let response = post(&browser, &app, "/console/permissions", &broken).await;
        assert_eq!(response.status(), 400);
        // A document wrong in hundreds of places: the first 100, then how many more.
        // (One company 150 times: each after the first appears twice.)
        let company = "{cnum: \"7700000099\", name: Тест, contractStatus: ACTIVE}";
        let many = format!("companies: [{}]", [company; 150].join(", "));
        let form = [("_csrf", csrf.as_str()), ("document", many.as_str()), ("action", "check")];
        let html = post(&browser, &app, "/console/permissions", &form).await.text().await.unwrap();
        assert!(html.contains("companies[100].cnum") && !html.contains("companies[101].cnum"), "{html}");
        assert!(html.contains("and 49 more problems: mend these and send it again"), "{html}");
        assert_eq!(
            app.store.load_permissions().await.unwrap().revision,
            before + 1,
            "a broken document changes nothing"
        );
        let download = browser.get(app.url("/console/permissions/document")).send().await.unwrap();
        assert!(download.headers()["content-disposition"].to_str().unwrap().starts_with("attachment"));
        let exported: serde_json::Value = download.json().await.unwrap();
        assert!(exported["companies"].as_array().unwrap().iter().any(|c| c["cnum"] == "7700000099"));

        // Brokerage data: a broken document names its problems and stores nothing; a good one is loaded.
        let mut good = agreement(&Shape { number: "БД-0200", ..Shape::demo() });
        good.trades.truncate(2);
        let mut bad = good.clone();
        bad.trades[0].ticker = "NOPE".into();
        let text = serde_json::json!({"agreements": [bad]}).to_string();
        let form = [("_csrf", csrf.as_str()), ("document", text.as_str()), ("confirm", "yes")];
        let response = post(&browser, &app, "/console/brokerage", &form).await;
        assert_eq!(response.status(), 400);
        assert!(
            response.text().await.unwrap().contains("agreements[0].trades[0].ticker"),
            "the problem is named with its place"
        );
        assert!(
            !app.store
                .list_agreements(portico_storage::KeyPage::ALL)
                .await
                .unwrap()
                .iter()
                .any(|(n, _)| n == "БД-0200")
        );
        let text = serde_json::json!({"agreements": [good]}).to_string();
        let form = [("_csrf", csrf.as_str()), ("document", text.as_str()), ("confirm", "yes")];
        let response = post(&browser, &app, "/console/brokerage", &form).await;
        assert_eq!(location(&response), "/console/brokerage?done=loaded");
        assert!(
            app.store.list_agreements(portico_storage::KeyPage::ALL).await.unwrap().iter().any(|(n, _)| n == "БД-0200")
        );
        let event = &app.store.recent_audit(1).await.unwrap()[0];
        assert_eq!((event.kind.as_str(), event.actor.as_deref()), ("brokerage.loaded", Some("operator:operator")));
    }
}

#[tokio::test]
async fn hostile_addresses_and_forms_get_the_consoles_own_pages_and_change_nothing() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (browser, _) = sign_in(&app, "operator", "operator-password").await;
        let (_, html) = page(&browser, &app, "/console/users").await;
        let csrf = csrf_of(&html);
        for path in
            ["/console/users/%FF%FE", "/console/clients/%C0", "/console/no-such-page", "/console/users/not-a-uuid"]
        {
            let response = browser.get(app.url(path)).send().await.unwrap();
            assert_eq!(response.status(), 404, "{backend:?} {path}");
            assert!(response.headers()["content-security-policy"].to_str().unwrap().contains("default-src 'none'"));
            assert!(response.text().await.unwrap().contains("<html lang="), "{path}: the console's page");
        }
        // A form over 64 KiB is refused whole.
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
        let reason = "x".repeat(70 * 1024);
        let path = format!("/console/users/{}/block", ivan.id.as_uuid());
        let response = post(&browser, &app, &path, &[("_csrf", &csrf), ("reason", &reason), ("confirm", "yes")]).await;
        assert_eq!(response.status(), 400);
        assert!(!app.store.find_user(ivan.id).await.unwrap().unwrap().blocked);
        // A field given twice, a NUL character, or the guard given twice:
        // no form, the 400 page, nothing changed.
        for form in [
            [("_csrf", csrf.as_str()), ("reason", "a"), ("reason", "b"), ("confirm", "yes")],
            [("_csrf", csrf.as_str()), ("reason", "a\0b"), ("confirm", "yes"), ("other", "")],
            [("_csrf", csrf.as_str()), ("reason", "a"), ("confirm", "yes"), ("confirm", "yes")],
        ] {
            let response = post(&browser, &app, &path, &form).await;
            assert_eq!(response.status(), 400, "{form:?}");
            assert!(response.text().await.unwrap().contains("<html lang="), "the console's page");
            assert!(!app.store.find_user(ivan.id).await.unwrap().unwrap().blocked);
        }
        // A reason over the service's limit: its rule, with the field named.
        let reason = "x".repeat(600);
        let response = post(&browser, &app, &path, &[("_csrf", &csrf), ("reason", &reason), ("confirm", "yes")]).await;
        assert_eq!(response.status(), 400);
        let html = response.text().await.unwrap();
        assert!(html.contains("<strong data-place=\"reason\">Причина (в журнал аудита)</strong>"), "{html}");
        assert!(!app.store.find_user(ivan.id).await.unwrap().unwrap().blocked);
        // Without a session, a form is sent to sign in and changes nothing.
        let stranger = app.browser();
        let response =
            stranger.post(app.url(&path)).form(&[("_csrf", csrf.as_str()), ("confirm", "yes")]).send().await.unwrap();
        assert_eq!(response.status(), 303);
        assert!(location(&response).starts_with("/console/login"));
        assert!(!app.store.find_user(ivan.id).await.unwrap().unwrap().blocked);
    }
}

/// The value after `marker` up to the next `<` on a page.
fn shown(html: &str, marker: &str) -> String {
    let at = html.find(marker).unwrap_or_else(|| panic!("no {marker} in {html}")) + marker.len();
    html[at..at + html[at..].find('<').unwrap()].to_owned()
}

#[tokio::test]
async fn admins_manage_users_clients_and_report_tasks_and_read_the_audit_log_through_the_console() {
    use portico_model::reports::TaskStatus;
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (browser, _) = sign_in(&app, "operator", "operator-password").await;
        let (_, html) = page(&browser, &app, "/console/users/new").await;
        let csrf = csrf_of(&html);
        let csrf = csrf.as_str();

        // A user: the service's rules, every problem named, nothing made; then made, changed, given a role.
        let bad = [("_csrf", csrf), ("login", "new user"), ("password", "short"), ("phone", "12"), ("email", "x")];
        let response = post(&browser, &app, "/console/users", &bad).await;
        assert_eq!(response.status(), 400, "{backend:?}");
        let html = response.text().await.unwrap();
        for field in ["login", "password", "phone", "email"] {
            assert!(html.contains(&format!("<strong data-place=\"{field}\">")), "{field}: {html}");
        }
        assert!(app.store.find_user_by_login("new user").await.unwrap().is_none());
        let good = [
            ("_csrf", csrf),
            ("login", "vera"),
            ("password", "vera-long-password"),
            ("phone", "8 (900) 765-00-11"),
            ("email", "vera@example.com"),
            ("phone_login", "yes"),
        ];
        let response = post(&browser, &app, "/console/users", &good).await;
        let vera = app.store.find_user_by_login("vera").await.unwrap().expect("created");
        let vera_page = format!("/console/users/{}", vera.id.as_uuid());
        assert_eq!(location(&response), format!("{vera_page}?done=created"));
        assert_eq!(vera.phone.as_deref(), Some("+79007650011"), "stored in E.164");
        let taken = post(&browser, &app, "/console/users", &good).await;
        assert_eq!(taken.status(), 409);
        let change =
            [("_csrf", csrf), ("login", "vera"), ("phone", ""), ("email", "vera@bank.example"), ("name", "Вера")];
        post(&browser, &app, &vera_page, &change).await;
        let changed = app.store.find_user(vera.id).await.unwrap().unwrap();
        assert_eq!(
            (changed.phone, changed.email.as_deref(), changed.phone_login_enabled),
            (None, Some("vera@bank.example"), false)
        );
        let response =
            post(&browser, &app, &format!("{vera_page}/password"), &[("_csrf", csrf), ("password", "vera")]).await;
        assert_eq!(response.status(), 400, "the password policy");
        post(&browser, &app, &format!("{vera_page}/password"), &[("_csrf", csrf), ("password", "a-new-long-password")])
            .await;
        let hash = app.store.find_user(vera.id).await.unwrap().unwrap().password_hash;
        assert!(portico_crypto::password::verify(&hash, "a-new-long-password"), "the password set is the one stored");
        let role = [("_csrf", csrf), ("role", "support"), ("confirm", "yes")];
        post(&browser, &app, &format!("{vera_page}/role"), &role).await;
        assert_eq!(app.store.operator_role(vera.id).await.unwrap(), Some(OperatorRole::Support));
        let (_, html) = page(&browser, &app, &vera_page).await;
        assert!(html.contains("<option value=\"support\" selected>"), "the page shows the role");

        // A client: a generated secret shown once and working at the token endpoint; a bad change named; removal asks first.
        let client = [
            ("_csrf", csrf),
            ("client_id", "crm"),
            ("secret", ""),
            ("redirect_uris", "https://crm.example/cb\nhttps://crm.example/cb2"),
            ("scope", "openid profile"),
            ("name_ru", "CRM"),
        ];
        let response = post(&browser, &app, "/console/clients", &client).await;
        assert_eq!(response.headers()["cache-control"], "no-store");
        let secret = shown(&response.text().await.unwrap(), "id=\"secret\">");
        let stored = app.store.find_client(&"crm".into()).await.unwrap().expect("registered");
        assert_eq!(stored.redirect_uris, ["https://crm.example/cb", "https://crm.example/cb2"]);
        assert!(
            portico_crypto::hash::client_secret_matches(&stored.secret_hash, &secret),
            "the shown secret is the client's"
        );
        let fragment = [("_csrf", csrf), ("redirect_uris", "https://crm.example/cb#x"), ("scope", "openid")];
        let response = post(&browser, &app, "/console/clients/crm", &fragment).await;
        assert_eq!(response.status(), 400);
        let html = response.text().await.unwrap();
        assert!(html.contains("<strong data-place=\"redirectUris[0]\">Адреса возврата[0]</strong>"), "{html}");
        assert_eq!(app.store.find_client(&"crm".into()).await.unwrap().unwrap().redirect_uris, stored.redirect_uris);
        let response =
            post(&browser, &app, "/console/clients/crm/secret", &[("_csrf", csrf), ("confirm", "yes")]).await;
        let new_secret = shown(&response.text().await.unwrap(), "id=\"secret\">");
        let rotated = app.store.find_client(&"crm".into()).await.unwrap().unwrap();
        assert!(portico_crypto::hash::client_secret_matches(&rotated.secret_hash, &new_secret));
        assert!(!portico_crypto::hash::client_secret_matches(&rotated.secret_hash, &secret), "the old secret stops");
        let response = post(&browser, &app, "/console/clients/crm/delete", &[("_csrf", csrf)]).await;
        assert!(response.text().await.unwrap().contains("name=\"confirm\" value=\"yes\""));
        assert!(app.store.find_client(&"crm".into()).await.unwrap().is_some());
        let response =
            post(&browser, &app, "/console/clients/crm/delete", &[("_csrf", csrf), ("confirm", "yes")]).await;
        assert_eq!(location(&response), "/console/clients?done=deleted");
        assert!(app.store.find_client(&"crm".into()).await.unwrap().is_none());

        // Report tasks: a failed one retried as a new task; a finished one is not.
        let mut failed = crate::storage_contract::report_task(1, "7700000099", (1, 31));
        failed.status = TaskStatus::Failed;
        app.store.create_report_task(&failed, portico_storage::Reuse::Never).await.unwrap();
        let (_, html) = page(&browser, &app, "/console/reports?cnum=7700000099").await;
        assert!(html.contains(&format!("/console/reports/{}/retry", failed.id)), "{html}");
        let (status, html) = page(&browser, &app, "/console/reports?cnum=77x").await;
        assert_eq!(status, 200);
        assert!(html.contains("role=\"alert\""), "a bad company is said");
        let retry = format!("/console/reports/{}/retry", failed.id);
        let response = post(&browser, &app, &retry, &[("_csrf", csrf), ("confirm", "yes")]).await;
        assert_eq!(location(&response), "/console/reports?cnum=7700000099&done=retried");
        let tasks = app
            .store
            .list_report_tasks(&portico_storage::ReportTaskFilter {
                cnums: vec!["7700000099".into()],
                limit: 10,
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(tasks.len(), 2, "a new task beside the failed one");
        let mut done = crate::storage_contract::report_task(2, "7700000099", (1, 31));
        done.status = TaskStatus::Done;
        app.store.create_report_task(&done, portico_storage::Reuse::Never).await.unwrap();
        let response = post(
            &browser,
            &app,
            &format!("/console/reports/{}/retry", done.id),
            &[("_csrf", csrf), ("confirm", "yes")],
        )
        .await;
        assert_eq!(response.status(), 409);

        // The audit log: every change above, as the operator, filtered by user and kind; a bad day is said.
        let (_, html) = page(&browser, &app, &format!("/console/audit?user={}", vera.id.as_uuid())).await;
        for kind in ["user.created", "user.updated", "user.password_set", "operator.role_set"] {
            assert!(html.contains(&format!(">{kind}<")), "{kind}: {html}");
        }
        assert!(!html.contains(">client.created<"), "only vera's events");
        let (_, html) = page(&browser, &app, "/console/audit?kind=client.deleted").await;
        assert!(html.contains(">operator:operator<") && html.contains(">crm<"), "{html}");
        let (_, html) = page(&browser, &app, "/console/audit?from=26.11.2026").await;
        assert!(html.contains("role=\"alert\""), "a bad day is said");

        // Removing a user asks first, then goes back to the list.
        let response =
            post(&browser, &app, &format!("{vera_page}/delete"), &[("_csrf", csrf), ("confirm", "yes")]).await;
        assert_eq!(location(&response), "/console/users?done=deleted");
        assert!(app.store.find_user(vera.id).await.unwrap().is_none());
    }
}

#[tokio::test]
async fn thirty_console_submissions_of_one_new_login_make_one_user() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (browser, _) = sign_in(&app, "operator", "operator-password").await;
        let (_, html) = page(&browser, &app, "/console/users/new").await;
        let csrf = csrf_of(&html);
        let mut submissions = tokio::task::JoinSet::new();
        for i in 0..30 {
            let (browser, url, csrf) = (browser.clone(), app.url("/console/users"), csrf.clone());
            submissions.spawn(async move {
                let password = format!("a-long-password-{i}");
                let form = [("_csrf", csrf.as_str()), ("login", "twin"), ("password", password.as_str())];
                browser.post(url).form(&form).send().await.unwrap().status().as_u16()
            });
        }
        let mut statuses = submissions.join_all().await;
        statuses.sort_unstable();
        assert_eq!(statuses.iter().filter(|s| **s == 303).count(), 1, "{backend:?}: {statuses:?}");
        assert_eq!(statuses.iter().filter(|s| **s == 409).count(), 29, "{backend:?}: {statuses:?}");
        let created = app
            .store
            .query_audit(&portico_storage::AuditQuery { kind: Some("user.created".into()), ..Default::default() })
            .await
            .unwrap();
        let twins = created.iter().filter(|e| e.event.actor.as_deref() == Some("operator:operator")).count();
        assert_eq!(twins, 1, "one user, one audit entry");
    }
}

/// A return address with a NUL (or anything else a `Location` header
/// cannot carry) brings the operator to the console's first page: never a
/// 303 without a `Location`.
#[tokio::test]
async fn a_return_address_no_header_can_carry_leads_to_the_first_page() {
    let app = TestApp::spawn(backends()[0]).await;
    let (browser, _) = sign_in(&app, "operator", "operator-password").await;
    for back in ["/console/%00x", "/console/%0D%0ASet-Cookie:%20x=y", "/console/%D0%BF"] {
        let response = browser.get(app.url(&format!("/console/login?back={back}"))).send().await.unwrap();
        assert_eq!(response.status(), 303);
        // Portico's single sign-on session answers with a code at once.
        let response = browser.get(app.url(&location(&response))).send().await.unwrap();
        assert_eq!(response.status(), 302, "{back}");
        let response = browser.get(location(&response)).send().await.unwrap();
        assert_eq!((response.status().as_u16(), location(&response)), (303, "/console/".to_owned()), "{back}");
    }
}

/// The `value` of the hidden input `name` of a console page.
fn hidden(html: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let at = html.find(&marker).unwrap_or_else(|| panic!("no {name} in the page")) + marker.len();
    html[at..at + html[at..].find('"').unwrap()].to_owned()
}

/// The console's form of maria's profile as sent from a page of
/// `revision`.
fn maria_form<'a>(csrf: &'a str, revision: &'a str, email: &'a str, name: &'a str) -> [(&'a str, &'a str); 5] {
    [("_csrf", csrf), ("revision", revision), ("login", "maria"), ("email", email), ("name", name)]
}

#[tokio::test]
async fn a_form_read_before_another_change_is_refused_and_changes_nothing() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (browser, _) = sign_in(&app, "operator", "operator-password").await;
        let maria = app.store.find_user_by_login("maria").await.unwrap().unwrap();
        let maria_page = format!("/console/users/{}", maria.id.as_uuid());
        let client_page = format!("/console/clients/{}", portico_server::demo::CLIENT_ID);
        let (_, user_html) = page(&browser, &app, &maria_page).await;
        let (_, client_html) = page(&browser, &app, &client_page).await;
        let csrf = csrf_of(&user_html);
        let (user_revision, client_revision) = (hidden(&user_html, "revision"), hidden(&client_html, "revision"));

        // Another operator changes both after the pages were read.
        let admin = app.admin_service();
        let actor = portico_model::audit::Actor::Cli;
        let email =
            portico_admin::service::UserChanges { email: Some(Some("new@bank.example".into())), ..Default::default() };
        admin.update_user(&actor, maria.id, email).await.unwrap();
        let name =
            portico_admin::service::ClientChanges { name_en: Some("Renamed meanwhile".into()), ..Default::default() };
        admin.update_client(&actor, portico_server::demo::CLIENT_ID, name).await.unwrap();
        let user_before = app.store.find_user(maria.id).await.unwrap().unwrap();
        let client_before = app.store.find_client(&portico_server::demo::CLIENT_ID.into()).await.unwrap().unwrap();

        // The forms as read: every field is sent back, the old e-mail and name with them.
        let old_email = maria.email.clone().unwrap_or_default();
        let form = maria_form(&csrf, &user_revision, &old_email, "Мария from the old form");
        let refused = post(&browser, &app, &maria_page, &form).await;
        assert_eq!(refused.status(), 409, "{backend:?}");
        assert!(
            refused.text().await.unwrap().contains("Пока вы редактировали, это изменил кто-то другой"),
            "{backend:?}"
        );
        let client_form = [
            ("_csrf", csrf.as_str()),
            ("revision", client_revision.as_str()),
            ("redirect_uris", "https://old-form.example/cb"),
            ("name_ru", "Из старой формы"),
            ("name_en", "From the old form"),
        ];
        let refused = post(&browser, &app, &client_page, &client_form).await;
        assert_eq!(refused.status(), 409, "{backend:?}");
        assert_eq!(app.store.find_user(maria.id).await.unwrap().unwrap(), user_before, "{backend:?}: nothing changed");
        let client_after = app.store.find_client(&portico_server::demo::CLIENT_ID.into()).await.unwrap().unwrap();
        assert_eq!(client_after, client_before, "{backend:?}: nothing changed");

        // Read again, the form saves.
        let (_, user_html) = page(&browser, &app, &maria_page).await;
        assert!(user_html.contains("new@bank.example"), "the page shows the change made meanwhile");
        let fresh = hidden(&user_html, "revision");
        let saved = post(&browser, &app, &maria_page, &maria_form(&csrf, &fresh, "new@bank.example", "Мария")).await;
        assert_eq!(saved.status(), 303, "{backend:?}");
        let user = app.store.find_user(maria.id).await.unwrap().unwrap();
        assert_eq!((user.email.as_deref(), user.name.as_deref()), (Some("new@bank.example"), Some("Мария")));
    }
}

/// A console form of a client with its authentication and signing
/// fieldset.
fn client_form<'a>(csrf: &'a str, id: &'a str, security: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut form = vec![
        ("_csrf", csrf),
        ("client_id", id),
        ("redirect_uris", "https://fintech.example/cb"),
        ("scope", "openid"),
        ("token_endpoint_auth_method", "client_secret_basic"),
        ("jwks", ""),
        ("jwks_uri", ""),
        ("token_endpoint_auth_signing_alg", ""),
        ("id_token_signed_response_alg", ""),
        ("access_token_signed_response_alg", ""),
        ("userinfo_signed_response_alg", ""),
        ("introspection_signed_response_alg", ""),
    ];
    for (name, value) in security {
        form.retain(|(field, _)| field != name);
        form.push((name, value));
    }
    form
}

#[tokio::test]
async fn admins_set_a_clients_keys_and_algorithms_approve_held_registrations_and_manage_keys_per_algorithm() {
    use portico_crypto::jwt::{Algorithm, SigningKey};
    use portico_model::client::AuthMethod;
    use portico_model::key::Algorithm as Alg;
    const INITIAL: &str = "the-initial-access-token-0123456789";
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.tokens.signing_algorithms = vec!["ES256".into(), "EdDSA".into()];
            c.registration.initial_access_token = Some(INITIAL.to_owned());
            c.registration.require_approval = true;
        })
        .await;
        let (browser, _) = sign_in(&app, "operator", "operator-password").await;
        let (status, html) = page(&browser, &app, "/console/clients/new").await;
        assert_eq!(status, 200, "{backend:?}");
        for alg in ["RS256", "ES256", "EdDSA"] {
            assert!(html.contains(&format!("<option value=\"{alg}\">{alg}</option>")), "{backend:?} {alg}: {html}");
        }
        // (The request object select lists what clients sign with.)
        let signing =
            html.split("name=\"id_token_signed_response_alg\"").nth(1).unwrap().split("</select>").next().unwrap();
        assert!(
            !signing.contains("<option value=\"PS256\">"),
            "{backend:?}: only algorithms the server keeps a key of"
        );
        let csrf = csrf_of(&html);
        let csrf = csrf.as_str();

        // A key client: its keys and algorithms as chosen, no secret shown.
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        let jwks = serde_json::json!({"keys": [key.jwk()]}).to_string();
        let chosen = [
            ("token_endpoint_auth_method", "private_key_jwt"),
            ("jwks", jwks.as_str()),
            ("id_token_signed_response_alg", "ES256"),
        ];
        let response = post(&browser, &app, "/console/clients", &client_form(csrf, "fintech", &chosen)).await;
        assert_eq!(location(&response), "/console/clients/fintech?done=created", "{backend:?}");
        let stored = app.store.find_client(&"fintech".into()).await.unwrap().unwrap();
        assert_eq!(stored.security.token_endpoint_auth_method, AuthMethod::PrivateKeyJwt);
        assert_eq!(stored.security.id_token_signed_response_alg, Some(Alg::Es256));
        assert_eq!(stored.security.access_token_signed_response_alg, None, "the server's default");
        assert_eq!(stored.security.jwks, Some(serde_json::from_str(&jwks).unwrap()));
        let (_, html) = page(&browser, &app, "/console/clients/fintech").await;
        assert!(html.contains("<option value=\"private_key_jwt\" selected>"), "{backend:?}");
        assert!(html.contains("<option value=\"ES256\" selected>"), "{backend:?}");

        // Bad choices are named by their labels, and change nothing.
        for (bad, place) in [
            (("jwks", "{not json"), "jwks"),
            (("id_token_signed_response_alg", "PS256"), "idTokenSignedResponseAlg"),
            (("access_token_signed_response_alg", "HS256"), "accessTokenSignedResponseAlg"),
            (("token_endpoint_auth_method", "none"), "tokenEndpointAuthMethod"),
            (("token_endpoint_auth_signing_alg", "HS256"), "tokenEndpointAuthSigningAlg"),
            (("token_endpoint_auth_signing_alg", "none"), "tokenEndpointAuthSigningAlg"),
        ] {
            let form = client_form(csrf, "fintech", &[("token_endpoint_auth_method", "private_key_jwt"), bad]);
            let form: Vec<_> = form.into_iter().filter(|(name, _)| *name != "client_id").collect();
            let response = post(&browser, &app, "/console/clients/fintech", &form).await;
            assert_eq!(response.status(), 400, "{backend:?} {bad:?}");
            let html = response.text().await.unwrap();
            assert!(html.contains(&format!("<strong data-place=\"{place}\">")), "{backend:?} {bad:?}: {html}");
        }
        assert_eq!(app.store.find_client(&"fintech".into()).await.unwrap().unwrap(), stored, "{backend:?}");
        // The pages a registration names are not on the form: a save keeps them.
        let mut named = app.store.find_client(&"fintech".into()).await.unwrap().unwrap();
        named.security.policy_uri = Some("https://fintech.example/privacy".into());
        named.security.logo_uri = Some("https://fintech.example/logo.png".into());
        assert!(matches!(app.store.update_client(&named).await.unwrap(), portico_storage::Update::Updated));
        // A change: the access tokens by EdDSA, assertions by ES256 only;
        // the keys stay.
        let change = client_form(
            csrf,
            "fintech",
            &[
                ("token_endpoint_auth_method", "private_key_jwt"),
                ("jwks", jwks.as_str()),
                ("token_endpoint_auth_signing_alg", "ES256"),
                ("id_token_signed_response_alg", "ES256"),
                ("access_token_signed_response_alg", "EdDSA"),
            ],
        );
        let response = post(&browser, &app, "/console/clients/fintech", &change).await;
        assert_eq!(location(&response), "/console/clients/fintech?done=saved", "{backend:?}");
        let changed = app.store.find_client(&"fintech".into()).await.unwrap().unwrap();
        assert_eq!(changed.security.access_token_signed_response_alg, Some(Alg::EdDsa));
        assert_eq!(changed.security.jwks, stored.security.jwks);
        assert_eq!(
            (changed.security.policy_uri.as_deref(), changed.security.logo_uri.as_deref()),
            (Some("https://fintech.example/privacy"), Some("https://fintech.example/logo.png")),
            "{backend:?}: the registration's pages are kept"
        );
        assert_eq!(
            changed.security.token_endpoint_auth_signing_alg,
            Some(portico_model::client::AssertionAlgorithm::Es256),
            "{backend:?}"
        );
        let (_, html) = page(&browser, &app, "/console/clients/fintech").await;
        let pinned =
            html.split("name=\"token_endpoint_auth_signing_alg\"").nth(1).unwrap().split("</select>").next().unwrap();
        assert!(pinned.contains("<option value=\"ES256\" selected>"), "{backend:?}: {pinned}");

        // A choice of an algorithm the server no longer keeps a key of is
        // shown as it is, not quietly replaced by a save.
        let mut older = changed.clone();
        older.client_id = "older".into();
        older.security.userinfo_signed_response_alg = Some(Alg::Ps256);
        app.store.create_client(&older).await.unwrap();
        let (_, html) = page(&browser, &app, "/console/clients/older").await;
        assert!(html.contains("<option value=\"PS256\" selected>"), "{backend:?}");

        // A held registration: listed, approved after a confirmation.
        let metadata = serde_json::json!({"redirect_uris": ["https://held.example/cb"], "client_name": "Held"});
        let (status, registered) = app.register(Some(INITIAL), &metadata).await;
        assert_eq!(status, 201, "{backend:?}: {registered}");
        let held = registered["client_id"].as_str().unwrap().to_owned();
        let (_, html) = page(&browser, &app, "/console/clients").await;
        assert!(html.contains("id=\"held\"") && html.contains(&format!("href=\"/console/clients/{held}\"")));
        let held_page = format!("/console/clients/{held}");
        let (_, html) = page(&browser, &app, &held_page).await;
        assert!(html.contains("id=\"approveClient\""), "{backend:?}");
        let response = post(&browser, &app, &format!("{held_page}/approve"), &[("_csrf", csrf)]).await;
        assert!(response.text().await.unwrap().contains("name=\"confirm\" value=\"yes\""), "asks first");
        assert!(app.store.find_client(&held.as_str().into()).await.unwrap().unwrap().awaiting_approval);
        let confirmed = [("_csrf", csrf), ("confirm", "yes")];
        let response = post(&browser, &app, &format!("{held_page}/approve"), &confirmed).await;
        assert_eq!(location(&response), format!("{held_page}?done=approved"), "{backend:?}");
        assert!(!app.store.find_client(&held.as_str().into()).await.unwrap().unwrap().awaiting_approval);
        let event = &app.store.recent_audit(1).await.unwrap()[0];
        assert_eq!((event.kind.as_str(), event.actor.as_deref()), ("client.approved", Some("operator:operator")));
        let (_, html) = page(&browser, &app, &held_page).await;
        assert!(!html.contains("id=\"approveClient\""), "{backend:?}: approved once");
        let response = post(&browser, &app, &format!("{held_page}/approve"), &confirmed).await;
        assert_eq!(response.status(), 409, "{backend:?}");

        // Keys per algorithm: each rotates alone; one no configuration
        // names retires; a configured one does not.
        let (_, html) = page(&browser, &app, "/console/keys").await;
        for alg in ["RS256", "ES256", "EdDSA"] {
            assert!(html.contains(&format!("id=\"rotate-{alg}\"")), "{backend:?} {alg}");
            assert!(!html.contains(&format!("id=\"retire-{alg}\"")), "{backend:?} {alg}: configured");
        }
        let active = |keys: &[portico_model::key::SigningKeyRecord], alg: &str| {
            keys.iter().find(|k| k.alg == alg && k.retired_at.is_none()).map(|k| k.kid.clone())
        };
        let before = app.store.list_signing_keys().await.unwrap();
        let response =
            post(&browser, &app, "/console/keys/rotate", &[("_csrf", csrf), ("alg", "ES256"), ("confirm", "yes")])
                .await;
        assert_eq!(location(&response), "/console/keys?done=key_rotated", "{backend:?}");
        let after = app.store.list_signing_keys().await.unwrap();
        assert_ne!(active(&after, "ES256"), active(&before, "ES256"), "{backend:?}: a new ES256 key");
        assert_eq!(active(&after, "RS256"), active(&before, "RS256"), "{backend:?}: RS256 untouched");
        let response =
            post(&browser, &app, "/console/keys/retire", &[("_csrf", csrf), ("alg", "ES256"), ("confirm", "yes")])
                .await;
        assert_eq!(response.status(), 409, "{backend:?}: configured");
        // A PS256 key no configuration names: offered for retiring, retired.
        post(&browser, &app, "/console/keys/rotate", &[("_csrf", csrf), ("alg", "PS256"), ("confirm", "yes")]).await;
        let (_, html) = page(&browser, &app, "/console/keys").await;
        assert!(html.contains("id=\"retire-PS256\""), "{backend:?}");
        let response = post(&browser, &app, "/console/keys/retire", &[("_csrf", csrf), ("alg", "PS256")]).await;
        assert!(response.text().await.unwrap().contains("PS256: "), "{backend:?}: the confirmation names the key");
        let retire = [("_csrf", csrf), ("alg", "PS256"), ("confirm", "yes")];
        let response = post(&browser, &app, "/console/keys/retire", &retire).await;
        assert_eq!(response.status(), 409, "{backend:?}: a client still chooses PS256");
        assert!(response.text().await.unwrap().contains("older"), "{backend:?}: the client is named");
        app.store.delete_client(&"older".into()).await.unwrap();
        let response = post(&browser, &app, "/console/keys/retire", &retire).await;
        assert_eq!(location(&response), "/console/keys?done=key_retired", "{backend:?}");
        assert_eq!(active(&app.store.list_signing_keys().await.unwrap(), "PS256"), None, "{backend:?}");
        let keys = app.store.list_signing_keys().await.unwrap();
        let response =
            post(&browser, &app, "/console/keys/rotate", &[("_csrf", csrf), ("alg", "XS256"), ("confirm", "yes")])
                .await;
        assert_eq!(response.status(), 400, "{backend:?}");
        assert_eq!(app.store.list_signing_keys().await.unwrap(), keys, "{backend:?}: nothing made");
    }
}

#[tokio::test]
async fn admins_set_a_clients_profile_request_rules_and_certificate_subject_in_the_console() {
    use portico_crypto::jwt::{Algorithm, SigningKey};
    use portico_model::key::Algorithm as Alg;
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.tokens.signing_algorithms = vec!["ES256".into()];
            c.registration.default_security_profile = portico_model::client::SecurityProfile::Fapi2;
        })
        .await;
        let (browser, _) = sign_in(&app, "operator", "operator-password").await;
        let (_, html) = page(&browser, &app, "/console/clients/new").await;
        assert!(html.contains("<option value=\"fapi2\" selected>"), "{backend:?}: the server's default profile");
        let csrf = csrf_of(&html);
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        let jwks = serde_json::json!({"keys": [key.jwk()]}).to_string();
        let chosen = [
            ("security_profile", "fapi-ru"),
            ("token_endpoint_auth_method", "private_key_jwt"),
            ("jwks", jwks.as_str()),
            ("authorization_signed_response_alg", "ES256"),
            ("request_object_signing_alg", "ES256"),
            ("refresh_token_rotation", "off"),
            ("require_pushed_authorization_requests", "yes"),
            ("dpop_bound_access_tokens", "yes"),
            ("tls_client_auth_subject_kind", "tls_client_auth_san_dns"),
            ("tls_client_auth_subject", "fintech.example"),
        ];
        let form = client_form(&csrf, "fintech", &chosen);
        let response = post(&browser, &app, "/console/clients", &form).await;
        assert_eq!(location(&response), "/console/clients/fintech?done=created", "{backend:?}");
        let stored = app.store.find_client(&"fintech".into()).await.unwrap().unwrap();
        let security = &stored.security;
        assert_eq!(security.security_profile.as_str(), "fapi-ru", "{backend:?}");
        assert_eq!(security.authorization_signed_response_alg, Some(Alg::Es256));
        assert_eq!(security.request_object_signing_alg, Some(Alg::Es256));
        assert_eq!(security.id_token_signed_response_alg, Some(Alg::Es256), "settled by the profile");
        assert_eq!(security.refresh_token_rotation, Some(false));
        assert!(security.require_pushed_authorization_requests && security.dpop_bound_access_tokens);
        assert!(!security.require_signed_request_object && !security.tls_client_certificate_bound_access_tokens);
        assert_eq!(security.tls_client_auth_san_dns.as_deref(), Some("fintech.example"));

        // The page shows every choice as stored.
        let (_, html) = page(&browser, &app, "/console/clients/fintech").await;
        for shown in [
            "<option value=\"fapi-ru\" selected>",
            "<option value=\"off\" selected>",
            "<option value=\"tls_client_auth_san_dns\" selected>",
            "name=\"require_pushed_authorization_requests\" value=\"yes\" checked>",
            "name=\"dpop_bound_access_tokens\" value=\"yes\" checked>",
            "value=\"fintech.example\"",
        ] {
            assert!(html.contains(shown), "{backend:?}: {shown}");
        }

        // Saving the same choices changes nothing; a profile the client's
        // settings do not meet is refused by its label and changes nothing.
        let same: Vec<_> = form.iter().copied().filter(|(name, _)| *name != "client_id").collect();
        let response = post(&browser, &app, "/console/clients/fintech", &same).await;
        assert_eq!(location(&response), "/console/clients/fintech?done=saved", "{backend:?}");
        let saved = app.store.find_client(&"fintech".into()).await.unwrap().unwrap();
        assert_eq!(saved.security, stored.security, "{backend:?}");
        let mut secret = same.clone();
        secret.retain(|(name, _)| *name != "token_endpoint_auth_method");
        secret.push(("token_endpoint_auth_method", "client_secret_basic"));
        let response = post(&browser, &app, "/console/clients/fintech", &secret).await;
        assert_eq!(response.status(), 400, "{backend:?}");
        let html = response.text().await.unwrap();
        assert!(html.contains("<strong data-place=\"tokenEndpointAuthMethod\">"), "{backend:?}: {html}");
        assert!(html.contains("fapi-ru profile"), "{backend:?}");
        assert_eq!(app.store.find_client(&"fintech".into()).await.unwrap().unwrap().security, stored.security);
    }
}

/// The user page lists the passkeys; removing one asks first, then it signs
/// nobody in, and the audit log names the operator.
#[tokio::test]
async fn an_operator_sees_a_users_passkeys_and_removes_one_after_confirming() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
        let passkey = crate::passkeys::enrolled_elsewhere(&app, ivan.id).await;
        let (browser, _) = sign_in(&app, "operator", "operator-password").await;
        let path = format!("/console/users/{}", ivan.id.as_uuid());
        let (status, html) = page(&browser, &app, &path).await;
        assert_eq!(status, 200);
        assert!(html.contains("id=\"passkeys\"") && html.contains(">Phone</td>"), "{backend:?}: {html}");
        let csrf = csrf_of(&html);

        let remove = format!("{path}/passkeys/{}/remove", passkey.id);
        let response = post(&browser, &app, &remove, &[("_csrf", &csrf)]).await;
        assert_eq!(response.status(), 200, "asks first");
        assert!(response.text().await.unwrap().contains("name=\"confirm\" value=\"yes\""));
        assert_eq!(app.store.passkeys_of(ivan.id).await.unwrap().len(), 1, "nothing before confirming");
        let response = post(&browser, &app, &remove, &[("_csrf", "forged"), ("confirm", "yes")]).await;
        assert_eq!(response.status(), 403);
        let response = post(&browser, &app, &remove, &[("_csrf", &csrf), ("confirm", "yes")]).await;
        assert_eq!((response.status().as_u16(), location(&response)), (303, format!("{path}?done=passkey_removed")));
        assert!(app.store.passkeys_of(ivan.id).await.unwrap().is_empty(), "{backend:?}");
        let event = &app.store.recent_audit(1).await.unwrap()[0];
        assert_eq!((event.kind.as_str(), event.actor.as_deref()), ("passkey.removed", Some("operator:operator")));
        let (_, html) = page(&browser, &app, &format!("{path}?done=passkey_removed")).await;
        assert!(html.contains("id=\"noPasskeys\"") && html.contains("id=\"notice\""), "{html}");
        let response = post(&browser, &app, &remove, &[("_csrf", &csrf), ("confirm", "yes")]).await;
        assert_eq!(response.status(), 404, "{backend:?}: removed once");
    }
}

/// The ids linked from a list page's table `table` under `prefix`.
fn listed(html: &str, table: &str, prefix: &str) -> Vec<String> {
    let Some(at) = html.find(&format!("id=\"{table}\"")) else { return Vec::new() };
    let table = &html[at..at + html[at..].find("</table>").unwrap()];
    table.split(&format!("href=\"{prefix}")).skip(1).map(|rest| rest[..rest.find('"').unwrap()].to_owned()).collect()
}

/// The address of a list page's next page, if it has one.
fn next_page(html: &str) -> Option<String> {
    let at = html.find("id=\"nextPage\"")?;
    let before = &html[..at];
    let href = before.rfind("href=\"")? + 6;
    // An attribute's `&` as the templates write it (`&#38;` or `&amp;`).
    Some(before[href..href + before[href..].find('"')?].replace("&#38;", "&").replace("&amp;", "&"))
}

/// The queue above the clients shows the 50 oldest registrations held for
/// approval and, when more are held, leads to the list of only them
/// (`?awaitingApproval=true`), a page at a time, every one once.
#[tokio::test]
async fn every_registration_held_for_approval_is_listed_a_page_at_a_time() {
    const INITIAL: &str = portico_tests::REGISTRATION_TOKEN;
    for backend in backends() {
        let app = TestApp::spawn_holding_registrations(backend).await;
        let (browser, _) = sign_in(&app, "operator", "operator-password").await;
        let (_, html) = page(&browser, &app, "/console/clients?awaitingApproval=true").await;
        assert!(html.contains("id=\"onlyHeld\"") && listed(&html, "clients", "/console/clients/").is_empty());
        assert!(html.contains("No registration is awaiting approval.") || html.contains("Ни одна регистрация"));

        let mut held = Vec::new();
        for n in 0..53 {
            let metadata =
                serde_json::json!({"redirect_uris": ["https://held.example/cb"], "client_name": format!("Held {n}")});
            let (status, registered) = app.register(Some(INITIAL), &metadata).await;
            assert_eq!(status, 201, "{backend:?}: {registered}");
            held.push(registered["client_id"].as_str().unwrap().to_owned());
        }
        held.sort();
        let (status, html) = page(&browser, &app, "/console/clients").await;
        assert_eq!(status, 200, "{backend:?}");
        let queue = &html[html.find("id=\"held\"").expect("the queue")..];
        let queue = &queue[..queue.find("</section>").unwrap()];
        assert_eq!(queue.matches("<li>").count(), 50, "{backend:?}: the oldest 50");
        assert!(queue.contains("href=\"/console/clients?awaitingApproval=true\" id=\"allHeld\""), "{backend:?}");

        let mut shown = Vec::new();
        let mut at = Some("/console/clients?awaitingApproval=true".to_owned());
        while let Some(here) = at {
            let (status, html) = page(&browser, &app, &here).await;
            assert_eq!(status, 200, "{backend:?} {here}");
            assert!(html.contains("id=\"onlyHeld\"") && !html.contains("id=\"held\""), "{backend:?} {here}");
            shown.push(listed(&html, "clients", "/console/clients/"));
            at = next_page(&html);
            assert!(at.as_deref().is_none_or(|next| next.contains("awaitingApproval=true")), "{backend:?}: {at:?}");
            assert!(shown.len() <= 2, "{backend:?}: the pages end");
        }
        assert_eq!(shown.iter().map(Vec::len).collect::<Vec<_>>(), [50, 3], "{backend:?}");
        assert_eq!(shown.concat(), held, "{backend:?}: only the held, each once, in id order");
    }
}

#[tokio::test]
async fn long_lists_of_clients_merchants_and_agreements_are_shown_a_page_at_a_time_held_registrations_first() {
    use portico_reports::sample::{Shape, agreement};
    const INITIAL: &str = portico_tests::REGISTRATION_TOKEN;
    for backend in backends() {
        let app = TestApp::spawn_holding_registrations(backend).await;
        let admin = |path: &'static str, body: serde_json::Value| {
            let request = app.http().post(app.url(path)).bearer_auth(portico_tests::ADMIN_TOKEN).json(&body);
            async move { request.send().await.unwrap().status().as_u16() }
        };
        let mut numbers = Vec::new();
        for n in 0..55 {
            let client =
                serde_json::json!({"clientId": format!("a-{n:02}"), "redirectUris": ["https://rp.example/cb"]});
            assert_eq!(admin("/admin/v1/clients", client).await, 201);
            let shop = serde_json::json!({"merchantId": format!("shop-{n:02}"), "publicId": format!("pub-{n:02}"),
                                          "sbpMerchantId": format!("MA00000000{n:02}")});
            assert_eq!(admin("/admin/v1/merchants", shop).await, 201);
            numbers.push(&*Box::leak(format!("П-{n:02}").into_boxed_str()));
        }
        let agreements: Vec<_> = numbers.iter().map(|number| agreement(&Shape { number, ..Shape::demo() })).collect();
        app.store.save_agreements(&agreements, portico_model::clock::Clock::now(app.clock.as_ref())).await.unwrap();
        // A registration held for approval, whose id sorts past the first page.
        let metadata = serde_json::json!({"redirect_uris": ["https://held.example/cb"], "client_name": "Held"});
        let (status, registered) = app.register(Some(INITIAL), &metadata).await;
        assert_eq!(status, 201, "{backend:?}: {registered}");
        let held = registered["client_id"].as_str().unwrap().to_owned();

        let (browser, _) = sign_in(&app, "operator", "operator-password").await;
        let [clients, merchants, numbers] = app.every_key().await;
        assert!(clients.iter().position(|id| *id == held).unwrap() >= 50, "{backend:?}: {clients:?}");

        let (status, html) = page(&browser, &app, "/console/clients").await;
        assert_eq!(status, 200, "{backend:?}");
        let held_section = &html[html.find("id=\"held\"").expect("the held registrations")..];
        assert!(held_section.contains(&format!("href=\"/console/clients/{held}\"")), "{backend:?}: on the first page");
        for (path, table, prefix, all) in [
            ("/console/clients", "clients", "/console/clients/", &clients),
            ("/console/merchants", "merchants", "/console/merchants/", &merchants),
            ("/console/brokerage", "agreements", "/console/reports?cnum=", &numbers),
        ] {
            let mut shown = Vec::new();
            let mut at = Some(path.to_owned());
            let mut pages = 0;
            while let Some(here) = at {
                let (status, html) = page(&browser, &app, &here).await;
                assert_eq!(status, 200, "{backend:?} {here}");
                let rows = listed(&html, table, prefix);
                assert!(!rows.is_empty() && rows.len() <= 50, "{backend:?} {here}: {}", rows.len());
                shown.push(rows.len());
                at = next_page(&html);
                pages += 1;
                assert!(pages <= 3, "{backend:?} {path}: the pages end");
            }
            assert_eq!(shown, vec![50, all.len() - 50], "{backend:?} {path}");
        }
        // Every client once, in order.
        let (_, first) = page(&browser, &app, "/console/clients").await;
        let (_, second) = page(&browser, &app, &next_page(&first).unwrap()).await;
        let both = [listed(&first, "clients", "/console/clients/"), listed(&second, "clients", "/console/clients/")];
        assert_eq!(&both.concat(), &clients, "{backend:?}");
    }
}
