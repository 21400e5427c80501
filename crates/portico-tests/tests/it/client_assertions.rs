//! Client authentication by assertion (`private_key_jwt`, RFC 7523;
//! `client_secret_jwt`, OIDC Core §9) at the token, revocation and
//! introspection endpoints, on both backends: a good assertion is taken
//! once; replayed, expired, long-lived, unsigned, foreign-audience,
//! wrongly-signed and otherwise bad ones are `invalid_client`, and the
//! refresh token a refused request presented still works. A replay is
//! refused on a second node sharing the PostgreSQL database.

use jsonwebtoken::{EncodingKey, Header};
use portico_crypto::jwt::{Algorithm, SigningKey};
use portico_tests::{Backend, TestApp, backends};
use serde_json::{Value, json};

/// The claims of a good assertion from `client_id` to `app`, expiring in
/// `lifetime` seconds.
fn claims(app: &TestApp, client_id: &str, lifetime: i64) -> Value {
    use portico_model::clock::Clock as _;
    let now = app.clock.now().unix_timestamp();
    json!({
        "iss": client_id, "sub": client_id, "aud": app.base, "iat": now, "exp": now + lifetime,
        "jti": uuid::Uuid::new_v4().to_string(),
    })
}

/// Registers a `private_key_jwt` client holding `key`'s public half.
async fn key_client(app: &TestApp, client_id: &str, key: &SigningKey) {
    let body = json!({
        "clientId": client_id,
        "redirectUris": ["https://rp.example/cb"],
        "tokenEndpointAuthMethod": "private_key_jwt",
        "jwks": { "keys": [key.jwk()] },
    });
    let response = app.admin_create_client(&body).await;
    assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
}

/// A refresh at `app` authenticated by `assertion`: the status and body.
async fn refresh_with(app: &TestApp, refresh_token: &str, assertion: &str) -> (u16, Value) {
    let response = app.refresh_by_assertion(refresh_token, assertion).await;
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

fn unsigned(claims: &Value) -> String {
    let part = |v: &Value| portico_crypto::b64url(serde_json::to_vec(v).unwrap());
    format!("{}.{}.", part(&json!({"alg": "none", "typ": "JWT"})), part(claims))
}

#[tokio::test]
async fn private_key_jwt_assertions_are_checked_and_taken_once() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        key_client(&app, "fintech", &key).await;
        let pair = app.token_pair_for("ivan", "fintech").await;

        let good = key.sign("JWT", &claims(&app, "fintech", 60));
        let (status, body) = refresh_with(&app, &pair.refresh_token, &good).await;
        assert_eq!(status, 200, "{backend:?}: {body}");
        let refresh = body["refresh_token"].as_str().unwrap().to_owned();

        let other = SigningKey::generate(Algorithm::Es256).unwrap();
        let other_der = other.to_pkcs8().unwrap();
        let forged_kid = jsonwebtoken::encode(
            &Header { kid: Some(key.kid().to_owned()), ..Header::new(jsonwebtoken::Algorithm::ES256) },
            &claims(&app, "fintech", 60),
            &EncodingKey::from_ec_der(&other_der),
        )
        .unwrap();
        let hs256 = jsonwebtoken::encode(
            &Header::new(jsonwebtoken::Algorithm::HS256),
            &claims(&app, "fintech", 60),
            &EncodingKey::from_secret(b"a secret the client never had, 32+ bytes long"),
        )
        .unwrap();
        let with = |change: &dyn Fn(&mut Value)| {
            let mut claims = claims(&app, "fintech", 60);
            change(&mut claims);
            key.sign("JWT", &claims)
        };
        let refused = [
            ("replayed", good.clone()),
            ("expired", with(&|c| c["exp"] = json!(c["iat"].as_i64().unwrap() - 120))),
            ("valid for an hour", with(&|c| c["exp"] = json!(c["iat"].as_i64().unwrap() + 3600))),
            ("without exp", with(&|c| drop(c.as_object_mut().unwrap().remove("exp")))),
            ("without jti", with(&|c| drop(c.as_object_mut().unwrap().remove("jti")))),
            ("for another audience", with(&|c| c["aud"] = json!("https://other-bank.example"))),
            ("with sub not the client", with(&|c| c["sub"] = json!("someone-else"))),
            ("issued in the future", with(&|c| c["iat"] = json!(c["iat"].as_i64().unwrap() + 600))),
            ("unsigned (alg none)", unsigned(&claims(&app, "fintech", 60))),
            ("signed by another key under the client's kid", forged_kid),
            ("signed by an unknown key", other.sign("JWT", &claims(&app, "fintech", 60))),
            ("symmetric (HS256)", hs256),
            ("not a JWT", "garbage".to_owned()),
        ];
        for (case, assertion) in refused {
            let (status, body) = refresh_with(&app, &refresh, &assertion).await;
            assert_eq!((status, body["error"].as_str()), (401, Some("invalid_client")), "{backend:?} {case}: {body}");
        }
        // The client's secret methods are not its method.
        let basic = app
            .http()
            .post(app.url("/oauth2/token"))
            .basic_auth("fintech", Some("anything-at-all-16"))
            .form(&[("grant_type", "refresh_token"), ("refresh_token", refresh.as_str())])
            .send()
            .await
            .unwrap();
        assert_eq!(basic.status(), 401, "{backend:?}");
        // Two methods at once are a bad request.
        let both = app
            .http()
            .post(app.url("/oauth2/token"))
            .basic_auth("fintech", Some("anything-at-all-16"))
            .form(&[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh.as_str()),
                ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"),
                ("client_assertion", key.sign("JWT", &claims(&app, "fintech", 60)).as_str()),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(both.status(), 400, "{backend:?}");
        // Nothing refused spent the refresh token.
        let (status, body) = refresh_with(&app, &refresh, &key.sign("JWT", &claims(&app, "fintech", 60))).await;
        assert_eq!(status, 200, "{backend:?}: the refresh token survives every refusal: {body}");
    }
}

