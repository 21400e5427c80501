//! Pushed authorization requests (RFC 9126) and signed request objects
//! (RFC 9101) on both backends: a pushed request is stored, taken once by
//! authorize for its own client only, carried through the login steps by
//! its `request_uri`, and expires; the pushed parameters are the only ones
//! used; a client (or the server) that requires pushed or signed requests
//! refuses the others; a request object by value or pushed is checked
//! against the client's keys and JAR's rules, and a bad one issues nothing.

use portico_crypto::jwt::{Algorithm, SigningKey};
use portico_model::clock::Clock as _;
use portico_tests::{Pkce, TestApp, backends, demo, location, location_param};
use serde_json::{Value, json};

const RP: &str = "https://rp.example/cb";

/// The parameters of a good authorization request of `client_id` to `RP`
/// (the demo client's own address for the demo client).
fn request_params(app: &TestApp, client_id: &str, pkce: &Pkce, state: &str) -> Vec<(String, String)> {
    let redirect_uri = if client_id == demo::CLIENT_ID { app.redirect_uri() } else { RP.to_owned() };
    [
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", redirect_uri.as_str()),
        ("scope", "openid profile"),
        ("state", state),
        ("nonce", "n-1"),
        ("code_challenge", pkce.challenge.as_str()),
        ("code_challenge_method", "S256"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect()
}

/// Pushes `params` as the demo client (its secret in a Basic header):
/// the status and the answer.
async fn push(app: &TestApp, params: &[(String, String)]) -> (u16, Value) {
    push_as(app, demo::CLIENT_ID, demo::CLIENT_SECRET, params).await
}

async fn push_as(app: &TestApp, client_id: &str, secret: &str, params: &[(String, String)]) -> (u16, Value) {
    let response =
        app.http().post(app.url("/oauth2/par")).basic_auth(client_id, Some(secret)).form(params).send().await.unwrap();
    let status = response.status().as_u16();
    if status == 201 {
        assert_eq!(response.headers()["cache-control"], "no-store");
    }
    (status, response.json().await.unwrap_or(Value::Null))
}

fn authorize_with(app: &TestApp, client_id: &str, extra: &[(&str, &str)]) -> String {
    let mut url = url::Url::parse(&app.url("/oauth2/authorize")).unwrap();
    url.query_pairs_mut().append_pair("client_id", client_id).extend_pairs(extra);
    url.into()
}

/// Registers a client through the admin API with `key`'s public half and
/// the fields of `extra`.
async fn key_client(app: &TestApp, client_id: &str, key: &SigningKey, extra: Value) {
    let mut body = json!({
        "clientId": client_id,
        "secret": "a-secret-of-the-key-client-0123456789",
        "redirectUris": [RP],
        "jwks": { "keys": [key.jwk()] },
    });
    body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let response = app.admin_create_client(&body).await;
    assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
}

/// The claims of a good request object of `client_id`.
fn object_claims(app: &TestApp, client_id: &str, pkce: &Pkce, state: &str) -> Value {
    let now = app.clock.now().unix_timestamp();
    let mut claims = json!({ "iss": client_id, "aud": app.base, "nbf": now, "iat": now, "exp": now + 300 });
    for (name, value) in request_params(app, client_id, pkce, state) {
        claims[name] = value.into();
    }
    claims
}

#[tokio::test]
async fn a_pushed_request_is_taken_once_and_carried_through_the_login() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let pkce = Pkce::new();
        let (status, pushed) = push(&app, &request_params(&app, demo::CLIENT_ID, &pkce, "st-pushed")).await;
        assert_eq!(status, 201, "{backend:?}: {pushed}");
        assert_eq!(pushed["expires_in"], 60);
        let request_uri = pushed["request_uri"].as_str().unwrap().to_owned();
        assert!(request_uri.starts_with("urn:ietf:params:oauth:request_uri:"), "{request_uri}");

        // Parameters beside the request_uri are not read: the pushed state
        // comes back, not this one.
        let browser = app.browser();
        let url = authorize_with(&app, demo::CLIENT_ID, &[("request_uri", &request_uri), ("state", "forged")]);
        let done = app.login_at(&browser, &url, "ivan", "ivan-password").await;
        let target = location(&done);
        assert!(target.starts_with(&app.redirect_uri()), "{backend:?}: {target}");
        assert_eq!(location_param(&done, "state").as_deref(), Some("st-pushed"));
        let code = location_param(&done, "code").unwrap();
        let tokens = app.exchange(&code, &pkce.verifier).await;
        assert_eq!(tokens.status(), 200, "{backend:?}: the code of a pushed request is exchanged");

        // Used once: another browser presenting it gets the 400 page.
        let again = app.http().get(&url).send().await.unwrap();
        assert_eq!(again.status(), 400, "{backend:?}");
        let text = again.text().await.unwrap();
        assert!(text.starts_with("OAuth 2.0 Parameter: request_uri"), "{text}");
    }
}

