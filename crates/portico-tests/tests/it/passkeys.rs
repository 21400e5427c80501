//! Passkey ceremonies against a software authenticator (P-256, attestation
//! `none`, user verified), on both backends: enrolment, sign-in, a counter
//! that does not advance locking the passkey, and the bad input a browser
//! or an attacker may send, none of which changes anything.

use portico_crypto::b64url;
use portico_identity::passkeys::{PasskeyError, Passkeys};
use portico_model::audit::AuditKind;
use portico_model::clock::Clock;
use portico_model::ids::UserId;
use portico_server::Config;
pub(crate) use portico_tests::authenticator::Authenticator;
use portico_tests::{ADMIN_TOKEN, Pkce, TempDir, TestApp, backends, code_from, jwt_claims, location, view_data};
use serde_json::{Value, json};

use crate::storage_contract::passkeys::audited;
use crate::storage_contract::{store, t0, user};

const ORIGIN: &str = "https://id.bank.example";
const RP_ID: &str = "id.bank.example";

#[tokio::test]
async fn a_passkey_is_enrolled_signs_in_and_is_locked_when_its_counter_goes_back() {
    let passkeys = Passkeys::new(ORIGIN, "Bank");
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let ivan = user("ivan");
        store.create_user(&ivan).await.unwrap();
        let mut authenticator = Authenticator::for_rp(ivan.id, RP_ID);

        let started = passkeys.start_enrolment(ivan.id, "ivan", "Ivan", &[]).unwrap();
        let answer = authenticator.create(&started.options, ORIGIN);
        let enrolled =
            passkeys.finish_enrolment(&*store, ivan.id, &started.state, &answer, "Phone", t0()).await.unwrap();
        assert_eq!((enrolled.name.as_str(), enrolled.sign_count), ("Phone", 0));
        assert_eq!(store.passkeys_of(ivan.id).await.unwrap(), vec![enrolled.clone()], "{backend:?}");
        // The same credential again is refused: by the options, which
        // exclude it, and by the store, when a ceremony did not.
        let again = passkeys.start_enrolment(ivan.id, "ivan", "Ivan", std::slice::from_ref(&enrolled)).unwrap();
        assert_eq!(again.options["publicKey"]["excludeCredentials"][0]["id"], enrolled.credential_id);
        let answer = authenticator.create(&again.options, ORIGIN);
        let excluded = passkeys.finish_enrolment(&*store, ivan.id, &again.state, &answer, "Phone", t0()).await;
        assert!(matches!(excluded, Err(PasskeyError::Refused(_))), "{backend:?}: {excluded:?}");
        let unaware = passkeys.start_enrolment(ivan.id, "ivan", "Ivan", &[]).unwrap();
        let answer = authenticator.create(&unaware.options, ORIGIN);
        let taken = passkeys.finish_enrolment(&*store, ivan.id, &unaware.state, &answer, "Phone", t0()).await;
        assert!(matches!(taken, Err(PasskeyError::Taken)), "{backend:?}: {taken:?}");
        assert_eq!(store.passkeys_of(ivan.id).await.unwrap().len(), 1);
        assert_eq!(audited(&*store, AuditKind::PasskeyCreated).await, 1);

        let started = passkeys.start_sign_in().unwrap();
        let answer = authenticator.get(&started.options, ORIGIN, 1);
        let signed_in = passkeys.finish_sign_in(&*store, &started.state, &answer, t0()).await.unwrap();
        assert_eq!((signed_in.user_id, signed_in.passkey.id, signed_in.user_verified), (ivan.id, enrolled.id, true));
        assert_eq!(store.find_passkey(&enrolled.credential_id).await.unwrap().unwrap().sign_count, 1);
        assert_eq!(audited(&*store, AuditKind::PasskeyUsed).await, 1);

        // A counter that does not advance: a possible clone, locked.
        let started = passkeys.start_sign_in().unwrap();
        let answer = authenticator.get(&started.options, ORIGIN, 0);
        let clone = passkeys.finish_sign_in(&*store, &started.state, &answer, t0()).await;
        assert!(matches!(clone, Err(PasskeyError::PossibleClone)), "{backend:?}: {clone:?}");
        assert!(store.find_passkey(&enrolled.credential_id).await.unwrap().unwrap().locked_at.is_some());
        assert_eq!(audited(&*store, AuditKind::PasskeyLocked).await, 1);
        let started = passkeys.start_sign_in().unwrap();
        let answer = authenticator.get(&started.options, ORIGIN, 5);
        let locked = passkeys.finish_sign_in(&*store, &started.state, &answer, t0()).await;
        assert!(matches!(locked, Err(PasskeyError::Locked)), "{backend:?}: {locked:?}");
        assert_eq!(audited(&*store, AuditKind::PasskeyUsed).await, 1, "no use recorded since");
    }
}

