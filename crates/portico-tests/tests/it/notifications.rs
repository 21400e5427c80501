//! Merchant notifications over HTTP, on both backends: the settings API
//! (merchant key), the internal event intake (idempotent, bounded, durable
//! before the answer).

use portico_model::clock::Clock as _;
use portico_model::notify::{DeliveryStatus, MerchantIds};
use portico_tests::{INTERNAL_TOKEN, TestApp, answer, assert_bearer_challenges, backends};
use serde_json::{Value, json};

async fn merchant(app: &TestApp, id: &str) -> String {
    let ids =
        MerchantIds { merchant_id: id.into(), public_id: format!("pub-{id}"), sbp_merchant_id: "MA0000000001".into() };
    portico_notify::merchants::create(app.store.as_ref(), &app.notify.sealer, ids, app.clock.now()).await.unwrap()
}

async fn settings(app: &TestApp, key: Option<&str>, body: Option<&str>) -> (u16, Value) {
    let url = app.url("/v1/notifications/settings");
    let mut request = match body {
        Some(body) => app.http().put(url).header("content-type", "application/json").body(body.to_owned()),
        None => app.http().get(url),
    };
    if let Some(key) = key {
        request = request.header("authorization", key);
    }
    let answer = answer(request).await;
    (answer.status, answer.body)
}

#[tokio::test]
async fn merchants_read_and_replace_their_settings_with_their_key() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let key = merchant(&app, "m1").await;
        // RFC 9110 §15.5.2: a 401 names how to authenticate; RFC 6750
        // §3.1: without a key, no error code.
        let read = || app.http().get(app.url("/v1/notifications/settings"));
        assert_bearer_challenges(read, "not-a-key", &format!("{backend:?}")).await;
        let (status, body) = settings(&app, Some(&key), None).await;
        assert_eq!((status, body["code"].as_str()), (404, Some("settings_not_found")));

        // Absent operation types: the current version, enabled.
        let (status, saved) = settings(
            &app,
            Some(&format!("Bearer {key}")),
            Some(r#"{"callbackUrl": "https://shop.example/notify", "operationTypes": {"payment": {"version": "V1", "enabled": false}}}"#),
        )
        .await;
        assert_eq!(status, 200, "{saved}");
        assert_eq!(
            saved,
            json!({
                "callbackUrl": "https://shop.example/notify",
                "operationTypes": {
                    "payment": {"version": "V1", "enabled": false},
                    "refund": {"version": "V1", "enabled": true},
                    "subscription": {"version": "V2", "enabled": true}
                }
            })
        );
        assert_eq!(settings(&app, Some(&key), None).await, (200, saved.clone()), "read back");
        // RFC 9110 §11.1: the scheme is case-insensitive, and may be
        // followed by more than one space.
        for authorization in [format!("bearer {key}"), format!("BEARER  {key}")] {
            assert_eq!(settings(&app, Some(&authorization), None).await, (200, saved.clone()), "{authorization}");
        }
        // Another scheme is no key at all.
        let (status, body) = settings(&app, Some(&format!("Basic {key}")), None).await;
        assert_eq!((status, body["code"].as_str()), (401, Some("unauthorized")), "{body}");

        for bad in [
            r#"{"callbackUrl": "ftp://shop.example/x"}"#,
            r#"{"callbackUrl": "not a url"}"#,
            r#"{"callbackUrl": "https://shop.example/x", "operationTypes": {"payment": {"version": "V9", "enabled": true}}}"#,
            r#"{"callbackUrl": "https://shop.example/x", "operationTypes": {"refund": {"version": "V2", "enabled": true}}}"#,
            r#"{"callbackUrl": "https://shop.example/x", "colour": "blue"}"#,
            r#"{"operationTypes": {}}"#,
            "[]",
            "",
        ] {
            let (status, body) = settings(&app, Some(&key), Some(bad)).await;
            assert_eq!((status, body["code"].as_str()), (400, Some("bad_request")), "{bad}");
        }
        assert_eq!(settings(&app, Some(&key), None).await.1, saved, "bad input changed nothing");
    }
}

/// `--demo` allows loopback and plain-http callbacks unless the setting
/// says `false` explicitly; then the demo refuses them as production does.
#[tokio::test]
async fn an_explicit_refusal_of_insecure_callbacks_holds_in_the_demo() {
    let local = r#"{"callbackUrl": "http://127.0.0.1:9000/notify"}"#;
    let demo = TestApp::spawn(backends()[0]).await;
    let key = merchant(&demo, "m1").await;
    assert_eq!(settings(&demo, Some(&key), Some(local)).await.0, 200, "the demo allows local receivers");

    let strict = TestApp::spawn_with(backends()[0], |c| c.notifications.allow_insecure_callbacks = Some(false)).await;
    let key = merchant(&strict, "m1").await;
    for bad in [local, r#"{"callbackUrl": "https://[64:ff9b::7f00:1]/notify"}"#] {
        let (status, body) = settings(&strict, Some(&key), Some(bad)).await;
        assert_eq!((status, body["code"].as_str()), (400, Some("bad_request")), "{bad}: {body}");
    }
    assert_eq!(settings(&strict, Some(&key), None).await.0, 404, "nothing was stored");
}