/// The write that starts serving a pushed request takes it: when that
/// write fails (here its table is renamed away; in production the
/// database unreachable or the node stopped on the way), the request is
/// still there for the browser's retry, as RFC 9126 allows for a reload.
/// Taken before the write, the retry would meet a used `request_uri`.
/// The same for a code a single sign-on session answers with at once; and
/// an error answered to the client (`prompt=none`) uses it up too.
#[tokio::test]
async fn a_pushed_request_whose_login_or_code_cannot_be_stored_is_left_for_the_retry() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let pkce = Pkce::new();
        let (_, pushed) = push(&app, &request_params(&app, demo::CLIENT_ID, &pkce, "st-login")).await;
        let url = authorize_with(&app, demo::CLIENT_ID, &[("request_uri", pushed["request_uri"].as_str().unwrap())]);
        let browser = app.browser();

        app.run_sql("ALTER TABLE login_processes RENAME TO login_processes_away").await;
        let failed = browser.get(&url).send().await.unwrap();
        assert!(failed.status().is_server_error(), "{backend:?}: no login without its process: {}", failed.status());
        app.run_sql("ALTER TABLE login_processes_away RENAME TO login_processes").await;

        let done = app.login_at(&browser, &url, "ivan", "ivan-password").await;
        assert!(
            location(&done).starts_with(&app.redirect_uri()),
            "{backend:?}: the retry logs in: {}",
            location(&done)
        );
        assert_eq!(location_param(&done, "state").as_deref(), Some("st-login"));
        let code = location_param(&done, "code").unwrap();
        assert_eq!(app.exchange(&code, &pkce.verifier).await.status(), 200, "{backend:?}");
        assert_eq!(app.http().get(&url).send().await.unwrap().status(), 400, "{backend:?}: then used");

        // The browser now has a single sign-on session: a pushed request
        // gets its code at once, in the write that takes the request.
        let pkce = Pkce::new();
        let (_, pushed) = push(&app, &request_params(&app, demo::CLIENT_ID, &pkce, "st-code")).await;
        let url = authorize_with(&app, demo::CLIENT_ID, &[("request_uri", pushed["request_uri"].as_str().unwrap())]);
        app.run_sql("ALTER TABLE authorization_codes RENAME TO authorization_codes_away").await;
        let failed = browser.get(&url).send().await.unwrap();
        assert!(failed.status().is_server_error(), "{backend:?}: no code without its row: {}", failed.status());
        app.run_sql("ALTER TABLE authorization_codes_away RENAME TO authorization_codes").await;
        let retried = browser.get(&url).send().await.unwrap();
        assert_eq!(retried.status(), 302, "{backend:?}: the retry gets the code");
        assert_eq!(location_param(&retried, "state").as_deref(), Some("st-code"));
        let code = location_param(&retried, "code").unwrap();
        assert_eq!(app.exchange(&code, &pkce.verifier).await.status(), 200, "{backend:?}");
        assert_eq!(browser.get(&url).send().await.unwrap().status(), 400, "{backend:?}: then used");

        // An error answered to the client uses the request up as well.
        let mut params = request_params(&app, demo::CLIENT_ID, &Pkce::new(), "st-none");
        params.push(("prompt".into(), "none".into()));
        let (_, pushed) = push(&app, &params).await;
        let url = authorize_with(&app, demo::CLIENT_ID, &[("request_uri", pushed["request_uri"].as_str().unwrap())]);
        let refused = app.browser().get(&url).send().await.unwrap();
        assert_eq!(location_param(&refused, "error").as_deref(), Some("login_required"), "{backend:?}");
        assert_eq!(app.browser().get(&url).send().await.unwrap().status(), 400, "{backend:?}: used by the error");
    }
}

