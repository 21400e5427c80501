//! Logs (tracing), traces (OpenTelemetry over OTLP, when configured) and
//! metrics (Prometheus).

use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

use crate::config::{Config, LogFormat};

/// What the traces are made of, besides Portico's own spans (`info`): each
/// database statement, as an event of the span that ran it (PostgreSQL's
/// driver logs each at `debug`; the SQLite store opens a span for each read
/// and write at `debug`).
const TRACE_FILTER: &str = "info,sqlx::query=debug,portico_storage_sqlite=debug";

/// The installed logs and traces; [`Telemetry::shutdown`] sends the spans
/// still buffered.
pub struct Telemetry {
    traces: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Sends what is buffered and stops the trace exporter.
    pub fn shutdown(self) {
        if let Some(provider) = self.traces
            && let Err(error) = provider.shutdown()
        {
            tracing::warn!(%error, "the last traces could not be sent");
        }
    }
}

/// Installs the log subscriber once per process (later calls do nothing),
/// with an OpenTelemetry layer when `telemetry.otlp_endpoint` is set. Call
/// within the tokio runtime: the exporter sends on it.
pub fn init(config: &Config) -> Telemetry {
    let filter = EnvFilter::try_new(&config.log).unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let text = tracing_subscriber::fmt::layer().with_target(false).with_ansi(ansi).with_writer(std::io::stderr);
    let logs = match config.log_format {
        LogFormat::Text => text.with_filter(filter).boxed(),
        LogFormat::Json => text.json().flatten_event(true).with_filter(filter).boxed(),
    };
    let provider = config.telemetry.otlp_endpoint.as_deref().map(|endpoint| tracer_provider(config, endpoint));
    let traces = provider.as_ref().map(|(provider, _)| {
        let tracer = provider.tracer("portico");
        tracing_opentelemetry::layer().with_tracer(tracer).with_filter(EnvFilter::new(TRACE_FILTER))
    });
    let installed = tracing_subscriber::registry().with(logs).with(traces).try_init().is_ok();
    if let Some((_, endpoint)) = &provider
        && installed
    {
        tracing::info!(endpoint, "sending traces over OTLP");
    }
    Telemetry { traces: provider.filter(|_| installed).map(|(provider, _)| provider) }
}

/// [`init`] without traces: for commands that only log.
pub fn init_logs(config: &Config) {
    let mut config = config.clone();
    config.telemetry.otlp_endpoint = None;
    init(&config);
}

/// The OTLP/HTTP exporter behind a batching provider, and the URL it posts to.
fn tracer_provider(config: &Config, endpoint: &str) -> (SdkTracerProvider, String) {
    let url = format!("{}/v1/traces", endpoint.trim_end_matches('/'));
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(OtlpClient::new())
        .with_endpoint(url.clone())
        .with_timeout(Duration::from_secs(10))
        .build();
    let mut builder = SdkTracerProvider::builder().with_resource(
        opentelemetry_sdk::Resource::builder().with_service_name(config.telemetry.service_name.clone()).build(),
    );
    match exporter {
        Ok(exporter) => builder = builder.with_batch_exporter(exporter),
        Err(error) => eprintln!("portico: telemetry.otlp_endpoint: {error}; no traces are sent"),
    }
    (builder.build(), url)
}

/// The exporter's HTTP client: Portico's reqwest, run on the tokio runtime
/// (the batch exporter calls it from a thread of its own).
#[derive(Debug, Clone)]
struct OtlpClient {
    http: reqwest::Client,
    runtime: Option<tokio::runtime::Handle>,
}

