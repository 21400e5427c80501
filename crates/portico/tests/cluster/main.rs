//! Several nodes as one service, under failure: three `portico serve`
//! nodes and one `portico worker` on one PostgreSQL server and one S3 store
//! (moto), behind a round-robin balancer that sends each request to the
//! next node, so every step of a browser login lands on another node than
//! the step before. Under steady load (logins, refresh chains, permission
//! reads, report tasks, payment events) nodes are killed with SIGKILL and
//! started again, one node is cut off from PostgreSQL, PostgreSQL crashes
//! and restarts, and the worker is killed. Asserted: every acknowledged
//! event is delivered, every accepted report task finishes, no refresh
//! chain breaks except by design (a replay after a broken connection), no
//! login is lost unless a failure hit it, nothing is answered with a server error
//! other than 503, and every node is ready again within a bound. At the
//! end, a node killed while it checks 16 passwords leaves their counts
//! unreported: they put the address behind a CAPTCHA only until
//! `login.unreported_attempt_secs` has passed.
//!
//! Needs `PORTICO_TEST_PG_BIN` (PostgreSQL's `bin` folder: the test runs a
//! server of its own, to restart it) and `PORTICO_TEST_MOTO`; skipped
//! without them. One round of failures by default (a few minutes);
//! `PORTICO_CLUSTER_SECS=600` repeats rounds for that long
//! (`scripts/cluster`).

mod load;
mod topology;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use load::{LOGINS, Load};
use serde_json::Value;
use topology::{Balancer, Node, Postgres, S3, free_port};

/// How long a node may take to be ready again after its restart, a
/// restored network path or a PostgreSQL restart.
const RECOVERY_LIMIT: Duration = Duration::from_secs(30);

/// `login.unreported_attempt_secs` of every node.
const UNREPORTED_SECS: &str = "5";

/// How long after the load stops the worker has to deliver what was
/// acknowledged and finish what was accepted.
const DRAIN: Duration = Duration::from_secs(90);

struct Cluster {
    postgres: Postgres,
    nodes: Vec<Node>,
    worker: Node,
    _s3: S3,
    _dir: portico_tests::TempDir,
}