pub(crate) fn payment(order: &str) -> Value {
    json!({
        "paymentId": "pay-1", "transactionId": 9001, "orderId": order, "amount": 150050, "currency": "RUB",
        "status": "SUCCESS", "statusDate": "2026-11-22T13:45:00+03:00", "paymentMethod": "SBP",
        "sbpTransactionId": "A1", "qrId": "QR1", "comment": null, "additionalInfo": null, "extra": {},
        "createdAt": "2026-11-22T13:45:01+03:00"
    })
}

pub(crate) async fn submit(app: &TestApp, kind: &str, body: &Value, token: Option<&str>) -> (u16, Value) {
    let mut request = app.http().post(app.url(&format!("/internal/v1/notifications/events/{kind}"))).json(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn events_are_taken_in_once_within_bounds_and_stored_with_a_pending_delivery() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        merchant(&app, "m1").await;
        let body = json!({ "eventId": "ev-1", "merchantId": "m1", "event": payment("order-7") });
        let token = Some(INTERNAL_TOKEN);
        assert_eq!(submit(&app, "payment", &body, None).await.0, 401, "{backend:?}");
        assert_eq!(submit(&app, "payment", &body, Some("wrong-token")).await.0, 401);
        assert_eq!(
            submit(&app, "payment", &body, token).await,
            (202, json!({"eventId": "ev-1", "result": "accepted"}))
        );
        assert_eq!(submit(&app, "payment", &body, token).await.1["result"], "duplicate");
        let changed = json!({ "eventId": "ev-1", "merchantId": "m1", "event": payment("order-8") });
        assert_eq!(submit(&app, "payment", &changed, token).await.0, 409);

        let stored = app.store.find_event("ev-1").await.unwrap().unwrap();
        assert_eq!(stored.payload["orderId"], "order-7");
        let deliveries = app.store.deliveries_of("ev-1").await.unwrap();
        assert_eq!(deliveries.len(), 1, "one delivery for one event");
        assert_eq!(deliveries[0].status, DeliveryStatus::Pending);

        let with = |field: &str, value: Value| {
            let mut event = payment("order-9");
            event[field] = value;
            json!({ "eventId": "ev-bad", "merchantId": "m1", "event": event })
        };
        for (bad, why) in [
            (with("qrId", json!("Q".repeat(33))), "qrId"),
            (with("additionalInfo", json!("i".repeat(141))), "additionalInfo"),
            // U+0000 is no character of any field (and PostgreSQL cannot store it).
            (with("additionalInfo", json!("a\u{0}b")), "additionalInfo"),
            (with("extra", json!({"note": ["x", "y\u{0}"]})), "extra.note[1]"),
            (with("orderId", json!("o".repeat(41))), "orderId"),
            (with("orderId", json!("order 9")), "orderId"),
            (with("currency", json!("rub")), "currency"),
            (with("amount", json!("150.50")), "amount"),
            (with("colour", json!("blue")), "colour"),
            (json!({ "eventId": "", "merchantId": "m1", "event": payment("o") }), "eventId"),
            (json!({ "eventId": "ev-x", "merchantId": "m1" }), "event"),
        ] {
            let (status, answer) = submit(&app, "payment", &bad, token).await;
            assert_eq!(status, 400, "{why}: {answer}");
            assert!(answer["message"].as_str().unwrap().contains(why), "{why}: {answer}");
        }
        assert!(app.store.find_event("ev-bad").await.unwrap().is_none(), "nothing stored");
        let unknown = json!({ "eventId": "ev-2", "merchantId": "nobody", "event": payment("o") });
        assert_eq!(submit(&app, "payment", &unknown, token).await.0, 404);
        assert_eq!(submit(&app, "transfer", &body, token).await.0, 404);
        assert_eq!(submit(&app, "transfer", &body, None).await.0, 401, "the token is checked first");

        let refund = json!({ "eventId": "rf-1", "merchantId": "m1", "event": {
            "refundId": "r1", "sbpTransactionId": null, "amount": 9905, "status": "COMPLETED",
            "statusDate": "2026-11-23T09:00:00Z", "transactionId": 9001, "orderId": "order-7", "qrId": null }});
        assert_eq!(submit(&app, "refund", &refund, token).await.1["result"], "accepted");
        let subscription = json!({ "eventId": "sb-1", "merchantId": "m1", "event": {
            "subscriptionId": "s1", "status": "SUBSCRIBED", "statusDate": "2026-11-24T10:30:00+03:00",
            "purpose": null, "paymentMethod": null, "paymentSystem": null, "cardNumber": null,
            "expirationDate": null, "bankName": null, "bankMemberId": null, "qrId": null }});
        assert_eq!(submit(&app, "subscription", &subscription, token).await.1["result"], "accepted");
    }
}