#[tokio::test]
async fn a_pushed_request_serves_only_its_client_and_expires() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        app.add_client("other-app", "other-app-secret-0123456789").await;
        let pkce = Pkce::new();
        let (_, pushed) = push(&app, &request_params(&app, demo::CLIENT_ID, &pkce, "st-1")).await;
        let request_uri = pushed["request_uri"].as_str().unwrap();

        // Another client naming it is refused, and does not spend it.
        let foreign = app.http().get(authorize_with(&app, "other-app", &[("request_uri", request_uri)])).send().await;
        assert_eq!(foreign.unwrap().status(), 400, "{backend:?}");
        let own = app.browser().get(authorize_with(&app, demo::CLIENT_ID, &[("request_uri", request_uri)])).send();
        assert_eq!(own.await.unwrap().status(), 303, "{backend:?}: still there for its own client");

        // A minute later it is gone.
        let (_, pushed) = push(&app, &request_params(&app, demo::CLIENT_ID, &pkce, "st-2")).await;
        let request_uri = pushed["request_uri"].as_str().unwrap();
        app.clock.advance(time::Duration::seconds(61));
        let late = app.http().get(authorize_with(&app, demo::CLIENT_ID, &[("request_uri", request_uri)])).send();
        assert_eq!(late.await.unwrap().status(), 400, "{backend:?}: expired");
        let cleaned = app.store.delete_expired(app.clock.now(), time::Duration::minutes(15), app.clock.now()).await;
        assert_eq!(cleaned.unwrap().pushed_requests, 1, "{backend:?}: the unused one is cleaned up");
    }
}

#[tokio::test]
async fn thirty_browsers_presenting_one_request_uri_start_one_login() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let pkce = Pkce::new();
        let (_, pushed) = push(&app, &request_params(&app, demo::CLIENT_ID, &pkce, "st-1")).await;
        let url = authorize_with(&app, demo::CLIENT_ID, &[("request_uri", pushed["request_uri"].as_str().unwrap())]);
        let mut attempts = tokio::task::JoinSet::new();
        for _ in 0..30 {
            let request = app.browser().get(&url);
            attempts.spawn(async move { request.send().await.unwrap().status().as_u16() });
        }
        let statuses = attempts.join_all().await;
        assert_eq!(statuses.iter().filter(|s| **s == 303).count(), 1, "{backend:?}: {statuses:?}");
        assert_eq!(statuses.iter().filter(|s| **s == 400).count(), 29, "{backend:?}: {statuses:?}");
    }
}