/// The settings every process shares.
fn shared_env(public_url: &str, s3: &S3, sms_url: &str) -> Vec<(String, String)> {
    [
        ("PORTICO_PUBLIC_URL", public_url),
        ("PORTICO_SECRET_KEY", "Y2x1c3Rlci10ZXN0LW9ubHktMzItYnl0ZXMtbG9uZyE="),
        ("PORTICO_ADMIN_TOKEN", portico_tests::ADMIN_TOKEN),
        ("PORTICO_INTERNAL_TOKEN", portico_tests::INTERNAL_TOKEN),
        ("PORTICO_LOG", "warn"),
        ("PORTICO_DATABASE_MAX_CONNECTIONS", "8"),
        ("PORTICO_DATABASE_ACQUIRE_TIMEOUT_SECS", "2"),
        ("PORTICO_DELIVERY__SMS", "http"),
        ("PORTICO_DELIVERY__SMS_GATEWAY_URL", sms_url),
        ("PORTICO_DELIVERY__EMAIL", "outbox"),
        ("PORTICO_CAPTCHA__KIND", "dev"),
        // Password attempts counted on a node killed before their check
        // stop counting after this long (shown at the end of the run).
        ("PORTICO_LOGIN__UNREPORTED_ATTEMPT_SECS", UNREPORTED_SECS),
        // Four users stand for every browser of the load, each opening
        // hundreds of sessions: at the default bound of a user's sessions
        // the oldest would end as logouts do, grants with them.
        ("PORTICO_LOGIN__MAX_SESSIONS_PER_USER", "100000"),
        ("PORTICO_REPORTS__S3__BUCKET", "portico-reports"),
        ("PORTICO_REPORTS__S3__ENDPOINT", &s3.url),
        ("PORTICO_REPORTS__S3__ALLOW_HTTP", "true"),
        ("PORTICO_REPORTS__S3__REGION", "eu-central-1"),
        ("PORTICO_REPORTS__S3__ACCESS_KEY_ID", "cluster-test"),
        ("PORTICO_REPORTS__S3__SECRET_ACCESS_KEY", "cluster-test-secret"),
        ("PORTICO_NOTIFICATIONS__ALLOW_INSECURE_CALLBACKS", "true"),
        ("PORTICO_NOTIFICATIONS__DELIVER", "false"),
        ("PORTICO_REPORTS__GENERATE", "false"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect()
}

/// An HTTP endpoint on a loopback port handing each body to `handle`.
async fn endpoint(handle: impl Fn(&str) + Clone + Send + Sync + 'static) -> String {
    let app = axum::Router::new().route(
        "/",
        axum::routing::post(move |body: String| {
            let handle = handle.clone();
            async move {
                handle(&body);
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

impl Cluster {
    async fn start(pg_bin: &str, moto: &str, load: &Arc<Load>, balancer: SocketAddr) -> Self {
        let dir = portico_tests::TempDir::new();
        let postgres = tokio::task::spawn_blocking({
            let bin = std::path::PathBuf::from(pg_bin);
            move || Postgres::start(&bin)
        })
        .await
        .expect("start PostgreSQL");
        let s3 = S3::start(moto, "portico-reports").await;
        let sms = {
            let load = Arc::clone(load);
            endpoint(move |body| load.sms.record(&serde_json::from_str(body).unwrap_or(Value::Null))).await
        };
        let env = shared_env(&format!("http://{balancer}"), &s3, &sms);
        let mut nodes = Vec::new();
        for i in 1..=3 {
            let addr: SocketAddr = ([127, 0, 0, 1], free_port()).into();
            let database = portico_tests::TcpProxy::start(format!("127.0.0.1:{}", postgres.port)).await;
            let mut node_env = env.clone();
            node_env.extend([
                ("PORTICO_LISTEN".to_owned(), addr.to_string()),
                ("PORTICO_DATABASE_URL".to_owned(), database.url_through(&postgres.url())),
                ("PORTICO_DATA_DIR".to_owned(), dir.0.join(format!("node-{i}")).display().to_string()),
            ]);
            nodes.push(Node::new(&format!("node-{i}"), &["serve", "--demo"], node_env, Some(addr), database, &dir.0));
        }
        let database = portico_tests::TcpProxy::start(format!("127.0.0.1:{}", postgres.port)).await;
        let mut worker_env = env;
        worker_env.extend(
            [
                ("PORTICO_DATABASE_URL", database.url_through(&postgres.url())),
                ("PORTICO_DATA_DIR", dir.0.join("worker").display().to_string()),
                ("PORTICO_NOTIFICATIONS__DELIVER", "true".into()),
                ("PORTICO_NOTIFICATIONS__DELIVERY_INTERVAL_MS", "100".into()),
                ("PORTICO_NOTIFICATIONS__TIMEOUT_MS", "2000".into()),
                ("PORTICO_NOTIFICATIONS__LEASE_SECS", "5".into()),
                ("PORTICO_NOTIFICATIONS__RETRY_WAITS_SECS", "[1, 2, 3, 5]".into()),
                ("PORTICO_REPORTS__GENERATE", "true".into()),
                ("PORTICO_REPORTS__INTERVAL_MS", "100".into()),
                ("PORTICO_REPORTS__LEASE_SECS", "10".into()),
            ]
            .map(|(k, v)| (k.to_owned(), v)),
        );
        let worker = Node::new("worker", &["worker"], worker_env, None, database, &dir.0);
        let mut cluster = Self { postgres, nodes, worker, _s3: s3, _dir: dir };
        // The first node seeds the demo data set; the others find it there.
        cluster.nodes[0].start();
        cluster.ready(0, "node-1's first start").await;
        for i in 1..3 {
            cluster.nodes[i].start();
        }
        for i in 1..3 {
            cluster.ready(i, "first start").await;
        }
        cluster.worker.start();
        cluster
    }

    /// Waits for node `i` to be ready; how long it took.
    async fn ready(&mut self, i: usize, after: &str) -> Duration {
        match self.nodes[i].ready_within(RECOVERY_LIMIT).await {
            Some(took) => took,
            None => panic!(
                "{} was not ready within {RECOVERY_LIMIT:?} after {after}:\n{}",
                self.nodes[i].name,
                self.nodes[i].log_tail()
            ),
        }
    }
}

/// One round of failures under the load; what each recovery took.
async fn round(cluster: &mut Cluster, recoveries: &mut Vec<(String, Duration)>) {
    let pause = tokio::time::sleep;
    pause(Duration::from_secs(6)).await;
    cluster.nodes[1].kill();
    pause(Duration::from_secs(3)).await;
    cluster.nodes[1].start();
    let took = cluster.ready(1, "its restart").await;
    recoveries.push(("node-2 killed (SIGKILL), started again: ready".into(), took));

    pause(Duration::from_secs(5)).await;
    cluster.nodes[2].database.cut();
    pause(Duration::from_secs(6)).await;
    cluster.nodes[2].database.restore();
    let took = cluster.ready(2, "its way to PostgreSQL came back").await;
    recoveries.push(("node-3 cut off from PostgreSQL for 6 s: ready".into(), took));

    pause(Duration::from_secs(5)).await;
    let crashed = Instant::now();
    tokio::task::block_in_place(|| cluster.postgres.restart());
    let mut slowest = Duration::ZERO;
    for i in 0..3 {
        cluster.ready(i, "PostgreSQL's restart").await;
        slowest = crashed.elapsed();
    }
    recoveries.push(("PostgreSQL crashed (immediate stop) and restarted: every node ready".into(), slowest));

    pause(Duration::from_secs(4)).await;
    cluster.worker.kill();
    pause(Duration::from_secs(2)).await;
    cluster.worker.start();

    pause(Duration::from_secs(4)).await;
    cluster.nodes[0].kill();
    pause(Duration::from_secs(3)).await;
    cluster.nodes[0].start();
    let took = cluster.ready(0, "its restart").await;
    recoveries.push(("node-1 killed (SIGKILL), started again: ready".into(), took));
    pause(Duration::from_secs(4)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_and_a_worker_lose_nothing_acknowledged_while_nodes_die_and_postgresql_restarts() {
    let (Ok(pg_bin), Ok(moto)) = (std::env::var("PORTICO_TEST_PG_BIN"), std::env::var("PORTICO_TEST_MOTO")) else {
        portico_tests::skipped(
            "PORTICO_TEST_PG_BIN (PostgreSQL's bin folder) or PORTICO_TEST_MOTO is not set; the cluster test \
             needs both",
        );
        return;
    };
    let long_for = std::env::var("PORTICO_CLUSTER_SECS").ok().and_then(|s| s.parse().ok()).map(Duration::from_secs);

    let balancer_port = free_port();
    let balancer_addr: SocketAddr = ([127, 0, 0, 1], balancer_port).into();
    let load = Arc::new(Load::new(format!("http://{balancer_addr}")));
    let mut cluster = Cluster::start(&pg_bin, &moto, &load, balancer_addr).await;
    let nodes: Vec<SocketAddr> = cluster.nodes.iter().map(|n| n.addr.expect("a node")).collect();
    let balancer = Balancer::start_on(balancer_addr, nodes).await;
    assert_eq!(balancer.addr, balancer_addr);

    // What the load needs, made while everything is up.
    let receiver = {
        let load = Arc::clone(&load);
        endpoint(move |body| {
            // The payment's order id (`order-<n>`), wherever the version puts it.
            if let Some(start) = body.find("order-") {
                let end = body[start..].find('"').map_or(body.len(), |n| start + n);
                load.received.lock().unwrap().insert(body[start..end].to_owned());
            }
        })
        .await
    };
    let merchant = load.merchant(&receiver).await;
    let ivan = load.tokens("ivan", LOGINS[0].1).await;
    let maria = load.tokens("maria", LOGINS[1].1).await;
    let pair = |tokens: &Value| {
        (tokens["access_token"].as_str().unwrap().to_owned(), tokens["id_token"].as_str().unwrap().to_owned())
    };
    let (ivan_access, ivan_id) = pair(&ivan);
    let (maria_access, maria_id) = pair(&maria);
    let mut chains = Vec::new();
    for _ in 0..6 {
        chains.push(load.tokens("oleg", LOGINS[2].1).await["refresh_token"].as_str().unwrap().to_owned());
    }

    let mut tasks = tokio::task::JoinSet::new();
    for (login, phone) in LOGINS {
        let load = Arc::clone(&load);
        tasks.spawn(async move { load.browsers(login, phone).await });
    }
    for refresh in chains {
        let load = Arc::clone(&load);
        tasks.spawn(async move { load.refresh_chain(refresh).await });
    }
    for _ in 0..3 {
        let (load, access, id) = (Arc::clone(&load), maria_access.clone(), maria_id.clone());
        tasks.spawn(async move { load.permission_reads(&access, &id).await });
    }
    {
        let (load, access, id) = (Arc::clone(&load), ivan_access.clone(), ivan_id.clone());
        tasks.spawn(async move { load.report_tasks(&access, &id).await });
    }
    for _ in 0..2 {
        let (load, merchant) = (Arc::clone(&load), merchant.clone());
        tasks.spawn(async move { load.payment_events(&merchant).await });
    }

    let started = Instant::now();
    let mut recoveries = Vec::new();
    loop {
        round(&mut cluster, &mut recoveries).await;
        if long_for.is_none_or(|limit| started.elapsed() >= limit) {
            break;
        }
    }
    load.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let under_load = started.elapsed();
    while tasks.join_next().await.is_some() {}

    // Everything acknowledged is delivered; everything accepted finishes.
    let deadline = Instant::now() + DRAIN;
    let missing = loop {
        let acknowledged = load.acknowledged.lock().unwrap().clone();
        let received = load.received.lock().unwrap().clone();
        let missing: Vec<String> = acknowledged.difference(&received).cloned().collect();
        if missing.is_empty() || Instant::now() >= deadline {
            break missing;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let delivered_after = Instant::now() + DRAIN - deadline;
    let unfinished = load.unfinished_tasks(&ivan_access, &ivan_id, deadline).await;

    let counts = load.tally.counts();
    println!("cluster test: 3 nodes + 1 worker, {:.0} s under load", under_load.as_secs_f64());
    for (what, count) in &counts {
        println!("  {what:<70} {count:>7}");
    }
    for (what, took) in &recoveries {
        println!("  {what:<70} {:>6.2} s", took.as_secs_f64());
    }
    println!(
        "  acknowledged events not delivered: {} ({:.1} s after the load's end); report tasks accepted: {}, \
         not finished: {}",
        missing.len(),
        delivered_after.as_secs_f64(),
        load.tasks.lock().unwrap().len(),
        unfinished.len()
    );

    for node in cluster.nodes.iter_mut().chain([&mut cluster.worker]) {
        assert!(node.exited().is_none(), "{} exited on its own:\n{}", node.name, node.log_tail());
    }
    // A node killed between counting password attempts and checking them:
    // 16 browsers send their passwords to node-1 at once, and the node is
    // killed while most are still waiting for their check. Their counts
    // are never reported: at once, the address (every browser here is
    // 127.0.0.1) is over its CAPTCHA threshold; after
    // `login.unreported_attempt_secs` they count no more, a login from the
    // address is asked for no CAPTCHA, and no key is left counting
    // failures nobody made (every password here was right).
    let policy = portico_identity::login::guard::GuardPolicy::default();
    let on_address = "SELECT count(*) FROM login_attempts_pending WHERE key LIKE 'address:%'";
    let pending = |postgres: &Postgres| postgres.query(on_address).parse::<u32>().expect("a count");
    let node = cluster.nodes[0].addr.expect("a serving node");
    // How many are pending at once depends on how the machine shares its
    // cores between counting and checking: a round whose checks outpace
    // the counts is let finish, and the 16 are sent again.
    let (mut most, mut rounds) = (0, 0);
    let mut in_flight = loop {
        rounds += 1;
        let mut in_flight = load.passwords_at_once(node, 4).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        let together = loop {
            let now = pending(&cluster.postgres);
            most = most.max(now);
            while in_flight.try_join_next().is_some() {}
            if now >= 14 || in_flight.is_empty() || Instant::now() >= deadline {
                break now >= 14;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        if together {
            break in_flight;
        }
        assert!(
            rounds < 5 && in_flight.is_empty(),
            "the 16 attempts were never counted together in {rounds} rounds (at most {most} at once)"
        );
    };
    println!("  password attempts pending at once: {most} (round {rounds})");
    cluster.nodes[0].kill();
    in_flight.abort_all();
    cluster.nodes[0].start();
    cluster.ready(0, "its restart after the kill in the password checks").await;
    let leaked = pending(&cluster.postgres);
    println!("  password attempts a killed node left unreported: {leaked}");
    assert!(leaked > policy.address_captcha_after, "the kill left {leaked} attempts unreported");
    let captchas = || load.tally.count("logins: CAPTCHA solved");
    let before = captchas();
    assert!(matches!(load.login(LOGINS[1].0, LOGINS[1].1).await, load::LoginEnd::Tokens(_)), "a login after the kill");
    assert_eq!(captchas(), before + 1, "while they count, the address needs a CAPTCHA");
    tokio::time::sleep(Duration::from_secs(UNREPORTED_SECS.parse::<u64>().expect("seconds") + 1)).await;
    assert!(matches!(load.login(LOGINS[1].0, LOGINS[1].1).await, load::LoginEnd::Tokens(_)), "a login after that");
    assert_eq!(captchas(), before + 1, "after the window, the address needs no CAPTCHA");
    let counting = cluster.postgres.query(
        "SELECT coalesce(string_agg(key || '=' || failures, ', '), '') FROM login_throttles t \
         WHERE failures > (SELECT count(*) FROM login_attempts_pending p WHERE p.key = t.key AND p.expires_at <= now())",
    );
    assert_eq!(counting, "", "keys still counting failures nobody made");

    let violations = load.tally.violations();
    assert!(violations.is_empty(), "{} violations:\n{}", violations.len(), violations.join("\n"));
    let worker_log = cluster.worker.log_tail();
    let some = &missing[..missing.len().min(10)];
    assert!(
        missing.is_empty(),
        "{} acknowledged events never delivered, {some:?}…; the worker:\n{worker_log}",
        missing.len()
    );
    assert!(unfinished.is_empty(), "accepted report tasks not finished: {unfinished:?}; the worker:\n{worker_log}");
    assert!(load.tally.count("logins: completed") > 0, "{counts:?}");
    assert!(load.tally.count("refresh: rotated") > 0 && load.tally.count("permissions: read") > 0, "{counts:?}");
    assert!(load.tally.count("events: acknowledged") > 0 && load.tally.count("report tasks: accepted") > 0);
    for (what, took) in &recoveries {
        assert!(*took <= RECOVERY_LIMIT, "{what}: {took:?}");
    }
}
