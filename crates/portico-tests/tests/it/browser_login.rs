//! Every login flow in real Chromium, started from the demo client's page
//! and ending with the tokens it obtained from `/oauth2/token`. Codes come
//! from the dev outbox. Each step's screenshot is saved under
//! `<target tmp>/browser-screenshots/<test>/`.

use fantoccini::{Client, Locator};
use portico_tests::TestApp;

use super::browser::{click, launch, type_into, wait_for_path, wait_for_text};

/// Saves numbered screenshots of one test.
pub(crate) struct Shots {
    dir: std::path::PathBuf,
    n: usize,
    /// Digits of the number in front of each name (2, or 3 for a gallery
    /// of more than 99).
    digits: usize,
}

/// Where `scripts/login-pages` wants the gallery of every page (the
/// folder of docs/login-pages.md); unset, it goes with the other screenshots.
const PAGES_DIR_ENV: &str = "PORTICO_LOGIN_PAGES_DIR";

impl Shots {
    pub(crate) fn new(test: &str) -> Self {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser-screenshots").join(test);
        Self::in_dir(dir)
    }

    pub(crate) fn in_dir(dir: std::path::PathBuf) -> Self {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("screenshot folder");
        Self { dir, n: 0, digits: 2 }
    }

    /// Numbers the screenshots with three digits.
    pub(crate) fn three_digits(mut self) -> Self {
        self.digits = 3;
        self
    }

    /// Saves a screenshot of the page as it is. Chromium's renderer may
    /// miss chromedriver's 10 s for a capture when the two cores are busy
    /// with the other browser tests: the capture (evidence, not the
    /// behaviour under test) is then asked for again, twice at most.
    pub(crate) async fn take(&mut self, client: &Client, name: &str) {
        self.n += 1;
        let mut attempt = 1;
        let png = loop {
            match client.screenshot().await {
                Ok(png) => break png,
                Err(error)
                    if attempt < 3 && format!("{error:?}").contains("Timed out receiving message from renderer") =>
                {
                    attempt += 1;
                }
                Err(error) => panic!("screenshot {name}: {error:?}"),
            }
        };
        let file = format!("{:0width$}-{name}.png", self.n, width = self.digits);
        std::fs::write(self.dir.join(file), png).expect("save screenshot");
    }
}

pub(crate) async fn step_is(client: &Client, step: &str) {
    wait_for_attribute(client, "#loginForm", "data-step", step).await;
}

