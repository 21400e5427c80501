//! Logs (tracing) and metrics (Prometheus).

use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
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

/// Bucket bounds (seconds) of every histogram: from a cached liveness
/// check to a slow report download.
const LATENCY_BUCKETS: [f64; 14] =
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// Bucket bounds (seconds) of the delivery lag: from a prompt delivery to
/// the last retry a day later.
const LAG_BUCKETS: [f64; 14] =
    [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 21_600.0, 86_400.0];

/// Bucket bounds (seconds) of report generation: a month's statement to a
/// signed year of ten thousand trades.
const GENERATION_BUCKETS: [f64; 12] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// `# HELP` of every family Portico records.
fn describe() {
    metrics::describe_counter!("portico_http_requests_total", "HTTP requests answered, by method, route and status.");
    metrics::describe_histogram!(
        "portico_http_request_duration_seconds",
        metrics::Unit::Seconds,
        "Time to answer an HTTP request, by method, route and status."
    );
    metrics::describe_counter!(
        "portico_tokens_issued_total",
        "Token responses issued (authorization code exchanges and refreshes)."
    );
    metrics::describe_counter!(
        "portico_token_requests_total",
        "Token endpoint requests by grant type and outcome (issued, or the OAuth error code)."
    );
    metrics::describe_counter!(
        "portico_logins_total",
        "Browser login outcomes by method: succeeded, failed (a wrong password), blocked_user."
    );
    metrics::describe_counter!(
        "portico_login_codes_total",
        "One-time login codes by channel (sms, email) and outcome (sent, failed)."
    );
    metrics::describe_counter!(
        "portico_delivery_attempts_total",
        "Merchant notification delivery attempts by outcome: delivered, retry, failed (given up)."
    );
    metrics::describe_histogram!(
        "portico_delivery_lag_seconds",
        metrics::Unit::Seconds,
        "From an event's acknowledgement to its delivery (the receiver's 200), retries included."
    );
    metrics::describe_counter!(
        "portico_login_guard_refusals_total",
        "Password attempts refused before the check, by reason: paused (a pause after repeated failures), \
         captcha (a CAPTCHA is due and was missing or not valid)."
    );
    metrics::describe_counter!(
        "portico_login_pauses_total",
        "Pauses set on a login key after repeated wrong passwords, by key: account, device, address."
    );
    metrics::describe_counter!(
        "portico_revocations_total",
        "Grants and access tokens revoked, by what and reason: revocation_endpoint, code_replay, \
         refresh_replay, session_end."
    );
    metrics::describe_histogram!(
        "portico_database_wait_seconds",
        metrics::Unit::Seconds,
        "Time a database operation waited for its connection: a pooled PostgreSQL connection, or \
         SQLite's single writer."
    );
    metrics::describe_gauge!(
        "portico_database_waiting",
        "Database operations waiting for a connection now (PostgreSQL) or for the writer (SQLite)."
    );
    metrics::describe_counter!(
        "portico_database_wait_timeouts_total",
        "Operations that gave up waiting for a pooled connection (database_acquire_timeout_secs); answered 503."
    );
    metrics::describe_gauge!("portico_database_connections", "Pooled PostgreSQL connections by state: busy, idle.");
    metrics::describe_gauge!("portico_database_connections_max", "The most PostgreSQL connections the pool opens.");
    metrics::describe_counter!("portico_report_tasks_total", "Report tasks finished by outcome: done, failed.");
    metrics::describe_histogram!(
        "portico_report_generation_seconds",
        metrics::Unit::Seconds,
        "Time to produce and store a report task's files, by outcome."
    );
}

/// The process's Prometheus recorder, installed on first use.
///
/// A histogram keeps each sample until the recorder's upkeep folds it in,
/// which a scrape does too; a thread of its own runs the upkeep, so that a
/// node nobody scrapes does not keep a sample of every request it served.
pub fn metrics() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        // Histograms, not summaries: buckets add up across nodes.
        let builder = PrometheusBuilder::new()
            .set_buckets(&LATENCY_BUCKETS)
            .and_then(|b| b.set_buckets_for_metric(Matcher::Full("portico_delivery_lag_seconds".into()), &LAG_BUCKETS))
            .and_then(|b| {
                b.set_buckets_for_metric(Matcher::Full("portico_report_generation_seconds".into()), &GENERATION_BUCKETS)
            })
            .unwrap_or_else(|_| PrometheusBuilder::new());
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        // Another recorder may already be installed (tests); ours then only renders.
        if metrics::set_global_recorder(recorder).is_ok() {
            describe();
        }
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
