//! Cross-cutting HTTP: request ids, request metrics and logs, health.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry_http::HeaderExtractor;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::app::AppState;

pub use portico_api::request::REQUEST_ID;

/// The FAPI interaction id (FAPI 1.0 Part 1 §6.2.1, which ФАПИ.СЕК's
/// resource servers follow): a client's correlation id for one request,
/// played back in the answer and logged.
pub const FAPI_INTERACTION_ID: HeaderName = HeaderName::from_static("x-fapi-interaction-id");

/// The request's interaction id: the client's, when it is a UUID (RFC
/// 4122, as the profile has clients send), else a new one.
fn interaction_id(request: &Request) -> HeaderValue {
    request
        .headers()
        .get(&FAPI_INTERACTION_ID)
        .filter(|value| value.to_str().is_ok_and(|id| uuid::Uuid::try_parse(id).is_ok()))
        .cloned()
        .unwrap_or_else(|| {
            HeaderValue::try_from(uuid::Uuid::new_v4().hyphenated().to_string()).expect("a UUID is a header value")
        })
}

/// The longest caller's `x-request-id` kept, in characters.
const MAX_REQUEST_ID: usize = 128;

/// Drops a caller's `x-request-id` that is not one value of 1 to
/// [`MAX_REQUEST_ID`] visible ASCII characters, so that the server makes
/// a new one: the id is played back, named in error bodies (the report
/// API's `traceId`) and logged, and a caller's 100 kB would be all three.
pub async fn usable_request_id(mut request: Request, next: Next) -> Response {
    let mut given = request.headers().get_all(&REQUEST_ID).iter();
    let usable = match (given.next(), given.next()) {
        (Some(id), None) => {
            let id = id.as_bytes();
            (1..=MAX_REQUEST_ID).contains(&id.len()) && id.iter().all(u8::is_ascii_graphic)
        }
        (None, _) => true,
        (Some(_), Some(_)) => false,
    };
    if !usable {
        request.headers_mut().remove(&REQUEST_ID);
    }
    next.run(request).await
}

/// Counts and times every request by route and status; logs server errors.
/// Each request runs in a span (a server span of the caller's trace when
/// it sent a W3C `traceparent`, exported when traces are on), which names
/// its FAPI interaction id ([`FAPI_INTERACTION_ID`]); every answer plays
/// that id back.
pub async fn observe(mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let interaction = interaction_id(&request);
    request.headers_mut().insert(FAPI_INTERACTION_ID, interaction.clone());
    let method = request.method().clone();
    let method_label = method_label(&method);
    let route =
        request.extensions().get::<MatchedPath>().map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    // A cheap reference-counted copy; turned into text only when a line is logged.
    let request_id = request.headers().get(&REQUEST_ID).cloned();
    let span = tracing::info_span!(
        "request",
        otel.name = %format_args!("{method_label} {route}"),
        otel.kind = "server",
        http.request.method = %method,
        http.route = %route,
        http.response.status_code = tracing::field::Empty,
        fapi_interaction_id = interaction.to_str().unwrap_or_default(),
    );
    if !span.is_disabled() && request.headers().contains_key("traceparent") {
        let parent = TraceContextPropagator::new().extract(&HeaderExtractor(request.headers()));
        let _ = span.set_parent(parent);
    }
    let mut response = next.run(request).instrument(span.clone()).await;
    let status = response.status();
    span.record("http.response.status_code", status.as_u16());
    let elapsed = started.elapsed();
    let labels = [("method", method_label), ("route", route.clone()), ("status", status.as_u16().to_string())];
    metrics::counter!("portico_http_requests_total", &labels).increment(1);
    metrics::histogram!("portico_http_request_duration_seconds", &labels).record(elapsed.as_secs_f64());
    if status.is_server_error() {
        tracing::warn!(%method, %route, status = status.as_u16(), request_id = ?request_id, fapi_interaction_id = ?interaction, "request failed");
    } else {
        tracing::debug!(%method, %route, status = status.as_u16(), ms = elapsed.as_millis() as u64, request_id = ?request_id, fapi_interaction_id = ?interaction, "request");
    }
    response.headers_mut().insert(FAPI_INTERACTION_ID, interaction);
    response
}

/// A request method as the metrics name it: one of the nine methods of
/// RFC 9110, or `other`. Labels come from closed sets only (the route is
/// the matched template or `unmatched`), so made-up methods cannot grow
/// `/metrics` (or the server's memory) without bound.
fn method_label(method: &Method) -> String {
    const KNOWN: [Method; 9] = [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::PATCH,
        Method::OPTIONS,
        Method::TRACE,
        Method::CONNECT,
    ];
    if KNOWN.contains(method) { method.as_str().to_owned() } else { "other".to_owned() }
}

/// `GET /healthz`: the process is up.
pub async fn healthz() -> &'static str {
    "ok"
}

/// How long `/readyz` waits for the database: probes expect an answer
/// within a second, well before the pool's own acquire timeout.
const READY_WITHIN: std::time::Duration = std::time::Duration::from_millis(800);

/// `GET /readyz`: the database answers, within [`READY_WITHIN`].
pub async fn readyz(State(state): State<AppState>) -> Response {
    match tokio::time::timeout(READY_WITHIN, state.store.ping()).await {
        Ok(Ok(())) => "ready".into_response(),
        Ok(Err(error)) => {
            tracing::warn!(%error, "not ready: database unreachable");
            (StatusCode::SERVICE_UNAVAILABLE, "database unreachable").into_response()
        }
        Err(_) => {
            tracing::warn!(ms = READY_WITHIN.as_millis() as u64, "not ready: the database did not answer in time");
            (StatusCode::SERVICE_UNAVAILABLE, "database did not answer in time").into_response()
        }
    }
}

/// `GET /metrics`: Prometheus text format.
pub async fn metrics(State(state): State<AppState>) -> Response {
    if let Some(connections) = state.store.connections() {
        let backend = state.store.backend();
        metrics::gauge!("portico_database_connections", "backend" => backend, "state" => "busy")
            .set(f64::from(connections.busy));
        metrics::gauge!("portico_database_connections", "backend" => backend, "state" => "idle")
            .set(f64::from(connections.idle));
        metrics::gauge!("portico_database_connections_max", "backend" => backend).set(f64::from(connections.max));
    }
    (
        [(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        crate::telemetry::metrics().render(),
    )
        .into_response()
}
