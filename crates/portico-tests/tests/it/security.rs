//! Attacks as they happen, on both backends: many requests at once on one
//! account or one login process, slow and idle clients, and the headers a
//! public identity server owes its users (docs/decisions.md, "Security").

use std::sync::Arc;
use std::time::{Duration as StdDuration, Instant};

use portico_model::clock::Clock as _;
use portico_tests::{TestApp, backends, location, view_data};
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::sync::Barrier;

/// Requests fired at once in the parallel tests.
const AT_ONCE: usize = 30;

/// A browser with a fresh login process at its first step, and its CSRF token.
async fn fresh_process(app: &TestApp) -> (reqwest::Client, String) {
    let browser = app.browser();
    let pkce = portico_tests::Pkce::new();
    let response = browser.get(app.authorize_url(&pkce, &[])).send().await.unwrap();
    assert_eq!(response.status(), 303);
    let view = app.login_view(&browser).await;
    let csrf = view["pageData"]["authenticationFlowContext"]["csrf"].as_str().unwrap().to_owned();
    (browser, csrf)
}

/// A browser with a fresh login process at the `phone` step, and its CSRF token.
async fn phone_step(app: &TestApp) -> (reqwest::Client, String) {
    let (browser, csrf) = fresh_process(app).await;
    let method = [("_csrf", csrf.as_str()), ("authMethod", "PHONE")];
    browser.post(app.url("/login/user-settings/auth-method")).form(&method).send().await.unwrap();
    (browser, csrf)
}

/// A browser with a fresh phone login that named `phone`, before the page
/// of its code step (which sends the code), and its CSRF token.
async fn phone_process(app: &TestApp, phone: &str) -> (reqwest::Client, String) {
    let (browser, csrf) = phone_step(app).await;
    let form = [("_csrf", csrf.as_str()), ("principal", phone)];
    let response = browser.post(app.url("/login")).form(&form).send().await.unwrap();
    assert_eq!(location(&response), "/login");
    (browser, csrf)
}

