//! OpenTelemetry traces over OTLP/HTTP, as the real binary sends them to a
//! local OTLP receiver: a request that comes with a caller's `traceparent`
//! is a server span of that trace, its database work is inside it, and the
//! delivery of the event it queued continues the same trace on the worker,
//! passing it on to the merchant's endpoint; so does the generation of a
//! report task it asked for.

use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message as _;

/// What the receiver got: every span, with its resource's `service.name`.
type Received = Arc<Mutex<Vec<(String, Span)>>>;

/// An OTLP/HTTP receiver on a loopback port: `POST /v1/traces` with a
/// protobuf `ExportTraceServiceRequest`.
async fn receiver() -> (String, Received) {
    let received = Received::default();
    let spans = Arc::clone(&received);
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
            let spans = Arc::clone(&spans);
            async move {
                assert_eq!(headers["content-type"], "application/x-protobuf");
                let request = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf request");
                for resource in request.resource_spans {
                    let service = resource
                        .resource
                        .iter()
                        .flat_map(|r| &r.attributes)
                        .find(|a| a.key == "service.name")
                        .and_then(|a| a.value.as_ref()?.value.as_ref())
                        .map(|v| match v {
                            AnyValue::StringValue(s) => s.clone(),
                            other => format!("{other:?}"),
                        })
                        .unwrap_or_default();
                    for scope in resource.scope_spans {
                        for span in scope.spans {
                            spans.lock().unwrap().push((service.clone(), span));
                        }
                    }
                }
                axum::http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, received)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes.iter().find(|a| a.key == key).and_then(|a| match a.value.as_ref()?.value.as_ref()? {
        AnyValue::StringValue(s) => Some(s.clone()),
        AnyValue::IntValue(i) => Some(i.to_string()),
        other => Some(format!("{other:?}")),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_its_database_work_and_the_delivery_it_queued_are_one_trace() {
    let (otlp, received) = receiver().await;
    let dir = portico_tests::TempDir::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}");
    let mut node = Command::new(env!("CARGO_BIN_EXE_portico"))
        .args(["serve", "--demo"])
        .env_clear()
        .env("PORTICO_DATA_DIR", &dir.0)
        .env("PORTICO_LISTEN", format!("127.0.0.1:{port}"))
        .env("PORTICO_INTERNAL_TOKEN", portico_tests::INTERNAL_TOKEN)
        .env("PORTICO_NOTIFICATIONS__DELIVERY_INTERVAL_MS", "100")
        .env("PORTICO_TELEMETRY__OTLP_ENDPOINT", &otlp)
        .env("PORTICO_TELEMETRY__SERVICE_NAME", "portico-test")
        // The SDK's batch: sent every 200 ms rather than every 5 s.
        .env("OTEL_BSP_SCHEDULE_DELAY", "200")
        .env("PORTICO_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .expect("start portico serve");
    let http = reqwest::Client::new();
    let mut ready = false;
    for _ in 0..300 {
        if http.get(format!("{base}/readyz")).send().await.is_ok_and(|r| r.status() == 200) {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ready, "portico serve did not start");

    // The caller's trace: a span of its own, sampled.
    let (caller_trace, caller_span) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let event = serde_json::json!({ "eventId": "traced-1", "merchantId": "demo-shop", "event": {
        "paymentId": "pay-traced", "transactionId": 77, "orderId": "order-traced", "amount": 150_050,
        "currency": "RUB", "status": "SUCCESS", "statusDate": "2026-11-22T13:45:00+03:00",
        "paymentMethod": "SBP", "sbpTransactionId": "A1", "qrId": "QR1", "comment": null,
        "additionalInfo": null, "extra": {}, "createdAt": "2026-11-22T13:45:01+03:00"
    }});
    let submitted = http
        .post(format!("{base}/internal/v1/notifications/events/payment"))
        .bearer_auth(portico_tests::INTERNAL_TOKEN)
        .header("traceparent", format!("00-{caller_trace}-{caller_span}-01"))
        .json(&event)
        .send()
        .await
        .unwrap();
    assert_eq!(submitted.status(), 202, "{}", submitted.text().await.unwrap_or_default());
    // A report task, asked for on the bank's own channel.
    let (report_trace, report_span) = ("5cf0e2a1d8b54c2f9e3a7b6c1d0e9f8a", "1a2b3c4d5e6f7081");
    let task = http
        .post(format!("{base}/internal/v1/reports/tasks?cnum=7700000001"))
        .bearer_auth(portico_tests::INTERNAL_TOKEN)
        .header("traceparent", format!("00-{report_trace}-{report_span}-01"))
        .json(&serde_json::json!({
            "reportType": "STATEMENT_FOR_1C", "agreementNumber": "БД-0001",
            "account": "40702810900000000001", "fromDate": "2026-01-01", "toDate": "2026-01-31"
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(task.status(), 200, "{}", task.text().await.unwrap_or_default());
    // A request that reads the database itself (the intake hands its writes
    // to a batching writer shared by many requests).
    let (probe_trace, probe_span) = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let ready = http
        .get(format!("{base}/readyz"))
        .header("traceparent", format!("00-{probe_trace}-{probe_span}-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);

    // Wait for the delivery's span and the merchant endpoint's request span.
    let trace_spans = |received: &Received| -> Vec<(String, Span)> {
        let all = received.lock().unwrap();
        all.iter().filter(|(_, s)| hex(&s.trace_id) == caller_trace).cloned().collect()
    };
    let mut spans = Vec::new();
    for _ in 0..200 {
        spans = trace_spans(&received);
        let names: Vec<&str> = spans.iter().map(|(_, s)| s.name.as_str()).collect();
        let generated = received.lock().unwrap().iter().any(|(_, s)| s.name == "generate report");
        if names.contains(&"deliver notification") && names.contains(&"POST /demo/merchant/notifications") && generated
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let of_trace = |trace: &str| -> Vec<Span> {
        received.lock().unwrap().iter().filter(|(_, s)| hex(&s.trace_id) == trace).map(|(_, s)| s.clone()).collect()
    };
    let probe = of_trace(probe_trace);
    let report = of_trace(report_trace);
    let _ = Command::new("kill").args(["-TERM", &node.id().to_string()]).status();
    let _ = node.wait();
    let names: Vec<String> = spans.iter().map(|(_, s)| s.name.clone()).collect();
    let find = |name: &str| {
        spans.iter().map(|(_, s)| s).find(|s| s.name == name).unwrap_or_else(|| panic!("no span {name:?} in {names:?}"))
    };

    // The intake: a server span, child of the caller's.
    let intake = find("POST /internal/v1/notifications/events/payment");
    assert_eq!(hex(&intake.parent_span_id), caller_span, "the caller's span is its parent");
    assert_eq!(intake.kind, SpanKind::Server as i32);
    assert_eq!(attribute(intake, "http.response.status_code").as_deref(), Some("202"));
    assert!(spans.iter().all(|(service, _)| service == "portico-test"), "service.name");
    // A request's database work is inside it.
    let readyz = probe.iter().find(|s| s.name == "GET /readyz").expect("the readiness request's span");
    assert_eq!(hex(&readyz.parent_span_id), probe_span);
    let read = probe.iter().find(|s| s.name == "sqlite read").expect("its database read");
    assert_eq!(read.parent_span_id, readyz.span_id, "the store's read is the request's child");
    // The delivery continues the trace on the worker, and passes it on.
    let deliver = find("deliver notification");
    assert_eq!(deliver.parent_span_id, intake.span_id, "the delivery's parent is the request that queued it");
    assert_eq!(attribute(deliver, "event_id").as_deref(), Some("traced-1"));
    let merchant = find("POST /demo/merchant/notifications");
    assert_eq!(merchant.parent_span_id, deliver.span_id, "the merchant's endpoint got the traceparent");

    // The report task's generation continues the trace of the request that asked for it.
    let asked = report.iter().find(|s| s.name == "POST /internal/v1/reports/tasks").expect("the request's span");
    assert_eq!(hex(&asked.parent_span_id), report_span);
    let generate = report.iter().find(|s| s.name == "generate report").expect("the generation's span");
    assert_eq!(generate.parent_span_id, asked.span_id, "the generation's parent is the request that asked for it");
    assert_eq!(attribute(generate, "report_type").as_deref(), Some("STATEMENT_FOR_1C"));
}
