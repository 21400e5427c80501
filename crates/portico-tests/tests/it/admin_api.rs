//! What every admin and internal route shares (one error body, the same
//! refusals, named admin tokens recorded as the actor), on both backends.

use portico_crypto::jwt::{Algorithm, SigningKey};
use portico_identity::tokens::Binding;
use portico_tests::certificates::TestCertificate;
use portico_tests::{
    ADMIN_TOKEN, INTERNAL_TOKEN, SCIM_TOKEN, TestApp, answer, assert_bearer_challenges, backends, jws,
};
use serde_json::{Value, json};

/// Every admin route, with a body that would be valid where one is needed.
const ADMIN_ROUTES: [(&str, &str); 6] = [
    ("GET", "/admin/v1/merchants"),
    ("POST", "/admin/v1/merchants"),
    ("POST", "/admin/v1/merchants/demo-shop/key"),
    ("GET", "/admin/v1/permissions"),
    ("POST", "/admin/v1/permissions"),
    ("GET", "/admin/v1/brokerage/agreements"),
];

/// Every internal route that is not a report operation (those answer in
/// the report API's own words).
const INTERNAL_ROUTES: [(&str, &str); 3] = [
    ("POST", "/internal/v1/notifications/events/payment"),
    ("POST", "/internal/v1/notifications/events/gift"),
    ("POST", "/internal/v1/brokerage/agreements"),
];

/// `method` at `path`, with an empty JSON body where it takes one.
fn request(app: &TestApp, method: &str, path: &str) -> reqwest::RequestBuilder {
    match method {
        "GET" => app.http().get(app.url(path)),
        _ => app.http().post(app.url(path)).json(&json!({})),
    }
}

async fn call(app: &TestApp, method: &str, path: &str, token: Option<&str>) -> (u16, Value) {
    let mut request = request(app, method, path);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let answer = answer(request).await;
    (answer.status, answer.body)
}

/// `body` is the shared error body with `code`, and a message that says something.
fn assert_error(body: &Value, status: u16, expected: (u16, &str), place: &str) {
    assert_eq!((status, body["code"].as_str().unwrap_or_default()), expected, "{place}: {body}");
    assert!(body["message"].as_str().is_some_and(|m| m.len() > 10), "{place}: a message says what to do: {body}");
}

#[tokio::test]
async fn every_admin_and_internal_route_refuses_in_one_body() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        for (method, path) in ADMIN_ROUTES {
            for token in [None, Some(INTERNAL_TOKEN), Some("not-the-admin-token-0123456789")] {
                let (status, body) = call(&app, method, path, token).await;
                assert_error(&body, status, (401, "unauthorized"), &format!("{backend:?} {method} {path} {token:?}"));
            }
        }
        for (method, path) in INTERNAL_ROUTES {
            for token in [None, Some(ADMIN_TOKEN)] {
                let (status, body) = call(&app, method, path, token).await;
                assert_error(&body, status, (401, "unauthorized"), &format!("{backend:?} {method} {path} {token:?}"));
            }
        }
        // RFC 9110 §15.5.2: a 401 names how to authenticate; RFC 6750
        // §3.1: without a token, no error code.
        for (method, path) in [("GET", "/admin/v1/clients"), ("POST", "/internal/v1/notifications/events/payment")] {
            let place = format!("{backend:?} {method} {path}");
            assert_bearer_challenges(|| request(&app, method, path), "Bearer wrong-token-0123456789", &place).await;
        }
    }
}

#[tokio::test]
async fn without_their_tokens_the_admin_and_internal_apis_are_off() {
    let app = TestApp::spawn_with(backends()[0], |config| {
        config.admin_token = None;
        config.internal_token = None;
    })
    .await;
    for (method, path) in ADMIN_ROUTES {
        let (status, body) = call(&app, method, path, Some(ADMIN_TOKEN)).await;
        assert_error(&body, status, (404, "admin_api_disabled"), &format!("{method} {path}"));
        assert!(body["message"].as_str().unwrap().contains("admin_token"), "it names the setting: {body}");
    }
    for (method, path) in INTERNAL_ROUTES {
        let (status, body) = call(&app, method, path, Some(INTERNAL_TOKEN)).await;
        assert_error(&body, status, (404, "internal_api_disabled"), &format!("{method} {path}"));
        assert!(body["message"].as_str().unwrap().contains("internal_token"), "it names the setting: {body}");
    }
}

#[tokio::test]
async fn each_named_admin_token_is_the_actor_of_what_it_changes() {
    const CI_TOKEN: &str = "ci-admin-token-0123456789abcdef";
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |config| {
            config.admin_tokens.insert("ci".into(), CI_TOKEN.into());
        })
        .await;
        let shop = json!({"merchantId": "shop-1", "publicId": "pub-shop-1", "sbpMerchantId": "MA0000000001"});
        let response =
            app.http().post(app.url("/admin/v1/merchants")).bearer_auth(CI_TOKEN).json(&shop).send().await.unwrap();
        assert_eq!(response.status(), 201);
        let (status, _) = call(&app, "POST", "/admin/v1/merchants/shop-1/key", Some(ADMIN_TOKEN)).await;
        assert_eq!(status, 200);
        let audit = app.store.recent_audit(2).await.unwrap();
        let seen: Vec<(&str, Option<&str>)> = audit.iter().map(|e| (e.kind.as_str(), e.actor.as_deref())).collect();
        assert_eq!(
            seen,
            [("merchant.key_rotated", Some("token:admin")), ("merchant.created", Some("token:ci"))],
            "{backend:?}"
        );
        assert_eq!(audit[1].detail, json!({"merchant_id": "shop-1"}));
    }
}

/// An admin API call with the admin token.
async fn admin(app: &TestApp, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let url = app.url(path);
    let request = match method {
        "GET" => app.http().get(url),
        "POST" => app.http().post(url),
        "PATCH" => app.http().patch(url),
        "PUT" => app.http().put(url),
        "DELETE" => app.http().delete(url),
        other => panic!("no method {other}"),
    };
    let request = match body {
        Some(body) => request.json(&body),
        None => request,
    };
    let response = request.bearer_auth(ADMIN_TOKEN).send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

/// Whether the client authenticates with `secret` (the revocation
/// endpoint answers 200 to an authenticated client whatever the token).
async fn client_authenticates(app: &TestApp, client_id: &str, secret: &str) -> bool {
    let response = app
        .http()
        .post(app.url("/oauth2/revoke"))
        .basic_auth(client_id, Some(secret))
        .form(&[("token", "not-a-token")])
        .send()
        .await
        .unwrap();
    response.status() == 200
}

/// The newest audit events' kinds and actors.
async fn audit_tail(app: &TestApp, n: u32) -> Vec<(String, Option<String>)> {
    let events = app.store.recent_audit(n).await.unwrap();
    events.into_iter().map(|e| (e.kind, e.actor)).collect()
}

fn problems(body: &Value) -> Vec<String> {
    body["problems"].as_array().unwrap_or(&Vec::new()).iter().map(|p| p["place"].as_str().unwrap().to_owned()).collect()
}

/// A generated secret is answered only to a client that uses one: a key
/// or certificate client authenticates without it (RFC 7591 §3.2.1, RFC
/// 8705 §2), and a secret it was shown would only be one more to keep.
#[tokio::test]
async fn only_a_client_that_uses_a_secret_is_given_one() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        let certificate = TestCertificate::new("rp.example");
        for (method, given) in [
            ("client_secret_basic", true),
            ("client_secret_post", true),
            ("client_secret_jwt", true),
            ("private_key_jwt", false),
            ("self_signed_tls_client_auth", false),
            ("tls_client_auth", false),
        ] {
            let client_id = format!("c-{}", method.replace('_', "-"));
            let mut body = json!({"clientId": client_id, "redirectUris": ["https://rp.example/cb"],
                                  "tokenEndpointAuthMethod": method});
            match method {
                "private_key_jwt" => body["jwks"] = json!({"keys": [key.jwk()]}),
                "self_signed_tls_client_auth" => body["jwks"] = json!({"keys": [certificate.jwk("rp")]}),
                "tls_client_auth" => body["tlsClientAuthSubjectDn"] = json!("CN=rp.example"),
                _ => {}
            }
            let (status, created) = admin(&app, "POST", "/admin/v1/clients", Some(body)).await;
            assert_eq!(status, 201, "{backend:?} {method}: {created}");
            assert_eq!(created["clientSecret"].is_string(), given, "{backend:?} {method}: {created}");
        }
    }
}

