//! The browser login pages: view data, errors, CSRF, error page, expiry.

use portico_model::clock::Clock as _;
use portico_tests::{Pkce, TestApp, backends, location, location_param, view_data};
use time::Duration;

/// Starts a login in `browser` and returns the page's view data.
async fn start(app: &TestApp, browser: &reqwest::Client) -> serde_json::Value {
    let response = browser.get(app.authorize_url(&Pkce::new(), &[])).send().await.unwrap();
    assert_eq!(response.status(), 303);
    let page = browser.get(app.url("/login")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    view_data(&page.text().await.unwrap())
}

/// Submits the `username-password` step with `csrf` in the `_csrf` field.
async fn submit(
    app: &TestApp,
    browser: &reqwest::Client,
    csrf: &str,
    login: &str,
    password: &str,
) -> reqwest::Response {
    let form = [("_csrf", csrf), ("principal", login), ("credentials", password)];
    browser.post(app.url("/login")).form(&form).send().await.unwrap()
}

fn csrf_of(view: &serde_json::Value) -> &str {
    view["pageData"]["authenticationFlowContext"]["csrf"].as_str().unwrap()
}

fn keys(value: &serde_json::Value) -> Vec<String> {
    let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    keys
}

#[tokio::test]
async fn login_page_carries_exactly_the_login_view_data() {
    let app = TestApp::spawn(backends()[0]).await;
    let view = start(&app, &app.browser()).await;
    assert_eq!(keys(&view), ["locale", "pageData", "pageType"]);
    assert_eq!(view["pageType"], "LOGIN_FORM_STEP");
    let page = &view["pageData"];
    assert_eq!(keys(page), ["authenticationFlowContext", "errors", "stepViewData", "themeViewData"]);
    let context = &page["authenticationFlowContext"];
    assert_eq!(keys(context), ["authPageRefreshTtlMs", "authenticationFlowId", "csrf", "deviceId"]);
    assert_eq!(context["authPageRefreshTtlMs"], 15 * 60 * 1000);
    assert!(context["deviceId"].is_string());
    let step = &page["stepViewData"];
    assert_eq!(keys(step), ["captchaRequired", "phoneNumberView", "principal", "stepType", "viewType"]);
    assert_eq!(step["stepType"], "username-password");
    assert_eq!(step["viewType"], "default");
    assert_eq!(step["captchaRequired"], false);
    assert!(page["errors"].is_null());
    assert_eq!(keys(&page["themeViewData"]), ["passwordResetEnabled", "supportDrawer", "systemMessages"]);
}

#[tokio::test]
async fn wrong_password_returns_to_the_step_with_the_error_code_once() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let browser = app.browser();
        let view = start(&app, &browser).await;
        let csrf = csrf_of(&view);
        let response = submit(&app, &browser, csrf, "ivan", "wrong").await;
        assert_eq!(response.status(), 303);
        assert_eq!(location(&response), "/login");
        assert!(
            response
                .headers()
                .get_all("set-cookie")
                .iter()
                .any(|c| c.to_str().unwrap().starts_with("step_error_details="))
        );

        let page = browser.get(app.url("/login")).send().await.unwrap();
        let html = page.text().await.unwrap();
        let view = view_data(&html);
        assert_eq!(view["pageData"]["errors"]["credentialsError"], "challenge.username-password.wrong-credentials");
        assert!(view["pageData"]["errors"]["principalError"].is_null());
        assert_eq!(view["pageData"]["stepViewData"]["principal"], "ivan", "the identifier is kept");
        let again = view_data(&browser.get(app.url("/login")).send().await.unwrap().text().await.unwrap());
        assert!(again["pageData"]["errors"].is_null(), "{backend:?}: shown once");

        // Unknown users get the same answer.
        let response = submit(&app, &browser, csrf, "nobody", "x").await;
        assert_eq!(location(&response), "/login");
    }
}