/// A merchant's receiver: records each request and answers the next status.
#[derive(Clone, Default)]
pub(crate) struct Receiver {
    got: std::sync::Arc<std::sync::Mutex<Vec<(axum::http::HeaderMap, String)>>>,
    pub(crate) answers: std::sync::Arc<std::sync::Mutex<Vec<u16>>>,
}

async fn receiver() -> (String, Receiver) {
    use axum::extract::State;
    let state = Receiver::default();
    let app = axum::Router::new()
        .route(
            "/notify",
            axum::routing::post(|State(r): State<Receiver>, headers: axum::http::HeaderMap, body: String| async move {
                r.got.lock().unwrap().push((headers, body));
                let status = r.answers.lock().unwrap().pop().unwrap_or(200);
                if status == 299 {
                    // Too slow: longer than the configured timeout.
                    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
                }
                // A failing receiver rambles: only the start of it is kept.
                let body = if status == 200 { "ok".to_owned() } else { "busy ".repeat(200_000) };
                (axum::http::StatusCode::from_u16(status).unwrap(), body)
            }),
        )
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/notify", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, state)
}

/// Merchant `m1` (`pub-m1`, `MA01`) whose callback address is a fresh
/// local receiver: the merchant's key, the receiver's address and the
/// receiver.
pub(crate) async fn subscribed(app: &TestApp) -> (String, String, Receiver) {
    let ids = MerchantIds { merchant_id: "m1".into(), public_id: "pub-m1".into(), sbp_merchant_id: "MA01".into() };
    let key =
        portico_notify::merchants::create(app.store.as_ref(), &app.notify.sealer, ids, app.clock.now()).await.unwrap();
    let (url, receiver) = receiver().await;
    assert_eq!(settings(app, Some(&key), Some(&format!(r#"{{"callbackUrl": "{url}"}}"#))).await.0, 200);
    (key, url, receiver)
}

#[tokio::test]
async fn deliveries_are_signed_retried_on_failure_and_recorded() {
    use portico_notify::delivery::Deliverer;
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.notifications.deliver = false;
            // Sent from a fixed source address.
            c.notifications.source_address = Some("127.0.0.1".parse().unwrap());
        })
        .await;
        let (key, _, receiver) = subscribed(&app).await;
        let event = json!({ "eventId": "ev-1", "merchantId": "m1", "event": payment("order-7") });
        assert_eq!(submit(&app, "payment", &event, Some(INTERNAL_TOKEN)).await.0, 202);

        let deliverer = Deliverer::new(std::sync::Arc::clone(&app.notify)).unwrap();
        *receiver.answers.lock().unwrap() = vec![500];
        assert_eq!(deliverer.run_once().await.unwrap(), 1, "{backend:?}");
        assert_eq!(deliverer.run_once().await.unwrap(), 0, "not due again yet");
        let delivery = &app.store.deliveries_of("ev-1").await.unwrap()[0];
        assert_eq!((delivery.status, delivery.attempts), (DeliveryStatus::Pending, 1));
        let wait = delivery.next_attempt_at - app.clock.now();
        assert!(wait >= time::Duration::seconds(54) && wait <= time::Duration::seconds(66), "about a minute: {wait}");

        app.clock.advance(time::Duration::seconds(70));
        assert_eq!(deliverer.run_once().await.unwrap(), 1);
        let delivery = &app.store.deliveries_of("ev-1").await.unwrap()[0];
        assert_eq!((delivery.status, delivery.attempts), (DeliveryStatus::Delivered, 2));
        let attempts = app.store.attempts_of(delivery.id).await.unwrap();
        assert_eq!(attempts.iter().map(|a| a.status_code).collect::<Vec<_>>(), [Some(500), Some(200)]);
        assert!(attempts[0].error.as_deref().unwrap().contains("500"));
        let excerpt = attempts[0].response_excerpt.as_deref().unwrap();
        assert!(excerpt.len() == 512 && excerpt.starts_with("busy busy"), "a 1 MB answer is cut to its start");
        assert_eq!(attempts[1].response_excerpt.as_deref(), Some("ok"));

        // What arrived: payment v3 (the default), signed with the merchant's key.
        let got = receiver.got.lock().unwrap().clone();
        assert_eq!(got.len(), 2);
        let (headers, body) = &got[1];
        let sent: Value = serde_json::from_str(body).unwrap();
        assert_eq!(sent["event"], "PAYMENT");
        assert!(body.contains(r#""amount":1500.50,"#), "the amount as written in the check string: {body}");
        let check = "1500.50|pub-m1|order-7|SUCCESS|2026-11-22T13:45:00+03:00";
        let expected = portico_crypto::hash::hmac_sha256_hex(key.as_bytes(), check.as_bytes());
        assert_eq!(headers["x-api-signature-sha256"], expected.as_str());
        assert_eq!(deliverer.run_once().await.unwrap(), 0, "delivered once");
    }
}

#[tokio::test]
async fn a_delivery_that_never_succeeds_fails_after_a_day() {
    use portico_notify::delivery::Deliverer;
    let app = TestApp::spawn_with(backends()[0], |c| c.notifications.deliver = false).await;
    let (_, _, receiver) = subscribed(&app).await;
    let event = json!({ "eventId": "ev-1", "merchantId": "m1", "event": payment("order-7") });
    submit(&app, "payment", &event, Some(INTERNAL_TOKEN)).await;
    *receiver.answers.lock().unwrap() = vec![503; 100];
    let deliverer = Deliverer::new(std::sync::Arc::clone(&app.notify)).unwrap();
    let mut attempts = 0;
    for _ in 0..200 {
        attempts += deliverer.run_once().await.unwrap();
        let delivery = &app.store.deliveries_of("ev-1").await.unwrap()[0];
        if delivery.status != DeliveryStatus::Pending {
            break;
        }
        app.clock.advance(time::Duration::minutes(10));
    }
    let delivery = &app.store.deliveries_of("ev-1").await.unwrap()[0];
    assert_eq!(delivery.status, DeliveryStatus::Failed);
    assert!((9..=13).contains(&attempts), "growing intervals over a day: {attempts} attempts");
    let last = app.store.attempts_of(delivery.id).await.unwrap().pop().unwrap();
    assert!(last.at >= delivery.created_at + time::Duration::hours(24), "tried to the end of the day");
}

#[tokio::test]
async fn only_200_counts_switched_off_types_are_not_sent_and_versions_apply_to_the_next_payload() {
    use portico_notify::delivery::Deliverer;
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.notifications.deliver = false;
            c.notifications.timeout_ms = 500;
        })
        .await;
        let (key, url, receiver) = subscribed(&app).await;
        let deliverer = Deliverer::new(std::sync::Arc::clone(&app.notify)).unwrap();
        let event = |id: &str| json!({ "eventId": id, "merchantId": "m1", "event": payment("order-7") });

        // 302, 201 and a receiver slower than the timeout: failed attempts, retried.
        submit(&app, "payment", &event("ev-1"), Some(INTERNAL_TOKEN)).await;
        *receiver.answers.lock().unwrap() = vec![200, 299, 201, 302];
        for (status, error) in [(Some(302), "302"), (Some(201), "201"), (None, "reach")] {
            assert_eq!(deliverer.run_once().await.unwrap(), 1, "{backend:?}");
            let delivery = &app.store.deliveries_of("ev-1").await.unwrap()[0];
            let last = app.store.attempts_of(delivery.id).await.unwrap().pop().unwrap();
            assert_eq!(last.status_code, status);
            assert!(last.error.as_deref().unwrap().contains(error), "{:?}", last.error);
            assert_eq!(delivery.status, DeliveryStatus::Pending);
            app.clock.advance(time::Duration::hours(1));
        }
        assert_eq!(deliverer.run_once().await.unwrap(), 1);
        assert_eq!(app.store.deliveries_of("ev-1").await.unwrap()[0].status, DeliveryStatus::Delivered);

        // The version in the settings when the delivery is made decides the payload.
        let v2 = r#"{"callbackUrl": "URL", "operationTypes": {"payment": {"version": "V2", "enabled": true}}}"#;
        assert_eq!(settings(&app, Some(&key), Some(&v2.replace("URL", &url))).await.0, 200);
        submit(&app, "payment", &event("ev-2"), Some(INTERNAL_TOKEN)).await;
        deliverer.run_once().await.unwrap();
        let (headers, body) = receiver.got.lock().unwrap().last().cloned().unwrap();
        let sent: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(sent["event"], "payment");
        assert_eq!(sent["transaction"]["id"], 9001);
        let check = "1500.50|pub-m1|order-7|SUCCESS|2026-11-22T13:45:00+03:00";
        assert_eq!(
            headers["x-api-signature-sha256"],
            portico_crypto::hash::hmac_sha256_hex(key.as_bytes(), check.as_bytes()).as_str()
        );

        // A type switched off: nothing is sent, the delivery ends with the reason.
        let off = r#"{"callbackUrl": "URL", "operationTypes": {"payment": {"version": "V3", "enabled": false}}}"#;
        assert_eq!(settings(&app, Some(&key), Some(&off.replace("URL", &url))).await.0, 200);
        let before = receiver.got.lock().unwrap().len();
        submit(&app, "payment", &event("ev-3"), Some(INTERNAL_TOKEN)).await;
        deliverer.run_once().await.unwrap();
        assert_eq!(receiver.got.lock().unwrap().len(), before, "nothing sent");
        let delivery = &app.store.deliveries_of("ev-3").await.unwrap()[0];
        assert_eq!(delivery.status, DeliveryStatus::Failed);
        let last = app.store.attempts_of(delivery.id).await.unwrap().pop().unwrap();
        assert!(last.error.unwrap().contains("off"));
    }
}

