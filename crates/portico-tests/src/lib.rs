//! Test support: [`TestApp`] runs a real Portico on a random loopback port,
//! on SQLite (always) or PostgreSQL (when `PORTICO_TEST_POSTGRES_URL` is
//! set), with a clock the test moves.

pub mod authenticator;
pub mod certificates;
pub mod permission_models;
pub mod release_sample;
pub mod signing_program;

use std::path::PathBuf;
use std::sync::{Arc, Once};

use portico_identity::Identity;
use portico_model::clock::ManualClock;
use portico_server::{App, Config};
use portico_storage::Storage;
use reqwest::redirect::Policy;
use serde::Deserialize;
use sqlx::Connection as _;
use time::OffsetDateTime;
use tokio::sync::oneshot;

pub use portico_server::demo;

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

/// A scratch folder removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new() -> Self {
        let path = std::env::temp_dir().join(format!("portico-test-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&path).expect("create a temp dir");
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

/// A database URL for a fresh, empty database of `backend`.
///
/// # Panics
/// When PostgreSQL is selected but unreachable.
pub async fn fresh_database(backend: Backend, dir: &TempDir) -> String {
    match backend {
        Backend::Sqlite => format!("sqlite://{}", dir.0.join("portico.db").display()),
        Backend::Postgres => {
            let base = std::env::var(POSTGRES_ENV).expect("PostgreSQL URL");
            let name = format!("portico_test_{}_{}", std::process::id(), uuid::Uuid::new_v4().simple());
            let mut conn = sqlx::PgConnection::connect(&base).await.expect("connect to the test PostgreSQL");
            SWEPT.get_or_init(|| sweep_databases(&base)).await;
            sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut conn).await.expect("create a test database");
            let mut url = url::Url::parse(&base).expect("PostgreSQL URL");
            url.set_path(&name);
            url.to_string()
        }
    }
}

static SWEPT: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();

/// Drops the test databases of test processes that have ended: each test
/// leaves its database (a server may still hold connections to it when the
/// test returns), and the first test of the next run clears them, so
/// repeated runs do not fill the disk. A database is named after its
/// process; those of a process still running are left alone.
async fn sweep_databases(base: &str) {
    let Ok(mut conn) = sqlx::PgConnection::connect(base).await else { return };
    let names: Vec<String> =
        sqlx::query_scalar("SELECT datname FROM pg_database WHERE datname LIKE 'portico\\_test\\_%'")
            .fetch_all(&mut conn)
            .await
            .unwrap_or_default();
    for name in names {
        let pid = name.strip_prefix("portico_test_").and_then(|rest| rest.split('_').next()?.parse::<u32>().ok());
        if pid.is_some_and(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists()) {
            continue;
        }
        let dropped = sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")).execute(&mut conn).await;
        if let Err(error) = dropped {
            eprintln!("the test database {name} of an ended run could not be dropped: {error}");
        }
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

    /// Registers a client through the admin API (`POST /admin/v1/clients`)
    /// with `body`: the answer.
    ///
    /// # Panics
    /// When the request cannot be sent.
    pub async fn admin_create_client(&self, body: &serde_json::Value) -> reqwest::Response {
        let request = self.http().post(self.url("/admin/v1/clients")).bearer_auth(ADMIN_TOKEN).json(body);
        request.send().await.expect("create a client")
    }

    /// The demo client's introspection (RFC 7662) of `token`, as JSON.
    ///
    /// # Panics
    /// When the request fails or the answer is not JSON.
    pub async fn introspect_as_demo(&self, token: &str) -> serde_json::Value {
        let request = self.http().post(self.url("/oauth2/introspect"));
        let request = request.basic_auth(demo::CLIENT_ID, Some(demo::CLIENT_SECRET)).form(&[("token", token)]);
        request.send().await.expect("introspect").json().await.expect("a JSON answer")
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

    /// Registers a client at `/oauth2/register` (RFC 7591) with `metadata`,
    /// bearing `token` (an initial access token) when given: the status
    /// and the answer (`null` when it is not JSON).
    ///
    /// # Panics
    /// When the request cannot be sent.
    pub async fn register(&self, token: Option<&str>, metadata: &serde_json::Value) -> (u16, serde_json::Value) {
        let mut request = self.http().post(self.url("/oauth2/register")).json(metadata);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.expect("register");
        (response.status().as_u16(), response.json().await.unwrap_or(serde_json::Value::Null))
    }

    /// An authorize URL for the demo client with `pkce`, overridden or
    /// extended by `extra` (a value of `None` removes the parameter).
    pub fn authorize_url(&self, pkce: &Pkce, extra: &[(&str, Option<&str>)]) -> String {
        let redirect_uri = self.redirect_uri();
        let mut params: Vec<(String, String)> = [
            ("response_type", "code"),
            ("client_id", demo::CLIENT_ID),
            ("redirect_uri", redirect_uri.as_str()),
            ("scope", "openid profile email phone"),
            ("state", "st-123"),
            ("nonce", "n-456"),
            ("code_challenge", pkce.challenge.as_str()),
            ("code_challenge_method", "S256"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        for (key, value) in extra {
            params.retain(|(k, _)| k != key);
            if let Some(value) = value {
                params.push(((*key).to_owned(), (*value).to_owned()));
            }
        }
        let mut url = url::Url::parse(&self.url("/oauth2/authorize")).expect("url");
        url.query_pairs_mut().extend_pairs(params);
        url.into()
    }

    /// Logs `login` in through the browser pages and returns the code.
    ///
    /// # Panics
    /// When any step does not answer as the spec says.
    pub async fn login_for_code(&self, browser: &reqwest::Client, pkce: &Pkce, login: &str, password: &str) -> String {
        let response = self.login_at(browser, &self.authorize_url(pkce, &[]), login, password).await;
        code_from(&response, &self.redirect_uri())
    }

    /// Opens `authorize` (an authorization request of any client), logs
    /// `login` in with the password (and the SMS code when asked, and
    /// consent to every scope group when the client asks for it), and
    /// returns authorize's answer once the login completed: the 302 to the
    /// client.
    ///
    /// # Panics
    /// When any step does not answer as a first login does.
    pub async fn login_at(
        &self,
        browser: &reqwest::Client,
        authorize: &str,
        login: &str,
        password: &str,
    ) -> reqwest::Response {
        let response = browser.get(authorize).send().await.expect("authorize");
        self.login_after(browser, response, login, password).await
    }

    /// [`TestApp::login_at`] after `browser` opened the authorization
    /// request: `response` is authorize's answer to it.
    ///
    /// # Panics
    /// When any step does not answer as a first login does.
    pub async fn login_after(
        &self,
        browser: &reqwest::Client,
        response: reqwest::Response,
        login: &str,
        password: &str,
    ) -> reqwest::Response {
        assert_eq!(response.status(), 303, "authorize without a session goes to /login");
        assert_eq!(location(&response), "/login");
        let page = browser.get(self.url("/login")).send().await.expect("login page");
        assert_eq!(page.status(), 200);
        let view = view_data(&page.text().await.expect("html"));
        let csrf = view["pageData"]["authenticationFlowContext"]["csrf"].as_str().expect("csrf").to_owned();
        let response = browser
            .post(self.url("/login"))
            .form(&[("_csrf", csrf.as_str()), ("principal", login), ("credentials", password)])
            .send()
            .await
            .expect("submit");
        assert_eq!(response.status(), 303);
        let mut back = self.second_factor_if_asked(browser, &csrf, login, location(&response)).await;
        if back == "/login" {
            let view = self.login_view(browser).await;
            let step = &view["pageData"]["stepViewData"];
            assert_eq!(step["stepType"], "consent", "{view}");
            let groups = step["availableScopeGroups"].as_str().expect("scope groups").to_owned();
            let response = browser
                .post(self.url("/login"))
                .form(&[("_csrf", csrf.as_str()), ("selected_scope_groups", groups.as_str())])
                .send()
                .await
                .expect("consent");
            assert_eq!(response.status(), 303);
            back = location(&response);
        }
        assert!(back.starts_with("/oauth2/authorize?"), "completed login goes back to authorize: {back}");
        let response = browser.get(self.url(&back)).send().await.expect("authorize again");
        assert_eq!(response.status(), 302, "authorize with a completed login issues a code");
        response
    }

    /// After a passed password step that answered 303 to `location`: when
    /// that is `/login` (a device not yet trusted for the user), enters the
    /// SMS code from the dev outbox. Returns where the login goes next.
    ///
    /// # Panics
    /// When the second factor does not answer as expected.
    pub async fn second_factor_if_asked(
        &self,
        browser: &reqwest::Client,
        csrf: &str,
        login: &str,
        location_after_password: String,
    ) -> String {
        if location_after_password != "/login" {
            return location_after_password;
        }
        let view = self.login_view(browser).await;
        assert_eq!(view["pageData"]["stepViewData"]["stepType"], "sms-otp", "{view}");
        let user = self.store.find_user_by_login(login).await.expect("store").expect("user");
        let code = self.last_code(user.phone.as_deref().expect("a phone"));
        let response = browser
            .post(self.url("/login"))
            .form(&[("_csrf", csrf), ("credentials", code.as_str())])
            .send()
            .await
            .expect("submit the code");
        assert_eq!(response.status(), 303);
        location(&response)
    }

    /// `GET /login` and its `LoginViewDataDTO`.
    ///
    /// # Panics
    /// When the page is not a 200 with view data.
    pub async fn login_view(&self, browser: &reqwest::Client) -> serde_json::Value {
        let page = browser.get(self.url("/login")).send().await.expect("login page");
        assert_eq!(page.status(), 200, "GET /login");
        view_data(&page.text().await.expect("html"))
    }

    /// The messages in the dev outbox, oldest first.
    pub fn outbox(&self) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(self.config.data_dir.join("outbox.jsonl")).unwrap_or_default();
        text.lines().map(|line| serde_json::from_str(line).expect("an outbox line")).collect()
    }

    /// The last code sent to `to` (a phone number or e-mail address).
    ///
    /// # Panics
    /// When none was sent.
    pub fn last_code(&self, to: &str) -> String {
        let messages = self.outbox();
        let message = messages.iter().rev().find(|m| m["to"] == to).unwrap_or_else(|| panic!("no code for {to}"));
        message["code"].as_str().expect("code").to_owned()
    }

    /// Runs `sql` on the server's own database, beside the server (a fault
    /// the test injects: a table renamed away and back).
    ///
    /// # Panics
    /// When the statement fails.
    pub async fn run_sql(&self, sql: &str) {
        let url = self.config.database_url.clone().expect("a database URL");
        match url.strip_prefix("sqlite://") {
            Some(path) => {
                let (sql, path) = (sql.to_owned(), path.to_owned());
                let run = move || rusqlite::Connection::open(path).expect("open").execute_batch(&sql).expect("sql");
                tokio::task::spawn_blocking(run).await.expect("the statement ran");
            }
            None => {
                let mut conn = sqlx::PgConnection::connect(&url).await.expect("connect");
                sqlx::raw_sql(sql).execute(&mut conn).await.expect("sql");
            }
        }
    }

    /// Posts a form to the token endpoint as the demo client (`client_secret_post`).
    pub async fn token_request(&self, form: &[(&str, &str)]) -> reqwest::Response {
        let mut body: Vec<(&str, &str)> = vec![("client_id", demo::CLIENT_ID), ("client_secret", demo::CLIENT_SECRET)];
        body.extend_from_slice(form);
        self.http().post(self.url("/oauth2/token")).form(&body).send().await.expect("token request")
    }

    /// The whole flow for `login`, up to a successful code exchange.
    ///
    /// # Panics
    /// When any step fails.
    /// The admin service the `portico` command line uses, over this app's
    /// store, with the key holders (HSM, signing program) of its settings.
    pub fn admin_service(&self) -> portico_admin::AdminService {
        let secret = portico_server::secret::InstanceSecret::load(&self.config).expect("the instance secret");
        portico_admin::AdminService::new(Arc::clone(&self.store), self.clock.clone(), secret.sealer())
            .with_key_holders(self.config.tokens.key_holders().expect("the key holders of the settings"))
    }

    /// The active signing key of `alg`: its `kid` and where it is held.
    pub async fn active_signing_key(
        &self,
        alg: portico_model::key::Algorithm,
    ) -> (String, portico_tokens::KeyLocation) {
        let secret = portico_server::secret::InstanceSecret::load(&self.config).expect("the instance secret");
        let records = self.store.list_signing_keys().await.expect("the signing keys");
        let record = records.iter().find(|r| r.alg == alg.as_str() && r.retired_at.is_none()).expect("an active key");
        (record.kid.clone(), portico_tokens::key_location(&secret.sealer(), record).expect("a readable key"))
    }

    pub async fn tokens_for(&self, login: &str, password: &str) -> TokenResponse {
        let pkce = Pkce::new();
        let code = self.login_for_code(&self.browser(), &pkce, login, password).await;
        let response = self.exchange(&code, &pkce.verifier).await;
        assert_eq!(response.status(), 200);
        response.json().await.expect("TokenResponseDTO")
    }

    /// Exchanges the demo client's `code` with its PKCE `verifier`.
    pub async fn exchange(&self, code: &str, verifier: &str) -> reqwest::Response {
        self.token_request(&[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("code_verifier", verifier),
            ("redirect_uri", &self.redirect_uri()),
        ])
        .await
    }

    /// Registers another client that may use scope `openid`.
    ///
    /// # Panics
    /// When storage fails.
    pub async fn add_client(&self, client_id: &str, secret: &str) {
        use portico_model::clock::Clock as _;
        self.store
            .create_client(&portico_model::client::Client {
                client_id: client_id.into(),
                secret_hash: portico_crypto::hash::client_secret_hash(secret),
                name: portico_model::client::LocalizedText::same(client_id),
                redirect_uris: vec!["https://other.example/cb".into()],
                scopes: vec!["openid".into()],
                require_consent: false,
                post_logout_redirect_uris: vec!["https://other.example/bye".into()],
                logout_revokes_grants: false,
                backchannel_logout_uri: None,
                security: Default::default(),
                secret_sealed: None,
                registration_token_hash: None,
                awaiting_approval: false,
                created_at: self.clock.now(),
                revision: 0,
            })
            .await
            .expect("create a client");
    }

    /// An access token and id_token for `login`, issued by the server's own
    /// token code along a new grant of the demo client (as a code exchange
    /// would), without the browser login.
    ///
    /// # Panics
    /// When the user is unknown or storage fails.
    pub async fn token_pair(&self, login: &str) -> TokenPair {
        self.token_pair_for(login, demo::CLIENT_ID).await
    }

    /// As [`TestApp::token_pair`], for the client `client_id` (which must
    /// exist).
    ///
    /// # Panics
    /// When the user is unknown or storage fails.
    pub async fn token_pair_for(&self, login: &str, client_id: &str) -> TokenPair {
        use portico_model::audit::{AuditEvent, AuditKind};
        use portico_model::clock::Clock as _;
        let user = self.store.find_user_by_login(login).await.expect("store").expect("the user exists");
        let now = self.clock.now();
        let code_hash =
            portico_model::ids::CodeHash::new(portico_crypto::hash::token_hash(&portico_crypto::random::token()));
        self.store
            .insert_code(&portico_model::oauth::AuthorizationCode {
                code_hash: code_hash.clone(),
                client_id: client_id.into(),
                user_id: user.id,
                redirect_uri: self.redirect_uri(),
                scope: demo::SCOPE.into(),
                code_challenge: Pkce::new().challenge,
                nonce: None,
                auth_time: now,
                created_at: now,
                expires_at: now + time::Duration::minutes(5),
                grant_id: None,
                amr: vec!["pwd".into()],
                session_id: None,
                dpop_jkt: None,
            })
            .await
            .expect("insert a code");
        let grant = portico_model::oauth::Grant {
            id: portico_model::ids::GrantId::now_v7(),
            client_id: client_id.into(),
            user_id: user.id,
            scope: demo::SCOPE.into(),
            auth_time: now,
            created_at: now,
            revoked_at: None,
            amr: vec!["pwd".into()],
            session_id: None,
        };
        let refresh = portico_identity::tokens::NewRefreshToken::generate(grant.id, now, time::Duration::days(1));
        let event = AuditEvent::new(now, AuditKind::TokenIssued).user(user.id);
        self.store.redeem_code(&code_hash, now, &grant, &refresh.row, &event).await.expect("redeem");
        let client = self.store.find_client(&client_id.into()).await.expect("read the client").expect("the client");
        let keys = self.identity.issue_keys(&client).await.expect("the signing keys");
        let tokens = self
            .identity
            .issue_tokens(
                &keys,
                &grant,
                &user,
                portico_identity::tokens::Issue { scope: demo::SCOPE, nonce: None, bound: Default::default() },
                &refresh,
            )
            .expect("the tokens are signed");
        TokenPair {
            user_id: user.id.as_uuid(),
            access_token: tokens.access_token,
            id_token: tokens.id_token.expect("an id_token"),
            refresh_token: tokens.refresh_token.expect("a refresh token"),
        }
    }

    /// Adds a user who cannot log in with a password (tokens come from
    /// [`TestApp::token_pair`]).
    ///
    /// # Panics
    /// When storage fails.
    pub async fn add_user(&self, login: &str) -> uuid::Uuid {
        use portico_model::clock::Clock as _;
        let id = uuid::Uuid::new_v4();
        self.store
            .create_user(&portico_model::user::User {
                id: id.into(),
                login: login.into(),
                password_hash: "$argon2id$unusable".into(),
                phone: None,
                email: None,
                name: None,
                phone_login_enabled: false,
                blocked: false,
                deactivated: false,
                created_at: self.clock.now(),
                provisioned: None,
                revision: 0,
            })
            .await
            .expect("create a user");
        id
    }

    /// Applies a permission document through the admin API.
    ///
    /// # Panics
    /// When the request fails to send.
    pub async fn apply_permissions(&self, doc: &serde_json::Value) -> reqwest::Response {
        self.http()
            .post(self.url("/admin/v1/permissions"))
            .bearer_auth(ADMIN_TOKEN)
            .json(doc)
            .send()
            .await
            .expect("admin request")
    }

    /// Liveness status of an access token.
    pub async fn liveness(&self, access_token: &str) -> u16 {
        self.http()
            .get(self.url("/oauth2/token/liveness"))
            .bearer_auth(access_token)
            .send()
            .await
            .expect("liveness")
            .status()
            .as_u16()
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
/// The internal token every test server is configured with.
pub const INTERNAL_TOKEN: &str = "test-internal-token-0123456789abcdef";
/// The SCIM token every test server is configured with.
pub const SCIM_TOKEN: &str = "test-scim-token-0123456789abcdef";

/// The tokens a business API call carries, and whose they are.
#[derive(Debug, Clone)]
pub struct TokenPair {
    pub user_id: uuid::Uuid,
    pub access_token: String,
    pub id_token: String,
    pub refresh_token: String,
}

impl TokenPair {
    /// `Authorization`, `Id-Token` and `x-system-id` on `request`.
    pub fn on(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        request
            .header("authorization", format!("Bearer {}", self.access_token))
            .header("id-token", &self.id_token)
            .header("x-system-id", "test-system")
    }
}

/// `TokenResponseDTO` as a client reads it.
#[derive(Debug, Clone, Deserialize)]
pub struct TokenResponse {
    pub access_token: String,
    pub token_type: String,
    pub expires_in: i64,
    pub scope: Option<String>,
    pub refresh_token: Option<String>,
    pub id_token: Option<String>,
    pub refresh_expires_at: Option<i64>,
}

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

/// The `Location` header.
pub fn location(response: &reqwest::Response) -> String {
    response.headers().get("location").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
}

/// The query parameters of a redirect's `Location`.
pub fn location_params(response: &reqwest::Response) -> Vec<(String, String)> {
    url::Url::parse(&location(response))
        .map(|u| u.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect())
        .unwrap_or_default()
}

/// One query parameter of a redirect's `Location`.
pub fn location_param(response: &reqwest::Response, name: &str) -> Option<String> {
    location_params(response).into_iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

/// The code from a success redirect to `redirect_uri`.
///
/// # Panics
/// When the response is not such a redirect.
pub fn code_from(response: &reqwest::Response, redirect_uri: &str) -> String {
    let target = location(response);
    assert!(target.starts_with(redirect_uri), "redirects to the client: {target}");
    assert_eq!(location_param(response, "state").as_deref(), Some("st-123"));
    location_param(response, "code").expect("a code")
}

/// The JSON in `<script id="viewData" type="application/json">`.
///
/// # Panics
/// When the page has no such element.
pub fn view_data(html: &str) -> serde_json::Value {
    let start_tag = r#"<script id="viewData" type="application/json">"#;
    let start = html.find(start_tag).expect("script#viewData") + start_tag.len();
    let end = html[start..].find("</script>").expect("end of script") + start;
    serde_json::from_str(&html[start..end]).expect("viewData is JSON")
}

/// Decodes a JWT's claims without verifying (for assertions only).
pub fn jwt_claims(token: &str) -> serde_json::Value {
    let payload = token.split('.').nth(1).expect("JWT payload");
    serde_json::from_slice(&portico_crypto::b64url_decode(payload).expect("base64url")).expect("JSON claims")
}

/// Decodes a JWT's header.
pub fn jwt_header(token: &str) -> serde_json::Value {
    let header = token.split('.').next().expect("JWT header");
    serde_json::from_slice(&portico_crypto::b64url_decode(header).expect("base64url")).expect("JSON header")
}

/// A TCP proxy the test can cut and restore, to simulate a database outage.
pub struct TcpProxy {
    pub addr: std::net::SocketAddr,
    up: Arc<tokio::sync::watch::Sender<bool>>,
}

impl TcpProxy {
    /// Forwards connections on a new loopback port to `upstream`.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub async fn start(upstream: String) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the proxy");
        let addr = listener.local_addr().expect("proxy address");
        let (up, _) = tokio::sync::watch::channel(true);
        let up = Arc::new(up);
        let state = Arc::clone(&up);
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if !*state.borrow() {
                    continue; // dropped: the client sees the connection close
                }
                let upstream = upstream.clone();
                let mut cut = state.subscribe();
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(&upstream).await else { return };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cut.wait_for(|up| !*up) => {}
                    }
                });
            }
        });
        Self { addr, up }
    }

    /// Closes every forwarded connection and refuses new ones.
    pub fn cut(&self) {
        self.up.send_replace(false);
    }

    /// Forwards again.
    pub fn restore(&self) {
        self.up.send_replace(true);
    }

    /// `database_url` (a `postgres://` URL) through this proxy.
    ///
    /// # Panics
    /// When `database_url` is not a URL.
    pub fn url_through(&self, database_url: &str) -> String {
        let mut url = url::Url::parse(database_url).expect("a database URL");
        url.set_host(Some("127.0.0.1")).expect("a host");
        url.set_port(Some(self.addr.port())).expect("a port");
        url.to_string()
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

/// SoftHSM2 tokens for the HSM tests: made with `softhsm2-util` once per
/// test process, before any test opens the module (a PKCS#11 module sees
/// the tokens it found when it was initialized). The module's path comes
/// from `PORTICO_TEST_SOFTHSM`; SoftHSM's own `SOFTHSM2_CONF` says where
/// the tokens live.
pub mod softhsm {
    use std::path::PathBuf;
    use std::sync::OnceLock;

    /// The user PIN of every test token.
    pub const PIN: &str = "271828";
    const SO_PIN: &str = "314159";

    /// The module and a token made for one purpose.
    #[derive(Debug, Clone)]
    pub struct Token {
        pub module: PathBuf,
        pub label: String,
    }

    /// Purposes a token is made for: each its own token. A login is the
    /// process's, not the session's (PKCS#11), so a test that needs a
    /// token nobody logged in to (a wrong PIN must be refused) has its own.
    pub const PURPOSES: [&str; 4] = ["keys", "outage", "setup", "empty"];

    /// The token for `purpose` (one of [`PURPOSES`]), or `None` (and a skip
    /// notice) when `PORTICO_TEST_SOFTHSM` is not set.
    ///
    /// # Panics
    /// When `softhsm2-util` cannot make the tokens.
    pub fn token(purpose: &str) -> Option<Token> {
        static MADE: OnceLock<Option<PathBuf>> = OnceLock::new();
        let module = MADE.get_or_init(|| {
            let Ok(module) = std::env::var("PORTICO_TEST_SOFTHSM") else {
                crate::skipped("PORTICO_TEST_SOFTHSM is not set; the HSM tests need SoftHSM2's module (softhsm2)");
                return None;
            };
            for purpose in PURPOSES {
                let out = std::process::Command::new("softhsm2-util")
                    .args(["--init-token", "--free", "--label", &label(purpose), "--pin", PIN, "--so-pin", SO_PIN])
                    .output()
                    .expect("run softhsm2-util");
                assert!(out.status.success(), "softhsm2-util: {}", String::from_utf8_lossy(&out.stderr));
            }
            Some(PathBuf::from(module))
        });
        assert!(PURPOSES.contains(&purpose), "no token is made for {purpose}");
        module.clone().map(|module| Token { module, label: label(purpose) })
    }

    fn label(purpose: &str) -> String {
        format!("portico-{}-{purpose}", std::process::id())
    }
}

/// A GOST test PKI made by OpenSSL's GOST engine, for the report signature
/// tests and benchmark.
pub mod gost {
    use std::path::PathBuf;

    use portico_reports::generate::qes::{self, Algorithm, Output};

    /// A test CA and a broker's certificate under it, with GOST R 34.10-2012
    /// (256-bit) keys, made by OpenSSL's GOST engine.
    pub struct GostPki {
        pub dir: crate::TempDir,
        pub openssl: String,
    }

    impl GostPki {
        /// `None` (and a skip notice) without openssl or its GOST engine.
        pub fn new() -> Option<Self> {
            let Ok(openssl) = std::env::var("PORTICO_TEST_OPENSSL") else {
                crate::skipped("PORTICO_TEST_OPENSSL is not set; the GOST signature tests need openssl");
                return None;
            };
            let engine = std::process::Command::new(&openssl).args(["engine", "gost"]).output();
            if !engine.is_ok_and(|out| out.status.success()) {
                crate::skipped("OpenSSL's GOST engine is missing (Debian package libengine-gost-openssl)");
                return None;
            }
            let pki = Self { dir: crate::TempDir::new(), openssl };
            pki.run(&["genpkey", "-algorithm", "gost2012_256", "-pkeyopt", "paramset:A", "-out", "ca.key"]);
            pki.run(&[
                "req",
                "-new",
                "-x509",
                "-key",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                "3650",
                "-md_gost12_256",
                "-subj",
                "/O=Test CA/CN=Test GOST CA",
            ]);
            for name in ["broker", "stranger"] {
                let key = format!("{name}.key");
                pki.run(&["genpkey", "-algorithm", "gost2012_256", "-pkeyopt", "paramset:A", "-out", &key]);
                let csr = format!("{name}.csr");
                let subject = format!("/O=Broker/CN={name}");
                pki.run(&["req", "-new", "-key", &key, "-out", &csr, "-md_gost12_256", "-subj", &subject]);
                std::fs::write(pki.path("ext.cnf"), "keyUsage=digitalSignature,nonRepudiation\n").unwrap();
                pki.run(&[
                    "x509",
                    "-req",
                    "-in",
                    &csr,
                    "-CA",
                    "ca.pem",
                    "-CAkey",
                    "ca.key",
                    "-CAcreateserial",
                    "-out",
                    &format!("{name}.pem"),
                    "-days",
                    "3650",
                    "-md_gost12_256",
                    "-extfile",
                    "ext.cnf",
                ]);
            }
            Some(pki)
        }

        pub fn path(&self, name: &str) -> PathBuf {
            self.dir.0.join(name)
        }

        pub fn run(&self, args: &[&str]) {
            let out = std::process::Command::new(&self.openssl)
                .args(args)
                .args(["-engine", "gost"])
                .current_dir(&self.dir.0)
                .output()
                .expect("run openssl");
            assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        }

        pub fn argv(&self, args: &[&str]) -> Vec<String> {
            std::iter::once(self.openssl.as_str()).chain(args.iter().copied()).map(str::to_owned).collect()
        }

        /// `openssl cms -sign` with the broker's key: a whole detached CMS.
        pub fn cms_command(&self) -> Vec<String> {
            let (cert, key) = (self.path("broker.pem"), self.path("broker.key"));
            self.argv(&[
                "cms",
                "-sign",
                "-engine",
                "gost",
                "-md",
                "md_gost12_256",
                "-binary",
                "-outform",
                "DER",
                "-cades",
                "-signer",
                &cert.display().to_string(),
                "-inkey",
                &key.display().to_string(),
            ])
        }

        /// `openssl dgst -sign` with `key`: the signature of standard input.
        pub fn signature_command(&self, key: &str) -> Vec<String> {
            let key = self.path(key).display().to_string();
            self.argv(&["dgst", "-engine", "gost", "-md_gost12_256", "-sign", &key])
        }

        /// `openssl cms -verify` against the test CA.
        pub fn verify_command(&self) -> Vec<String> {
            let ca = self.path("ca.pem").display().to_string();
            self.argv(&[
                "cms",
                "-verify",
                "-engine",
                "gost",
                "-binary",
                "-inform",
                "DER",
                "-in",
                "{signature}",
                "-content",
                "{content}",
                "-CAfile",
                &ca,
                "-purpose",
                "any",
                "-out",
                "/dev/null",
            ])
        }

        pub fn configure(&self, config: &mut portico_server::Config, command: Vec<String>, output: Output) {
            config.reports.signing_cert = Some(self.path("broker.pem"));
            config.reports.signature = qes::Settings {
                algorithm: Algorithm::Gost2012_256,
                chain: Some(self.path("ca.pem")),
                command,
                output,
                timeout_secs: 10,
                concurrency: 2,
                verify_command: self.verify_command(),
                hsm_key_label: None,
            };
        }
    }
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
