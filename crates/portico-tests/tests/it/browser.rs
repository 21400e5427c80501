//! The demo in real Chromium (through chromedriver): sign in on Portico's
//! login page, come back to the demo client, see the tokens, check liveness,
//! refresh, revoke. Needs `PORTICO_TEST_CHROMEDRIVER` (the chromedriver
//! binary); `.ci/run` installs Debian's chromium and chromium-driver.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use portico_tests::{TempDir, TestApp, backends};

const CHROMEDRIVER_ENV: &str = "PORTICO_TEST_CHROMEDRIVER";
const CHROMIUM_ENV: &str = "PORTICO_TEST_CHROMIUM";

/// chromedriver and the browser session it runs; both end on drop.
pub(crate) struct Browser {
    pub(crate) client: Client,
    driver: Child,
    _profile: TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

pub(crate) async fn launch() -> Option<Browser> {
    let Ok(driver_path) = std::env::var(CHROMEDRIVER_ENV) else {
        portico_tests::skipped(&format!(
            "{CHROMEDRIVER_ENV} is not set; the browser test needs chromedriver and Chromium"
        ));
        return None;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let driver = Command::new(driver_path)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromedriver");
    let profile = TempDir::new();
    let binary = std::env::var(CHROMIUM_ENV).unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({
            "binary": binary,
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--no-first-run", "--lang=en", format!("--user-data-dir={}", profile.0.display()),
            ],
        }),
    );
    let started = Instant::now();
    loop {
        match ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities.clone())
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
        {
            Ok(client) => return Some(Browser { client, driver, _profile: profile }),
            Err(error) if started.elapsed() > Duration::from_secs(20) => panic!("chromedriver did not start: {error}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Waits (polling the page, up to 15 s) until `css` shows text containing `text`.
pub(crate) async fn wait_for_text(client: &Client, css: &str, text: &str) {
    let started = Instant::now();
    loop {
        if let Ok(element) = client.find(Locator::Css(css)).await
            && element.text().await.is_ok_and(|t| t.contains(text))
        {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "{css} never showed {text:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits (polling, up to 15 s) until the browser is at `path`.
pub(crate) async fn wait_for_path(client: &Client, path: &str) {
    let started = Instant::now();
    while client.current_url().await.unwrap().path() != path {
        assert!(started.elapsed() < Duration::from_secs(15), "the browser never reached {path}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) async fn click(client: &Client, css: &str) {
    client.find(Locator::Css(css)).await.expect(css).click().await.expect("click");
}

pub(crate) async fn type_into(client: &Client, css: &str, text: &str) {
    client.find(Locator::Css(css)).await.expect(css).send_keys(text).await.expect("type");
}

#[tokio::test]
async fn the_demo_walks_the_whole_protocol_in_chromium() {
    let Some(browser) = launch().await else { return };
    let client = &browser.client;
    let app = TestApp::spawn(backends()[0]).await;

    client.goto(&app.url("/demo/login")).await.unwrap();
    client.wait().for_element(Locator::Css("input[name=principal]")).await.expect("the login page");
    assert_eq!(client.current_url().await.unwrap().path(), "/login");
    click(client, "#language button[data-locale=ru]").await;
    wait_for_text(client, "h1", "Вход в интернет-банк").await;
    click(client, "#language button[data-locale=en]").await;
    wait_for_text(client, "h1", "Sign in to online banking").await;

    type_into(client, "input[name=principal]", "ivan").await;
    type_into(client, "input[name=credentials]", "not-the-password").await;
    click(client, "#loginForm button[type=submit]").await;
    wait_for_text(client, "#credentialsError", "Wrong login or password").await;

    type_into(client, "input[name=credentials]", "ivan-password").await;
    click(client, "#loginForm button[type=submit]").await;
    // A new device: the SMS code, read from the dev outbox.
    wait_for_text(client, "#codeSent", "+7 *** ***-45-67").await;
    type_into(client, "input[name=credentials]", &app.last_code("+79001234567")).await;
    click(client, "#loginForm button[type=submit]").await;
    wait_for_text(client, "#idClaims", "ivan@example.com").await;
    wait_for_text(client, "#log", "id_token nonce matches").await;

    click(client, "#liveness").await;
    wait_for_text(client, "#status", "Liveness: 200").await;
    click(client, "#refresh").await;
    wait_for_text(client, "#log", "(refresh_token) -> 200").await;
    // The refreshed pair calls the permissions API: ivan is the EIO of Ромашка.
    click(client, "#permissions").await;
    wait_for_text(client, "#log", "GET /api/v2/permissions -> 200").await;
    wait_for_text(client, "#log", "7700000001").await;
    click(client, "#revoke").await;
    wait_for_text(client, "#status", "Revoked").await;
    click(client, "#liveness").await;
    wait_for_text(client, "#status", "Liveness: 401").await;

    browser.client.clone().close().await.unwrap();
}

#[tokio::test]
async fn the_demo_page_sends_merchant_events_that_arrive_signed() {
    let Some(browser) = launch().await else { return };
    let client = &browser.client;
    // The delivery worker runs inside the server, as in `portico serve --demo`.
    let app = TestApp::spawn_with(backends()[0], |c| c.notifications.delivery_interval_ms = 50).await;

    client.goto(&app.url("/demo")).await.unwrap();
    wait_for_text(client, "#shopId", "demo-shop").await;
    click(client, "button[data-event=payment]").await;
    wait_for_text(client, "#log", "POST /demo/merchant/events/payment -> 202").await;
    wait_for_text(client, "#received", "signature verified").await;
    wait_for_text(client, "#received", "\"event\": \"PAYMENT\"").await;
    wait_for_text(client, "#deliveries", "payment  DELIVERED  attempts: 1  last answer: 200").await;

    // The shop switches payments to V2 through the merchant API; the next
    // payment arrives in that shape.
    client.find(Locator::Css("#paymentVersion option[value=V2]")).await.unwrap().click().await.unwrap();
    wait_for_text(client, "#log", "PUT /v1/notifications/settings (payment V2) -> 200").await;
    click(client, "button[data-event=payment]").await;
    wait_for_text(client, "#received", "\"event\": \"payment\"").await;

    browser.client.clone().close().await.unwrap();
}

/// The API reference page: Swagger UI over the published documents, and an
/// operation called from it against the server with a user's tokens.
#[tokio::test]
async fn the_api_reference_page_calls_an_operation_in_chromium() {
    let Some(browser) = launch().await else { return };
    let client = &browser.client;
    let app = TestApp::spawn(backends()[0]).await;
    let ivan = app.token_pair("ivan").await;
    let index: serde_json::Value =
        app.http().get(app.url("/openapi/index.json")).send().await.unwrap().json().await.unwrap();
    client.goto(&app.url("/openapi/")).await.unwrap();
    // The page opens on the first published document.
    wait_for_text(client, ".swagger-ui .info .title", index[0]["title"].as_str().expect("a title")).await;

    // Switch to the reports document, authorize with the token pair, call getReportTypes.
    client
        .execute("window.ui.specActions.updateUrl('/openapi/reports.json'); window.ui.specActions.download('/openapi/reports.json');", vec![])
        .await
        .unwrap();
    wait_for_text(client, ".swagger-ui .info .title", "Portico brokerage reports").await;
    client
        .execute(
            "window.ui.preauthorizeApiKey('accessToken', arguments[0]); window.ui.preauthorizeApiKey('idToken', arguments[1]);",
            vec![ivan.access_token.clone().into(), ivan.id_token.clone().into()],
        )
        .await
        .unwrap();
    click(client, "#operations-reports-getReportTypes .opblock-summary-control").await;
    // "Try it out" is on from the start.
    wait_for_text(client, "#operations-reports-getReportTypes .execute", "Execute").await;
    click(client, "#operations-reports-getReportTypes .execute").await;
    wait_for_text(client, "#operations-reports-getReportTypes .live-responses-table", "STATEMENT_FOR_1C").await;
    wait_for_text(
        client,
        "#operations-reports-getReportTypes .live-responses-table tr.response .response-col_status",
        "200",
    )
    .await;
}