#[tokio::test]
async fn csrf_failure_leads_to_the_error_page_once() {
    let app = TestApp::spawn(backends()[0]).await;
    let browser = app.browser();
    start(&app, &browser).await;
    let response = submit(&app, &browser, "forged", "ivan", "ivan-password").await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/error");
    let cookies: Vec<_> =
        response.headers().get_all("set-cookie").iter().map(|c| c.to_str().unwrap().to_owned()).collect();
    assert!(cookies.iter().any(|c| c.starts_with("error_page_details=")));
    assert!(cookies.iter().any(|c| c.starts_with("failed_authentication_flow_id=")));

    let page = browser.get(app.url("/error")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    // Its forms (the language switch) post to Portico and come back to it.
    let csp = page.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(csp.ends_with("; form-action 'self'"), "{csp}");
    let view = view_data(&page.text().await.unwrap());
    assert_eq!(view["pageType"], "ERROR");
    assert!(view["pageData"]["errorPageContext"]["csrf"].is_string());
    assert_eq!(view["pageData"]["errorDetails"]["errorCode"], "fatal-error");
    assert_eq!(view["pageData"]["errorDetails"]["actions"][0]["action"], "RETRY_LOGIN");
    assert_eq!(view["pageData"]["errorDetails"]["actions"][0]["url"], "/login/restart");

    // The cookie was read and cleared; the page stays, from the server,
    // for as long as its process lives.
    let again = browser.get(app.url("/error")).send().await.unwrap();
    assert_eq!(again.status(), 200);
    let again = view_data(&again.text().await.unwrap());
    assert_eq!(again["pageData"]["errorDetails"], view["pageData"]["errorDetails"]);

    // Restart restores the original authorize request.
    let restart = browser.get(app.url("/login/restart")).send().await.unwrap();
    assert_eq!(restart.status(), 302);
    assert!(location(&restart).starts_with("/oauth2/authorize?"));
    let response = browser.get(app.url(&location(&restart))).send().await.unwrap();
    assert_eq!(response.status(), 303, "a fresh login process");
}

#[tokio::test]
async fn the_xsrf_header_is_accepted_instead_of_the_field() {
    let app = TestApp::spawn(backends()[0]).await;
    let browser = app.browser();
    let view = start(&app, &browser).await;
    let csrf = csrf_of(&view);
    let response = browser
        .post(app.url("/login"))
        .header("x-xsrf-token", csrf)
        .form(&[("principal", "ivan"), ("credentials", "ivan-password")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    // Accepted: the password step is passed, and the new device asks for the SMS code.
    assert_eq!(location(&response), "/login");
    let view = app.login_view(&browser).await;
    assert_eq!(view["pageData"]["stepViewData"]["stepType"], "sms-otp");
}

#[tokio::test]
async fn a_blocked_user_sees_user_is_blocked() {
    let app = TestApp::spawn(backends()[0]).await;
    let browser = app.browser();
    let view = start(&app, &browser).await;
    let csrf = csrf_of(&view);
    let response = submit(&app, &browser, csrf, "blocked", "blocked-password").await;
    assert_eq!(location(&response), "/error");
    let view = view_data(&browser.get(app.url("/error")).send().await.unwrap().text().await.unwrap());
    assert_eq!(view["pageData"]["errorDetails"]["errorCode"], "user-is-blocked");
    assert_eq!(view["pageData"]["errorDetails"]["actions"][0]["action"], "REDIRECT");
}

#[tokio::test]
async fn an_expired_process_returns_the_browser_to_the_client() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let browser = app.browser();
        start(&app, &browser).await;
        app.clock.advance(Duration::minutes(16));
        let response = browser.get(app.url("/login")).send().await.unwrap();
        assert_eq!(response.status(), 302, "{backend:?}");
        assert!(location(&response).starts_with(&app.redirect_uri()));
        assert_eq!(location_param(&response, "error").as_deref(), Some("access_denied"));
        assert_eq!(location_param(&response, "state").as_deref(), Some("st-123"));
        assert_eq!(location_param(&response, "iss").as_deref(), Some(app.base.as_str()), "RFC 9207");

        // Without a process and without the client entry: the logged-out page.
        let stranger = app.browser();
        for request in [stranger.get(app.url("/login")), stranger.post(app.url("/login")).form(&[("_csrf", "x")])] {
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 302);
            assert_eq!(location(&response), app.url("/logged-out"));
        }
    }
}