#[tokio::test]
async fn operators_register_change_rotate_and_remove_clients() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let bad =
            json!({"clientId": "shop app", "redirectUris": ["https://shop.example/cb#x"], "scope": "openid wallet"});
        let (status, body) = admin(&app, "POST", "/admin/v1/clients", Some(bad)).await;
        assert_eq!((status, body["code"].as_str()), (400, Some("invalid_document")), "{backend:?}: {body}");
        assert_eq!(problems(&body), ["clientId", "redirectUris[0]", "scope"], "every problem is named: {body}");
        let (status, _) = admin(&app, "GET", "/admin/v1/clients/shop", None).await;
        assert_eq!(status, 404, "nothing was stored");

        let new = json!({"clientId": "shop", "redirectUris": ["https://shop.example/cb"], "nameRu": "Магазин"});
        let (status, created) = admin(&app, "POST", "/admin/v1/clients", Some(new.clone())).await;
        assert_eq!(status, 201, "{created}");
        let secret = created["clientSecret"].as_str().expect("a generated secret, shown once").to_owned();
        assert_eq!(created["client"]["scope"], "openid profile email phone");
        assert_eq!(
            (created["client"]["nameRu"].as_str(), created["client"]["nameEn"].as_str()),
            (Some("Магазин"), Some("Магазин"))
        );
        assert!(client_authenticates(&app, "shop", &secret).await, "the secret works at once");
        let (status, body) = admin(&app, "POST", "/admin/v1/clients", Some(new)).await;
        assert_eq!((status, body["code"].as_str()), (409, Some("client_exists")));

        let patch = json!({"redirectUris": ["https://shop.example/cb2"], "requireConsent": true,
                           "backchannelLogoutUri": "https://shop.example/logout"});
        let (status, changed) = admin(&app, "PATCH", "/admin/v1/clients/shop", Some(patch)).await;
        assert_eq!(status, 200, "{changed}");
        assert_eq!(changed["redirectUris"], json!(["https://shop.example/cb2"]));
        assert_eq!((changed["requireConsent"].as_bool(), changed["nameRu"].as_str()), (Some(true), Some("Магазин")));
        let (_, changed) =
            admin(&app, "PATCH", "/admin/v1/clients/shop", Some(json!({"backchannelLogoutUri": null}))).await;
        assert_eq!(changed["backchannelLogoutUri"], Value::Null, "null clears it");
        let (status, body) =
            admin(&app, "PATCH", "/admin/v1/clients/shop", Some(json!({"redirectUris": [], "secret": "x"}))).await;
        assert_eq!((status, body["code"].as_str()), (400, Some("bad_request")), "an unknown field: {body}");
        let (status, body) = admin(&app, "PATCH", "/admin/v1/clients/shop", Some(json!({"redirectUris": []}))).await;
        assert_eq!((status, problems(&body)), (400, vec!["redirectUris".to_owned()]));
        let (_, read) = admin(&app, "GET", "/admin/v1/clients/shop", None).await;
        assert_eq!(read["redirectUris"], json!(["https://shop.example/cb2"]), "a refused change changes nothing");

        let (status, body) =
            admin(&app, "POST", "/admin/v1/clients/shop/secret", Some(json!({"secret": "too-short"}))).await;
        assert_eq!((status, problems(&body)), (400, vec!["secret".to_owned()]));
        let (status, rotated) = admin(&app, "POST", "/admin/v1/clients/shop/secret", Some(json!({}))).await;
        assert_eq!(status, 200);
        let new_secret = rotated["clientSecret"].as_str().unwrap();
        assert!(!client_authenticates(&app, "shop", &secret).await, "the old secret stops at once");
        assert!(client_authenticates(&app, "shop", new_secret).await);

        let (status, listed) = admin(&app, "GET", "/admin/v1/clients", None).await;
        assert_eq!(status, 200);
        let listed = listed["clients"].as_array().unwrap();
        assert!(listed.iter().any(|c| c["clientId"] == "shop"));
        assert!(listed.iter().all(|c| c.get("clientSecret").is_none() && c.get("secretHash").is_none()));

        assert_eq!(admin(&app, "DELETE", "/admin/v1/clients/shop", None).await.0, 204);
        let (status, body) = admin(&app, "DELETE", "/admin/v1/clients/shop", None).await;
        assert_eq!((status, body["code"].as_str()), (404, Some("client_not_found")));
        assert!(!client_authenticates(&app, "shop", new_secret).await);
        let actor = Some("token:admin".to_owned());
        assert_eq!(
            audit_tail(&app, 5).await,
            [
                ("client.deleted".to_owned(), actor.clone()),
                ("client.secret_rotated".to_owned(), actor.clone()),
                ("client.updated".to_owned(), actor.clone()),
                ("client.updated".to_owned(), actor.clone()),
                ("client.created".to_owned(), actor.clone()),
            ],
            "{backend:?}: each change once, refusals none"
        );
    }
}

/// RFC 7592 §2.3 (and an operator's removal, the same service): once a
/// client is removed, no token it was issued works — its access tokens at
/// once, at every protected resource and in introspection, on both
/// backends.
#[tokio::test]
async fn a_removed_clients_tokens_stop_working_at_once() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        app.add_client("leaving", "leaving-secret-0123456789").await;
        let pair = app.token_pair_for("ivan", "leaving").await;
        let userinfo = || app.http().get(app.url("/oauth2/userinfo")).bearer_auth(&pair.access_token).send();
        assert_eq!(app.liveness(&pair.access_token).await, 200, "{backend:?}");
        assert_eq!(userinfo().await.unwrap().status(), 200, "{backend:?}");
        assert_eq!(app.introspect_as_demo(&pair.access_token).await["active"], true, "{backend:?}");

        assert_eq!(admin(&app, "DELETE", "/admin/v1/clients/leaving", None).await.0, 204);
        assert_eq!(app.liveness(&pair.access_token).await, 401, "{backend:?}: liveness");
        assert_eq!(userinfo().await.unwrap().status(), 401, "{backend:?}: userinfo");
        assert_eq!(app.introspect_as_demo(&pair.access_token).await, json!({"active": false}), "{backend:?}");
        let refreshed = app
            .http()
            .post(app.url("/oauth2/token"))
            .basic_auth("leaving", Some("leaving-secret-0123456789"))
            .form(&[("grant_type", "refresh_token"), ("refresh_token", pair.refresh_token.as_str())])
            .send()
            .await
            .unwrap();
        assert_eq!(refreshed.status(), 401, "{backend:?}: the client is gone");
    }
}

/// A user's e-mail is one address the codes can be sent to: a display
/// name, a second address or a second `@` is refused by the admin API and
/// by SCIM, naming `email`, and nothing is stored (the mailer would have
/// read `x<attacker@evil.example>` as a name and its address).
#[tokio::test]
async fn an_email_is_one_address_the_codes_can_be_sent_to() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        for email in ["x<attacker@evil.example>", "olga@example.com,attacker@evil.example", "olga@@example.com"] {
            let body = json!({"login": "olga", "password": "olga-password-1", "email": email});
            let (status, answer) = admin(&app, "POST", "/admin/v1/users", Some(body)).await;
            assert_eq!((status, problems(&answer)), (400, vec!["email".into()]), "{backend:?} {email}: {answer}");
            let scim = json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "olga",
                              "password": "olga-password-1", "emails": [{"value": email, "primary": true}]});
            let response =
                app.http().post(app.url("/scim/v2/Users")).bearer_auth(SCIM_TOKEN).json(&scim).send().await.unwrap();
            assert_eq!(response.status(), 400, "{backend:?} {email}: SCIM");
            let answer: Value = response.json().await.unwrap();
            assert_eq!(answer["scimType"], "invalidValue", "{answer}");
        }
        assert!(app.store.find_user_by_login("olga").await.unwrap().is_none(), "{backend:?}: nothing stored");
        let body = json!({"login": "petr", "password": "petr-password-1", "email": "пётр@пример.рф"});
        let (status, created) = admin(&app, "POST", "/admin/v1/users", Some(body)).await;
        assert_eq!((status, created["email"].as_str()), (201, Some("пётр@пример.рф")), "{backend:?}: UTF-8 (RFC 6531)");
    }
}

