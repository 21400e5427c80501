//! Assembly: storage, keys, services and routes, from a [`Config`].

use portico_permissions::PermissionsApi;
use portico_permissions::service::PermissionService;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, HeaderValue};
use axum::middleware;
use axum::routing::get;
use portico_identity::Identity;
use portico_identity::passwords::PasswordChecker;
use portico_model::clock::Clock;
use portico_storage::Storage;
use portico_storage_pg::PgStore;
use portico_storage_sqlite::SqliteStore;
use portico_tokens::{KeyRing, TokenVerifier};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::set_header::SetResponseHeaderLayer;

use crate::config::{Config, Database};
use crate::secret::InstanceSecret;
use crate::{demo, http, tasks};

/// Largest request body any route reads, unless the route says less.
const MAX_BODY: usize = 1024 * 1024;

/// State of the server's own routes (health, demo).
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn Storage>,
    pub identity: Arc<Identity>,
}

/// The sockets a serving node answers on.
pub struct Listeners {
    /// Every route (`listen`).
    pub http: TcpListener,
    /// Only `GET /metrics` (`metrics_listen`), when configured.
    pub metrics: Option<TcpListener>,
    /// Every route again over TLS asking for client certificates
    /// (`mtls.listen`), with its TLS configuration, when configured.
    pub mtls: Option<(TcpListener, Arc<rustls::ServerConfig>)>,
}

impl Listeners {
    /// Binds `listen` and, when set, `metrics_listen`.
    ///
    /// # Errors
    /// When an address cannot be bound; the message names the setting.
    pub async fn bind(config: &Config) -> anyhow::Result<Self> {
        let listen = config.listen;
        let http = TcpListener::bind(listen)
            .await
            .with_context(|| format!("cannot listen on {listen} (listen / PORTICO_LISTEN)"))?;
        let metrics =
            match config.metrics_listen {
                Some(address) => Some(TcpListener::bind(address).await.with_context(|| {
                    format!("cannot listen on {address} (metrics_listen / PORTICO_METRICS_LISTEN)")
                })?),
                None => None,
            };
        let mtls = match (config.mtls.listen, config.mtls.server_tls().map_err(anyhow::Error::msg)?) {
            (Some(address), Some(tls)) => {
                let listener = TcpListener::bind(address)
                    .await
                    .with_context(|| format!("cannot listen on {address} (mtls.listen / PORTICO_MTLS__LISTEN)"))?;
                Some((listener, tls))
            }
            _ => None,
        };
        Ok(Self { http, metrics, mtls })
    }
}

/// A configured, migrated, ready-to-serve Portico.
pub struct App {
    pub config: Config,
    pub store: Arc<dyn Storage>,
    pub identity: Arc<Identity>,
    pub permissions: Arc<PermissionService>,
    pub notify: Arc<portico_notify::Notify>,
    pub reports: Arc<portico_reports::Reports>,
    pub admin: Arc<portico_admin::AdminService>,
    /// The operator console, unless `console = false`.
    pub console: Option<Arc<portico_console::Console>>,
    /// The customer's account page, unless `account = false`.
    pub account: Option<Arc<portico_account::Account>>,
    /// Who may call the admin and internal APIs: the tokens, and operators.
    pub api_tokens: portico_api::ApiTokens,
    /// Dynamic client registration's settings.
    pub registration: Arc<portico_admin::registration::Registration>,
    pub demo: bool,
}

/// Connects to the configured database and applies pending migrations.
///
/// # Errors
/// When the database cannot be reached or migrated; the message says which.
pub async fn open_store(config: &Config) -> anyhow::Result<Arc<dyn Storage>> {
    open_store_for(config, false).await
}

/// [`open_store`], for a serving node: with its node-local answers
/// (`database_cache_staleness_ms`).
async fn open_store_for(config: &Config, serving: bool) -> anyhow::Result<Arc<dyn Storage>> {
    let staleness = Duration::from_millis(if serving { config.database_cache_staleness_ms.into() } else { 0 });
    Ok(match config.database()? {
        Database::Sqlite(url) => {
            std::fs::create_dir_all(&config.data_dir)
                .with_context(|| format!("cannot create the data folder {}", config.data_dir.display()))?;
            warn_if_open_to_others(&config.data_dir);
            let store = SqliteStore::connect(&url).await.with_context(|| format!("cannot open {url}"))?;
            store.migrate().await?;
            Arc::new(store.with_node_memory(staleness))
        }
        Database::Postgres(url) => {
            let timeout = Duration::from_secs(config.database_acquire_timeout_secs.into());
            let store = PgStore::connect(&url, config.database_max_connections, timeout)
                .await
                .context("cannot connect to PostgreSQL (database_url / PORTICO_DATABASE_URL)")?;
            store.migrate().await?;
            Arc::new(store.with_node_cache(staleness))
        }
    })
}