#[tokio::test]
async fn bad_passkey_answers_are_refused_and_change_nothing() {
    let passkeys = Passkeys::new(ORIGIN, "Bank");
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (ivan, maria) = (user("ivan"), user("maria"));
        store.create_user(&ivan).await.unwrap();
        store.create_user(&maria).await.unwrap();
        let mut authenticator = Authenticator::for_rp(ivan.id, RP_ID);

        // An enrolment answered for another origin stores nothing.
        let started = passkeys.start_enrolment(ivan.id, "ivan", "Ivan", &[]).unwrap();
        let foreign = authenticator.create(&started.options, "https://id.bank.example.evil");
        let refused = passkeys.finish_enrolment(&*store, ivan.id, &started.state, &foreign, "Phone", t0()).await;
        assert!(matches!(refused, Err(PasskeyError::Refused(_))), "{backend:?}: {refused:?}");
        assert!(store.passkeys_of(ivan.id).await.unwrap().is_empty());
        // Malformed CBOR in place of the attestation object: refused, nothing stored.
        let mut garbled: Value = serde_json::from_str(&authenticator.create(&started.options, ORIGIN)).unwrap();
        garbled["response"]["attestationObject"] = b64url([0xa3, 0x63, 0x66, 0x6d, 0xff, 0x00, 0x1f]).into();
        let refused =
            passkeys.finish_enrolment(&*store, ivan.id, &started.state, &garbled.to_string(), "Phone", t0()).await;
        assert!(matches!(refused, Err(PasskeyError::Refused(_) | PasskeyError::Malformed)), "{backend:?}: {refused:?}");
        assert!(store.passkeys_of(ivan.id).await.unwrap().is_empty(), "{backend:?}");
        let answer = authenticator.create(&started.options, ORIGIN);
        let enrolled =
            passkeys.finish_enrolment(&*store, ivan.id, &started.state, &answer, "Phone", t0()).await.unwrap();

        let started = passkeys.start_sign_in().unwrap();
        let other = passkeys.start_sign_in().unwrap();
        let cases: Vec<(&str, String, &str)> = vec![
            ("another origin", authenticator.get(&started.options, "https://evil.example", 1), "Refused"),
            ("another challenge", authenticator.get(&other.options, ORIGIN, 1), "Refused"),
            ("not JSON", "{\"id\":".into(), "Malformed"),
            ("huge", format!("{{\"pad\":\"{}\"}}", "a".repeat(20_000)), "Malformed"),
        ];
        for (case, answer, expected) in cases {
            let outcome = passkeys.finish_sign_in(&*store, &started.state, &answer, t0()).await;
            assert!(format!("{outcome:?}").contains(expected), "{backend:?}, {case}: {outcome:?}");
        }
        // Ivan's credential presented as Maria's.
        let mut impostor = authenticator;
        impostor.user_handle = uuid::Uuid::from(maria.id).as_bytes().to_vec();
        let answer = impostor.get(&started.options, ORIGIN, 1);
        let outcome = passkeys.finish_sign_in(&*store, &started.state, &answer, t0()).await;
        assert!(matches!(outcome, Err(PasskeyError::UnknownCredential)), "{backend:?}: {outcome:?}");
        // An unknown credential.
        let mut stranger = Authenticator::for_rp(ivan.id, RP_ID);
        let answer = stranger.get(&started.options, ORIGIN, 1);
        let outcome = passkeys.finish_sign_in(&*store, &started.state, &answer, t0()).await;
        assert!(matches!(outcome, Err(PasskeyError::UnknownCredential)), "{backend:?}: {outcome:?}");

        let stored = store.find_passkey(&enrolled.credential_id).await.unwrap().unwrap();
        assert_eq!((stored.sign_count, stored.last_used_at, stored.locked_at), (0, None, None), "{backend:?}");
        assert_eq!(audited(&*store, AuditKind::PasskeyUsed).await, 0);
    }
}

/// An admin API call with the admin token: status and JSON body.
async fn admin(app: &TestApp, method: reqwest::Method, path: &str) -> (u16, Value) {
    let response = app.http().request(method, app.url(path)).bearer_auth(ADMIN_TOKEN).send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn operators_list_and_remove_a_users_passkeys_and_a_removed_one_signs_nobody_in() {
    let passkeys = Passkeys::new(ORIGIN, "Bank");
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
        let mut authenticator = Authenticator::for_rp(ivan.id, RP_ID);
        let started = passkeys.start_enrolment(ivan.id, "ivan", "Ivan", &[]).unwrap();
        let answer = authenticator.create(&started.options, ORIGIN);
        let now = app.clock.now();
        let enrolled =
            passkeys.finish_enrolment(&*app.store, ivan.id, &started.state, &answer, "Phone", now).await.unwrap();

        let id = ivan.id;
        let (status, listed) = admin(&app, reqwest::Method::GET, &format!("/admin/v1/users/{id}/passkeys")).await;
        assert_eq!(status, 200, "{backend:?}: {listed}");
        assert_eq!(listed[0]["id"], json!(enrolled.id));
        assert_eq!((listed[0]["name"].as_str(), &listed[0]["lastUsedAt"]), (Some("Phone"), &Value::Null));
        assert!(listed[0].get("credential").is_none(), "the credential stays in Portico: {listed}");
        let nobody = uuid::Uuid::new_v4();
        for (path, code) in [
            (format!("/admin/v1/users/{id}/passkeys/{nobody}"), "passkey_not_found"),
            (format!("/admin/v1/users/{id}/passkeys/not-a-uuid"), "passkey_not_found"),
            (format!("/admin/v1/users/{nobody}/passkeys/{}", enrolled.id), "user_not_found"),
        ] {
            let (status, body) = admin(&app, reqwest::Method::DELETE, &path).await;
            assert_eq!((status, body["code"].as_str()), (404, Some(code)), "{backend:?} {path}: {body}");
        }
        let path = format!("/admin/v1/users/{id}/passkeys/{}", enrolled.id);
        assert_eq!(admin(&app, reqwest::Method::DELETE, &path).await.0, 204);
        assert_eq!(admin(&app, reqwest::Method::DELETE, &path).await.0, 404, "removed once");
        let event = &app.store.recent_audit(1).await.unwrap()[0];
        assert_eq!((event.kind.as_str(), event.actor.as_deref()), ("passkey.removed", Some("token:admin")));
        assert_eq!(event.detail["passkey"], json!(enrolled.id));
        let (_, listed) = admin(&app, reqwest::Method::GET, &format!("/admin/v1/users/{id}/passkeys")).await;
        assert_eq!(listed, json!([]));

        let started = passkeys.start_sign_in().unwrap();
        let answer = authenticator.get(&started.options, ORIGIN, 1);
        let outcome = passkeys.finish_sign_in(&*app.store, &started.state, &answer, now).await;
        assert!(matches!(outcome, Err(PasskeyError::UnknownCredential)), "{backend:?}: {outcome:?}");
    }
}