#[tokio::test]
async fn bad_pushed_requests_get_the_rfc_errors_and_store_nothing() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let pkce = Pkce::new();
        let good = request_params(&app, demo::CLIENT_ID, &pkce, "st-1");
        let with = |name: &str, value: Option<&str>| {
            let mut params: Vec<_> = good.iter().filter(|(k, _)| k != name).cloned().collect();
            if let Some(value) = value {
                params.push((name.to_owned(), value.to_owned()));
            }
            params
        };
        let cases = [
            (with("redirect_uri", Some("https://evil.example/cb")), "invalid_request", "redirect_uri"),
            (with("code_challenge", None), "invalid_request", "code_challenge"),
            (with("scope", Some("openid admin")), "invalid_scope", "scope"),
            (with("response_type", Some("token")), "unsupported_response_type", "response_type"),
            (with("request_uri", Some("urn:ietf:params:oauth:request_uri:x")), "invalid_request", "request_uri"),
            (with("request", Some("not.a.jwt")), "invalid_request_object", ""),
            (with("registration", Some("{}")), "registration_not_supported", "registration"),
        ];
        for (params, error, parameter) in cases {
            let (status, body) = push(&app, &params).await;
            assert_eq!((status, body["error"].as_str()), (400, Some(error)), "{backend:?} {parameter}: {body}");
            let description = body["error_description"].as_str().unwrap();
            assert!(description.contains(parameter), "{backend:?}: {description}");
        }
        // A wrong secret, or a client_id that is not the authenticated client's: invalid_client.
        let (status, body) = push_as(&app, demo::CLIENT_ID, "wrong-secret", &good).await;
        assert_eq!((status, body["error"].as_str()), (401, Some("invalid_client")));
        let (status, body) = push(&app, &with("client_id", Some("other-app"))).await;
        assert_eq!((status, body["error"].as_str()), (401, Some("invalid_client")), "{body}");
        let later = app.clock.now() + time::Duration::hours(1);
        let cleaned = app.store.delete_expired(later, time::Duration::minutes(15), app.clock.now()).await;
        assert_eq!(cleaned.unwrap().pushed_requests, 0, "{backend:?}: nothing was stored");
    }
}

#[tokio::test]
async fn clients_and_servers_that_require_pushed_requests_refuse_the_others() {
    for backend in backends() {
        for server_wide in [false, true] {
            let app = TestApp::spawn_with(backend, |c| c.par.required = server_wide).await;
            let key = SigningKey::generate(Algorithm::Es256).unwrap();
            key_client(&app, "fintech", &key, json!({ "requirePushedAuthorizationRequests": !server_wide })).await;
            let pkce = Pkce::new();
            let mut plain = url::Url::parse(&app.url("/oauth2/authorize")).unwrap();
            plain.query_pairs_mut().extend_pairs(request_params(&app, "fintech", &pkce, "st-1"));
            let refused = app.http().get(plain.as_str()).send().await.unwrap();
            assert_eq!(refused.status(), 302, "{backend:?} {server_wide}");
            assert_eq!(location_param(&refused, "error").as_deref(), Some("invalid_request"));
            let description = location_param(&refused, "error_description").unwrap();
            assert!(description.contains("request_uri") && description.contains("pushed"), "{description}");

            // A signed request object by value is not pushed either.
            let object = key.sign("oauth-authz-req+jwt", &object_claims(&app, "fintech", &pkce, "st-1"));
            let by_value = app.http().get(authorize_with(&app, "fintech", &[("request", &object)])).send().await;
            assert_eq!(location_param(&by_value.unwrap(), "error").as_deref(), Some("invalid_request"));

            let params = request_params(&app, "fintech", &pkce, "st-1");
            let (status, pushed) = push_as(&app, "fintech", "a-secret-of-the-key-client-0123456789", &params).await;
            assert_eq!(status, 201, "{backend:?}: {pushed}");
            let url = authorize_with(&app, "fintech", &[("request_uri", pushed["request_uri"].as_str().unwrap())]);
            let done = app.login_at(&app.browser(), &url, "ivan", "ivan-password").await;
            assert!(location(&done).starts_with(RP), "{backend:?}: {}", location(&done));
            assert_eq!(location_param(&done, "state").as_deref(), Some("st-1"));
        }
    }
}