/// A data folder made before Portico restricted its files (or by hand) may
/// let other users read the database: say so, with the fix.
fn warn_if_open_to_others(folder: &std::path::Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        if let Ok(metadata) = std::fs::metadata(folder)
            && metadata.permissions().mode() & 0o077 != 0
        {
            tracing::warn!(
                folder = %folder.display(),
                mode = format!("{:o}", metadata.permissions().mode() & 0o777),
                "the data folder is open to other users and holds personal data: chmod 700 it"
            );
        }
    }
}

impl App {
    /// Opens storage, loads (or creates) the signing keys, and, with `demo`,
    /// seeds the demo data set into an empty database.
    ///
    /// # Errors
    /// For an unusable configuration, database or instance secret.
    pub async fn build(config: Config, clock: Arc<dyn Clock>, demo: bool) -> anyhow::Result<Self> {
        crate::telemetry::metrics();
        // Outgoing TLS (SMS gateway, CAPTCHA service) on aws-lc-rs, as everything else.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        let store = open_store_for(&config, true).await?;
        let secret = InstanceSecret::load(&config)?;
        let (default, algorithms) = config.tokens.algorithms()?;
        let holders = config.tokens.key_holders()?;
        let keys =
            KeyRing::load_with(Arc::clone(&store), secret.sealer(), holders, clock.now(), default, &algorithms).await?;
        let mut settings = config.identity_settings();
        let tokens = Arc::new(TokenVerifier {
            mtls_alias: settings.mtls_aliases.clone(),
            ..TokenVerifier::new(Arc::clone(&store), Arc::clone(&clock), settings.issuer.clone(), keys)
        });
        let operators: Arc<dyn portico_api::auth::OperatorAuthority> = Arc::new(portico_admin::operators::Operators {
            tokens: Arc::clone(&tokens),
            store: Arc::clone(&store),
            client_id: config.operator_client_id.as_str().into(),
        });
        let api_tokens = config.api_tokens().with_operators(Arc::clone(&operators));
        if demo && config.theme.bank_name.is_none() {
            settings.branding = crate::demo::branding();
        }
        let rp_name = settings
            .branding
            .bank_name
            .en
            .as_deref()
            .or(settings.branding.bank_name.ru.as_deref())
            .unwrap_or("Portico");
        let mut passkeys = portico_identity::passkeys::Passkeys::new(&settings.issuer, rp_name);
        if !config.login.passkey_allowed_aaguids.is_empty() {
            passkeys = allowed_authenticators(passkeys, &config.login)?;
        }
        if let Some(why) = passkeys.unavailable() {
            tracing::info!(reason = why, "passkeys are not offered");
        }
        let identity = Arc::new(Identity {
            passkeys,
            store: Arc::clone(&store),
            clock: Arc::clone(&clock),
            settings,
            tokens: Arc::clone(&tokens),
            cookies: secret.cookie_signer(),
            passwords: Arc::new(PasswordChecker::new(config.login.password_hash_concurrency as usize)),
            otp_sender: crate::delivery::otp_sender(&config)?,
            captcha: crate::delivery::captcha(&config)?,
            client_keys: portico_identity::client_keys::ClientKeys::new(
                secret.sealer(),
                Arc::clone(&clock),
                public_only_resolver(config.notifications.allow_insecure_callbacks.unwrap_or(demo)),
            )
            .context("cannot build the HTTP client that fetches clients' keys")?,
        });
        let permissions = Arc::new(PermissionService::new(Arc::clone(&store)));
        let queued = Arc::new(tokio::sync::Notify::new());
        let notify = Arc::new(portico_notify::Notify {
            store: Arc::clone(&store),
            clock: Arc::clone(&identity.clock),
            sealer: secret.sealer(),
            api_tokens: api_tokens.clone(),
            allow_insecure_callbacks: config.notifications.allow_insecure_callbacks.unwrap_or(demo),
            timeout: Duration::from_millis(config.notifications.timeout_ms.max(1)),
            source_address: config.notifications.source_address,
            lease: Duration::from_secs(config.notifications.lease_secs),
            per_merchant: config.notifications.per_merchant as usize,
            in_flight: config.notifications.in_flight as usize,
            intake: portico_notify::commit::IntakeWriter::start(Arc::clone(&store), Arc::clone(&queued)),
            queued,
            known_merchants: Default::default(),
            retention: (config.notifications.retention_days > 0)
                .then(|| Duration::from_secs(u64::from(config.notifications.retention_days) * 24 * 3600)),
            retry: portico_notify::delivery::RetrySchedule {
                waits: config
                    .notifications
                    .retry_waits_secs
                    .iter()
                    .map(|s| time::Duration::seconds(i64::from(*s)))
                    .collect(),
                window: time::Duration::seconds(i64::from(config.notifications.retry_window_secs)),
            },
        });
        if demo {
            demo::seed(&identity, &permissions, &notify).await?;
        }
        let files = match &config.reports.s3 {
            Some(s3) => portico_reports::files::FileStore::s3(s3).await.context("reports.s3")?,
            None => {
                let dir = config.reports.files_dir.clone().unwrap_or_else(|| config.data_dir.join("reports"));
                portico_reports::files::FileStore::local(&dir).context("reports.files_dir")?
            }
        };
        let mut assets =
            portico_reports::generate::Assets { broker: config.reports.broker.clone(), ..Default::default() };
        if let Some(path) = &config.reports.facsimile_png {
            assets.facsimile_png = std::fs::read(path)
                .with_context(|| format!("reports.facsimile_png: cannot read {}", path.display()))?;
            if !assets.facsimile_png.starts_with(b"\x89PNG") {
                anyhow::bail!("reports.facsimile_png: {} is not a PNG image", path.display());
            }
        }
        let reports = Arc::new(portico_reports::Reports {
            store: Arc::clone(&store),
            clock: Arc::clone(&identity.clock),
            tokens,
            permissions: Arc::clone(&permissions),
            files,
            api_tokens: api_tokens.clone(),
            lease: Duration::from_secs(config.reports.lease_secs),
            assets: Arc::new(portico_reports::generate::Assets {
                signer: Some(Arc::new(report_signer(&config, identity.tokens.keys.hsm())?)),
                ..assets
            }),
            queued: tokio::sync::Notify::new(),
            retention: (config.reports.retention_days > 0)
                .then(|| time::Duration::days(i64::from(config.reports.retention_days))),
            max_unfinished: config.reports.max_unfinished_per_company,
        });
        let admin = Arc::new(
            portico_admin::AdminService::new(Arc::clone(&store), Arc::clone(&identity.clock), secret.sealer())
                .allowing_insecure_addresses(config.notifications.allow_insecure_callbacks.unwrap_or(demo))
                .signing_with(identity.tokens.keys.default_algorithm(), identity.tokens.keys.algorithms())
                .with_default_profile(config.registration.default_security_profile)
                .with_key_holders(identity.tokens.keys.holders().clone())
                .hashing_with(Arc::clone(&identity.passwords)),
        );
        let console = if config.console {
            let console = Arc::new(portico_console::Console {
                identity: Arc::clone(&identity),
                admin: Arc::clone(&admin),
                notify: Arc::clone(&notify),
                reports: Arc::clone(&reports),
                permissions: Arc::clone(&permissions),
                operators,
                client: portico_console::Console::own_client(
                    config.operator_client_id.as_str().into(),
                    &config.public_url(),
                    config.console_sign_in_max_age_secs,
                ),
                sealer: secret.console_sealer(),
            });
            // After the demo data: the demo seeds only an empty database.
            console
                .client
                .register(&identity)
                .await
                .context("cannot register the operator console's client (operator_client_id)")?;
            Some(console)
        } else {
            None
        };
        let account = if config.account {
            // The console's client makes operators: the account page's
            // tokens must never be theirs.
            anyhow::ensure!(
                config.account_client_id != config.operator_client_id,
                "account_client_id and operator_client_id are both `{}`: give the account page a client of its own \
                 (default portico-account)",
                config.account_client_id
            );
            let account = Arc::new(portico_account::Account {
                identity: Arc::clone(&identity),
                client: portico_account::Account::own_client(
                    config.account_client_id.as_str().into(),
                    &config.public_url(),
                ),
                sealer: secret.account_sealer(),
            });
            account
                .client
                .register(&identity)
                .await
                .context("cannot register the account page's client (account_client_id)")?;
            Some(account)
        } else {
            None
        };
        let registration = Arc::new(portico_admin::registration::Registration {
            service: Arc::clone(&admin),
            initial_access_token: config.registration.initial_access_token.clone(),
            issuer: identity.settings.issuer.clone(),
            statements: config.registration.software_statements()?,
            hold_for_approval: config.registration.require_approval,
            certificates: identity.settings.certificates(),
        });
        Ok(Self {
            config,
            store,
            identity,
            permissions,
            notify,
            reports,
            admin,
            console,
            account,
            api_tokens,
            registration,
            demo,
        })
    }