/// A server whose public URL is `http://localhost:<port>` (WebAuthn takes
/// no IP address), with `configure` applied; and its origin.
pub(crate) async fn passkey_app(
    backend: portico_tests::Backend,
    configure: impl FnOnce(&mut Config),
) -> (TestApp, String) {
    let app = TestApp::spawn_with(backend, |c| {
        c.public_url = c.public_url.as_ref().map(|u| u.replace("127.0.0.1", "localhost"));
        configure(c);
    })
    .await;
    let origin = app.config.public_url.clone().unwrap();
    assert!(app.identity.passkeys.unavailable().is_none(), "passkeys are on at {origin}");
    (app, origin)
}

/// Enrols a passkey for `login` straight through the relying party.
pub(crate) async fn enrol(app: &TestApp, origin: &str, login: &str) -> Authenticator {
    let user = app.store.find_user_by_login(login).await.unwrap().unwrap();
    let authenticator = Authenticator::for_rp(user.id, "localhost");
    let started = app.identity.passkeys.start_enrolment(user.id, login, login, &[]).unwrap();
    let answer = authenticator.create(&started.options, origin);
    let now = app.clock.now();
    app.identity.passkeys.finish_enrolment(&*app.store, user.id, &started.state, &answer, "Phone", now).await.unwrap();
    authenticator
}

/// A browser at the first page of a fresh login: it and the CSRF token.
async fn first_page(app: &TestApp, pkce: &Pkce) -> (reqwest::Client, String, String) {
    let browser = app.browser();
    let response = browser.get(app.authorize_url(pkce, &[])).send().await.unwrap();
    assert_eq!(location(&response), "/login");
    let html = browser.get(app.url("/login")).send().await.unwrap().text().await.unwrap();
    let csrf = view_data(&html)["pageData"]["authenticationFlowContext"]["csrf"].as_str().unwrap().to_owned();
    (browser, csrf, html)
}

