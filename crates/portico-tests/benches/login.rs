//! Complete browser logins per second against the Argon2id limit.
//!
//! `cargo bench -p portico-tests --bench login`. In one run:
//! 1. the baseline: Argon2id verifications per second (Portico's parameters,
//!    19 MiB, t = 2), one thread per core, each working in memory it keeps
//!    as the server's checks do: the ceiling for logins, each of which
//!    checks one password. It is measured just before and just after each
//!    backend's password logins, and their mean is that backend's limit:
//!    the machine's speed drifts within a run (by a fifth between minutes
//!    on a shared host), and a baseline taken once at the start would move
//!    every later figure with it;
//! 2. complete logins against a real server on a loopback port: authorize →
//!    `GET /login` → password → `GET /login` (the SMS code goes out through
//!    the HTTP gateway, here a local receiver) → code → authorize → token.
//!    Every login is a new browser (a new device), so every one takes the
//!    SMS step. The server checks at most `password_hash_concurrency` (=
//!    cores) passwords at once, which bounds its memory. (The offer to
//!    create a passkey is off here: it would be a step more.)
//! 3. as many complete passkey logins of the same users on the same server:
//!    authorize → `GET /login` → `POST /login/passkey/options` → the
//!    software authenticator signs → `POST /login/passkey` → authorize →
//!    token, no code sent.
//!
//! For 2 and 3 the process's CPU time (server and browsers; PostgreSQL's
//! own not counted) per login is compared: the goal is a passkey login at
//! least 5× cheaper than a password and a code.

#[path = "common/allocator.rs"]
mod allocator;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::routing::post;
use portico_model::user::User;
use portico_server::config::SmsDelivery;
use portico_tests::authenticator::Authenticator;
use portico_tests::{Pkce, TestApp, backends, code_from, location, view_data};

const USERS: usize = 64;
const CONCURRENCY: usize = 8;
const LOGINS: usize = 300;
const BASELINE_TIME: Duration = Duration::from_secs(5);

type Codes = Arc<Mutex<HashMap<String, String>>>;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("machine: {cores} cores; {CONCURRENCY} browsers at once; {}", std::env::consts::ARCH);
    for backend in backends() {
        runtime.block_on(logins(backend, cores));
    }
}