    /// Every route, with the middleware.
    pub fn router(&self) -> Router {
        let state = AppState { store: Arc::clone(&self.store), identity: Arc::clone(&self.identity) };
        let mut router = Router::new()
            .route("/healthz", get(http::healthz))
            .route("/readyz", get(http::readyz))
            .route("/favicon.ico", get(|| async { axum::http::StatusCode::NO_CONTENT }));
        if self.config.metrics_listen.is_none() {
            router = router.route("/metrics", get(http::metrics));
        }
        let mut router = router
            .with_state(state.clone())
            .merge(portico_identity::router(Arc::clone(&self.identity)))
            .merge(portico_permissions::router(Arc::new(PermissionsApi {
                store: Arc::clone(&self.store),
                clock: Arc::clone(&self.identity.clock),
                tokens: Arc::clone(&self.identity.tokens),
                service: Arc::clone(&self.permissions),
                api_tokens: self.api_tokens.clone(),
            })))
            .merge(portico_notify::router(Arc::clone(&self.notify)))
            .merge(portico_admin::router(Arc::new(portico_admin::AdminApi {
                service: Arc::clone(&self.admin),
                api_tokens: self.api_tokens.clone(),
            })))
            .merge(portico_admin::registration::router(Arc::clone(&self.registration)))
            .merge(portico_admin::scim::router(Arc::new(portico_admin::scim::Scim {
                service: Arc::clone(&self.admin),
                token: self.config.scim_token.as_deref().map(portico_crypto::hash::BearerSecret::new),
                base: format!("{}/scim/v2", self.config.public_url().trim_end_matches('/')),
            })))
            .merge(portico_reports::router(Arc::clone(&self.reports)))
            .merge(self.console.clone().map(portico_console::router).unwrap_or_default())
            .merge(self.account.clone().map(portico_account::router).unwrap_or_default())
            .merge(crate::openapi::router());
        if self.demo {
            router = router.merge(demo::router(state)).merge(demo::merchant::router(Arc::clone(&self.notify)));
        }
        // Last of the routes: `method_not_allowed_fallback` reaches only
        // the routes added before it.
        let router = router
            .fallback({
                let identity = Arc::clone(&self.identity);
                move |method, headers, uri| crate::unrouted::not_found(identity, method, headers, uri)
            })
            .method_not_allowed_fallback(crate::unrouted::method_not_allowed);
        let header = |name: &'static str, value: &'static str| {
            SetResponseHeaderLayer::if_not_present(HeaderName::from_static(name), HeaderValue::from_static(value))
        };
        // Checked when the configuration was loaded.
        let certificates = Arc::new(self.config.mtls.edge().unwrap_or_default());
        router
            .layer(middleware::from_fn_with_state(certificates, portico_identity::mtls::edge))
            .layer(middleware::from_fn(portico_api::request::remember_id))
            .layer(middleware::from_fn(http::observe))
            .layer(PropagateRequestIdLayer::new(http::REQUEST_ID))
            .layer(SetRequestIdLayer::new(http::REQUEST_ID, MakeRequestUuid))
            .layer(middleware::from_fn(http::usable_request_id))
            .layer(header("x-content-type-options", "nosniff"))
            .layer(header("x-frame-options", "DENY"))
            .layer(header("referrer-policy", "no-referrer"))
            .layer(SetResponseHeaderLayer::if_not_present(
                HeaderName::from_static("strict-transport-security"),
                self.config.hsts().and_then(|value| HeaderValue::from_str(&value).ok()),
            ))
            .layer(CatchPanicLayer::new())
            .layer(DefaultBodyLimit::max(MAX_BODY))
    }