#[tokio::test]
async fn assertions_authenticate_at_revocation_and_introspection_with_each_key_type() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        for alg in [Algorithm::Ps256, Algorithm::Es256, Algorithm::EdDsa, Algorithm::Rs256] {
            let key = SigningKey::generate(alg).unwrap();
            let client_id = format!("rp-{alg}");
            key_client(&app, &client_id, &key).await;
            let pair = app.token_pair_for("ivan", &client_id).await;
            let form = |path: &str, token: &str| {
                let mut claims = claims(&app, &client_id, 60);
                claims["aud"] = json!(app.url(path));
                vec![
                    ("token".to_owned(), token.to_owned()),
                    (
                        "client_assertion_type".to_owned(),
                        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned(),
                    ),
                    ("client_assertion".to_owned(), key.sign("JWT", &claims)),
                ]
            };
            let introspected: Value = app
                .http()
                .post(app.url("/oauth2/introspect"))
                .form(&form("/oauth2/introspect", &pair.access_token))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(introspected["active"], true, "{backend:?} {alg}: {introspected}");
            assert_eq!(introspected["client_id"], client_id.as_str(), "{backend:?} {alg}");
            let revoked =
                app.http().post(app.url("/oauth2/revoke")).form(&form("/oauth2/revoke", &pair.refresh_token)).send();
            assert_eq!(revoked.await.unwrap().status(), 200, "{backend:?} {alg}");
            let (status, _) =
                refresh_with(&app, &pair.refresh_token, &key.sign("JWT", &claims(&app, &client_id, 60))).await;
            assert_eq!(status, 400, "{backend:?} {alg}: the revoked refresh token is invalid_grant");
        }
    }
}

#[tokio::test]
async fn a_key_set_replaced_by_value_counts_from_the_next_request() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (old, new) =
            (SigningKey::generate(Algorithm::Es256).unwrap(), SigningKey::generate(Algorithm::Es256).unwrap());
        key_client(&app, "rp-rotating", &old).await;
        let pair = app.token_pair_for("ivan", "rp-rotating").await;
        let (status, tokens) =
            refresh_with(&app, &pair.refresh_token, &old.sign("JWT", &claims(&app, "rp-rotating", 60))).await;
        assert_eq!(status, 200, "{backend:?}: {tokens}");
        // The client's set is cached now; the operator replaces its key.
        let patched = app
            .http()
            .patch(app.url("/admin/v1/clients/rp-rotating"))
            .bearer_auth(portico_tests::ADMIN_TOKEN)
            .json(&json!({ "jwks": { "keys": [new.jwk()] } }))
            .send()
            .await
            .unwrap();
        assert_eq!(patched.status(), 200, "{backend:?}: {}", patched.text().await.unwrap());
        let refresh_token = tokens["refresh_token"].as_str().unwrap();
        let (status, refused) =
            refresh_with(&app, refresh_token, &old.sign("JWT", &claims(&app, "rp-rotating", 60))).await;
        assert_eq!((status, refused["error"].as_str()), (401, Some("invalid_client")), "{backend:?}: the old key");
        let (status, tokens) =
            refresh_with(&app, refresh_token, &new.sign("JWT", &claims(&app, "rp-rotating", 60))).await;
        assert_eq!(status, 200, "{backend:?}: the new key, and the refused request spent nothing: {tokens}");
    }
}

