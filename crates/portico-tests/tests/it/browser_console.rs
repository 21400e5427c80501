//! The operator console in real Chromium: an operator signs in through
//! Portico's own login pages and does the support desk's everyday work;
//! and every console page in Russian and English, light and dark, at a
//! desktop's and a phone's width, checked with axe-core and for contrast.
//! `scripts/console-pages` publishes the gallery in docs/console.md.

use fantoccini::{Client, Locator};
use portico_tests::{ADMIN_TOKEN, INTERNAL_TOKEN, TestApp};
use serde_json::json;

use super::browser::{click, launch, wait_for_path, wait_for_text};
use super::browser_login::{
    Shots, accessibility_violations, assert_readable, color_scheme, every_look, fill, password_then_code, step_is,
    wait_for_attribute,
};

/// Where `scripts/console-pages` wants the gallery (the folder of
/// docs/console.md); unset, it goes with the other screenshots.
const PAGES_DIR_ENV: &str = "PORTICO_CONSOLE_PAGES_DIR";

/// The gallery's initial access token for dynamic registration.
const INITIAL_ACCESS_TOKEN: &str = "the-galleries-initial-access-token-0123";

/// Opens the console and signs in as the demo's operator on Portico's
/// login pages (a new device: the SMS code too), back on `/console/users`.
async fn sign_in_as_the_operator(client: &Client, app: &TestApp) {
    client.goto(&app.url("/console")).await.unwrap();
    password_then_code(client, app, "operator", "operator-password", "+79009990000").await;
    wait_for_path(client, "/console/users").await;
    wait_for_text(client, "#operator", "operator").await;
}

/// Confirms the action the page asks about and waits for its notice.
async fn confirm(client: &Client, notice: &str) {
    wait_for_text(client, "h1", "?").await;
    click(client, "#confirm").await;
    wait_for_text(client, "#notice", notice).await;
}

/// Something for the operator to work on: ivan signed in somewhere (a
/// session to end), and a payment event for the demo merchant (a delivery).
async fn work_to_do(app: &TestApp) {
    let pkce = portico_tests::Pkce::new();
    app.login_for_code(&app.browser(), &pkce, "ivan", "ivan-password").await;
    let event =
        json!({"eventId": "ev-console-1", "merchantId": "demo-shop", "event": crate::notifications::payment("o-c1")});
    let (status, _) = crate::notifications::submit(app, "payment", &event, Some(INTERNAL_TOKEN)).await;
    assert_eq!(status, 202);
}

#[tokio::test]
async fn an_operator_finds_a_user_by_phone_unblocks_them_ends_a_session_rotates_a_key_and_resends_a_delivery() {
    let Some(browser) = launch().await else { return };
    let client = &browser.client;
    let app = TestApp::spawn(portico_tests::backends()[0]).await;
    work_to_do(&app).await;
    let mut shots = Shots::new("console_everyday_work");

    sign_in_as_the_operator(client, &app).await;
    click(client, "#language button[data-locale=en]").await;
    wait_for_attribute(client, "html", "lang", "en").await;

    // Find the blocked demo user by their phone, as a customer dictates it.
    client.find(Locator::Css("select[name=by] option[value=phone]")).await.unwrap().click().await.unwrap();
    fill(client, "input[name=q]", "8 (900) 555-00-00").await;
    click(client, "#userSearch button[type=submit]").await;
    wait_for_text(client, "#users", "blocked").await;
    shots.take(client, "found-by-phone").await;
    click(client, "#users a").await;
    wait_for_text(client, "#userState", "blocked").await;
    fill(client, "#unblockForm input[name=reason]", "identity confirmed by phone").await;
    click(client, "#unblock").await;
    shots.take(client, "confirm-unblock").await;
    confirm(client, "The user is unblocked").await;
    wait_for_text(client, "#userState", "active").await;
    let blocked = app.store.find_user_by_login("blocked").await.unwrap().unwrap();
    assert!(!blocked.blocked, "unblocked in the store");
    let event = &app.store.recent_audit(1).await.unwrap()[0];
    assert_eq!((event.kind.as_str(), event.actor.as_deref()), ("user.unblocked", Some("operator:operator")));

    // End ivan's session.
    client.goto(&app.url("/console/users?by=login&q=iva")).await.unwrap();
    click(client, "#users a").await;
    wait_for_text(client, "h1", "ivan").await;
    click(client, "#sessions button.endSession").await;
    confirm(client, "The session has ended").await;
    wait_for_text(client, "#noSessions", "No open sessions").await;
    let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
    assert!(app.store.list_sessions(ivan.id, app.identity.clock.now()).await.unwrap().is_empty());

    // Rotate the signing key.
    let keys = app.store.list_signing_keys().await.unwrap().len();
    click(client, "nav a[href='/console/keys']").await;
    click(client, "#rotate-RS256").await;
    confirm(client, "The signing key is rotated").await;
    assert_eq!(app.store.list_signing_keys().await.unwrap().len(), keys + 1);

    // Resend the merchant's delivery.
    click(client, "nav a[href='/console/merchants']").await;
    click(client, "#merchants a").await;
    wait_for_text(client, "#deliveries", "ev-console-1").await;
    click(client, "#deliveries button.resend").await;
    confirm(client, "The notification is queued").await;
    let (_, total) = app.store.list_deliveries("demo-shop", None, 0, 10).await.unwrap();
    assert!(total >= 2, "a second delivery of the event: {total}");
    let event = &app.store.recent_audit(1).await.unwrap()[0];
    assert_eq!((event.kind.as_str(), event.actor.as_deref()), ("delivery.resent", Some("operator:operator")));
    shots.take(client, "resent").await;

    // Signing out ends the console and the single sign-on session.
    click(client, "#signOut").await;
    step_is(client, "username-password").await;
    browser.client.clone().close().await.unwrap();
}