#[tokio::test]
async fn operators_create_find_change_and_remove_users() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let bad = json!({"login": "olga", "password": "olga", "phone": "12", "email": "olga@"});
        let (status, body) = admin(&app, "POST", "/admin/v1/users", Some(bad)).await;
        assert_eq!((status, problems(&body)), (400, vec!["password".into(), "phone".into(), "email".into()]), "{body}");

        let olga = json!({"login": "olga", "password": "olga-password-1", "phone": "8 (900) 555-00-01",
                          "email": "olga@example.com", "name": "Ольга"});
        let (status, created) = admin(&app, "POST", "/admin/v1/users", Some(olga.clone())).await;
        assert_eq!(status, 201, "{backend:?}: {created}");
        assert_eq!(created["phone"], "+79005550001", "stored normalized");
        assert!(created.get("passwordHash").is_none());
        let id = created["id"].as_str().unwrap().to_owned();
        let (status, body) = admin(&app, "POST", "/admin/v1/users", Some(olga)).await;
        assert_eq!((status, body["code"].as_str()), (409, Some("login_taken")));
        let olga2 = json!({"login": "olga2", "password": "olga2-password"});
        assert_eq!(admin(&app, "POST", "/admin/v1/users", Some(olga2)).await.0, 201);

        // Search: by phone in any form the login page takes, by login prefix a page at a time.
        let (status, found) = admin(&app, "GET", "/admin/v1/users?phone=%2B7%20900%20555-00-01", None).await;
        assert_eq!(status, 200);
        assert_eq!(found["users"].as_array().unwrap().len(), 1);
        assert_eq!(found["users"][0]["login"], "olga");
        let (_, page) = admin(&app, "GET", "/admin/v1/users?loginStartsWith=olg&limit=1", None).await;
        assert_eq!((page["users"][0]["login"].as_str(), page["next"].as_str()), (Some("olga"), Some("olga")));
        let (_, page) = admin(&app, "GET", "/admin/v1/users?loginStartsWith=olg&limit=1&after=olga", None).await;
        assert_eq!(page["users"][0]["login"], "olga2");
        assert!(page.get("next").is_none(), "the last page: {page}");
        let (_, none) = admin(&app, "GET", "/admin/v1/users?email=nobody%40example.com", None).await;
        assert_eq!(none["users"], json!([]));
        let (status, body) = admin(&app, "GET", "/admin/v1/users?limit=0", None).await;
        assert_eq!((status, body["code"].as_str()), (400, Some("bad_request")));
        let (status, _) = admin(&app, "GET", "/admin/v1/users?colour=red", None).await;
        assert_eq!(status, 400, "an unknown parameter");
        // The one reader's rules, with the parameter named.
        for (query, named) in [
            ("limit=1&limit=2", "limit: given more than once"),
            ("login=a%00b", "login: holds a NUL character"),
            ("limit=many", "limit: not a number"),
            ("colour=red", "colour: unknown parameter"),
        ] {
            let (status, body) = admin(&app, "GET", &format!("/admin/v1/users?{query}"), None).await;
            assert_eq!((status, body["message"].as_str()), (400, Some(named)), "{query}: {body}");
        }

        // Change: a taken login is refused; null clears a field.
        let path = format!("/admin/v1/users/{id}");
        let (status, body) = admin(&app, "PATCH", &path, Some(json!({"login": "olga2"}))).await;
        assert_eq!((status, body["code"].as_str()), (409, Some("login_taken")));
        let (status, changed) = admin(&app, "PATCH", &path, Some(json!({"email": null, "name": "Ольга К."}))).await;
        assert_eq!(status, 200);
        assert_eq!((changed["email"].clone(), changed["name"].as_str()), (Value::Null, Some("Ольга К.")));
        assert_eq!(changed["login"], "olga", "the refused change changed nothing");

        // A password set by an operator is the one that logs in.
        let (status, body) = admin(&app, "PUT", &format!("{path}/password"), Some(json!({"password": "short"}))).await;
        assert_eq!((status, problems(&body)), (400, vec!["password".to_owned()]));
        let (status, _) =
            admin(&app, "PUT", &format!("{path}/password"), Some(json!({"password": "a-new-password"}))).await;
        assert_eq!(status, 204);
        let tokens = app.tokens_for("olga", "a-new-password").await;
        assert_eq!(app.liveness(&tokens.access_token).await, 200);

        // Removal takes the user's tokens with them.
        assert_eq!(admin(&app, "DELETE", &path, None).await.0, 204);
        assert_eq!(app.liveness(&tokens.access_token).await, 401, "{backend:?}: the user's tokens die with them");
        let (status, body) = admin(&app, "GET", &path, None).await;
        assert_eq!((status, body["code"].as_str()), (404, Some("user_not_found")));
        let (status, _) = admin(&app, "GET", "/admin/v1/users/not-a-uuid", None).await;
        assert_eq!(status, 404);
        let kinds: Vec<String> = audit_tail(&app, 20)
            .await
            .into_iter()
            .filter(|(_, actor)| actor.as_deref() == Some("token:admin"))
            .map(|(kind, _)| kind)
            .collect();
        let expected =
            ["user.deleted", "session.ended", "user.password_set", "user.updated", "user.created", "user.created"];
        assert_eq!(kinds, expected, "the removal ended the user's session first");
    }
}

#[tokio::test]
async fn operators_block_unblock_and_end_sessions() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let tokens = app.tokens_for("ivan", "ivan-password").await;
        let (_, found) = admin(&app, "GET", "/admin/v1/users?login=ivan", None).await;
        let id = found["users"][0]["id"].as_str().unwrap().to_owned();

        let (status, sessions) = admin(&app, "GET", &format!("/admin/v1/users/{id}/sessions"), None).await;
        assert_eq!(status, 200);
        assert_eq!(sessions.as_array().unwrap().len(), 1, "{backend:?}: {sessions}");
        assert_eq!(sessions[0]["clients"], json!([portico_server::demo::CLIENT_ID]));
        let sid = sessions[0]["sid"].as_str().unwrap().to_owned();
        let other = uuid::Uuid::new_v4();
        let (status, body) = admin(&app, "DELETE", &format!("/admin/v1/users/{id}/sessions/{other}"), None).await;
        assert_eq!((status, body["code"].as_str()), (404, Some("session_not_found")));
        assert_eq!(admin(&app, "DELETE", &format!("/admin/v1/users/{id}/sessions/{sid}"), None).await.0, 204);
        let (_, sessions) = admin(&app, "GET", &format!("/admin/v1/users/{id}/sessions"), None).await;
        assert_eq!(sessions, json!([]));
        let (_, client) =
            admin(&app, "GET", &format!("/admin/v1/clients/{}", portico_server::demo::CLIENT_ID), None).await;
        assert_eq!(client["logoutRevokesGrants"], true, "the demo client asks for its grants to end with the session");
        assert_eq!(app.liveness(&tokens.access_token).await, 401, "so ending the session revoked them");
        let event = &app.store.recent_audit(1).await.unwrap()[0];
        assert_eq!((event.kind.as_str(), event.actor.as_deref()), ("session.ended", Some("token:admin")));

        let tokens = app.tokens_for("ivan", "ivan-password").await;

        let reason = json!({"reason": "reported stolen phone"});
        let (status, blocked) = admin(&app, "POST", &format!("/admin/v1/users/{id}/block"), Some(reason)).await;
        assert_eq!((status, blocked["blocked"].as_bool()), (200, Some(true)));
        assert_eq!(app.liveness(&tokens.access_token).await, 401, "a block revokes every grant");
        let event = &app.store.recent_audit(1).await.unwrap()[0];
        assert_eq!((event.kind.as_str(), event.actor.as_deref()), ("user.blocked", Some("token:admin")));
        assert_eq!(event.detail, json!({"reason": "reported stolen phone"}));
        let (status, _) = admin(&app, "POST", &format!("/admin/v1/users/{id}/unblock"), Some(json!({}))).await;
        assert_eq!(status, 200);
        let again = app.tokens_for("ivan", "ivan-password").await;
        assert_eq!(app.liveness(&again.access_token).await, 200, "unblocked, the user logs in again");
    }
}

#[tokio::test]
async fn operators_rotate_keys_and_read_the_audit_log_a_page_at_a_time() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (_, keys) = admin(&app, "GET", "/admin/v1/keys", None).await;
        assert_eq!(keys.as_array().unwrap().len(), 1);
        let (status, rotated) = admin(&app, "POST", "/admin/v1/keys/rotate", None).await;
        assert_eq!(status, 200);
        let (_, keys) = admin(&app, "GET", "/admin/v1/keys", None).await;
        assert_eq!((keys[0]["kid"].clone(), keys[0]["active"].as_bool()), (rotated["kid"].clone(), Some(true)));
        assert_eq!(keys[1]["active"], false);
        assert!(keys[1]["retiredAt"].is_string());
        let jwks: Value = app.http().get(app.url("/oauth2/jwks")).send().await.unwrap().json().await.unwrap();
        assert!(jwks["keys"].as_array().unwrap().iter().any(|k| k["kid"] == rotated["kid"]), "published at once");

        for login in ["audit-1", "audit-2", "audit-3"] {
            let user = json!({"login": login, "password": "a-long-password"});
            assert_eq!(admin(&app, "POST", "/admin/v1/users", Some(user)).await.0, 201);
        }
        let (status, page) = admin(&app, "GET", "/admin/v1/audit?kind=user.created&limit=2", None).await;
        assert_eq!(status, 200, "{page}");
        assert_eq!(page["events"].as_array().unwrap().len(), 2);
        assert!(page["events"][0]["id"].as_i64() > page["events"][1]["id"].as_i64(), "newest first");
        let before = page["next"].as_i64().expect("another page");
        let (_, rest) = admin(&app, "GET", &format!("/admin/v1/audit?kind=user.created&before={before}"), None).await;
        assert_eq!(rest["events"].as_array().unwrap().len(), 1);
        assert!(rest.get("next").is_none());
        let first = &rest["events"][0];
        let (_, by_user) =
            admin(&app, "GET", &format!("/admin/v1/audit?userId={}", first["userId"].as_str().unwrap()), None).await;
        assert_eq!(by_user["events"].as_array().unwrap().len(), 1);
        let (_, keys_by_token) = admin(&app, "GET", "/admin/v1/audit?kind=key.rotated&actor=token%3Aadmin", None).await;
        assert_eq!(keys_by_token["events"][0]["detail"]["kid"], rotated["kid"]);
        let future = "2999-01-01T00:00:00Z";
        let (_, none) = admin(&app, "GET", &format!("/admin/v1/audit?from={future}"), None).await;
        assert_eq!(none["events"], json!([]));
        let (status, body) = admin(&app, "GET", "/admin/v1/audit?from=yesterday", None).await;
        assert_eq!((status, body["code"].as_str()), (400, Some("bad_request")));
    }
}

