//! The account page in real Chromium with WebDriver's virtual platform
//! authenticator, on both backends: a customer signs in through Portico's
//! login, sees this browser's session, creates a passkey, renames it,
//! removes it after the confirmation that it is the last, and signs out;
//! and a passkey an operator removed in the console signs nobody in.

use fantoccini::{Client, Locator};
use portico_model::clock::Clock as _;

use super::browser::{click, launch, wait_for_path, wait_for_text};
use super::browser_login::{
    Shots, drop_passkeys, enter_code, fill, hold_passkey, platform_authenticator, step_is, submit, wait_for_element,
};

/// How many elements match `css` now.
async fn count(client: &Client, css: &str) -> usize {
    client.find_all(Locator::Css(css)).await.map_or(0, |found| found.len())
}

#[tokio::test]
async fn chromium_manages_passkeys_and_sessions_on_the_account_page() {
    let Some(browser) = launch().await else { return };
    let client = &browser.client;
    let authenticator = platform_authenticator(client).await;
    let mut shots = Shots::new("account_page");
    for backend in portico_tests::backends() {
        let (app, origin) = crate::passkeys::passkey_app(backend, |_| {}).await;
        let maria = app.store.find_user_by_login("maria").await.unwrap().unwrap();

        // The authenticator starts empty: the first page's autofill offers
        // nothing.
        drop_passkeys(client, &authenticator).await;

        // Signed in through Portico's login (password and code; the offer
        // to create a passkey declined), back on the page.
        client.goto(&format!("{origin}/account/")).await.unwrap();
        step_is(client, "username-password").await;
        fill(client, "input[name=principal]", "maria").await;
        fill(client, "input[name=credentials]", "maria-password").await;
        submit(client).await;
        step_is(client, "sms-otp").await;
        enter_code(client, &app, "+79007654321").await;
        step_is(client, "passkey-enrolment").await;
        click(client, "#passkeySkip").await;
        wait_for_path(client, "/account/").await;
        wait_for_element(client, "#noPasskeys", "no passkey yet").await;
        assert_eq!(count(client, "[data-session]").await, 1, "{backend:?}: this browser's session");
        wait_for_text(client, "[data-session] .badge", "").await;
        shots.take(client, &format!("{backend:?}-signed-in")).await;

        // A passkey created by the browser's authenticator.
        wait_for_element(client, "#passkeyAdd:not([disabled])", "the script enabled the button").await;
        click(client, "[data-action=passkey-create]").await;
        wait_for_element(client, "[data-passkey]", "the new passkey listed").await;
        let kept = app.store.passkeys_of(maria.id).await.unwrap();
        assert_eq!(kept.len(), 1, "{backend:?}");
        assert!(kept[0].name.starts_with("Chrome"), "named after the browser: {}", kept[0].name);
        shots.take(client, &format!("{backend:?}-created")).await;

        // Renamed.
        fill(client, "[data-passkey] input[name=name]", "Work laptop").await;
        click(client, "[data-action=passkey-rename]").await;
        wait_for_text(client, "#notice", "").await;
        wait_for_text(client, "[data-passkey] .name", "Work laptop").await;
        assert_eq!(app.store.passkeys_of(maria.id).await.unwrap()[0].name, "Work laptop", "{backend:?}");

        // Removed after the confirmation that it is the last.
        click(client, "[data-action=passkey-remove]").await;
        wait_for_element(client, "#lastWarning", "the warning of the last passkey").await;
        shots.take(client, &format!("{backend:?}-confirm-removal")).await;
        click(client, "#confirm").await;
        wait_for_element(client, "#noPasskeys", "the passkey gone").await;
        assert!(app.store.passkeys_of(maria.id).await.unwrap().is_empty(), "{backend:?}");

        // Signed out: the single sign-on session ends with the page's.
        click(client, "#signOut").await;
        let now = app.clock.now();
        let started = std::time::Instant::now();
        while !app.store.list_sessions(maria.id, now).await.unwrap().is_empty() {
            assert!(started.elapsed() < std::time::Duration::from_secs(15), "{backend:?}: never signed out");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
    browser.client.clone().close().await.unwrap();
}

/// An operator removes ivan's passkey in the console (in Chromium, after
/// confirming); the passkey still in ivan's authenticator then signs
/// nobody in: the login page says so and no tokens are issued.
#[tokio::test]
async fn chromium_a_passkey_an_operator_removed_in_the_console_signs_nobody_in() {
    let Some(browser) = launch().await else { return };
    let client = &browser.client;
    let authenticator = platform_authenticator(client).await;
    let mut shots = Shots::new("passkey_removed_in_the_console");
    for backend in portico_tests::backends() {
        let (app, origin) = crate::passkeys::passkey_app(backend, |_| {}).await;
        let key = crate::passkeys::enrol(&app, &origin, "ivan").await;
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
        drop_passkeys(client, &authenticator).await;

        // The operator signs in to the console and removes the passkey.
        client.goto(&format!("{origin}/console/users/{}", ivan.id.as_uuid())).await.unwrap();
        step_is(client, "username-password").await;
        fill(client, "input[name=principal]", "operator").await;
        fill(client, "input[name=credentials]", "operator-password").await;
        submit(client).await;
        step_is(client, "sms-otp").await;
        enter_code(client, &app, "+79009990000").await;
        step_is(client, "passkey-enrolment").await;
        click(client, "#passkeySkip").await;
        wait_for_element(client, "#passkeys .removePasskey", "ivan's passkey in the console").await;
        click(client, "#passkeys .removePasskey").await;
        wait_for_element(client, "#confirm", "the confirmation").await;
        click(client, "#confirm").await;
        wait_for_element(client, "#noPasskeys", "the passkey removed").await;
        assert!(app.store.passkeys_of(ivan.id).await.unwrap().is_empty(), "{backend:?}");
        click(client, "#signOut").await;
        step_is(client, "username-password").await;

        // ivan's authenticator still offers it: refused, no tokens.
        hold_passkey(client, &authenticator, &key, 1).await;
        client.goto(&format!("{origin}/demo/login")).await.unwrap();
        // The autofill answers as soon as the page asks; the button, should
        // it not, asks again.
        let started = std::time::Instant::now();
        let mut clicked = false;
        while client.find(Locator::Css("#otherError")).await.is_err() {
            if !clicked
                && started.elapsed() > std::time::Duration::from_secs(3)
                && let Ok(button) = client.find(Locator::Css("#passkeyLogin")).await
            {
                clicked = button.click().await.is_ok();
            }
            assert!(started.elapsed() < std::time::Duration::from_secs(20), "{backend:?}: never refused");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        shots.take(client, &format!("{backend:?}-refused")).await;
        assert_eq!(count(client, "#idClaims").await, 0, "{backend:?}: no tokens");
        let used = app.store.recent_audit(50).await.unwrap().iter().filter(|e| e.kind == "passkey.used").count();
        assert_eq!(used, 0, "{backend:?}");
        drop_passkeys(client, &authenticator).await;
    }
    browser.client.clone().close().await.unwrap();
}