#[tokio::test]
async fn merchants_see_every_attempt_and_resend_a_failed_delivery() {
    use portico_notify::delivery::Deliverer;
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| c.notifications.deliver = false).await;
        let (key, _, receiver) = subscribed(&app).await;
        let other = merchant(&app, "m2").await;
        submit(
            &app,
            "payment",
            &json!({ "eventId": "ev-1", "merchantId": "m1", "event": payment("o-1") }),
            Some(INTERNAL_TOKEN),
        )
        .await;
        *receiver.answers.lock().unwrap() = vec![500; 100];
        let deliverer = Deliverer::new(std::sync::Arc::clone(&app.notify)).unwrap();
        for _ in 0..40 {
            deliverer.run_once().await.unwrap();
            app.clock.advance(time::Duration::hours(1));
        }
        let list = |key: String, query: &'static str| {
            let http = app.http();
            let url = app.url(&format!("/v1/notifications/deliveries{query}"));
            async move {
                let response = http.get(url).header("authorization", key).send().await.unwrap();
                (response.status().as_u16(), response.json::<Value>().await.unwrap_or(Value::Null))
            }
        };
        let (status, page) = list(key.clone(), "?status=FAILED").await;
        assert_eq!(status, 200, "{backend:?}");
        assert_eq!(page["total"], 1);
        let failed = &page["items"][0];
        assert_eq!(failed["status"], "FAILED");
        assert_eq!(failed["type"], "payment");
        assert!(failed["attemptLog"].as_array().unwrap().len() >= 9);
        assert_eq!(failed["attemptLog"][0]["statusCode"], 500);
        assert_eq!(list(other.clone(), "").await.1["total"], 0, "another merchant sees none of it");
        assert_eq!(list(key.clone(), "?size=0").await.0, 400);
        assert_eq!(list(key.clone(), "?status=LOST").await.0, 400);
        assert_eq!(list("wrong".into(), "").await.0, 401);

        // Resend: a new delivery of the same event, sent now.
        let id = failed["id"].as_str().unwrap();
        let resend = |key: String, id: String| {
            let http = app.http();
            let url = app.url(&format!("/v1/notifications/deliveries/{id}/resend"));
            async move { http.post(url).header("authorization", key).send().await.unwrap().status().as_u16() }
        };
        assert_eq!(resend(other, id.to_owned()).await, 404, "not another merchant's");
        assert_eq!(resend(key.clone(), "not-a-uuid".into()).await, 400);
        *receiver.answers.lock().unwrap() = vec![];
        assert_eq!(resend(key.clone(), id.to_owned()).await, 202);
        assert_eq!(deliverer.run_once().await.unwrap(), 1);
        let (_, page) = list(key.clone(), "?status=DELIVERED").await;
        assert_eq!(page["total"], 1);
        assert_eq!(page["items"][0]["eventId"], "ev-1");
    }
}

