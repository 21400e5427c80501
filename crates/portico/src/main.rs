//! `portico`: the one binary. `portico --help` lists the commands.

mod admin;
mod brokerage;
mod merchants;
mod notifications;
mod permissions;
mod sessions;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use portico_model::clock::SystemClock;
use portico_server::{App, Config};

/// jemalloc, not the C library's allocator: report generation allocates in
/// bursts on short-lived blocking threads, and glibc's per-thread arenas
/// keep what those bursts freed. jemalloc gives it back within seconds
/// (docs/benchmarks.md, "Memory over consecutive reports").
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(name = "portico", version, about = "A bank's public identity and API platform")]
struct Cli {
    /// TOML configuration file (settings from PORTICO_* environment variables override it).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP server (and its background tasks).
    Serve {
        /// Seed the demo data set into an empty database and serve the demo client at /demo.
        #[arg(long)]
        demo: bool,
    },
    /// Run only the background roles (notification delivery, clean-up), without HTTP.
    Worker,
    /// Apply pending database migrations and exit.
    Migrate,
    /// Ask this node's own HTTP listener (`listen`) for PATH and exit 0 when
    /// it answers 200: a health check for images without an HTTP client.
    Probe {
        /// `/readyz` (the database answers) or `/healthz` (the process is up).
        #[arg(default_value = "/readyz")]
        path: String,
    },
    /// Manage client applications.
    #[command(subcommand)]
    Clients(admin::ClientCommand),
    /// Manage users.
    #[command(subcommand)]
    Users(admin::UserCommand),
    /// List and end users' single sign-on sessions.
    #[command(subcommand)]
    Sessions(sessions::SessionCommand),
    /// Manage token signing keys.
    #[command(subcommand)]
    Keys(admin::KeyCommand),
    /// Tools for merchants developing their notification endpoint.
    #[command(subcommand)]
    Notifications(notifications::NotificationCommand),
    /// Manage merchants of the notification service.
    #[command(subcommand)]
    Merchants(merchants::MerchantCommand),
    /// Manage companies, roles, the permission catalog and employees.
    #[command(subcommand)]
    Permissions(permissions::PermissionCommand),
    /// Load the brokerage data reports are made from.
    #[command(subcommand)]
    Brokerage(brokerage::BrokerageCommand),
    /// Write the published OpenAPI documents (as served at /openapi/<name>.json) into DIR.
    Openapi {
        /// The folder; docs/openapi in the repository.
        dir: PathBuf,
    },
}

fn main() -> ExitCode {
    portico_server::private_files();
    let cli = Cli::parse();
    let config = match Config::load(cli.config.as_deref()) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("portico: {error}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("portico: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    // Within the runtime: the trace exporter sends on it.
    let telemetry = {
        let _runtime = runtime.enter();
        portico_server::telemetry::init(&config)
    };
    if let Command::Serve { demo } = &cli.command {
        match config.check_serve(*demo) {
            Ok(warnings) => warnings.iter().for_each(|warning| tracing::warn!("{warning}")),
            Err(error) => {
                eprintln!("portico: {error}");
                return ExitCode::from(2);
            }
        }
    }
    let outcome = runtime.block_on(run(cli.command, config));
    {
        let _runtime = runtime.enter();
        telemetry.shutdown();
    }
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("portico: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(command: Command, config: Config) -> anyhow::Result<()> {
    match command {
        Command::Serve { demo } => serve(config, demo).await,
        Command::Worker => {
            let app = App::build(config, Arc::new(SystemClock), false).await?;
            tracing::info!(backend = app.store.backend(), "Portico worker is running");
            app.work(portico_server::app::shutdown_signal()).await
        }
        Command::Migrate => {
            let store = portico_server::app::open_store(&config).await?;
            println!("migrations applied ({} database)", store.backend());
            Ok(())
        }
        Command::Probe { path } => probe(&config, &path).await,
        Command::Clients(command) => admin::clients(&config, command).await,
        Command::Users(command) => admin::users(&config, command).await,
        Command::Sessions(command) => sessions::run(&config, command).await,
        Command::Keys(command) => admin::keys(&config, command).await,
        Command::Permissions(command) => permissions::run(&config, command).await,
        Command::Brokerage(command) => brokerage::run(&config, command).await,
        Command::Openapi { dir } => {
            std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            for document in portico_server::openapi::documents() {
                let path = dir.join(format!("{}.json", document.name));
                std::fs::write(&path, document.to_json())
                    .with_context(|| format!("cannot write {}", path.display()))?;
                println!("{} ({} {})", path.display(), document.api.info.title, document.api.info.version);
            }
            Ok(())
        }
        Command::Merchants(command) => merchants::run(&config, command).await,
        Command::Notifications(command) => notifications::run(&config, command).await,
    }
}

/// How long `portico probe` waits for the answer.
const PROBE_WITHIN: std::time::Duration = std::time::Duration::from_secs(3);

/// `portico probe`: one `GET` to the node's own listener, over loopback
/// when it listens on every address.
async fn probe(config: &Config, path: &str) -> anyhow::Result<()> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    anyhow::ensure!(path.starts_with('/') && !path.contains(char::is_whitespace), "PATH must be like /readyz");
    let mut address = config.listen;
    if address.ip().is_unspecified() {
        address.set_ip(if address.is_ipv4() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            std::net::Ipv6Addr::LOCALHOST.into()
        });
    }
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(address).await?;
        let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await?;
        let mut answer = Vec::new();
        stream.take(4096).read_to_end(&mut answer).await?;
        std::io::Result::Ok(answer)
    };
    let answer = tokio::time::timeout(PROBE_WITHIN, exchange)
        .await
        .map_err(|_| anyhow::anyhow!("{address} did not answer {path} within {} s", PROBE_WITHIN.as_secs()))?
        .with_context(|| format!("cannot reach {address} (listen / PORTICO_LISTEN)"))?;
    let answer = String::from_utf8_lossy(&answer);
    let status = answer.lines().next().unwrap_or_default();
    anyhow::ensure!(status.split(' ').nth(1) == Some("200"), "{path} answered {status:?}");
    println!("{path}: {status}");
    Ok(())
}

async fn serve(config: Config, demo: bool) -> anyhow::Result<()> {
    let app = App::build(config, Arc::new(SystemClock), demo).await?;
    let listeners = portico_server::app::Listeners::bind(&app.config).await?;
    // The addresses bound (a port 0 in the configuration is the one given).
    let listen = listeners.http.local_addr().unwrap_or(app.config.listen);
    let metrics_listen = listeners.metrics.as_ref().and_then(|metrics| metrics.local_addr().ok());
    let mtls_listen = listeners.mtls.as_ref().and_then(|(mtls, _)| mtls.local_addr().ok());
    let shutdown = portico_server::app::shutdown_signal();
    let issuer = app.identity.settings.issuer.clone();
    tracing::info!(
        %listen,
        metrics_listen = ?metrics_listen,
        mtls_listen = ?mtls_listen,
        issuer,
        backend = app.store.backend(),
        "Portico is serving"
    );
    if demo {
        println!("{}", portico_server::demo::banner(&issuer));
    }
    app.serve(listeners, shutdown).await
}