#[tokio::test]
async fn thirty_operators_creating_one_login_and_one_client_at_once_make_one_of_each() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let user = json!({"login": "raced", "password": "a-long-password"});
        let client = json!({"clientId": "raced", "redirectUris": ["https://raced.example/cb"]});
        let mut requests = tokio::task::JoinSet::new();
        for (what, path, body) in [("user", "/admin/v1/users", &user), ("client", "/admin/v1/clients", &client)] {
            for _ in 0..30 {
                let request = app.http().post(app.url(path)).bearer_auth(ADMIN_TOKEN).json(body);
                requests.spawn(async move { (what, request.send().await.unwrap().status().as_u16()) });
            }
        }
        let answers = requests.join_all().await;
        for what in ["user", "client"] {
            let statuses: Vec<u16> = answers.iter().filter(|(w, _)| *w == what).map(|(_, status)| *status).collect();
            assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 1, "{backend:?} {what}: {statuses:?}");
            assert_eq!(statuses.iter().filter(|s| **s == 409).count(), 29, "{backend:?} {what}: {statuses:?}");
        }
        let (_, found) = admin(&app, "GET", "/admin/v1/users?login=raced", None).await;
        assert_eq!(found["users"].as_array().unwrap().len(), 1);
        let query = portico_storage::AuditQuery { kind: Some("user.created".into()), ..Default::default() };
        assert_eq!(app.store.query_audit(&query).await.unwrap().len(), 1, "one audit entry for the one creation");
    }
}

#[tokio::test]
async fn thirty_two_changes_to_one_client_at_once_are_all_kept() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let new = json!({"clientId": "busy", "redirectUris": ["https://busy.example/cb"], "nameRu": "Занятой"});
        assert_eq!(admin(&app, "POST", "/admin/v1/clients", Some(new)).await.0, 201);
        let before = app.store.find_client(&"busy".into()).await.unwrap().unwrap().revision;
        // Four fields, eight operators changing each, all at once: each
        // change reads the client and writes it back.
        let mut requests = tokio::task::JoinSet::new();
        for i in 0..32 {
            let body = match i % 4 {
                0 => json!({"nameRu": format!("ru-{i}")}),
                1 => json!({"nameEn": format!("en-{i}")}),
                2 => json!({"postLogoutRedirectUris": [format!("https://busy.example/out-{i}")]}),
                _ => json!({"requireConsent": true}),
            };
            let request = app.http().patch(app.url("/admin/v1/clients/busy")).bearer_auth(ADMIN_TOKEN).json(&body);
            requests.spawn(async move { request.send().await.unwrap().status().as_u16() });
        }
        let statuses = requests.join_all().await;
        assert!(statuses.iter().all(|s| *s == 200), "{backend:?}: {statuses:?}");
        let (_, read) = admin(&app, "GET", "/admin/v1/clients/busy", None).await;
        assert!(read["nameRu"].as_str().unwrap().starts_with("ru-"), "{backend:?}: a change was undone: {read}");
        assert!(read["nameEn"].as_str().unwrap().starts_with("en-"), "{backend:?}: a change was undone: {read}");
        assert!(read["postLogoutRedirectUris"][0].as_str().unwrap().contains("/out-"), "{backend:?}: {read}");
        assert_eq!(read["requireConsent"], true, "{backend:?}: a change was undone: {read}");
        let after = app.store.find_client(&"busy".into()).await.unwrap().unwrap().revision;
        assert_eq!(after - before, 32, "{backend:?}: each change written once");
        let query = portico_storage::AuditQuery { kind: Some("client.updated".into()), ..Default::default() };
        assert_eq!(app.store.query_audit(&query).await.unwrap().len(), 32, "{backend:?}");
    }
}

#[tokio::test]
async fn changes_to_one_client_from_two_nodes_at_once_are_all_kept() {
    use portico_admin::service::ClientChanges;
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let new = json!({"clientId": "shared", "redirectUris": ["https://shared.example/cb"]});
        assert_eq!(admin(&app, "POST", "/admin/v1/clients", Some(new)).await.0, 201);
        let before = app.store.find_client(&"shared".into()).await.unwrap().unwrap().revision;
        // Two admin services over one database, as two nodes have: each
        // makes its own changes one at a time, and they race each other.
        let secret = portico_server::secret::InstanceSecret::load(&app.config).unwrap();
        let nodes = [(); 2].map(|()| {
            std::sync::Arc::new(portico_admin::AdminService::new(
                std::sync::Arc::clone(&app.store),
                app.clock.clone(),
                secret.sealer(),
            ))
        });
        let mut changes = tokio::task::JoinSet::new();
        for i in 0..32 {
            let node = std::sync::Arc::clone(&nodes[i % 2]);
            let change = if i % 4 < 2 {
                ClientChanges { name_ru: Some(format!("ru-{i}")), ..Default::default() }
            } else {
                ClientChanges { name_en: Some(format!("en-{i}")), ..Default::default() }
            };
            changes.spawn(async move {
                node.update_client(&portico_model::audit::Actor::Cli, "shared", change).await.map(|_| ())
            });
        }
        let results = changes.join_all().await;
        assert!(results.iter().all(Result::is_ok), "{backend:?}: {results:?}");
        let client = app.store.find_client(&"shared".into()).await.unwrap().unwrap();
        assert!(
            client.name.ru.starts_with("ru-") && client.name.en.starts_with("en-"),
            "{backend:?}: {:?}",
            client.name
        );
        assert_eq!(client.revision - before, 32, "{backend:?}: each change written once");
    }
}

#[tokio::test]
async fn thirty_two_changes_to_one_user_at_once_are_all_kept() {
    const PATCH_OP: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let new = json!({"login": "busy", "password": "busy-password-0"});
        let (status, created) = admin(&app, "POST", "/admin/v1/users", Some(new)).await;
        assert_eq!(status, 201, "{backend:?}: {created}");
        let path = format!("/admin/v1/users/{}", created["id"].as_str().unwrap());
        let stored = || async { app.store.find_user_by_login("busy").await.unwrap().unwrap() };
        let before = stored().await.revision;
        // Operators change the name and the e-mail, operators set new
        // passwords and the provisioning system changes an attribute of its
        // own, all at once: each change reads the user and writes it back.
        let mut requests = tokio::task::JoinSet::new();
        for i in 0..32 {
            let request = match i % 4 {
                0 => app.http().patch(app.url(&path)).json(&json!({"name": format!("name-{i}")})),
                1 => app.http().patch(app.url(&path)).json(&json!({"email": format!("e{i}@example.com")})),
                2 => app
                    .http()
                    .put(app.url(&format!("{path}/password")))
                    .json(&json!({"password": format!("busy-password-{i}")})),
                _ => {
                    let scim_path = path.replace("/admin/v1/users/", "/scim/v2/Users/");
                    let body = json!({"schemas": [PATCH_OP],
                                      "Operations": [{"op": "replace", "path": "displayName", "value": format!("display-{i}")}]});
                    let request = app.http().patch(app.url(&scim_path)).header("content-type", "application/scim+json");
                    requests.spawn(async move {
                        request
                            .bearer_auth(portico_tests::SCIM_TOKEN)
                            .body(body.to_string())
                            .send()
                            .await
                            .unwrap()
                            .status()
                            .as_u16()
                    });
                    continue;
                }
            };
            requests.spawn(async move { request.bearer_auth(ADMIN_TOKEN).send().await.unwrap().status().as_u16() });
        }
        let statuses = requests.join_all().await;
        assert!(statuses.iter().all(|s| (200..300).contains(s)), "{backend:?}: {statuses:?}");
        let user = stored().await;
        assert!(
            user.name.as_deref().is_some_and(|n| n.starts_with("name-")),
            "{backend:?}: a change was undone: {user:?}"
        );
        assert!(user.email.as_deref().is_some_and(|e| e.ends_with("@example.com")), "{backend:?}: a change was undone");
        let display = user.provisioned.as_ref().and_then(|p| p["displayName"].as_str());
        assert!(display.is_some_and(|d| d.starts_with("display-")), "{backend:?}: a change was undone: {user:?}");
        assert!(
            !portico_crypto::password::verify(&user.password_hash, "busy-password-0"),
            "{backend:?}: the old password came back"
        );
        let set: Vec<usize> = (0..32)
            .filter(|i| {
                i % 4 == 2 && portico_crypto::password::verify(&user.password_hash, &format!("busy-password-{i}"))
            })
            .collect();
        assert_eq!(set.len(), 1, "{backend:?}: one of the new passwords is the user's");
        assert_eq!(user.revision - before, 32, "{backend:?}: each change written once");
        let count = |kind: &str| {
            let query = portico_storage::AuditQuery { kind: Some(kind.into()), ..Default::default() };
            let store = std::sync::Arc::clone(&app.store);
            async move { store.query_audit(&query).await.unwrap().len() }
        };
        assert_eq!(count("user.updated").await, 24, "{backend:?}");
        assert_eq!(count("user.password_set").await, 8, "{backend:?}");
    }
}