impl OtlpClient {
    fn new() -> Self {
        Self { http: reqwest::Client::new(), runtime: tokio::runtime::Handle::try_current().ok() }
    }
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for OtlpClient {
    async fn send_bytes(
        &self,
        request: axum::http::Request<axum::body::Bytes>,
    ) -> Result<axum::http::Response<axum::body::Bytes>, opentelemetry_http::HttpError> {
        let runtime = self.runtime.clone().ok_or("traces are sent only from within the tokio runtime")?;
        let request = reqwest::Request::try_from(request)?;
        let http = self.http.clone();
        let sent = runtime.spawn(async move {
            let response = http.execute(request).await?;
            let status = response.status();
            let body = response.bytes().await?;
            Ok::<_, reqwest::Error>((status, body))
        });
        let (status, body) = sent.await??;
        Ok(axum::http::Response::builder().status(status).body(body)?)
    }
}

/// How often the recorder folds the samples recorded since into its
/// histograms (the exporter's own default).
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// Bucket bounds (seconds) of every histogram without bounds of its own
/// below: from a cached liveness check to a slow report download.
const LATENCY_BUCKETS: [f64; 14] =
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// Bucket bounds (seconds) of the delivery lag: from a prompt delivery to
/// the last retry a day later.
const LAG_BUCKETS: [f64; 14] =
    [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 21_600.0, 86_400.0];

/// Bucket bounds (seconds) of report generation: a month's statement to a
/// signed year of ten thousand trades.
const GENERATION_BUCKETS: [f64; 12] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];
/// Items per combined PostgreSQL statement: one to the most a statement
/// carries (64).
const BATCH_BUCKETS: [f64; 7] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];

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
        "portico_introspections_total",
        "Token introspection answers by whether the token was active (true, false)."
    );
    metrics::describe_counter!(
        "portico_client_assertion_replays_total",
        "Client assertions refused because their jti was accepted before (on any node)."
    );
    metrics::describe_counter!(
        "portico_logins_total",
        "Browser login outcomes by method (PASSWORD, PHONE, PASSKEY): succeeded, failed (a wrong password or \
         a refused passkey), blocked_user."
    );
    metrics::describe_counter!(
        "portico_login_codes_spared_total",
        "Logins a passkey completed without a one-time code (an SMS or e-mail not sent)."
    );
    metrics::describe_counter!(
        "portico_passkey_offers_total",
        "Answers to the offer to create a passkey after a login with a password and a code, by outcome \
         (created, declined)."
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
        "Password, code, passkey and phone-number attempts refused before the check, by reason: paused (a pause after repeated failures), \
         captcha (a CAPTCHA is due and was missing or not valid)."
    );
    metrics::describe_counter!(
        "portico_login_pauses_total",
        "Pauses set on a login key after repeated wrong passwords, codes or passkey answers, or many \
         codes sent to one user, by key: account, device, address, code, send."
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
    metrics::describe_counter!(
        "portico_database_conflicts_total",
        "PostgreSQL writes the database rolled back to break a conflict with another (a deadlock, a serialization \
         failure), by write (login_completion, session_end, user_flag, user_deletion, client_deletion, and the token and pushed-request writes: code_redemption, refresh_rotation, login_process, pushed_login_process, pushed_code) and outcome: retried (sent \
         again at once), failed (the third try also rolled back; answered 503)."
    );
    metrics::describe_counter!(
        "portico_database_writes_in_doubt_total",
        "Once-only writes (statement: code_redemption, refresh_rotation, and pushed_login_process, pushed_code: \
         the writes taking a pushed authorization request) whose answer a lost PostgreSQL connection took, by \
         outcome: settled (sent again until the database answered; the request got its answer), unknown (the \
         database stayed out of reach for 15 s; answered 503)."
    );
    metrics::describe_histogram!(
        "portico_database_batch_items",
        "Items per combined PostgreSQL statement of the token endpoint, by statement: code_read, \
         refresh_token_read, code_redemption, refresh_rotation (1: the request went alone)."
    );
    metrics::describe_gauge!("portico_database_connections", "Pooled PostgreSQL connections by state: busy, idle.");
    metrics::describe_gauge!("portico_database_connections_max", "The most PostgreSQL connections the pool opens.");
    metrics::describe_counter!("portico_report_tasks_total", "Report tasks finished by outcome: done, failed.");
    metrics::describe_histogram!(
        "portico_report_generation_seconds",
        metrics::Unit::Seconds,
        "Time to produce and store a report task's files, by outcome."
    );
    metrics::describe_histogram!(
        "portico_report_signing_seconds",
        metrics::Unit::Seconds,
        "Time to make and check a QES signature, by key: builtin, command."
    );
    metrics::describe_counter!(
        "portico_report_signing_failures_total",
        "QES signatures that failed, by reason: failed (the signer exited with an error or could not start), \
         timeout, output (empty, oversized or unreadable output), mismatch (the signature did not check out)."
    );
    metrics::describe_counter!(
        "portico_token_signing_failures_total",
        "JWT signatures an HSM or signing program did not make, by reason: unavailable (it could not sign now; \
         the request was answered 503), mismatch (its signature did not verify with the key's public half)."
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
            .and_then(|b| b.set_buckets_for_metric(Matcher::Full("portico_database_batch_items".into()), &BATCH_BUCKETS))
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
