//! The customer's account page at `/account`, on both backends: signed in
//! through Portico's login as its own client; passkeys added (one per
//! challenge, even when 32 answers race), renamed and removed after a
//! confirmation; other sessions ended; trusted devices forgotten; every
//! change audited as `account`, and bad or forged forms changing nothing.

use std::sync::Arc;

use portico_model::audit::AuditKind;
use portico_model::clock::Clock as _;
use portico_tests::{TestApp, backends, location};
use reqwest::cookie::CookieStore as _;
use serde_json::Value;

use crate::passkeys::{Authenticator, passkey_app};
use crate::storage_contract::passkeys::audited;

const LINUX_CHROME: &str =
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const ANDROID_CHROME: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36";

/// A browser with its own cookie jar, sending `agent` as its `User-Agent`.
struct Browser {
    client: reqwest::Client,
    jar: Arc<reqwest::cookie::Jar>,
}

impl Browser {
    fn new(agent: &str) -> Self {
        let jar = Arc::new(reqwest::cookie::Jar::default());
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::USER_AGENT, agent.parse().unwrap());
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .cookie_provider(jar.clone())
            .default_headers(headers)
            .build()
            .unwrap();
        Self { client, jar }
    }

    /// The `Cookie` header this browser sends to `path`.
    fn cookies(&self, app: &TestApp, path: &str) -> String {
        let url = app.url(path).parse().unwrap();
        self.jar.cookies(&url).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
    }

    async fn page(&self, app: &TestApp, path: &str) -> (u16, String) {
        let response = self.client.get(app.url(path)).send().await.unwrap();
        (response.status().as_u16(), response.text().await.unwrap())
    }

    async fn post(&self, app: &TestApp, path: &str, form: &[(&str, &str)]) -> reqwest::Response {
        self.client.post(app.url(path)).form(form).send().await.unwrap()
    }
}

/// `login` signs in to `/account` in a new browser (password and SMS code,
/// declining the offer to create a passkey): the browser and the page.
async fn signed_in(app: &TestApp, login: &str, agent: &str) -> (Browser, String) {
    let browser = Browser::new(agent);
    let response = browser.client.get(app.url("/account/")).send().await.unwrap();
    assert_eq!((response.status().as_u16(), location(&response)), (303, "/account/login?back=%2Faccount%2F".into()));
    let response = browser.client.get(app.url(&location(&response))).send().await.unwrap();
    let authorize = location(&response);
    assert!(authorize.starts_with("/oauth2/authorize?response_type=code&client_id=portico-account&"), "{authorize}");
    let set =
        response.headers().get_all("set-cookie").iter().map(|v| v.to_str().unwrap().to_owned()).collect::<Vec<_>>();
    assert!(
        set.iter()
            .any(|c| c.starts_with("svc.account.login=") && c.contains("Path=/account") && c.contains("HttpOnly"))
    );
    let path = through_the_login(app, &browser, login, &authorize).await;
    let response = browser.client.get(app.url(&path)).send().await.unwrap();
    assert_eq!(location(&response), "/account/");
    let set =
        response.headers().get_all("set-cookie").iter().map(|v| v.to_str().unwrap().to_owned()).collect::<Vec<_>>();
    assert!(
        set.iter().any(|c| c.starts_with("svc.account=")
            && c.contains("Path=/account")
            && c.contains("HttpOnly")
            && c.contains("SameSite=Strict")),
        "{set:?}"
    );
    let (status, html) = browser.page(app, "/account/").await;
    assert_eq!(status, 200, "{html}");
    (browser, html)
}

