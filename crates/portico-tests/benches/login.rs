//! Complete browser logins per second against the Argon2id limit.
//!
//! `cargo bench -p portico-tests --bench login`. In one run:
//! 1. the baseline: Argon2id verifications per second (Portico's parameters,
//!    19 MiB, t = 2), one thread per core, each working in memory it keeps
//!    as the server's checks do: the ceiling for logins, each of which
//!    checks one password;
//! 2. complete logins against a real server on a loopback port: authorize →
//!    `GET /login` → password → `GET /login` (the SMS code goes out through
//!    the HTTP gateway, here a local receiver) → code → authorize → token.
//!    Every login is a new browser (a new device), so every one takes the
//!    SMS step. The server checks at most `password_hash_concurrency` (=
//!    cores) passwords at once, which bounds its memory.

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
    let hashes = baseline(cores);
    println!("baseline  Argon2id verify  {hashes:>7.1} /s (all cores)");
    for backend in backends() {
        runtime.block_on(logins(backend, cores, hashes));
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

async fn logins(backend: portico_tests::Backend, cores: usize, hashes: f64) {
    let (url, codes) = gateway().await;
    let app = Arc::new(
        TestApp::spawn_with(backend, |c| {
            c.delivery.sms = Some(SmsDelivery::Http);
            c.delivery.sms_gateway_url = Some(url);
            c.delivery.sms_gateway_body = r#"{"to": "{to}", "code": "{code}"}"#.into();
            c.login.password_hash_concurrency = cores as u32;
            c.login.otp_max_codes = 1000;
        })
        .await,
    );
    let hash = portico_crypto::password::hash("bench-password");
    for i in 0..USERS {
        app.store
            .create_user(&User {
                id: portico_model::ids::UserId::random(),
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
            })
            .await
            .expect("user");
    }
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..CONCURRENCY)
        .map(|_| {
            let (app, codes, next) = (Arc::clone(&app), Arc::clone(&codes), Arc::clone(&next));
            tokio::spawn(async move {
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= LOGINS {
                        break;
                    }
                    login(&app, &codes, n % USERS).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("login task");
    }
    let rate = LOGINS as f64 / started.elapsed().as_secs_f64();
    println!("{backend:?}  complete logins  {rate:>7.1} /s  = {:>3.0}% of the Argon2id limit", 100.0 * rate / hashes);
}

/// One complete login of user `i` in a new browser, up to the tokens.
async fn login(app: &TestApp, codes: &Codes, i: usize) {
    let browser = app.browser();
    let pkce = Pkce::new();
    let response = browser.get(app.authorize_url(&pkce, &[])).send().await.expect("authorize");
    assert_eq!(response.status(), 303);
    let page = browser.get(app.url("/login")).send().await.expect("login page").text().await.expect("html");
    let csrf = view_data(&page)["pageData"]["authenticationFlowContext"]["csrf"].as_str().expect("csrf").to_owned();
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
    let back = location(&response);
    assert!(back.starts_with("/oauth2/authorize?"), "{back}");
    let response = browser.get(app.url(&back)).send().await.expect("authorize");
    let code = code_from(&response, &app.redirect_uri());
    let response = app.exchange(&code, &pkce.verifier).await;
    assert_eq!(response.status(), 200);
}
