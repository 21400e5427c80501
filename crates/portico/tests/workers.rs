//! Notification workers as real processes (`portico worker`) on both
//! backends: one killed with SIGKILL while sending loses nothing; two
//! sharing a database deliver thousands of events, none of them twice at
//! once.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use portico_model::clock::{Clock as _, SystemClock};
use portico_model::notify::{DeliveryStatus, MerchantIds};
use portico_tests::{TestApp, backends};

mod common;

use common::Worker;

/// A merchant's endpoint that verifies every notification and remembers
/// what arrived, from where, and what was in flight at once.
#[derive(Default)]
struct Receiver {
    /// Merchant public id → API key.
    keys: HashMap<String, String>,
    /// How long each answer takes.
    delay: Duration,
    seen: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    /// Order id → times it arrived.
    received: HashMap<String, u32>,
    /// While set, no answer leaves the receiver.
    hold: bool,
    in_flight: HashSet<String>,
    /// Orders that arrived while the same order was still in flight.
    overlaps: Vec<String>,
    /// Source addresses the notifications came from.
    sources: HashSet<std::net::IpAddr>,
    bad_signatures: u32,
}

impl Receiver {
    fn total(&self) -> u32 {
        self.seen.lock().unwrap().received.values().sum()
    }
}

async fn receive(
    State(receiver): State<Arc<Receiver>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    axum::extract::Path(public_id): axum::extract::Path<String>,
    headers: HeaderMap,
    body: String,
) -> StatusCode {
    let signature = headers.get("x-api-signature-sha256").and_then(|v| v.to_str().ok()).unwrap_or("");
    let key = receiver.keys.get(&public_id).map(String::as_str).unwrap_or("");
    let order = order_of(&body);
    {
        let mut seen = receiver.seen.lock().unwrap();
        if portico_webhook::verify(body.as_bytes(), signature, key.as_bytes(), &public_id).is_err() {
            seen.bad_signatures += 1;
            return StatusCode::UNAUTHORIZED;
        }
        seen.sources.insert(peer.ip());
        *seen.received.entry(order.clone()).or_default() += 1;
        if !seen.in_flight.insert(order.clone()) {
            seen.overlaps.push(order.clone());
        }
    }
    // Leaves the in-flight set however the handler ends (a sender that
    // hangs up cancels it).
    let in_flight = InFlight(Arc::clone(&receiver), order);
    tokio::time::sleep(receiver.delay).await;
    loop {
        {
            // Checked and left under one lock: an answer either goes out
            // before a hold starts or after it ends.
            let mut seen = receiver.seen.lock().unwrap();
            if !seen.hold {
                seen.in_flight.remove(&in_flight.1);
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    StatusCode::OK
}

struct InFlight(Arc<Receiver>, String);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.seen.lock().unwrap().in_flight.remove(&self.1);
    }
}

/// The order id (`ord-…`) a payment notification carries.
fn order_of(body: &str) -> String {
    let start = body.find("ord-").expect("an order id");
    let end = body[start..].find('"').map_or(body.len(), |n| start + n);
    body[start..end].to_owned()
}

/// A loopback listener for the receiver and its base URL; the URL is
/// needed before the receiver (which needs the keys) can be built.
async fn bind() -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/notify", listener.local_addr().unwrap());
    (listener, url)
}

fn serve(listener: tokio::net::TcpListener, receiver: &Arc<Receiver>) {
    let router =
        axum::Router::new().route("/notify/{public_id}", axum::routing::post(receive)).with_state(Arc::clone(receiver));
    tokio::spawn(
        async move { axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>()).await },
    );
}

/// Merchants `m0..m{merchants}` with callbacks to `url`, and `per_merchant`
/// payment events each, due now. Returns the receiver's key table.
async fn seed(app: &TestApp, url: &str, merchants: usize, per_merchant: usize) -> HashMap<String, String> {
    let now = SystemClock.now().replace_nanosecond(0).unwrap();
    let mut keys = HashMap::new();
    for m in 0..merchants {
        let ids = MerchantIds {
            merchant_id: format!("m{m}"),
            public_id: format!("pub{m}"),
            sbp_merchant_id: format!("MA{m:010}"),
        };
        let key = common::merchant(app, &ids, format!("{url}/{}", ids.public_id), now).await;
        keys.insert(ids.public_id, key);
        for n in 0..per_merchant {
            let (transaction, amount) = (i64::try_from(m * 1_000_000 + n).unwrap(), 10_000 + i64::try_from(n).unwrap());
            common::payment_due(app, &ids.merchant_id, &format!("ord-{m}-{n}"), transaction, amount, now).await;
        }
    }
    keys
}

/// Every order of [`seed`].
fn orders(merchants: usize, per_merchant: usize) -> HashSet<String> {
    (0..merchants).flat_map(|m| (0..per_merchant).map(move |n| format!("ord-{m}-{n}"))).collect()
}

