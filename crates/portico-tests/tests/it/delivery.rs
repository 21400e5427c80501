//! The real ways out, against real local servers: the SMS gateway over
//! HTTP, e-mail over SMTP (aiosmtpd, when `PORTICO_TEST_AIOSMTPD` names a
//! Python with it), and an HTTP CAPTCHA service.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use portico_server::config::{CaptchaKind, EmailDelivery, SmsDelivery};
use portico_tests::{TestApp, backends, location, view_data};
use serde_json::Value;

/// What a local HTTP server received, and the status it answers with.
#[derive(Clone, Default)]
struct Received {
    requests: Arc<Mutex<Vec<(HeaderMap, String)>>>,
    status: Arc<Mutex<u16>>,
}

async fn record(State(received): State<Received>, headers: HeaderMap, body: String) -> (StatusCode, String) {
    received.requests.lock().unwrap().push((headers, body.clone()));
    let status = *received.status.lock().unwrap();
    // As a CAPTCHA service: ok for the token "human".
    let answer = if body.contains("token=human") { r#"{"status":"ok"}"# } else { r#"{"status":"failed"}"# };
    (StatusCode::from_u16(status).unwrap(), answer.to_owned())
}

async fn local_server() -> (String, Received) {
    let received = Received::default();
    *received.status.lock().unwrap() = 200;
    let app = Router::new().route("/{*path}", post(record)).with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), received)
}

async fn csrf(app: &TestApp, browser: &reqwest::Client) -> String {
    let response = browser.get(app.authorize_url(&portico_tests::Pkce::new(), &[])).send().await.unwrap();
    assert_eq!(response.status(), 303);
    let view = app.login_view(browser).await;
    view["pageData"]["authenticationFlowContext"]["csrf"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn sms_codes_go_through_the_http_gateway_and_a_failed_delivery_can_be_retried() {
    for backend in backends() {
        let (base, received) = local_server().await;
        let app = TestApp::spawn_with(backend, |c| {
            c.delivery.sms = Some(SmsDelivery::Http);
            c.delivery.sms_gateway_url = Some(format!("{base}/sms/send"));
            c.delivery.sms_gateway_authorization = Some("Bearer gateway-secret".into());
            c.delivery.sms_gateway_body = r#"{"msisdn": "{to}", "message": "{text}", "sender": "BANK"}"#.into();
        })
        .await;
        let browser = app.browser();
        let csrf = csrf(&app, &browser).await;
        *received.status.lock().unwrap() = 503;
        let response = browser
            .post(app.url("/login"))
            .form(&[("_csrf", csrf.as_str()), ("principal", "ivan"), ("credentials", "ivan-password")])
            .send()
            .await
            .unwrap();
        assert_eq!(location(&response), "/login");
        // The gateway fails: the error page offers RELOAD, which sends again.
        let response = browser.get(app.url("/login")).send().await.unwrap();
        assert_eq!(location(&response), "/error", "{backend:?}");
        let page = browser.get(app.url("/error")).send().await.unwrap().text().await.unwrap();
        let details = &view_data(&page)["pageData"]["errorDetails"];
        assert_eq!(details["errorCode"], "authenticate.sms-otp.delivery-failed");
        assert_eq!(details["actions"][0]["action"], "RELOAD");
        *received.status.lock().unwrap() = 200;
        let view = app.login_view(&browser).await;
        assert_eq!(view["pageData"]["stepViewData"]["stepType"], "sms-otp");

        let requests = received.requests.lock().unwrap().clone();
        assert_eq!(requests.len(), 2);
        let (headers, body) = &requests[1];
        assert_eq!(headers["authorization"], "Bearer gateway-secret");
        assert_eq!(headers["content-type"], "application/json");
        let body: Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["msisdn"], "+79001234567");
        assert_eq!(body["sender"], "BANK");
        let text = body["message"].as_str().unwrap();
        let code: String = text.chars().filter(char::is_ascii_digit).collect();
        assert_eq!(code.len(), 6, "{text}");
        assert!(app.outbox().is_empty(), "nothing went to the dev outbox");

        let response = browser
            .post(app.url("/login"))
            .form(&[("_csrf", csrf.as_str()), ("credentials", &code)])
            .send()
            .await
            .unwrap();
        let next = location(&response);
        assert!(next.starts_with("/oauth2/authorize?"), "the gateway's code completes the login: {next} {code}");
    }
}

#[tokio::test]
async fn the_http_captcha_service_decides_when_a_captcha_is_required() {
    let (base, received) = local_server().await;
    let app = TestApp::spawn_with(backends()[0], |c| {
        c.captcha.kind = Some(CaptchaKind::Smartcaptcha);
        c.captcha.server_key = Some("server-key".into());
        c.captcha.site_key = Some("site-key".into());
        c.captcha.validate_url = format!("{base}/validate");
    })
    .await;
    let browser = app.browser();
    let csrf = csrf(&app, &browser).await;
    let post = |form: Vec<(&'static str, String)>| {
        let mut body = vec![("_csrf", csrf.clone())];
        body.extend(form);
        browser.post(app.url("/login")).form(&body).send()
    };
    for _ in 0..3 {
        post(vec![("principal", "ivan".into()), ("credentials", "wrong".into())]).await.unwrap();
    }
    let page = browser.get(app.url("/login")).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("data-sitekey=\"site-key\""), "the service's widget is on the page");
    post(vec![("principal", "ivan".into()), ("credentials", "ivan-password".into()), ("smart-token", "robot".into())])
        .await
        .unwrap();
    let view = app.login_view(&browser).await;
    assert_eq!(view["pageData"]["errors"]["otherError"], "challenge.captcha.required");
    let response = post(vec![
        ("principal", "ivan".into()),
        ("credentials", "ivan-password".into()),
        ("smart-token", "human".into()),
    ])
    .await
    .unwrap();
    assert_eq!(location(&response), "/login");
    assert_eq!(app.login_view(&browser).await["pageData"]["stepViewData"]["stepType"], "sms-otp");
    let requests = received.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].1.contains("secret=server-key") && requests[1].1.contains("token=human"));
}

