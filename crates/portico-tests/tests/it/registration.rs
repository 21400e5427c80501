//! Dynamic client registration (RFC 7591) and its management (RFC 7592) on
//! both backends: registration with the initial access token only; the
//! RFCs' errors for bad metadata, with nothing registered; the
//! registration access token stored as a hash, reading, replacing and
//! removing the registration with it, and nothing else with it.

use portico_crypto::jwt::{Algorithm, SigningKey};
use portico_tests::{TestApp, assert_bearer_challenges, backends};
use serde_json::{Value, json};

const INITIAL: &str = portico_tests::REGISTRATION_TOKEN;

async fn spawn(backend: portico_tests::Backend) -> TestApp {
    TestApp::spawn_with(backend, |c| {
        c.registration.initial_access_token = Some(INITIAL.to_owned());
        c.notifications.allow_insecure_callbacks = Some(false);
    })
    .await
}

async fn client_count(app: &TestApp) -> usize {
    app.store.list_clients(portico_storage::KeyPage::ALL, None).await.unwrap().len()
}

#[tokio::test]
async fn a_client_registers_with_the_initial_access_token_and_manages_its_registration() {
    for backend in backends() {
        let app = spawn(backend).await;
        let discovery: Value = app.discovery().await;
        assert_eq!(discovery["registration_endpoint"], app.url("/oauth2/register"), "{backend:?}");
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        let metadata = json!({
            "redirect_uris": ["https://fintech.example/cb"],
            "client_name": "Fintech",
            "token_endpoint_auth_method": "private_key_jwt",
            "jwks": {"keys": [key.jwk()]},
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "something_portico_does_not_know": true,
        });
        let before = client_count(&app).await;
        for token in [None, Some("wrong-token-0123456789-0123456789")] {
            let (status, body) = app.register(token, &metadata).await;
            assert_eq!((status, body["error"].as_str()), (401, Some("invalid_token")), "{backend:?}: {body}");
        }
        // RFC 6750 §3.1: the challenge has no error code when no token came.
        let register = || app.http().post(app.url("/oauth2/register")).json(&metadata);
        assert_bearer_challenges(register, "Bearer wrong-token-0123456789", &format!("{backend:?}")).await;
        assert_eq!(client_count(&app).await, before, "{backend:?}: nothing registered without the token");

        let (status, registered) = app.register(Some(INITIAL), &metadata).await;
        assert_eq!(status, 201, "{backend:?}: {registered}");
        let client_id = registered["client_id"].as_str().unwrap().to_owned();
        let token = registered["registration_access_token"].as_str().unwrap().to_owned();
        assert_eq!(registered["token_endpoint_auth_method"], "private_key_jwt");
        assert!(registered.get("client_secret").is_none(), "{backend:?}: a key client gets no secret");
        assert_eq!(registered["registration_client_uri"], app.url(&format!("/oauth2/register/{client_id}")));
        let stored = app.store.find_client(&client_id.as_str().into()).await.unwrap().unwrap();
        assert_eq!(stored.registration_token_hash, Some(portico_crypto::hash::token_hash(&token)), "stored hashed");

        // The new client authenticates with its key.
        let pair = app.token_pair_for("ivan", &client_id).await;
        let now = {
            use portico_model::clock::Clock as _;
            app.clock.now().unix_timestamp()
        };
        let assertion = key.sign(
            "JWT",
            &json!({"iss": client_id, "sub": client_id, "aud": app.base,
            "exp": now + 60, "jti": uuid::Uuid::new_v4().to_string()}),
        );
        let refreshed = app.refresh_by_assertion(&pair.refresh_token, &assertion).await;
        assert_eq!(refreshed.status(), 200, "{backend:?}");

        // RFC 7592: read, replace, remove — with its own token only.
        let uri = app.url(&format!("/oauth2/register/{client_id}"));
        let read = app.http().get(&uri).bearer_auth(&token).send().await.unwrap();
        assert_eq!(read.status(), 200, "{backend:?}");
        let read: Value = read.json().await.unwrap();
        assert_eq!(read["client_name"], "Fintech");
        // RFC 7592 §3: the client information response carries the
        // configuration address and the registration access token (the
        // one the client holds: Portico does not rotate it).
        assert_eq!(
            (read["registration_client_uri"].as_str(), read["registration_access_token"].as_str()),
            (Some(uri.as_str()), Some(token.as_str())),
            "{backend:?}: {read}"
        );
        for wrong in [INITIAL, "another-token"] {
            let answer = app.http().get(&uri).bearer_auth(wrong).send().await.unwrap();
            assert_eq!(answer.status(), 401, "{backend:?}");
        }
        let other = app.http().get(app.url("/oauth2/register/demo-app")).bearer_auth(&token).send().await.unwrap();
        assert_eq!(other.status(), 401, "{backend:?}: the token is for its own client only");
        let mut replaced = metadata.clone();
        replaced["client_id"] = client_id.clone().into();
        replaced["client_name"] = "Fintech Pro".into();
        replaced["id_token_signed_response_alg"] = "RS256".into();
        let answer = app.http().put(&uri).bearer_auth(&token).json(&replaced).send().await.unwrap();
        assert_eq!(answer.status(), 200, "{backend:?}");
        let answer: Value = answer.json().await.unwrap();
        assert_eq!(
            (answer["client_name"].as_str(), answer["id_token_signed_response_alg"].as_str()),
            (Some("Fintech Pro"), Some("RS256"))
        );
        assert_eq!(
            (answer["registration_client_uri"].as_str(), answer["registration_access_token"].as_str()),
            (Some(uri.as_str()), Some(token.as_str())),
            "{backend:?}: RFC 7592 §3 in the replacement's answer too: {answer}"
        );
        // What a read answered, sent back whole: the members the server
        // sets are ignored, not refused, and change nothing.
        let mut echoed = answer.clone();
        echoed["registration_access_token"] = "a-token-of-the-clients-choosing".into();
        echoed["client_id_issued_at"] = 1.into();
        echoed["client_secret_expires_at"] = 2.into();
        echoed["registration_client_uri"] = "https://elsewhere.example/register".into();
        let again = app.http().put(&uri).bearer_auth(&token).json(&echoed).send().await.unwrap();
        assert_eq!(again.status(), 200, "{backend:?}");
        let again: Value = again.json().await.unwrap();
        for member in ["registration_access_token", "registration_client_uri", "client_id_issued_at"] {
            assert_eq!(again[member], answer[member], "{backend:?}: {member}");
        }
        let read = app.http().get(&uri).bearer_auth(&token).send().await.unwrap();
        assert_eq!(read.status(), 200, "{backend:?}: the token stays the one issued");

        let mut bad = replaced.clone();
        bad["redirect_uris"] = json!(["http://fintech.example/cb"]);
        let answer = app.http().put(&uri).bearer_auth(&token).json(&bad).send().await.unwrap();
        assert_eq!(answer.status(), 400, "{backend:?}");
        let stored = app.store.find_client(&client_id.as_str().into()).await.unwrap().unwrap();
        assert_eq!(
            stored.redirect_uris,
            vec!["https://fintech.example/cb".to_owned()],
            "a refused PUT changes nothing"
        );
        let removed = app.http().delete(&uri).bearer_auth(&token).send().await.unwrap();
        assert_eq!(removed.status(), 204, "{backend:?}");
        assert!(app.store.find_client(&client_id.as_str().into()).await.unwrap().is_none(), "{backend:?}");
        let again = app.http().get(&uri).bearer_auth(&token).send().await.unwrap();
        assert_eq!(again.status(), 401, "{backend:?}");
    }
}