/// `POST /login/passkey/options`: the status and the options.
async fn sign_in_options(app: &TestApp, browser: &reqwest::Client, csrf: &str) -> (u16, Value) {
    let response = browser.post(app.url("/login/passkey/options")).header("x-xsrf-token", csrf).send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

/// `POST /login/passkey` with `credential`: where it leads.
async fn sign_in(app: &TestApp, browser: &reqwest::Client, csrf: &str, credential: &str) -> String {
    let form = [("_csrf", csrf), ("credential", credential)];
    let response = browser.post(app.url("/login/passkey")).form(&form).send().await.unwrap();
    assert_eq!(response.status(), 303, "{backend:?}", backend = app.backend);
    location(&response)
}

/// The claims of the id_token of a completed login whose answer led to `back`.
async fn id_token_after(app: &TestApp, browser: &reqwest::Client, pkce: &Pkce, back: &str) -> Value {
    assert!(back.starts_with("/oauth2/authorize?"), "the login completed: {back}");
    let response = browser.get(app.url(back)).send().await.unwrap();
    let code = code_from(&response, &app.redirect_uri());
    let tokens: Value = app.exchange(&code, &pkce.verifier).await.json().await.unwrap();
    jwt_claims(tokens["id_token"].as_str().unwrap())
}

fn step_error(view: &Value) -> Option<&str> {
    view["pageData"]["errors"]["otherError"].as_str()
}

#[tokio::test]
async fn a_passkey_signs_in_from_the_first_page_without_a_code() {
    for backend in backends() {
        let (app, origin) = passkey_app(backend, |_| {}).await;
        let mut authenticator = enrol(&app, &origin, "ivan").await;
        let pkce = Pkce::new();
        let (browser, csrf, html) = first_page(&app, &pkce).await;
        assert!(html.contains(r#"data-action="passkey-login""#) && html.contains("username webauthn"), "{backend:?}");
        let (status, options) = sign_in_options(&app, &browser, &csrf).await;
        assert_eq!(status, 200, "{options}");
        assert_eq!(options["publicKey"]["rpId"], "localhost");
        assert_eq!(options["publicKey"]["userVerification"], "required");
        let (status, _) = sign_in_options(&app, &browser, "not-the-token").await;
        assert_eq!(status, 403, "the XSRF header is checked");
        let bare = browser.post(app.url("/login/passkey/options")).send().await.unwrap();
        assert_eq!(bare.status(), 403, "and required");

        let sent = app.outbox().len();
        let answer = authenticator.get(&options, &origin, 1);
        let back = sign_in(&app, &browser, &csrf, &answer).await;
        let claims = id_token_after(&app, &browser, &pkce, &back).await;
        assert_eq!(claims["amr"], json!(["hwk", "user", "mfa"]), "{backend:?}");
        assert_eq!(app.outbox().len(), sent, "no code was sent");
        let audit = app.store.recent_audit(5).await.unwrap();
        let login = audit.iter().find(|e| e.kind == "login.succeeded").unwrap();
        assert_eq!(login.detail["method"], "PASSKEY");
        assert!(audit.iter().any(|e| e.kind == "passkey.used"));

        // The same answer in another login: its challenge is not this one's.
        let pkce = Pkce::new();
        let (browser, csrf, _) = first_page(&app, &pkce).await;
        let (_, _) = sign_in_options(&app, &browser, &csrf).await;
        assert_eq!(sign_in(&app, &browser, &csrf, &answer).await, "/login");
        let view = app.login_view(&browser).await;
        assert_eq!(step_error(&view), Some("challenge.passkey.wrong-credentials"), "{backend:?}: {view}");
        assert_eq!(view["pageData"]["stepViewData"]["stepType"], "username-password");
    }
}

#[tokio::test]
async fn a_passkey_challenge_is_spent_once_and_bad_answers_sign_nobody_in() {
    for backend in backends() {
        let (app, origin) = passkey_app(backend, |_| {}).await;
        let mut authenticator = enrol(&app, &origin, "ivan").await;
        let pkce = Pkce::new();
        let (browser, csrf, _) = first_page(&app, &pkce).await;
        // No challenge asked for.
        assert_eq!(sign_in(&app, &browser, &csrf, "{}").await, "/login");
        let view = app.login_view(&browser).await;
        assert_eq!(step_error(&view), Some("challenge.passkey.challenge-expired"), "{backend:?}: {view}");

        // A refused answer spends the challenge: the good one after it is too late.
        let (_, options) = sign_in_options(&app, &browser, &csrf).await;
        let foreign = authenticator.get(&options, "http://localhost.evil.example", 1);
        assert_eq!(sign_in(&app, &browser, &csrf, &foreign).await, "/login");
        let view = app.login_view(&browser).await;
        assert_eq!(step_error(&view), Some("challenge.passkey.wrong-credentials"), "{backend:?}");
        let good = authenticator.get(&options, &origin, 1);
        assert_eq!(sign_in(&app, &browser, &csrf, &good).await, "/login");
        let view = app.login_view(&browser).await;
        assert_eq!(step_error(&view), Some("challenge.passkey.challenge-expired"), "{backend:?}");

        // Malformed and huge answers; a bad CSRF token ends at the error page.
        for bad in ["not json".to_owned(), format!("{{\"id\":\"{}\"}}", "A".repeat(20_000))] {
            let (_, options) = sign_in_options(&app, &browser, &csrf).await;
            assert!(options["publicKey"].is_object());
            assert_eq!(sign_in(&app, &browser, &csrf, &bad).await, "/login", "{backend:?}");
        }
        let (_, options) = sign_in_options(&app, &browser, &csrf).await;
        let good = authenticator.get(&options, &origin, 1);
        assert_eq!(sign_in(&app, &browser, &"x".repeat(43), &good).await, "/error");

        // A blocked user's passkey signs nobody in.
        app.store.set_user_blocked("ivan", true, app.clock.now()).await.unwrap();
        let pkce = Pkce::new();
        let (browser, csrf, _) = first_page(&app, &pkce).await;
        let (_, options) = sign_in_options(&app, &browser, &csrf).await;
        let answer = authenticator.get(&options, &origin, 1);
        assert_eq!(sign_in(&app, &browser, &csrf, &answer).await, "/error", "{backend:?}");
        let used = app.store.recent_audit(20).await.unwrap().iter().filter(|e| e.kind == "login.succeeded").count();
        assert_eq!(used, 0, "nobody signed in");
    }
}

#[tokio::test]
async fn a_passkey_is_the_second_factor_after_a_password_and_a_code_may_replace_it() {
    for backend in backends() {
        let (app, origin) = passkey_app(backend, |_| {}).await;
        let mut authenticator = enrol(&app, &origin, "ivan").await;
        let maria = enrol(&app, &origin, "maria").await;
        let password = |browser: &reqwest::Client, csrf: &str| {
            let form =
                [("_csrf", csrf.to_owned()), ("principal", "ivan".into()), ("credentials", "ivan-password".into())];
            browser.post(app.url("/login")).form(&form).send()
        };
        let sent = app.outbox().len();
        let pkce = Pkce::new();
        let (browser, csrf, _) = first_page(&app, &pkce).await;
        assert_eq!(location(&password(&browser, &csrf).await.unwrap()), "/login");
        let view = app.login_view(&browser).await;
        let step = &view["pageData"]["stepViewData"];
        assert_eq!((step["stepType"].as_str(), step["viewType"].as_str()), (Some("passkey"), Some("secondFactor")));
        assert_eq!(step["smsDeliveryAvailable"], true, "{view}");
        assert_eq!(app.outbox().len(), sent, "{backend:?}: no code sent for the passkey step");
        let options = step["passkeyRequestOptions"].clone();

        // Maria's passkey is not Ivan's second factor.
        let mut maria = maria;
        let answer = maria.get(&options, &origin, 1);
        let response = browser.post(app.url("/login")).form(&[("_csrf", &csrf), ("credentials", &answer)]).send();
        assert_eq!(location(&response.await.unwrap()), "/login");
        let view = app.login_view(&browser).await;
        assert_eq!(step_error(&view), Some("challenge.passkey.wrong-credentials"), "{backend:?}: {view}");
        let options = view["pageData"]["stepViewData"]["passkeyRequestOptions"].clone();
        assert_ne!(options["publicKey"]["challenge"], step["passkeyRequestOptions"]["publicKey"]["challenge"]);

        let answer = authenticator.get(&options, &origin, 1);
        let response = browser.post(app.url("/login")).form(&[("_csrf", &csrf), ("credentials", &answer)]).send();
        let back = location(&response.await.unwrap());
        let claims = id_token_after(&app, &browser, &pkce, &back).await;
        assert_eq!(claims["amr"], json!(["hwk", "user", "pwd", "mfa"]), "{backend:?}");
        assert_eq!(app.outbox().len(), sent, "no code was sent");

        // In another browser the user takes a code instead.
        let pkce = Pkce::new();
        let (browser, csrf, _) = first_page(&app, &pkce).await;
        password(&browser, &csrf).await.unwrap();
        let form = [("_csrf", csrf.as_str()), ("otpMethod", "sms")];
        let response = browser.post(app.url("/login/user-settings/otp-method")).form(&form).send().await.unwrap();
        assert_eq!(location(&response), "/login");
        let view = app.login_view(&browser).await;
        assert_eq!(view["pageData"]["stepViewData"]["stepType"], "sms-otp", "{backend:?}: {view}");
        assert_eq!(app.outbox().len(), sent + 1, "the code was sent");
    }
}

#[tokio::test]
async fn without_passkey_replaces_code_a_code_follows_the_passkey() {
    for backend in backends() {
        let (app, origin) = passkey_app(backend, |c| c.login.passkey_replaces_code = false).await;
        let mut authenticator = enrol(&app, &origin, "ivan").await;
        let pkce = Pkce::new();
        let (browser, csrf, _) = first_page(&app, &pkce).await;
        let (_, options) = sign_in_options(&app, &browser, &csrf).await;
        let answer = authenticator.get(&options, &origin, 1);
        assert_eq!(sign_in(&app, &browser, &csrf, &answer).await, "/login");
        let view = app.login_view(&browser).await;
        assert_eq!(view["pageData"]["stepViewData"]["stepType"], "sms-otp", "{backend:?}: {view}");
        let phone = app.store.find_user_by_login("ivan").await.unwrap().unwrap().phone.unwrap();
        let code = app.last_code(&phone);
        let response = browser.post(app.url("/login")).form(&[("_csrf", &csrf), ("credentials", &code)]).send();
        let back = location(&response.await.unwrap());
        let claims = id_token_after(&app, &browser, &pkce, &back).await;
        assert_eq!(claims["amr"], json!(["hwk", "user", "sms", "mfa"]), "{backend:?}");
    }
}

#[tokio::test]
async fn bad_passkey_answers_count_like_wrong_passwords_and_pause_the_address() {
    for backend in backends() {
        let (app, origin) = passkey_app(backend, |c| {
            c.login.address_captcha_after_failures = 100;
            c.login.address_delay_after_failures = 3;
        })
        .await;
        let mut authenticator = enrol(&app, &origin, "ivan").await;
        let pkce = Pkce::new();
        let (browser, csrf, _) = first_page(&app, &pkce).await;
        for _ in 0..3 {
            let (_, options) = sign_in_options(&app, &browser, &csrf).await;
            let bad = authenticator.get(&options, "http://localhost.evil.example", 1);
            assert_eq!(sign_in(&app, &browser, &csrf, &bad).await, "/login");
            let view = app.login_view(&browser).await;
            assert_eq!(step_error(&view), Some("challenge.passkey.wrong-credentials"), "{backend:?}");
        }
        // The address is paused: a good answer is not even checked...
        let (_, options) = sign_in_options(&app, &browser, &csrf).await;
        let good = authenticator.get(&options, &origin, 1);
        assert_eq!(sign_in(&app, &browser, &csrf, &good).await, "/login");
        let view = app.login_view(&browser).await;
        assert_eq!(step_error(&view), Some("challenge.username-password.temporarily-paused"), "{backend:?}: {view}");
        assert_eq!(app.store.find_passkey(&b64url(&authenticator.credential_id)).await.unwrap().unwrap().sign_count, 0);
        // ...and neither is a password from it.
        let form = [("_csrf", csrf.as_str()), ("principal", "ivan"), ("credentials", "ivan-password")];
        let response = browser.post(app.url("/login")).form(&form).send().await.unwrap();
        assert_eq!(location(&response), "/login");
        let view = app.login_view(&browser).await;
        let code = view["pageData"]["errors"].to_string();
        assert!(code.contains("temporarily-paused"), "{backend:?}: {view}");
    }
}

/// A passkey of `user` named "Phone", enrolled through a relying party of
/// another host (for servers on an IP address, where the login offers none).
pub(crate) async fn enrolled_elsewhere(app: &TestApp, user: UserId) -> portico_model::passkey::Passkey {
    let passkeys = Passkeys::new(ORIGIN, "Bank");
    let authenticator = Authenticator::for_rp(user, RP_ID);
    let started = passkeys.start_enrolment(user, "user", "User", &[]).unwrap();
    let answer = authenticator.create(&started.options, ORIGIN);
    let now = app.clock.now();
    passkeys.finish_enrolment(&*app.store, user, &started.state, &answer, "Phone", now).await.unwrap()
}

/// A password and the SMS code for `login` in `browser`: where the code's
/// answer leads.
async fn password_and_code(app: &TestApp, browser: &reqwest::Client, csrf: &str, login: &str) -> String {
    let password = format!("{login}-password");
    let form = [("_csrf", csrf), ("principal", login), ("credentials", password.as_str())];
    let response = browser.post(app.url("/login")).form(&form).send().await.unwrap();
    assert_eq!(location(&response), "/login");
    let view = app.login_view(browser).await;
    assert_eq!(view["pageData"]["stepViewData"]["stepType"], "sms-otp", "{view}");
    let phone = app.store.find_user_by_login(login).await.unwrap().unwrap().phone.unwrap();
    let code = app.last_code(&phone);
    let response = browser.post(app.url("/login")).form(&[("_csrf", csrf), ("credentials", &code)]).send();
    location(&response.await.unwrap())
}

/// `POST /login` on the offer with the new credential, from Chrome on Linux.
async fn create_at_offer(app: &TestApp, browser: &reqwest::Client, csrf: &str, credential: &str) -> String {
    let agent = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
    let form = [("_csrf", csrf), ("credentials", credential)];
    let response = browser.post(app.url("/login")).header("user-agent", agent).form(&form).send().await.unwrap();
    location(&response)
}

async fn decline_offer(app: &TestApp, browser: &reqwest::Client, csrf: &str) -> String {
    let response = browser.post(app.url("/login")).form(&[("_csrf", csrf), ("decline", "1")]).send().await.unwrap();
    location(&response)
}

#[tokio::test]
async fn after_a_password_and_a_code_a_passkey_is_offered_created_once_and_signs_in_next_time() {
    for backend in backends() {
        let (app, origin) = passkey_app(backend, |_| {}).await;
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
        let pkce = Pkce::new();
        let (browser, csrf, _) = first_page(&app, &pkce).await;
        assert_eq!(password_and_code(&app, &browser, &csrf, "ivan").await, "/login");
        let html = browser.get(app.url("/login")).send().await.unwrap().text().await.unwrap();
        assert!(html.contains(r#"data-action="passkey-create""#) && html.contains(r#"data-action="passkey-skip""#));
        let view = view_data(&html);
        let step = &view["pageData"]["stepViewData"];
        assert_eq!(
            (step["stepType"].as_str(), step["viewType"].as_str()),
            (Some("passkey-enrolment"), Some("default"))
        );
        let options = step["passkeyCreationOptions"].clone();
        assert_eq!(options["publicKey"]["rp"]["id"], "localhost", "{backend:?}: {view}");
        assert_eq!(options["publicKey"]["user"]["name"], "ivan");
        assert_eq!(options["publicKey"]["authenticatorSelection"]["residentKey"], "required");

        // Another origin's answer: refused, nothing stored, a new challenge.
        let authenticator = Authenticator::for_rp(ivan.id, "localhost");
        let foreign = authenticator.create(&options, "http://localhost.evil.example");
        assert_eq!(create_at_offer(&app, &browser, &csrf, &foreign).await, "/login");
        let view = app.login_view(&browser).await;
        assert_eq!(step_error(&view), Some("challenge.passkey-enrolment.refused"), "{backend:?}: {view}");
        assert!(app.store.passkeys_of(ivan.id).await.unwrap().is_empty(), "{backend:?}: nothing stored");
        let fresh = view["pageData"]["stepViewData"]["passkeyCreationOptions"].clone();
        assert_ne!(fresh["publicKey"]["challenge"], options["publicKey"]["challenge"]);
        // The old challenge was spent by the refused answer.
        let stale = authenticator.create(&options, &origin);
        assert_eq!(create_at_offer(&app, &browser, &csrf, &stale).await, "/login");
        let view = app.login_view(&browser).await;
        assert_eq!(step_error(&view), Some("challenge.passkey-enrolment.refused"), "{backend:?}: {view}");
        let options = view["pageData"]["stepViewData"]["passkeyCreationOptions"].clone();

        let back = create_at_offer(&app, &browser, &csrf, &authenticator.create(&options, &origin)).await;
        let claims = id_token_after(&app, &browser, &pkce, &back).await;
        assert_eq!(claims["amr"], json!(["pwd", "sms", "mfa"]), "{backend:?}: creating a passkey proves nothing more");
        let kept = app.store.passkeys_of(ivan.id).await.unwrap();
        assert_eq!(kept.len(), 1, "{backend:?}");
        assert_eq!(kept[0].name, "Chrome, Linux", "named after the browser");
        assert_eq!(kept[0].credential_id, b64url(&authenticator.credential_id));
        assert_eq!(audited(&*app.store, AuditKind::PasskeyCreated).await, 1);

        // Next time, in a new browser: the passkey alone, no code sent.
        let mut authenticator = authenticator;
        let sent = app.outbox().len();
        let pkce = Pkce::new();
        let (browser, csrf, _) = first_page(&app, &pkce).await;
        let (_, options) = sign_in_options(&app, &browser, &csrf).await;
        let back = sign_in(&app, &browser, &csrf, &authenticator.get(&options, &origin, 1)).await;
        let claims = id_token_after(&app, &browser, &pkce, &back).await;
        assert_eq!(claims["amr"], json!(["hwk", "user", "mfa"]), "{backend:?}");
        assert_eq!(app.outbox().len(), sent, "no code was sent");
    }
}

#[tokio::test]
async fn a_declined_offer_waits_its_pause_and_no_offer_goes_to_a_blocked_user() {
    for backend in backends() {
        let (app, origin) = passkey_app(backend, |_| {}).await;
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
        let pkce = Pkce::new();
        let (browser, csrf, _) = first_page(&app, &pkce).await;
        password_and_code(&app, &browser, &csrf, "ivan").await;
        let back = decline_offer(&app, &browser, &csrf).await;
        let claims = id_token_after(&app, &browser, &pkce, &back).await;
        assert_eq!(claims["amr"], json!(["pwd", "sms", "mfa"]), "{backend:?}");
        let declined = app.store.passkey_summary(ivan.id).await.unwrap().offer_declined_at;
        assert_eq!(declined, Some(app.clock.now()), "{backend:?}");

        // Within the pause (30 days), a new device's login is not offered one.
        app.clock.advance(time::Duration::days(29));
        let pkce = Pkce::new();
        let (browser, csrf, _) = first_page(&app, &pkce).await;
        let back = password_and_code(&app, &browser, &csrf, "ivan").await;
        assert!(back.starts_with("/oauth2/authorize?"), "{backend:?}: {back}");

        // After it, the offer is made again; a user blocked meanwhile
        // creates nothing and signs in no further, whichever button.
        app.clock.advance(time::Duration::days(2));
        for create in [true, false] {
            let pkce = Pkce::new();
            let (browser, csrf, _) = first_page(&app, &pkce).await;
            assert_eq!(password_and_code(&app, &browser, &csrf, "ivan").await, "/login");
            let view = app.login_view(&browser).await;
            assert_eq!(view["pageData"]["stepViewData"]["stepType"], "passkey-enrolment", "{backend:?}");
            let options = view["pageData"]["stepViewData"]["passkeyCreationOptions"].clone();
            app.store.set_user_blocked("ivan", true, app.clock.now()).await.unwrap();
            let back = if create {
                let answer = Authenticator::for_rp(ivan.id, "localhost").create(&options, &origin);
                create_at_offer(&app, &browser, &csrf, &answer).await
            } else {
                decline_offer(&app, &browser, &csrf).await
            };
            assert_eq!(back, "/error", "{backend:?}");
            assert!(app.store.passkeys_of(ivan.id).await.unwrap().is_empty());
            app.store.set_user_blocked("ivan", false, app.clock.now()).await.unwrap();
        }

        // A blocked user never reaches the offer at all.
        app.store.set_user_blocked("maria", true, app.clock.now()).await.unwrap();
        let pkce = Pkce::new();
        let (browser, csrf, _) = first_page(&app, &pkce).await;
        let form = [("_csrf", csrf.as_str()), ("principal", "maria"), ("credentials", "maria-password")];
        let response = browser.post(app.url("/login")).form(&form).send().await.unwrap();
        assert_eq!(location(&response), "/error", "{backend:?}");
    }
}

#[tokio::test]
async fn the_offer_is_not_made_when_it_is_off_or_the_user_keeps_a_passkey() {
    for backend in backends() {
        let (app, _) = passkey_app(backend, |c| c.login.offer_passkey = false).await;
        let pkce = Pkce::new();
        let (browser, csrf, _) = first_page(&app, &pkce).await;
        let back = password_and_code(&app, &browser, &csrf, "ivan").await;
        assert!(back.starts_with("/oauth2/authorize?"), "{backend:?}: off, {back}");

        // With passkeys not replacing codes, a user who keeps one still
        // passes a code, and is not offered another.
        let (app, origin) = passkey_app(backend, |c| c.login.passkey_replaces_code = false).await;
        enrol(&app, &origin, "ivan").await;
        let pkce = Pkce::new();
        let (browser, csrf, _) = first_page(&app, &pkce).await;
        let back = password_and_code(&app, &browser, &csrf, "ivan").await;
        assert!(back.starts_with("/oauth2/authorize?"), "{backend:?}: ivan keeps one, {back}");
    }
}

/// With `login.passkey_allowed_aaguids`, a new passkey must come from a
/// listed authenticator model whose attestation chains to a listed CA: an
/// unattested passkey, another model of the same maker and a model of
/// another maker are refused, storing nothing; passkeys kept from before
/// still sign in.
#[tokio::test]
async fn only_listed_authenticator_models_enrol_when_the_bank_lists_them() {
    use portico_tests::authenticator::{AttestationCa, Model};
    let maker = AttestationCa::new("Maker Root CA");
    let allowed = Model::new(&maker, uuid::Uuid::new_v4());
    let sibling = Model::new(&maker, uuid::Uuid::new_v4());
    let stranger = Model::new(&AttestationCa::new("Other Root CA"), allowed.aaguid);
    for backend in backends() {
        let dir = TempDir::new();
        let ca_file = dir.0.join("attestation-cas.pem");
        std::fs::write(&ca_file, &maker.pem).unwrap();
        let (app, origin) = passkey_app(backend, |c| {
            c.login.passkey_allowed_aaguids = vec![allowed.aaguid.to_string()];
            c.login.passkey_attestation_ca_file = Some(ca_file.clone());
        })
        .await;
        let maria = app.store.find_user_by_login("maria").await.unwrap().unwrap();
        let passkeys = &app.identity.passkeys;
        let now = app.clock.now();
        let answer = |make: &dyn Fn(&Authenticator, &Value) -> String| {
            let started = passkeys.start_enrolment(maria.id, "maria", "Maria", &[]).unwrap();
            assert_eq!(started.options["publicKey"]["attestation"], "direct", "{backend:?}: {}", started.options);
            let authenticator = Authenticator::for_rp(maria.id, "localhost");
            (started.state, make(&authenticator, &started.options))
        };
        for (what, make) in [
            (
                "no attestation",
                &(|a: &Authenticator, o: &Value| a.create(o, &origin)) as &dyn Fn(&Authenticator, &Value) -> String,
            ),
            ("another model of the maker", &|a: &Authenticator, o: &Value| a.create_attested(o, &origin, &sibling)),
            ("the model's AAGUID under another CA", &|a: &Authenticator, o: &Value| {
                a.create_attested(o, &origin, &stranger)
            }),
        ] {
            let (state, response) = answer(make);
            let refused = passkeys.finish_enrolment(&*app.store, maria.id, &state, &response, "Key", now).await;
            assert!(matches!(refused, Err(PasskeyError::Refused(_))), "{backend:?}: {what}: {refused:?}");
        }
        assert!(app.store.passkeys_of(maria.id).await.unwrap().is_empty(), "{backend:?}: nothing stored");
        let (state, response) = answer(&|a: &Authenticator, o: &Value| a.create_attested(o, &origin, &allowed));
        let kept = passkeys.finish_enrolment(&*app.store, maria.id, &state, &response, "Key", now).await;
        assert!(kept.is_ok(), "{backend:?}: the listed model: {kept:?}");

        // A passkey kept from before the list signs in still.
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
        let open = Passkeys::new(&origin, "Bank");
        let mut ivans = Authenticator::for_rp(ivan.id, "localhost");
        let started = open.start_enrolment(ivan.id, "ivan", "Ivan", &[]).unwrap();
        let answer = ivans.create(&started.options, &origin);
        open.finish_enrolment(&*app.store, ivan.id, &started.state, &answer, "Old", now).await.unwrap();
        let started = passkeys.start_sign_in().unwrap();
        let answer = ivans.get(&started.options, &origin, 1);
        let signed = passkeys.finish_sign_in(&*app.store, &started.state, &answer, now).await;
        assert!(signed.is_ok_and(|s| s.user_id == ivan.id), "{backend:?}");

        // Without the CA file the server does not start.
        let config = portico_server::Config {
            data_dir: dir.0.join("other"),
            login: portico_server::config::LoginConfig {
                passkey_allowed_aaguids: vec![allowed.aaguid.to_string()],
                ..Default::default()
            },
            ..Default::default()
        };
        let clock = std::sync::Arc::new(portico_model::clock::SystemClock);
        let error = match portico_server::app::App::build(config, clock, true).await {
            Ok(_) => panic!("started without the attestation CAs"),
            Err(error) => format!("{error:#}"),
        };
        assert!(error.contains("login.passkey_attestation_ca_file"), "{error}");
    }
}