async fn view(app: &TestApp, browser: &reqwest::Client) -> Value {
    let page = browser.get(app.url("/login")).send().await.unwrap();
    view_data(&page.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_wrong_passwords_from_fresh_processes_never_skip_the_captcha() {
    for backend in backends() {
        let app = Arc::new(TestApp::spawn(backend).await);
        let mut browsers = Vec::new();
        for _ in 0..AT_ONCE {
            browsers.push(fresh_process(&app).await);
        }
        let barrier = Arc::new(Barrier::new(AT_ONCE));
        let mut attempts = tokio::task::JoinSet::new();
        // Every one of them wrong: a right password among them would, once
        // checked, clear the account's count (a success does), and whether
        // it is checked before or after the others are counted is up to the
        // scheduler.
        for (browser, csrf) in browsers {
            let (app, barrier) = (Arc::clone(&app), Arc::clone(&barrier));
            attempts.spawn(async move {
                let form = [("_csrf", csrf.as_str()), ("principal", "maria"), ("credentials", "wrong")];
                barrier.wait().await;
                let response = browser.post(app.url("/login")).form(&form).send().await.unwrap();
                assert_eq!(response.status(), 303);
                assert_eq!(location(&response), "/login");
                view(&app, &browser).await["pageData"].clone()
            });
        }
        let pages = attempts.join_all().await;
        let captcha = pages.iter().filter(|p| p["errors"]["otherError"] == "challenge.captcha.required").count();
        let wrong = pages
            .iter()
            .filter(|p| p["errors"]["credentialsError"] == "challenge.username-password.wrong-credentials")
            .count();
        // An attempt that finds another one holding the account waits for it.
        let paused = pages
            .iter()
            .filter(|p| p["errors"]["otherError"] == "challenge.username-password.temporarily-paused")
            .count();
        let limit = app.identity.settings.guard.captcha_after as usize;
        assert_eq!(wrong, limit, "{backend:?}: checked without a CAPTCHA");
        assert_eq!(captcha + paused, AT_ONCE - limit, "{backend:?}: the rest were not checked");

        // Knowing the password does not skip the CAPTCHA either.
        let (browser, csrf) = fresh_process(&app).await;
        let form = [("_csrf", csrf.as_str()), ("principal", "maria"), ("credentials", "maria-password")];
        let response = browser.post(app.url("/login")).form(&form).send().await.unwrap();
        assert_eq!(location(&response), "/login");
        let page = view(&app, &browser).await["pageData"].clone();
        assert_eq!(page["errors"]["otherError"], "challenge.captcha.required", "{backend:?}: {page}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_wrong_codes_from_fresh_processes_stop_at_the_pause() {
    for backend in backends() {
        // Thirty codes to one user: beyond the pause of sending (the next test).
        let app = Arc::new(TestApp::spawn_with(backend, |c| c.login.otp_sends_before_pause = 100).await);
        let phone = "+79001234567";
        // Thirty processes at the code step (the phone login: no password
        // to check), each with a code of its own.
        let mut browsers = Vec::new();
        for _ in 0..AT_ONCE {
            let (browser, csrf) = phone_process(&app, phone).await;
            assert_eq!(view(&app, &browser).await["pageData"]["stepViewData"]["stepType"], "sms-otp", "{backend:?}");
            browsers.push((browser, csrf));
        }
        // A guess that is none of the codes sent.
        let sent: Vec<String> = app.outbox().iter().filter_map(|m| m["code"].as_str().map(str::to_owned)).collect();
        let wrong = (0..).map(|n| format!("{n:06}")).find(|guess| !sent.contains(guess)).unwrap();

        let barrier = Arc::new(Barrier::new(AT_ONCE));
        let mut guesses = tokio::task::JoinSet::new();
        for (browser, csrf) in browsers {
            let (app, barrier, wrong) = (Arc::clone(&app), Arc::clone(&barrier), wrong.clone());
            guesses.spawn(async move {
                let form = [("_csrf", csrf.as_str()), ("credentials", wrong.as_str())];
                barrier.wait().await;
                let response = browser.post(app.url("/login")).form(&form).send().await.unwrap();
                assert_eq!(location(&response), "/login");
                view(&app, &browser).await["pageData"]["errors"].clone()
            });
        }
        let errors = guesses.join_all().await;
        let checked = errors.iter().filter(|e| e["credentialsError"] == "challenge.sms-otp.wrong-credentials").count();
        let paused = errors.iter().filter(|e| e["otherError"] == "challenge.sms-otp.temporarily-paused").count();
        let limit = app.identity.settings.guard.delay_after as usize;
        assert_eq!(checked, limit, "{backend:?}: checked before the pause");
        assert_eq!(paused, AT_ONCE - limit, "{backend:?}: the rest were not checked");
        let user = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
        let now = app.clock.now();
        let key = app.store.throttle(&format!("code:{}", user.id), now - time::Duration::hours(24), now).await.unwrap();
        assert_eq!(key.failures, limit as u32, "{backend:?}: only checked guesses count");
        assert!(key.locked_until.is_some_and(|until| until > now), "{backend:?}: paused");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_code_pages_of_fresh_processes_send_no_more_codes_than_the_pause_allows() {
    for backend in backends() {
        let app = Arc::new(TestApp::spawn(backend).await);
        let phone = "+79001234567";
        // Thirty phone logins of one user, each about to show its code page
        // (the page sends the code).
        let mut browsers = Vec::new();
        for _ in 0..AT_ONCE {
            browsers.push(phone_process(&app, phone).await.0);
        }
        assert!(app.outbox().is_empty(), "{backend:?}: no code before the page");
        let barrier = Arc::new(Barrier::new(AT_ONCE));
        let mut pages = tokio::task::JoinSet::new();
        for browser in browsers {
            let (app, barrier) = (Arc::clone(&app), Arc::clone(&barrier));
            pages.spawn(async move {
                barrier.wait().await;
                view(&app, &browser).await["pageData"].clone()
            });
        }
        let pages = pages.join_all().await;
        let limit = app.identity.settings.guard.send_delay_after as usize;
        assert_eq!(app.outbox().len(), limit, "{backend:?}: codes sent");
        let with_code = pages.iter().filter(|p| p["stepViewData"]["smsOtpProcessId"].is_string()).count();
        let paused = pages.iter().filter(|p| p["errors"]["otherError"] == "authentication.sms-otp.send-paused").count();
        assert_eq!((with_code, paused), (limit, AT_ONCE - limit), "{backend:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_unknown_phone_numbers_from_fresh_processes_never_skip_the_captcha() {
    for backend in backends() {
        let app = Arc::new(TestApp::spawn(backend).await);
        let mut browsers = Vec::new();
        for _ in 0..AT_ONCE {
            browsers.push(phone_step(&app).await);
        }
        let barrier = Arc::new(Barrier::new(AT_ONCE));
        let mut attempts = tokio::task::JoinSet::new();
        for (n, (browser, csrf)) in browsers.into_iter().enumerate() {
            let (app, barrier) = (Arc::clone(&app), Arc::clone(&barrier));
            attempts.spawn(async move {
                let number = format!("+7999{n:07}");
                let form = [("_csrf", csrf.as_str()), ("principal", number.as_str())];
                barrier.wait().await;
                let response = browser.post(app.url("/login")).form(&form).send().await.unwrap();
                assert_eq!(location(&response), "/login");
                view(&app, &browser).await["pageData"]["errors"].clone()
            });
        }
        let errors = attempts.join_all().await;
        let wrong = errors.iter().filter(|e| e["principalError"] == "challenge.phone.wrong-credentials").count();
        let captcha = errors.iter().filter(|e| e["otherError"] == "challenge.captcha.required").count();
        let limit = app.identity.settings.guard.address_captcha_after as usize;
        assert_eq!((wrong, captcha), (limit, AT_ONCE - limit), "{backend:?}: looked up without a CAPTCHA");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_wrong_codes_each_use_up_a_try() {
    for backend in backends() {
        let app = Arc::new(TestApp::spawn(backend).await);
        let (browser, csrf) = fresh_process(&app).await;
        let form = [("_csrf", csrf.as_str()), ("principal", "ivan"), ("credentials", "ivan-password")];
        browser.post(app.url("/login")).form(&form).send().await.unwrap();
        let page = view(&app, &browser).await;
        assert_eq!(page["pageData"]["stepViewData"]["stepType"], "sms-otp");
        let code = app.last_code("+79001234567");
        let wrong = if code == "000000" { "000001" } else { "000000" };

        let barrier = Arc::new(Barrier::new(AT_ONCE));
        let mut guesses = tokio::task::JoinSet::new();
        for _ in 0..AT_ONCE {
            let (app, barrier, browser, csrf) = (Arc::clone(&app), Arc::clone(&barrier), browser.clone(), csrf.clone());
            guesses.spawn(async move {
                barrier.wait().await;
                let form = [("_csrf", csrf.as_str()), ("credentials", wrong)];
                browser.post(app.url("/login")).form(&form).send().await.unwrap().status()
            });
        }
        assert!(guesses.join_all().await.iter().all(|status| *status == 303), "{backend:?}");

        let id = page["pageData"]["authenticationFlowContext"]["authenticationFlowId"].as_str().unwrap();
        let process = app.store.find_login_process(id.parse().unwrap(), app.clock.now()).await.unwrap().unwrap();
        let otp = process.state.otp.expect("the spent code stays");
        assert_eq!(otp.failures, app.identity.settings.otp.max_failures, "{backend:?}: every wrong try counted");
        // The right code is now refused: its tries were used up.
        let form = [("_csrf", csrf.as_str()), ("credentials", code.as_str())];
        let response = browser.post(app.url("/login")).form(&form).send().await.unwrap();
        assert_eq!(location(&response), "/login");
        let page = view(&app, &browser).await;
        assert_eq!(page["pageData"]["errors"]["credentialsError"], "challenge.sms-otp.code-expired", "{backend:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_language_changes_of_one_process_all_succeed() {
    for backend in backends() {
        let app = Arc::new(TestApp::spawn(backend).await);
        let (browser, csrf) = fresh_process(&app).await;
        let barrier = Arc::new(Barrier::new(AT_ONCE));
        let mut changes = tokio::task::JoinSet::new();
        for i in 0..AT_ONCE {
            let (app, barrier, browser, csrf) = (Arc::clone(&app), Arc::clone(&barrier), browser.clone(), csrf.clone());
            changes.spawn(async move {
                let locale = if i % 2 == 0 { "en" } else { "ru" };
                barrier.wait().await;
                let url = app.url(&format!("/login/user-settings/locale?locale={locale}"));
                browser.patch(url).header("X-XSRF-TOKEN", csrf).send().await.unwrap().status().as_u16()
            });
        }
        let statuses = changes.join_all().await;
        assert!(statuses.iter().all(|s| *s == 200), "{backend:?}: {statuses:?}");
    }
}

/// Reads until the server closes the connection; returns how long that took.
async fn closed_within(stream: &mut TcpStream, limit: StdDuration) -> Option<StdDuration> {
    let started = Instant::now();
    let mut buffer = [0_u8; 1024];
    loop {
        match tokio::time::timeout_at((started + limit).into(), stream.read(&mut buffer)).await {
            Ok(Ok(0) | Err(_)) => return Some(started.elapsed()),
            Ok(Ok(_)) => {}
            Err(_) => return None,
        }
    }
}

#[tokio::test]
async fn a_client_that_trickles_its_headers_or_idles_is_cut_off() {
    let app = TestApp::spawn_with(portico_tests::Backend::Sqlite, |c| c.http.header_read_timeout_secs = 1).await;
    let addr = app.url("").trim_start_matches("http://").to_owned();

    // One header byte every 200 ms: the head never completes in time.
    let mut slow = TcpStream::connect(&addr).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n").await.unwrap();
    let trickle = async {
        for byte in b"X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".iter().cycle() {
            if slow.write_all(&[*byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(StdDuration::from_millis(200)).await;
        }
    };
    let cut = tokio::time::timeout(StdDuration::from_secs(5), trickle).await;
    assert!(cut.is_ok(), "the server closed the trickling connection");

    // Nothing at all after connecting.
    let mut silent = TcpStream::connect(&addr).await.unwrap();
    assert!(closed_within(&mut silent, StdDuration::from_secs(5)).await.is_some(), "silent connection closed");

    // A kept-alive connection that sends no next request.
    let mut idle = TcpStream::connect(&addr).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let mut answer = [0_u8; 512];
    let n = idle.read(&mut answer).await.unwrap();
    assert!(String::from_utf8_lossy(&answer[..n]).starts_with("HTTP/1.1 200"), "answered first");
    assert!(closed_within(&mut idle, StdDuration::from_secs(5)).await.is_some(), "idle keep-alive closed");
}

/// Sends a POST head announcing `length` bytes, then one byte of it every
/// `every` until the server answers; returns the answer's first line and
/// whether the server closed the connection after it.
async fn trickle_body(addr: &str, path: &str, length: usize, every: StdDuration) -> (String, bool) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {length}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut buffer = [0_u8; 1024];
    loop {
        tokio::select! {
            read = stream.read(&mut buffer) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buffer[..n]),
            },
            () = tokio::time::sleep(every) => {
                // Keeps trickling while nothing has been answered yet.
                if answer.is_empty() && stream.write_all(b"a").await.is_err() {
                    break;
                }
            }
        }
    }
    let text = String::from_utf8_lossy(&answer).into_owned();
    let first = text.lines().next().unwrap_or_default().to_owned();
    (first, text.to_ascii_lowercase().contains("connection: close"))
}

#[tokio::test]
async fn a_trickled_body_is_answered_408_and_frees_its_connection() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.http.max_connections = 4;
            c.http.body_timeout_secs = 2;
            c.http.body_min_bytes_per_sec = 0;
        })
        .await;
        let addr = app.url("").trim_start_matches("http://").to_owned();
        let started = Instant::now();
        // As many trickling clients as there are connection slots.
        let mut slow = tokio::task::JoinSet::new();
        for _ in 0..4 {
            let addr = addr.clone();
            slow.spawn(async move { trickle_body(&addr, "/oauth2/token", 1000, StdDuration::from_millis(300)).await });
        }
        tokio::time::sleep(StdDuration::from_millis(300)).await;
        // A fifth client waits for a slot: it is served once the tricklers are cut.
        let client = reqwest::Client::builder().timeout(StdDuration::from_secs(10)).build().unwrap();
        let health = client.get(app.url("/healthz")).send().await.expect("served after the slow bodies were cut");
        assert_eq!(health.status(), 200);
        for (first, closed) in slow.join_all().await {
            assert_eq!(first, "HTTP/1.1 408 Request Timeout", "{backend:?}");
            assert!(closed, "Connection: close");
        }
        let took = started.elapsed();
        assert!(took < StdDuration::from_secs(8), "{backend:?}: cut after {took:?}");
    }
}

#[tokio::test]
async fn a_body_below_the_minimum_rate_is_cut_before_the_deadline() {
    let app = TestApp::spawn_with(portico_tests::Backend::Sqlite, |c| {
        c.http.body_timeout_secs = 60;
        c.http.body_min_bytes_per_sec = 100;
    })
    .await;
    let addr = app.url("").trim_start_matches("http://").to_owned();
    let started = Instant::now();
    // Two bytes a second, against a minimum of a hundred.
    let (first, closed) = trickle_body(&addr, "/oauth2/token", 1000, StdDuration::from_millis(500)).await;
    assert_eq!(first, "HTTP/1.1 408 Request Timeout");
    assert!(closed);
    let took = started.elapsed();
    assert!(took >= StdDuration::from_secs(4), "judged only after the grace period: {took:?}");
    assert!(took < StdDuration::from_secs(15), "cut long before the 60 s deadline: {took:?}");

    // A body that comes at once is not affected, however late the grace ends.
    let response = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", "nope")]).await;
    assert_ne!(response.status(), 408);
}

#[tokio::test]
async fn connections_past_the_limit_wait_until_one_closes() {
    let app = TestApp::spawn_with(portico_tests::Backend::Sqlite, |c| c.http.max_connections = 2).await;
    let addr = app.url("").trim_start_matches("http://").to_owned();
    let first = TcpStream::connect(&addr).await.unwrap();
    let _second = TcpStream::connect(&addr).await.unwrap();
    tokio::time::sleep(StdDuration::from_millis(200)).await;
    let client = reqwest::Client::builder().timeout(StdDuration::from_millis(700)).build().unwrap();
    assert!(client.get(app.url("/healthz")).send().await.is_err(), "a third connection is not served yet");
    drop(first);
    let client = reqwest::Client::builder().timeout(StdDuration::from_secs(5)).build().unwrap();
    let response = client.get(app.url("/healthz")).send().await.expect("served once a slot is free");
    assert_eq!(response.status(), 200);
}

/// Sends `request` on a new connection and reads until the server closes
/// it or stops answering: the answer, and whether it was closed.
async fn raw(addr: &str, request: &[u8]) -> (String, bool) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    let mut buffer = [0_u8; 4096];
    let closed = loop {
        match tokio::time::timeout(StdDuration::from_secs(2), stream.read(&mut buffer)).await {
            Ok(Ok(0) | Err(_)) => break true,
            Ok(Ok(n)) => answer.extend_from_slice(&buffer[..n]),
            Err(_) => break false,
        }
    };
    (String::from_utf8_lossy(&answer).into_owned(), closed)
}

/// A revocation of `token` by the demo client as raw HTTP/1.1: the head's
/// first lines, then `headers` (each ending in CRLF), then `body` made from
/// the form (`token=…`) by `frame`.
fn raw_revocation(token: &str, headers: &str, frame: impl Fn(&str) -> String) -> String {
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!(
        "{}:{}",
        portico_server::demo::CLIENT_ID,
        portico_server::demo::CLIENT_SECRET
    ));
    let body = frame(&format!("token={token}"));
    format!(
        "POST /oauth2/revoke HTTP/1.1\r\nAuthorization: Basic {basic}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\n{headers}\r\n{body}"
    )
}

/// `form` framed as one chunk and the last chunk.
fn chunked(form: &str) -> String {
    format!("{:x}\r\n{form}\r\n0\r\n\r\n", form.len())
}

#[tokio::test]
async fn a_request_without_exactly_one_valid_host_is_refused_and_changes_nothing() {
    let app = TestApp::spawn(portico_tests::Backend::Sqlite).await;
    let addr = app.url("").trim_start_matches("http://").to_owned();
    for (head, first, says) in [
        ("GET /healthz HTTP/1.1\r\n\r\n", "HTTP/1.1 400 Bad Request", "no Host header"),
        ("GET /healthz HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n", "HTTP/1.1 400", "more than one"),
        ("GET /healthz HTTP/1.1\r\nHost: a b/c\r\n\r\n", "HTTP/1.1 400", "not a host"),
        ("GET /healthz HTTP/1.1\r\nHost: user@a.example\r\n\r\n", "HTTP/1.1 400", "not a host"),
    ] {
        let (answer, closed) = raw(&addr, head.as_bytes()).await;
        assert!(answer.starts_with(first) && answer.contains(says), "{head:?}: {answer}");
        assert!(closed, "{head:?}: the connection is closed after the refusal");
    }
    // HTTP/1.0 may leave the host out; a host with a port, an IP literal
    // and an empty host (a target without authority) are hosts.
    for head in [
        "GET /healthz HTTP/1.0\r\n\r\n",
        "GET /healthz HTTP/1.1\r\nHost: id.bank.example:8443\r\nConnection: close\r\n\r\n",
        "GET /healthz HTTP/1.1\r\nHost: [::1]:8080\r\nConnection: close\r\n\r\n",
        "GET /healthz HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n",
    ] {
        let (answer, _) = raw(&addr, head.as_bytes()).await;
        assert!(answer.contains(" 200 OK"), "{head:?}: {answer}");
    }

    // A revocation without a host never reaches the endpoint: the refresh
    // token still works.
    let pair = app.token_pair("ivan").await;
    let length = format!("Content-Length: {}\r\n", "token=".len() + pair.refresh_token.len());
    let revoke = raw_revocation(&pair.refresh_token, &length, str::to_owned);
    let (answer, _) = raw(&addr, revoke.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    let refreshed = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", &pair.refresh_token)]).await;
    assert_eq!(refreshed.status(), 200, "the refresh token was not revoked");
}

#[tokio::test]
async fn a_body_under_a_coding_other_than_chunked_once_is_refused_and_changes_nothing() {
    let app = TestApp::spawn(portico_tests::Backend::Sqlite).await;
    let addr = app.url("").trim_start_matches("http://").to_owned();
    let pair = app.token_pair("ivan").await;
    // The body is the plain form in both: a server that skipped the
    // codings it does not decode would revoke the token.
    for (codings, first, says) in [
        ("Transfer-Encoding: gzip, chunked\r\n", "HTTP/1.1 501 Not Implemented", "other than chunked"),
        ("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", "HTTP/1.1 501", "other than chunked"),
        ("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", "HTTP/1.1 400", "more than once"),
    ] {
        let revoke = raw_revocation(&pair.refresh_token, &format!("Host: id.bank.example\r\n{codings}"), chunked);
        let (answer, closed) = raw(&addr, revoke.as_bytes()).await;
        assert!(answer.starts_with(first) && answer.contains(says), "{codings:?}: {answer}");
        assert!(closed, "{codings:?}: the connection is closed after the refusal");
    }
    let refreshed = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", &pair.refresh_token)]).await;
    assert_eq!(refreshed.status(), 200, "the refresh token was not revoked");

    // Chunked alone is read as before.
    let refreshed: serde_json::Value = refreshed.json().await.unwrap();
    let token = refreshed["refresh_token"].as_str().unwrap();
    let headers = "Host: id.bank.example\r\nTransfer-Encoding: Chunked\r\nConnection: close\r\n";
    let revoke = raw_revocation(token, headers, chunked);
    let (answer, _) = raw(&addr, revoke.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let after = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", token)]).await;
    assert_eq!(after.status(), 400, "revoked through a chunked body");
}

#[tokio::test]
async fn hsts_is_sent_with_an_https_public_url_only() {
    let app = TestApp::spawn_with(portico_tests::Backend::Sqlite, |c| {
        c.public_url = Some("https://id.bank.example".into());
        c.http.hsts_max_age_secs = 600;
    })
    .await;
    let response = reqwest::get(app.url("/healthz")).await.unwrap();
    assert_eq!(response.headers()["strict-transport-security"], "max-age=600");
    let plain = TestApp::spawn(portico_tests::Backend::Sqlite).await;
    let response = reqwest::get(plain.url("/healthz")).await.unwrap();
    assert!(response.headers().get("strict-transport-security").is_none(), "not over plain http");
}

#[tokio::test]
async fn userinfo_is_never_cached() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let tokens = app.tokens_for("ivan", "ivan-password").await;
        for request in [app.http().get(app.url("/oauth2/userinfo")), app.http().post(app.url("/oauth2/userinfo"))] {
            let response = request.bearer_auth(&tokens.access_token).send().await.unwrap();
            assert_eq!(response.status(), 200, "{backend:?}");
            assert_eq!(response.headers()["cache-control"], "no-store");
        }
        let response = app.http().get(app.url("/oauth2/userinfo")).send().await.unwrap();
        assert_eq!(response.status(), 401);
        assert_eq!(response.headers()["cache-control"], "no-store", "refusals too");
    }
}

/// The `svc.session` cookie (`name=value`) in a browser's `jar`.
fn session_cookie(app: &TestApp, jar: &reqwest::cookie::Jar) -> String {
    use reqwest::cookie::CookieStore as _;
    let all = jar.cookies(&app.base.parse().unwrap()).unwrap();
    all.to_str().unwrap().split("; ").find(|c| c.starts_with("svc.session=")).unwrap().to_owned()
}

/// Where an authorization request with `prompt=none` and only `cookie`
/// leads: to a code while its session lives, else `login_required`.
async fn silent_authorize(app: &TestApp, cookie: &str) -> String {
    let url = app.authorize_url(&portico_tests::Pkce::new(), &[("prompt", Some("none"))]);
    location(&app.http().get(url).header("cookie", cookie).send().await.unwrap())
}

/// A login with `prompt=login` in `browser` as `login` (whose password is
/// `<login>-password`), through to the code.
async fn sign_in_again(app: &TestApp, browser: &reqwest::Client, login: &str) {
    let pkce = portico_tests::Pkce::new();
    let response = browser.get(app.authorize_url(&pkce, &[("prompt", Some("login"))])).send().await.unwrap();
    assert_eq!(location(&response), "/login");
    let view = app.login_view(browser).await;
    let csrf = view["pageData"]["authenticationFlowContext"]["csrf"].as_str().unwrap().to_owned();
    let password = format!("{login}-password");
    let form = [("_csrf", csrf.as_str()), ("principal", login), ("credentials", password.as_str())];
    let response = browser.post(app.url("/login")).form(&form).send().await.unwrap();
    let back = app.second_factor_if_asked(browser, &csrf, login, location(&response)).await;
    let response = browser.get(app.url(&back)).send().await.unwrap();
    assert!(location(&response).contains("code="), "{login} signed in: {}", location(&response));
}

/// A new browser in which `login` signs in (password `<login>-password`),
/// with the cookie of the session it opened.
async fn signed_in_browser(app: &TestApp, login: &str) -> (reqwest::Client, String) {
    let jar = Arc::new(reqwest::cookie::Jar::default());
    let browser = app.browser_with(Arc::clone(&jar));
    app.login_for_code(&browser, &portico_tests::Pkce::new(), login, &format!("{login}-password")).await;
    let cookie = session_cookie(app, &jar);
    (browser, cookie)
}

/// The audit entries `session.ended` recorded `by` this cause.
async fn sessions_ended_by(app: &TestApp, by: &str) -> usize {
    let audit = app.store.recent_audit(100).await.unwrap();
    audit.iter().filter(|e| e.kind == "session.ended" && e.detail["by"] == by).count()
}

/// The live sessions the admin API lists for `login`.
async fn sessions_listed(app: &TestApp, login: &str) -> usize {
    let user = app.store.find_user_by_login(login).await.unwrap().unwrap();
    let listed = app
        .http()
        .get(app.url(&format!("/admin/v1/users/{}/sessions", user.id)))
        .bearer_auth(portico_tests::ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    listed.json::<Vec<Value>>().await.unwrap().len()
}

/// A new login in a browser ends the session it replaces: the old
/// `svc.session` cookie no longer gets a code with `prompt=none`, and the
/// end is recorded as a replacement.
#[tokio::test]
async fn a_new_login_ends_the_session_it_replaces() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (browser, old) = signed_in_browser(&app, "ivan").await;
        let before = silent_authorize(&app, &old).await;
        assert!(before.contains("code="), "the session works before: {before}");

        // prompt=login in the same browser, as another user.
        sign_in_again(&app, &browser, "maria").await;

        let after = silent_authorize(&app, &old).await;
        assert!(after.contains("error=login_required"), "{backend:?}: {after}");
        assert_eq!(sessions_ended_by(&app, "replaced").await, 1, "{backend:?}: recorded as replaced");
    }
}

/// A user holds at most `login.max_sessions_per_user` live sessions: a
/// login beyond it (from a new browser, where nothing is replaced) ends the
/// oldest, whose cookie then gets `login_required` with `prompt=none`; the
/// end is recorded `by: "limit"` and the admin API lists the newest only.
#[tokio::test]
async fn a_login_beyond_the_users_session_limit_ends_the_oldest_session() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| c.login.max_sessions_per_user = 2).await;
        let mut cookies = Vec::new();
        for _ in 0..3 {
            cookies.push(signed_in_browser(&app, "ivan").await.1);
            app.clock.advance(time::Duration::minutes(1));
        }
        let oldest = silent_authorize(&app, &cookies[0]).await;
        assert!(oldest.contains("error=login_required"), "{backend:?}: the oldest ended");
        for cookie in &cookies[1..] {
            assert!(silent_authorize(&app, cookie).await.contains("code="), "{backend:?}: the newest two live on");
        }
        assert_eq!(sessions_ended_by(&app, "limit").await, 1, "{backend:?}: recorded as ended by the limit");
        assert_eq!(sessions_listed(&app, "ivan").await, 2, "{backend:?}");
    }
}

/// At the session bound, a new login in a browser that holds a session
/// replaces that one and ends no other: the user still holds the bound.
/// (The replaced session is ended in the login's own write, before the
/// bound counts, so it is not the oldest other that makes room.)
#[tokio::test]
async fn a_new_login_at_the_session_limit_replaces_the_browsers_session_and_ends_no_other() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| c.login.max_sessions_per_user = 2).await;
        // The older browser first, then the one that signs in again.
        let (_, other) = signed_in_browser(&app, "ivan").await;
        app.clock.advance(time::Duration::minutes(1));
        let jar = Arc::new(reqwest::cookie::Jar::default());
        let browser = app.browser_with(Arc::clone(&jar));
        app.login_for_code(&browser, &portico_tests::Pkce::new(), "ivan", "ivan-password").await;
        let replaced = session_cookie(&app, &jar);
        app.clock.advance(time::Duration::minutes(1));

        sign_in_again(&app, &browser, "ivan").await;
        let renewed = session_cookie(&app, &jar);
        assert_ne!(renewed, replaced, "{backend:?}: a new session on authentication");

        let lives = silent_authorize(&app, &other).await;
        assert!(lives.contains("code="), "{backend:?}: the other browser's session lives on");
        assert!(silent_authorize(&app, &renewed).await.contains("code="), "{backend:?}: the new session works");
        let ended = silent_authorize(&app, &replaced).await;
        assert!(ended.contains("error=login_required"), "{backend:?}: the replaced one ended");
        let by = (sessions_ended_by(&app, "replaced").await, sessions_ended_by(&app, "limit").await);
        assert_eq!(by, (1, 0), "{backend:?}: one replaced, none beyond the limit");
        assert_eq!(sessions_listed(&app, "ivan").await, 2, "{backend:?}: the limit still held");
    }
}

