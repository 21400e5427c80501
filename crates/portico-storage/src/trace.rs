//! W3C trace context (`traceparent`) across stored work: what a request
//! queues (a payment event, a report task) keeps the request's, and the
//! worker that takes it up continues that trace. Without an OpenTelemetry
//! exporter there is no trace and nothing is kept.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The current span's `traceparent`, when it is part of a trace.
pub fn current() -> Option<String> {
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&tracing::Span::current().context(), &mut carrier);
    carrier.remove("traceparent")
}

/// Makes `span` a child of `traceparent` (ignored when it is not one).
pub fn continue_in(span: &tracing::Span, traceparent: Option<&str>) {
    if let Some(traceparent) = traceparent {
        let carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
        let _ = span.set_parent(TraceContextPropagator::new().extract(&carrier));
    }
}