#[tokio::test]
async fn bad_registrations_get_the_rfc_errors_and_register_nothing() {
    for backend in backends() {
        let app = spawn(backend).await;
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        let mut private = serde_json::to_value(key.jwk()).unwrap();
        private["d"] = json!("AAAA");
        let mut nested = json!("deep");
        for _ in 0..200 {
            nested = json!([nested]);
        }
        let before = client_count(&app).await;
        let cases = [
            ("no redirect", json!({"client_name": "x"}), "invalid_redirect_uri"),
            ("plain http", json!({"redirect_uris": ["http://fintech.example/cb"]}), "invalid_redirect_uri"),
            ("a fragment", json!({"redirect_uris": ["https://fintech.example/cb#x"]}), "invalid_redirect_uri"),
            ("a private-use scheme", json!({"redirect_uris": ["com.fintech.app:/cb"]}), "invalid_redirect_uri"),
            ("an empty address", json!({"redirect_uris": [""]}), "invalid_redirect_uri"),
            (
                "an unknown method",
                json!({"redirect_uris": ["https://f.example/cb"], "token_endpoint_auth_method": "magic"}),
                "invalid_client_metadata",
            ),
            (
                "a key method without keys",
                json!({"redirect_uris": ["https://f.example/cb"], "token_endpoint_auth_method": "private_key_jwt"}),
                "invalid_client_metadata",
            ),
            (
                "a private key",
                json!({"redirect_uris": ["https://f.example/cb"], "token_endpoint_auth_method": "private_key_jwt", "jwks": {"keys": [private]}}),
                "invalid_client_metadata",
            ),
            (
                "an unknown algorithm",
                json!({"redirect_uris": ["https://f.example/cb"], "id_token_signed_response_alg": "none"}),
                "invalid_client_metadata",
            ),
            (
                "an algorithm without a key",
                json!({"redirect_uris": ["https://f.example/cb"], "id_token_signed_response_alg": "ES256"}),
                "invalid_client_metadata",
            ),
            (
                "an implicit grant",
                json!({"redirect_uris": ["https://f.example/cb"], "grant_types": ["implicit"]}),
                "invalid_client_metadata",
            ),
            (
                "an unknown scope",
                json!({"redirect_uris": ["https://f.example/cb"], "scope": "openid admin"}),
                "invalid_client_metadata",
            ),
            (
                "a private jwks_uri",
                json!({"redirect_uris": ["https://f.example/cb"], "token_endpoint_auth_method": "private_key_jwt", "jwks_uri": "https://10.0.0.1/jwks"}),
                "invalid_client_metadata",
            ),
            (
                "a software statement",
                json!({"redirect_uris": ["https://f.example/cb"], "software_statement": "a.b.c"}),
                "invalid_software_statement",
            ),
            ("the wrong types", json!({"redirect_uris": "https://f.example/cb"}), "invalid_client_metadata"),
            (
                "an application type OpenID Connect does not define",
                json!({"redirect_uris": ["https://f.example/cb"], "application_type": "desktop"}),
                "invalid_client_metadata",
            ),
            (
                "an application type that is not text",
                json!({"redirect_uris": ["https://f.example/cb"], "application_type": 5}),
                "invalid_client_metadata",
            ),
            (
                "a privacy policy over plain http",
                json!({"redirect_uris": ["https://f.example/cb"], "policy_uri": "http://f.example/privacy"}),
                "invalid_client_metadata",
            ),
            (
                "terms of service that are a script",
                json!({"redirect_uris": ["https://f.example/cb"], "tos_uri": "javascript:alert(1)"}),
                "invalid_client_metadata",
            ),
            (
                "a home page with user information",
                json!({"redirect_uris": ["https://f.example/cb"], "client_uri": "https://user:pw@f.example/"}),
                "invalid_client_metadata",
            ),
            (
                "a relative policy address",
                json!({"redirect_uris": ["https://f.example/cb"], "policy_uri": "/privacy"}),
                "invalid_client_metadata",
            ),
            (
                "a privacy policy on a site the client is not redirected to",
                json!({"redirect_uris": ["https://f.example/cb"], "policy_uri": "https://bank.example/privacy"}),
                "invalid_client_metadata",
            ),
            (
                "terms on a site whose name merely ends like the client's",
                json!({"redirect_uris": ["https://f.example/cb"], "tos_uri": "https://evilf.example/terms"}),
                "invalid_client_metadata",
            ),
            (
                "a logo address over 2,048 bytes",
                json!({"redirect_uris": ["https://f.example/cb"], "logo_uri": format!("https://f.example/{}", "l".repeat(2048))}),
                "invalid_client_metadata",
            ),
            (
                "deeply nested",
                json!({"redirect_uris": ["https://f.example/cb"], "client_name": nested}),
                "invalid_client_metadata",
            ),
        ];
        for (case, body, error) in cases {
            let (status, answer) = app.register(Some(INITIAL), &body).await;
            assert_eq!((status, answer["error"].as_str()), (400, Some(error)), "{backend:?} {case}: {answer}");
            // Says what was wrong: never a bare ": …" naming nothing.
            let said = answer["error_description"].as_str().unwrap_or_default();
            assert!(!said.is_empty() && !said.starts_with(':'), "{backend:?} {case}: {said}");
        }
        let huge =
            format!("{{\"redirect_uris\": [\"https://f.example/cb\"], \"client_name\": \"{}\"}}", "x".repeat(100_000));
        let answer = app
            .http()
            .post(app.url("/oauth2/register"))
            .bearer_auth(INITIAL)
            .header("content-type", "application/json")
            .body(huge)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 400, "{backend:?}: a huge body");
        let answer = app.http().post(app.url("/oauth2/register")).bearer_auth(INITIAL).body("{}").send().await.unwrap();
        assert_eq!(answer.status(), 400, "{backend:?}: not JSON");
        assert_eq!(client_count(&app).await, before, "{backend:?}: nothing was registered");
    }
}

#[tokio::test]
async fn registration_is_off_without_an_initial_access_token() {
    let app = TestApp::spawn(portico_tests::Backend::Sqlite).await;
    let discovery: Value = app.discovery().await;
    assert!(discovery.get("registration_endpoint").is_none());
    let (status, body) = app.register(Some(INITIAL), &json!({"redirect_uris": ["https://f.example/cb"]})).await;
    assert_eq!((status, body["error"].as_str()), (401, Some("invalid_token")), "{body}");
}

#[tokio::test]
async fn a_secret_client_gets_a_256_bit_secret_once() {
    for backend in backends() {
        let app = spawn(backend).await;
        for method in ["client_secret_basic", "client_secret_post", "client_secret_jwt"] {
            let body = json!({"redirect_uris": ["https://f.example/cb"], "token_endpoint_auth_method": method});
            let (status, registered) = app.register(Some(INITIAL), &body).await;
            assert_eq!(status, 201, "{backend:?} {method}: {registered}");
            let secret = registered["client_secret"].as_str().unwrap();
            assert!(secret.len() >= 43, "{backend:?} {method}: 256 bits");
            assert_eq!(registered["client_secret_expires_at"], 0);
            let uri = registered["registration_client_uri"].as_str().unwrap();
            let token = registered["registration_access_token"].as_str().unwrap();
            let read: Value = app.http().get(uri).bearer_auth(token).send().await.unwrap().json().await.unwrap();
            assert!(read.get("client_secret").is_none(), "{backend:?} {method}: shown once");
        }
    }
}