#[tokio::test]
async fn changes_to_one_user_from_two_nodes_at_once_are_all_kept() {
    use portico_admin::service::UserChanges;
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let id = app.store.find_user_by_login("maria").await.unwrap().unwrap().id;
        let before = app.store.find_user(id).await.unwrap().unwrap().revision;
        // Two admin services over one database, as two nodes have.
        let nodes = [(); 2].map(|()| std::sync::Arc::new(app.admin_service()));
        let mut changes = tokio::task::JoinSet::new();
        for i in 0..32 {
            let node = std::sync::Arc::clone(&nodes[i % 2]);
            let change = if i % 4 < 2 {
                UserChanges { name: Some(Some(format!("name-{i}"))), ..Default::default() }
            } else {
                UserChanges { email: Some(Some(format!("e{i}@example.com"))), ..Default::default() }
            };
            changes.spawn(
                async move { node.update_user(&portico_model::audit::Actor::Cli, id, change).await.map(|_| ()) },
            );
        }
        let results = changes.join_all().await;
        assert!(results.iter().all(Result::is_ok), "{backend:?}: {results:?}");
        let user = app.store.find_user(id).await.unwrap().unwrap();
        assert!(user.name.as_deref().is_some_and(|n| n.starts_with("name-")), "{backend:?}: {user:?}");
        assert!(user.email.as_deref().is_some_and(|e| e.starts_with('e') && e.ends_with("@example.com")), "{user:?}");
        assert_eq!(user.revision - before, 32, "{backend:?}: each change written once");
    }
}

/// A PATCH with `If-Match` is made only on the revision it names: a
/// program that read a user or a client, then changes it, never undoes a
/// change made since (412, nothing changed); `*` and a list naming the
/// stored revision are made; a weak tag never matches; a malformed one is
/// a 400.
#[tokio::test]
async fn a_change_sent_with_an_older_etag_is_refused_and_changes_nothing() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let maria = app.store.find_user_by_login("maria").await.unwrap().unwrap();
        let user_path = format!("/admin/v1/users/{}", maria.id.as_uuid());
        let client_path = format!("/admin/v1/clients/{}", portico_server::demo::CLIENT_ID);
        let others = [
            (user_path.as_str(), "name", "email", "maria.meanwhile@example.com"),
            (client_path.as_str(), "nameEn", "nameRu", "Изменено тем временем"),
        ];
        for (path, field, other, other_value) in others {
            let read = app.http().get(app.url(path)).bearer_auth(ADMIN_TOKEN).send().await.unwrap();
            assert_eq!(read.status(), 200);
            let read_tag = read.headers()["etag"].to_str().unwrap().to_owned();
            let patch = |if_match: Option<&str>, name: &str, value: &str| {
                let mut request =
                    app.http().patch(app.url(path)).bearer_auth(ADMIN_TOKEN).json(&json!({ name: value }));
                if let Some(if_match) = if_match {
                    request = request.header("if-match", if_match);
                }
                async move {
                    let response = request.send().await.unwrap();
                    let tag = response.headers().get("etag").map(|t| t.to_str().unwrap().to_owned());
                    (response.status().as_u16(), tag, response.json::<Value>().await.unwrap())
                }
            };
            // Another change since the read.
            let (status, since_tag, since) = patch(None, other, other_value).await;
            assert_eq!(status, 200, "{backend:?} {path}: {since}");
            let since_tag = since_tag.expect("an ETag");
            assert_ne!(since_tag, read_tag, "{backend:?}: a change is a new revision");

            let (status, _, refused) = patch(Some(&read_tag), field, "from the old read").await;
            assert_eq!(
                (status, refused["code"].as_str()),
                (412, Some("precondition_failed")),
                "{backend:?}: {refused}"
            );
            assert!(refused["message"].as_str().unwrap().contains("read it again"), "{refused}");
            let (_, _, now) = patch(Some("W/\"0\""), field, "weak").await;
            assert_eq!(now["code"], "precondition_failed", "{backend:?}: a weak tag never matches");
            let (status, _, malformed) = patch(Some("3"), field, "malformed").await;
            assert_eq!((status, malformed["code"].as_str()), (400, Some("bad_request")), "{malformed}");
            let after = app.http().get(app.url(path)).bearer_auth(ADMIN_TOKEN).send().await.unwrap();
            assert_eq!(after.headers()["etag"].to_str().unwrap(), since_tag, "{backend:?}: nothing was changed");
            assert_eq!(after.json::<Value>().await.unwrap(), since, "{backend:?}: nothing was changed");

            let (status, tag, changed) = patch(Some(&since_tag), field, "from the latest read").await;
            assert_eq!((status, changed[field].as_str()), (200, Some("from the latest read")), "{backend:?}");
            let list = format!("\"999999\", {}", tag.expect("an ETag"));
            assert_eq!(patch(Some(&list), field, "named in a list").await.0, 200, "{backend:?}");
            assert_eq!(patch(Some("*"), field, "whatever is stored").await.0, 200, "{backend:?}");
        }
    }
}

#[tokio::test]
async fn operators_list_and_revoke_a_users_grants() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let tokens = app.tokens_for("maria", "maria-password").await;
        let (_, found) = admin(&app, "GET", "/admin/v1/users?login=maria", None).await;
        let id = found["users"][0]["id"].as_str().unwrap().to_owned();
        let (status, grants) = admin(&app, "GET", &format!("/admin/v1/users/{id}/grants"), None).await;
        assert_eq!(status, 200);
        assert_eq!(grants.as_array().unwrap().len(), 1, "{backend:?}: {grants}");
        assert_eq!(grants[0]["clientId"], portico_server::demo::CLIENT_ID);
        let grant = grants[0]["id"].as_str().unwrap().to_owned();

        let (_, ivan) = admin(&app, "GET", "/admin/v1/users?login=ivan", None).await;
        let ivan = ivan["users"][0]["id"].as_str().unwrap().to_owned();
        let (status, body) = admin(&app, "DELETE", &format!("/admin/v1/users/{ivan}/grants/{grant}"), None).await;
        assert_eq!((status, body["code"].as_str()), (404, Some("grant_not_found")), "another user's grant");
        assert_eq!(app.liveness(&tokens.access_token).await, 200);

        assert_eq!(admin(&app, "DELETE", &format!("/admin/v1/users/{id}/grants/{grant}"), None).await.0, 204);
        assert_eq!(app.liveness(&tokens.access_token).await, 401, "{backend:?}: the grant's tokens stop at once");
        let refresh = tokens.refresh_token.as_deref().unwrap();
        let response = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", refresh)]).await;
        assert_eq!(response.status(), 400, "and its refresh token");
        let (_, grants) = admin(&app, "GET", &format!("/admin/v1/users/{id}/grants"), None).await;
        assert_eq!(grants, json!([]));
        let event = &app.store.recent_audit(1).await.unwrap()[0];
        assert_eq!((event.kind.as_str(), event.actor.as_deref()), ("grant.revoked", Some("token:admin")));
        assert_eq!(event.client_id.as_ref().map(|c| c.to_string()).as_deref(), Some(portico_server::demo::CLIENT_ID));
    }
}

#[tokio::test]
async fn operators_see_a_merchants_deliveries_and_resend_one() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let shop = json!({"merchantId": "shop-9", "publicId": "pub-shop-9", "sbpMerchantId": "MA0000000009"});
        assert_eq!(admin(&app, "POST", "/admin/v1/merchants", Some(shop)).await.0, 201);
        let event =
            json!({"eventId": "ev-admin-1", "merchantId": "shop-9", "event": crate::notifications::payment("o-1")});
        let (status, _) = crate::notifications::submit(&app, "payment", &event, Some(INTERNAL_TOKEN)).await;
        assert_eq!(status, 202);

        let (status, page) = admin(&app, "GET", "/admin/v1/merchants/shop-9/deliveries", None).await;
        assert_eq!((status, page["total"].as_u64()), (200, Some(1)), "{backend:?}: {page}");
        assert_eq!(page["items"][0]["eventId"], "ev-admin-1");
        let delivery = page["items"][0]["id"].as_str().unwrap().to_owned();
        let (status, body) = admin(&app, "GET", "/admin/v1/merchants/nobody/deliveries", None).await;
        assert_eq!((status, body["code"].as_str()), (404, Some("merchant_not_found")));
        let (status, body) = admin(&app, "GET", "/admin/v1/merchants/shop-9/deliveries?size=0", None).await;
        assert_eq!((status, body["code"].as_str()), (400, Some("bad_request")));

        let path = format!("/admin/v1/merchants/demo-shop/deliveries/{delivery}/resend");
        let (status, body) = admin(&app, "POST", &path, None).await;
        assert_eq!((status, body["code"].as_str()), (404, Some("delivery_not_found")), "another merchant's delivery");
        let path = format!("/admin/v1/merchants/shop-9/deliveries/{delivery}/resend");
        let (status, resent) = admin(&app, "POST", &path, None).await;
        assert_eq!((status, resent["status"].as_str()), (202, Some("PENDING")), "{resent}");
        assert_eq!(resent["eventId"], "ev-admin-1");
        let (_, page) = admin(&app, "GET", "/admin/v1/merchants/shop-9/deliveries", None).await;
        assert_eq!(page["total"], 2, "the event has a second delivery");
        let event = &app.store.recent_audit(1).await.unwrap()[0];
        assert_eq!((event.kind.as_str(), event.actor.as_deref()), ("delivery.resent", Some("token:admin")));
    }
}