#[tokio::test]
async fn every_version_of_every_type_arrives_and_verifies_with_the_merchant_library() {
    use portico_notify::delivery::Deliverer;
    use portico_webhook::Notification;
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| c.notifications.deliver = false).await;
        let ids = MerchantIds { merchant_id: "m1".into(), public_id: "pub-m1".into(), sbp_merchant_id: "MA01".into() };
        let key = portico_notify::merchants::create(app.store.as_ref(), &app.notify.sealer, ids, app.clock.now())
            .await
            .unwrap();
        let (url, receiver) = receiver().await;
        let deliverer = Deliverer::new(std::sync::Arc::clone(&app.notify)).unwrap();
        let refund = json!({ "refundId": "r1", "sbpTransactionId": "B7", "amount": 9905, "status": "COMPLETED",
            "statusDate": "2026-11-23T09:00:00Z", "transactionId": 9001, "orderId": "order-7", "qrId": null });
        let subscription = json!({ "subscriptionId": "s1", "status": "SUBSCRIBED",
            "statusDate": "2026-11-24T10:30:00+03:00", "purpose": "p", "paymentMethod": "ACQUIRING",
            "paymentSystem": "MIR", "cardNumber": "220220******1234", "expirationDate": "2028-11",
            "bankName": "Bank", "bankMemberId": "100000000001", "qrId": "QR9" });
        for (n, (kind, version, event)) in [
            ("payment", "V3", payment("order-7")),
            ("payment", "V2", payment("order-7")),
            ("payment", "V1", payment("order-7")),
            ("refund", "V1", refund.clone()),
            ("subscription", "V2", subscription.clone()),
            ("subscription", "V1", subscription.clone()),
        ]
        .into_iter()
        .enumerate()
        {
            let body = format!(
                r#"{{"callbackUrl": "{url}", "operationTypes": {{"{kind}": {{"version": "{version}", "enabled": true}}}}}}"#
            );
            assert_eq!(settings(&app, Some(&key), Some(&body)).await.0, 200);
            let id = format!("ev-{n}");
            let submitted =
                submit(&app, kind, &json!({ "eventId": id, "merchantId": "m1", "event": event }), Some(INTERNAL_TOKEN))
                    .await;
            assert_eq!(submitted.0, 202, "{submitted:?}");
            assert_eq!(deliverer.run_once().await.unwrap(), 1, "{backend:?} {kind} {version}");
            let (headers, body) = receiver.got.lock().unwrap().last().cloned().unwrap();
            let signature = headers["x-api-signature-sha256"].to_str().unwrap();
            let verified = portico_webhook::verify(body.as_bytes(), signature, key.as_bytes(), "pub-m1")
                .unwrap_or_else(|e| panic!("{kind} {version}: {e}: {body}"));
            let matches = matches!(
                (kind, version, &verified),
                ("payment", "V3", Notification::PaymentV3(_))
                    | ("payment", "V2", Notification::PaymentV2(_))
                    | ("payment", "V1", Notification::PaymentV1(_))
                    | ("refund", "V1", Notification::RefundV1(_))
                    | ("subscription", _, Notification::Subscription(_))
            );
            assert!(matches, "{kind} {version} arrived as {verified:?}");
            assert!(portico_webhook::verify(body.as_bytes(), signature, b"another key", "pub-m1").is_err());
        }
    }
}