#[tokio::test]
async fn blocking_a_user_ends_sessions_and_tokens_at_once() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let browser = app.browser();
        let pkce = Pkce::new();
        let code = app.login_for_code(&browser, &pkce, "maria", "maria-password").await;
        let response = app
            .token_request(&[("grant_type", "authorization_code"), ("code", &code), ("code_verifier", &pkce.verifier)])
            .await;
        let tokens: serde_json::Value = response.json().await.unwrap();
        let access = tokens["access_token"].as_str().unwrap();
        assert_eq!(app.liveness(access).await, 200);

        app.store.set_user_blocked("maria", true, app.clock.now()).await.unwrap().unwrap();
        assert_eq!(app.liveness(access).await, 401, "{backend:?}");
        let response = browser.get(app.authorize_url(&Pkce::new(), &[])).send().await.unwrap();
        assert_eq!(response.status(), 303, "the SSO session is gone");
    }
}

async fn patch_locale(app: &TestApp, browser: &reqwest::Client, locale: Option<&str>, token: Option<&str>) -> u16 {
    let url = match locale {
        Some(locale) => app.url(&format!("/login/user-settings/locale?locale={locale}")),
        None => app.url("/login/user-settings/locale"),
    };
    let mut request = browser.patch(url);
    if let Some(token) = token {
        request = request.header("x-xsrf-token", token);
    }
    let response = request.send().await.unwrap();
    assert!(response.headers().get("location").is_none(), "never a redirect");
    let status = response.status().as_u16();
    assert!(response.bytes().await.unwrap().is_empty(), "no body");
    status
}

#[tokio::test]
async fn the_language_switch_answers_every_status_of_the_spec() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let browser = app.browser();
        let view = start(&app, &browser).await;
        let csrf = csrf_of(&view).to_owned();

        assert_eq!(patch_locale(&app, &browser, None, Some(&csrf)).await, 400, "{backend:?}: locale missing");
        assert_eq!(patch_locale(&app, &browser, Some("de"), Some(&csrf)).await, 400, "unsupported");
        assert_eq!(patch_locale(&app, &browser, Some("en"), None).await, 403, "no X-XSRF-TOKEN");
        assert_eq!(patch_locale(&app, &browser, Some("en"), Some("forged")).await, 403, "wrong token");

        assert_eq!(patch_locale(&app, &browser, Some("en"), Some(&csrf)).await, 200);
        let html = browser.get(app.url("/login")).send().await.unwrap().text().await.unwrap();
        let after = view_data(&html);
        assert_eq!(after["locale"], "en");
        assert!(html.contains("Sign in to online banking"));
        assert_eq!(after["pageData"]["stepViewData"], view["pageData"]["stepViewData"], "step unchanged");
        assert_eq!(patch_locale(&app, &browser, Some("ru"), Some(&csrf)).await, 200);
        let html = browser.get(app.url("/login")).send().await.unwrap().text().await.unwrap();
        assert_eq!(view_data(&html)["locale"], "ru");
        assert!(html.contains("Вход в интернет-банк"));

        // A matching header and cookie but no process at all.
        let stranger = app.http();
        let response = stranger
            .patch(app.url("/login/user-settings/locale?locale=en"))
            .header("x-xsrf-token", "abc")
            .header("cookie", "XSRF-TOKEN=abc")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "process not found");
    }
}

#[tokio::test]
async fn the_error_page_switches_the_language_of_the_failed_process() {
    let app = TestApp::spawn(backends()[0]).await;
    let browser = app.browser();
    start(&app, &browser).await;
    let response = submit(&app, &browser, "forged", "ivan", "ivan-password").await;
    assert_eq!(location(&response), "/error");
    let view = view_data(&browser.get(app.url("/error")).send().await.unwrap().text().await.unwrap());
    let csrf = view["pageData"]["errorPageContext"]["csrf"].as_str().unwrap();
    assert_eq!(patch_locale(&app, &browser, Some("en"), Some(csrf)).await, 200);
    assert_eq!(patch_locale(&app, &browser, Some("en"), Some("forged")).await, 403);
    let restart = browser.get(app.url("/login/restart")).send().await.unwrap();
    assert!(location(&restart).starts_with("/oauth2/authorize?"));
}