fn baseline(cores: usize) -> f64 {
    let stored = portico_crypto::password::hash("bench-password");
    let done = AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..cores {
            scope.spawn(|| {
                // As the server does: each thread works in memory it keeps.
                let mut memory = portico_crypto::password::Memory::new();
                while started.elapsed() < BASELINE_TIME {
                    assert!(portico_crypto::password::verify_in(&mut memory, &stored, "bench-password"));
                    done.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

async fn gateway() -> (String, Codes) {
    let codes: Codes = Arc::default();
    let app = axum::Router::new()
        .route(
            "/sms",
            post(|State(codes): State<Codes>, body: String| async move {
                let message: serde_json::Value = serde_json::from_str(&body).expect("JSON");
                let to = message["to"].as_str().expect("to").to_owned();
                codes.lock().unwrap().insert(to, message["code"].as_str().expect("code").to_owned());
            }),
        )
        .with_state(Arc::clone(&codes));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/sms", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, codes)
}

async fn logins(backend: portico_tests::Backend, cores: usize) {
    let (url, codes) = gateway().await;
    let app = Arc::new(
        TestApp::spawn_with(backend, |c| {
            // On `localhost`: WebAuthn takes no IP address.
            c.public_url = c.public_url.as_ref().map(|u| u.replace("127.0.0.1", "localhost"));
            c.login.offer_passkey = false;
            c.delivery.sms = Some(SmsDelivery::Http);
            c.delivery.sms_gateway_url = Some(url);
            c.delivery.sms_gateway_body = r#"{"to": "{to}", "code": "{code}"}"#.into();
            c.login.password_hash_concurrency = cores as u32;
            c.login.otp_max_codes = 1000;
        })
        .await,
    );
    let hash = portico_crypto::password::hash("bench-password");
    let mut ids = Vec::new();
    for i in 0..USERS {
        let id = portico_model::ids::UserId::random();
        ids.push(id);
        app.store
            .create_user(&User {
                id,
                login: format!("bench{i}"),
                password_hash: hash.clone(),
                phone: Some(format!("+7901{i:07}")),
                email: None,
                name: None,
                phone_login_enabled: true,
                blocked: false,
                deactivated: false,
                created_at: time::OffsetDateTime::now_utc(),
                provisioned: None,
                revision: 0,
            })
            .await
            .expect("user");
    }
    let before = tokio::task::block_in_place(|| baseline(cores));
    let cpu = cpu_time();
    let started = Instant::now();
    let (shared, sent) = (Arc::clone(&app), Arc::clone(&codes));
    run(move |n| {
        let (app, codes) = (Arc::clone(&shared), Arc::clone(&sent));
        async move { login(&app, &codes, n % USERS).await }
    })
    .await;
    let rate = LOGINS as f64 / started.elapsed().as_secs_f64();
    let password_cpu = (cpu_time() - cpu).as_secs_f64() * 1000.0 / LOGINS as f64;
    let after = tokio::task::block_in_place(|| baseline(cores));
    let hashes = f64::midpoint(before, after);
    println!(
        "{backend:?}  baseline  Argon2id verify  {hashes:>7.1} /s (all cores; {before:.1} before, {after:.1} after)"
    );
    println!("{backend:?}  complete logins  {rate:>7.1} /s  = {:>3.0}% of the Argon2id limit", 100.0 * rate / hashes);

    // Every user keeps a passkey, enrolled straight through the relying party.
    let origin = app.config.public_url.clone().expect("public URL");
    let mut keys = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let login = format!("bench{i}");
        let started = app.identity.passkeys.start_enrolment(*id, &login, &login, &[]).expect("options");
        let authenticator = Authenticator::for_rp(*id, "localhost");
        let answer = authenticator.create(&started.options, &origin);
        let now = time::OffsetDateTime::now_utc();
        app.identity
            .passkeys
            .finish_enrolment(&*app.store, *id, &started.state, &answer, "Bench", now)
            .await
            .expect("enrol");
        keys.push(tokio::sync::Mutex::new(authenticator));
    }
    let keys = Arc::new(keys);
    let cpu = cpu_time();
    let started = Instant::now();
    let (shared, at) = (Arc::clone(&app), origin.clone());
    run(move |n| {
        let (app, keys, origin) = (Arc::clone(&shared), Arc::clone(&keys), at.clone());
        async move { passkey_login(&app, &keys[n % USERS], &origin).await }
    })
    .await;
    let passkey_rate = LOGINS as f64 / started.elapsed().as_secs_f64();
    let passkey_cpu = (cpu_time() - cpu).as_secs_f64() * 1000.0 / LOGINS as f64;
    println!("{backend:?}  passkey logins   {passkey_rate:>7.1} /s");
    println!(
        "{backend:?}  CPU per login: password + code {password_cpu:>6.2} ms, passkey {passkey_cpu:>6.2} ms: {:.1}x cheaper (goal 5x)",
        password_cpu / passkey_cpu
    );
}

/// Runs `LOGINS` logins, `CONCURRENCY` at once: `one(n)` is the `n`th.
async fn run<F, Fut>(one: F)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (next, one) = (Arc::new(AtomicUsize::new(0)), Arc::new(one));
    let tasks: Vec<_> = (0..CONCURRENCY)
        .map(|_| {
            let (next, one) = (Arc::clone(&next), Arc::clone(&one));
            tokio::spawn(async move {
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= LOGINS {
                        break;
                    }
                    one(n).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("login task");
    }
}

/// The process's CPU time so far (user and system), from
/// `/proc/self/stat` (in the kernel's USER_HZ, 100 per second).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    let fields: Vec<&str> = stat[stat.rfind(')').expect("comm") + 2..].split(' ').collect();
    let ticks = |i: usize| fields[i].parse::<u64>().expect("ticks");
    // After the command: state is field 3, utime 14, stime 15.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// One complete passkey login with `key` in a new browser, up to the
/// tokens. The user's authenticator is held for the whole login: its
/// counter must reach the server in order.
async fn passkey_login(app: &TestApp, key: &tokio::sync::Mutex<Authenticator>, origin: &str) {
    let mut key = key.lock().await;
    let (browser, pkce, csrf) = first_page(app).await;
    let response =
        browser.post(app.url("/login/passkey/options")).header("x-xsrf-token", &csrf).send().await.expect("options");
    let options: serde_json::Value = response.json().await.expect("options JSON");
    let credential = key.get(&options, origin, 1);
    let response = browser
        .post(app.url("/login/passkey"))
        .form(&[("_csrf", csrf.as_str()), ("credential", credential.as_str())])
        .send()
        .await
        .expect("passkey");
    tokens(app, &browser, &pkce, &location(&response)).await;
}

/// One complete login of user `i` in a new browser, up to the tokens.
async fn login(app: &TestApp, codes: &Codes, i: usize) {
    let (browser, pkce, csrf) = first_page(app).await;
    let login = format!("bench{i}");
    let response = browser
        .post(app.url("/login"))
        .form(&[("_csrf", csrf.as_str()), ("principal", &login), ("credentials", "bench-password")])
        .send()
        .await
        .expect("password");
    assert_eq!(location(&response), "/login");
    let page = browser.get(app.url("/login")).send().await.expect("SMS page");
    assert_eq!(page.status(), 200);
    let code = codes.lock().unwrap().get(&format!("+7901{i:07}")).cloned().expect("a code");
    let response = browser
        .post(app.url("/login"))
        .form(&[("_csrf", csrf.as_str()), ("credentials", &code)])
        .send()
        .await
        .expect("code");
    tokens(app, &browser, &pkce, &location(&response)).await;
}

/// A new browser at the first page of a login: it, its PKCE and the CSRF token.
async fn first_page(app: &TestApp) -> (reqwest::Client, Pkce, String) {
    let browser = app.browser();
    let pkce = Pkce::new();
    let response = browser.get(app.authorize_url(&pkce, &[])).send().await.expect("authorize");
    assert_eq!(response.status(), 303);
    let page = browser.get(app.url("/login")).send().await.expect("login page").text().await.expect("html");
    let csrf = view_data(&page)["pageData"]["authenticationFlowContext"]["csrf"].as_str().expect("csrf").to_owned();
    (browser, pkce, csrf)
}

/// The end of a completed login whose last answer led to `back`: the code
/// and the tokens.
async fn tokens(app: &TestApp, browser: &reqwest::Client, pkce: &Pkce, back: &str) {
    assert!(back.starts_with("/oauth2/authorize?"), "{back}");
    let response = browser.get(app.url(back)).send().await.expect("authorize");
    let code = code_from(&response, &app.redirect_uri());
    let response = app.exchange(&code, &pkce.verifier).await;
    assert_eq!(response.status(), 200);
}