/// What a look of a page needs once the page is open.
enum Then<'a> {
    /// The element of this id scrolled into view (a page's own shot shows
    /// only its top).
    Scroll(&'a str),
    /// This button clicked, and the confirmation it asks for shown (the
    /// confirmation answers a form, so each look asks again).
    Confirm(&'a str),
    /// This edit form sent as if it had been read before another change
    /// (its revision made an old one), and the refusal shown.
    Stale(&'a str),
}

/// Every look of `page` as `then` leaves it, photographed as `name`.
async fn every_look_after(client: &Client, app: &TestApp, shots: &mut Shots, name: &str, page: &str, then: Then<'_>) {
    for lang in ["ru", "en"] {
        client.goto(&app.url(page)).await.unwrap();
        click(client, &format!("#language button[data-locale={lang}]")).await;
        wait_for_attribute(client, "html", "lang", lang).await;
        for (width, height, device) in [(1280, 900, "desktop"), (390, 844, "phone")] {
            client.set_window_size(width, height).await.unwrap();
            for scheme in ["light", "dark"] {
                color_scheme(client, scheme).await;
                client.goto(&app.url(page)).await.unwrap();
                match then {
                    Then::Scroll(id) => {
                        wait_for_attribute(client, "html", "lang", lang).await;
                        let scroll = format!("document.getElementById('{id}').scrollIntoView()");
                        client.execute(&scroll, vec![]).await.unwrap();
                    }
                    Then::Confirm(button) => {
                        click(client, button).await;
                        wait_for_attribute(client, "#confirmForm", "method", "post").await;
                    }
                    Then::Stale(form) => {
                        wait_for_attribute(client, "html", "lang", lang).await;
                        let stale =
                            format!("document.querySelector('{form} input[name=revision]').value = '4294967295'");
                        client.execute(&stale, vec![]).await.unwrap();
                        click(client, &format!("{form} button[type=submit]")).await;
                        let refused = if lang == "ru" { "кто-то другой" } else { "Someone else changed" };
                        wait_for_text(client, "#message", refused).await;
                    }
                }
                let look = format!("{name}-{lang}-{scheme}-{device}");
                shots.take(client, &look).await;
                let violations = accessibility_violations(client).await;
                assert!(violations.is_empty(), "{look}: axe-core found {violations:#?}");
                assert_readable(client, &look).await;
            }
        }
    }
    color_scheme(client, "light").await;
    client.set_window_size(1280, 900).await.unwrap();
}

#[tokio::test]
async fn every_console_page_in_both_languages_schemes_and_widths() {
    let Some(browser) = launch().await else { return };
    let client = &browser.client;
    // Keys of several algorithms, one of them no longer configured, and
    // a registration held for approval.
    let app = TestApp::spawn_with(portico_tests::backends()[0], |c| {
        c.tokens.signing_algorithms = vec!["ES256".into(), "EdDSA".into()];
        c.registration.initial_access_token = Some(INITIAL_ACCESS_TOKEN.into());
        c.registration.require_approval = true;
    })
    .await;
    work_to_do(&app).await;
    let sealer = portico_server::secret::InstanceSecret::load(&app.config).unwrap().sealer();
    let now = app.identity.clock.now();
    portico_tokens::KeyRing::rotate(app.store.as_ref(), &sealer, portico_model::key::Algorithm::Ps256, now)
        .await
        .unwrap();
    let metadata = json!({"redirect_uris": ["https://fintech.example/cb"], "client_name": "Fintech",
                          "id_token_signed_response_alg": "ES256"});
    let (status, held) = app.register(Some(INITIAL_ACCESS_TOKEN), &metadata).await;
    assert_eq!(status, 201, "{held}");
    let held_page = format!("/console/clients/{}", held["client_id"].as_str().unwrap());
    // A third party held to ФАПИ.СЕК: its authentication and signing
    // fieldset is photographed on its own.
    let key = portico_crypto::jwt::SigningKey::generate(portico_crypto::jwt::Algorithm::Es256).unwrap();
    let fintech = json!({
        "clientId": "fintech-ru", "redirectUris": ["https://fintech.example/cb"],
        "tokenEndpointAuthMethod": "private_key_jwt", "jwks": {"keys": [key.jwk()]},
        "securityProfile": "fapi-ru", "requirePushedAuthorizationRequests": true,
        "tlsClientAuthSubjectDn": "CN=fintech-ru,O=Fintech,C=RU", "refreshTokenRotation": false,
    });
    let created = app.admin_create_client(&fintech).await;
    assert_eq!(created.status(), 201, "{}", created.text().await.unwrap());
    let mut shots = match std::env::var_os(PAGES_DIR_ENV) {
        Some(dir) => Shots::in_dir(dir.into()),
        None => Shots::new("every_console_page"),
    }
    .three_digits();
    let switch = |_: &'static str| None;
    sign_in_as_the_operator(client, &app).await;
    let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
    let ivan_page = format!("/console/users/{}", ivan.id.as_uuid());
    // A user the provisioning system deactivated (SCIM's `active: false`).
    let maria = app.store.find_user_by_login("maria").await.unwrap().unwrap();
    app.store.set_user_deactivated(maria.id, true, app.identity.clock.now()).await.unwrap();
    let maria_page = format!("/console/users/{}", maria.id.as_uuid());
    client.goto(&app.url(&maria_page)).await.unwrap();
    wait_for_text(client, "#userState", "deactivated by provisioning").await;

    for (name, path) in [
        ("users", "/console/users".to_owned()),
        ("user", ivan_page.clone()),
        ("deactivated-user", maria_page.clone()),
        ("new-user", "/console/users/new".to_owned()),
        ("clients", "/console/clients".to_owned()),
        ("client", "/console/clients/demo-app".to_owned()),
        ("new-client", "/console/clients/new".to_owned()),
        ("held-client", held_page.clone()),
        ("keys", "/console/keys".to_owned()),
        ("audit", "/console/audit".to_owned()),
        ("merchants", "/console/merchants".to_owned()),
        ("deliveries", "/console/merchants/demo-shop".to_owned()),
        ("report-tasks", "/console/reports?cnum=7700000001".to_owned()),
        ("permission-model", "/console/permissions".to_owned()),
        ("brokerage-data", "/console/brokerage".to_owned()),
        ("not-found", "/console/users/00000000-0000-0000-0000-000000000000".to_owned()),
    ] {
        client.goto(&app.url(&path)).await.unwrap();
        wait_for_text(client, "#operator", "operator").await;
        every_look(client, &mut shots, name, switch).await;
    }
    let fieldset = Then::Scroll("security");
    every_look_after(client, &app, &mut shots, "client-security", "/console/clients/fintech-ru", fieldset).await;
    every_look_after(client, &app, &mut shots, "confirm", &ivan_page, Then::Confirm("#block")).await;
    every_look_after(client, &app, &mut shots, "changed-meanwhile", &ivan_page, Then::Stale("#editForm")).await;
    let unchanged = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
    assert_eq!(unchanged, ivan, "a refused form changed nothing");
    // A list longer than a page: its first page and the link to the next.
    for n in 0..50 {
        let shop = json!({"merchantId": format!("shop-{n:02}"), "publicId": format!("pub-shop-{n:02}"),
                          "sbpMerchantId": format!("MB00000000{n:02}")});
        let response = app.http().post(app.url("/admin/v1/merchants")).bearer_auth(ADMIN_TOKEN).json(&shop);
        assert_eq!(response.send().await.unwrap().status(), 201);
    }
    let pager = Then::Scroll("nextPage");
    every_look_after(client, &app, &mut shots, "long-list", "/console/merchants", pager).await;
    // The list of only the registrations held for approval.
    client.goto(&app.url("/console/clients?awaitingApproval=true")).await.unwrap();
    wait_for_text(client, "#operator", "operator").await;
    every_look(client, &mut shots, "held-clients", switch).await;
    browser.client.clone().close().await.unwrap();
}