#[tokio::test]
async fn client_secret_jwt_takes_hs256_under_the_clients_secret_only() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let body = json!({
            "clientId": "partner",
            "redirectUris": ["https://rp.example/cb"],
            "tokenEndpointAuthMethod": "client_secret_jwt",
        });
        let created: Value = app.admin_create_client(&body).await.json().await.unwrap();
        let secret = created["clientSecret"].as_str().expect("a generated secret").to_owned();
        assert!(secret.len() >= 43, "256 bits at least");
        let pair = app.token_pair_for("ivan", "partner").await;
        let sign = |secret: &[u8]| {
            jsonwebtoken::encode(
                &Header::new(jsonwebtoken::Algorithm::HS256),
                &claims(&app, "partner", 60),
                &EncodingKey::from_secret(secret),
            )
            .unwrap()
        };
        let (status, body) = refresh_with(&app, &pair.refresh_token, &sign(b"not the secret, but as long as it")).await;
        assert_eq!((status, body["error"].as_str()), (401, Some("invalid_client")), "{backend:?}: {body}");
        let plain = app
            .http()
            .post(app.url("/oauth2/token"))
            .basic_auth("partner", Some(&secret))
            .form(&[("grant_type", "refresh_token"), ("refresh_token", pair.refresh_token.as_str())])
            .send()
            .await
            .unwrap();
        assert_eq!(plain.status(), 401, "{backend:?}: the secret itself is not sent under client_secret_jwt");
        let (status, body) = refresh_with(&app, &pair.refresh_token, &sign(secret.as_bytes())).await;
        assert_eq!(status, 200, "{backend:?}: {body}");
        let stored = app.store.find_client(&"partner".into()).await.unwrap().unwrap();
        let sealed = stored.secret_sealed.expect("the secret kept sealed");
        assert!(!sealed.contains(&secret), "{backend:?}: sealed, not in the clear");
    }
}

