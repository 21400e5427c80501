//! Test support: [`TestApp`] runs a real Portico on a random loopback port,
//! on SQLite (always) or PostgreSQL (when `PORTICO_TEST_POSTGRES_URL` is
//! set), with a clock the test moves.

pub mod authenticator;
pub mod certificates;
mod database;
pub mod gost;
pub mod jws;
mod login;
pub mod permission_models;
pub mod release_sample;
mod responses;
pub mod signing_program;
pub mod softhsm;
mod tokens;

use std::path::PathBuf;
use std::sync::{Arc, Once};

use portico_identity::Identity;
use portico_model::clock::ManualClock;
use portico_server::{App, Config};
use portico_storage::Storage;
use reqwest::redirect::Policy;
use time::OffsetDateTime;
use tokio::sync::oneshot;

pub use database::{TcpProxy, fresh_database};
pub use portico_server::demo;
pub use responses::{
    Answer, answer, assert_bearer_challenges, code_from, jwt_claims, jwt_header, location, location_param,
    location_params, view_data,
};
pub use tokens::{TokenPair, TokenResponse};

/// The environment variable naming a PostgreSQL server for the tests; each
/// test gets a fresh database on it.
pub const POSTGRES_ENV: &str = "PORTICO_TEST_POSTGRES_URL";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// The backends to run a test against: SQLite, and PostgreSQL when configured.
pub fn backends() -> Vec<Backend> {
    if std::env::var(POSTGRES_ENV).is_ok_and(|v| !v.is_empty()) {
        vec![Backend::Sqlite, Backend::Postgres]
    } else {
        static WARN: Once = Once::new();
        WARN.call_once(|| {
            skipped(&format!(
                "{POSTGRES_ENV} is not set: the PostgreSQL half of every storage test; only SQLite is tested"
            ));
        });
        vec![Backend::Sqlite]
    }
}

/// Says that a test (or part of one) was skipped, and why, on the test
/// run's own output: written to stderr directly, not through `eprintln!`,
/// which the test harness captures and shows only for failed tests. So a
/// plain `cargo test` shows every skip.
pub fn skipped(why: &str) {
    use std::io::Write as _;
    let line = format!("SKIPPED: {why}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// A scratch folder removed on drop, its user's only (as Portico makes
/// its data folder), so that a server started on it has nothing to warn of.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new() -> Self {
        let path = std::env::temp_dir().join(format!("portico-test-{}", uuid::Uuid::new_v4()));
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&path).expect("create a temp dir");
        Self(path)
    }
}

impl Default for TempDir {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running server.
pub struct TestApp {
    pub base: String,
    pub backend: Backend,
    pub clock: Arc<ManualClock>,
    pub store: Arc<dyn Storage>,
    pub identity: Arc<Identity>,
    pub notify: Arc<portico_notify::Notify>,
    pub reports: Arc<portico_reports::Reports>,
    pub config: Config,
    /// Portico's own mutual-TLS listener, when the test asked for one
    /// (`mtls.listen`): its base URL and the certificate it serves.
    pub mtls: Option<(String, certificates::TestCertificate)>,
    shutdown: Option<oneshot::Sender<()>>,
    _dir: TempDir,
}

impl TestApp {
    /// Starts Portico with the demo data set on `backend`.
    ///
    /// # Panics
    /// When the server cannot start.
    pub async fn spawn(backend: Backend) -> Self {
        Self::spawn_with(backend, |_| {}).await
    }

    /// A server that takes registrations with [`REGISTRATION_TOKEN`] and
    /// holds each for an operator's approval
    /// (`registration.require_approval`).
    ///
    /// # Panics
    /// When the server cannot start.
    pub async fn spawn_holding_registrations(backend: Backend) -> Self {
        Self::spawn_with(backend, |c| {
            c.registration.initial_access_token = Some(REGISTRATION_TOKEN.to_owned());
            c.registration.require_approval = true;
        })
        .await
    }

