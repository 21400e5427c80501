//! Signed notification deliveries per second, end to end, next to the
//! receiver's own ceiling.
//!
//! `cargo bench -p portico-tests --bench notifications` (add
//! `PORTICO_TEST_POSTGRES_URL=…` to measure PostgreSQL too). In one run, on
//! this machine, with everything in one process (the load, Portico with its
//! delivery worker, and the receiver share the cores):
//! 1. the baseline: [`CONCURRENCY`] clients POST a notification-sized body
//!    straight to the receiver (a minimal axum handler answering 200);
//! 2. end to end, once for each of [`INTAKE_CLIENTS`] (concurrent intake
//!    clients, each waiting for its 202), on a fresh server: the clients
//!    submit [`EVENTS`] payment events through the internal intake (`POST
//!    /internal/v1/notifications/events/payment`, stored with their delivery
//!    before the 202) for [`MERCHANTS`] merchants; Portico's worker takes
//!    each (handed over by the intake, or claimed), renders it (payment v3),
//!    signs and POSTs it to the receiver and records the attempt. The clock
//!    runs from the first intake request to the receiver's last 200. Also
//!    printed: the process's CPU time per delivery (PostgreSQL's own
//!    processes not counted), how busy the cores were, and how many
//!    deliveries had arrived when the intake ended.

#[path = "common/allocator.rs"]
mod allocator;

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{CONCURRENCY, Http, cpu_seconds, drive, drive_with};
use portico_model::clock::Clock as _;
use portico_model::notify::{DeliveryStatus, MerchantIds, NotificationSettings, OperationTypes};
use portico_tests::{Backend, INTERNAL_TOKEN, TestApp, backends};
use serde_json::json;

const EVENTS: usize = 20_000;
const MERCHANTS: usize = 8;
const BASELINE_REQUESTS: usize = 50_000;
/// Concurrent intake clients, each waiting for its 202: the end-to-end run
/// is repeated at each.
const INTAKE_CLIENTS: [usize; 3] = [32, 64, 128];

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "machine: {cores} cores; baseline concurrency {CONCURRENCY}; intake clients {INTAKE_CLIENTS:?}; {}; \
         {EVENTS} events for {MERCHANTS} merchants",
        std::env::consts::ARCH
    );
    for backend in backends() {
        runtime.block_on(run(backend));
    }
}