/// Waits (up to `limit`) until every delivery of the merchants is delivered.
async fn all_delivered(app: &TestApp, merchants: usize, expected: u64, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        let mut delivered = 0;
        for m in 0..merchants {
            let (_, count) =
                app.store.list_deliveries(&format!("m{m}"), Some(DeliveryStatus::Delivered), 0, 1).await.unwrap();
            delivered += count;
        }
        if delivered == expected {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// A worker delivering notifications from the loopback address `source`.
fn notifier(app: &TestApp, source: &str) -> Worker {
    Worker::start(
        app,
        &[
            ("PORTICO_NOTIFICATIONS__ALLOW_INSECURE_CALLBACKS", "true"),
            ("PORTICO_NOTIFICATIONS__DELIVERY_INTERVAL_MS", "50"),
            ("PORTICO_NOTIFICATIONS__TIMEOUT_MS", "1000"),
            ("PORTICO_NOTIFICATIONS__LEASE_SECS", "2"),
            ("PORTICO_NOTIFICATIONS__SOURCE_ADDRESS", source),
        ],
    )
}

async fn app(backend: portico_tests::Backend) -> TestApp {
    TestApp::spawn_with(backend, |c| {
        c.notifications.deliver = false;
        c.notifications.allow_insecure_callbacks = Some(true);
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_send_loses_nothing() {
    for backend in backends() {
        let app = app(backend).await;
        let (merchants, per_merchant) = (2, 150);
        let (listener, url) = bind().await;
        let keys = seed(&app, &url, merchants, per_merchant).await;
        let receiver = Arc::new(Receiver { keys, delay: Duration::from_millis(40), ..Receiver::default() });
        serve(listener, &receiver);

        let mut worker = notifier(&app, "127.0.0.1");
        // Kill it while notifications are on the wire.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        let in_flight_at_kill = loop {
            assert!(tokio::time::Instant::now() < deadline, "{backend:?}: the worker sent too little");
            {
                let mut seen = receiver.seen.lock().unwrap();
                let total: u32 = seen.received.values().sum();
                if total >= 40 && !seen.in_flight.is_empty() {
                    // From here no answer leaves: what is in flight now
                    // is never acknowledged to this worker.
                    seen.hold = true;
                    break seen.in_flight.clone();
                }
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        worker.kill();
        assert!(receiver.total() < 300, "{backend:?}: killed part-way");
        receiver.seen.lock().unwrap().hold = false;

        let _restarted = notifier(&app, "127.0.0.1");
        let expected = u64::try_from(merchants * per_merchant).unwrap();
        assert!(all_delivered(&app, merchants, expected, Duration::from_secs(90)).await, "{backend:?}: all delivered");
        let seen = receiver.seen.lock().unwrap();
        let received: HashSet<String> = seen.received.keys().cloned().collect();
        assert_eq!(received, orders(merchants, per_merchant), "{backend:?}: every event arrived");
        for order in &in_flight_at_kill {
            assert!(seen.received[order] >= 2, "{backend:?}: {order} was on the wire at the kill and is sent again");
        }
        assert_eq!(seen.bad_signatures, 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_worker_processes_share_thousands_of_deliveries_and_never_send_one_twice_at_once() {
    for backend in backends() {
        let app = app(backend).await;
        let (merchants, per_merchant) = (4, 500);
        let (listener, url) = bind().await;
        let keys = seed(&app, &url, merchants, per_merchant).await;
        let receiver = Arc::new(Receiver { keys, delay: Duration::from_millis(1), ..Receiver::default() });
        serve(listener, &receiver);

        // Each worker sends from its own loopback address, so the receiver
        // sees which one sent what.
        let mut first = notifier(&app, "127.0.0.1");
        let mut second = notifier(&app, "127.0.0.2");
        let expected = u64::try_from(merchants * per_merchant).unwrap();
        assert!(all_delivered(&app, merchants, expected, Duration::from_secs(120)).await, "{backend:?}: all delivered");
        assert!(first.is_running() && second.is_running());
        let seen = receiver.seen.lock().unwrap();
        assert_eq!(seen.overlaps, Vec::<String>::new(), "{backend:?}: sent twice at once");
        assert_eq!(seen.received.len(), merchants * per_merchant, "{backend:?}: every event arrived");
        let twice: Vec<_> = seen.received.iter().filter(|(_, n)| **n > 1).collect();
        assert!(twice.is_empty(), "{backend:?}: sent more than once: {twice:?}");
        let sources: HashSet<String> = seen.sources.iter().map(ToString::to_string).collect();
        assert_eq!(sources, HashSet::from(["127.0.0.1".to_owned(), "127.0.0.2".to_owned()]), "both workers sent");
        assert_eq!(seen.bad_signatures, 0);
    }
}