/// `GET /error` reads and clears `error_page_details`, as the contract
/// says; the error stays on the server under `failed_authentication_flow_id`
/// (set for every error), so the page shows again, in the language chosen
/// on it, for as long as the process lives, and the ended process is never
/// continued.
#[tokio::test]
async fn the_error_page_stays_on_the_server_for_every_error() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let browser = app.browser();
        start(&app, &browser).await;
        let response = submit(&app, &browser, "forged", "ivan", "ivan-password").await;
        assert_eq!(location(&response), "/error");
        let blocked_browser = app.browser();
        let view = start(&app, &blocked_browser).await;
        let response = submit(&app, &blocked_browser, csrf_of(&view), "blocked", "blocked-password").await;
        assert_eq!(location(&response), "/error");
        let set_cookies: Vec<_> =
            response.headers().get_all("set-cookie").iter().map(|c| c.to_str().unwrap().to_owned()).collect();
        let failed_id = set_cookies
            .iter()
            .find_map(|c| c.strip_prefix("failed_authentication_flow_id="))
            .map(|c| c.split(';').next().unwrap().to_owned())
            .unwrap_or_else(|| panic!("{backend:?}: user-is-blocked names its process too: {set_cookies:?}"));

        for (browser, code) in [(&browser, "fatal-error"), (&blocked_browser, "user-is-blocked")] {
            let first = browser.get(app.url("/error")).send().await.unwrap();
            assert_eq!(first.status(), 200);
            let first = view_data(&first.text().await.unwrap());
            assert_eq!(first["pageData"]["errorDetails"]["errorCode"], code, "{backend:?}");
            let csrf = first["pageData"]["errorPageContext"]["csrf"].as_str().unwrap();
            assert_eq!(patch_locale(&app, browser, Some("ru"), Some(csrf)).await, 200, "{backend:?}: {code}");
            let again = browser.get(app.url("/error")).send().await.unwrap();
            assert_eq!(again.status(), 200, "{backend:?}: {code} shows again, not the logged-out page");
            let html = again.text().await.unwrap();
            assert!(html.contains("lang=\"ru\""), "{backend:?}: in the language chosen on it");
            assert_eq!(view_data(&html)["pageData"]["errorDetails"], first["pageData"]["errorDetails"]);
        }

        // The blocked user's process ended: it is never continued, though
        // the browser still names it.
        let resumed = app
            .browser()
            .get(app.url("/login"))
            .header("cookie", format!("authentication_flow={failed_id}"))
            .send()
            .await
            .unwrap();
        assert_ne!(resumed.status(), 200, "{backend:?}: an ended process shows no step");
    }
}

/// Without JavaScript the language buttons submit their form: `POST` on the
/// locale path, with the `XSRF-TOKEN` cookie's value as `_csrf`, answered
/// 303 back to the page, now in that language; the resend button is not
/// disabled by the page (the server says how long to wait).
#[tokio::test]
async fn the_language_switch_works_without_javascript() {
    let app = TestApp::spawn(backends()[0]).await;
    let browser = app.browser();
    let view = start(&app, &browser).await;
    let csrf = csrf_of(&view).to_owned();
    let html = browser.get(app.url("/login")).send().await.unwrap().text().await.unwrap();
    assert!(html.contains(r#"<form class="lang" id="language" method="post" action="/login/user-settings/locale">"#));
    let post = |form: Vec<(&'static str, String)>| {
        let (app, browser) = (&app, &browser);
        async move { browser.post(app.url("/login/user-settings/locale")).form(&form).send().await.unwrap() }
    };
    let response = post(vec![("_csrf", "forged".into()), ("locale", "ru".into())]).await;
    assert_eq!(response.status(), 403);
    let response = post(vec![("_csrf", csrf.clone()), ("locale", "de".into())]).await;
    assert_eq!(response.status(), 400);
    let response = post(vec![("_csrf", csrf.clone()), ("locale", "ru".into())]).await;
    assert_eq!((response.status().as_u16(), location(&response)), (303, "/login".to_owned()));
    let html = browser.get(app.url("/login")).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("<html lang=\"ru\""), "the page is in Russian now");

    // On the error page: the failed process's language, back to /error.
    let blocked = app.browser();
    let view = start(&app, &blocked).await;
    let response = submit(&app, &blocked, csrf_of(&view), "blocked", "blocked-password").await;
    assert_eq!(location(&response), "/error");
    let page = view_data(&blocked.get(app.url("/error")).send().await.unwrap().text().await.unwrap());
    let csrf = page["pageData"]["errorPageContext"]["csrf"].as_str().unwrap().to_owned();
    let form = [("_csrf", csrf.as_str()), ("locale", "ru")];
    let response = blocked.post(app.url("/login/user-settings/locale")).form(&form).send().await.unwrap();
    assert_eq!((response.status().as_u16(), location(&response)), (303, "/error".to_owned()));
    let html = blocked.get(app.url("/error")).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("Пользователь заблокирован"), "{html}");
}