#[tokio::test]
async fn operators_list_a_companys_report_tasks_and_retry_a_failed_one() {
    use portico_model::reports::TaskStatus;
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let mut failed = crate::storage_contract::report_task(1, "7700000099", (1, 31));
        failed.status = TaskStatus::Failed;
        failed.error = Some("the agreement has no data".into());
        app.store.create_report_task(&failed, portico_storage::Reuse::Never).await.unwrap();

        let (status, tasks) = admin(&app, "GET", "/admin/v1/reports/tasks?cnum=7700000099", None).await;
        assert_eq!(status, 200, "{tasks}");
        assert_eq!(tasks.as_array().unwrap().len(), 1, "{backend:?}");
        assert_eq!(tasks[0]["status"], "FAILED");
        let (status, body) = admin(&app, "GET", "/admin/v1/reports/tasks?cnum=77x", None).await;
        assert_eq!((status, body["code"].as_str()), (400, Some("bad_request")));

        let path = format!("/admin/v1/reports/tasks/{}/retry", failed.id);
        let (status, retried) = admin(&app, "POST", &path, None).await;
        assert_eq!(status, 202, "{retried}");
        assert_ne!(retried["id"].as_str(), Some(failed.id.to_string().as_str()), "a new task");
        let stored = app.store.find_report_task(retried["id"].as_str().unwrap().parse().unwrap()).await.unwrap();
        let stored = stored.expect("the new task is stored");
        assert_eq!((stored.cnum.as_str(), stored.report_type), ("7700000099", failed.report_type));
        assert_eq!((stored.period_from, stored.file_types.clone()), (failed.period_from, failed.file_types.clone()));
        let mut done = crate::storage_contract::report_task(2, "7700000099", (1, 31));
        done.status = TaskStatus::Done;
        app.store.create_report_task(&done, portico_storage::Reuse::Never).await.unwrap();
        let (status, body) = admin(&app, "POST", &format!("/admin/v1/reports/tasks/{}/retry", done.id), None).await;
        assert_eq!((status, body["code"].as_str()), (409, Some("task_not_failed")), "only a FAILED task: {body}");
        let (status, _) =
            admin(&app, "POST", &format!("/admin/v1/reports/tasks/{}/retry", uuid::Uuid::new_v4()), None).await;
        assert_eq!(status, 404);
        let retried_events = app
            .store
            .query_audit(&portico_storage::AuditQuery {
                kind: Some("report_task.retried".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(retried_events.len(), 1, "the one retry");
        assert_eq!(retried_events[0].event.actor.as_deref(), Some("token:admin"));
        assert_eq!(retried_events[0].event.detail["failed"], json!(failed.id));
    }
}

/// A failed task is asked again once: 32 retries of it at once (an
/// operator's double click, two operators) make one new task, which every
/// answer names, and one audit entry; a later retry names it too while it
/// has not failed (no report worker runs here).
#[tokio::test]
async fn thirty_two_retries_of_one_failed_task_at_once_ask_for_it_once() {
    use portico_model::reports::TaskStatus;
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| c.reports.generate = false).await;
        let mut failed = crate::storage_contract::report_task(1, "7700000099", (1, 31));
        failed.status = TaskStatus::Failed;
        let now = portico_model::clock::Clock::now(app.clock.as_ref());
        (failed.created_at, failed.updated_at) = (now - time::Duration::hours(1), now);
        app.store.create_report_task(&failed, portico_storage::Reuse::Never).await.unwrap();
        let path = format!("/admin/v1/reports/tasks/{}/retry", failed.id);
        let mut requests = tokio::task::JoinSet::new();
        for _ in 0..32 {
            let request = app.http().post(app.url(&path)).bearer_auth(portico_tests::ADMIN_TOKEN);
            requests.spawn(async move {
                let response = request.send().await.unwrap();
                let status = response.status().as_u16();
                (status, response.json::<Value>().await.unwrap()["id"].as_str().map(str::to_owned))
            });
        }
        let answers = requests.join_all().await;
        let ids: std::collections::BTreeSet<_> = answers.iter().map(|(_, id)| id.clone()).collect();
        assert!(answers.iter().all(|(status, _)| *status == 202), "{backend:?}: {answers:?}");
        assert_eq!(ids.len(), 1, "{backend:?}: one new task, {answers:?}");
        let (_, tasks) = admin(&app, "GET", "/admin/v1/reports/tasks?cnum=7700000099", None).await;
        assert_eq!(tasks.as_array().unwrap().len(), 2, "{backend:?}: the failed task and its one retry");
        let (status, again) = admin(&app, "POST", &path, None).await;
        assert_eq!((status, again["id"].as_str().map(str::to_owned)), (202, ids.first().cloned().flatten()));
        let retried = portico_storage::AuditQuery { kind: Some("report_task.retried".into()), ..Default::default() };
        assert_eq!(app.store.query_audit(&retried).await.unwrap().len(), 1, "{backend:?}: one audit entry");
    }
}

/// An admin API call with `token` (an operator's access token).
async fn as_operator(app: &TestApp, token: &str, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let url = app.url(path);
    let request = match method {
        "GET" => app.http().get(url),
        "POST" => app.http().post(url).json(&body.unwrap_or(json!({}))),
        "PUT" => app.http().put(url).json(&body.unwrap_or(json!({}))),
        "DELETE" => app.http().delete(url),
        other => panic!("no method {other}"),
    };
    let response = request.bearer_auth(token).send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn operators_act_by_their_role_and_support_cannot_do_what_needs_admin() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let mut ids = std::collections::HashMap::new();
        for (login, role) in [("sam", Some("support")), ("ada", Some("admin")), ("nina", None)] {
            let user = json!({"login": login, "password": "a-long-password", "phone": "+79001230000"});
            let (status, created) = admin(&app, "POST", "/admin/v1/users", Some(user)).await;
            assert_eq!(status, 201, "{created}");
            let id = created["id"].as_str().unwrap().to_owned();
            if let Some(role) = role {
                let (status, set) =
                    admin(&app, "PUT", &format!("/admin/v1/users/{id}/role"), Some(json!({"role": role}))).await;
                assert_eq!((status, set["role"].as_str()), (200, Some(role)));
            }
            ids.insert(login, id);
        }
        let sam = app.token_pair_for("sam", "portico-console").await.access_token;
        let ada = app.token_pair_for("ada", "portico-console").await.access_token;
        let nina = app.token_pair_for("nina", "portico-console").await.access_token;

        // Support: reads and blocks, and nothing more.
        let (status, found) = as_operator(&app, &sam, "GET", "/admin/v1/users?login=ivan", None).await;
        assert_eq!(status, 200, "{backend:?}: {found}");
        let ivan = found["users"][0]["id"].as_str().unwrap().to_owned();
        let (status, _) = as_operator(&app, &sam, "POST", &format!("/admin/v1/users/{ivan}/block"), None).await;
        assert_eq!(status, 200);
        let event = &app.store.recent_audit(1).await.unwrap()[0];
        assert_eq!((event.kind.as_str(), event.actor.as_deref()), ("user.blocked", Some("operator:sam")));
        let client = json!({"clientId": "sam-app", "redirectUris": ["https://sam.example/cb"]});
        for (method, path, body) in [
            ("POST", "/admin/v1/clients", Some(client)),
            ("POST", "/admin/v1/keys/rotate", None),
            ("GET", "/admin/v1/permissions", None),
            ("GET", "/admin/v1/merchants", None),
            ("PUT", &format!("/admin/v1/users/{}/role", ids["sam"]) as &str, Some(json!({"role": "admin"}))),
        ] {
            let (status, body) = as_operator(&app, &sam, method, path, body).await;
            assert_eq!((status, body["code"].as_str()), (403, Some("forbidden")), "{method} {path}: {body}");
            assert!(body["message"].as_str().unwrap().contains("needs the admin role"), "{body}");
        }
        assert_eq!(admin(&app, "GET", "/admin/v1/clients/sam-app", None).await.0, 404, "nothing was created");

        // Admin: everything, recorded as the operator.
        let (status, rotated) = as_operator(&app, &ada, "POST", "/admin/v1/keys/rotate", None).await;
        assert_eq!(status, 200, "{rotated}");
        let event = &app.store.recent_audit(1).await.unwrap()[0];
        assert_eq!((event.kind.as_str(), event.actor.as_deref()), ("key.rotated", Some("operator:ada")));

        // Refused: a user without a role; an operator's token of another client; a role taken away.
        let (status, body) = as_operator(&app, &nina, "GET", "/admin/v1/users", None).await;
        assert_eq!((status, body["code"].as_str()), (401, Some("unauthorized")), "no operator role");
        app.add_client("other-app", "other-secret-0123456789").await;
        let elsewhere = app.token_pair_for("ada", "other-app").await.access_token;
        assert_eq!(as_operator(&app, &elsewhere, "GET", "/admin/v1/users", None).await.0, 401, "not the console's");
        let (status, _) =
            admin(&app, "PUT", &format!("/admin/v1/users/{}/role", ids["sam"]), Some(json!({"role": null}))).await;
        assert_eq!(status, 200);
        assert_eq!(as_operator(&app, &sam, "GET", "/admin/v1/users", None).await.0, 401, "{backend:?}: at once");
        let (status, body) =
            admin(&app, "PUT", &format!("/admin/v1/users/{}/role", ids["nina"]), Some(json!({"role": "root"}))).await;
        assert_eq!((status, body["code"].as_str()), (400, Some("bad_request")));
    }
}