    /// Like [`TestApp::spawn`], with a chance to change the configuration.
    ///
    /// # Panics
    /// When the server cannot start.
    pub async fn spawn_with(backend: Backend, configure: impl FnOnce(&mut Config)) -> Self {
        let dir = TempDir::new();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind a loopback port");
        let addr = listener.local_addr().expect("local address");
        let mut config = Config {
            listen: addr,
            data_dir: dir.0.clone(),
            database_url: Some(fresh_database(backend, &dir).await),
            public_url: Some(format!("http://{addr}")),
            database_max_connections: 5,
            admin_token: Some(ADMIN_TOKEN.to_owned()),
            internal_token: Some(INTERNAL_TOKEN.to_owned()),
            scim_token: Some(SCIM_TOKEN.to_owned()),
            ..Config::default()
        };
        configure(&mut config);
        // A `metrics_listen` of port 0 gets a free port, written back.
        let metrics = match config.metrics_listen {
            Some(address) => {
                let listener = tokio::net::TcpListener::bind(address).await.expect("bind the metrics port");
                config.metrics_listen = Some(listener.local_addr().expect("metrics address"));
                Some(listener)
            }
            None => None,
        };
        // An `mtls.listen` of port 0 gets a free port, written back, and a
        // certificate for 127.0.0.1 when the test named none; its address
        // is the aliases' base unless the test named one.
        let mut mtls = None;
        let mtls_listener = match config.mtls.listen {
            Some(address) => {
                let listener = tokio::net::TcpListener::bind(address).await.expect("bind the mutual-TLS port");
                let address = listener.local_addr().expect("mutual-TLS address");
                config.mtls.listen = Some(address);
                let certificate = certificates::TestCertificate::new(&address.ip().to_string());
                if config.mtls.server_certificate_file.is_none() {
                    let (chain, key) = (dir.0.join("mtls-server.pem"), dir.0.join("mtls-server.key"));
                    std::fs::write(&chain, &certificate.pem).expect("write the server certificate");
                    std::fs::write(&key, &certificate.key_pem).expect("write the server key");
                    config.mtls.server_certificate_file = Some(chain);
                    config.mtls.server_key_file = Some(key);
                }
                let base = format!("https://{address}");
                config.mtls.public_url.get_or_insert_with(|| base.clone());
                let tls = config.mtls.server_tls().expect("the listener's TLS").expect("configured");
                mtls = Some((base, certificate));
                Some((listener, tls))
            }
            None => None,
        };
        let clock = Arc::new(ManualClock::new(OffsetDateTime::now_utc().replace_nanosecond(0).expect("0 ns")));
        let app = App::build(config.clone(), clock.clone(), true).await.expect("build the app");
        let store = Arc::clone(&app.store);
        let identity = Arc::clone(&app.identity);
        let notify = Arc::clone(&app.notify);
        let reports = Arc::clone(&app.reports);
        let (tx, rx) = oneshot::channel::<()>();
        let listeners = portico_server::app::Listeners { http: listener, metrics, mtls: mtls_listener };
        tokio::spawn(app.serve(listeners, async move {
            let _ = rx.await;
        }));
        Self {
            base: format!("http://{addr}"),
            backend,
            clock,
            store,
            identity,
            notify,
            reports,
            config,
            mtls,
            shutdown: Some(tx),
            _dir: dir,
        }
    }

    /// Two nodes on one fresh PostgreSQL database, with one instance secret
    /// and one public URL, as a cluster runs; `None` (said once) when
    /// [`POSTGRES_ENV`] is not set.
    ///
    /// # Panics
    /// When a server cannot start.
    pub async fn two_nodes(why: &str) -> Option<(Self, Self)> {
        if std::env::var(POSTGRES_ENV).is_err() {
            skipped(&format!("{POSTGRES_ENV} is not set; {why} needs PostgreSQL"));
            return None;
        }
        const SECRET: &str = "dHdvLW5vZGVzLW9mLW9uZS1jbHVzdGVyLXNlY3JldDA=";
        let a = Self::spawn_with(Backend::Postgres, |c| c.secret_key = Some(SECRET.to_owned())).await;
        let (url, issuer) = (a.config.database_url.clone(), a.config.public_url.clone());
        let b = Self::spawn_with(Backend::Postgres, |c| {
            c.secret_key = Some(SECRET.to_owned());
            c.public_url = issuer;
            c.database_url = url;
        })
        .await;
        Some((a, b))
    }