    /// Serves on `listeners` with the background tasks until `shutdown`
    /// completes. Then every listener and worker stops at once: the
    /// listeners let requests in flight finish (within
    /// `http.shutdown_grace_secs`) while the workers claim nothing more and
    /// finish what they hold, so a long drain costs the workers none of
    /// the time a node is given to stop.
    ///
    /// # Errors
    /// When the server fails.
    pub async fn serve(
        self,
        listeners: Listeners,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let (stop_tx, stop_rx) = watch::channel(false);
        let workers =
            self.start_workers(self.config.notifications.deliver, self.config.reports.generate, stop_rx.clone())?;
        let router = self.router();
        let http = &self.config.http;
        let limits = crate::listener::Limits {
            header_read_timeout: Duration::from_secs(http.header_read_timeout_secs.into()),
            idle_timeout: Duration::from_secs(http.idle_timeout_secs.into()),
            max_connections: http.max_connections as usize,
            body_timeout: Duration::from_secs(http.body_timeout_secs.into()),
            body_min_rate: http.body_min_bytes_per_sec.into(),
            shutdown_grace: Duration::from_secs(http.shutdown_grace_secs.into()),
        };
        // The metrics and mutual-TLS listeners stop with the public one.
        let mtls = listeners.mtls.map(|(listener, tls)| {
            let mut stop = stop_rx.clone();
            tokio::spawn(crate::listener::serve(listener, router.clone(), limits, Some(tls), async move {
                let _ = stop.wait_for(|stop| *stop).await;
            }))
        });
        let metrics = listeners.metrics.map(|listener| {
            let state = AppState { store: Arc::clone(&self.store), identity: Arc::clone(&self.identity) };
            let router = Router::new()
                .route("/metrics", get(http::metrics))
                .with_state(state)
                .layer(middleware::from_fn(http::observe));
            let limits = crate::listener::Limits { max_connections: 64, ..limits };
            let mut stop = stop_rx;
            tokio::spawn(crate::listener::serve(listener, router, limits, None, async move {
                let _ = stop.wait_for(|stop| *stop).await;
            }))
        });
        let stopping = {
            let stop_tx = stop_tx.clone();
            async move {
                shutdown.await;
                let _ = stop_tx.send(true);
            }
        };
        let http = async {
            let result = crate::listener::serve(listeners.http, router, limits, None, stopping).await;
            // A listener that failed stops the rest too.
            let _ = stop_tx.send(true);
            result
        };
        let work = async {
            for worker in workers {
                let _ = worker.await;
            }
            tracing::info!("background work stopped");
        };
        let (result, ()) = tokio::join!(http, work);
        if let Some(metrics) = metrics
            && let Ok(Err(error)) = metrics.await
        {
            tracing::warn!(%error, "the metrics listener failed");
        }
        if let Some(mtls) = mtls
            && let Ok(Err(error)) = mtls.await
        {
            tracing::warn!(%error, "the mutual-TLS listener failed");
        }
        result.context("the HTTP server failed")
    }