/// A real SMTP server (aiosmtpd) writing what it receives into a maildir.
struct SmtpServer {
    child: std::process::Child,
    port: u16,
    maildir: portico_tests::TempDir,
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn smtp_server() -> Option<SmtpServer> {
    let Ok(python) = std::env::var("PORTICO_TEST_AIOSMTPD") else {
        portico_tests::skipped("PORTICO_TEST_AIOSMTPD is not set; the SMTP delivery test needs a Python with aiosmtpd");
        return None;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let maildir = portico_tests::TempDir::new();
    let child = std::process::Command::new(python)
        .args(["-m", "aiosmtpd", "-n", "-l", &format!("127.0.0.1:{port}"), "-c", "aiosmtpd.handlers.Mailbox"])
        .arg(maildir.0.join("mail"))
        .spawn()
        .expect("start aiosmtpd");
    // Owned by the guard from here on: killed and reaped on every path.
    let server = SmtpServer { child, port, maildir };
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return Some(server);
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("aiosmtpd did not start");
}

#[tokio::test]
async fn e_mail_codes_go_through_a_real_smtp_server() {
    let Some(smtp) = smtp_server().await else { return };
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.delivery.email = Some(EmailDelivery::Smtp);
            c.delivery.smtp_url = Some(format!("smtp://127.0.0.1:{}", smtp.port));
            c.delivery.smtp_from = "Bank <noreply@bank.example>".into();
        })
        .await;
        let browser = app.browser();
        let csrf = csrf(&app, &browser).await;
        browser
            .post(app.url("/login"))
            .form(&[("_csrf", csrf.as_str()), ("principal", "maria"), ("credentials", "maria-password")])
            .send()
            .await
            .unwrap();
        app.login_view(&browser).await;
        browser
            .post(app.url("/login/user-settings/otp-method"))
            .form(&[("_csrf", csrf.as_str()), ("otpMethod", "email")])
            .send()
            .await
            .unwrap();
        let before = std::fs::read_dir(smtp.maildir.0.join("mail").join("new")).map(|d| d.count()).unwrap_or(0);
        assert_eq!(app.login_view(&browser).await["pageData"]["stepViewData"]["stepType"], "email-otp");
        let mut mails: Vec<_> =
            std::fs::read_dir(smtp.maildir.0.join("mail").join("new")).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(mails.len(), before + 1, "{backend:?}: one e-mail");
        mails.sort_by_key(|p| std::fs::metadata(p).unwrap().modified().unwrap());
        let mail = std::fs::read_to_string(mails.last().unwrap()).unwrap();
        assert!(mail.contains("maria@example.com") && mail.contains("noreply@bank.example"), "{mail}");
        let body = mail.split("\n\n").skip(1).collect::<Vec<_>>().join("\n");
        let decoded = decode_body(&mail, &body);
        let code: String = decoded.chars().filter(char::is_ascii_digit).take(6).collect();
        assert_eq!(code.len(), 6, "{decoded}");
        let response = browser
            .post(app.url("/login"))
            .form(&[("_csrf", csrf.as_str()), ("credentials", &code)])
            .send()
            .await
            .unwrap();
        assert!(location(&response).starts_with("/oauth2/authorize?"), "the e-mailed code completes the login");
    }
}

/// The text of a plain-text body, undoing a base64 transfer encoding.
fn decode_body(mail: &str, body: &str) -> String {
    use base64::Engine as _;
    if mail.to_ascii_lowercase().contains("content-transfer-encoding: base64") {
        let compact: String = body.split_whitespace().collect();
        let bytes = base64::engine::general_purpose::STANDARD.decode(compact).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    } else {
        body.to_owned()
    }
}
