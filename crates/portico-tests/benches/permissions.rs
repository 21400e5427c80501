//! Permission look-ups per second and their p99 latency, for a company of
//! 1,000 employees, next to a static endpoint of the same server.
//!
//! `cargo bench -p portico-tests --bench permissions` (add
//! `PORTICO_TEST_POSTGRES_URL=…` to measure PostgreSQL too). In one run and
//! against one real server on a loopback port, with [`CONCURRENCY`]
//! concurrent clients in the same process:
//! 1. the baseline: `GET /healthz`, which touches neither tokens nor storage;
//! 2. `GET /api/v2/permissions`;
//! 3. `GET /api/v2/permissions/{obj}/{cnum}`.
//!
//! Each permission request carries a real access token and id_token (two
//! RS256 verifications and the revocation read) of one of 100 employees.

#[path = "common/allocator.rs"]
mod allocator;

mod common;

use std::time::{Duration, Instant};

use common::{CONCURRENCY, Cpu, Http, drive};
use portico_tests::{Backend, TestApp, TokenPair, backends};
use serde_json::json;

const EMPLOYEES: usize = 1000;
const CALLERS: usize = 100;
const REQUESTS: usize = 30_000;
const CNUM: &str = "7800000001";

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("machine: {cores} cores; concurrency {CONCURRENCY}; {}; {EMPLOYEES} employees", std::env::consts::ARCH);
    for backend in backends() {
        runtime.block_on(run(backend));
    }
}

async fn run(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| {
        c.database_max_connections = 16;
        c.database_cache_staleness_ms = common::staleness_ms();
    })
    .await;
    let roles = ["ACCOUNTANT", "OPERATOR"];
    let mut employees = vec![json!({"user": "ivan", "cnum": CNUM, "role": "EIO"})];
    for i in 1..EMPLOYEES {
        let login = format!("employee{i}");
        app.add_user(&login).await;
        employees.push(json!({"user": login, "cnum": CNUM, "role": roles[i % 2]}));
    }
    let doc = json!({
        "companies": [{"cnum": CNUM, "name": "ООО «Большая»", "contractStatus": "ACTIVE"}],
        "employees": employees,
    });
    let response = app.apply_permissions(&doc).await;
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap_or_default());
    let mut callers: Vec<TokenPair> = Vec::with_capacity(CALLERS);
    for i in 1..=CALLERS {
        callers.push(app.token_pair(&format!("employee{i}")).await);
    }

    let client = Http::new();
    let requests: Vec<usize> = (0..REQUESTS).collect();
    let measure = |url: String, authenticated: bool| {
        let (client, callers, requests) = (client.clone(), callers.clone(), requests.clone());
        async move {
            let cpu = Cpu::now();
            let (rate, mut latencies) = drive(requests, move |i| {
                let (client, url, pair) = (client.clone(), url.clone(), callers[i % CALLERS].clone());
                async move {
                    let bearer = format!("Bearer {}", pair.access_token);
                    let headers: Vec<(&str, &str)> = if authenticated {
                        vec![("authorization", &bearer), ("id-token", &pair.id_token), ("x-system-id", "bench")]
                    } else {
                        Vec::new()
                    };
                    let started = Instant::now();
                    client.get(&url, &headers).await;
                    started.elapsed()
                }
            })
            .await;
            let cpu = cpu.since();
            latencies.sort_unstable();
            let count = latencies.len() as f64;
            (rate, latencies[latencies.len() * 99 / 100], (cpu.process / count, cpu.database / count))
        }
    };
    let (base, base_p99, cpu) = measure(app.url("/healthz"), false).await;
    report(backend, "GET /healthz (baseline)", base, base_p99, cpu, None);
    let (full, full_p99, cpu) = measure(app.url("/api/v2/permissions"), true).await;
    report(backend, "GET /api/v2/permissions", full, full_p99, cpu, Some(base));
    let (one, one_p99, cpu) = measure(app.url(&format!("/api/v2/permissions/payments/{CNUM}")), true).await;
    report(backend, "GET /api/v2/permissions/{obj}/{cnum}", one, one_p99, cpu, Some(base));
}

/// Prints a figure with the CPU each request took in this process and, on
/// PostgreSQL, in the database server.
fn report(backend: Backend, name: &str, rate: f64, p99: Duration, cpu: (f64, f64), baseline: Option<f64>) {
    let share = baseline.map(|b| format!("  = {:>3.0}% of the baseline", 100.0 * rate / b)).unwrap_or_default();
    let database = match backend {
        Backend::Postgres => format!(", PostgreSQL server {:.0} µs", cpu.1 * 1e6),
        Backend::Sqlite => String::new(),
    };
    println!(
        "{backend:?}  {name:<38} {rate:>8.0} /s  p99 {:>6.2} ms{share}  (CPU each: {:.0} µs{database})",
        p99.as_secs_f64() * 1000.0,
        cpu.0 * 1e6
    );
}