async fn one_time_token(app: &TestApp, expires_in_secs: i64) -> (u16, Value) {
    let response = app
        .http()
        .post(app.url("/admin/v1/registration-tokens"))
        .bearer_auth(portico_tests::ADMIN_TOKEN)
        .json(&json!({ "expiresInSecs": expires_in_secs }))
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

#[tokio::test]
async fn a_one_time_initial_access_token_registers_one_client_before_it_expires() {
    for backend in backends() {
        let app = spawn(backend).await;
        let good = json!({"redirect_uris": ["https://f.example/cb"]});
        for bad_ttl in [10, 31 * 24 * 3600] {
            let (status, body) = one_time_token(&app, bad_ttl).await;
            assert_eq!(status, 400, "{backend:?} {bad_ttl}: {body}");
        }
        let (status, issued) = one_time_token(&app, 120).await;
        assert_eq!(status, 201, "{backend:?}: {issued}");
        let token = issued["token"].as_str().unwrap().to_owned();
        // A refused registration does not spend it.
        let (status, _) = app.register(Some(&token), &json!({"redirect_uris": ["http://f.example/cb"]})).await;
        assert_eq!(status, 400, "{backend:?}");
        // Nor one refused by the rules every client is held to (a scope
        // Portico does not serve, a key method without keys), nor one whose
        // write fails: the write that stores the client spends the token.
        for refused in [
            json!({"redirect_uris": ["https://f.example/cb"], "scope": "openid payments"}),
            json!({"redirect_uris": ["https://f.example/cb"], "token_endpoint_auth_method": "private_key_jwt"}),
        ] {
            let (status, body) = app.register(Some(&token), &refused).await;
            assert_eq!((status, body["error"].as_str()), (400, Some("invalid_client_metadata")), "{backend:?}: {body}");
        }
        app.run_sql("ALTER TABLE clients RENAME TO clients_away").await;
        let (status, body) = app.register(Some(&token), &good).await;
        assert_eq!((status, body["error"].as_str()), (503, Some("temporarily_unavailable")), "{backend:?}: {body}");
        app.run_sql("ALTER TABLE clients_away RENAME TO clients").await;
        let (status, body) = app.register(Some(&token), &good).await;
        assert_eq!(status, 201, "{backend:?}: {body}");
        let (status, body) = app.register(Some(&token), &good).await;
        assert_eq!((status, body["error"].as_str()), (401, Some("invalid_token")), "{backend:?}: used once");

        let (_, issued) = one_time_token(&app, 60).await;
        app.clock.advance(time::Duration::seconds(61));
        let (status, _) = app.register(issued["token"].as_str(), &good).await;
        assert_eq!(status, 401, "{backend:?}: expired");

        // 32 registrations at once with one token: exactly one is made.
        let (_, issued) = one_time_token(&app, 600).await;
        let token = issued["token"].as_str().unwrap().to_owned();
        let before = client_count(&app).await;
        let mut requests = tokio::task::JoinSet::new();
        for _ in 0..32 {
            let request = app.http().post(app.url("/oauth2/register")).bearer_auth(&token).json(&good);
            requests.spawn(async move { request.send().await.unwrap().status().as_u16() });
        }
        let statuses = requests.join_all().await;
        let made = statuses.iter().filter(|s| **s == 201).count();
        let refused = statuses.iter().filter(|s| **s == 401).count();
        assert_eq!((made, refused), (1, 31), "{backend:?}: {statuses:?}");
        assert_eq!(client_count(&app).await, before + 1, "{backend:?}");
    }
}

#[tokio::test]
async fn an_operator_lists_unspent_initial_access_tokens_and_withdraws_one() {
    async fn admin(app: &TestApp, method: reqwest::Method, path: String) -> reqwest::Result<reqwest::Response> {
        app.http().request(method, app.url(&path)).bearer_auth(portico_tests::ADMIN_TOKEN).send().await
    }
    async fn listed(app: &TestApp) -> Vec<String> {
        let response = admin(app, reqwest::Method::GET, "/admin/v1/registration-tokens".into()).await.unwrap();
        assert_eq!(response.status(), 200);
        let body: Value = response.json().await.unwrap();
        body["tokens"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_owned()).collect()
    }
    for backend in backends() {
        let app = spawn(backend).await;
        let good = json!({"redirect_uris": ["https://f.example/cb"]});
        let mut issued = Vec::new();
        for ttl in [600, 600, 60] {
            let (status, body) = one_time_token(&app, ttl).await;
            assert_eq!(status, 201, "{backend:?}: {body}");
            let id = body["id"].as_str().unwrap().to_owned();
            assert!(id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()), "{backend:?}: {id}");
            issued.push((id, body["token"].as_str().unwrap().to_owned()));
            app.clock.advance(time::Duration::seconds(1));
        }
        let ids: Vec<String> = issued.iter().map(|(id, _)| id.clone()).collect();
        assert_eq!(listed(&app).await, ids, "{backend:?}: oldest first");
        let response = admin(&app, reqwest::Method::GET, "/admin/v1/registration-tokens".into()).await.unwrap();
        let text = response.text().await.unwrap();
        assert!(issued.iter().all(|(_, token)| !text.contains(token.as_str())), "{backend:?}: never the token");

        // Spent or expired, a token is no longer listed.
        let (status, _) = app.register(Some(&issued[0].1), &good).await;
        assert_eq!(status, 201, "{backend:?}");
        app.clock.advance(time::Duration::seconds(60));
        assert_eq!(listed(&app).await, vec![ids[1].clone()], "{backend:?}");

        // Withdrawn, it registers nothing.
        let path = format!("/admin/v1/registration-tokens/{}", ids[1]);
        let response = admin(&app, reqwest::Method::DELETE, path.clone()).await.unwrap();
        assert_eq!(response.status(), 204, "{backend:?}");
        let event = &app.store.recent_audit(1).await.unwrap()[0];
        assert_eq!(
            (event.kind.as_str(), event.detail["id"].as_str()),
            ("registration_token.withdrawn", Some(&*ids[1]))
        );
        let before = client_count(&app).await;
        let (status, body) = app.register(Some(&issued[1].1), &good).await;
        assert_eq!((status, body["error"].as_str()), (401, Some("invalid_token")), "{backend:?}: {body}");
        assert_eq!(client_count(&app).await, before, "{backend:?}");
        assert!(listed(&app).await.is_empty(), "{backend:?}");

        // Again, a spent one, an unknown or malformed id: 404, nothing audited.
        for id in [ids[1].as_str(), ids[0].as_str(), "0123456789abcdef", "xyz", "0123456789ABCDEF"] {
            let response = admin(&app, reqwest::Method::DELETE, format!("/admin/v1/registration-tokens/{id}")).await;
            let response = response.unwrap();
            assert_eq!(response.status(), 404, "{backend:?} {id}");
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["code"], "registration_token_not_found", "{backend:?} {id}: {body}");
        }
        assert_eq!(app.store.recent_audit(1).await.unwrap()[0].kind, "registration_token.withdrawn");
        // The spent token's client stays.
        assert_eq!(client_count(&app).await, before, "{backend:?}");
    }
}

#[tokio::test]
async fn a_lifetime_written_with_a_zero_fraction_is_an_integer() {
    let app = spawn(portico_tests::Backend::Sqlite).await;
    for (body, status) in
        [(json!({"expiresInSecs": 1101.0}), 201), (json!({"expiresInSecs": 1101.5}), 400), (json!({}), 201)]
    {
        let response = app
            .http()
            .post(app.url("/admin/v1/registration-tokens"))
            .bearer_auth(portico_tests::ADMIN_TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), status, "{body}");
    }
}

const DIRECTORY: &str = "https://directory.openbanking.example";

/// A registration server that trusts software statements of [`DIRECTORY`],
/// signed with `key`; with `required`, only registrations that carry one.
async fn spawn_trusting(backend: portico_tests::Backend, key: &SigningKey, required: bool) -> TestApp {
    let file = std::env::temp_dir().join(format!("directory-{}.jwks.json", uuid::Uuid::new_v4()));
    std::fs::write(&file, json!({ "keys": [key.jwk()] }).to_string()).unwrap();
    TestApp::spawn_with(backend, move |c| {
        c.registration.initial_access_token = Some(INITIAL.to_owned());
        c.registration.software_statement_issuers =
            vec![portico_server::config::StatementIssuerConfig { issuer: DIRECTORY.to_owned(), jwks_file: file }];
        c.registration.require_software_statement = required;
        c.notifications.allow_insecure_callbacks = Some(false);
    })
    .await
}

fn now(app: &TestApp) -> i64 {
    use portico_model::clock::Clock as _;
    app.clock.now().unix_timestamp()
}

#[tokio::test]
async fn a_software_statement_of_a_trusted_issuer_takes_precedence_over_the_body() {
    for backend in backends() {
        let directory = SigningKey::generate(Algorithm::Es256).unwrap();
        let app = spawn_trusting(backend, &directory, false).await;
        let statement = directory.sign(
            "JWT",
            &json!({
                "iss": DIRECTORY, "iat": now(&app), "exp": now(&app) + 3600, "software_id": "fintech-app",
                "client_name": "Fintech Ltd", "redirect_uris": ["https://fintech.example/cb"],
                "client_id": "chosen-by-the-statement",
            }),
        );
        let body = json!({
            "redirect_uris": ["https://elsewhere.example/cb"], "client_name": "Anything",
            "scope": "openid profile", "software_statement": statement,
        });
        let (status, registered) = app.register(Some(INITIAL), &body).await;
        assert_eq!(status, 201, "{backend:?}: {registered}");
        assert_eq!(registered["redirect_uris"], json!(["https://fintech.example/cb"]), "the statement's");
        assert_eq!(registered["client_name"], "Fintech Ltd");
        assert_eq!(registered["scope"], "openid profile", "what the statement leaves out comes from the body");
        assert_eq!(registered["software_statement"], statement, "answered unmodified");
        let client_id = registered["client_id"].as_str().unwrap();
        assert!(client_id.starts_with("dcr-"), "{client_id}: a statement does not choose the client id");
        let stored = app.store.find_client(&client_id.into()).await.unwrap().unwrap();
        assert_eq!(stored.redirect_uris, vec!["https://fintech.example/cb".to_owned()]);
    }
}