#[tokio::test]
async fn the_demo_shop_receives_and_verifies_what_the_worker_delivers() {
    use portico_notify::delivery::Deliverer;
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| c.notifications.deliver = false).await;
        let shop: Value = app.http().get(app.url("/demo/merchant")).send().await.unwrap().json().await.unwrap();
        let key = shop["apiKey"].as_str().unwrap().to_owned();
        let (status, settings) = self::settings(&app, Some(&key), None).await;
        assert_eq!(
            (status, settings["callbackUrl"].as_str()),
            (200, Some(app.url("/demo/merchant/notifications").as_str()))
        );

        let queued = app.http().post(app.url("/demo/merchant/events/refund")).send().await.unwrap();
        assert_eq!(queued.status(), 202, "{backend:?}");
        let deliverer = Deliverer::new(std::sync::Arc::clone(&app.notify)).unwrap();
        assert_eq!(deliverer.run_once().await.unwrap(), 1);
        let shop: Value = app.http().get(app.url("/demo/merchant")).send().await.unwrap().json().await.unwrap();
        let received = &shop["received"][0];
        assert_eq!(received["verified"], true, "{received}");
        assert!(received["body"]["refund"]["id"].as_str().unwrap().starts_with("refund-"), "{received}");

        // A forgery is refused and shown as such.
        let forged = app
            .http()
            .post(app.url("/demo/merchant/notifications"))
            .header("x-api-signature-sha256", "00".repeat(32))
            .body(received["body"].to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(forged.status(), 401);
        let shop: Value = app.http().get(app.url("/demo/merchant")).send().await.unwrap().json().await.unwrap();
        assert_eq!(shop["received"][0]["verified"], false);
        assert_eq!(app.http().post(app.url("/demo/merchant/events/parcel")).send().await.unwrap().status(), 404);
    }
}