#[tokio::test]
async fn login_pages_carry_a_strict_csp_and_no_inline_script() {
    let app = TestApp::spawn(backends()[0]).await;
    let browser = app.browser();
    let response = browser.get(app.authorize_url(&Pkce::new(), &[])).send().await.unwrap();
    assert_eq!(response.status(), 303);
    let page = browser.get(app.url("/login")).send().await.unwrap();
    let csp = page.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(!csp.contains("unsafe-inline"));
    // Its forms post to Portico, whose redirects may end at the client (the
    // demo client's callback is on Portico's own origin, named all the same).
    let origin = app.base.trim_end_matches('/');
    assert!(csp.ends_with(&format!("; form-action 'self' {origin}")), "{csp}");
    assert_eq!(page.headers()["x-frame-options"], "DENY");
    assert_eq!(page.headers()["referrer-policy"], "no-referrer");
    let html = page.text().await.unwrap();
    for script in html.split("<script").skip(1) {
        let tag = script.split('>').next().unwrap();
        assert!(tag.contains("src=") || tag.contains("type=\"application/json\""), "inline script: <script{tag}>");
    }
    assert!(!html.contains("<style") && !html.contains("style=\""), "no inline style");
    for asset in ["/login/assets/login.js", "/login/assets/login.css"] {
        let response = browser.get(app.url(asset)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{asset}");
    }
}

#[tokio::test]
async fn the_configured_theme_reaches_the_view_data_and_the_page() {
    use portico_identity::theme::{Drawer, PerLanguage, SystemMessage, Theme};
    let app = TestApp::spawn_with(backends()[0], |c| {
        c.theme = Theme {
            password_reset_enabled: true,
            support_drawer: Some(PerLanguage {
                ru: Some(Drawer { title: Some("Поддержка".into()), ..Drawer::default() }),
                en: Some(Drawer { title: Some("Support".into()), ..Drawer::default() }),
            }),
            system_messages: Some(PerLanguage {
                ru: Some(vec![SystemMessage {
                    id: uuid::Uuid::nil(),
                    title: Some("Работы".into()),
                    message: Some("Ночью возможны перерывы".into()),
                }]),
                en: None,
            }),
            ..Theme::default()
        };
    })
    .await;
    let browser = app.browser();
    browser.get(app.authorize_url(&Pkce::new(), &[])).send().await.unwrap();
    let page = browser.get(app.url("/login")).header("accept-language", "ru").send().await.unwrap();
    let html = page.text().await.unwrap();
    let theme = &view_data(&html)["pageData"]["themeViewData"];
    assert_eq!(theme["passwordResetEnabled"], true);
    assert_eq!(theme["supportDrawer"]["en"]["title"], "Support");
    assert_eq!(theme["systemMessages"]["ru"][0]["message"], "Ночью возможны перерывы");
    assert!(html.contains("Ночью возможны перерывы") && html.contains("Поддержка"), "shown on the page");

    // Without messages, systemMessages is null.
    let plain = TestApp::spawn(backends()[0]).await;
    let browser = plain.browser();
    browser.get(plain.authorize_url(&Pkce::new(), &[])).send().await.unwrap();
    let view = plain.login_view(&browser).await;
    assert!(view["pageData"]["themeViewData"]["systemMessages"].is_null());
}

#[tokio::test]
async fn the_language_follows_the_process_then_the_cookie_then_the_setting_then_the_browser() {
    let app =
        TestApp::spawn_with(backends()[0], |c| c.login.default_locale = Some(portico_model::login::Locale::En)).await;
    let browser = app.browser();
    browser.get(app.authorize_url(&Pkce::new(), &[])).send().await.unwrap();
    let page = |accept: &'static str| {
        let browser = browser.clone();
        let url = app.url("/login");
        async move { browser.get(url).header("accept-language", accept).send().await.unwrap().text().await.unwrap() }
    };
    assert!(page("ru").await.contains("lang=\"en\""), "the setting beats Accept-Language");
    let view = app.login_view(&browser).await;
    let csrf = csrf_of(&view).to_owned();
    let response = browser
        .patch(app.url("/login/user-settings/locale?locale=ru"))
        .header("x-xsrf-token", &csrf)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let cookie = response.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(cookie.starts_with("svc.locale=ru"), "{cookie}");
    assert!(page("en").await.contains("lang=\"ru\""), "the process's choice");
    // A new process in the same browser: the cookie decides.
    browser.get(app.authorize_url(&Pkce::new(), &[("prompt", Some("login"))])).send().await.unwrap();
    assert!(page("en").await.contains("lang=\"ru\""), "the cookie beats the setting");
    // Another browser: the setting.
    let other = app.browser();
    other.get(app.authorize_url(&Pkce::new(), &[])).send().await.unwrap();
    let html = other.get(app.url("/login")).header("accept-language", "ru").send().await.unwrap().text().await.unwrap();
    assert!(html.contains("lang=\"en\""));
}

