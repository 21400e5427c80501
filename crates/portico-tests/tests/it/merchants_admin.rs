//! The merchants' admin API (`/admin/v1/merchants`, the admin token), on
//! both backends: a registered merchant's key works at once on the merchant
//! API, a rotated key replaces it at once, and bad requests change nothing.

use portico_tests::{ADMIN_TOKEN, INTERNAL_TOKEN, TestApp, backends};
use serde_json::{Value, json};

async fn admin(app: &TestApp, path: &str, token: Option<&str>, body: Option<Value>) -> (u16, Value) {
    let url = app.url(path);
    let mut request = match body {
        Some(body) => app.http().post(url).json(&body),
        None => app.http().get(url),
    };
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

/// The status of the merchant API for `key`: 404 (no settings yet) means
/// the key was accepted, 401 that it was not.
async fn merchant_api_status(app: &TestApp, key: &str) -> u16 {
    let response = app.http().get(app.url("/v1/notifications/settings")).bearer_auth(key).send().await.unwrap();
    response.status().as_u16()
}

#[tokio::test]
async fn operators_register_merchants_list_them_and_rotate_their_keys() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let shop = json!({"merchantId": "shop-1", "publicId": "pub-shop-1", "sbpMerchantId": "MA0000000001"});

        for token in [None, Some(INTERNAL_TOKEN), Some("wrong")] {
            let (status, body) = admin(&app, "/admin/v1/merchants", token, Some(shop.clone())).await;
            assert_eq!((status, body["code"].as_str()), (401, Some("unauthorized")), "{token:?}");
        }
        let (status, created) = admin(&app, "/admin/v1/merchants", Some(ADMIN_TOKEN), Some(shop.clone())).await;
        assert_eq!(status, 201, "{backend:?}: {created}");
        assert_eq!(created["merchantId"], "shop-1");
        let first_key = created["apiKey"].as_str().expect("the key").to_owned();
        assert_eq!(merchant_api_status(&app, &first_key).await, 404, "the new key works at once");

        let (status, body) = admin(&app, "/admin/v1/merchants", Some(ADMIN_TOKEN), Some(shop.clone())).await;
        assert_eq!((status, body["code"].as_str()), (409, Some("merchant_exists")), "{body}");
        let bad = json!({"merchantId": "shop 2", "publicId": "pub-shop-2", "sbpMerchantId": "MA0000000002"});
        let (status, body) = admin(&app, "/admin/v1/merchants", Some(ADMIN_TOKEN), Some(bad)).await;
        assert_eq!(status, 400);
        assert!(body["message"].as_str().unwrap_or_default().contains("merchant id \"shop 2\""), "{body}");
        let unknown_field = json!({"merchantId": "shop-3", "publicId": "p3", "sbpMerchantId": "M3", "key": "x"});
        let (status, body) = admin(&app, "/admin/v1/merchants", Some(ADMIN_TOKEN), Some(unknown_field)).await;
        assert!(
            status == 400 && body["message"].as_str().unwrap_or_default().contains("unknown field `key`"),
            "{body}"
        );

        let (status, page) = admin(&app, "/admin/v1/merchants", Some(ADMIN_TOKEN), None).await;
        assert_eq!((status, page.get("next")), (200, None), "one page: {page}");
        let listed = &page["merchants"];
        let ids: Vec<&str> = listed.as_array().unwrap().iter().map(|m| m["merchantId"].as_str().unwrap()).collect();
        assert_eq!(ids, ["demo-shop", "shop-1"], "the demo's merchant and ours; the refused requests stored nothing");
        assert_eq!(listed[1]["publicId"], "pub-shop-1");
        assert_eq!(listed[1]["callbackUrl"], Value::Null);
        assert!(listed[0]["callbackUrl"].is_string(), "the demo shop has its address: {listed}");
        assert!(listed.as_array().unwrap().iter().all(|m| m.get("apiKey").is_none()), "a listing never shows keys");

        let (status, rotated) = admin(&app, "/admin/v1/merchants/shop-1/key", Some(ADMIN_TOKEN), Some(json!({}))).await;
        assert_eq!(status, 200, "{rotated}");
        let second_key = rotated["apiKey"].as_str().expect("the key");
        assert_ne!(second_key, first_key);
        assert_eq!(merchant_api_status(&app, &first_key).await, 401, "the old key stops at once");
        assert_eq!(merchant_api_status(&app, second_key).await, 404);
        let (status, body) = admin(&app, "/admin/v1/merchants/nobody/key", Some(ADMIN_TOKEN), Some(json!({}))).await;
        assert_eq!((status, body["code"].as_str()), (404, Some("merchant_not_found")));
    }
}

#[tokio::test]
async fn without_an_admin_token_the_merchants_admin_api_is_off() {
    let app = TestApp::spawn_with(backends()[0], |config| config.admin_token = None).await;
    let (status, body) = admin(&app, "/admin/v1/merchants", Some(ADMIN_TOKEN), None).await;
    assert_eq!((status, body["code"].as_str()), (404, Some("admin_api_disabled")), "{body}");
}