#[tokio::test]
async fn bad_software_statements_are_refused_and_register_nothing() {
    for backend in backends() {
        let directory = SigningKey::generate(Algorithm::Es256).unwrap();
        let app = spawn_trusting(backend, &directory, false).await;
        let other = SigningKey::generate(Algorithm::Es256).unwrap();
        let at = now(&app);
        let claims = |change: &dyn Fn(&mut Value)| {
            let mut claims = json!({"iss": DIRECTORY, "iat": at, "redirect_uris": ["https://fintech.example/cb"]});
            change(&mut claims);
            claims
        };
        let cases: Vec<(&str, Value, &str)> = vec![
            (
                "another issuer",
                json!(other.sign("JWT", &claims(&|c| c["iss"] = json!("https://rogue.example")))),
                "unapproved_software_statement",
            ),
            (
                "the issuer's name, another key",
                json!(other.sign("JWT", &claims(&|_| {}))),
                "invalid_software_statement",
            ),
            (
                "expired",
                json!(directory.sign("JWT", &claims(&|c| c["exp"] = json!(at - 60)))),
                "invalid_software_statement",
            ),
            (
                "issued in the future",
                json!(directory.sign("JWT", &claims(&|c| c["iat"] = json!(at + 3600)))),
                "invalid_software_statement",
            ),
            (
                "no iss",
                json!(directory.sign("JWT", &claims(&|c| drop(c.as_object_mut().unwrap().remove("iss"))))),
                "invalid_software_statement",
            ),
            ("not a string", json!({"iss": DIRECTORY}), "invalid_software_statement"),
            ("not a JWT", json!("a.b.c"), "invalid_software_statement"),
        ];
        let before = client_count(&app).await;
        for (case, statement, error) in cases {
            let body = json!({"redirect_uris": ["https://fintech.example/cb"], "software_statement": statement});
            let (status, answer) = app.register(Some(INITIAL), &body).await;
            assert_eq!((status, answer["error"].as_str()), (400, Some(error)), "{backend:?} {case}: {answer}");
            assert!(answer["error_description"].as_str().unwrap().starts_with("software_statement: "), "{answer}");
        }
        assert_eq!(client_count(&app).await, before, "{backend:?}: nothing registered");
        // A good one still registers.
        let body = json!({"software_statement": directory.sign("JWT", &claims(&|_| {}))});
        assert_eq!(app.register(Some(INITIAL), &body).await.0, 201, "{backend:?}");
    }
}

/// A member given as `null` is a member left out (RFC 7591 lists only
/// `redirect_uris` as needed here), the software statement as every other.
#[tokio::test]
async fn members_given_as_null_are_left_out() {
    for backend in backends() {
        let app = spawn(backend).await;
        let body = json!({
            "redirect_uris": ["https://f.example/cb"], "client_name": null, "logo_uri": null, "scope": null,
            "jwks": null, "jwks_uri": null, "software_statement": null, "security_profile": null,
        });
        let (status, registered) = app.register(Some(INITIAL), &body).await;
        assert_eq!(status, 201, "{backend:?}: {registered}");
        assert!(registered.get("software_statement").is_none(), "{backend:?}: {registered}");
        let uri = registered["registration_client_uri"].as_str().unwrap();
        let token = registered["registration_access_token"].as_str().unwrap();
        let mut replacement = body.clone();
        replacement["client_id"] = registered["client_id"].clone();
        let replaced = app.http().put(uri).bearer_auth(token).json(&replacement).send().await.unwrap();
        assert_eq!(replaced.status(), 200, "{backend:?}: {}", replaced.text().await.unwrap());
    }
}