    /// Moves the test's clock up to the wall clock (never back): for a run
    /// of a library that dates what it signs by the real time (openid-client's
    /// assertions and DPoP proofs), which a clock left at the server's start
    /// would see as issued in the future once a long test has run a while.
    pub fn catch_up_with_the_wall_clock(&self) {
        use portico_model::clock::Clock as _;
        let behind = OffsetDateTime::now_utc() - self.clock.now();
        if behind.is_positive() {
            self.clock.advance(behind);
        }
    }

    /// A client of Portico's own mutual-TLS listener that trusts its
    /// certificate and presents `certificate`, if any.
    ///
    /// # Panics
    /// When the test started no such listener.
    pub fn mtls_http(&self, certificate: Option<&certificates::TestCertificate>) -> reqwest::Client {
        let (_, server) = self.mtls.as_ref().expect("an mtls.listen");
        let root = reqwest::Certificate::from_pem(server.pem.as_bytes()).expect("the server certificate");
        let mut builder = reqwest::Client::builder().tls_certs_only([root]).redirect(reqwest::redirect::Policy::none());
        if let Some(certificate) = certificate {
            builder = builder.identity(certificate.identity());
        }
        builder.build().expect("a TLS client")
    }

    /// `path` on Portico's own mutual-TLS listener.
    ///
    /// # Panics
    /// When the test started no such listener.
    pub fn mtls_url(&self, path: &str) -> String {
        format!("{}{path}", self.mtls.as_ref().expect("an mtls.listen").0)
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A browser: keeps cookies, does not follow redirects.
    pub fn browser(&self) -> reqwest::Client {
        loopback_client().cookie_store(true).build().expect("client")
    }

    /// A browser keeping its cookies in `jar`, where a test can read them.
    pub fn browser_with(&self, jar: Arc<reqwest::cookie::Jar>) -> reqwest::Client {
        loopback_client().cookie_provider(jar).build().expect("client")
    }

    /// A plain HTTP client (no cookies, no redirects).
    pub fn http(&self) -> reqwest::Client {
        loopback_client().build().expect("client")
    }

    /// The demo client's redirect URI, under the server's public URL (the
    /// base address, unless a test named the server otherwise).
    pub fn redirect_uri(&self) -> String {
        demo::redirect_uri(&self.config.public_url())
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// A plain HTTP client for tests that run no [`TestApp`] (which installs
/// the process's TLS crypto provider, rustls on aws-lc-rs, as the server does).
pub fn plain_http() -> reqwest::Client {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    reqwest::Client::builder().build().expect("an HTTP client")
}

/// The admin token every test server is configured with.
pub const ADMIN_TOKEN: &str = "test-admin-token-0123456789abcdef";
/// The initial access token of [`TestApp::spawn_holding_registrations`].
pub const REGISTRATION_TOKEN: &str = "the-initial-access-token-0123456789";
/// The internal token every test server is configured with.
pub const INTERNAL_TOKEN: &str = "test-internal-token-0123456789abcdef";
/// The SCIM token every test server is configured with.
pub const SCIM_TOKEN: &str = "test-scim-token-0123456789abcdef";

/// A PKCE verifier and its S256 challenge.
#[derive(Debug, Clone)]
pub struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

impl Pkce {
    pub fn new() -> Self {
        let verifier = portico_crypto::random::token();
        let challenge = portico_crypto::hash::pkce_s256(&verifier);
        Self { verifier, challenge }
    }
}

impl Default for Pkce {
    fn default() -> Self {
        Self::new()
    }
}

/// A client for the test server on loopback: no redirects followed, and no
/// root certificates, since it speaks plain HTTP. Loading the system's
/// roots costs milliseconds of CPU per client; a benchmark that makes a new
/// browser per login (a new device) would count that against the server
/// (the login benchmark lost about 13 % of the machine to it).
fn loopback_client() -> reqwest::ClientBuilder {
    reqwest::Client::builder().redirect(Policy::none()).tls_certs_only([])
}

/// What `App::build` says when it refuses `config`.
///
/// # Panics
/// When the app starts.
pub async fn start_error(config: Config) -> String {
    let clock = Arc::new(portico_model::clock::SystemClock);
    match App::build(config, clock, true).await {
        Ok(_) => panic!("the server started with a configuration it should refuse"),
        Err(error) => format!("{error:#}"),
    }
}