    /// Runs only the background roles (notification delivery and the
    /// cleaner), without HTTP: `portico worker`, for nodes that only work.
    ///
    /// # Errors
    /// When a worker cannot start.
    pub async fn work(self, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
        let (stop_tx, stop_rx) = watch::channel(false);
        let workers = self.start_workers(true, true, stop_rx)?;
        shutdown.await;
        let _ = stop_tx.send(true);
        for worker in workers {
            let _ = worker.await;
        }
        Ok(())
    }

    fn start_workers(
        &self,
        deliver: bool,
        generate: bool,
        stop: watch::Receiver<bool>,
    ) -> anyhow::Result<Vec<tokio::task::JoinHandle<()>>> {
        let mut workers = Vec::new();
        if deliver {
            let deliverer = portico_notify::delivery::Deliverer::new(Arc::clone(&self.notify))
                .context("cannot build the notification HTTP client")?;
            let every = Duration::from_millis(self.config.notifications.delivery_interval_ms.max(10));
            workers.push(tokio::spawn(portico_notify::worker::run(deliverer, every, stop.clone())));
        }
        if generate {
            let every = Duration::from_millis(self.config.reports.interval_ms.max(10));
            for _ in 0..self.config.reports.workers {
                let reports = Arc::clone(&self.reports);
                workers.push(tokio::spawn(portico_reports::worker::run(reports, every, stop.clone())));
            }
        }
        // Clients' back-channel addresses are held to the merchant callbacks'
        // rule, also where their host names lead.
        let resolver = public_only_resolver(self.notify.allow_insecure_callbacks);
        let back_channel = portico_identity::backchannel::BackChannel::new(Arc::clone(&self.identity), resolver)
            .context("cannot build the back-channel logout HTTP client")?;
        let every = Duration::from_millis(self.config.login.logout_delivery_interval_ms.max(10));
        workers.push(tokio::spawn(portico_identity::backchannel::run(Arc::new(back_channel), every, stop.clone())));
        let interval = Duration::from_secs(self.config.cleanup_interval_secs);
        workers.push(tokio::spawn(tasks::cleaner(
            Arc::clone(&self.identity),
            Arc::clone(&self.notify),
            Arc::clone(&self.reports),
            interval,
            stop,
        )));
        Ok(workers)
    }
}

