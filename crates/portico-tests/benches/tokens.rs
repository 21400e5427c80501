//! Token endpoint throughput against the signing limit of this machine.
//!
//! `cargo bench -p portico-tests --bench tokens` (add
//! `PORTICO_TEST_POSTGRES_URL=…` to measure PostgreSQL too). In one run:
//! 1. the baseline: raw RS256 signatures and verifications per second on all
//!    cores, with Portico's own signing code (and the same for PS256, ES256
//!    and EdDSA);
//! 2. authorization-code exchanges, refreshes and liveness checks per second
//!    against a real server over loopback HTTP, with 32 concurrent clients in
//!    the same process (client and server share the machine's cores). The
//!    client is a plain hyper HTTP/1 client with pre-encoded bodies that reads
//!    only the fields it needs from responses, so that it takes as little of
//!    the machine as an in-process client can;
//! 3. each exchange and refresh phase against the signing rate measured
//!    right before and right after it (the machine's speed drifts), with the
//!    CPU time per response, the share of it its two signatures take, and
//!    how busy the cores were;
//! 4. exchanges and refreshes in [`ROUNDS`] alternating rounds, and the
//!    median of the rounds' shares of the signing limit: the figure compared
//!    with the target;
//! 5. the same exchanges and refreshes against a server signing with ES256
//!    (against ES256's own signing rate), and the two algorithms' median
//!    rates and CPU per response side by side;
//! 6. on the ES256 server, refreshes of `private_key_jwt` clients (one
//!    whose key is ES256, one PS256, one EdDSA; assertions made before the
//!    clock starts) against refreshes of a `client_secret_basic` client, in
//!    alternating rounds: the median time per refresh of each, their ratio,
//!    and the CPU of one verification of each algorithm;
//! 7. on the ES256 server, refreshes with a DPoP proof (ES256, PS256 and
//!    EdDSA keys; proofs made before the clock starts) against plain
//!    refreshes, and liveness checks of the DPoP-bound access tokens (each
//!    with its own proof) against bearer ones, in alternating rounds: per
//!    algorithm, the refresh time ratio, the bound checks' rate as a share
//!    of the bearer rate, and the CPU a proof check adds.
//!
//! With `PORTICO_BENCH_ONLY=client-auth` only step 6 runs, with
//! `PORTICO_BENCH_ONLY=dpop` only step 7 (quicker loops while working on
//! one of them; the figures stated in docs/benchmarks.md come from the
//! whole run).
//!
//! `PORTICO_BENCH_ONLY=hsm` (with `PORTICO_TEST_SOFTHSM` naming SoftHSM2's
//! module and `SOFTHSM2_CONF` its configuration) runs only this: refreshes
//! against a server whose ES256 key is in SoftHSM2 and against one whose
//! ES256 key is its own, in alternating rounds: the time per refresh of
//! each, their ratio, and the CPU per refresh of the whole process (the
//! module signs in this process too).
//!
//! `PORTICO_BENCH_ONLY=command` (with `PORTICO_TEST_OPENSSL` naming
//! OpenSSL) runs the same comparison with a server whose ES256 key a
//! signing program holds (`tokens.command`: OpenSSL over a key file, a
//! process per signature), 300 refreshes of each kind per round.
//!
//! Codes are put straight into storage (as the authorize endpoint would) so
//! that the measurement is the token endpoint's, not the login's Argon2.

#[path = "common/allocator.rs"]
mod allocator;

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{CONCURRENCY, Cpu, Http, cpu_seconds, drive, field};

use portico_crypto::jwt::{Algorithm, SigningKey, TYP_ACCESS_TOKEN, verify};
use portico_model::clock::Clock as _;
use portico_model::oauth::AuthorizationCode;
use portico_tests::{Backend, TestApp, backends, demo};