#[tokio::test]
async fn signed_request_objects_by_value_and_pushed() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        key_client(&app, "fintech", &key, json!({ "requireSignedRequestObject": true })).await;
        let pkce = Pkce::new();

        // By value at authorize: the login's way back names it by a
        // request_uri of its own, and the object's state comes back.
        let object = key.sign("oauth-authz-req+jwt", &object_claims(&app, "fintech", &pkce, "st-object"));
        let url = authorize_with(&app, "fintech", &[("request", &object), ("state", "forged")]);
        let done = app.login_at(&app.browser(), &url, "ivan", "ivan-password").await;
        assert!(location(&done).starts_with(RP), "{backend:?}: {}", location(&done));
        assert_eq!(location_param(&done, "state").as_deref(), Some("st-object"));

        // Pushed.
        let object = key.sign("oauth-authz-req+jwt", &object_claims(&app, "fintech", &pkce, "st-pushed"));
        let params = [("client_id".to_owned(), "fintech".to_owned()), ("request".to_owned(), object)];
        let (status, pushed) = push_as(&app, "fintech", "a-secret-of-the-key-client-0123456789", &params).await;
        assert_eq!(status, 201, "{backend:?}: {pushed}");
        let url = authorize_with(&app, "fintech", &[("request_uri", pushed["request_uri"].as_str().unwrap())]);
        let done = app.login_at(&app.browser(), &url, "ivan", "ivan-password").await;
        assert_eq!(location_param(&done, "state").as_deref(), Some("st-pushed"), "{backend:?}");

        // Unsigned parameters are refused for this client, pushed or not.
        let unsigned = request_params(&app, "fintech", &pkce, "st-1");
        let (status, body) = push_as(&app, "fintech", "a-secret-of-the-key-client-0123456789", &unsigned).await;
        assert_eq!((status, body["error"].as_str()), (400, Some("invalid_request")), "{backend:?}: {body}");
        assert!(body["error_description"].as_str().unwrap().contains("signed request object"));
    }
}

#[tokio::test]
async fn bad_request_objects_are_refused_and_issue_nothing() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        let stranger = SigningKey::generate(Algorithm::Es256).unwrap();
        key_client(&app, "fintech", &key, json!({ "requestObjectSigningAlg": "ES256" })).await;
        let rsa = SigningKey::generate(Algorithm::Ps256).unwrap();
        key_client(&app, "fintech-ps", &rsa, json!({ "requestObjectSigningAlg": "ES256" })).await;
        let pkce = Pkce::new();
        let good = object_claims(&app, "fintech", &pkce, "st-1");
        let now = app.clock.now().unix_timestamp();
        let changed = |name: &str, value: Value| {
            let mut claims = good.clone();
            if value.is_null() {
                claims.as_object_mut().unwrap().remove(name);
            } else {
                claims[name] = value;
            }
            claims
        };
        let unsigned = {
            let part = |v: &Value| portico_crypto::b64url(serde_json::to_vec(v).unwrap());
            format!("{}.{}.", part(&json!({"alg": "none"})), part(&good))
        };
        let hs256 = jsonwebtoken::encode(
            &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
            &good,
            &jsonwebtoken::EncodingKey::from_secret(b"a-secret-of-the-key-client-0123456789"),
        )
        .unwrap();
        let cases: Vec<(&str, String, String)> = vec![
            ("unsigned", "fintech".into(), unsigned),
            ("HS256", "fintech".into(), hs256),
            ("another key", "fintech".into(), stranger.sign("oauth-authz-req+jwt", &good)),
            ("expired", "fintech".into(), key.sign("JWT", &changed("exp", json!(now - 60)))),
            ("no exp", "fintech".into(), key.sign("JWT", &changed("exp", Value::Null))),
            ("valid over an hour", "fintech".into(), key.sign("JWT", &changed("exp", json!(now + 3700)))),
            ("another audience", "fintech".into(), key.sign("JWT", &changed("aud", json!("https://other.example")))),
            ("another issuer", "fintech".into(), key.sign("JWT", &changed("iss", json!("other-app")))),
            ("another client_id", "fintech".into(), key.sign("JWT", &changed("client_id", json!("other-app")))),
            ("nested request_uri", "fintech".into(), key.sign("JWT", &changed("request_uri", json!("urn:x")))),
            ("a foreign typ", "fintech".into(), key.sign("at+jwt", &good)),
            ("not the registered alg", "fintech-ps".into(), rsa.sign("JWT", &changed("iss", json!("fintech-ps")))),
        ];
        for (case, client_id, object) in cases {
            let response = app.http().get(authorize_with(&app, &client_id, &[("request", &object)])).send().await;
            let response = response.unwrap();
            assert_eq!(response.status(), 400, "{backend:?} {case}");
            let text = response.text().await.unwrap();
            assert!(text.starts_with("OAuth 2.0 Parameter: request: "), "{backend:?} {case}: {text}");

            let params = [("request".to_owned(), object.clone())];
            let (status, body) = push_as(&app, &client_id, "a-secret-of-the-key-client-0123456789", &params).await;
            assert_eq!((status, body["error"].as_str()), (400, Some("invalid_request_object")), "{case}: {body}");
        }
    }
}