/// The `QES` signer: the configured certificate with its key or external
/// command, or a self-signed pair made once in the data folder (marked as
/// a demonstration on the forms).
fn report_signer(
    config: &Config,
    hsm: Option<&portico_tokens::HsmKeys>,
) -> anyhow::Result<portico_reports::generate::qes::Signer> {
    use portico_reports::generate::qes::{self, Algorithm, Signer};
    let read = |path: &std::path::Path, setting: &str| {
        std::fs::read_to_string(path).with_context(|| format!("{setting}: cannot read {}", path.display()))
    };
    let reports = &config.reports;
    let settings = &reports.signature;
    let chain = settings.chain.as_deref().map(|path| read(path, "reports.signature.chain")).transpose()?;
    let timeout = Duration::from_secs(settings.timeout_secs);
    let command = |argv: &[String], setting: &str| {
        qes::command::Command::new(argv.to_vec(), timeout, settings.concurrency)
            .map_err(|e| anyhow::anyhow!("{setting}: {e}"))
    };
    let verify = (!settings.verify_command.is_empty())
        .then(|| command(&settings.verify_command, "reports.signature.verify_command"))
        .transpose()?;
    if let Some(label) = &settings.hsm_key_label {
        let hsm = hsm.ok_or_else(|| {
            anyhow::anyhow!("reports.signature.hsm_key_label needs tokens.hsm (the module, token and PIN)")
        })?;
        if reports.signing_key.is_some() || !settings.command.is_empty() || settings.algorithm != Algorithm::EcdsaP256 {
            anyhow::bail!(
                "reports.signature.hsm_key_label signs ECDSA P-256 alone: leave reports.signing_key and reports.signature.command unset"
            );
        }
        let Some(cert) = &reports.signing_cert else {
            anyhow::bail!(
                "reports.signature.hsm_key_label needs reports.signing_cert: the certificate of the HSM's key"
            );
        };
        let cert = read(cert, "reports.signing_cert")?;
        let es256 = portico_crypto::jwt::Algorithm::Es256;
        let public =
            hsm.hsm.public_key(es256, label).map_err(|e| anyhow::anyhow!("reports.signature.hsm_key_label: {e}"))?;
        let signer = Signer::hsm(hsm.hsm.signer(es256, label), &cert, chain.as_deref())
            .map_err(|e| anyhow::anyhow!("reports.signing_cert: {e}"))?;
        let matches = match (&public, signer.p256_coordinates()) {
            (portico_crypto::jwt::RemotePublic::P256 { x, y }, Some((cx, cy))) => x == cx && y == cy,
            _ => false,
        };
        if !matches {
            anyhow::bail!(
                "reports.signature.hsm_key_label: the HSM's key {label:?} is not the key of reports.signing_cert"
            );
        }
        return Ok(signer);
    }
    if !settings.command.is_empty() {
        let signing = command(&settings.command, "reports.signature.command")?;
        if reports.signing_key.is_some() {
            anyhow::bail!(
                "reports.signing_key and reports.signature.command exclude each other: the command holds the key"
            );
        }
        let Some(cert) = &reports.signing_cert else {
            anyhow::bail!("reports.signature.command needs reports.signing_cert: the certificate of the command's key");
        };
        let cert = read(cert, "reports.signing_cert")?;
        return Signer::external(settings.algorithm, signing, settings.output, &cert, chain.as_deref(), verify)
            .map_err(|e| anyhow::anyhow!("reports.signing_cert / reports.signature: {e}"));
    }
    if settings.algorithm != Algorithm::EcdsaP256 {
        anyhow::bail!(
            "reports.signature.algorithm {}: such signatures are made by an external command \
             (reports.signature.command); Portico's built-in key is ECDSA P-256",
            settings.algorithm
        );
    }
    let (cert, key, demonstration) = match (&reports.signing_cert, &reports.signing_key) {
        (Some(cert), Some(key)) => (read(cert, "reports.signing_cert")?, read(key, "reports.signing_key")?, false),
        (None, None) => {
            let cert_path = config.data_dir.join("reports-signing-cert.pem");
            let key_path = config.data_dir.join("reports-signing-key.pem");
            if !cert_path.exists() || !key_path.exists() {
                let organization = &reports.broker.name;
                let now = time::OffsetDateTime::now_utc();
                let (cert, key) = Signer::generate_self_signed(organization, now)
                    .map_err(|e| anyhow::anyhow!("cannot make a report signing certificate: {e}"))?;
                std::fs::create_dir_all(&config.data_dir)?;
                let _ = std::fs::remove_file(&key_path);
                crate::secret::write_private(&key_path, key.as_bytes())?;
                std::fs::write(&cert_path, &cert)?;
                tracing::info!(certificate = %cert_path.display(), "made a self-signed report signing certificate");
            }
            let cert = read(&cert_path, "the report signing certificate")?;
            (cert, read(&key_path, "the report signing key")?, true)
        }
        _ => anyhow::bail!("reports.signing_cert and reports.signing_key go together: set both or neither"),
    };
    let signer = Signer::builtin(&cert, &key, chain.as_deref())
        .map_err(|e| anyhow::anyhow!("reports.signing_cert / reports.signing_key: {e}"))?;
    Ok(if demonstration { signer.demonstration() } else { signer })
}