#[tokio::test]
async fn the_bank_and_the_asking_client_are_named_on_every_page_in_its_language() {
    for backend in portico_tests::backends() {
        let app = TestApp::spawn(backend).await;
        let browser = app.browser();
        browser
            .get(app.authorize_url(&portico_tests::Pkce::new(), &[("ui_locales", Some("en"))]))
            .send()
            .await
            .unwrap();
        let html = browser.get(app.url("/login")).send().await.unwrap().text().await.unwrap();
        assert!(html.contains(r#"<span class="bank" id="bankName">Demo Bank</span>"#), "{backend:?}: {html}");
        assert!(html.contains(r#"<p class="client" id="clientName">To continue to Demo application</p>"#), "{html}");
        assert!(html.contains(r#"id="securityNotice">The bank never calls"#), "{html}");
        assert!(html.contains(r#"id="supportContacts">Support: 8 800 000-00-00"#), "{html}");
        assert!(html.contains(r#"<img src="/login/assets/logo" alt="""#), "{html}");
        // The other pages carry the bank too.
        for path in ["/logged-out", "/oauth2/logout?ui_locales=ru"] {
            let html = app.browser().get(app.url(path)).send().await.unwrap().text().await.unwrap();
            assert!(html.contains("id=\"bankName\">") && html.contains("id=\"securityNotice\">"), "{path}: {html}");
        }
        let logo = app.http().get(app.url("/login/assets/logo")).send().await.unwrap();
        assert_eq!(logo.headers()["content-type"], "image/svg+xml");
        assert_eq!(logo.headers()["x-content-type-options"], "nosniff");
        let css = app.http().get(app.url("/login/assets/theme.css")).send().await.unwrap();
        assert_eq!(css.headers()["content-type"], "text/css; charset=utf-8");
    }
}

#[tokio::test]
async fn a_configured_theme_names_the_bank_and_colours_the_pages() {
    let dir = portico_tests::TempDir::new();
    let logo = dir.0.join("bank.png");
    std::fs::write(&logo, b"\x89PNG\r\n\x1a\n-a-logo").unwrap();
    let app = TestApp::spawn_with(portico_tests::backends()[0], |c| {
        c.theme.bank_name = Some(portico_identity::theme::PerLanguage {
            ru: Some("Банк «Пример»".into()),
            en: Some("Example Bank".into()),
        });
        c.theme.accent_color = Some("#0b5d1e".into());
        c.theme.logo = Some(logo.clone());
    })
    .await;
    let html = app.browser().get(app.url("/logged-out")).send().await.unwrap();
    let html = html.text().await.unwrap();
    assert!(html.contains("id=\"bankName\">Банк «Пример»</span>"), "{html}");
    assert!(!html.contains("securityNotice"), "no notice configured, none shown");
    let css = app.http().get(app.url("/login/assets/theme.css")).send().await.unwrap().text().await.unwrap();
    assert!(css.contains("--accent: #0b5d1e"), "{css}");
    let logo = app.http().get(app.url("/login/assets/logo")).send().await.unwrap();
    assert_eq!(logo.headers()["content-type"], "image/png");
    assert_eq!(logo.bytes().await.unwrap().as_ref(), b"\x89PNG\r\n\x1a\n-a-logo");
}

/// The browser's tab, its history and a screen reader's first words name
/// the page and the bank the theme names, never Portico: the login steps,
/// the error page, the signed-out and refused-logout pages, the page that
/// posts an answer to the client (`form_post`), each in its language.
#[tokio::test]
async fn every_page_title_names_the_page_and_the_bank() {
    let app = TestApp::spawn_with(portico_tests::backends()[0], |c| {
        c.theme.bank_name = Some(portico_identity::theme::PerLanguage {
            ru: Some("Банк «Пример»".into()),
            en: Some("Example Bank".into()),
        });
    })
    .await;
    let title = |html: &str| {
        html.split_once("<title>").and_then(|(_, rest)| rest.split_once("</title>")).map(|(t, _)| t.to_owned())
    };
    for (locale, login, error, signed_out, refused) in [
        ("en", "Sign in", "Could not sign you in", "Signed out", "You are still signed in"),
        ("ru", "Вход", "Не удалось войти", "Вы вышли", "Выход не выполнен"),
    ] {
        let bank = if locale == "en" { "Example Bank" } else { "Банк «Пример»" };
        let named = |page: &str| Some(format!("{page} — {bank}"));
        let browser = app.browser();
        browser.get(app.authorize_url(&Pkce::new(), &[("ui_locales", Some(locale))])).send().await.unwrap();
        let html = browser.get(app.url("/login")).send().await.unwrap().text().await.unwrap();
        assert_eq!(title(&html), named(login), "{locale}: a login step");

        let view = app.login_view(&browser).await;
        let response = submit(&app, &browser, csrf_of(&view), "blocked", "blocked-password").await;
        assert_eq!(location(&response), "/error", "{locale}");
        let html = browser.get(app.url("/error")).send().await.unwrap().text().await.unwrap();
        assert_eq!(title(&html), named(error), "{locale}: the error page");

        let logout = app.url(&format!("/oauth2/logout?ui_locales={locale}"));
        let html = app.browser().get(logout).send().await.unwrap().text().await.unwrap();
        assert_eq!(title(&html), named(signed_out), "{locale}: signed out");
        let bad = app.url(&format!("/oauth2/logout?ui_locales={locale}&client_id=nobody"));
        let html = app.browser().get(bad).send().await.unwrap().text().await.unwrap();
        assert_eq!(title(&html), named(refused), "{locale}: a refused logout");

        let posted = app.authorize_url(
            &Pkce::new(),
            &[("ui_locales", Some(locale)), ("prompt", Some("none")), ("response_mode", Some("form_post"))],
        );
        let html =
            app.browser().get(posted).header("accept-language", locale).send().await.unwrap().text().await.unwrap();
        assert!(html.contains("login_required"), "{locale}: the answer is posted: {html}");
        assert_eq!(title(&html), named(login), "{locale}: the form_post page");
    }
}

/// The way back to the client comes from the request authorize checked and
/// the process keeps. A process stored before that was kept (only the
/// query) is not continued, and finds the same way back: the browser goes
/// to the client at once, with the same answer.
#[tokio::test]
async fn the_way_back_to_the_client_comes_from_the_kept_request_and_from_older_processes_alike() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        for strip in [false, true] {
            let browser = app.browser();
            let response = browser.get(app.authorize_url(&Pkce::new(), &[])).send().await.unwrap();
            let flow = response
                .headers()
                .get_all("set-cookie")
                .iter()
                .find_map(|c| c.to_str().unwrap().strip_prefix("authentication_flow=").map(|v| v[..36].to_owned()))
                .expect("authentication_flow");
            let id: uuid::Uuid = flow.parse().unwrap();
            let mut process = app.store.find_login_process(id.into(), app.clock.now()).await.unwrap().unwrap();
            let request = process.state.request.clone().expect("authorize keeps the checked request");
            assert_eq!(
                (request.redirect_uri.as_str(), request.state.as_deref()),
                (app.redirect_uri().as_str(), Some("st-123"))
            );
            assert_eq!(request.scope, ["openid", "profile", "email", "phone"]);
            let view = app.login_view(&browser).await;
            if strip {
                process.state.request = None;
                assert!(app.store.update_login_process(&process).await.unwrap());
            }
            let response = submit(&app, &browser, csrf_of(&view), "blocked", "blocked-password").await;
            let url = if strip {
                assert_eq!(response.status(), 302, "{backend:?}: a process without its request is not continued");
                location(&response)
            } else {
                assert_eq!(location(&response), "/error");
                let page = browser.get(app.url("/error")).send().await.unwrap().text().await.unwrap();
                view_data(&page)["pageData"]["errorDetails"]["actions"][0]["url"].as_str().unwrap().to_owned()
            };
            let expected = format!(
                "{}?error=access_denied&error_description=the+login+process+ended+without+completing&state=st-123&iss=",
                app.redirect_uri()
            );
            assert!(url.starts_with(&expected), "{backend:?} (stripped: {strip}): {url}");
        }
    }
}

/// Logins are compared in their PRECIS `UsernameCaseMapped` form: `IVAN`
/// and full-width `ｉｖａｎ` sign in as ivan. A login made before the rule
/// that is the same as an older one (here oleg, renamed `IVAN` straight in
/// the database, as it could have been) keeps signing in by its exact
/// form once Portico starts on the database again, and ivan is still ivan.
#[tokio::test]
async fn logins_are_compared_by_their_precis_form_and_older_lookalikes_keep_working() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        for typed in ["IVAN", "Ivan", "ｉｖａｎ"] {
            let tokens = app.tokens_for(typed, "ivan-password").await;
            let response = app.http().get(app.url("/oauth2/userinfo")).bearer_auth(&tokens.access_token).send().await;
            let info: serde_json::Value = response.unwrap().json().await.unwrap();
            assert_eq!(info["preferred_username"], "ivan", "{backend:?}: {typed}");
        }

        app.run_sql("UPDATE users SET login = 'IVAN', login_key = NULL WHERE login = 'oleg'").await;
        // Another start on the same database: the migration step finds the
        // collision, reports it and leaves the older user's key alone.
        portico_server::app::open_store(&app.config).await.unwrap();
        let legacy = app.store.find_user_by_login("IVAN").await.unwrap().unwrap();
        assert_eq!(legacy.email.as_deref(), Some("oleg@example.com"), "{backend:?}: the exact login first");
        let ivan = app.store.find_user_by_login("Ivan").await.unwrap().unwrap();
        assert_eq!(ivan.login, "ivan", "{backend:?}: by its key, the older user");
        let tokens = app.tokens_for("IVAN", "oleg-password").await;
        assert_eq!(app.liveness(&tokens.access_token).await, 200, "{backend:?}: the look-alike still signs in");
    }
}

/// The server's cleaner removes a device once its trust has run out
/// (`login.device_trust_days`), and keeps one still trusted.
#[tokio::test]
async fn the_servers_cleaner_removes_devices_whose_trust_ran_out() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.cleanup_interval_secs = 1;
            c.login.device_trust_days = 30;
        })
        .await;
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
        app.store.trust_device(ivan.id, "old", app.clock.now()).await.unwrap();
        app.clock.advance(Duration::days(20));
        app.store.trust_device(ivan.id, "recent", app.clock.now()).await.unwrap();
        app.clock.advance(Duration::days(11));
        // Every device ever trusted, whether or not its trust runs still.
        let kept = || async {
            let all = app.store.trusted_devices(ivan.id, time::OffsetDateTime::UNIX_EPOCH).await.unwrap();
            all.into_iter().map(|d| d.device_id).collect::<Vec<_>>()
        };
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(15);
        while kept().await.len() > 1 {
            assert!(tokio::time::Instant::now() < deadline, "{backend:?}: not removed: {:?}", kept().await);
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert_eq!(kept().await, ["recent"], "{backend:?}");
    }
}