/// A fast receiver counting what it was sent.
async fn receiver() -> (String, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&count);
    let app = axum::Router::new().route(
        "/notify/{merchant}",
        axum::routing::post(move |_body: String| {
            counter.fetch_add(1, Ordering::Relaxed);
            async { "ok" }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/notify", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, count)
}

fn payment(n: usize) -> serde_json::Value {
    json!({
        "paymentId": format!("pay-{n}"), "transactionId": n, "orderId": format!("order-{n}"), "amount": 150_050,
        "currency": "RUB", "status": "SUCCESS", "statusDate": "2026-11-22T13:45:00+03:00", "paymentMethod": "SBP",
        "sbpTransactionId": format!("A{n}"), "qrId": format!("QR{n}"), "comment": "Оплата заказа",
        "additionalInfo": null, "extra": {}, "createdAt": "2026-11-22T13:45:01+03:00"
    })
}

async fn run(backend: Backend) {
    let (url, received) = receiver().await;
    let client = Http::new();

    // 1. The receiver's ceiling for plain POSTs of a notification-sized body.
    let body = json!({"event": "PAYMENT", "data": payment(0)}).to_string();
    let target = format!("{url}/m0");
    let (baseline, _) = drive((0..BASELINE_REQUESTS).collect(), {
        let (client, body, target) = (client.clone(), body.clone(), target.clone());
        move |_| {
            let (client, body, target) = (client.clone(), body.clone(), target.clone());
            async move {
                let request = hyper::Request::post(&target)
                    .header("content-type", "application/json")
                    .body(body)
                    .expect("request");
                client.send(request).await;
            }
        }
    })
    .await;

    // 2. End to end, at each intake concurrency.
    for clients in INTAKE_CLIENTS {
        end_to_end(backend, clients, &url, &received, &client, baseline).await;
    }
}

/// Submits [`EVENTS`] events with `clients` concurrent intake clients to a
/// fresh server and waits until the receiver has them all.
async fn end_to_end(backend: Backend, clients: usize, url: &str, received: &AtomicUsize, client: &Http, baseline: f64) {
    let app = TestApp::spawn_with(backend, |c| {
        c.database_max_connections = 16;
        c.notifications.allow_insecure_callbacks = Some(true);
    })
    .await;
    for m in 0..MERCHANTS {
        let ids = MerchantIds {
            merchant_id: format!("m{m}"),
            public_id: format!("pub-m{m}"),
            sbp_merchant_id: format!("MA{m:010}"),
        };
        portico_notify::merchants::create(app.store.as_ref(), &app.notify.sealer, ids, app.clock.now())
            .await
            .expect("merchant");
        let settings =
            NotificationSettings { callback_url: format!("{url}/m{m}"), operation_types: OperationTypes::default() };
        app.store.save_notification_settings(&format!("m{m}"), &settings).await.expect("settings");
    }
    received.store(0, Ordering::SeqCst);
    let intake = app.url("/internal/v1/notifications/events/payment");
    let started = Instant::now();
    let cpu = cpu_seconds();
    let (intake_rate, _) = drive_with(clients, (0..EVENTS).collect(), {
        let client = client.clone();
        move |n: usize| {
            let (client, intake) = (client.clone(), intake.clone());
            async move {
                let body = json!({"eventId": format!("ev-{n}"), "merchantId": format!("m{}", n % MERCHANTS), "event": payment(n)});
                let request = hyper::Request::post(&intake)
                    .header("content-type", "application/json")
                    .header("authorization", format!("Bearer {INTERNAL_TOKEN}"))
                    .body(body.to_string())
                    .expect("request");
                assert_eq!(client.status(request).await, 202, "intake failed");
            }
        }
    })
    .await;
    let (intake_done, delivered_by_then) = (started.elapsed(), received.load(Ordering::SeqCst));
    let deadline = Instant::now() + Duration::from_secs(600);
    while received.load(Ordering::SeqCst) < EVENTS {
        assert!(Instant::now() < deadline, "deliveries did not finish");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let elapsed = started.elapsed();
    let cpu = cpu_seconds() - cpu;
    let rate = EVENTS as f64 / elapsed.as_secs_f64();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let busy = 100.0 * cpu / elapsed.as_secs_f64() / cores as f64;
    // Every delivery recorded as delivered (the recorder may trail the
    // receiver's count by a batch).
    let mut delivered = 0;
    for _ in 0..500 {
        delivered = 0;
        for m in 0..MERCHANTS {
            let (_, count) = app
                .store
                .list_deliveries(&format!("m{m}"), Some(DeliveryStatus::Delivered), 0, 1)
                .await
                .expect("deliveries");
            delivered += count;
        }
        if delivered as usize == EVENTS {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(delivered as usize, EVENTS, "every delivery recorded");
    let target = (baseline * 0.5).min(5_000.0);
    println!(
        "{backend:?}, {clients:>3} intake clients: receiver baseline {baseline:.0} POST/s; intake {intake_rate:.0} events/s; \
         end to end {rate:.0} deliveries/s = {:.0} % of the baseline (target {target:.0}/s: {}); \
         {:.0} µs CPU per delivery in this process, cores {busy:.0}% busy; \
         {delivered_by_then} delivered when the intake ended after {:.2} s",
        100.0 * rate / baseline,
        if rate >= target { "met" } else { "NOT met" },
        cpu / EVENTS as f64 * 1e6,
        intake_done.as_secs_f64()
    );
}