#[tokio::test]
async fn bad_client_keys_are_refused_at_registration_and_nothing_is_stored() {
    for backend in backends() {
        // As in production: addresses Portico fetches must be public https.
        let app = TestApp::spawn_with(backend, |c| c.notifications.allow_insecure_callbacks = Some(false)).await;
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        let mut private = serde_json::to_value(key.jwk()).unwrap();
        private["d"] = json!("c2VjcmV0");
        let mut p384 = serde_json::to_value(key.jwk()).unwrap();
        p384["crv"] = json!("P-384");
        let big = json!({"kty": "RSA", "kid": "big", "n": portico_crypto::b64url(vec![0xc5u8; 2048]), "e": "AQAB"});
        let small = json!({"kty": "RSA", "kid": "small", "n": portico_crypto::b64url(vec![0xc5u8; 128]), "e": "AQAB"});
        let oct = json!({"kty": "oct", "kid": "sym", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQ"});
        let cases = [
            ("a private member", json!({"jwks": {"keys": [private]}}), "jwks"),
            ("an unknown curve", json!({"jwks": {"keys": [p384]}}), "jwks"),
            ("a 16,384-bit RSA key", json!({"jwks": {"keys": [big]}}), "jwks"),
            ("a 1,024-bit RSA key", json!({"jwks": {"keys": [small]}}), "jwks"),
            ("a symmetric key", json!({"jwks": {"keys": [oct]}}), "jwks"),
            ("no keys", json!({"jwks": {"keys": []}}), "jwks"),
            ("not a key set", json!({"jwks": [1, 2]}), "jwks"),
            ("no keys at all", json!({}), "tokenEndpointAuthMethod"),
            ("a private jwks_uri", json!({"jwksUri": "https://169.254.169.254/keys"}), "jwksUri"),
            ("a plain-http jwks_uri", json!({"jwksUri": "http://rp.example/keys"}), "jwksUri"),
            (
                "both jwks and jwks_uri",
                json!({"jwks": {"keys": [key.jwk()]}, "jwksUri": "https://rp.example/k"}),
                "jwks",
            ),
            (
                "HS256 as the assertion algorithm of private_key_jwt",
                json!({"jwks": {"keys": [key.jwk()]}, "tokenEndpointAuthSigningAlg": "HS256"}),
                "tokenEndpointAuthSigningAlg",
            ),
            (
                "an assertion algorithm for a method without assertions",
                json!({"tokenEndpointAuthMethod": "client_secret_basic", "tokenEndpointAuthSigningAlg": "ES256"}),
                "tokenEndpointAuthSigningAlg",
            ),
            (
                "an algorithm without a server key",
                json!({"jwks": {"keys": [key.jwk()]}, "idTokenSignedResponseAlg": "ES256"}),
                "idTokenSignedResponseAlg",
            ),
        ];
        for (case, extra, field) in cases {
            let mut body = json!({
                "clientId": "bad-keys",
                "redirectUris": ["https://rp.example/cb"],
                "tokenEndpointAuthMethod": "private_key_jwt",
            });
            body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            let response = app.admin_create_client(&body).await;
            assert_eq!(response.status(), 400, "{backend:?} {case}");
            let problem: Value = response.json().await.unwrap();
            let fields: Vec<&str> =
                problem["problems"].as_array().unwrap().iter().filter_map(|p| p["place"].as_str()).collect();
            assert!(fields.contains(&field), "{backend:?} {case}: {problem}");
            assert!(app.store.find_client(&"bad-keys".into()).await.unwrap().is_none(), "{backend:?} {case}");
        }
        let response = app
            .admin_create_client(&json!({
                "clientId": "bad-keys", "redirectUris": ["https://rp.example/cb"],
                "tokenEndpointAuthMethod": "private_key_jwt", "idTokenSignedResponseAlg": "HS256",
                "jwks": {"keys": [key.jwk()]},
            }))
            .await;
        assert_eq!(response.status(), 400, "{backend:?}: HS256 is no signing algorithm of Portico's");
    }
}

#[tokio::test]
async fn a_replayed_assertion_is_refused_on_a_second_node() {
    let Some((a, b)) = TestApp::two_nodes("the second-node replay test").await else { return };
    let key = SigningKey::generate(Algorithm::Es256).unwrap();
    key_client(&a, "fintech", &key).await;
    let first = a.token_pair_for("ivan", "fintech").await;
    let second = a.token_pair_for("maria", "fintech").await;
    let assertion = key.sign("JWT", &claims(&a, "fintech", 60));
    let (status, body) = refresh_with(&a, &first.refresh_token, &assertion).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = refresh_with(&b, &second.refresh_token, &assertion).await;
    assert_eq!((status, body["error"].as_str()), (401, Some("invalid_client")), "the other node: {body}");
    let fresh = key.sign("JWT", &claims(&a, "fintech", 60));
    let (status, body) = refresh_with(&b, &second.refresh_token, &fresh).await;
    assert_eq!(status, 200, "the refresh token the replay presented still works: {body}");
}

/// A client's key server on loopback: answers `GET /jwks` with whatever
/// `answer` holds, counting the requests.
struct KeyServer {
    url: String,
    answer: std::sync::Arc<std::sync::Mutex<(u16, String, u64)>>,
    fetches: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl KeyServer {
    async fn start() -> Self {
        use std::sync::atomic::Ordering;
        let answer = std::sync::Arc::new(std::sync::Mutex::new((200u16, String::new(), 0u64)));
        let fetches = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (a, f) = (answer.clone(), fetches.clone());
        let app = axum::Router::new().route(
            "/jwks",
            axum::routing::get(move || {
                let (a, f) = (a.clone(), f.clone());
                async move {
                    f.fetch_add(1, Ordering::SeqCst);
                    let (status, body, delay) = a.lock().unwrap().clone();
                    tokio::time::sleep(std::time::Duration::from_secs(delay)).await;
                    (axum::http::StatusCode::from_u16(status).unwrap(), body)
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { url, answer, fetches }
    }

    fn answer(&self, status: u16, body: String, delay_secs: u64) {
        *self.answer.lock().unwrap() = (status, body, delay_secs);
    }

    fn fetches(&self) -> usize {
        self.fetches.load(std::sync::atomic::Ordering::SeqCst)
    }
}

fn key_set(keys: &[&SigningKey]) -> String {
    json!({ "keys": keys.iter().map(|k| k.jwk()).collect::<Vec<_>>() }).to_string()
}

async fn uri_client(app: &TestApp, client_id: &str, uri: &str) {
    let body = json!({
        "clientId": client_id,
        "redirectUris": ["https://rp.example/cb"],
        "tokenEndpointAuthMethod": "private_key_jwt",
        "jwksUri": uri,
    });
    let response = app.admin_create_client(&body).await;
    assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
}

#[tokio::test]
async fn a_jwks_uri_is_cached_and_fetched_again_for_a_new_kid_at_most_once_a_minute() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let server = KeyServer::start().await;
        let (first, second, unpublished) = (
            SigningKey::generate(Algorithm::Es256).unwrap(),
            SigningKey::generate(Algorithm::EdDsa).unwrap(),
            SigningKey::generate(Algorithm::Es256).unwrap(),
        );
        server.answer(200, key_set(&[&first]), 0);
        uri_client(&app, "fetched", &server.url).await;
        let mut refresh = app.token_pair_for("ivan", "fetched").await.refresh_token;
        for (key, fetches) in [(&first, 1), (&first, 1)] {
            let (status, body) = refresh_with(&app, &refresh, &key.sign("JWT", &claims(&app, "fetched", 60))).await;
            assert_eq!(status, 200, "{backend:?}: {body}");
            refresh = body["refresh_token"].as_str().unwrap().to_owned();
            assert_eq!(server.fetches(), fetches, "{backend:?}: the set is cached");
        }
        // The client publishes a second key and signs with it, more than a
        // minute after the set was fetched.
        server.answer(200, key_set(&[&first, &second]), 0);
        app.clock.advance(time::Duration::seconds(61));
        let (status, body) = refresh_with(&app, &refresh, &second.sign("JWT", &claims(&app, "fetched", 60))).await;
        assert_eq!(status, 200, "{backend:?}: a new kid fetches the set again: {body}");
        refresh = body["refresh_token"].as_str().unwrap().to_owned();
        assert_eq!(server.fetches(), 2, "{backend:?}");
        // A kid the set lacks does not fetch again within the minute.
        for _ in 0..3 {
            let forged = unpublished.sign("JWT", &claims(&app, "fetched", 60));
            let (status, body) = refresh_with(&app, &refresh, &forged).await;
            assert_eq!((status, body["error"].as_str()), (401, Some("invalid_client")), "{backend:?}: {body}");
        }
        assert_eq!(server.fetches(), 2, "{backend:?}: at most one fetch a minute");
        app.clock.advance(time::Duration::seconds(61));
        let forged = unpublished.sign("JWT", &claims(&app, "fetched", 60));
        let (status, _) = refresh_with(&app, &refresh, &forged).await;
        assert_eq!(status, 401, "{backend:?}");
        assert_eq!(server.fetches(), 3, "{backend:?}: a minute later an unknown kid fetches again");
        let (status, body) = refresh_with(&app, &refresh, &first.sign("JWT", &claims(&app, "fetched", 60))).await;
        assert_eq!(status, 200, "{backend:?}: the refresh token survived the refusals");
        assert_eq!(server.fetches(), 3, "{backend:?}: a known kid is served from the cache");
        // Ten minutes after the fetch, the set is fetched again.
        app.clock.advance(time::Duration::minutes(11));
        let refresh = body["refresh_token"].as_str().unwrap().to_owned();
        let (status, _) = refresh_with(&app, &refresh, &first.sign("JWT", &claims(&app, "fetched", 60))).await;
        assert_eq!(status, 200, "{backend:?}");
        assert_eq!(server.fetches(), 4, "{backend:?}: the cache lasts ten minutes");
    }
}

/// The first assertions of clients whose keys are at one address, 32 at
/// once (a node just started, or two registrations of one third party):
/// the set is fetched once, every request waits for that fetch, and each
/// is taken — none refused because another was fetching.
#[tokio::test]
async fn a_jwks_uri_is_fetched_once_for_32_first_assertions_at_once_of_clients_sharing_it() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let server = KeyServer::start().await;
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        // A slow answer: every request arrives while it is being fetched.
        server.answer(200, key_set(&[&key]), 1);
        for client_id in ["shared-a", "shared-b"] {
            uri_client(&app, client_id, &server.url).await;
        }
        let mut requests = tokio::task::JoinSet::new();
        for i in 0..32 {
            let client_id = if i % 2 == 0 { "shared-a" } else { "shared-b" };
            let form = [
                ("token", "not-a-token".to_owned()),
                ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned()),
                ("client_assertion", key.sign("JWT", &claims(&app, client_id, 60))),
            ];
            let request = app.http().post(app.url("/oauth2/introspect")).form(&form);
            requests.spawn(async move {
                let response = request.send().await.unwrap();
                (response.status().as_u16(), response.json::<Value>().await.unwrap())
            });
        }
        let answers = requests.join_all().await;
        let taken = answers.iter().filter(|(status, body)| *status == 200 && body["active"] == false).count();
        assert_eq!(taken, 32, "{backend:?}: {answers:?}");
        assert_eq!(server.fetches(), 1, "{backend:?}: one fetch for the address");
    }
}

#[tokio::test]
async fn jwks_uri_answers_that_are_huge_failing_slow_or_not_keys_are_refused() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let key = SigningKey::generate(Algorithm::Es256).unwrap();
    let huge = json!({ "keys": [key.jwk()], "padding": "x".repeat(100_000) }).to_string();
    let cases = [
        ("an answer of 100 kB", 200, huge, 0),
        ("a failure", 500, key_set(&[&key]), 0),
        ("not JSON", 200, "<html>".to_owned(), 0),
        (
            "private keys",
            200,
            json!({"keys": [{"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA", "d": "AA"}]}).to_string(),
            0,
        ),
        ("an answer after 8 s (the limit is 5 s)", 200, key_set(&[&key]), 8),
    ];
    for (i, (case, status, body, delay)) in cases.into_iter().enumerate() {
        let server = KeyServer::start().await;
        server.answer(status, body, delay);
        let client_id = format!("bad-uri-{i}");
        uri_client(&app, &client_id, &server.url).await;
        let pair = app.token_pair_for("ivan", &client_id).await;
        let (status, body) =
            refresh_with(&app, &pair.refresh_token, &key.sign("JWT", &claims(&app, &client_id, 60))).await;
        assert_eq!((status, body["error"].as_str()), (401, Some("invalid_client")), "{case}: {body}");
        assert!(body["error_description"].as_str().unwrap().contains("jwks_uri"), "{case}: says why: {body}");
        assert_eq!(server.fetches(), 1, "{case}");
    }
}

#[tokio::test]
async fn one_assertion_sent_32_times_at_once_is_taken_once() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        key_client(&app, "racer", &key).await;
        let mut refresh_tokens = Vec::new();
        for _ in 0..32 {
            refresh_tokens.push(app.token_pair_for("ivan", "racer").await.refresh_token);
        }
        let assertion = key.sign("JWT", &claims(&app, "racer", 60));
        let mut requests = tokio::task::JoinSet::new();
        for refresh in refresh_tokens {
            let form = [
                ("grant_type", "refresh_token".to_owned()),
                ("refresh_token", refresh),
                ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned()),
                ("client_assertion", assertion.clone()),
            ];
            let request = app.http().post(app.url("/oauth2/token")).form(&form);
            requests.spawn(async move {
                let response = request.send().await.unwrap();
                (response.status().as_u16(), response.json::<Value>().await.unwrap())
            });
        }
        let answers = requests.join_all().await;
        let taken = answers.iter().filter(|(status, _)| *status == 200).count();
        let refused =
            answers.iter().filter(|(status, body)| *status == 401 && body["error"] == "invalid_client").count();
        assert_eq!((taken, refused), (1, 31), "{backend:?}: {answers:?}");
    }
}

