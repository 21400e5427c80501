//! What the published OpenAPI documents say about a parameter is what the
//! server enforces, and the other way round: each rule below was once
//! described and not enforced, or enforced and not described.

use portico_model::clock::Clock as _;
use portico_model::notify::MerchantIds;
use portico_tests::{INTERNAL_TOKEN, TestApp, backends};
use serde_json::Value;

async fn json(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let content_type = response.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned());
    assert!(content_type.as_deref().is_some_and(|t| t.starts_with("application/json")), "{status}: {content_type:?}");
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn report_lists_refuse_an_account_that_is_not_twenty_digits() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let pair = app.token_pair("maria").await;
        let list = |query: &str| pair.on(app.http().get(app.url(&format!("/v1/reports/tasks?cnum=7700000001{query}"))));
        let (status, body) = json(list("&account=abc").send().await.unwrap()).await;
        assert_eq!(status, 400, "{backend:?}: {body}");
        assert!(body.to_string().contains("account"), "{body}");
        let (status, _) = json(list("&account=40702810900000000001").send().await.unwrap()).await;
        assert_eq!(status, 200);
    }
}

#[tokio::test]
async fn the_delivery_list_refuses_a_page_past_its_documented_maximum() {
    let app = TestApp::spawn(portico_tests::Backend::Sqlite).await;
    let ids =
        MerchantIds { merchant_id: "m1".into(), public_id: "pub-m1".into(), sbp_merchant_id: "MA0000000001".into() };
    let key =
        portico_notify::merchants::create(app.store.as_ref(), &app.notify.sealer, ids, app.clock.now()).await.unwrap();
    let list = |page: &str| {
        app.http().get(app.url(&format!("/v1/notifications/deliveries?page={page}"))).header("authorization", &key)
    };
    assert_eq!(json(list("100000").send().await.unwrap()).await.0, 200);
    let (status, body) = json(list("2147483648").send().await.unwrap()).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(json(list("100001").send().await.unwrap()).await.0, 400);
}

#[tokio::test]
async fn a_path_id_that_is_not_utf8_gets_the_apis_json_error() {
    let app = TestApp::spawn(portico_tests::Backend::Sqlite).await;
    let pair = app.token_pair("maria").await;
    let (status, body) = json(pair.on(app.http().get(app.url("/v1/reports/tasks/%FF%FE"))).send().await.unwrap()).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("taskId"), "{body}");
    let download = app.url("/v1/reports/files/download/%C3%28");
    let (status, body) = json(pair.on(app.http().get(download)).send().await.unwrap()).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("fileId"), "{body}");

    let ids =
        MerchantIds { merchant_id: "m1".into(), public_id: "pub-m1".into(), sbp_merchant_id: "MA0000000001".into() };
    let key =
        portico_notify::merchants::create(app.store.as_ref(), &app.notify.sealer, ids, app.clock.now()).await.unwrap();
    let resend = app.url("/v1/notifications/deliveries/%FF/resend");
    let (status, body) = json(app.http().post(resend).header("authorization", &key).send().await.unwrap()).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("bad_request")), "{body}");
}

#[tokio::test]
async fn the_bank_names_a_company_to_create_and_list_but_not_to_look_up_by_id() {
    let app = TestApp::spawn(portico_tests::Backend::Sqlite).await;
    let document: Value = app.http().get(app.url("/openapi/internal.json")).send().await.unwrap().json().await.unwrap();
    let cnum_required = |path: &str, method: &str| {
        let parameters = document["paths"][path][method]["parameters"].as_array().expect(path);
        parameters.iter().find(|p| p["name"] == "cnum" && p["in"] == "query").expect("cnum")["required"] == true
    };
    assert!(cnum_required("/internal/v1/reports/tasks", "post"));
    assert!(cnum_required("/internal/v1/reports/tasks", "get"));
    assert!(!cnum_required("/internal/v1/reports/tasks/{taskId}", "get"));
    assert!(!cnum_required("/internal/v1/reports/types", "get"));
    assert!(!cnum_required("/internal/v1/reports/files/download/{fileId}", "get"));
    // And the server agrees: the list of types needs no company.
    let types = app.http().get(app.url("/internal/v1/reports/types")).bearer_auth(INTERNAL_TOKEN).send().await.unwrap();
    assert_eq!(types.status(), 200);
    let list = app.http().get(app.url("/internal/v1/reports/tasks")).bearer_auth(INTERNAL_TOKEN).send().await.unwrap();
    assert_eq!(list.status(), 400, "the list needs cnum");
}

#[tokio::test]
async fn the_permissions_cnum_path_parameter_states_its_limits() {
    let app = TestApp::spawn(portico_tests::Backend::Sqlite).await;
    let document: Value =
        app.http().get(app.url("/openapi/permissions.json")).send().await.unwrap().json().await.unwrap();
    let schema = document["paths"]["/api/v1/acc-permissions/{cnum}"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "cnum")
        .unwrap()["schema"]
        .clone();
    assert_eq!((schema["minLength"].as_u64(), schema["maxLength"].as_u64()), (Some(1), Some(64)), "{schema}");
    let pair = app.token_pair("ivan").await;
    let long = "7".repeat(65);
    let response = pair.on(app.http().get(app.url(&format!("/api/v1/acc-permissions/{long}")))).send().await.unwrap();
    assert_eq!(response.status(), 400, "past maxLength: refused");
    let padded = pair.on(app.http().get(app.url("/api/v1/acc-permissions/%207700000001"))).send().await.unwrap();
    let (status, body) = json(padded).await;
    assert_eq!(status, 400, "outside the pattern: refused, not trimmed");
    assert!(body["message"].as_str().unwrap().contains("white space"), "{body}");
}

#[tokio::test]
async fn an_integer_written_with_a_zero_fraction_is_an_integer_and_a_fraction_is_refused() {
    let app = TestApp::spawn(portico_tests::Backend::Sqlite).await;
    let submit = |amount: Value, event_id: &str| {
        let event = serde_json::json!({
            "paymentId": "pay-1", "transactionId": 9001.0, "orderId": "order-1", "amount": amount,
            "currency": "RUB", "status": "SUCCESS", "statusDate": "2026-11-22T13:45:00+03:00",
            "paymentMethod": "SBP", "createdAt": "2026-11-22T13:45:01+03:00"
        });
        let body = serde_json::json!({ "eventId": event_id, "merchantId": "demo-shop", "event": event });
        app.http()
            .post(app.url("/internal/v1/notifications/events/payment"))
            .bearer_auth(INTERNAL_TOKEN)
            .json(&body)
            .send()
    };
    let accepted = submit(serde_json::json!(150050.0), "e-1").await.unwrap();
    assert!(accepted.status().is_success(), "{}", accepted.text().await.unwrap());
    let (status, body) = json(submit(serde_json::json!(1500.5), "e-2").await.unwrap()).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["message"].as_str().unwrap().contains("not an integer"), "{body}");
}

#[tokio::test]
async fn revoke_ignores_a_token_type_hint_it_does_not_know() {
    let app = TestApp::spawn(portico_tests::Backend::Sqlite).await;
    let tokens = app.tokens_for("ivan", "ivan-password").await;
    let response = app
        .http()
        .post(app.url("/oauth2/revoke"))
        .basic_auth(portico_tests::demo::CLIENT_ID, Some(portico_tests::demo::CLIENT_SECRET))
        .form(&[("token", tokens.access_token.as_str()), ("token_type_hint", "id_token")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(app.liveness(&tokens.access_token).await, 401, "revoked all the same");
}
