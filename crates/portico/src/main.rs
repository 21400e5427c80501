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
    let cli = Cli::parse();
    let config = match Config::load(cli.config.as_deref()) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("portico: {error}");
            return ExitCode::from(2);
        }
    };
    portico_server::telemetry::init_logs(&config);
    if let Command::Serve { demo } = &cli.command {
        match config.check_serve(*demo) {
            Ok(warnings) => warnings.iter().for_each(|warning| tracing::warn!("{warning}")),
            Err(error) => {
                eprintln!("portico: {error}");
                return ExitCode::from(2);
            }
        }
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("portico: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli.command, config)) {
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

async fn serve(config: Config, demo: bool) -> anyhow::Result<()> {
    let (listen, metrics_listen) = (config.listen, config.metrics_listen);
    let app = App::build(config, Arc::new(SystemClock), demo).await?;
    let listeners = portico_server::app::Listeners::bind(&app.config).await?;
    let shutdown = portico_server::app::shutdown_signal();
    let issuer = app.identity.settings.issuer.clone();
    tracing::info!(%listen, metrics_listen = ?metrics_listen, issuer, backend = app.store.backend(), "Portico is serving");
    if demo {
        println!("{}", portico_server::demo::banner(&issuer));
    }
    app.serve(listeners, shutdown).await
}