pub(crate) async fn wait_for_attribute(client: &Client, css: &str, attribute: &str, value: &str) {
    let started = std::time::Instant::now();
    loop {
        if let Ok(element) = client.find(Locator::Css(css)).await
            && element.attr(attribute).await.ok().flatten().as_deref() == Some(value)
        {
            return;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(15), "{css} never had {attribute}={value}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Waits up to 15 s for an element matching `css` (the page may still be
/// on its way: the previous one can show the same text meanwhile).
pub(crate) async fn wait_for_element(client: &Client, css: &str, what: &str) {
    let started = std::time::Instant::now();
    while client.find(Locator::Css(css)).await.is_err() {
        assert!(started.elapsed() < std::time::Duration::from_secs(15), "{what}: no {css}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Replaces the text of an input. The page may still be replacing itself
/// (a reload after the language switch, a step's redirect): an element that
/// went stale meanwhile is looked up again, for up to 15 s.
pub(crate) async fn fill(client: &Client, css: &str, text: &str) {
    let started = std::time::Instant::now();
    loop {
        let element = client.find(Locator::Css(css)).await.expect(css);
        match element.clear().await {
            Ok(()) => {
                element.send_keys(text).await.expect("type");
                return;
            }
            Err(_) if started.elapsed() < std::time::Duration::from_secs(15) => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(error) => panic!("{css}: cannot clear: {error}"),
        }
    }
}

pub(crate) async fn submit(client: &Client) {
    click(client, "#loginForm button[type=submit]").await;
}

/// Starts a login from the demo client's page and submits `login` and
/// `password` on its first step.
pub(crate) async fn sign_in_from_the_demo(client: &Client, app: &TestApp, login: &str, password: &str) {
    client.goto(&app.url("/demo/login")).await.unwrap();
    step_is(client, "username-password").await;
    fill(client, "input[name=principal]", login).await;
    type_into(client, "input[name=credentials]", password).await;
    submit(client).await;
}

/// Enters the last code sent to `to` and submits it.
pub(crate) async fn enter_code(client: &Client, app: &TestApp, to: &str) {
    type_into(client, "input[name=credentials]", &app.last_code(to)).await;
    submit(client).await;
}

/// Signs `login` in on the first page with `password` (typed), then with
/// the SMS code sent to `phone`.
pub(crate) async fn password_then_code(client: &Client, app: &TestApp, login: &str, password: &str, phone: &str) {
    step_is(client, "username-password").await;
    fill(client, "input[name=principal]", login).await;
    type_into(client, "input[name=credentials]", password).await;
    submit(client).await;
    step_is(client, "sms-otp").await;
    enter_code(client, app, phone).await;
}

async fn tokens_for(client: &Client, login: &str) {
    wait_for_text(client, "#idClaims", &format!("\"preferred_username\": \"{login}\"")).await;
}

#[tokio::test]
async fn password_with_sms_then_e_mail_and_the_language_switched_mid_flow() {
    let Some(browser) = launch().await else { return };
    let client = &browser.client;
    let app = TestApp::spawn(portico_tests::backends()[0]).await;
    let mut shots = Shots::new("password_sms_email_language");

    client.goto(&app.url("/demo/login")).await.unwrap();
    step_is(client, "username-password").await;
    shots.take(client, "username-password").await;
    fill(client, "input[name=principal]", "maria").await;
    type_into(client, "input[name=credentials]", "maria-password").await;
    submit(client).await;
    step_is(client, "sms-otp").await;
    wait_for_text(client, "#codeSent", "+7 *** ***-43-21").await;
    shots.take(client, "sms-otp").await;
    // Mid-flow, in Russian.
    click(client, "#language button[data-locale=ru]").await;
    wait_for_text(client, "h1", "Код из SMS").await;
    shots.take(client, "sms-otp-ru").await;
    click(client, "#useEmail").await;
    step_is(client, "email-otp").await;
    wait_for_text(client, "#codeSent", "m***@example.com").await;
    wait_for_text(client, "h1", "Код из письма").await;
    shots.take(client, "email-otp-ru").await;
    enter_code(client, &app, "maria@example.com").await;
    tokens_for(client, "maria").await;
    wait_for_text(client, "#idClaims", "\"otp\"").await;
    shots.take(client, "tokens").await;
    browser.client.clone().close().await.unwrap();
}

#[tokio::test]
async fn the_phone_method_on_an_unknown_device_and_a_shared_phone() {
    let Some(browser) = launch().await else { return };
    let client = &browser.client;
    let app = TestApp::spawn(portico_tests::backends()[0]).await;
    let mut shots = Shots::new("phone_method");
    // A phone's width: the pages must fit without sideways scrolling.
    client.set_window_size(360, 740).await.unwrap();

    client.goto(&app.url("/demo/login")).await.unwrap();
    step_is(client, "username-password").await;
    click(client, "#switchMethod").await;
    step_is(client, "phone").await;
    let overflow = client
        .execute("return document.documentElement.scrollWidth - document.documentElement.clientWidth;", vec![])
        .await
        .unwrap();
    assert_eq!(overflow.as_i64(), Some(0), "no horizontal overflow at 360 px");
    shots.take(client, "phone-360px").await;
    fill(client, "input[name=principal]", "+7 900 123-45-67").await;
    submit(client).await;
    step_is(client, "sms-otp").await;
    shots.take(client, "sms-otp").await;
    enter_code(client, &app, "+79001234567").await;
    step_is(client, "password").await;
    wait_for_text(client, "#notice", "new device").await;
    shots.take(client, "password-unknown-device").await;
    type_into(client, "input[name=credentials]", "ivan-password").await;
    submit(client).await;
    tokens_for(client, "ivan").await;
    shots.take(client, "tokens-ivan").await;

    // A phone shared by two users: login and password instead.
    click(client, "#signInAgain").await;
    click(client, "#switchMethod").await;
    step_is(client, "phone").await;
    fill(client, "input[name=principal]", "+79005551234").await;
    submit(client).await;
    step_is(client, "username-password").await;
    wait_for_text(client, "#notice", "several users").await;
    shots.take(client, "phone-duplicated").await;
    fill(client, "input[name=principal]", "sergey").await;
    type_into(client, "input[name=credentials]", "sergey-password").await;
    submit(client).await;
    step_is(client, "sms-otp").await;
    enter_code(client, &app, "+79005551234").await;
    tokens_for(client, "sergey").await;
    shots.take(client, "tokens-sergey").await;
    browser.client.clone().close().await.unwrap();
}

#[tokio::test]
async fn a_blocked_user_then_three_wrong_passwords_and_the_captcha() {
    let Some(browser) = launch().await else { return };
    let client = &browser.client;
    let app = TestApp::spawn(portico_tests::backends()[0]).await;
    let mut shots = Shots::new("blocked_and_captcha");

    sign_in_from_the_demo(client, &app, "blocked", "blocked-password").await;
    wait_for_text(client, "p.error", "blocked").await;
    shots.take(client, "error-page-blocked").await;
    // The error page's action goes back to the client, which can start again.
    click(client, "a.action").await;
    wait_for_text(client, "#log", "access_denied").await;
    click(client, "#signIn").await;
    step_is(client, "username-password").await;
    for attempt in 0..3 {
        fill(client, "input[name=principal]", "ivan").await;
        type_into(client, "input[name=credentials]", "wrong-password").await;
        submit(client).await;
        wait_for_text(client, "#credentialsError", "Wrong").await;
        if attempt == 0 {
            // The field that was wrong has the focus and says so. (Only
            // after the first failure is the error surely the new page's:
            // later the previous page shows the same text while it goes.)
            let script = "const e = document.activeElement; \
                          return [e.id, e.getAttribute('aria-invalid'), e.getAttribute('aria-describedby')];";
            let focused = client.execute(script, Vec::new()).await.unwrap();
            assert_eq!(focused, serde_json::json!(["credentials", "true", "credentialsError"]));
        }
    }
    // The third failure's page may still be loading while the second's
    // shows the same error: wait for the CAPTCHA the third one brings.
    wait_for_element(client, "#captcha", "the CAPTCHA is shown").await;
    shots.take(client, "captcha").await;
    fill(client, "input[name=principal]", "ivan").await;
    type_into(client, "input[name=credentials]", "ivan-password").await;
    click(client, "#captcha input").await;
    submit(client).await;
    step_is(client, "sms-otp").await;
    enter_code(client, &app, "+79001234567").await;
    tokens_for(client, "ivan").await;
    shots.take(client, "tokens").await;
    browser.client.clone().close().await.unwrap();
}

#[tokio::test]
async fn sso_for_a_second_client_with_consent_granted_and_remembered() {
    let Some(browser) = launch().await else { return };
    let client = &browser.client;
    let app = TestApp::spawn(portico_tests::backends()[0]).await;
    let mut shots = Shots::new("sso_and_consent");

    client.goto(&app.url("/demo/login")).await.unwrap();
    password_then_code(client, &app, "ivan", "ivan-password", "+79001234567").await;
    tokens_for(client, "ivan").await;

    // The partner app: no password (SSO), but its consent.
    click(client, "#signInPartner").await;
    step_is(client, "consent").await;
    wait_for_text(client, "#consentIntro", "Partner application").await;
    shots.take(client, "consent").await;
    submit(client).await;
    tokens_for(client, "ivan").await;
    wait_for_text(client, "#accessClaims", "\"client_id\": \"partner-app\"").await;
    shots.take(client, "partner-tokens").await;
    // Remembered: straight back with new tokens.
    let before = app.store.recent_audit(1000).await.unwrap().len();
    click(client, "#signInPartner").await;
    wait_for_text(client, "#log", "id_token nonce matches").await;
    tokens_for(client, "ivan").await;
    assert!(app.store.recent_audit(1000).await.unwrap().len() > before, "a new code was exchanged");
    shots.take(client, "partner-again").await;
    browser.client.clone().close().await.unwrap();
}

/// The login pages' `form-action` names the client's origin: Chromium
/// checks each redirect a form submission follows against it, so a login
/// that ends at a client on another origin (here a loopback server on
/// another port) must still reach it, as must the error page's way back
/// after a refused consent and the `form_post` page's own form.
#[tokio::test]
async fn chromium_reaches_a_client_on_another_origin_after_login_consent_and_form_post() {
    use axum::routing::get;
    let Some(browser) = launch().await else { return };
    let client = &browser.client;
    let app = TestApp::spawn(portico_tests::backends()[0]).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let site = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let callback = axum::Router::new().route(
        "/cb",
        get(|| async { axum::response::Html("<p id=back>back at the client</p>") })
            .post(|body: String| async move { axum::response::Html(format!("<p id=back>posted {body}</p>")) }),
    );
    tokio::spawn(async move { axum::serve(listener, callback).await });
    let redirect_uri = format!("{site}/cb");
    app.add_client_with("elsewhere", "elsewhere-secret", |client| {
        client.name = portico_model::client::LocalizedText::same("Elsewhere");
        client.redirect_uris = vec![redirect_uri.clone()];
        client.scopes = vec!["openid".into(), "profile".into()];
        client.require_consent = true;
    })
    .await;
    let authorize = |extra: &[(&str, Option<&str>)]| {
        let mut params = vec![
            ("client_id", Some("elsewhere")),
            ("redirect_uri", Some(redirect_uri.as_str())),
            ("scope", Some("openid profile")),
        ];
        params.extend_from_slice(extra);
        app.authorize_url(&portico_tests::Pkce::new(), &params)
    };
    let at_client = async |what: &str| {
        let started = std::time::Instant::now();
        loop {
            let url = client.current_url().await.unwrap();
            if url.as_str().starts_with(&redirect_uri) {
                wait_for_text(client, "#back", "back at the client").await;
                assert!(url.as_str().contains(what), "{url}");
                return;
            }
            assert!(started.elapsed() < std::time::Duration::from_secs(15), "never reached the client: at {url}");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    };

    client.goto(&authorize(&[])).await.unwrap();
    password_then_code(client, &app, "ivan", "ivan-password", "+79001234567").await;
    step_is(client, "consent").await;
    submit(client).await;
    at_client("code=").await;

    client.goto(&authorize(&[("state", Some("again")), ("prompt", Some("consent"))])).await.unwrap();
    step_is(client, "consent").await;
    click(client, "#loginForm button[name=deny]").await;
    wait_for_path(client, "/error").await;
    click(client, "a.action").await;
    at_client("error=access_denied").await;

    client.goto(&authorize(&[("response_mode", Some("form_post"))])).await.unwrap();
    wait_for_text(client, "#back", "posted ").await;
    let posted = client.find(Locator::Css("#back")).await.unwrap().text().await.unwrap();
    assert!(posted.contains("code="), "{posted}");
    assert_eq!(client.current_url().await.unwrap().as_str(), redirect_uri);
    browser.client.clone().close().await.unwrap();
}

/// A Chrome DevTools command through chromedriver
/// (`POST /session/{id}/goog/cdp/execute`).
#[derive(Debug)]
struct Cdp(serde_json::Value);

impl fantoccini::wd::WebDriverCompatibleCommand for Cdp {
    fn endpoint(&self, base: &url::Url, session: Option<&str>) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/goog/cdp/execute", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (axum::http::Method, Option<String>) {
        (axum::http::Method::POST, Some(self.0.to_string()))
    }
}

/// Shows pages as if the system asked for `scheme` (`light` or `dark`).
pub(crate) async fn color_scheme(client: &Client, scheme: &str) {
    let params = serde_json::json!({ "features": [{ "name": "prefers-color-scheme", "value": scheme }] });
    client
        .issue_cmd(Cdp(serde_json::json!({ "cmd": "Emulation.setEmulatedMedia", "params": params })))
        .await
        .expect("emulate the colour scheme");
}

/// The WCAG contrast ratio of every visible text on the page against the
/// background it is drawn on, the lowest first: `[ratio, "tag.class: text"]`.
const CONTRASTS: &str = r#"
const rgba = (c) => { const m = c.match(/[\d.]+/g).map(Number); return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
const lum = ([r, g, b]) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
const background = (el) => { for (let e = el; e; e = e.parentElement) { const c = rgba(getComputedStyle(e).backgroundColor);
  if (c[3] > 0) return c; } return [255, 255, 255, 1]; };
const out = [];
for (const el of document.querySelectorAll('h1, h2, p, label, span, a, button, input, summary, li, legend')) {
  const style = getComputedStyle(el); const box = el.getBoundingClientRect();
  if (style.visibility === 'hidden' || box.width === 0 || box.height === 0) continue;
  const text = (el.value || el.textContent || '').trim(); if (!text) continue;
  const fg = lum(rgba(style.color)), bg = lum(background(el));
  const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
  out.push([Math.round(ratio * 100) / 100, el.tagName.toLowerCase() + '.' + el.className + ': ' + text.slice(0, 40)]);
}
out.sort((a, b) => a[0] - b[0]);
return out;
"#;

/// Checks that every visible text of the page (at least a heading, a
/// label, a field and a button) has a contrast of 4.5:1 or more (WCAG AA).
pub(crate) async fn assert_readable(client: &Client, look: &str) {
    let found = client.execute(CONTRASTS, vec![]).await.unwrap();
    let found = found.as_array().unwrap();
    assert!(found.len() >= 4, "{look}: texts were measured: {found:?}");
    let low: Vec<_> = found.iter().filter(|f| f[0].as_f64().unwrap() < 4.5).collect();
    assert!(low.is_empty(), "{look}: text below WCAG AA 4.5:1: {low:?}");
}

#[tokio::test]
async fn every_login_page_is_readable_in_light_and_dark_schemes_at_both_widths() {
    let Some(browser) = launch().await else { return };
    let client = &browser.client;
    let app = TestApp::spawn(portico_tests::backends()[0]).await;
    let mut shots = Shots::new("schemes_and_widths");
    client.goto(&app.url("/demo/login")).await.unwrap();
    step_is(client, "username-password").await;
    // A wrong password, so that an error text is on the page too.
    fill(client, "input[name=principal]", "maria").await;
    type_into(client, "input[name=credentials]", "wrong").await;
    submit(client).await;
    wait_for_attribute(client, "#credentials", "aria-describedby", "credentialsError").await;
    for scheme in ["light", "dark"] {
        color_scheme(client, scheme).await;
        for (width, height, device) in [(1280, 900, "desktop"), (390, 844, "phone")] {
            client.set_window_size(width, height).await.unwrap();
            client.refresh().await.unwrap();
            step_is(client, "username-password").await;
            shots.take(client, &format!("username-password-{scheme}-{device}")).await;
            assert_readable(client, &format!("{scheme} {device}")).await;
        }
    }
    browser.client.clone().close().await.unwrap();
}

#[tokio::test]
async fn a_fresh_browser_is_shown_the_captcha_the_server_demands_after_failures_elsewhere() {
    let Some(browser) = launch().await else { return };
    let client = &browser.client;
    let app = TestApp::spawn(portico_tests::backends()[0]).await;
    let mut shots = Shots::new("captcha_after_failures_elsewhere");
    // Three wrong passwords for maria from another browser.
    for _ in 0..3 {
        let (other, csrf) = other_browser(&app).await;
        let form = [("_csrf", csrf.as_str()), ("principal", "maria"), ("credentials", "wrong")];
        other.post(app.url("/login")).form(&form).send().await.unwrap();
    }
    // This browser knows the password; the server demands a CAPTCHA, and the
    // page shows one to solve: no dead end.
    client.goto(&app.url("/demo/login")).await.unwrap();
    step_is(client, "username-password").await;
    fill(client, "input[name=principal]", "maria").await;
    type_into(client, "input[name=credentials]", "maria-password").await;
    submit(client).await;
    wait_for_text(client, "#otherError", "robot").await;
    client.find(Locator::Css("#captcha")).await.expect("the CAPTCHA the server demands is shown");
    shots.take(client, "captcha-shown").await;
    fill(client, "input[name=principal]", "maria").await;
    type_into(client, "input[name=credentials]", "maria-password").await;
    click(client, "#captcha input").await;
    submit(client).await;
    step_is(client, "sms-otp").await;
    shots.take(client, "passed").await;
    browser.client.clone().close().await.unwrap();
}

/// Another browser (over plain HTTP) at the first step of a new login, and
/// its CSRF token.
async fn other_browser(app: &TestApp) -> (reqwest::Client, String) {
    let other = app.browser();
    other.get(app.authorize_url(&portico_tests::Pkce::new(), &[])).send().await.unwrap();
    let view = app.login_view(&other).await;
    let csrf = view["pageData"]["authenticationFlowContext"]["csrf"].as_str().unwrap().to_owned();
    (other, csrf)
}

/// Unknown phone numbers typed from this address in other processes put
/// the `phone` step behind a CAPTCHA: a new browser's page shows it at once
/// and passes with it.
#[tokio::test]
async fn a_fresh_browser_is_shown_the_captcha_the_phone_step_demands_after_unknown_numbers_elsewhere() {
    let Some(browser) = launch().await else { return };
    let client = &browser.client;
    let app = TestApp::spawn(portico_tests::backends()[0]).await;
    let mut shots = Shots::new("phone_captcha_after_unknown_numbers");
    for n in 0..app.identity.settings.guard.address_captcha_after {
        let (other, csrf) = other_browser(&app).await;
        let method = [("_csrf", csrf.as_str()), ("authMethod", "PHONE")];
        other.post(app.url("/login/user-settings/auth-method")).form(&method).send().await.unwrap();
        let number = format!("+7999{n:07}");
        let form = [("_csrf", csrf.as_str()), ("principal", number.as_str())];
        other.post(app.url("/login")).form(&form).send().await.unwrap();
    }
    client.goto(&app.url("/demo/login")).await.unwrap();
    step_is(client, "username-password").await;
    click(client, "#switchMethod").await;
    step_is(client, "phone").await;
    client.find(Locator::Css("#captcha")).await.expect("the CAPTCHA the phone step demands is shown");
    shots.take(client, "captcha-shown").await;
    fill(client, "input[name=principal]", "+79001234567").await;
    click(client, "#captcha input").await;
    submit(client).await;
    step_is(client, "sms-otp").await;
    shots.take(client, "passed").await;
    browser.client.clone().close().await.unwrap();
}

/// The error page keeps its message and its way on through a language
/// switch and a reload, whichever error led there: a blocked user (whose
/// process ended at once) and an interrupted sign-in (a form whose CSRF
/// token no longer matches).
#[tokio::test]
async fn the_error_page_keeps_itself_through_a_language_switch_and_a_reload() {
    let Some(browser) = launch().await else { return };
    let client = &browser.client;
    let app = TestApp::spawn(portico_tests::backends()[0]).await;
    let mut shots = Shots::new("error_page_keeps_itself");

    sign_in_from_the_demo(client, &app, "blocked", "blocked-password").await;
    wait_for_text(client, "p.error", "This user is blocked").await;
    click(client, "#language button[data-locale=ru]").await;
    wait_for_text(client, "p.error", "Пользователь заблокирован").await;
    wait_for_text(client, "a.action", "Вернуться").await;
    shots.take(client, "blocked-ru").await;
    client.refresh().await.unwrap();
    wait_for_text(client, "p.error", "Пользователь заблокирован").await;
    click(client, "#language button[data-locale=en]").await;
    wait_for_text(client, "p.error", "This user is blocked").await;
    wait_for_text(client, "a.action", "Go back").await;

    client.goto(&app.url("/demo/login")).await.unwrap();
    step_is(client, "username-password").await;
    client
        .execute("document.querySelector('#loginForm input[name=_csrf]').value = 'forged'", Vec::new())
        .await
        .unwrap();
    fill(client, "input[name=principal]", "ivan").await;
    type_into(client, "input[name=credentials]", "ivan-password").await;
    submit(client).await;
    wait_for_text(client, "p.error", "The sign-in was interrupted").await;
    click(client, "#language button[data-locale=ru]").await;
    wait_for_text(client, "p.error", "Сеанс входа прерван").await;
    wait_for_text(client, "a.action", "Войти заново").await;
    shots.take(client, "fatal-ru").await;
    client.refresh().await.unwrap();
    wait_for_text(client, "a.action", "Войти заново").await;
    click(client, "a.action").await;
    step_is(client, "username-password").await;
    browser.client.clone().close().await.unwrap();
}

/// The axe-core script named by `PORTICO_TEST_AXE` (`.ci/run` installs it
/// from npm); unset, the accessibility check is skipped, and says so once.
fn axe_script() -> Option<&'static str> {
    static SCRIPT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    SCRIPT
        .get_or_init(|| match std::env::var("PORTICO_TEST_AXE") {
            Ok(path) => Some(std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("PORTICO_TEST_AXE {path}: {e}"))),
            Err(_) => {
                portico_tests::skipped("PORTICO_TEST_AXE is not set; pages are not checked with axe-core");
                None
            }
        })
        .as_deref()
}

/// What axe-core finds against WCAG 2.1 A and AA and its best practices on
/// the current page: `[rule, impact, [elements]]` per violation.
pub(crate) async fn accessibility_violations(client: &Client) -> Vec<serde_json::Value> {
    let Some(axe) = axe_script() else { return Vec::new() };
    let run = format!(
        "{axe}\nconst done = arguments[arguments.length - 1];\n\
         axe.run(document, {{ runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] }})\n\
           .then(r => done(r.violations.map(v => [v.id, v.impact, v.nodes.map(n => n.target.join(' '))])))\n\
           .catch(e => done([['axe failed', String(e), []]]));"
    );
    let found = client.execute_async(&run, vec![]).await.expect("run axe-core");
    found.as_array().cloned().unwrap_or_default()
}

/// Shows the current page in both languages, both schemes and both widths:
/// saves each look and checks every text's contrast (WCAG AA). `language`
/// makes the page speak one language: a click on its switch, or a URL.
pub(crate) async fn every_look(
    client: &Client,
    shots: &mut Shots,
    name: &str,
    language: impl Fn(&'static str) -> Option<String>,
) {
    every_look_shown(client, shots, name, language, async |client: &Client| client.refresh().await.unwrap()).await;
}

/// [`every_look`], with `show` bringing the page up for each look instead
/// of a reload (a form's error is shown once: `show` makes it again).
pub(crate) async fn every_look_shown(
    client: &Client,
    shots: &mut Shots,
    name: &str,
    language: impl Fn(&'static str) -> Option<String>,
    show: impl AsyncFn(&Client),
) {
    for lang in ["ru", "en"] {
        match language(lang) {
            Some(url) => client.goto(&url).await.unwrap(),
            None => click(client, &format!("#language button[data-locale={lang}]")).await,
        }
        looks_in(client, shots, name, lang, &show).await;
    }
}

/// The current page, speaking `lang`, at both widths in both schemes:
/// each look saved, checked with axe-core and for contrast; `show` brings
/// the page up for each.
pub(crate) async fn looks_in(client: &Client, shots: &mut Shots, name: &str, lang: &str, show: &impl AsyncFn(&Client)) {
    wait_for_attribute(client, "html", "lang", lang).await;
    for (width, height, device) in [(1280, 900, "desktop"), (390, 844, "phone")] {
        client.set_window_size(width, height).await.unwrap();
        for scheme in ["light", "dark"] {
            color_scheme(client, scheme).await;
            show(client).await;
            wait_for_attribute(client, "html", "lang", lang).await;
            shots.take(client, &format!("{name}-{lang}-{scheme}-{device}")).await;
            let violations = accessibility_violations(client).await;
            assert!(violations.is_empty(), "{name} {lang} {scheme} {device}: axe-core found {violations:#?}");
            assert_readable(client, &format!("{name} {lang} {scheme} {device}")).await;
        }
    }
    color_scheme(client, "light").await;
    client.set_window_size(1280, 900).await.unwrap();
}

/// Every page a customer meets, as `scripts/login-pages` publishes them in
/// docs/login-pages.md: each in Russian and English, light and dark, at a
/// desktop's and a phone's width, every text readable.
#[tokio::test]
async fn every_page_in_both_languages_schemes_and_widths() {
    let Some(browser) = launch().await else { return };
    let client = &browser.client;
    // On `localhost`, where passkeys are offered; ivan keeps one.
    let (app, origin) = crate::passkeys::passkey_app(portico_tests::backends()[0], |_| {}).await;
    crate::passkeys::enrol(&app, &origin, "ivan").await;
    let at = |path: &str| format!("{origin}{path}");
    let mut shots = match std::env::var_os(PAGES_DIR_ENV) {
        Some(dir) => Shots::in_dir(dir.into()),
        None => Shots::new("every_page"),
    }
    .three_digits();
    let switch = |_: &'static str| None;

    client.goto(&at("/demo/login")).await.unwrap();
    wait_for_attribute(client, "#passkeyLogin", "data-action", "passkey-login").await;
    step_is(client, "username-password").await;
    fill(client, "input[name=principal]", "maria").await;
    type_into(client, "input[name=credentials]", "wrong").await;
    submit(client).await;
    wait_for_attribute(client, "#credentials", "aria-describedby", "credentialsError").await;
    every_look(client, &mut shots, "login", switch).await;
    type_into(client, "input[name=credentials]", "maria-password").await;
    submit(client).await;
    step_is(client, "sms-otp").await;
    every_look(client, &mut shots, "sms-code", switch).await;
    click(client, "#useEmail").await;
    step_is(client, "email-otp").await;
    every_look(client, &mut shots, "e-mail-code", switch).await;
    enter_code(client, &app, "maria@example.com").await;
    // Maria keeps no passkey: the offer to create one, declined.
    step_is(client, "passkey-enrolment").await;
    wait_for_attribute(client, "#passkeyCreate", "data-action", "passkey-create").await;
    every_look(client, &mut shots, "passkey-offer", switch).await;
    click(client, "#passkeySkip").await;
    tokens_for(client, "maria").await;

    // The partner application asks for consent, naming its home page,
    // privacy policy and terms as a registered third party does (the
    // page links to them); declining ends on the error page.
    let partner_id = portico_model::ids::ClientId::new(portico_tests::demo::CONSENT_CLIENT_ID);
    let mut partner = app.store.find_client(&partner_id).await.unwrap().unwrap();
    partner.security.client_uri = Some("https://partner.example/".into());
    partner.security.policy_uri = Some("https://partner.example/privacy".into());
    partner.security.tos_uri = Some("https://partner.example/terms".into());
    assert!(matches!(app.store.update_client(&partner).await.unwrap(), portico_storage::Update::Updated));
    click(client, "#signInPartner").await;
    step_is(client, "consent").await;
    assert_eq!(client.find_all(Locator::Css("#clientPages a")).await.unwrap().len(), 3, "the partner's pages");
    every_look(client, &mut shots, "consent", switch).await;
    click(client, "#loginForm button[name=deny]").await;
    wait_for_path(client, "/error").await;
    every_look(client, &mut shots, "error-access-denied", switch).await;

    // The phone method on a new device: number, code, password (a new
    // login beside maria's session: prompt=login).
    again_by_phone(client, &at("/demo")).await;
    every_look(client, &mut shots, "phone", switch).await;
    phone_number(client, "+79001234567").await;
    enter_code(client, &app, "+79001234567").await;
    step_is(client, "password").await;
    every_look(client, &mut shots, "password-new-device", switch).await;

    // A user with a passkey confirms the password with it on a new device.
    client.goto(&at("/demo")).await.unwrap();
    click(client, "#signInAgain").await;
    step_is(client, "username-password").await;
    fill(client, "input[name=principal]", "ivan").await;
    type_into(client, "input[name=credentials]", "ivan-password").await;
    submit(client).await;
    step_is(client, "passkey").await;
    every_look(client, &mut shots, "passkey", switch).await;

    // maria's account page (her single sign-on session answers its
    // sign-in), with a passkey, and the confirmation before removing it.
    crate::passkeys::enrol(&app, &origin, "maria").await;
    client.goto(&at("/account/")).await.unwrap();
    wait_for_path(client, "/account/").await;
    wait_for_element(client, "[data-passkey]", "maria's passkey").await;
    every_look(client, &mut shots, "account", switch).await;
    click(client, "[data-action=passkey-remove]").await;
    wait_for_element(client, "#lastWarning", "the warning of the last passkey").await;
    every_look(client, &mut shots, "account-remove-passkey", switch).await;
    // Ten minutes after her sign-in the page offers to sign in again
    // before creating a passkey.
    app.clock.advance(time::Duration::seconds(portico_account::session::FRESH_SIGN_IN_SECS + 1));
    client.goto(&at("/account/")).await.unwrap();
    wait_for_element(client, "#passkeySignInFirst", "the offer to sign in again").await;
    every_look(client, &mut shots, "account-sign-in-first", switch).await;

    // Signed out (RP-initiated logout without a return address).
    every_look(client, &mut shots, "signed-out", |lang| Some(at(&format!("/oauth2/logout?ui_locales={lang}")))).await;

    // Code entry paused after wrong codes (five reported to the guard
    // here; the login tests guess them): ivan's phone login on this
    // browser, which is not trusted for him.
    again_by_phone(client, &at("/demo")).await;
    phone_number(client, "+79001234567").await;
    let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
    for _ in 0..app.identity.settings.guard.delay_after {
        use portico_identity::login::guard;
        let guard::Gate::Open(counted) = guard::before_code(&app.identity, Some(ivan.id), None, None).await.unwrap()
        else {
            panic!("counted")
        };
        guard::failed(&app.identity, counted).await.unwrap();
    }
    let paused = async |client: &Client| {
        enter_code(client, &app, "+79001234567").await;
        wait_for_element(client, "#otherError", "the pause").await;
    };
    every_look_shown(client, &mut shots, "sms-code-paused", switch, paused).await;

    // Sending paused after many codes to ivan (counted straight by the
    // guard here, up to the pause; the login tests send them): a new phone
    // login gets no code.
    {
        use portico_identity::login::guard;
        while let guard::Gate::Open(counted) = guard::before_send(&app.identity, ivan.id, None).await.unwrap() {
            guard::sent(&app.identity, counted).await.unwrap();
        }
    }
    again_by_phone(client, &at("/demo")).await;
    phone_number(client, "+79001234567").await;
    wait_for_element(client, "#otherError", "the pause of sending").await;
    every_look(client, &mut shots, "sms-code-not-sent", switch).await;

    // An address Portico does not serve, in the language the browser chose
    // (its cookie made afresh: the login's own is out of a script's reach).
    client.delete_all_cookies().await.unwrap();
    for lang in ["ru", "en"] {
        let choose = format!("document.cookie = '{}={lang}; path=/'", portico_identity::cookies::LOCALE);
        client.execute(&choose, Vec::new()).await.unwrap();
        client.goto(&at("/no-such-page")).await.unwrap();
        looks_in(client, &mut shots, "not-found", lang, &async |client: &Client| client.refresh().await.unwrap()).await;
    }
    browser.client.clone().close().await.unwrap();
}

/// From the demo page at `demo`, a new login (`prompt=login`) switched to
/// the phone method.
async fn again_by_phone(client: &Client, demo: &str) {
    client.goto(demo).await.unwrap();
    click(client, "#signInAgain").await;
    step_is(client, "username-password").await;
    click(client, "#switchMethod").await;
    step_is(client, "phone").await;
}

/// On the `phone` step: `phone` typed and sent, up to the code step.
async fn phone_number(client: &Client, phone: &str) {
    fill(client, "input[name=principal]", phone).await;
    submit(client).await;
    step_is(client, "sms-otp").await;
}

/// A command of WebDriver's virtual authenticator extension (WebAuthn
/// Level 3 §11): `method` on `/session/{id}/webauthn/{path}` with `body`.
#[derive(Debug)]
struct VirtualAuthenticator {
    method: http::Method,
    path: String,
    body: Option<serde_json::Value>,
}

impl fantoccini::wd::WebDriverCompatibleCommand for VirtualAuthenticator {
    fn endpoint(&self, base_url: &url::Url, session_id: Option<&str>) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!("session/{}/webauthn/{}", session_id.unwrap_or_default(), self.path))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (self.method.clone(), self.body.as_ref().map(ToString::to_string))
    }
}

/// Gives Chromium a platform authenticator (user verification on): its id.
pub(crate) async fn platform_authenticator(client: &Client) -> String {
    let body = serde_json::json!({
        "protocol": "ctap2", "transport": "internal", "hasResidentKey": true,
        "hasUserVerification": true, "isUserConsenting": true, "isUserVerified": true,
    });
    let command = VirtualAuthenticator { method: http::Method::POST, path: "authenticator".into(), body: Some(body) };
    let added = client.issue_cmd(command).await.unwrap();
    added.as_str().or_else(|| added["authenticatorId"].as_str()).expect("an authenticator id").to_owned()
}

/// Puts the passkey `key` was enrolled with into the authenticator `id`,
/// its counter at `sign_count`.
pub(crate) async fn hold_passkey(client: &Client, id: &str, key: &crate::passkeys::Authenticator, sign_count: u32) {
    let credential = serde_json::json!({
        "credentialId": portico_crypto::b64url(&key.credential_id), "isResidentCredential": true,
        "rpId": "localhost", "privateKey": portico_crypto::b64url(&key.pkcs8),
        "userHandle": portico_crypto::b64url(&key.user_handle), "signCount": sign_count,
    });
    let path = format!("authenticator/{id}/credential");
    client.issue_cmd(VirtualAuthenticator { method: http::Method::POST, path, body: Some(credential) }).await.unwrap();
}

/// Takes every passkey out of the authenticator `id`.
pub(crate) async fn drop_passkeys(client: &Client, id: &str) {
    let path = format!("authenticator/{id}/credentials");
    client.issue_cmd(VirtualAuthenticator { method: http::Method::DELETE, path, body: None }).await.unwrap();
}

/// ivan's id.
async fn key_owner(app: &TestApp) -> portico_model::ids::UserId {
    app.store.find_user_by_login("ivan").await.unwrap().unwrap().id
}

/// Opens the demo's login and waits until the passkey in the browser's
/// authenticator signed in: the autofill (conditional mediation) answers as
/// soon as the page asks; the button, should it not, asks again.
async fn signed_in_by_passkey(client: &Client, origin: &str) {
    client.goto(&format!("{origin}/demo/login")).await.unwrap();
    let started = std::time::Instant::now();
    let mut clicked = false;
    loop {
        let claims = match client.find(Locator::Css("#idClaims")).await {
            Ok(element) => element.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        if claims.contains("\"hwk\"") {
            break;
        }
        if !clicked
            && started.elapsed() > std::time::Duration::from_secs(3)
            && let Ok(button) = client.find(Locator::Css("#passkeyLogin")).await
        {
            clicked = button.click().await.is_ok();
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "the passkey never signed in");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The login page's script drives WebAuthn in Chromium: a passkey signs in
/// from the first page with no code, and confirms a password as the second
/// factor on the next login.
#[tokio::test]
async fn chromium_signs_in_with_a_passkey_from_the_first_page_and_as_the_second_factor() {
    let Some(browser) = launch().await else { return };
    let client = &browser.client;
    let authenticator = platform_authenticator(client).await;
    let mut shots = Shots::new("passkey_first_page_and_second_factor");
    for backend in portico_tests::backends() {
        let (app, origin) = crate::passkeys::passkey_app(backend, |_| {}).await;
        let key = crate::passkeys::enrol(&app, &origin, "ivan").await;
        drop_passkeys(client, &authenticator).await;
        hold_passkey(client, &authenticator, &key, 0).await;
        let sent = app.outbox().len();

        // The first page: the browser's autofill (conditional mediation)
        // answers with the passkey as soon as the page asks; the button,
        // should it not, asks again.
        signed_in_by_passkey(client, &origin).await;
        shots.take(client, &format!("{backend:?}-signed-in-with-the-passkey")).await;
        tokens_for(client, "ivan").await;

        // A password first (the passkey out of the authenticator, so that
        // the autofill does not answer), then the passkey as the second factor.
        drop_passkeys(client, &authenticator).await;
        client.goto(&format!("{origin}/demo")).await.unwrap();
        click(client, "#signInAgain").await;
        step_is(client, "username-password").await;
        fill(client, "input[name=principal]", "ivan").await;
        type_into(client, "input[name=credentials]", "ivan-password").await;
        submit(client).await;
        step_is(client, "passkey").await;
        shots.take(client, &format!("{backend:?}-passkey-step")).await;
        let used_once = app.store.passkeys_of(key_owner(&app).await).await.unwrap()[0].sign_count;
        hold_passkey(client, &authenticator, &key, used_once).await;
        click(client, "#passkeyLogin").await;
        wait_for_text(client, "#idClaims", "\"pwd\"").await;
        tokens_for(client, "ivan").await;

        assert_eq!(app.outbox().len(), sent, "{backend:?}: no code was sent");
        let used = app.store.recent_audit(50).await.unwrap().iter().filter(|e| e.kind == "passkey.used").count();
        assert_eq!(used, 2, "{backend:?}");
    }
    browser.client.clone().close().await.unwrap();
}

/// A customer creates a passkey at the offer after a password and an SMS
/// code, in Chromium with a platform authenticator; after signing out, the
/// passkey alone signs them in and no code is sent.
#[tokio::test]
async fn chromium_creates_a_passkey_at_the_offer_and_signs_in_with_it_alone() {
    let Some(browser) = launch().await else { return };
    let client = &browser.client;
    let authenticator = platform_authenticator(client).await;
    let mut shots = Shots::new("passkey_created_at_the_offer");
    for backend in portico_tests::backends() {
        let (app, origin) = crate::passkeys::passkey_app(backend, |_| {}).await;
        drop_passkeys(client, &authenticator).await;
        let maria = app.store.find_user_by_login("maria").await.unwrap().unwrap();

        client.goto(&format!("{origin}/demo/login")).await.unwrap();
        password_then_code(client, &app, "maria", "maria-password", "+79007654321").await;
        step_is(client, "passkey-enrolment").await;
        shots.take(client, &format!("{backend:?}-offer")).await;
        click(client, "#passkeyCreate").await;
        tokens_for(client, "maria").await;
        let kept = app.store.passkeys_of(maria.id).await.unwrap();
        assert_eq!(kept.len(), 1, "{backend:?}: the passkey was created");
        assert!(kept[0].name.starts_with("Chrome"), "named after the browser: {}", kept[0].name);

        // Signed out, the passkey alone signs maria in: no code is sent.
        client.goto(&format!("{origin}/oauth2/logout")).await.unwrap();
        let now = portico_model::clock::Clock::now(app.clock.as_ref());
        assert!(app.store.list_sessions(maria.id, now).await.unwrap().is_empty(), "{backend:?}: signed out");
        let sent = app.outbox().len();
        signed_in_by_passkey(client, &origin).await;
        shots.take(client, &format!("{backend:?}-signed-in-with-the-new-passkey")).await;
        tokens_for(client, "maria").await;
        assert_eq!(app.outbox().len(), sent, "{backend:?}: no code was sent");
        let used = app.store.passkeys_of(maria.id).await.unwrap()[0].last_used_at;
        assert!(used.is_some(), "{backend:?}: the new passkey was used");
    }
    browser.client.clone().close().await.unwrap();
}