/// OpenID Connect Registration §2: the provider SHOULD show the user the
/// client's home page, privacy policy and terms of service. Each is kept,
/// answered (registration, RFC 7592 read, the admin API) and linked from
/// the consent page in both languages; a replacement without one drops its
/// link; a client that named none shows no links.
#[tokio::test]
async fn the_consent_page_links_to_the_pages_a_client_registered() {
    for backend in backends() {
        let app = spawn(backend).await;
        let pages = [
            ("client_uri", "https://fintech.example/", "Сайт приложения", "Application website"),
            ("policy_uri", "https://fintech.example/privacy#data", "Политика конфиденциальности", "Privacy policy"),
            ("tos_uri", "https://fintech.example/terms?v=2&lang=ru", "Условия использования", "Terms of service"),
        ];
        let mut body = json!({"redirect_uris": ["https://fintech.example/cb"], "client_name": "Fintech",
                              "logo_uri": "https://fintech.example/logo.png"});
        for (member, uri, _, _) in pages {
            body[member] = uri.into();
        }
        let (status, registered) = app.register(Some(INITIAL), &body).await;
        assert_eq!(status, 201, "{backend:?}: {registered}");
        let client_id = registered["client_id"].as_str().unwrap().to_owned();
        let secret = registered["client_secret"].as_str().unwrap().to_owned();
        let read = app
            .http()
            .get(registered["registration_client_uri"].as_str().unwrap())
            .bearer_auth(registered["registration_access_token"].as_str().unwrap())
            .send()
            .await
            .unwrap();
        let read: Value = read.json().await.unwrap();
        let admin: Value = app
            .http()
            .get(app.url(&format!("/admin/v1/clients/{client_id}")))
            .bearer_auth(portico_tests::ADMIN_TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        for (member, uri, _, _) in
            pages.iter().copied().chain([("logo_uri", "https://fintech.example/logo.png", "", "")])
        {
            assert_eq!(registered[member], uri, "{backend:?}: registration answers {member}");
            assert_eq!(read[member], uri, "{backend:?}: RFC 7592 read answers {member}");
            let camel = member.replace("_uri", "Uri");
            assert_eq!(admin[camel.as_str()], uri, "{backend:?}: the admin API shows {camel}: {admin}");
        }

        // An operator's change keeps them (the admin API does not set them).
        let patched = app
            .http()
            .patch(app.url(&format!("/admin/v1/clients/{client_id}")))
            .bearer_auth(portico_tests::ADMIN_TOKEN)
            .json(&json!({"nameEn": "Fintech Ltd"}))
            .send()
            .await
            .unwrap();
        assert_eq!(patched.status(), 200, "{backend:?}");
        let patched: Value = patched.json().await.unwrap();
        assert_eq!(patched["policyUri"], "https://fintech.example/privacy#data", "{backend:?}: {patched}");
        assert_eq!(patched["logoUri"], "https://fintech.example/logo.png", "{backend:?}: {patched}");

        // The consent step, in Russian and then English.
        let browser = at_consent(&app, &client_id, "https://fintech.example/cb").await;
        for (language, index) in [("ru", 0), ("en", 1)] {
            let page = browser.get(app.url("/login")).header("accept-language", language).send().await.unwrap();
            let html = page.text().await.unwrap();
            let step = &portico_tests::view_data(&html)["pageData"]["stepViewData"];
            assert_eq!(step["stepType"], "consent", "{backend:?} {language}: {step}");
            for (member, uri, ru, en) in pages {
                let camel = member.replace("_uri", "Uri");
                assert_eq!(step[camel.as_str()], uri, "{backend:?} {language}: viewData names {camel}");
                let text = [ru, en][index];
                let escaped = uri.replace('&', "&#38;");
                let link = format!("<a href=\"{escaped}\">{text}</a>");
                assert!(html.contains(&link), "{backend:?} {language}: the page links {link}: {html}");
            }
            assert!(!html.contains("logo.png"), "{backend:?} {language}: the logo is not loaded from the client");
        }

        // A replacement without the terms drops their link; the others stay.
        let mut replacement = read.clone();
        replacement.as_object_mut().unwrap().remove("tos_uri");
        replacement["client_secret"] = secret.into();
        let replaced = app
            .http()
            .put(registered["registration_client_uri"].as_str().unwrap())
            .bearer_auth(registered["registration_access_token"].as_str().unwrap())
            .json(&replacement)
            .send()
            .await
            .unwrap();
        let replaced: Value = replaced.json().await.unwrap();
        assert!(replaced.get("tos_uri").is_none(), "{backend:?}: {replaced}");
        let html = browser.get(app.url("/login")).header("accept-language", "en").send().await.unwrap();
        let html = html.text().await.unwrap();
        assert!(html.contains(">Privacy policy</a>") && !html.contains("Terms of service"), "{backend:?}: {html}");

        // The pages may sit on a domain above, below or beside a redirect
        // host; a native app redirected to loopback only has no site to match.
        for (redirect, page) in [
            ("https://app.fintech.example/cb", "https://fintech.example/privacy"),
            ("https://app.fintech.example/cb", "https://www.fintech.example/privacy"),
            ("https://fintech.example/cb", "https://legal.fintech.example/privacy"),
            ("http://127.0.0.1/cb", "https://fintech.example/privacy"),
        ] {
            let body = json!({"redirect_uris": [redirect], "policy_uri": page});
            let (status, answer) = app.register(Some(INITIAL), &body).await;
            assert_eq!((status, answer["policy_uri"].as_str()), (201, Some(page)), "{backend:?} {redirect}: {answer}");
        }

        // A client that named no page shows no links.
        let (status, plain) =
            app.register(Some(INITIAL), &json!({"redirect_uris": ["https://plain.example/cb"]})).await;
        assert_eq!(status, 201, "{backend:?}: {plain}");
        let browser = at_consent(&app, plain["client_id"].as_str().unwrap(), "https://plain.example/cb").await;
        let html = browser.get(app.url("/login")).send().await.unwrap().text().await.unwrap();
        let step = &portico_tests::view_data(&html)["pageData"]["stepViewData"];
        assert_eq!(step["stepType"], "consent", "{backend:?}");
        assert!(step["policyUri"].is_null() && !html.contains("clientPages"), "{backend:?}: {html}");
    }
}

/// A browser in which ivan signed in (password and SMS code) to
/// `client_id`, now at the consent step.
async fn at_consent(app: &TestApp, client_id: &str, redirect_uri: &str) -> reqwest::Client {
    let browser = app.browser();
    let pkce = portico_tests::Pkce::new();
    let authorize = app.authorize_url(&pkce, &[("client_id", Some(client_id)), ("redirect_uri", Some(redirect_uri))]);
    let response = browser.get(authorize).send().await.unwrap();
    assert_eq!(portico_tests::location(&response), "/login");
    let view = app.login_view(&browser).await;
    let csrf = view["pageData"]["authenticationFlowContext"]["csrf"].as_str().unwrap().to_owned();
    let form = [("_csrf", csrf.as_str()), ("principal", "ivan"), ("credentials", "ivan-password")];
    let response = browser.post(app.url("/login")).form(&form).send().await.unwrap();
    let next = app.second_factor_if_asked(&browser, &csrf, "ivan", portico_tests::location(&response)).await;
    assert_eq!(next, "/login", "consent comes next");
    browser
}

/// OpenID Connect Registration §2.1: `client_name` with a language tag
/// names the client on the pages of that language (Russian and English,
/// the pages' two; a regional tag counts as its language); a name in one
/// language serves the other when only it is given.
#[tokio::test]
async fn a_client_names_itself_in_russian_and_english() {
    for backend in backends() {
        let app = spawn(backend).await;
        let names = |client_id: &str| {
            let app = &app;
            let client_id = client_id.to_owned();
            async move {
                let client = app.store.find_client(&client_id.as_str().into()).await.unwrap().unwrap();
                (client.name.ru, client.name.en)
            }
        };
        let body =
            json!({"redirect_uris": ["https://f.example/cb"], "client_name": "Fintech", "client_name#ru": "Финтех"});
        let (status, registered) = app.register(Some(INITIAL), &body).await;
        assert_eq!(status, 201, "{backend:?}: {registered}");
        let id = registered["client_id"].as_str().unwrap().to_owned();
        assert_eq!(names(&id).await, ("Финтех".to_owned(), "Fintech".to_owned()), "{backend:?}");
        assert_eq!(
            (
                registered["client_name"].as_str(),
                registered["client_name#ru"].as_str(),
                registered["client_name#en"].as_str()
            ),
            (Some("Fintech"), Some("Финтех"), None),
            "{backend:?}: {registered}"
        );

        let regional = json!({"redirect_uris": ["https://f.example/cb"], "client_name#RU-ru": "Банк", "client_name#en-GB": "Bank"});
        let (status, registered) = app.register(Some(INITIAL), &regional).await;
        assert_eq!(status, 201, "{backend:?}: {registered}");
        let id = registered["client_id"].as_str().unwrap().to_owned();
        assert_eq!(names(&id).await, ("Банк".to_owned(), "Bank".to_owned()), "{backend:?}: regional tags");

        let russian_only = json!({"redirect_uris": ["https://f.example/cb"], "client_name#ru": "Брокер"});
        let (status, registered) = app.register(Some(INITIAL), &russian_only).await;
        assert_eq!(status, 201, "{backend:?}: {registered}");
        let id = registered["client_id"].as_str().unwrap().to_owned();
        assert_eq!(names(&id).await, ("Брокер".to_owned(), "Брокер".to_owned()), "{backend:?}: one name serves both");

        // A replacement names it anew, per language; the answer sent back
        // with only `client_name` changed renames it where the answer had
        // no other name.
        let uri = registered["registration_client_uri"].as_str().unwrap();
        let token = registered["registration_access_token"].as_str().unwrap();
        let mut replacement = registered.clone();
        replacement["client_name#en"] = "Broker".into();
        let answer = app.http().put(uri).bearer_auth(token).json(&replacement).send().await.unwrap();
        assert_eq!(answer.status(), 200, "{backend:?}: {}", answer.text().await.unwrap());
        assert_eq!(names(&id).await, ("Брокер".to_owned(), "Broker".to_owned()), "{backend:?}: replaced");
        let mut renamed: Value = answer.json().await.unwrap();
        assert_eq!(renamed["client_name#ru"], "Брокер", "{backend:?}: the Russian name differs now: {renamed}");
        renamed["client_name"] = "Broker Pro".into();
        let answer = app.http().put(uri).bearer_auth(token).json(&renamed).send().await.unwrap();
        assert_eq!(answer.status(), 200, "{backend:?}: {}", answer.text().await.unwrap());
        assert_eq!(names(&id).await, ("Брокер".to_owned(), "Broker Pro".to_owned()), "{backend:?}: renamed");
    }
}

/// RFC 7591 §3.2.1: the answer names what the server provisioned. On a
/// server that signs with ES256 by default, a client that named no
/// algorithm is told ES256 for its ID tokens, access tokens, JARM and
/// introspection answers (the specifications' own default, RS256, would
/// mislead it), and nothing for userinfo, which stays plain JSON.
#[tokio::test]
async fn the_answer_names_the_algorithms_that_sign_for_the_client() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.registration.initial_access_token = Some(INITIAL.to_owned());
            c.tokens.signing_algorithm = "ES256".into();
        })
        .await;
        let signing = |answer: &Value| {
            [
                "id_token_signed_response_alg",
                "access_token_signed_response_alg",
                "introspection_signed_response_alg",
                "authorization_signed_response_alg",
                "userinfo_signed_response_alg",
            ]
            .map(|name| answer[name].as_str().map(str::to_owned))
        };
        let es256 = Some("ES256".to_owned());
        let (status, registered) =
            app.register(Some(INITIAL), &json!({"redirect_uris": ["https://f.example/cb"]})).await;
        assert_eq!(status, 201, "{backend:?}: {registered}");
        let provisioned = [es256.clone(), es256.clone(), es256.clone(), es256.clone(), None];
        assert_eq!(signing(&registered), provisioned, "{backend:?}: {registered}");
        let uri = registered["registration_client_uri"].as_str().unwrap();
        let token = registered["registration_access_token"].as_str().unwrap();
        let read: Value = app.http().get(uri).bearer_auth(token).send().await.unwrap().json().await.unwrap();
        assert_eq!(signing(&read), provisioned, "{backend:?}: the read answer names them too: {read}");

        let chosen = json!({"redirect_uris": ["https://f.example/cb"], "userinfo_signed_response_alg": "ES256"});
        let (status, registered) = app.register(Some(INITIAL), &chosen).await;
        assert_eq!(status, 201, "{backend:?}: {registered}");
        assert_eq!(signing(&registered)[4], es256, "{backend:?}: a chosen userinfo algorithm is named");
    }
}

