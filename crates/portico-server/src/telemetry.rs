//! Logs (tracing) and metrics (Prometheus).

use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;

use crate::config::{Config, LogFormat};

/// Installs the log subscriber once per process (later calls do nothing).
pub fn init_logs(config: &Config) {
    let filter = EnvFilter::try_new(&config.log).unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    let _ = match config.log_format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

/// How often the recorder folds the samples recorded since into its
/// histograms (the exporter's own default).
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// The process's Prometheus recorder, installed on first use.
///
/// A histogram keeps each sample until the recorder's upkeep folds it in,
/// which a scrape does too; a thread of its own runs the upkeep, so that a
/// node nobody scrapes does not keep a sample of every request it served.
pub fn metrics() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        // Another recorder may already be installed (tests); ours then only renders.
        let _ = metrics::set_global_recorder(recorder);
        let upkeep = handle.clone();
        let started = std::thread::Builder::new().name("portico-metrics".into()).spawn(move || {
            loop {
                std::thread::sleep(UPKEEP_EVERY);
                upkeep.run_upkeep();
            }
        });
        if let Err(error) = started {
            tracing::warn!(%error, "cannot start the metrics upkeep thread; histograms are folded in at each scrape only");
        }
        handle
    })
}