/// The first baseline; each signing phase has one of its own as well.
const BASELINE_TIME: Duration = Duration::from_secs(3);
/// The baseline measured right before and right after each signing phase.
const PHASE_BASELINE_TIME: Duration = Duration::from_millis(1500);
/// Rounds of exchanges and refreshes: the machine's speed drifts between
/// the windows a phase is compared with, so one round's figure is noisy and
/// the figure stated is the median of the rounds.
const ROUNDS: usize = 5;
/// Codes exchanged (and then refresh tokens rotated) in each round.
const PER_ROUND: usize = 3_000;
/// Liveness checks, spread over the access tokens of every round.
const LIVENESS_CHECKS: usize = 50_000;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("machine: {cores} cores; concurrency {CONCURRENCY}; {}", std::env::consts::ARCH);

    let only = std::env::var("PORTICO_BENCH_ONLY").ok();
    if only.as_deref() == Some("command") {
        let openssl = std::env::var("PORTICO_TEST_OPENSSL").expect("PORTICO_TEST_OPENSSL names OpenSSL");
        let program = portico_tests::signing_program::SigningProgram::new(&openssl);
        for backend in backends() {
            runtime.block_on(command_refreshes(backend, &program));
        }
        return;
    }
    if only.as_deref() == Some("hsm") {
        let token = portico_tests::softhsm::token("keys").expect("PORTICO_TEST_SOFTHSM names SoftHSM2's module");
        for backend in backends() {
            runtime.block_on(hsm_refreshes(backend, &token));
        }
        return;
    }
    if let Some(only @ ("client-auth" | "dpop")) = only.as_deref() {
        for backend in backends() {
            runtime.block_on(async {
                let app = Arc::new(spawn(backend, Algorithm::Es256).await);
                if only == "dpop" {
                    dpop(backend, &app, cores).await;
                } else {
                    assertion_refreshes(backend, &app, cores).await;
                }
            });
        }
        return;
    }
    let crypto = Crypto::new(cores, Algorithm::Rs256);
    let (signs, sign_cpu) = crypto.signs(BASELINE_TIME);
    println!("baseline  RS256 sign    {signs:>9.0} /s  ({:.0} µs CPU each)", sign_cpu * 1e6);
    println!("baseline  RS256 verify  {:>9.0} /s", crypto.verifies(BASELINE_TIME).0);
    // The other algorithms' signing baselines, with the same code.
    for alg in Algorithm::ALL.into_iter().filter(|alg| *alg != Algorithm::Rs256) {
        let other = Crypto::new(cores, alg);
        let (signs, sign_cpu) = other.signs(PHASE_BASELINE_TIME);
        let (verifies, _) = other.verifies(PHASE_BASELINE_TIME);
        println!(
            "baseline  {:<5} sign    {signs:>9.0} /s  ({:.0} µs CPU each); verify {verifies:>9.0} /s",
            alg.as_str(),
            sign_cpu * 1e6
        );
    }
    println!("(an exchange or refresh signs 2 JWTs: the crypto limit is {:.0} responses/s)", signs / 2.0);
    println!(
        "(the machine's speed drifts, so each signing phase is compared with the signing rate measured \
         for {:.1} s right before it and right after it)",
        PHASE_BASELINE_TIME.as_secs_f64()
    );

    let crypto = Arc::new(crypto);
    let es256 = Arc::new(Crypto::new(cores, Algorithm::Es256));
    for backend in backends() {
        let rs = runtime.block_on(endpoints(backend, Arc::clone(&crypto)));
        // The same server signing with ES256, against ES256's own signing
        // limit; then the two algorithms' rates side by side.
        let es = runtime.block_on(endpoints(backend, Arc::clone(&es256)));
        println!(
            "{backend:?}  ES256 / RS256: code exchange {:.2}×, refresh {:.2}× (medians: {:.0} vs {:.0} /s and \
             {:.0} vs {:.0} /s); CPU per ES256 response {:.0} µs (RS256 {:.0} µs)",
            es.exchange / rs.exchange,
            es.refresh / rs.refresh,
            es.exchange,
            rs.exchange,
            es.refresh,
            rs.refresh,
            es.cpu_each * 1e6,
            rs.cpu_each * 1e6
        );
    }
}

/// The medians of one server's rounds: responses per second, and the
/// process's CPU per response over both kinds.
struct Medians {
    exchange: f64,
    refresh: f64,
    cpu_each: f64,
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Portico's own signing code on every core: the baseline.
struct Crypto {
    alg: Algorithm,
    key: Arc<SigningKey>,
    claims: Arc<serde_json::Value>,
    token: Arc<String>,
    cores: usize,
}

/// What the cores signed around one phase.
#[derive(Clone, Copy)]
struct Limit {
    /// Signatures per second, one thread per core.
    signs: f64,
    /// CPU seconds per signature.
    sign_cpu: f64,
    /// The window measured after the phase: the next phase's "before".
    after: (f64, f64),
}

impl Crypto {
    fn new(cores: usize, alg: Algorithm) -> Self {
        let key = Arc::new(SigningKey::generate(alg).expect("key"));
        let claims = serde_json::json!({
            "iss": "http://127.0.0.1:8080", "sub": "0192f0c4-7a1e-7b52-8f3c-2f9c1a7d5e11", "aud": "demo-app",
            "exp": 1_900_000_000, "iat": 1_800_000_000, "jti": "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f",
            "client_id": "demo-app", "scope": "openid profile email phone", "gid": "0192f0c4-7a1e-7b52-8f3c-2f9c1a7d5e12"
        });
        let token = Arc::new(key.sign(TYP_ACCESS_TOKEN, &claims));
        Self { alg, key, claims: Arc::new(claims), token, cores }
    }