/// Portico's login for `login` in `browser`, from the page's authorization
/// request `authorize` (the password, an SMS code if asked, declining the
/// offer to create a passkey) to the page's callback: the callback's path.
async fn through_the_login(app: &TestApp, browser: &Browser, login: &str, authorize: &str) -> String {
    let response = browser.client.get(app.url(authorize)).send().await.unwrap();
    assert_eq!(location(&response), "/login");
    let view = app.login_view(&browser.client).await;
    let csrf = view["pageData"]["authenticationFlowContext"]["csrf"].as_str().unwrap().to_owned();
    let password = format!("{login}-password");
    let form = [("_csrf", csrf.as_str()), ("principal", login), ("credentials", password.as_str())];
    let response = browser.post(app, "/login", &form).await;
    let mut back = app.second_factor_if_asked(&browser.client, &csrf, login, location(&response)).await;
    if back == "/login" {
        let view = app.login_view(&browser.client).await;
        assert_eq!(view["pageData"]["stepViewData"]["stepType"], "passkey-enrolment", "{view}");
        back = location(&browser.post(app, "/login", &[("_csrf", &csrf), ("decline", "1")]).await);
    }
    callback_path(app, browser, &back).await
}

/// Where the authorization request `authorize` returns `browser`: the
/// page's callback, as a path.
async fn callback_path(app: &TestApp, browser: &Browser, authorize: &str) -> String {
    let response = browser.client.get(app.url(authorize)).send().await.unwrap();
    let callback = location(&response);
    // Under the public URL (`localhost`); this browser's cookies are the
    // base address's.
    let origin = app.config.public_url.clone().unwrap();
    let path = callback.strip_prefix(&origin).unwrap_or_default().to_owned();
    assert!(path.starts_with("/account/callback?code="), "{callback}");
    path
}

/// The `_csrf` of the page's forms.
fn csrf_of(html: &str) -> String {
    let at = html.find("name=\"_csrf\" value=\"").expect("a form with _csrf") + 20;
    html[at..at + html[at..].find('"').unwrap()].to_owned()
}

/// The values of `attribute` on the page, in order.
fn all_of(html: &str, attribute: &str) -> Vec<String> {
    let marker = format!("{attribute}=\"");
    html.match_indices(&marker)
        .map(|(at, _)| {
            let rest = &html[at + marker.len()..];
            rest[..rest.find('"').unwrap()].to_owned()
        })
        .collect()
}

