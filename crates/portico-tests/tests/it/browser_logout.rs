//! Logout and `form_post` in real Chromium: the demo client signs out
//! through Portico's end-session endpoint and comes back to its registered
//! address; a `form_post` page posts itself under the pages' script policy.

use portico_tests::TestApp;

use super::browser::{click, launch, wait_for_path, wait_for_text};
use super::browser_login::{enter_code, sign_in_from_the_demo, step_is};

#[tokio::test]
async fn the_demo_signs_out_through_portico_and_a_form_post_page_posts_itself() {
    let Some(browser) = launch().await else { return };
    let client = &browser.client;
    let app = TestApp::spawn(portico_tests::backends()[0]).await;

    sign_in_from_the_demo(client, &app, "ivan", "ivan-password").await;
    step_is(client, "sms-otp").await;
    enter_code(client, &app, "+79001234567").await;
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
    wait_for_path(client, "/demo/callback").await;
    browser.client.clone().close().await.unwrap();
}