    /// Runs `op` on one thread per core for `time`: operations per second
    /// and CPU seconds per operation.
    fn run(&self, time: Duration, op: Arc<dyn Fn() + Send + Sync>) -> (f64, f64) {
        let done = Arc::new(AtomicUsize::new(0));
        let cpu = cpu_seconds();
        let started = Instant::now();
        std::thread::scope(|scope| {
            for _ in 0..self.cores {
                let (op, done) = (Arc::clone(&op), Arc::clone(&done));
                scope.spawn(move || {
                    while started.elapsed() < time {
                        op();
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
        let done = done.load(Ordering::Relaxed) as f64;
        (done / started.elapsed().as_secs_f64(), (cpu_seconds() - cpu) / done)
    }

    fn signs(&self, time: Duration) -> (f64, f64) {
        let (key, claims) = (Arc::clone(&self.key), Arc::clone(&self.claims));
        self.run(
            time,
            Arc::new(move || {
                std::hint::black_box(key.sign(TYP_ACCESS_TOKEN, &*claims));
            }),
        )
    }

    /// Verifications per second on every core, and CPU seconds each.
    fn verifies(&self, time: Duration) -> (f64, f64) {
        let (key, token) = (Arc::clone(&self.key), Arc::clone(&self.token));
        self.run(
            time,
            Arc::new(move || {
                let checked = verify::<serde_json::Value>(&token, |_| Some(key.verifying_key()));
                std::hint::black_box(checked.expect("verifies"));
            }),
        )
    }

    /// The mean of `before` and a measurement taken now.
    fn around(&self, before: (f64, f64)) -> Limit {
        let after = self.signs(PHASE_BASELINE_TIME);
        Limit { signs: (before.0 + after.0) / 2.0, sign_cpu: (before.1 + after.1) / 2.0, after }
    }
}

/// A server on `backend` signing with `alg`.
async fn spawn(backend: Backend, alg: Algorithm) -> TestApp {
    TestApp::spawn_with(backend, |c| {
        c.database_max_connections = 16;
        c.database_cache_staleness_ms = common::staleness_ms();
        c.tokens.signing_algorithm = alg.as_str().to_owned();
    })
    .await
}

/// Exchanges, refreshes and (with RS256) liveness checks against a server
/// signing with `crypto`'s algorithm, each phase against that algorithm's
/// signing rate around it.
async fn endpoints(backend: Backend, crypto: Arc<Crypto>) -> Medians {
    let alg = crypto.alg;
    println!("{backend:?}  a server signing with {alg}");
    let app = Arc::new(spawn(backend, alg).await);
    let user = app.store.find_user_by_login("ivan").await.expect("store").expect("demo user");

    // Codes for every round, as the authorize endpoint stores them.
    let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    let challenge = portico_crypto::hash::pkce_s256(verifier);
    let now = app.clock.now();
    let (redirect_uri, store) = (app.redirect_uri(), Arc::clone(&app.store));
    let (_, codes) = drive((0..ROUNDS * PER_ROUND).collect(), move |i| {
        let (store, redirect_uri, code_challenge) = (Arc::clone(&store), redirect_uri.clone(), challenge.clone());
        async move {
            let code = format!("bench-code-{i}-{}", uuid::Uuid::new_v4());
            let row = AuthorizationCode {
                code_hash: portico_model::ids::CodeHash::new(portico_crypto::hash::token_hash(&code)),
                client_id: demo::CLIENT_ID.into(),
                user_id: user.id,
                redirect_uri,
                scope: "openid profile email phone".into(),
                code_challenge,
                nonce: Some("n".into()),
                auth_time: now,
                created_at: now,
                expires_at: now + time::Duration::hours(1),
                grant_id: None,
                amr: vec!["pwd".into()],
                session_id: None,
                dpop_jkt: None,
            };
            store.insert_code(&row).await.expect("insert code");
            code
        }
    })
    .await;

    let client = Http::new();
    let url = app.url("/oauth2/token");
    let mut exchanges = Vec::with_capacity(ROUNDS);
    let mut refreshes = Vec::with_capacity(ROUNDS);
    let (mut exchange_rates, mut refresh_rates, mut cpu_each) = (Vec::new(), Vec::new(), Vec::new());
    let mut access_tokens = Vec::with_capacity(ROUNDS * PER_ROUND);
    // Each phase is compared with the windows right before and right after
    // it; a round's refresh phase shares its "before" with the exchange's
    // "after".
    let mut before = crypto.signs(PHASE_BASELINE_TIME);
    for (round, codes) in codes.chunks(PER_ROUND).enumerate() {
        let (c, u) = (client.clone(), url.clone());
        let cpu = Cpu::now();
        let (rate, issued) = drive(codes.to_vec(), move |code| {
            let (client, url) = (c.clone(), u.clone());
            async move {
                let body = format!(
                    "grant_type=authorization_code&code={code}&code_verifier={verifier}&client_id={}&client_secret={}",
                    demo::CLIENT_ID,
                    demo::CLIENT_SECRET
                );
                let answer = client.post_form(&url, body).await;
                (field(&answer, "refresh_token"), field(&answer, "access_token"))
            }
        })
        .await;
        let cpu = cpu.since();
        let limit = crypto.around(before);
        before = limit.after;
        exchange_rates.push(rate);
        cpu_each.push(cpu.process / PER_ROUND as f64);
        exchanges.push(report(backend, "code exchange", round, rate, PER_ROUND, cpu, Some(limit)));

        let (refresh_tokens, first_access): (Vec<_>, Vec<_>) = issued.into_iter().unzip();
        access_tokens.extend(first_access);
        let (c, u) = (client.clone(), url.clone());
        let cpu = Cpu::now();
        let (rate, _) = drive(refresh_tokens, move |refresh| {
            let (client, url) = (c.clone(), u.clone());
            async move {
                let body = format!(
                    "grant_type=refresh_token&refresh_token={refresh}&client_id={}&client_secret={}",
                    demo::CLIENT_ID,
                    demo::CLIENT_SECRET
                );
                client.post_form(&url, body).await;
            }
        })
        .await;
        let cpu = cpu.since();
        let limit = crypto.around(before);
        before = limit.after;
        refresh_rates.push(rate);
        cpu_each.push(cpu.process / PER_ROUND as f64);
        refreshes.push(report(backend, "refresh", round, rate, PER_ROUND, cpu, Some(limit)));
    }
    summary(backend, "code exchange", &mut exchanges);
    summary(backend, "refresh", &mut refreshes);
    let medians = Medians {
        exchange: median(&mut exchange_rates),
        refresh: median(&mut refresh_rates),
        cpu_each: median(&mut cpu_each),
    };
    if alg == Algorithm::Es256 {
        assertion_refreshes(backend, &app, crypto.cores).await;
        dpop(backend, &app, crypto.cores).await;
    }
    if alg != Algorithm::Rs256 {
        return medians;
    }

    // Liveness: the first token of each grant was rotated away but is live
    // (refresh does not revoke earlier access tokens); check each several
    // times.
    let liveness_url = app.url("/oauth2/token/liveness");
    let checks: Vec<String> = access_tokens.iter().cycle().take(LIVENESS_CHECKS).cloned().collect();
    let (c, u) = (client.clone(), liveness_url);
    let cpu = Cpu::now();
    let (rate, _) = drive(checks, move |token| {
        let (client, url) = (c.clone(), u.clone());
        async move {
            client.get_bearer(&url, &token).await;
        }
    })
    .await;
    let cpu = cpu.since();
    report(backend, "liveness", 0, rate, LIVENESS_CHECKS, cpu, None);
    medians
}

/// The median of a phase's rounds, as a share of the signing limit, next to
/// each round's.
fn summary(backend: Backend, name: &str, shares: &mut [f64]) {
    let rounds: Vec<String> = shares.iter().map(|s| format!("{s:.0}%")).collect();
    shares.sort_by(f64::total_cmp);
    let median = shares[shares.len() / 2];
    println!(
        "{backend:?}  {name:<14} median of {} rounds: {median:.0}% of the signing limit (rounds: {})",
        shares.len(),
        rounds.join(", ")
    );
}

/// Prints a phase's rate against the signing rate measured around it and,
/// from the CPU time `cpu` the process used during it, the CPU each response
/// took, the share of it that went to its two signatures, and how busy the
/// cores were; with PostgreSQL, the database server's own CPU per response
/// beside it. Returns the rate as a share of the signing limit, in percent (0
/// without a limit).
fn report(backend: Backend, name: &str, round: usize, rate: f64, count: usize, cpu: Cpu, limit: Option<Limit>) -> f64 {
    let database = match backend {
        Backend::Postgres => format!("; PostgreSQL server {:.0} µs CPU each", cpu.database / count as f64 * 1e6),
        Backend::Sqlite => String::new(),
    };
    let cpu = cpu.process;
    let each = cpu / count as f64;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let busy = 100.0 * cpu * rate / count as f64 / cores as f64;
    match limit {
        Some(limit) => {
            let share = 100.0 * rate * 2.0 / limit.signs;
            println!(
                "{backend:?}  {name:<14} {rate:>9.0} /s  = {share:>3.0}% of the signing limit ({:.0} signatures/s around it, \
                 2 per response); {:.0} µs CPU each, {:.0}% of it signing; cores {busy:.0}% busy (round {}){database}",
                limit.signs,
                each * 1e6,
                100.0 * 2.0 * limit.sign_cpu / each,
                round + 1
            );
            share
        }
        None => {
            println!(
                "{backend:?}  {name:<14} {rate:>9.0} /s  {:.1} µs CPU each; cores {busy:.0}% busy{database}",
                each * 1e6
            );
            0.0
        }
    }
}

/// Rounds of the client authentication comparison.
const AUTH_ROUNDS: usize = 5;
/// Refreshes per method in each of those rounds.
const PER_AUTH_ROUND: usize = 2_000;

/// The algorithms of a client's own key in the client authentication and
/// DPoP comparisons: those FAPI 2.0 allows, ES256 (the one ФАПИ.СЕК and
/// most clients use) first.
const CLIENT_ALGORITHMS: [Algorithm; 3] = [Algorithm::Es256, Algorithm::Ps256, Algorithm::EdDsa];

/// CPU seconds of one verification of `alg` with Portico's own code, on
/// every core for a while: the floor a client's signature adds.
fn verify_cpu(cores: usize, alg: Algorithm) -> f64 {
    Crypto::new(cores, alg).verifies(PHASE_BASELINE_TIME).1
}

/// Refreshes authenticated by `private_key_jwt` assertions (one client per
/// algorithm of [`CLIENT_ALGORITHMS`]) against ones authenticated by
/// `client_secret_basic`, in alternating rounds on `app`.
async fn assertion_refreshes(backend: Backend, app: &Arc<TestApp>, cores: usize) {
    use base64::Engine as _;
    let mut clients = Vec::new();
    for alg in CLIENT_ALGORITHMS {
        let key = SigningKey::generate(alg).expect("a client key");
        let client_id = format!("bench-key-{}", alg.as_str().to_ascii_lowercase());
        let client = portico_model::client::Client {
            client_id: client_id.clone().into(),
            secret_hash: portico_crypto::hash::client_secret_hash(&portico_crypto::random::token()),
            name: portico_model::client::LocalizedText::same("bench"),
            redirect_uris: vec![app.redirect_uri()],
            scopes: vec!["openid".into(), "profile".into(), "email".into(), "phone".into()],
            require_consent: false,
            post_logout_redirect_uris: Vec::new(),
            logout_revokes_grants: false,
            backchannel_logout_uri: None,
            security: portico_model::client::ClientSecurity {
                token_endpoint_auth_method: portico_model::client::AuthMethod::PrivateKeyJwt,
                jwks: Some(serde_json::json!({ "keys": [key.jwk()] })),
                ..Default::default()
            },
            secret_sealed: None,
            registration_token_hash: None,
            awaiting_approval: false,
            created_at: app.clock.now(),
            revision: 0,
        };
        app.store.create_client(&client).await.expect("create the key client");
        clients.push((alg, client_id, key, Vec::new()));
    }
    let url = app.url("/oauth2/token");
    let http = Http::new();
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", demo::CLIENT_ID, demo::CLIENT_SECRET))
    );
    let assertion = |client_id: &str, key: &SigningKey, app: &TestApp| {
        let now = app.clock.now().unix_timestamp();
        let claims = serde_json::json!({
            "iss": client_id, "sub": client_id, "aud": app.base,
            "iat": now, "exp": now + 240, "jti": uuid::Uuid::new_v4().to_string(),
        });
        key.sign("JWT", &claims)
    };
    let mut secret_each = Vec::new();
    for round in 0..AUTH_ROUNDS {
        // Refresh tokens of every client (not timed), then the timed refreshes.
        let mut secret_refresh = Vec::with_capacity(PER_AUTH_ROUND);
        for _ in 0..PER_AUTH_ROUND {
            secret_refresh.push(app.token_pair_for("ivan", demo::CLIENT_ID).await.refresh_token);
        }
        let mut key_bodies = Vec::new();
        for (_, client_id, key, _) in &clients {
            let mut bodies = Vec::with_capacity(PER_AUTH_ROUND);
            for _ in 0..PER_AUTH_ROUND {
                let refresh = app.token_pair_for("ivan", client_id).await.refresh_token;
                bodies.push(format!(
                    "grant_type=refresh_token&refresh_token={refresh}&client_assertion_type=\
                     urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer&client_assertion={}",
                    assertion(client_id, key, app)
                ));
            }
            key_bodies.push(bodies);
        }
        let cpu = Cpu::now();
        let rate = basic_refreshes(&http, &url, &basic, secret_refresh).await;
        report(backend, "refresh, client_secret_basic", round, rate, PER_AUTH_ROUND, cpu.since(), None);
        secret_each.push(1.0 / rate);
        for ((alg, _, _, each), bodies) in clients.iter_mut().zip(key_bodies) {
            let (c, u) = (http.clone(), url.clone());
            let cpu = Cpu::now();
            let (rate, ok) = drive(bodies, move |body| {
                let (client, url) = (c.clone(), u.clone());
                async move { !field(&client.post_form(&url, body).await, "access_token").is_empty() }
            })
            .await;
            assert!(ok.iter().all(|ok| *ok), "every private_key_jwt refresh succeeds");
            let name = format!("refresh, private_key_jwt {alg}");
            report(backend, &name, round, rate, PER_AUTH_ROUND, cpu.since(), None);
            each.push(1.0 / rate);
        }
    }
    let secret = median(&mut secret_each);
    for (alg, _, _, each) in &mut clients {
        let key = median(each);
        println!(
            "{backend:?}  refresh time, private_key_jwt ({alg}) / client_secret_basic: {:.2}× (medians {:.0} vs \
             {:.0} µs of wall time per refresh at concurrency {CONCURRENCY}); one {alg} verification: {:.0} µs CPU",
            key / secret,
            key * 1e6,
            secret * 1e6,
            verify_cpu(cores, *alg) * 1e6
        );
    }
}

/// Refreshes `refresh_tokens` with `client_secret_basic` (`basic` is the
/// header's value), each checked to answer an access token: per second.
async fn basic_refreshes(http: &Http, url: &str, basic: &str, refresh_tokens: Vec<String>) -> f64 {
    let (c, u, b) = (http.clone(), url.to_owned(), basic.to_owned());
    let (rate, ok) = drive(refresh_tokens, move |refresh| {
        let (client, url, basic) = (c.clone(), u.clone(), b.clone());
        async move {
            let request = hyper::Request::post(url.as_str())
                .header("content-type", "application/x-www-form-urlencoded")
                .header("authorization", basic)
                .body(format!("grant_type=refresh_token&refresh_token={refresh}"))
                .expect("request");
            !field(&client.send(request).await, "access_token").is_empty()
        }
    })
    .await;
    assert!(ok.iter().all(|ok| *ok), "every client_secret_basic refresh succeeds");
    rate
}

/// Refreshes against a server signing ES256 in SoftHSM2 and one signing
/// ES256 itself, in alternating rounds.
async fn hsm_refreshes(backend: Backend, token: &portico_tests::softhsm::Token) {
    let hsm = TestApp::spawn_with(backend, |c| {
        c.database_max_connections = 16;
        c.database_cache_staleness_ms = common::staleness_ms();
        c.tokens.signing_algorithm = "ES256".to_owned();
        c.tokens.hsm = portico_server::config::HsmConfig {
            module: Some(token.module.clone()),
            token_label: token.label.clone(),
            pin: Some(portico_tests::softhsm::PIN.to_owned()),
            pin_file: None,
            algorithms: vec!["ES256".to_owned()],
        };
    })
    .await;
    held_refreshes(backend, "in SoftHSM2", hsm, PER_AUTH_ROUND).await;
}

/// Refreshes against a server whose ES256 key a signing program holds
/// (OpenSSL over a key file, a process per signature) and one signing
/// ES256 itself, in alternating rounds.
async fn command_refreshes(backend: Backend, program: &portico_tests::signing_program::SigningProgram) {
    let app = TestApp::spawn_with(backend, |c| {
        c.database_max_connections = 16;
        c.database_cache_staleness_ms = common::staleness_ms();
        c.tokens.signing_algorithm = "ES256".to_owned();
        c.tokens.command.program = program.program();
        c.tokens.command.concurrency = 8;
    })
    .await;
    let label = format!("bench-{backend:?}");
    let public = program.make_key(&label, true, 0);
    app.admin_service()
        .import_key(
            &portico_model::audit::Actor::Cli,
            Algorithm::Es256,
            &portico_tokens::ImportedKey::Command { label, public_key_pem: public },
        )
        .await
        .expect("the program's key is imported");
    held_refreshes(backend, "held by a signing program", app, PER_COMMAND_ROUND).await;
}

/// Refreshes per kind in each round of the signing-program comparison (a
/// process per signature is slow).
const PER_COMMAND_ROUND: usize = 300;

/// Refreshes against `held` (a server whose ES256 key is held `where`)
/// and a server signing ES256 itself, `per_round` of each in alternating
/// rounds: the time per refresh of each, their ratio, and the CPU per
/// refresh of the whole process (the module or the programs included).
async fn held_refreshes(backend: Backend, place: &str, held: TestApp, per_round: usize) {
    use base64::Engine as _;
    let software = Arc::new(spawn(backend, Algorithm::Es256).await);
    let held = Arc::new(held);
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", demo::CLIENT_ID, demo::CLIENT_SECRET))
    );
    let http = Http::new();
    let held_name = format!("refresh, ES256 key {place}");
    let (mut software_each, mut held_each, mut software_cpu, mut held_cpu) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..AUTH_ROUNDS {
        for (name, app, each, cpu_each) in [
            (held_name.as_str(), &held, &mut held_each, &mut held_cpu),
            ("refresh, ES256 key of its own", &software, &mut software_each, &mut software_cpu),
        ] {
            let mut refresh_tokens = Vec::with_capacity(per_round);
            for _ in 0..per_round {
                refresh_tokens.push(app.token_pair_for("ivan", demo::CLIENT_ID).await.refresh_token);
            }
            let cpu = Cpu::now();
            let rate = basic_refreshes(&http, &app.url("/oauth2/token"), &basic, refresh_tokens).await;
            let used = cpu.since();
            report(backend, name, round, rate, per_round, used, None);
            each.push(1.0 / rate);
            cpu_each.push(used.process / per_round as f64);
        }
    }
    let (soft, outside) = (median(&mut software_each), median(&mut held_each));
    println!(
        "{backend:?}  refresh time, ES256 {place} / ES256 of its own: {:.2}× (medians {:.0} vs {:.0} µs of wall \
         time per refresh at concurrency {CONCURRENCY}; CPU per refresh {:.0} vs {:.0} µs)",
        outside / soft,
        outside * 1e6,
        soft * 1e6,
        median(&mut held_cpu) * 1e6,
        median(&mut software_cpu) * 1e6
    );
}

/// Rounds of the DPoP comparison.
const DPOP_ROUNDS: usize = 5;
/// Refreshes (and then liveness checks) per kind in each of those rounds.
const PER_DPOP_ROUND: usize = 2_000;

/// Refreshes with a DPoP proof (one key per algorithm of
/// [`CLIENT_ALGORITHMS`]) against plain ones, and liveness checks of the
/// bound tokens (each with a proof) against bearer ones, in alternating
/// rounds on `app`.
async fn dpop(backend: Backend, app: &Arc<TestApp>, cores: usize) {
    use portico_tests::jws::dpop_proof;
    let keys: Vec<(Algorithm, SigningKey)> =
        CLIENT_ALGORITHMS.into_iter().map(|alg| (alg, SigningKey::generate(alg).expect("a DPoP key"))).collect();
    let (url, liveness) = (app.url("/oauth2/token"), app.url("/oauth2/token/liveness"));
    let http = Http::new();
    let credentials = format!("client_id={}&client_secret={}", demo::CLIENT_ID, demo::CLIENT_SECRET);
    /// One algorithm's medians: refresh seconds, liveness rate, CPU per check.
    #[derive(Default)]
    struct Figures {
        refresh: Vec<f64>,
        rate: Vec<f64>,
        cpu: Vec<f64>,
    }
    let mut plain = Figures::default();
    let mut bound: Vec<Figures> = keys.iter().map(|_| Figures::default()).collect();
    for round in 0..DPOP_ROUNDS {
        let mut plain_bodies = Vec::with_capacity(PER_DPOP_ROUND);
        for _ in 0..PER_DPOP_ROUND {
            plain_bodies.push(format!(
                "grant_type=refresh_token&refresh_token={}&{credentials}",
                app.token_pair("ivan").await.refresh_token
            ));
        }
        let (c, u) = (http.clone(), url.clone());
        let cpu = Cpu::now();
        let (rate, bearer_tokens) = drive(plain_bodies, move |body| {
            let (client, url) = (c.clone(), u.clone());
            async move { field(&client.post_form(&url, body).await, "access_token") }
        })
        .await;
        report(backend, "refresh, plain", round, rate, PER_DPOP_ROUND, cpu.since(), None);
        plain.refresh.push(1.0 / rate);

        let mut bound_tokens = Vec::new();
        for ((alg, key), figures) in keys.iter().zip(&mut bound) {
            let mut bodies = Vec::with_capacity(PER_DPOP_ROUND);
            for _ in 0..PER_DPOP_ROUND {
                let body = format!(
                    "grant_type=refresh_token&refresh_token={}&{credentials}",
                    app.token_pair("ivan").await.refresh_token
                );
                bodies.push((body, dpop_proof(key, alg.as_str(), app, "POST", &url, None)));
            }
            let (c, u) = (http.clone(), url.clone());
            let cpu = Cpu::now();
            let (rate, tokens) = drive(bodies, move |(body, proof)| {
                let (client, url) = (c.clone(), u.clone());
                async move {
                    let request = hyper::Request::post(url.as_str())
                        .header("content-type", "application/x-www-form-urlencoded")
                        .header("dpop", proof)
                        .body(body)
                        .expect("request");
                    let answer = client.send(request).await;
                    assert_eq!(field(&answer, "token_type"), "DPoP", "a bound token");
                    field(&answer, "access_token")
                }
            })
            .await;
            report(backend, &format!("refresh, DPoP {alg}"), round, rate, PER_DPOP_ROUND, cpu.since(), None);
            figures.refresh.push(1.0 / rate);
            bound_tokens.push(tokens);
        }

        let (c, u) = (http.clone(), liveness.clone());
        let cpu = Cpu::now();
        let (rate, _) = drive(bearer_tokens, move |token| {
            let (client, url) = (c.clone(), u.clone());
            async move {
                client.get_bearer(&url, &token).await;
            }
        })
        .await;
        let cpu = cpu.since();
        report(backend, "liveness, bearer", round, rate, PER_DPOP_ROUND, cpu, None);
        plain.rate.push(rate);
        plain.cpu.push(cpu.process / PER_DPOP_ROUND as f64);
        for (((alg, key), figures), tokens) in keys.iter().zip(&mut bound).zip(bound_tokens) {
            let checks: Vec<(String, String)> = tokens
                .into_iter()
                .map(|token| {
                    let proof = dpop_proof(key, alg.as_str(), app, "GET", &liveness, Some(&token));
                    (token, proof)
                })
                .collect();
            let (c, u) = (http.clone(), liveness.clone());
            let cpu = Cpu::now();
            let (rate, _) = drive(checks, move |(token, proof)| {
                let (client, url) = (c.clone(), u.clone());
                async move {
                    let request = hyper::Request::get(url.as_str())
                        .header("authorization", format!("DPoP {token}"))
                        .header("dpop", proof)
                        .body(String::new())
                        .expect("request");
                    client.send(request).await;
                }
            })
            .await;
            let cpu = cpu.since();
            report(backend, &format!("liveness, DPoP {alg}"), round, rate, PER_DPOP_ROUND, cpu, None);
            figures.rate.push(rate);
            figures.cpu.push(cpu.process / PER_DPOP_ROUND as f64);
        }
    }
    let (plain_refresh, bearer_rate, bearer_cpu) =
        (median(&mut plain.refresh), median(&mut plain.rate), median(&mut plain.cpu));
    for ((alg, _), figures) in keys.iter().zip(&mut bound) {
        let (refresh, rate, cpu) = (median(&mut figures.refresh), median(&mut figures.rate), median(&mut figures.cpu));
        println!(
            "{backend:?}  DPoP {alg}: refresh time / plain {:.2}× (medians {:.0} vs {:.0} µs of wall time per \
             refresh at concurrency {CONCURRENCY}); bound liveness at {:.0}% of the bearer rate ({rate:.0} vs \
             {bearer_rate:.0} /s); a proof check adds {:.0} µs CPU per request ({:.0} vs {:.0} µs); one {alg} \
             verification: {:.0} µs CPU",
            refresh / plain_refresh,
            refresh * 1e6,
            plain_refresh * 1e6,
            100.0 * rate / bearer_rate,
            (cpu - bearer_cpu) * 1e6,
            cpu * 1e6,
            bearer_cpu * 1e6,
            verify_cpu(cores, *alg) * 1e6
        );
    }
}