/// OpenID Connect registration metadata asking for what Portico does not
/// do (encrypted answers, pairwise subjects, front-channel logout, a
/// default `max_age`) is refused naming the member, on registration and on
/// replacement, rather than ignored while the client believes it has it;
/// `null`, `public` subjects and what Portico always does are taken.
#[tokio::test]
async fn metadata_asking_for_what_portico_does_not_do_is_refused_naming_it() {
    let refused = [
        ("id_token_encrypted_response_alg", json!("RSA-OAEP-256")),
        ("id_token_encrypted_response_enc", json!("A128CBC-HS256")),
        ("userinfo_encrypted_response_alg", json!("ECDH-ES")),
        ("userinfo_encrypted_response_enc", json!("A256GCM")),
        ("request_object_encryption_alg", json!("RSA-OAEP")),
        ("request_object_encryption_enc", json!("A128GCM")),
        ("authorization_encrypted_response_alg", json!("RSA-OAEP-256")),
        ("authorization_encrypted_response_enc", json!("A256GCM")),
        ("introspection_encrypted_response_alg", json!("RSA-OAEP-256")),
        ("introspection_encrypted_response_enc", json!("A256GCM")),
        ("frontchannel_logout_uri", json!("https://f.example/logout")),
        ("default_max_age", json!(300)),
        ("default_acr_values", json!(["urn:mace:incommon:iap:silver"])),
        ("request_uris", json!(["https://f.example/request.jwt"])),
        ("subject_type", json!("pairwise")),
    ];
    for backend in backends() {
        let app = spawn(backend).await;
        let before = client_count(&app).await;
        for (member, value) in &refused {
            let mut body = json!({"redirect_uris": ["https://f.example/cb"]});
            body[*member] = value.clone();
            let (status, answer) = app.register(Some(INITIAL), &body).await;
            assert_eq!(
                (status, answer["error"].as_str()),
                (400, Some("invalid_client_metadata")),
                "{backend:?} {member}: {answer}"
            );
            let said = answer["error_description"].as_str().unwrap_or_default();
            assert!(said.starts_with(&format!("{member}: ")), "{backend:?}: names {member}: {said}");
        }
        assert_eq!(client_count(&app).await, before, "{backend:?}: nothing was registered");

        let taken = json!({
            "redirect_uris": ["https://f.example/cb"], "subject_type": "public", "require_auth_time": true,
            "backchannel_logout_session_required": true, "default_max_age": null, "id_token_encrypted_response_alg": null,
            "default_acr_values": [], "request_uris": [], "application_type": "web",
        });
        let (status, registered) = app.register(Some(INITIAL), &taken).await;
        assert_eq!(status, 201, "{backend:?}: {registered}");
        let uri = registered["registration_client_uri"].as_str().unwrap();
        let token = registered["registration_access_token"].as_str().unwrap();
        let mut replacement = registered.clone();
        replacement["userinfo_encrypted_response_alg"] = json!("RSA-OAEP-256");
        let answer = app.http().put(uri).bearer_auth(token).json(&replacement).send().await.unwrap();
        assert_eq!(answer.status(), 400, "{backend:?}: refused on replacement too");
        let answer: Value = answer.json().await.unwrap();
        assert_eq!(answer["error"], "invalid_client_metadata", "{backend:?}: {answer}");
        // The registration's own answer, sent back whole, is a good replacement.
        let answer = app.http().put(uri).bearer_auth(token).json(&registered).send().await.unwrap();
        assert_eq!(answer.status(), 200, "{backend:?}: {}", answer.text().await.unwrap());
    }
}

#[tokio::test]
async fn a_bank_may_require_a_software_statement() {
    let directory = SigningKey::generate(Algorithm::EdDsa).unwrap();
    let app = spawn_trusting(portico_tests::Backend::Sqlite, &directory, true).await;
    let before = client_count(&app).await;
    let (status, answer) = app.register(Some(INITIAL), &json!({"redirect_uris": ["https://fintech.example/cb"]})).await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_software_statement")), "{answer}");
    let null = json!({"redirect_uris": ["https://fintech.example/cb"], "software_statement": null});
    let (status, answer) = app.register(Some(INITIAL), &null).await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_software_statement")), "{answer}");
    assert!(
        answer["error_description"].as_str().unwrap().contains("only clients with a software statement"),
        "{answer}"
    );
    assert_eq!(client_count(&app).await, before);
    let statement = directory.sign("JWT", &json!({"iss": DIRECTORY, "redirect_uris": ["https://fintech.example/cb"]}));
    let (status, registered) = app.register(Some(INITIAL), &json!({"software_statement": statement})).await;
    assert_eq!(status, 201, "{registered}");

    // Replacing the registration needs the statement too.
    let uri = registered["registration_client_uri"].as_str().unwrap();
    let token = registered["registration_access_token"].as_str().unwrap();
    let client_id = registered["client_id"].as_str().unwrap();
    let put = |body: Value| app.http().put(uri).bearer_auth(token).json(&body).send();
    let without = put(json!({"client_id": client_id, "redirect_uris": ["https://fintech.example/cb"]})).await.unwrap();
    assert_eq!(without.status(), 400);
    let with = put(json!({"client_id": client_id, "software_statement": statement})).await.unwrap();
    assert_eq!(with.status(), 200, "{}", with.text().await.unwrap());
}