#[tokio::test]
async fn a_merchant_that_never_answers_holds_only_its_own_lanes() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.notifications.delivery_interval_ms = 20;
            c.notifications.per_merchant = 2;
            c.notifications.in_flight = 8;
        })
        .await;
        // "slow" never answers while the gate is closed; "fast" answers at once.
        let (gate, gate_rx) = tokio::sync::watch::channel(false);
        let fast_count = std::sync::Arc::new(AtomicUsize::new(0));
        let counter = std::sync::Arc::clone(&fast_count);
        let receiver = axum::Router::new()
            .route(
                "/slow",
                axum::routing::post(move || {
                    let mut gate = gate_rx.clone();
                    async move {
                        let _ = gate.wait_for(|open| *open).await;
                        "ok"
                    }
                }),
            )
            .route(
                "/fast",
                axum::routing::post(move || {
                    counter.fetch_add(1, Ordering::SeqCst);
                    async { "ok" }
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, receiver).await });

        for (id, path) in [("slow", "/slow"), ("fast", "/fast")] {
            let key = merchant(&app, id).await;
            let body = format!(r#"{{"callbackUrl": "{base}{path}"}}"#);
            assert_eq!(settings(&app, Some(&key), Some(&body)).await.0, 200);
        }
        // A backlog for "slow" first, then twenty events for "fast".
        for (m, n) in [("slow", 40), ("fast", 20)] {
            for i in 0..n {
                let event =
                    json!({ "eventId": format!("{m}-{i}"), "merchantId": m, "event": payment(&format!("o-{m}-{i}")) });
                assert_eq!(submit(&app, "payment", &event, Some(INTERNAL_TOKEN)).await.0, 202);
            }
        }
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
        while fast_count.load(Ordering::SeqCst) < 20 {
            assert!(tokio::time::Instant::now() < deadline, "{backend:?}: fast merchant starved");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let (_, slow_delivered) =
            app.store.list_deliveries("slow", Some(DeliveryStatus::Delivered), 0, 1).await.unwrap();
        assert_eq!(slow_delivered, 0, "the slow merchant has answered nothing yet");
        gate.send_replace(true);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_submissions_share_commits_and_each_gets_its_own_answer() {
    for backend in backends() {
        let app = std::sync::Arc::new(TestApp::spawn_with(backend, |c| c.notifications.deliver = false).await);
        merchant(&app, "m1").await;
        let mut submissions = tokio::task::JoinSet::new();
        for i in 0..120 {
            let app = std::sync::Arc::clone(&app);
            // Every fourth submission repeats one event id: one is accepted.
            let id = if i % 4 == 0 { "ev-same".to_owned() } else { format!("ev-{i}") };
            submissions.spawn(async move {
                let body = json!({ "eventId": id, "merchantId": "m1", "event": payment("order-1") });
                submit(&app, "payment", &body, Some(INTERNAL_TOKEN)).await
            });
        }
        let answers: Vec<(u16, Value)> = submissions.join_all().await;
        let count = |result: &str| answers.iter().filter(|(s, a)| *s == 202 && a["result"] == result).count();
        assert_eq!((count("accepted"), count("duplicate")), (91, 29), "{backend:?}: {answers:?}");
        assert_eq!(app.store.deliveries_of("ev-same").await.unwrap().len(), 1);
        let (_, pending) = app.store.list_deliveries("m1", Some(DeliveryStatus::Pending), 0, 1).await.unwrap();
        assert_eq!(pending, 91, "one delivery per accepted event");
    }
}

#[tokio::test]
async fn the_intake_hands_new_deliveries_to_a_worker_with_room_already_leased() {
    use portico_model::notify::{Delivery, EventKind, StoredEvent};
    use portico_storage::{DeliveryClaim, Intake};
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| c.notifications.deliver = false).await;
        merchant(&app, "m1").await;
        let queued = std::sync::Arc::new(tokio::sync::Notify::new());
        let writer = portico_notify::commit::IntakeWriter::start(app.store.clone(), std::sync::Arc::clone(&queued));
        let (to, mut handed) = tokio::sync::mpsc::channel(1);
        writer.attach(to, time::Duration::seconds(60));
        let now = app.clock.now();
        let record = |id: &str| {
            let event = StoredEvent {
                event_id: id.into(),
                merchant_id: "m1".into(),
                kind: EventKind::Payment,
                payload: payment("o-1"),
                received_at: now,
                trace_parent: None,
            };
            writer.record(event, Delivery::new(id.into(), "m1".into(), now))
        };
        let stored = |id: &'static str| {
            let store = app.store.clone();
            async move { store.deliveries_of(id).await.unwrap().remove(0) }
        };

        // Room: stored leased to the worker, and handed over with its event.
        assert_eq!(record("ev-1").await.unwrap(), Intake::Accepted, "{backend:?}");
        let batch = handed.try_recv().expect("handed over");
        assert_eq!(batch.items.len(), 1);
        assert_eq!(batch.items[0].0.event_id, "ev-1");
        let leased = stored("ev-1").await;
        assert_eq!(
            (leased.lease_until, leased.next_attempt_at),
            (Some(now + time::Duration::seconds(60)), now + time::Duration::seconds(60))
        );
        assert_eq!(batch.items[0].1, leased, "the worker holds the delivery as stored");
        let claim = DeliveryClaim {
            now,
            lease_until: now + time::Duration::seconds(60),
            limit: 10,
            per_merchant: 10,
            skip_merchants: &[],
        };
        assert!(app.store.claim_due_deliveries(&claim).await.unwrap().is_empty(), "no claim takes it from the worker");

        // A duplicate is not handed over again.
        assert_eq!(record("ev-1").await.unwrap(), Intake::Duplicate);
        assert!(handed.try_recv().is_err());

        // No room (the channel holds one batch): stored due at once, for claiming.
        assert_eq!(record("ev-2").await.unwrap(), Intake::Accepted);
        assert_eq!(record("ev-3").await.unwrap(), Intake::Accepted);
        let due = stored("ev-3").await;
        assert_eq!((due.lease_until, due.next_attempt_at), (None, now));
        tokio::time::timeout(std::time::Duration::from_secs(5), queued.notified()).await.expect("the claimer is woken");
        assert_eq!(handed.try_recv().expect("ev-2's batch").items[0].0.event_id, "ev-2");

        // Detached (the worker stopped): nothing is leased any more.
        writer.detach();
        assert_eq!(record("ev-4").await.unwrap(), Intake::Accepted);
        assert_eq!(stored("ev-4").await.lease_until, None);
        assert!(handed.try_recv().is_err());
    }
}

