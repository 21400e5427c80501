//! The steady load of the cluster test, as its users would make it:
//! browsers logging in step by step, clients refreshing their tokens in
//! chains, permission reads, report tasks and payment events. Each client
//! retries what the contract lets it retry (a 503, a connection that broke)
//! and tells apart what failed because a node died with its request in
//! flight from what must never fail.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use portico_tests::{ADMIN_TOKEN, INTERNAL_TOKEN, Pkce, demo, view_data};
use serde_json::{Value, json};

/// The demo users the browsers log in as, one browser each (their SMS
/// codes go to different phones), and their phones.
pub const LOGINS: [(&str, &str); 4] =
    [("ivan", "+79001234567"), ("maria", "+79007654321"), ("oleg", "+79003334455"), ("anna", "+79006667788")];

/// How long a client keeps retrying one request before it gives up.
const RETRY_FOR: Duration = Duration::from_secs(45);

/// Counts by name, and what must never happen.
#[derive(Default)]
pub struct Tally {
    counts: Mutex<BTreeMap<String, u64>>,
    violations: Mutex<Vec<String>>,
}

impl Tally {
    pub fn add(&self, what: &str) {
        *self.counts.lock().unwrap().entry(what.to_owned()).or_default() += 1;
    }

    pub fn violation(&self, what: String) {
        self.violations.lock().unwrap().push(what);
    }

    pub fn count(&self, what: &str) -> u64 {
        self.counts.lock().unwrap().get(what).copied().unwrap_or(0)
    }

    pub fn counts(&self) -> BTreeMap<String, u64> {
        self.counts.lock().unwrap().clone()
    }

    pub fn violations(&self) -> Vec<String> {
        self.violations.lock().unwrap().clone()
    }
}

/// SMS messages the nodes sent through the gateway: phone, code, when.
#[derive(Default)]
pub struct Sms(Mutex<Vec<(String, String, Instant)>>);

impl Sms {
    /// Records a gateway request (`{"to": …, "text": …}`).
    pub fn record(&self, body: &Value) {
        let to = body["to"].as_str().unwrap_or_default().to_owned();
        let text = body["text"].as_str().unwrap_or_default();
        let code: String = text.chars().filter(char::is_ascii_digit).collect();
        self.0.lock().unwrap().push((to, code, Instant::now()));
    }