/// Portico's own mutual-TLS listener: a connection that says nothing, or
/// starts a handshake and stalls, is closed within
/// `http.header_read_timeout_secs`, and holds up no other.
#[tokio::test]
async fn a_silent_or_stalled_tls_handshake_is_cut_off_and_holds_up_no_other() {
    let app = TestApp::spawn_with(portico_tests::Backend::Sqlite, |c| {
        c.http.header_read_timeout_secs = 1;
        c.mtls.listen = Some("127.0.0.1:0".parse().unwrap());
    })
    .await;
    let addr = app.mtls_url("").trim_start_matches("https://").to_owned();
    let mut silent = TcpStream::connect(&addr).await.unwrap();
    // A TLS record header announcing a 512-byte ClientHello, and no more.
    let mut stalled = TcpStream::connect(&addr).await.unwrap();
    stalled.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]).await.unwrap();
    let healthz = app.mtls_http(None).get(app.mtls_url("/healthz")).send().await.unwrap();
    assert_eq!(healthz.status(), 200, "served meanwhile");
    assert!(closed_within(&mut silent, StdDuration::from_secs(5)).await.is_some(), "silent connection closed");
    assert!(closed_within(&mut stalled, StdDuration::from_secs(5)).await.is_some(), "stalled handshake closed");
}