/// RFC 9449 and RFC 8705 at the admin API: an operator's token bound to
/// a DPoP key acts only with a fresh proof of that key for the call, one
/// bound to a client certificate only with that certificate; refusals
/// carry the challenge of how the token came.
#[tokio::test]
async fn an_operators_bound_token_acts_with_its_proof_or_its_certificate() {
    const HEADER: &str = "x-client-cert";
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.mtls.certificate_header = Some(HEADER.into());
            c.mtls.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()];
        })
        .await;
        let user = json!({"login": "ada", "password": "a-long-password", "phone": "+79001230000"});
        let (_, created) = admin(&app, "POST", "/admin/v1/users", Some(user)).await;
        let ada = created["id"].as_str().unwrap().to_owned();
        let (status, _) =
            admin(&app, "PUT", &format!("/admin/v1/users/{ada}/role"), Some(json!({"role": "admin"}))).await;
        assert_eq!(status, 200, "{backend:?}");

        // Bound to a DPoP key.
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        let jkt = portico_crypto::dpop::thumbprint(&serde_json::to_value(key.jwk()).unwrap()).unwrap();
        let bound = Binding { jkt: Some(&jkt), x5t: None };
        let token = app.token_pair_bound("ada", "portico-console", bound).await.access_token;
        let url = app.url("/admin/v1/keys/rotate");
        let proof = |url: &str| jws::dpop_proof(&key, "ES256", &app, "POST", url, Some(&token));
        let call = |scheme: &str, proof: Option<String>| {
            let mut request = app.http().post(&url).header("authorization", format!("{scheme} {token}"));
            if let Some(proof) = proof {
                request = request.header("dpop", proof);
            }
            answer(request)
        };
        let good = proof(&url);
        let done = call("DPoP", Some(good.clone())).await;
        assert_eq!(done.status, 200, "{backend:?}: {}", done.body);
        let event = &app.store.recent_audit(1).await.unwrap()[0];
        assert_eq!((event.kind.as_str(), event.actor.as_deref()), ("key.rotated", Some("operator:ada")));
        let dpop =
            |code: &str| format!("DPoP error=\"{code}\", algs=\"{}\"", portico_crypto::dpop::ALGORITHMS.join(" "));
        for (scheme, proof, challenge, why) in [
            ("DPoP", Some(good), dpop("invalid_dpop_proof"), "a replayed proof"),
            ("DPoP", None, dpop("invalid_dpop_proof"), "no proof"),
            (
                "DPoP",
                Some(proof(&app.url("/admin/v1/users"))),
                dpop("invalid_dpop_proof"),
                "a proof for another address",
            ),
            ("Bearer", Some(proof(&url)), "Bearer error=\"invalid_token\"".to_owned(), "as a bearer token"),
        ] {
            let refused = call(scheme, proof).await;
            assert_eq!(
                (refused.status, refused.body["code"].as_str(), refused.challenge.as_deref()),
                (401, Some("unauthorized"), Some(challenge.as_str())),
                "{backend:?}: {why}"
            );
            let message = refused.body["message"].as_str().unwrap();
            assert_eq!(message.contains("fresh DPoP proof"), challenge.contains("invalid_dpop_proof"), "{message}");
        }
        let rotations = app.store.recent_audit(10).await.unwrap();
        assert_eq!(rotations.iter().filter(|e| e.kind.as_str() == "key.rotated").count(), 1, "{backend:?}");

        // Bound to a client certificate.
        let mine = TestCertificate::new("ops.bank.example");
        let other = TestCertificate::new("other.example");
        let bound = Binding { jkt: None, x5t: Some(&mine.thumbprint) };
        let token = app.token_pair_bound("ada", "portico-console", bound).await.access_token;
        for (certificate, expected) in [(Some(&mine), 200), (None, 401), (Some(&other), 401)] {
            let mut request = app.http().get(app.url("/admin/v1/users")).bearer_auth(&token);
            if let Some(certificate) = certificate {
                request = request.header(HEADER, &certificate.escaped);
            }
            let answered = answer(request).await;
            assert_eq!(answered.status, expected, "{backend:?}: {}", answered.body);
        }
    }
}

/// Support acts on users and on other support operators, never on an
/// operator of a higher role: blocking an admin (which would end every
/// admin token) is refused and changes nothing.
#[tokio::test]
async fn support_cannot_act_on_an_admin() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let mut ids = std::collections::HashMap::new();
        for (login, role) in [("sam", "support"), ("sue", "support"), ("ada", "admin")] {
            let user = json!({"login": login, "password": "a-long-password", "phone": "+79001230000"});
            let (_, created) = admin(&app, "POST", "/admin/v1/users", Some(user)).await;
            let id = created["id"].as_str().unwrap().to_owned();
            let (status, _) =
                admin(&app, "PUT", &format!("/admin/v1/users/{id}/role"), Some(json!({"role": role}))).await;
            assert_eq!(status, 200);
            ids.insert(login, id);
        }
        let sam = app.token_pair_for("sam", "portico-console").await.access_token;
        let ada = app.token_pair_for("ada", "portico-console").await.access_token;
        let ada_id = &ids["ada"];
        let (_, grants) = admin(&app, "GET", &format!("/admin/v1/users/{ada_id}/grants"), None).await;
        let grant = grants[0]["id"].as_str().unwrap().to_owned();
        let (_, sessions) = admin(&app, "GET", &format!("/admin/v1/users/{ada_id}/sessions"), None).await;
        let sid = sessions[0]["sid"].as_str().map(str::to_owned).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        for (method, path) in [
            ("POST", format!("/admin/v1/users/{ada_id}/block")),
            ("POST", format!("/admin/v1/users/{ada_id}/unblock")),
            ("DELETE", format!("/admin/v1/users/{ada_id}/grants/{grant}")),
            ("DELETE", format!("/admin/v1/users/{ada_id}/sessions/{sid}")),
            ("DELETE", format!("/admin/v1/users/{ada_id}/passkeys/{}", uuid::Uuid::new_v4())),
        ] {
            let (status, body) = as_operator(&app, &sam, method, &path, None).await;
            assert_eq!(
                (status, body["code"].as_str()),
                (403, Some("forbidden")),
                "{backend:?} {method} {path}: {body}"
            );
            assert!(body["message"].as_str().unwrap().contains("admin role"), "{body}");
        }
        let by_sam = app.store.recent_audit(100).await.unwrap();
        assert!(by_sam.iter().all(|e| e.actor.as_deref() != Some("operator:sam")), "nothing was done by sam");
        assert_eq!(as_operator(&app, &ada, "GET", "/admin/v1/users", None).await.0, 200, "the admin's token lives");
        // Another support operator, and an admin acting on support: allowed.
        let (status, _) = as_operator(&app, &sam, "POST", &format!("/admin/v1/users/{}/block", ids["sue"]), None).await;
        assert_eq!(status, 200, "{backend:?}");
        let (status, _) = as_operator(&app, &ada, "POST", &format!("/admin/v1/users/{}/block", ids["sam"]), None).await;
        assert_eq!(status, 200);
    }
}

#[tokio::test]
async fn a_path_segment_that_is_not_utf8_names_nothing_in_the_shared_body() {
    let app = TestApp::spawn(backends()[0]).await;
    for path in ["/admin/v1/users/%FF", "/admin/v1/clients/%FF", "/admin/v1/users/%FF/grants"] {
        let (status, body) = admin(&app, "GET", path, None).await;
        assert_error(&body, status, (404, "not_found"), path);
    }
    let (status, body) = admin(&app, "DELETE", "/admin/v1/users/%FF/sessions/%FE", None).await;
    assert_error(&body, status, (404, "not_found"), "DELETE a session");
}