#[tokio::test]
async fn an_assertion_is_spent_even_by_a_request_its_grant_refuses() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        key_client(&app, "fintech", &key).await;
        let pair = app.token_pair_for("ivan", "fintech").await;
        let assertion = key.sign("JWT", &claims(&app, "fintech", 60));

        // Client authentication passes; the refresh token does not.
        let (status, body) = refresh_with(&app, "not-a-refresh-token", &assertion).await;
        assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "{backend:?}: {body}");
        // So does an unsupported grant type.
        let fresh = key.sign("JWT", &claims(&app, "fintech", 60));
        let unsupported = app
            .http()
            .post(app.url("/oauth2/token"))
            .form(&[
                ("grant_type", "password"),
                ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"),
                ("client_assertion", &fresh),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(unsupported.status(), 400, "{backend:?}");

        // Both assertions are spent: with the good refresh token they are
        // replays, and the refresh token is untouched.
        for spent in [&assertion, &fresh] {
            let (status, body) = refresh_with(&app, &pair.refresh_token, spent).await;
            assert_eq!((status, body["error"].as_str()), (401, Some("invalid_client")), "{backend:?}: {body}");
        }
        let (status, body) =
            refresh_with(&app, &pair.refresh_token, &key.sign("JWT", &claims(&app, "fintech", 60))).await;
        assert_eq!(status, 200, "{backend:?}: the refresh token still works: {body}");
    }
}