    /// The last code sent to `phone` at or after `since`, waiting for it a while.
    async fn code_for(&self, phone: &str, since: Instant) -> Option<String> {
        for _ in 0..200 {
            let found = self.0.lock().unwrap().iter().rev().find(|(to, _, at)| to == phone && *at >= since).cloned();
            if let Some((_, code, _)) = found {
                return Some(code);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }
}

/// What the load shares.
pub struct Load {
    /// The balancer: the public URL.
    pub base: String,
    pub sms: Sms,
    pub tally: Tally,
    pub stop: AtomicBool,
    /// Order ids of the payment events the intake acknowledged.
    pub acknowledged: Mutex<BTreeSet<String>>,
    /// Order ids the merchant's endpoint received.
    pub received: Mutex<BTreeSet<String>>,
    /// Report tasks the API accepted.
    pub tasks: Mutex<BTreeSet<String>>,
    next: AtomicU64,
}

/// One request's fate.
enum Answer {
    /// An answer that is not a 503 or a server error.
    Got(reqwest::Response),
    /// 503 (or the 500 with `Retry-After` of the APIs whose contract has
    /// no 503): the contract's "try again".
    Unavailable,
    /// The connection broke (a node died with the request in flight) or a
    /// server error was answered (counted as a violation).
    Broken,
}

/// A login that ended.
pub enum LoginEnd {
    Tokens(Value),
    /// Lost; `in_flight` when a connection broke on the way (a node died
    /// with a step of it in flight).
    Lost {
        in_flight: bool,
        why: String,
    },
}

impl Load {
    pub fn new(base: String) -> Self {
        Self {
            base,
            sms: Sms::default(),
            tally: Tally::default(),
            stop: AtomicBool::new(false),
            acknowledged: Mutex::default(),
            received: Mutex::default(),
            tasks: Mutex::default(),
            next: AtomicU64::new(0),
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A client that opens a connection per request (so the balancer sends
    /// each request to the next node), with cookies when it is a browser.
    pub fn client(browser: bool) -> reqwest::Client {
        reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::none())
            .cookie_store(browser)
            .timeout(Duration::from_secs(15))
            .build()
            .expect("HTTP client")
    }

    async fn send(&self, what: &str, request: reqwest::RequestBuilder) -> Answer {
        match request.send().await {
            Err(_) => {
                self.tally.add(&format!("{what}: connection broke"));
                Answer::Broken
            }
            Ok(response) if response.status() == 503 => {
                self.tally.add(&format!("{what}: 503"));
                Answer::Unavailable
            }
            // The permission and report APIs have only 500 for a server
            // error; an outage's carries `Retry-After`.
            Ok(response) if response.status() == 500 && response.headers().contains_key("retry-after") => {
                self.tally.add(&format!("{what}: 500 with Retry-After (an outage, as the contract answers it)"));
                Answer::Unavailable
            }
            Ok(response) if response.status().is_server_error() => {
                let status = response.status();
                let body = response.text().await.unwrap_or_default();
                self.tally.violation(format!("{what}: {status} where the contract has no server error: {body}"));
                Answer::Broken
            }
            Ok(response) => Answer::Got(response),
        }
    }

    /// Records an answer that must not come: `what` answered it, with its body.
    async fn refused(&self, what: &str, response: reqwest::Response) {
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        self.tally.violation(format!("{what} answered {status}: {body}"));
    }

    /// Sends what `request` makes until an answer comes that is not a 503
    /// or a broken connection, for at most [`RETRY_FOR`]; whether a
    /// connection broke on the way.
    async fn until_answered(
        &self,
        what: &str,
        request: impl Fn() -> reqwest::RequestBuilder,
    ) -> (Option<reqwest::Response>, bool) {
        let started = Instant::now();
        let mut broke = false;
        while started.elapsed() < RETRY_FOR {
            match self.send(what, request()).await {
                Answer::Got(response) => return (Some(response), broke),
                Answer::Unavailable => {}
                Answer::Broken => broke = true,
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        (None, broke)
    }

    /// The demo client's authorize request, sent to `origin` (the
    /// balancer, or one node).
    fn authorize_url(&self, origin: &str, pkce: &Pkce) -> url::Url {
        let redirect_uri = demo::redirect_uri(&self.base);
        let mut authorize = url::Url::parse(&format!("{origin}/oauth2/authorize")).expect("URL");
        authorize.query_pairs_mut().extend_pairs([
            ("response_type", "code"),
            ("client_id", demo::CLIENT_ID),
            ("redirect_uri", redirect_uri.as_str()),
            ("scope", "openid profile email phone"),
            ("state", "chaos"),
            ("code_challenge", pkce.challenge.as_str()),
            ("code_challenge_method", "S256"),
        ]);
        authorize
    }

    /// `per_login` browsers for each of [`LOGINS`] at one node, past the
    /// balancer: each opens the login page, then all send their (right)
    /// passwords at once. The answers are not looked at: the test kills
    /// the node while the passwords are being checked.
    pub async fn passwords_at_once(&self, node: SocketAddr, per_login: usize) -> tokio::task::JoinSet<()> {
        let origin = format!("http://{node}");
        let mut ready = Vec::new();
        for (login, _) in LOGINS {
            for _ in 0..per_login {
                let browser = Self::client(true);
                let authorize = self.authorize_url(&origin, &Pkce::new());
                let started = browser.get(authorize).send().await.expect("authorize");
                assert_eq!(started.status(), 303, "authorize at {origin}");
                let page = browser.get(format!("{origin}/login")).send().await.expect("the login page");
                let view = view_data(&page.text().await.expect("the login page"));
                let csrf = view["pageData"]["authenticationFlowContext"]["csrf"].as_str().expect("csrf").to_owned();
                let form = vec![
                    ("_csrf", csrf),
                    ("principal", login.to_owned()),
                    ("credentials", format!("{login}-password")),
                    // Solved ahead, in case earlier kills left the address over its threshold.
                    ("smart-token", portico_identity::captcha::DEV_TOKEN.to_owned()),
                ];
                ready.push(browser.post(format!("{origin}/login")).form(&form));
            }
        }
        let mut sent = tokio::task::JoinSet::new();
        for request in ready {
            sent.spawn(async move {
                let _ = request.send().await;
            });
        }
        sent
    }

    /// A browser's whole login as `login` (password, then the SMS code),
    /// then the code's exchange: each step is done as the page shows it,
    /// and repeated when its answer was lost.
    pub async fn login(&self, login: &str, phone: &str) -> LoginEnd {
        let browser = Self::client(true);
        let pkce = Pkce::new();
        let authorize = self.authorize_url(&self.base, &pkce);
        let mut broke = false;
        let lost = |in_flight: bool, why: String| LoginEnd::Lost { in_flight, why };
        let (started, broken) = self.until_answered("login: authorize", || browser.get(authorize.as_str())).await;
        broke |= broken;
        let Some(started) = started else { return lost(broke, "authorize never answered".into()) };
        if started.status() != 303 {
            return lost(broke, format!("authorize answered {}", started.status()));
        }
        let mut back = None;
        let mut code_since = None;
        for _ in 0..20 {
            let (page, broken) = self.until_answered("login: page", || browser.get(self.url("/login"))).await;
            broke |= broken;
            let Some(page) = page else { return lost(broke, "the login page never answered".into()) };
            // A completed login sends the browser back to authorize (when
            // the step's own answer was lost).
            let location = page.headers().get("location").and_then(|l| l.to_str().ok()).unwrap_or("");
            if page.status().is_redirection() && location.contains("/oauth2/authorize") {
                back = Some(if location.starts_with('/') { self.url(location) } else { location.to_owned() });
                break;
            }
            if page.status() != 200 {
                return lost(broke, format!("the login page answered {}", page.status()));
            }
            let html = page.text().await.unwrap_or_default();
            if !html.contains(r#"id="viewData""#) {
                return lost(broke, "the login page has no view data".into());
            }
            let view = view_data(&html);
            let csrf = view["pageData"]["authenticationFlowContext"]["csrf"].as_str().unwrap_or_default().to_owned();
            let form: Vec<(&str, String)> = match view["pageData"]["stepViewData"]["stepType"].as_str() {
                Some("username-password") => {
                    code_since = Some(Instant::now());
                    let mut form = vec![("principal", login.to_owned()), ("credentials", format!("{login}-password"))];
                    // Attempts counted on a node that died before it could
                    // take them back add up on the address: a person would
                    // solve the CAPTCHA then (the development one here).
                    if view["pageData"]["stepViewData"]["captchaRequired"] == true {
                        self.tally.add("logins: CAPTCHA solved");
                        form.push(("smart-token", portico_identity::captcha::DEV_TOKEN.to_owned()));
                    }
                    form
                }
                Some("sms-otp") => {
                    let since = code_since.unwrap_or_else(Instant::now);
                    match self.sms.code_for(phone, since).await {
                        Some(code) => vec![("credentials", code)],
                        None => return lost(broke, "no SMS code arrived".into()),
                    }
                }
                other => return lost(broke, format!("unexpected step {other:?}: {view}")),
            };
            let mut body = vec![("_csrf", csrf)];
            body.extend(form);
            match self.send("login: step", browser.post(self.url("/login")).form(&body)).await {
                Answer::Got(response) => {
                    let location = response.headers().get("location").and_then(|l| l.to_str().ok()).unwrap_or("");
                    if location.starts_with("/oauth2/authorize") {
                        back = Some(if location.starts_with('/') { self.url(location) } else { location.to_owned() });
                        break;
                    }
                    if response.status() != 303 {
                        return lost(broke, format!("a step answered {}", response.status()));
                    }
                }
                Answer::Unavailable => tokio::time::sleep(Duration::from_millis(200)).await,
                Answer::Broken => {
                    broke = true;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
        let Some(back) = back else { return lost(broke, "the login did not complete in 20 steps".into()) };
        // The code is issued once: a broken connection here loses the
        // login; a 503 changed nothing and is tried again.
        let issued = loop {
            match self.send("login: code", browser.get(&back)).await {
                Answer::Got(response) => break response,
                Answer::Unavailable => tokio::time::sleep(Duration::from_millis(200)).await,
                Answer::Broken => return lost(true, "the connection broke before the code came".into()),
            }
        };
        let location = issued.headers().get("location").and_then(|l| l.to_str().ok()).unwrap_or("").to_owned();
        let Some(code) = url::Url::parse(&location)
            .ok()
            .and_then(|url| url.query_pairs().find(|(k, _)| k == "code").map(|(_, v)| v.into_owned()))
        else {
            return lost(broke, format!("authorize answered {} to {location:?}", issued.status()));
        };
        let redirect_uri = demo::redirect_uri(&self.base);
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("code_verifier", pkce.verifier.as_str()),
            ("redirect_uri", redirect_uri.as_str()),
            ("client_id", demo::CLIENT_ID),
            ("client_secret", demo::CLIENT_SECRET),
        ];
        let http = Self::client(false);
        loop {
            match self.send("login: exchange", http.post(self.url("/oauth2/token")).form(&form)).await {
                Answer::Got(response) if response.status() == 200 => {
                    return LoginEnd::Tokens(response.json().await.unwrap_or(Value::Null));
                }
                Answer::Got(response) => {
                    let status = response.status();
                    let body = response.text().await.unwrap_or_default();
                    return lost(broke, format!("the exchange answered {status}: {body}"));
                }
                Answer::Unavailable => tokio::time::sleep(Duration::from_millis(200)).await,
                Answer::Broken => return lost(true, "the connection broke before the tokens came".into()),
            }
        }
    }

    /// Logs in until it works (before the failures start): tokens.
    pub async fn tokens(&self, login: &str, phone: &str) -> Value {
        for _ in 0..5 {
            match self.login(login, phone).await {
                LoginEnd::Tokens(tokens) => return tokens,
                LoginEnd::Lost { why, .. } => eprintln!("a setup login of {login} was lost: {why}"),
            }
        }
        panic!("{login} cannot log in");
    }

    /// Browsers logging in as `login`, one after another.
    pub async fn browsers(&self, login: &str, phone: &str) {
        while !self.stopped() {
            match self.login(login, phone).await {
                LoginEnd::Tokens(_) => self.tally.add("logins: completed"),
                LoginEnd::Lost { in_flight: true, why } => {
                    self.tally.add("logins: lost in flight on a killed node");
                    eprintln!("a login of {login} was lost in flight on a killed node: {why}");
                }
                LoginEnd::Lost { in_flight: false, why } => {
                    self.tally.add("logins: lost");
                    self.tally.violation(format!("a login of {login} was lost, not in flight on a killed node: {why}"));
                }
            }
        }
    }

    /// One refresh chain: each refresh token is used once, the next one
    /// taken from the answer. A token whose answer a broken connection
    /// lost is presented again: if its rotation had committed, that is a
    /// replay and the grant ends, by design. After a 503 it is presented
    /// again too, and must still be good.
    pub async fn refresh_chain(&self, mut refresh: String) {
        let http = Self::client(false);
        // How the last answer was lost, if it was.
        let mut lost_answer: Option<&str> = None;
        while !self.stopped() {
            let form = [
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh.as_str()),
                ("client_id", demo::CLIENT_ID),
                ("client_secret", demo::CLIENT_SECRET),
            ];
            match self.send("refresh", http.post(self.url("/oauth2/token")).form(&form)).await {
                Answer::Got(response) if response.status() == 200 => {
                    let tokens: Value = response.json().await.unwrap_or(Value::Null);
                    refresh = tokens["refresh_token"].as_str().unwrap_or_default().to_owned();
                    lost_answer = None;
                    self.tally.add("refresh: rotated");
                }
                Answer::Got(response) => {
                    let status = response.status();
                    let body = response.text().await.unwrap_or_default();
                    if let Some(how) = lost_answer.filter(|_| body.contains("invalid_grant")) {
                        self.tally.add(&format!("refresh chains: ended by design (a replay after {how})"));
                    } else {
                        self.tally.add("refresh chains: broken");
                        self.tally.violation(format!("a refresh chain broke after a clean answer: {status} {body}"));
                    }
                    return;
                }
                // A 503 changed nothing (a rotation whose answer a lost
                // database connection took is settled before the node
                // answers): the same token again.
                Answer::Unavailable => {}
                Answer::Broken => lost_answer = Some("a broken connection"),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.tally.add("refresh chains: intact at the end");
    }

    /// Permission reads with one token pair.
    pub async fn permission_reads(&self, access_token: &str, id_token: &str) {
        let http = Self::client(false);
        while !self.stopped() {
            let request = http
                .get(self.url("/api/v2/permissions"))
                .bearer_auth(access_token)
                .header("id-token", id_token)
                .header("x-system-id", "cluster-test");
            if let Answer::Got(response) = self.send("permissions", request).await {
                if response.status() == 200 {
                    self.tally.add("permissions: read");
                } else {
                    self.refused("a permission read", response).await;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Report tasks, each for another period: the accepted ones are kept.
    pub async fn report_tasks(&self, access_token: &str, id_token: &str) {
        let http = Self::client(false);
        let first = time::macros::date!(2026 - 01 - 01);
        while !self.stopped() {
            let n = self.next.fetch_add(1, Ordering::Relaxed);
            let from = first + time::Duration::days(i64::try_from(n % 300).unwrap_or(0));
            let body = json!({
                "reportType": "STATEMENT_FOR_1C", "agreementNumber": "БД-0001",
                "account": portico_reports::sample::ACCOUNT_RUB,
                "fromDate": from.to_string(), "toDate": "2026-10-31"
            });
            let request = || {
                http.post(self.url("/v1/reports/tasks"))
                    .bearer_auth(access_token)
                    .header("id-token", id_token)
                    .json(&body)
            };
            let (answer, _) = self.until_answered("report tasks", request).await;
            match answer {
                Some(response) if response.status() == 200 => {
                    let task: Value = response.json().await.unwrap_or(Value::Null);
                    let id = task["id"].as_str().unwrap_or_default().to_owned();
                    self.tasks.lock().unwrap().insert(id);
                    self.tally.add("report tasks: accepted");
                }
                Some(response) => self.refused("a report task", response).await,
                None => self.tally.violation(format!("a report task was not taken in within {RETRY_FOR:?} of tries")),
            }
            tokio::time::sleep(Duration::from_millis(400)).await;
        }
    }

    /// Payment events through the internal intake, each retried until it
    /// is acknowledged (the intake is idempotent by `eventId`).
    pub async fn payment_events(&self, merchant_id: &str) {
        let http = Self::client(false);
        while !self.stopped() {
            let n = self.next.fetch_add(1, Ordering::Relaxed);
            let order = format!("order-{n}");
            let event = json!({ "eventId": format!("ev-{n}"), "merchantId": merchant_id, "event": {
                "paymentId": format!("pay-{n}"), "transactionId": n, "orderId": order, "amount": 150_050,
                "currency": "RUB", "status": "SUCCESS", "statusDate": "2026-11-22T13:45:00+03:00",
                "paymentMethod": "SBP", "sbpTransactionId": "A1", "qrId": "QR1", "comment": null,
                "additionalInfo": null, "extra": {}, "createdAt": "2026-11-22T13:45:01+03:00"
            }});
            let request = || {
                http.post(self.url("/internal/v1/notifications/events/payment"))
                    .bearer_auth(INTERNAL_TOKEN)
                    .json(&event)
            };
            let (answer, _) = self.until_answered("events", request).await;
            match answer {
                Some(response) if response.status().is_success() => {
                    self.acknowledged.lock().unwrap().insert(order);
                    self.tally.add("events: acknowledged");
                }
                Some(response) => self.refused("an event", response).await,
                None => self.tally.violation(format!("an event was not acknowledged within {RETRY_FOR:?} of tries")),
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Registers a merchant through the admin API with `callback_url`: its id.
    pub async fn merchant(&self, callback_url: &str) -> String {
        let http = Self::client(false);
        let shop =
            json!({"merchantId": "chaos-shop", "publicId": "chaos-shop-public", "sbpMerchantId": "MA0000000009"});
        let created = http.post(self.url("/admin/v1/merchants")).bearer_auth(ADMIN_TOKEN).json(&shop).send().await;
        let created: Value = created.expect("register the merchant").json().await.expect("JSON");
        let key = created["apiKey"].as_str().expect("the merchant's key");
        let settings = http
            .put(self.url("/v1/notifications/settings"))
            .header("authorization", key)
            .json(&json!({ "callbackUrl": callback_url }))
            .send()
            .await
            .expect("merchant settings");
        assert_eq!(settings.status(), 200, "{}", settings.text().await.unwrap_or_default());
        "chaos-shop".to_owned()
    }

    /// Polls every accepted report task until it is `DONE` (or `deadline`):
    /// the ones that are not.
    pub async fn unfinished_tasks(&self, access_token: &str, id_token: &str, deadline: Instant) -> Vec<String> {
        let http = Self::client(false);
        let mut waiting: Vec<String> = self.tasks.lock().unwrap().iter().cloned().collect();
        while !waiting.is_empty() && Instant::now() < deadline {
            let mut still = Vec::new();
            for id in waiting {
                let request = http
                    .get(self.url(&format!("/v1/reports/tasks/{id}")))
                    .bearer_auth(access_token)
                    .header("id-token", id_token);
                let status = match request.send().await {
                    Ok(response) if response.status() == 200 => {
                        response.json::<Value>().await.ok().and_then(|t| t["status"].as_str().map(str::to_owned))
                    }
                    _ => None,
                };
                match status.as_deref() {
                    Some("DONE") => {}
                    Some("FAILED") => self.tally.violation(format!("report task {id} failed")),
                    _ => still.push(id),
                }
            }
            waiting = still;
            if !waiting.is_empty() {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
        waiting
    }
}