#[tokio::test]
async fn a_client_moving_to_a_secret_it_was_never_given_gets_one_on_replacement() {
    for backend in backends() {
        let app = spawn(backend).await;
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        let metadata = json!({
            "redirect_uris": ["https://fintech.example/cb"], "token_endpoint_auth_method": "private_key_jwt",
            "jwks": {"keys": [key.jwk()]},
        });
        let (_, registered) = app.register(Some(INITIAL), &metadata).await;
        let (uri, token) = (
            registered["registration_client_uri"].as_str().unwrap(),
            registered["registration_access_token"].as_str().unwrap(),
        );
        let client_id = registered["client_id"].as_str().unwrap().to_owned();
        let replace = |method: &str| {
            let body = json!({"client_id": client_id, "redirect_uris": ["https://fintech.example/cb"], "token_endpoint_auth_method": method});
            app.http().put(uri).bearer_auth(token).json(&body).send()
        };

        let moved: Value = replace("client_secret_jwt").await.unwrap().json().await.unwrap();
        assert_eq!(moved["token_endpoint_auth_method"], "client_secret_jwt", "{backend:?}: {moved}");
        let secret = moved["client_secret"].as_str().expect("a new secret for client_secret_jwt").to_owned();
        assert!(secret.len() >= 43, "256 bits");
        // The secret works for an HS256 assertion.
        let assertion = jsonwebtoken::encode(
            &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
            &json!({"iss": client_id, "sub": client_id, "aud": app.base, "exp": now(&app) + 60, "jti": "j-1"}),
            &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
        )
        .unwrap();
        let introspected = app
            .http()
            .post(app.url("/oauth2/introspect"))
            .form(&[
                ("token", "x"),
                ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"),
                ("client_assertion", &assertion),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(introspected.status(), 200, "{backend:?}: {}", introspected.text().await.unwrap());

        // Replacing with the same method gives no new secret.
        let again: Value = replace("client_secret_jwt").await.unwrap().json().await.unwrap();
        assert!(again.get("client_secret").is_none(), "{backend:?}: {again}");
    }
}

/// Authenticates as the client at the token endpoint with a code that
/// does not exist: `invalid_client` while the client may not authenticate,
/// `invalid_grant` once it may.
async fn token_request(app: &TestApp, client_id: &str, secret: &str) -> (u16, Value) {
    let response = app
        .http()
        .post(app.url("/oauth2/token"))
        .basic_auth(client_id, Some(secret))
        .form(&[
            ("grant_type", "authorization_code"),
            ("code", "no-such-code"),
            ("redirect_uri", "https://f.example/cb"),
            ("code_verifier", &portico_tests::Pkce::new().verifier),
        ])
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// The status of the authorization request and whether it went to the
/// login page.
async fn authorize(app: &TestApp, client_id: &str) -> (u16, bool) {
    let pkce = portico_tests::Pkce::new();
    let query = [
        ("client_id", client_id),
        ("redirect_uri", "https://f.example/cb"),
        ("response_type", "code"),
        ("scope", "openid"),
        ("state", "s1"),
        ("code_challenge", pkce.challenge.as_str()),
        ("code_challenge_method", "S256"),
    ];
    let response = app.browser().get(app.url("/oauth2/authorize")).query(&query).send().await.unwrap();
    let to_login = response
        .headers()
        .get("location")
        .and_then(|l| l.to_str().ok())
        .is_some_and(|l| l.contains("/login") || l.contains("process"));
    (response.status().as_u16(), to_login)
}

#[tokio::test]
async fn a_held_registration_works_only_once_an_operator_approves_it() {
    for backend in backends() {
        let app = TestApp::spawn_holding_registrations(backend).await;
        let body = json!({"redirect_uris": ["https://f.example/cb"], "client_name": "Held"});
        let (status, registered) = app.register(Some(INITIAL), &body).await;
        assert_eq!(status, 201, "{backend:?}: {registered}");
        let client_id = registered["client_id"].as_str().unwrap().to_owned();
        let secret = registered["client_secret"].as_str().unwrap().to_owned();
        let stored = app.store.find_client(&client_id.as_str().into()).await.unwrap().unwrap();
        assert!(stored.awaiting_approval, "{backend:?}: held");

        // Held: the client proves itself and is told why it is refused; a
        // wrong secret learns nothing; no login starts for it.
        let (status, refused) = token_request(&app, &client_id, &secret).await;
        assert_eq!((status, refused["error"].as_str()), (401, Some("invalid_client")), "{backend:?}: {refused}");
        assert!(refused["error_description"].as_str().unwrap().contains("approval"), "{backend:?}: {refused}");
        let (_, wrong) = token_request(&app, &client_id, "not-the-secret-0123456789").await;
        assert!(!wrong["error_description"].as_str().unwrap().contains("approval"), "{backend:?}: {wrong}");
        let unknown = authorize(&app, "dcr-no-such-client").await;
        assert_eq!(authorize(&app, &client_id).await, unknown, "{backend:?}: as an unknown client");
        assert!(!unknown.1, "{backend:?}");
        // It manages its registration meanwhile.
        let uri = registered["registration_client_uri"].as_str().unwrap();
        let token = registered["registration_access_token"].as_str().unwrap();
        let read = app.http().get(uri).bearer_auth(token).send().await.unwrap();
        assert_eq!(read.status(), 200, "{backend:?}");

        // An operator approves it, once.
        let approve = || {
            app.http()
                .post(app.url(&format!("/admin/v1/clients/{client_id}/approve")))
                .bearer_auth(portico_tests::ADMIN_TOKEN)
                .send()
        };
        let approved = approve().await.unwrap();
        assert_eq!(approved.status(), 200, "{backend:?}");
        let view: Value = approved.json().await.unwrap();
        assert_eq!(view["awaitingApproval"], false, "{backend:?}: {view}");
        let again = approve().await.unwrap();
        assert_eq!(again.status(), 409, "{backend:?}");
        let again: Value = again.json().await.unwrap();
        assert_eq!(again["code"], "not_awaiting_approval", "{backend:?}: {again}");
        let event = &app.store.recent_audit(1).await.unwrap()[0];
        assert_eq!(event.kind, "client.approved", "{backend:?}");
        assert_eq!(event.client_id.as_ref().map(|c| c.as_str()), Some(client_id.as_str()));

        // Now it authenticates (the made-up code is what is wrong) and
        // starts logins.
        let (status, answer) = token_request(&app, &client_id, &secret).await;
        assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_grant")), "{backend:?}: {answer}");
        let (status, to_login) = authorize(&app, &client_id).await;
        assert!(to_login, "{backend:?}: {status}");
    }
}

#[tokio::test]
async fn the_admin_api_lists_the_registrations_held_for_approval_a_page_at_a_time() {
    for backend in backends() {
        let app = TestApp::spawn_holding_registrations(backend).await;
        let mut held = Vec::new();
        for n in 0..5 {
            let body = json!({"redirect_uris": ["https://f.example/cb"], "client_name": format!("Held {n}")});
            let (status, registered) = app.register(Some(INITIAL), &body).await;
            assert_eq!(status, 201, "{backend:?}: {registered}");
            held.push(registered["client_id"].as_str().unwrap().to_owned());
        }
        let approved = held.remove(2);
        let response = app
            .http()
            .post(app.url(&format!("/admin/v1/clients/{approved}/approve")))
            .bearer_auth(portico_tests::ADMIN_TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{backend:?}");
        held.sort();
        let all: Vec<String> = app
            .store
            .list_clients(portico_storage::KeyPage::ALL, None)
            .await
            .unwrap()
            .into_iter()
            .map(|c| c.client_id.as_str().to_owned())
            .collect();
        let others: Vec<String> = all.iter().filter(|id| !held.contains(id)).cloned().collect();
        assert!(others.contains(&approved) && others.len() >= 2, "{backend:?}: the demo's and the approved one");

        let path = "/admin/v1/clients?awaitingApproval=true";
        let read = crate::admin_api::pages(&app, path, "clients", "clientId", 3).await;
        assert_eq!(read.len(), 2, "{backend:?}: pages of 3 and 1: {read:?}");
        assert_eq!(read.concat(), held, "{backend:?}: the held ones, once each, by id");
        let path = "/admin/v1/clients?awaitingApproval=false";
        let read = crate::admin_api::pages(&app, path, "clients", "clientId", 2).await;
        assert_eq!(read.concat(), others, "{backend:?}: every other client, once each, by id");
        let read = crate::admin_api::pages(&app, "/admin/v1/clients", "clients", "clientId", 200).await;
        assert_eq!(read.concat(), all, "{backend:?}: without the filter, every client");

        for query in ["awaitingApproval=yes", "awaitingApproval=true&awaitingApproval=false"] {
            let url = format!("{}?{query}", app.url("/admin/v1/clients"));
            let response = app.http().get(url).bearer_auth(portico_tests::ADMIN_TOKEN).send().await.unwrap();
            let status = response.status().as_u16();
            let body: Value = response.json().await.unwrap();
            assert_eq!((status, body["code"].as_str()), (400, Some("bad_request")), "{backend:?} {query}: {body}");
            assert!(body["message"].as_str().unwrap().contains("awaitingApproval"), "{backend:?} {query}: {body}");
        }
    }
}

#[tokio::test]
async fn registrations_are_not_held_unless_the_bank_says_so() {
    let app = spawn(portico_tests::Backend::Sqlite).await;
    let (status, registered) = app.register(Some(INITIAL), &json!({"redirect_uris": ["https://f.example/cb"]})).await;
    assert_eq!(status, 201, "{registered}");
    let client_id = registered["client_id"].as_str().unwrap();
    let stored = app.store.find_client(&client_id.into()).await.unwrap().unwrap();
    assert!(!stored.awaiting_approval);
    let secret = registered["client_secret"].as_str().unwrap();
    let (status, answer) = token_request(&app, client_id, secret).await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_grant")), "{answer}");
}

/// OpenID Connect Registration §2's `token_endpoint_auth_signing_alg`:
/// kept and answered for the assertion methods, refused where the method
/// does not sign with it, ignored for a method that sends no assertion.
#[tokio::test]
async fn a_client_registers_the_one_algorithm_of_its_assertions() {
    for backend in backends() {
        let app = spawn(backend).await;
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        let with = |method: &str, alg: &str| {
            let mut metadata = json!({"redirect_uris": ["https://fintech.example/cb"],
                                      "token_endpoint_auth_method": method, "token_endpoint_auth_signing_alg": alg});
            if method == "private_key_jwt" {
                metadata["jwks"] = json!({"keys": [key.jwk()]});
            }
            metadata
        };
        for (method, alg, answered) in [
            ("private_key_jwt", "ES256", Some("ES256")),
            ("private_key_jwt", "Ed25519", Some("EdDSA")),
            ("client_secret_jwt", "HS256", Some("HS256")),
            ("client_secret_basic", "ES256", None),
        ] {
            let (status, body) = app.register(Some(INITIAL), &with(method, alg)).await;
            assert_eq!(status, 201, "{backend:?} {method} {alg}: {body}");
            assert_eq!(
                body["token_endpoint_auth_signing_alg"].as_str(),
                answered,
                "{backend:?} {method} {alg}: {body}"
            );
            let client_id = body["client_id"].as_str().unwrap();
            let stored = app.store.find_client(&client_id.into()).await.unwrap().unwrap();
            let kept = stored.security.token_endpoint_auth_signing_alg.map(|alg| alg.as_str());
            assert_eq!(kept, answered, "{backend:?} {method} {alg}");
        }
        let before = client_count(&app).await;
        for (method, alg) in [
            ("private_key_jwt", "HS256"),
            ("client_secret_jwt", "ES256"),
            ("private_key_jwt", "none"),
            ("private_key_jwt", "es256"),
        ] {
            let (status, body) = app.register(Some(INITIAL), &with(method, alg)).await;
            assert_eq!(
                (status, body["error"].as_str()),
                (400, Some("invalid_client_metadata")),
                "{backend:?} {method} {alg}: {body}"
            );
            let description = body["error_description"].as_str().unwrap();
            assert!(
                description.contains("token_endpoint_auth_signing_alg"),
                "{backend:?} {method} {alg}: {description}"
            );
        }
        assert_eq!(client_count(&app).await, before, "{backend:?}: nothing registered");
    }
}

/// A client's name is what the login and consent pages tell the user they
/// are signing in to, and a third party registers it itself: a name with
/// a direction-changing, invisible or control character (`Bank` + U+202E +
/// `lave`, shown as «Bankeval») is refused, by registration and the admin
/// API alike, and nothing is registered.
#[tokio::test]
async fn a_client_name_that_hides_or_turns_its_text_is_refused() {
    for backend in backends() {
        let app = spawn(backend).await;
        let before = client_count(&app).await;
        for (member, name) in
            [("client_name", "Bank\u{202e}lave"), ("client_name#ru", "Банк\u{200b}"), ("client_name#en", "Bank\u{7}")]
        {
            let metadata = json!({"redirect_uris": ["https://fintech.example/cb"], member: name});
            let (status, body) = app.register(Some(INITIAL), &metadata).await;
            assert_eq!(
                (status, body["error"].as_str()),
                (400, Some("invalid_client_metadata")),
                "{backend:?} {member}: {body}"
            );
            let description = body["error_description"].as_str().unwrap();
            assert!(description.starts_with("client_name: character U+"), "{backend:?} {member}: {description}");
        }
        let response = app
            .admin_create_client(&json!({"clientId": "spoof", "redirectUris": ["https://rp.example/cb"],
                                         "nameEn": "Bank\u{2066}"}))
            .await;
        assert_eq!(response.status(), 400, "{backend:?}");
        let problem: Value = response.json().await.unwrap();
        assert_eq!(problem["problems"][0]["place"], "nameEn", "{backend:?}: {problem}");
        assert_eq!(client_count(&app).await, before, "{backend:?}: nothing registered");

        // Names of any script, with punctuation and symbols, are names.
        let metadata = json!({"redirect_uris": ["https://fintech.example/cb"],
                              "client_name": "Fintech Pay 🛒", "client_name#ru": "ООО «Финтех» — онлайн"});
        let (status, body) = app.register(Some(INITIAL), &metadata).await;
        assert_eq!(status, 201, "{backend:?}: {body}");
    }
}

/// One `client_name` makes both the Russian and the English name: a
/// problem with it is said once, not once per language, and a native
/// app's registration (`application_type` `native`, a loopback address)
/// is taken.
#[tokio::test]
async fn a_problem_of_the_one_client_name_is_said_once() {
    for backend in backends() {
        let app = spawn(backend).await;
        let before = client_count(&app).await;
        let long = "x".repeat(201);
        for name in ["", "Bank\u{202e}lave", long.as_str()] {
            let metadata = json!({"redirect_uris": ["https://fintech.example/cb"], "client_name": name});
            let (status, body) = app.register(Some(INITIAL), &metadata).await;
            assert_eq!(status, 400, "{backend:?} {name:?}: {body}");
            let description = body["error_description"].as_str().unwrap();
            assert!(description.starts_with("client_name: "), "{backend:?} {name:?}: {description}");
            assert_eq!(description.matches("client_name").count(), 1, "{backend:?} {name:?}: said once: {description}");
        }
        assert_eq!(client_count(&app).await, before, "{backend:?}: nothing registered");

        let native = json!({"redirect_uris": ["http://127.0.0.1/callback"], "application_type": "native"});
        let (status, body) = app.register(Some(INITIAL), &native).await;
        assert_eq!(status, 201, "{backend:?}: {body}");
    }
}

/// RFC 7592 §2: a request for a registration that no longer exists is
/// `401 invalid_token`, however it raced the removal. 32 removals of one
/// registration at once remove it once and refuse 31 that way; replacements
/// racing removals are each kept (200) or refused the same way — never
/// `400 invalid_client_metadata` "there is no client", which requests that
/// passed the token check before the removal committed were answered.
#[tokio::test]
async fn requests_racing_the_removal_of_a_registration_are_refused_as_the_rfc_says() {
    let metadata = json!({
        "redirect_uris": ["https://fintech.example/cb"],
        "client_name": "Fintech",
        "token_endpoint_auth_method": "client_secret_basic",
    });
    for backend in backends() {
        let app = spawn(backend).await;
        let before = client_count(&app).await;
        for replacements in [0, 16] {
            let (status, registered) = app.register(Some(INITIAL), &metadata).await;
            assert_eq!(status, 201, "{backend:?}: {registered}");
            let client_id = registered["client_id"].as_str().unwrap().to_owned();
            let token = registered["registration_access_token"].as_str().unwrap().to_owned();
            let uri = registered["registration_client_uri"].as_str().unwrap().to_owned();
            let mut replacement = metadata.clone();
            replacement["client_id"] = client_id.clone().into();
            let mut requests = tokio::task::JoinSet::new();
            for i in 0..32 {
                let request = if i % 2 == 1 && i / 2 < replacements {
                    app.http().put(&uri).bearer_auth(&token).json(&replacement)
                } else {
                    app.http().delete(&uri).bearer_auth(&token)
                };
                let removal = i % 2 == 0 || i / 2 >= replacements;
                requests.spawn(async move {
                    let response = request.send().await.unwrap();
                    let status = response.status().as_u16();
                    let body: Value = response.json().await.unwrap_or(Value::Null);
                    (removal, status, body["error"].as_str().map(str::to_owned))
                });
            }
            let answers = requests.join_all().await;
            let count = |removal: bool, status: u16| answers.iter().filter(|a| a.0 == removal && a.1 == status).count();
            let refused = answers.iter().filter(|a| a.1 == 401 && a.2.as_deref() == Some("invalid_token")).count();
            let removals = 32 - replacements;
            assert_eq!(
                (count(true, 204), count(true, 401)),
                (1, removals - 1),
                "{backend:?}, {replacements} replacements: {answers:?}"
            );
            assert_eq!(count(false, 200) + count(false, 401), replacements, "{backend:?}: {answers:?}");
            assert_eq!(refused, answers.iter().filter(|a| a.1 == 401).count(), "{backend:?}: {answers:?}");
            assert!(app.store.find_client(&client_id.as_str().into()).await.unwrap().is_none(), "{backend:?}");
        }
        assert_eq!(client_count(&app).await, before, "{backend:?}");
    }
}