#[tokio::test]
async fn discovery_names_the_pushed_request_endpoint_and_request_objects() {
    for required in [false, true] {
        let app = TestApp::spawn_with(backends()[0], |c| c.par.required = required).await;
        let document: Value = app.discovery().await;
        assert_eq!(document["pushed_authorization_request_endpoint"], app.url("/oauth2/par"));
        assert_eq!(document["require_pushed_authorization_requests"], required);
        assert_eq!(document["request_parameter_supported"], true);
        assert_eq!(document["request_uri_parameter_supported"], false);
        let algs = document["request_object_signing_alg_values_supported"].as_array().unwrap();
        assert!(algs.contains(&json!("ES256")) && !algs.contains(&json!("none")) && !algs.contains(&json!("HS256")));
    }
}

#[tokio::test]
async fn registration_sets_the_request_rules() {
    const INITIAL: &str = "an-initial-access-token-for-pushed-requests";
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| c.registration.initial_access_token = Some(INITIAL.into())).await;
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        let metadata = json!({
            "redirect_uris": [RP],
            "token_endpoint_auth_method": "private_key_jwt",
            "jwks": { "keys": [key.jwk()] },
            "require_pushed_authorization_requests": true,
            "require_signed_request_object": true,
            "request_object_signing_alg": "ES256",
            "dpop_bound_access_tokens": true,
        });
        let (status, registered) = app.register(Some(INITIAL), &metadata).await;
        assert_eq!(status, 201, "{backend:?}: {registered}");
        assert_eq!(registered["require_pushed_authorization_requests"], true);
        assert_eq!(registered["require_signed_request_object"], true);
        assert_eq!(registered["request_object_signing_alg"], "ES256");
        assert_eq!(registered["dpop_bound_access_tokens"], true);
        let client = app.store.find_client(&registered["client_id"].as_str().unwrap().into()).await.unwrap().unwrap();
        let security = &client.security;
        assert!(security.require_pushed_authorization_requests && security.require_signed_request_object);
        assert!(security.dpop_bound_access_tokens);

        let bad = json!({ "redirect_uris": [RP], "request_object_signing_alg": "none" });
        let (status, body) = app.register(Some(INITIAL), &bad).await;
        assert_eq!((status, body["error"].as_str()), (400, Some("invalid_client_metadata")), "{body}");
        let keyless = json!({ "redirect_uris": [RP], "require_signed_request_object": true });
        let (status, body) = app.register(Some(INITIAL), &keyless).await;
        assert_eq!((status, body["error"].as_str()), (400, Some("invalid_client_metadata")), "{body}");
    }
}