/// A body over the size limit is `413 too_large` on every admin route,
/// whether the route reads JSON or a document of its own, and stores nothing.
#[tokio::test]
async fn oversized_bodies_answer_413_on_every_admin_route() {
    let app = TestApp::spawn(backends()[0]).await;
    // Over the 1 MiB of JSON routes, and over the permission document's 16 MiB.
    for (path, mib) in [("/admin/v1/users", 2), ("/admin/v1/clients", 2), ("/admin/v1/permissions", 17)] {
        let body = format!(r#"{{"login": "big", "note": "{}"}}"#, "x".repeat(mib * 1024 * 1024));
        let response = app
            .http()
            .post(app.url(path))
            .bearer_auth(ADMIN_TOKEN)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 413, "{path}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["code"], "too_large", "{path}: {body}");
    }
    let (status, users) = admin(&app, "GET", "/admin/v1/users?login=big", None).await;
    assert_eq!(status, 200);
    assert_eq!(users["users"], json!([]), "nothing stored: {users}");
}

/// Client addresses of any other scheme, with user information, or too
/// long are refused with every problem named; a back-channel address into
/// the bank's own network is refused outside the demo; nothing is stored.
#[tokio::test]
async fn hostile_client_addresses_are_refused_and_change_nothing() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| c.notifications.allow_insecure_callbacks = Some(false)).await;
        let long = format!("https://app.example/{}", "a".repeat(100_000));
        let hostile = json!({
            "clientId": "hostile",
            "redirectUris": ["javascript:alert(document.cookie)", "data:text/html,x", "https://u:pw@app.example/cb", long],
            "postLogoutRedirectUris": ["file:///etc/passwd"],
            "backchannelLogoutUri": "http://169.254.169.254/latest/meta-data"
        });
        let (status, body) = admin(&app, "POST", "/admin/v1/clients", Some(hostile)).await;
        assert_eq!((status, body["code"].as_str()), (400, Some("invalid_document")), "{backend:?}: {body:.300}");
        assert_eq!(
            problems(&body),
            [
                "redirectUris[0]",
                "redirectUris[1]",
                "redirectUris[2]",
                "redirectUris[3]",
                "postLogoutRedirectUris[0]",
                "backchannelLogoutUri"
            ],
            "{body:.500}"
        );
        assert!(body.to_string().len() < 4096, "the answer does not repeat the megabyte");
        assert_eq!(admin(&app, "GET", "/admin/v1/clients/hostile", None).await.0, 404, "nothing stored");

        let good = json!({"clientId": "native", "redirectUris": ["ru.bank.app:/cb", "http://127.0.0.1:7777/cb"]});
        assert_eq!(admin(&app, "POST", "/admin/v1/clients", Some(good)).await.0, 201);
        for change in [
            json!({"redirectUris": ["javascript:alert(1)"]}),
            json!({"backchannelLogoutUri": "gopher://app.example/"}),
            json!({"backchannelLogoutUri": "https://[::ffff:127.0.0.1]/logout"}),
        ] {
            let (status, body) = admin(&app, "PATCH", "/admin/v1/clients/native", Some(change.clone())).await;
            assert_eq!((status, body["code"].as_str()), (400, Some("invalid_document")), "{change}: {body}");
        }
        let (_, client) = admin(&app, "GET", "/admin/v1/clients/native", None).await;
        assert_eq!(client["redirectUris"], json!(["ru.bank.app:/cb", "http://127.0.0.1:7777/cb"]));
        assert_eq!(client["backchannelLogoutUri"], Value::Null);
    }
}

/// A login that is another user's under the comparison rules, holds an
/// invisible or control character, or mixes scripts is refused; so is a
/// rename to one. Nothing is stored.
#[tokio::test]
async fn look_alike_logins_are_refused() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let user = |login: &str| json!({"login": login, "password": "a-long-password-1"});
        for login in ["IVAN", "Ivan", "ｉｖａｎ"] {
            let (status, body) = admin(&app, "POST", "/admin/v1/users", Some(user(login))).await;
            assert_eq!((status, body["code"].as_str()), (409, Some("login_taken")), "{backend:?} {login}: {body}");
        }
        for login in ["ivan\u{200b}", "\u{43e}perator", "ivan\u{202e}", "iv an"] {
            let (status, body) = admin(&app, "POST", "/admin/v1/users", Some(user(login))).await;
            assert_eq!((status, problems(&body)), (400, vec!["login".to_owned()]), "{backend:?} {login:?}: {body}");
        }
        let (status, created) = admin(&app, "POST", "/admin/v1/users", Some(user("vera"))).await;
        assert_eq!(status, 201, "{created}");
        let id = created["id"].as_str().unwrap();
        let (status, body) =
            admin(&app, "PATCH", &format!("/admin/v1/users/{id}"), Some(json!({"login": "MARIA"}))).await;
        assert_eq!((status, body["code"].as_str()), (409, Some("login_taken")), "{backend:?}: {body}");
        let (_, found) = admin(&app, "GET", "/admin/v1/users?loginStartsWith=iv", None).await;
        let logins: Vec<&str> =
            found["users"].as_array().unwrap().iter().map(|u| u["login"].as_str().unwrap()).collect();
        assert_eq!(logins, ["ivan"], "{backend:?}: nothing stored");
    }
}

/// Every page of `path` at `limit` a page, following `next`: the ids of
/// each page (`field` of each entry of `list`).
/// The ids of every page of `path` (which may carry a query of its own),
/// `limit` a page, following `next` to the end.
pub(crate) async fn pages(app: &TestApp, path: &str, list: &str, field: &str, limit: u32) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut url = app.url(path);
        url.push_str(&format!("{}limit={limit}", if path.contains('?') { '&' } else { '?' }));
        if let Some(after) = &after {
            url.push_str(&format!("&after={}", form_urlencoded::byte_serialize(after.as_bytes()).collect::<String>()));
        }
        let response = app.http().get(url).bearer_auth(ADMIN_TOKEN).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let body: Value = response.json().await.unwrap();
        let ids: Vec<String> =
            body[list].as_array().unwrap().iter().map(|e| e[field].as_str().unwrap().to_owned()).collect();
        assert!(ids.len() <= limit as usize, "{path}: {body}");
        pages.push(ids);
        match body["next"].as_str() {
            Some(next) => {
                assert_eq!(Some(next), pages.last().unwrap().last().map(String::as_str), "{path}: next is the last id");
                after = Some(next.to_owned());
            }
            None => return pages,
        }
        assert!(pages.len() < 100, "{path}: the pages end");
    }
}

#[tokio::test]
async fn clients_merchants_and_agreements_are_listed_a_page_at_a_time_in_key_order() {
    use portico_reports::sample::{Shape, agreement};
    const NUMBERS: [&str; 7] = ["П-01", "П-02", "П-03", "П-04", "П-05", "П-06", "П-07"];
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        for n in 0..7 {
            let body = json!({"clientId": format!("paged-{n}"), "redirectUris": ["https://rp.example/cb"]});
            assert_eq!(admin(&app, "POST", "/admin/v1/clients", Some(body)).await.0, 201);
            let shop = json!({"merchantId": format!("shop-{n}"), "publicId": format!("pub-{n}"),
                              "sbpMerchantId": format!("MA000000000{n}")});
            assert_eq!(admin(&app, "POST", "/admin/v1/merchants", Some(shop)).await.0, 201);
        }
        let agreements: Vec<_> = NUMBERS.iter().map(|number| agreement(&Shape { number, ..Shape::demo() })).collect();
        app.store.save_agreements(&agreements, portico_model::clock::Clock::now(app.clock.as_ref())).await.unwrap();

        let [clients, merchants, numbers] = app.every_key().await;
        assert!(clients.len() >= 7 && merchants.len() >= 7 && numbers.len() >= 8, "{backend:?}: the demo's and ours");
        for (path, list, field, all) in [
            ("/admin/v1/clients", "clients", "clientId", &clients),
            ("/admin/v1/merchants", "merchants", "merchantId", &merchants),
            ("/admin/v1/brokerage/agreements", "agreements", "number", &numbers),
        ] {
            let read = pages(&app, path, list, field, 3).await;
            assert_eq!(read.len(), all.len().div_ceil(3), "{backend:?} {path}: {read:?}");
            assert_eq!(&read.concat(), all, "{backend:?} {path}: every entry once, in the store's order");
            let whole = pages(&app, path, list, field, 200).await;
            assert_eq!((whole.len(), &whole[0]), (1, all), "{backend:?} {path}");
            // Without a limit, a page of 50.
            let response = app.http().get(app.url(path)).bearer_auth(ADMIN_TOKEN).send().await.unwrap();
            let body: Value = response.json().await.unwrap();
            assert_eq!(body[list].as_array().unwrap().len(), all.len().min(50), "{backend:?} {path}");

            for (query, says) in [
                ("limit=0", "limit: 1 to 200"),
                ("limit=201", "limit: 1 to 200"),
                ("limit=x", "limit"),
                ("after=a&after=b", "after"),
                ("page=2", "page"),
            ] {
                let url = format!("{}?{query}", app.url(path));
                let response = app.http().get(url).bearer_auth(ADMIN_TOKEN).send().await.unwrap();
                let status = response.status().as_u16();
                let body: Value = response.json().await.unwrap();
                assert_eq!((status, body["code"].as_str()), (400, Some("bad_request")), "{backend:?} {path}?{query}");
                let message = body["message"].as_str().unwrap();
                assert!(message.contains(says), "{backend:?} {path}?{query}: {message}");
            }
        }
    }
}
