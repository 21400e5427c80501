//! Logout and `form_post` in real Chromium: the demo client signs out
//! through Portico's end-session endpoint and comes back to its registered
//! address; a `form_post` page posts itself under the pages' script policy.

use fantoccini::Locator;
use portico_tests::TestApp;

use super::browser::{click, launch, type_into, wait_for_text};

#[tokio::test]
async fn the_demo_signs_out_through_portico_and_a_form_post_page_posts_itself() {
    let Some(browser) = launch().await else { return };
    let client = &browser.client;
    let app = TestApp::spawn(portico_tests::backends()[0]).await;

    client.goto(&app.url("/demo/login")).await.unwrap();
    // Each step is waited for by its form (any text): `data-step` names it.
    wait_for_text(client, "#loginForm[data-step=username-password]", "").await;
    client.find(Locator::Css("input[name=principal]")).await.unwrap().send_keys("ivan").await.unwrap();
    type_into(client, "input[name=credentials]", "ivan-password").await;
    click(client, "#loginForm button[type=submit]").await;
    wait_for_text(client, "#loginForm[data-step=sms-otp]", "").await;
    type_into(client, "input[name=credentials]", &app.last_code("+79001234567")).await;
    click(client, "#loginForm button[type=submit]").await;
    wait_for_text(client, "#idClaims", "\"sid\"").await;
    let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap().id;
    let now = portico_model::clock::Clock::now(app.clock.as_ref());
    assert_eq!(app.store.list_sessions(ivan, now).await.unwrap().len(), 1);

    // RP-initiated logout with id_token_hint, back to /demo/logged-out.
    click(client, "#signOut").await;
    wait_for_text(client, "#log", "signed out of Portico").await;
    assert_eq!(client.current_url().await.unwrap().path(), "/demo");
    assert!(app.store.list_sessions(ivan, now).await.unwrap().is_empty(), "the session ended");

    // form_post: without a session, prompt=none's error is posted to the
    // demo's redirect URI by the page's own script (the demo answers GET
    // only, so the browser lands on its callback address by POST).
    let url = app
        .authorize_url(&portico_tests::Pkce::new(), &[("response_mode", Some("form_post")), ("prompt", Some("none"))]);
    client.goto(&url).await.unwrap();
    let started = std::time::Instant::now();
    while client.current_url().await.unwrap().path() != "/demo/callback" {
        assert!(started.elapsed() < std::time::Duration::from_secs(15), "the form was never posted");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    browser.client.clone().close().await.unwrap();
}