/// Completes on SIGTERM or Ctrl-C. The SIGTERM handler is installed by
/// this call, not on first poll, so a signal that arrives once the server
/// has announced itself is never lost.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    async move {
        let ctrl_c = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        let term = async {
            #[cfg(unix)]
            if let Some(term) = term.as_mut() {
                term.recv().await;
                return;
            }
            std::future::pending::<()>().await;
        };
        tokio::select! {
            () = ctrl_c => {}
            () = term => {}
        }
        tracing::info!("shutting down: finishing requests in flight");
    }
}

/// The resolver of addresses Portico sends to on someone else's word: one
/// that refuses internal addresses, unless insecure addresses are allowed
/// (the demo).
fn public_only_resolver(allow_insecure: bool) -> Option<Arc<dyn reqwest::dns::Resolve>> {
    (!allow_insecure).then(|| Arc::new(portico_notify::delivery::PublicOnly) as Arc<dyn reqwest::dns::Resolve>)
}

/// The relying party accepting only the models of
/// `login.passkey_allowed_aaguids`, attested by the CAs of
/// `login.passkey_attestation_ca_file`.
fn allowed_authenticators(
    passkeys: portico_identity::passkeys::Passkeys,
    login: &crate::config::LoginConfig,
) -> anyhow::Result<portico_identity::passkeys::Passkeys> {
    let aaguids = login
        .passkey_allowed_aaguids
        .iter()
        .map(|text| {
            uuid::Uuid::parse_str(text.trim()).map_err(|_| {
                anyhow::anyhow!("login.passkey_allowed_aaguids: `{text}` is not an AAGUID (a UUID, e.g. cb69481e-8ff7-4039-93ec-0a2729a154a8)")
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let Some(file) = &login.passkey_attestation_ca_file else {
        anyhow::bail!(
            "login.passkey_allowed_aaguids is set but login.passkey_attestation_ca_file is not: name the PEM file of \
             the allowed authenticators' attestation CAs (an AAGUID an authenticator merely claims proves nothing)"
        );
    };
    let pem = std::fs::read(file)
        .with_context(|| format!("login.passkey_attestation_ca_file: cannot read {}", file.display()))?;
    passkeys.allowing_only(&aaguids, &pem).map_err(|why| anyhow::anyhow!("login.passkey_attestation_ca_file: {why}"))
}