#[tokio::test]
async fn finished_deliveries_leave_the_merchants_list_after_the_retention_period() {
    use portico_notify::delivery::Deliverer;
    use portico_notify::retention::remove_expired;
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.notifications.deliver = false;
            c.notifications.retention_days = 30;
        })
        .await;
        let (key, _, _receiver) = subscribed(&app).await;
        let event = |id: &str| json!({ "eventId": id, "merchantId": "m1", "event": payment("o-1") });
        assert_eq!(submit(&app, "payment", &event("ev-1"), Some(INTERNAL_TOKEN)).await.1["result"], "accepted");
        let deliverer = Deliverer::new(std::sync::Arc::clone(&app.notify)).unwrap();
        assert_eq!(deliverer.run_once().await.unwrap(), 1, "{backend:?}");
        let listed = || {
            let request = app.http().get(app.url("/v1/notifications/deliveries")).header("authorization", &key);
            async move { request.send().await.unwrap().json::<Value>().await.unwrap()["total"].as_u64().unwrap() }
        };
        assert_eq!(listed().await, 1);

        // Ten days on, a second event is still pending (its receiver is gone).
        app.clock.advance(time::Duration::days(10));
        let gone = "http://127.0.0.1:9/notify";
        assert_eq!(settings(&app, Some(&key), Some(&format!(r#"{{"callbackUrl": "{gone}"}}"#))).await.0, 200);
        assert_eq!(submit(&app, "payment", &event("ev-2"), Some(INTERNAL_TOKEN)).await.1["result"], "accepted");
        assert_eq!(deliverer.run_once().await.unwrap(), 1);

        // Within the retention period nothing goes.
        app.clock.advance(time::Duration::days(19));
        assert_eq!(remove_expired(&app.notify).await.unwrap().deliveries, 0);
        assert_eq!(listed().await, 2);
        assert_eq!(submit(&app, "payment", &event("ev-1"), Some(INTERNAL_TOKEN)).await.1["result"], "duplicate");

        // Past it, the delivered one can no longer be resent (the clean-up
        // may be removing it) and goes with its attempt and its event; the
        // pending one stays, however old.
        app.clock.advance(time::Duration::days(2));
        let delivered = {
            let url = app.url("/v1/notifications/deliveries?status=DELIVERED");
            let page: Value =
                app.http().get(url).header("authorization", &key).send().await.unwrap().json().await.unwrap();
            page["items"][0]["id"].as_str().unwrap().to_owned()
        };
        let resend = app
            .http()
            .post(app.url(&format!("/v1/notifications/deliveries/{delivered}/resend")))
            .header("authorization", &key)
            .send()
            .await
            .unwrap();
        assert_eq!(resend.status(), 404);
        assert_eq!(resend.json::<Value>().await.unwrap()["code"], "delivery_not_found");
        assert_eq!(listed().await, 2, "the refused resend added nothing");
        let removed = remove_expired(&app.notify).await.unwrap();
        assert_eq!((removed.deliveries, removed.attempts, removed.events), (1, 1, 1));
        assert_eq!(listed().await, 1);
        assert!(app.store.find_event("ev-1").await.unwrap().is_none());
        let pending = app.store.deliveries_of("ev-2").await.unwrap();
        assert_eq!(pending[0].status, DeliveryStatus::Pending);
        assert_eq!(remove_expired(&app.notify).await.unwrap().deliveries, 0, "nothing more to remove");
        // The intake's duplicate detection reaches as far back as the events kept.
        assert_eq!(submit(&app, "payment", &event("ev-1"), Some(INTERNAL_TOKEN)).await.1["result"], "accepted");
    }
}

#[tokio::test]
async fn a_retention_of_zero_days_keeps_every_delivery() {
    use portico_notify::delivery::Deliverer;
    let app = TestApp::spawn_with(backends()[0], |c| {
        c.notifications.deliver = false;
        c.notifications.retention_days = 0;
    })
    .await;
    let (_, _, _receiver) = subscribed(&app).await;
    let event = json!({ "eventId": "ev-1", "merchantId": "m1", "event": payment("o-1") });
    assert_eq!(submit(&app, "payment", &event, Some(INTERNAL_TOKEN)).await.0, 202);
    assert_eq!(Deliverer::new(std::sync::Arc::clone(&app.notify)).unwrap().run_once().await.unwrap(), 1);
    app.clock.advance(time::Duration::days(3650));
    assert_eq!(portico_notify::retention::remove_expired(&app.notify).await.unwrap().deliveries, 0);
    assert_eq!(app.store.deliveries_of("ev-1").await.unwrap()[0].status, DeliveryStatus::Delivered);
}

#[tokio::test]
async fn the_servers_cleaner_removes_deliveries_past_their_retention() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| c.cleanup_interval_secs = 1).await;
        let (_, _, _receiver) = subscribed(&app).await;
        let event = json!({ "eventId": "ev-1", "merchantId": "m1", "event": payment("o-1") });
        assert_eq!(submit(&app, "payment", &event, Some(INTERNAL_TOKEN)).await.0, 202);
        // The server's own worker delivers it, and its cleaner passes every second.
        let until = |what: &'static str, done: fn(&[portico_model::notify::Delivery]) -> bool| {
            let store = app.store.clone();
            async move {
                let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(15);
                while !done(&store.deliveries_of("ev-1").await.unwrap()) {
                    assert!(tokio::time::Instant::now() < deadline, "{backend:?}: {what}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            }
        };
        until("not delivered", |d| d.first().is_some_and(|d| d.status == DeliveryStatus::Delivered)).await;
        app.clock.advance(time::Duration::days(31));
        until("not removed", <[_]>::is_empty).await;
        assert!(app.store.find_event("ev-1").await.unwrap().is_none());
    }
}