/// The WebAuthn creation options the page hands its script.
fn creation_options(html: &str) -> Value {
    let start = html.find(r#"<script type="application/json" id="passkeyOptions">"#).expect("options") + 52;
    serde_json::from_str(&html[start..start + html[start..].find("</script>").unwrap()]).unwrap()
}

#[tokio::test]
async fn a_customer_adds_renames_and_removes_a_passkey_on_the_account_page() {
    for backend in backends() {
        let (app, origin) = passkey_app(backend, |_| {}).await;
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
        let (browser, html) = signed_in(&app, "ivan", LINUX_CHROME).await;
        assert!(html.contains(r#"id="login">ivan<"#), "{backend:?}");
        assert!(html.contains(r#"id="noPasskeys""#) && html.contains(r#"data-action="passkey-create""#));
        let csrf = csrf_of(&html);
        let options = creation_options(&html);
        assert_eq!(options["publicKey"]["rp"]["id"], "localhost", "{backend:?}");
        assert_eq!(options["publicKey"]["user"]["name"], "ivan");

        // 32 different authenticators answer the one challenge at once:
        // exactly one passkey is made.
        let cookie = browser.cookies(&app, "/account/passkeys");
        assert!(cookie.contains("svc.account.passkey="), "{cookie}");
        let http = app.http();
        let mut answers = tokio::task::JoinSet::new();
        for _ in 0..32 {
            let credential = Authenticator::for_rp(ivan.id, "localhost").create(&options, &origin);
            let request = http
                .post(app.url("/account/passkeys"))
                .header("cookie", &cookie)
                .header("user-agent", LINUX_CHROME)
                .form(&[("_csrf", csrf.as_str()), ("credential", credential.as_str())]);
            answers.spawn(async move {
                let response = request.send().await.unwrap();
                (response.status().as_u16(), location(&response))
            });
        }
        let answers = answers.join_all().await;
        let added = answers.iter().filter(|(_, to)| to == "/account/?done=passkey_added").count();
        let refused = answers.iter().filter(|(status, _)| *status == 400).count();
        assert_eq!((added, refused), (1, 31), "{backend:?}: {answers:?}");
        let kept = app.store.passkeys_of(ivan.id).await.unwrap();
        assert_eq!(kept.len(), 1, "{backend:?}");
        assert_eq!(kept[0].name, "Chrome, Linux", "named after the browser");
        assert_eq!(audited(&*app.store, AuditKind::PasskeyCreated).await, 1);

        let (_, html) = browser.page(&app, "/account/?done=passkey_added").await;
        assert!(html.contains(r#"id="notice""#), "{backend:?}");
        assert_eq!(all_of(&html, "data-passkey"), [kept[0].id.to_string()]);
        // A new challenge for the next one, which excludes the one kept.
        let options = creation_options(&html);
        assert_eq!(options["publicKey"]["excludeCredentials"][0]["id"], kept[0].credential_id.as_str());

        // Renamed; a bad name or another user's passkey changes nothing.
        let rename = format!("/account/passkeys/{}/rename", kept[0].id);
        let response = browser.post(&app, &rename, &[("_csrf", &csrf), ("name", "  Work laptop ")]).await;
        assert_eq!(location(&response), "/account/?done=passkey_renamed", "{backend:?}");
        for bad in ["   ", &"x".repeat(65), "a\u{7}b", "Work \u{202e}potpal"] {
            let response = browser.post(&app, &rename, &[("_csrf", &csrf), ("name", bad)]).await;
            assert_eq!(response.status(), 400, "{backend:?}: {bad:?}");
        }
        let maria = app.store.find_user_by_login("maria").await.unwrap().unwrap();
        let hers = crate::passkeys::enrolled_elsewhere(&app, maria.id).await;
        let response = browser
            .post(&app, &format!("/account/passkeys/{}/rename", hers.id), &[("_csrf", &csrf), ("name", "Mine")])
            .await;
        assert_eq!(response.status(), 404, "{backend:?}");
        let response = browser
            .post(&app, &format!("/account/passkeys/{}/remove", hers.id), &[("_csrf", &csrf), ("confirm", "yes")])
            .await;
        assert_eq!(response.status(), 404, "{backend:?}");
        assert_eq!(app.store.passkeys_of(maria.id).await.unwrap(), vec![hers], "{backend:?}: hers untouched");
        assert_eq!(app.store.passkeys_of(ivan.id).await.unwrap()[0].name, "Work laptop");

        // A form without its token, or from a browser not signed in, does nothing.
        let remove = format!("/account/passkeys/{}/remove", kept[0].id);
        let response = browser.post(&app, &remove, &[("confirm", "yes")]).await;
        assert_eq!(response.status(), 403, "{backend:?}");
        let stranger = Browser::new(LINUX_CHROME);
        let response = stranger.post(&app, &remove, &[("_csrf", &csrf), ("confirm", "yes")]).await;
        assert!(location(&response).starts_with("/account/login"), "{backend:?}");

        // The last one goes after a confirmation that says it is the last
        // (the list's link opens it; a form without `confirm` shows it too).
        let (status, confirm) = browser.page(&app, &remove).await;
        assert_eq!(status, 200, "{backend:?}");
        assert!(
            confirm.contains(r#"id="lastWarning""#) && confirm.contains(r#"name="back" value="/account/passkeys/"#)
        );
        let response = browser.post(&app, &remove, &[("_csrf", &csrf)]).await;
        let confirm = response.text().await.unwrap();
        assert!(confirm.contains(r#"id="lastWarning""#) && confirm.contains("Work laptop"), "{backend:?}: {confirm}");
        assert_eq!(app.store.passkeys_of(ivan.id).await.unwrap().len(), 1, "nothing before confirming");
        let response = browser.post(&app, &remove, &[("_csrf", &csrf), ("confirm", "yes")]).await;
        assert_eq!(location(&response), "/account/?done=passkey_removed", "{backend:?}");
        assert!(app.store.passkeys_of(ivan.id).await.unwrap().is_empty());
        let removed = app.store.recent_audit(50).await.unwrap();
        let removed = removed.iter().find(|e| e.kind == "passkey.removed").expect("audited");
        assert_eq!((removed.actor.as_deref(), removed.user_id), (Some("account"), Some(ivan.id)), "{backend:?}");

        // A stale challenge (the page's cookie spent above) makes nothing.
        let late = Authenticator::for_rp(ivan.id, "localhost").create(&options, &origin);
        let response = http
            .post(app.url("/account/passkeys"))
            .header("cookie", &cookie)
            .form(&[("_csrf", csrf.as_str()), ("credential", late.as_str())])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{backend:?}");
        assert!(app.store.passkeys_of(ivan.id).await.unwrap().is_empty(), "{backend:?}");
    }
}

/// A new passkey is a new way into the account: the page offers to create
/// one only within ten minutes of the user's authentication. Later it
/// offers to sign in again instead, and issues no challenge; a single
/// sign-on session answering the page's own sign-in does not count, the
/// sign-in again asks for the password even with one.
#[tokio::test]
async fn creating_a_passkey_needs_a_recent_sign_in() {
    use portico_account::session::FRESH_SIGN_IN_SECS;
    for backend in backends() {
        let (app, origin) = passkey_app(backend, |_| {}).await;
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
        let (browser, html) = signed_in(&app, "ivan", LINUX_CHROME).await;
        creation_options(&html);
        assert!(!html.contains("passkeySignInFirst"), "{backend:?}: just signed in");

        // Past the ten minutes (the page's access token lives fifteen).
        app.clock.advance(time::Duration::seconds(FRESH_SIGN_IN_SECS + 1));
        let response = browser.client.get(app.url("/account/")).send().await.unwrap();
        assert_eq!(response.status(), 200, "{backend:?}");
        let challenge = response.headers().get_all("set-cookie").iter().any(|c| {
            let c = c.to_str().unwrap();
            c.starts_with("svc.account.passkey=") && !c.starts_with("svc.account.passkey=;")
        });
        assert!(!challenge, "{backend:?}: no challenge is issued");
        let html = response.text().await.unwrap();
        assert!(!html.contains("passkeyOptions") && html.contains(r#"id="passkeySignInFirst""#), "{backend:?}");

        // Once the page's token has expired, single sign-on answers its
        // sign-in at once: still not recent.
        app.clock.advance(time::Duration::seconds(300));
        let response = browser.client.get(app.url("/account/")).send().await.unwrap();
        let start = location(&response);
        assert!(start.starts_with("/account/login?back="), "{backend:?}: {start}");
        let authorize = location(&browser.client.get(app.url(&start)).send().await.unwrap());
        assert!(!authorize.contains("max_age"), "{authorize}");
        let path = callback_path(&app, &browser, &authorize).await;
        assert_eq!(location(&browser.client.get(app.url(&path)).send().await.unwrap()), "/account/");
        let (_, html) = browser.page(&app, "/account/").await;
        assert!(html.contains(r#"id="passkeySignInFirst""#), "{backend:?}: single sign-on is not a recent sign-in");

        // The page's offer: Portico's login again, password and all.
        let offer = "/account/login?fresh=1&back=%2Faccount%2F%3Fdone%3Dsigned_in_again";
        assert!(
            html.contains(r#"name="fresh" value="1""#) && html.contains(r#"value="/account/?done=signed_in_again""#)
        );
        let authorize = location(&browser.client.get(app.url(offer)).send().await.unwrap());
        assert!(authorize.ends_with("&max_age=0"), "{backend:?}: {authorize}");
        let path = through_the_login(&app, &browser, "ivan", &authorize).await;
        let response = browser.client.get(app.url(&path)).send().await.unwrap();
        assert_eq!(location(&response), "/account/?done=signed_in_again", "{backend:?}");
        let (_, html) = browser.page(&app, "/account/?done=signed_in_again").await;
        assert!(html.contains(r#"id="notice""#) && !html.contains("passkeySignInFirst"), "{backend:?}");
        let options = creation_options(&html);
        let credential = Authenticator::for_rp(ivan.id, "localhost").create(&options, &origin);
        let csrf = csrf_of(&html);
        let response = browser.post(&app, "/account/passkeys", &[("_csrf", &csrf), ("credential", &credential)]).await;
        assert_eq!(location(&response), "/account/?done=passkey_added", "{backend:?}");
        assert_eq!(app.store.passkeys_of(ivan.id).await.unwrap().len(), 1, "{backend:?}");
    }
}

#[tokio::test]
async fn a_customer_ends_other_sessions_and_forgets_a_trusted_device() {
    for backend in backends() {
        let (app, _) = passkey_app(backend, |_| {}).await;
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
        let (phone, _) = signed_in(&app, "ivan", ANDROID_CHROME).await;
        let (tablet, _) = signed_in(&app, "ivan", ANDROID_CHROME).await;
        let (laptop, html) = signed_in(&app, "ivan", LINUX_CHROME).await;
        let csrf = csrf_of(&html);

        // Three sessions and three devices, this browser's marked and first.
        let sessions = all_of(&html, "data-session");
        assert_eq!(sessions.len(), 3, "{backend:?}: {html}");
        let section = &html[html.find(r#"id="sessions""#).unwrap()..html.find(r#"id="devices""#).unwrap()];
        assert!(section.contains("Chrome, Linux") && section.contains("Chrome, Android"), "{backend:?}: {section}");
        assert_eq!(section.matches(r#"data-action="session-end""#).count(), 2, "no end button on this browser's own");
        let devices = all_of(&html, "data-device");
        assert_eq!(devices.len(), 3, "{backend:?}");
        assert!(!html.contains(
            &app.store.trusted_devices(ivan.id, app.clock.now() - time::Duration::days(1)).await.unwrap()[0].device_id
        ));

        // One other session ends: its browser is signed out of the page.
        let phone_sid = {
            let (_, html) = phone.page(&app, "/account/").await;
            let at = html.find("class=\"badge\"").unwrap();
            let before = &html[..at];
            let marker = before.rfind("data-session=\"").unwrap() + 14;
            before[marker..marker + before[marker..].find('"').unwrap()].to_owned()
        };
        let response = laptop.post(&app, &format!("/account/sessions/{phone_sid}/end"), &[("_csrf", &csrf)]).await;
        assert_eq!(location(&response), "/account/?done=session_ended", "{backend:?}");
        let response = phone.client.get(app.url("/account/")).send().await.unwrap();
        assert!(location(&response).starts_with("/account/login"), "{backend:?}: the ended session's page is gone");
        let ended = app.store.recent_audit(50).await.unwrap();
        let ended = ended.iter().find(|e| e.kind == "session.ended").expect("audited");
        assert_eq!(ended.actor.as_deref(), Some("account"), "{backend:?}");
        let response = laptop.post(&app, &format!("/account/sessions/{phone_sid}/end"), &[("_csrf", &csrf)]).await;
        assert_eq!(response.status(), 404, "{backend:?}: once");
        let response = laptop.post(&app, "/account/sessions/not-a-session/end", &[("_csrf", &csrf)]).await;
        assert_eq!(response.status(), 404);

        // All others end; this one stays.
        let response = laptop.post(&app, "/account/sessions/end-others", &[("_csrf", &csrf)]).await;
        assert_eq!(location(&response), "/account/?done=sessions_ended", "{backend:?}");
        let live = app.store.list_sessions(ivan.id, app.clock.now()).await.unwrap();
        assert_eq!(live.len(), 1, "{backend:?}");
        let response = tablet.client.get(app.url("/account/")).send().await.unwrap();
        assert!(location(&response).starts_with("/account/login"), "{backend:?}");
        let (status, html) = laptop.page(&app, "/account/").await;
        assert_eq!(status, 200, "{backend:?}");
        assert_eq!(all_of(&html, "data-session").len(), 1);

        // A device forgotten asks a code again; a made-up one is not found.
        let not_before = app.clock.now() - time::Duration::days(1);
        let before = app.store.trusted_devices(ivan.id, not_before).await.unwrap();
        let response = laptop.post(&app, "/account/devices/0123456789abcdef/forget", &[("_csrf", &csrf)]).await;
        assert_eq!(response.status(), 404, "{backend:?}");
        let forget = format!("/account/devices/{}/forget", devices[1]);
        let response = laptop.post(&app, &forget, &[("_csrf", "forged")]).await;
        assert_eq!(response.status(), 403, "{backend:?}");
        let response = laptop.post(&app, &forget, &[("_csrf", &csrf)]).await;
        assert_eq!(location(&response), "/account/?done=device_forgotten", "{backend:?}");
        let after = app.store.trusted_devices(ivan.id, not_before).await.unwrap();
        assert_eq!(after.len(), before.len() - 1, "{backend:?}");
        assert_eq!(audited(&*app.store, AuditKind::DeviceForgotten).await, 1);
        let response = laptop.post(&app, &forget, &[("_csrf", &csrf)]).await;
        assert_eq!(response.status(), 404, "{backend:?}: once");
    }
}

/// The account page's title names the page and the bank its header
/// shows, as the login pages' do.
#[tokio::test]
async fn the_account_pages_title_names_the_bank() {
    let (app, _) = passkey_app(backends()[0], |_| {}).await;
    let (_, html) = signed_in(&app, "ivan", LINUX_CHROME).await;
    let bank = html
        .split_once(r#"id="bankName">"#)
        .and_then(|(_, rest)| rest.split_once("</span>"))
        .map(|(bank, _)| bank.to_owned())
        .expect("the header names the bank");
    let title = html.split_once("<title>").and_then(|(_, rest)| rest.split_once("</title>")).map(|(t, _)| t);
    let title = title.expect("a title");
    assert!(title.ends_with(&format!(" — {bank}")) && !title.contains("Portico"), "{title}");
}

#[tokio::test]
async fn the_account_page_keeps_its_own_client_headers_and_refuses_a_blocked_user() {
    for backend in backends() {
        let (app, origin) = passkey_app(backend, |_| {}).await;
        let client = app.store.find_client(&"portico-account".into()).await.unwrap().expect("registered at start");
        assert_eq!(client.redirect_uris, vec![format!("{origin}/account/callback")], "{backend:?}");
        assert!(client.logout_revokes_grants && !client.require_consent);

        let (browser, _) = signed_in(&app, "ivan", LINUX_CHROME).await;
        let response = browser.client.get(app.url("/account/")).send().await.unwrap();
        let csp = response.headers()["content-security-policy"].to_str().unwrap().to_owned();
        assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"), "{csp}");
        assert!(!csp.contains("unsafe-inline"), "{csp}");
        assert_eq!(response.headers()["cache-control"], "no-store");
        let html = response.text().await.unwrap();
        assert!(!html.contains("viewData") && html.contains(r#"<script src="/account/assets/account.js""#), "{html}");

        // A block (which revokes every grant) signs the customer out of the page.
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
        let response = app
            .http()
            .post(app.url(&format!("/admin/v1/users/{}/block", ivan.id)))
            .bearer_auth(portico_tests::ADMIN_TOKEN)
            .json(&serde_json::json!({"reason": "reported stolen phone"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{backend:?}");
        let response = browser.client.get(app.url("/account/")).send().await.unwrap();
        assert!(location(&response).starts_with("/account/login"), "{backend:?}: a blocked user is signed out");
    }
}