/// OpenID Connect Registration §2: a client registered with
/// `token_endpoint_auth_signing_alg` has every assertion signed with that
/// algorithm or refused, whichever of its keys signed it; `Ed25519` in a
/// header is `EdDSA`.
#[tokio::test]
async fn a_client_held_to_one_assertion_algorithm_is_refused_any_other() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let es256 = SigningKey::generate(Algorithm::Es256).unwrap();
        let ps256 = SigningKey::generate(Algorithm::Ps256).unwrap();
        let created = app
            .admin_create_client(&json!({
                "clientId": "pinned", "redirectUris": ["https://rp.example/cb"],
                "tokenEndpointAuthMethod": "private_key_jwt", "tokenEndpointAuthSigningAlg": "ES256",
                "jwks": {"keys": [es256.jwk(), ps256.jwk()]},
            }))
            .await;
        assert_eq!(created.status(), 201, "{backend:?}");
        let view: Value = created.json().await.unwrap();
        assert_eq!(view["client"]["tokenEndpointAuthSigningAlg"], "ES256", "{backend:?}: {view}");
        let pair = app.token_pair_for("ivan", "pinned").await;

        let (status, body) =
            refresh_with(&app, &pair.refresh_token, &ps256.sign("JWT", &claims(&app, "pinned", 60))).await;
        assert_eq!((status, body["error"].as_str()), (401, Some("invalid_client")), "{backend:?}: {body}");
        let description = body["error_description"].as_str().unwrap();
        assert!(
            description.contains("token_endpoint_auth_signing_alg ES256") && description.contains("PS256"),
            "{description}"
        );
        let (status, body) =
            refresh_with(&app, &pair.refresh_token, &es256.sign("JWT", &claims(&app, "pinned", 60))).await;
        assert_eq!(status, 200, "{backend:?}: the refused assertion spent nothing: {body}");

        // Unpinned, the PS256 key serves again.
        let refresh = body["refresh_token"].as_str().unwrap().to_owned();
        let patched = app
            .http()
            .patch(app.url("/admin/v1/clients/pinned"))
            .bearer_auth(portico_tests::ADMIN_TOKEN)
            .json(&json!({"tokenEndpointAuthSigningAlg": null}))
            .send()
            .await
            .unwrap();
        assert_eq!(patched.status(), 200, "{backend:?}");
        let (status, body) = refresh_with(&app, &refresh, &ps256.sign("JWT", &claims(&app, "pinned", 60))).await;
        assert_eq!(status, 200, "{backend:?}: {body}");

        // EdDSA pinned: an assertion naming its algorithm Ed25519 is one.
        let ed = SigningKey::generate(Algorithm::EdDsa).unwrap();
        let created = app
            .admin_create_client(&json!({
                "clientId": "pinned-ed", "redirectUris": ["https://rp.example/cb"],
                "tokenEndpointAuthMethod": "private_key_jwt", "tokenEndpointAuthSigningAlg": "Ed25519",
                "jwks": {"keys": [ed.jwk()]},
            }))
            .await;
        assert_eq!(created.status(), 201, "{backend:?}");
        assert_eq!(created.json::<Value>().await.unwrap()["client"]["tokenEndpointAuthSigningAlg"], "EdDSA");
        let pair = app.token_pair_for("ivan", "pinned-ed").await;
        let header = json!({"alg": "Ed25519", "typ": "JWT", "kid": ed.kid()});
        let assertion = portico_tests::jws::sign(&ed, &header, &claims(&app, "pinned-ed", 60));
        let (status, body) = refresh_with(&app, &pair.refresh_token, &assertion).await;
        assert_eq!(status, 200, "{backend:?}: {body}");
    }
}
