//! Whatever arrives, no endpoint answers 5xx, and bad input changes nothing.
//! Requests are generated from a fixed seed, so a failure reproduces.

use portico_tests::{TestApp, backends};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
    fn value(&mut self) -> String {
        match self.next() % 8 {
            0 => String::new(),
            1 => "x".repeat((self.next() % 5000) as usize),
            2 => "%00%ff%fe\u{0}\u{202e}".to_owned(),
            3 => "a.b.c".to_owned(),
            4 => "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.".to_owned(),
            5 => "Иван Петров 🙂".to_owned(),
            6 => (self.next() as i64).to_string(),
            _ => format!("{:x}", self.next()),
        }
    }
}

const PARAMS: [&str; 16] = [
    "grant_type",
    "code",
    "code_verifier",
    "redirect_uri",
    "refresh_token",
    "client_id",
    "client_secret",
    "scope",
    "token",
    "token_type_hint",
    "response_type",
    "state",
    "code_challenge",
    "code_challenge_method",
    "_csrf",
    "principal",
];
const CONTENT_TYPES: [&str; 5] =
    ["application/x-www-form-urlencoded", "application/json", "text/plain", "multipart/form-data", ""];

fn form(rng: &mut Rng) -> String {
    let mut pairs = form_urlencoded::Serializer::new(String::new());
    for _ in 0..(rng.next() % 8) {
        let name = rng.pick(&PARAMS);
        let value = rng.value();
        pairs.append_pair(name, &value);
    }
    pairs.finish()
}

#[tokio::test]
async fn generated_garbage_never_gets_a_server_error_and_changes_nothing() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let tokens = app.tokens_for("ivan", "ivan-password").await;
        let clients = app.store.list_clients(portico_storage::KeyPage::ALL, None).await.unwrap();
        let users = app.store.list_users().await.unwrap();
        let audit = app.store.recent_audit(10_000).await.unwrap().len();
        let http = app.http();
        let mut rng = Rng(0x5eed_1234_abcd_0042);

        for round in 0..1000 {
            let body = form(&mut rng);
            let content_type = rng.pick(&CONTENT_TYPES);
            let cookie = format!(
                "authentication_flow={}; XSRF-TOKEN={}; login_client_entry={}; error_page_details={}",
                rng.value().replace([';', ' '], ""),
                rng.value().replace([';', ' '], ""),
                rng.value().replace([';', ' '], ""),
                rng.value().replace([';', ' '], "")
            );
            let authorization = match rng.next() % 4 {
                0 => format!("Basic {}", rng.value()),
                1 => format!("Bearer {}", rng.value()),
                2 => rng.value(),
                _ => String::new(),
            };
            let (method, path) = match rng.next() % 10 {
                0 => ("POST", "/oauth2/token".to_owned()),
                1 => ("POST", "/oauth2/revoke".to_owned()),
                2 => ("GET", format!("/oauth2/authorize?{body}")),
                3 => ("GET", "/oauth2/token/liveness".to_owned()),
                4 => ("GET", "/oauth2/userinfo".to_owned()),
                5 => ("POST", "/login".to_owned()),
                6 => ("GET", "/login".to_owned()),
                7 => ("GET", "/error".to_owned()),
                8 => ("PATCH", format!("/login/user-settings/locale?{body}")),
                _ => ("GET", "/login/restart".to_owned()),
            };
            let mut request = match method {
                "POST" => http.post(app.url(&path)).body(body.clone()),
                "PATCH" => http.patch(app.url(&path)),
                _ => http.get(app.url(&path)),
            };
            if rng.next().is_multiple_of(3) {
                let token = rng.value().replace(['\r', '\n', '\0'], "");
                if let Ok(value) = reqwest::header::HeaderValue::from_str(&token) {
                    request = request.header("x-xsrf-token", value);
                }
            }
            if !content_type.is_empty() {
                request = request.header("content-type", content_type);
            }
            if let Ok(value) = reqwest::header::HeaderValue::from_str(&authorization)
                && !authorization.is_empty()
            {
                request = request.header("authorization", value);
            }
            if let Ok(value) = reqwest::header::HeaderValue::from_str(&cookie) {
                request = request.header("cookie", value);
            }
            let status = request.send().await.unwrap().status();
            assert!(!status.is_server_error(), "{backend:?} round {round}: {method} {path} -> {status}");
        }

        assert_eq!(app.store.list_clients(portico_storage::KeyPage::ALL, None).await.unwrap(), clients, "{backend:?}");
        assert_eq!(app.store.list_users().await.unwrap(), users);
        assert_eq!(app.store.recent_audit(10_000).await.unwrap().len(), audit, "nothing was audited: nothing happened");
        assert_eq!(app.liveness(&tokens.access_token).await, 200, "the real token is untouched");
    }
}

/// Regression: PostgreSQL text cannot hold NUL, so a NUL anywhere a value
/// reaches storage once gave 500. Every such parameter is now malformed.
#[tokio::test]
async fn a_nul_character_is_malformed_input_everywhere() {
    use base64::Engine as _;
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let http = app.http();
        let pkce = portico_tests::Pkce::new();

        let response = http.get(app.authorize_url(&pkce, &[("client_id", Some("demo\0app"))])).send().await.unwrap();
        assert_eq!(response.status(), 400, "{backend:?}");
        assert_eq!(response.text().await.unwrap(), "OAuth 2.0 Parameter: client_id");
        let response = http.get(app.authorize_url(&pkce, &[("nonce", Some("n\0"))])).send().await.unwrap();
        assert_eq!(portico_tests::location_param(&response, "error").as_deref(), Some("invalid_request"));

        let form =
            [("grant_type", "refresh_token"), ("refresh_token", "x"), ("client_id", "a\0b"), ("client_secret", "s")];
        let response = http.post(app.url("/oauth2/token")).form(&form).send().await.unwrap();
        assert_eq!(response.status(), 400);
        let basic = base64::engine::general_purpose::STANDARD.encode("demo\0app:secret-secret-secret");
        let response = http
            .post(app.url("/oauth2/token"))
            .header("authorization", format!("Basic {basic}"))
            .form(&[("grant_type", "refresh_token"), ("refresh_token", "x")])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401);

        let browser = app.browser();
        browser.get(app.authorize_url(&pkce, &[])).send().await.unwrap();
        let page = browser.get(app.url("/login")).send().await.unwrap().text().await.unwrap();
        let view = portico_tests::view_data(&page);
        let csrf = view["pageData"]["authenticationFlowContext"]["csrf"].as_str().unwrap();
        let form = [("_csrf", csrf), ("principal", "iv\0an"), ("credentials", "ivan-password")];
        let response = browser.post(app.url("/login")).form(&form).send().await.unwrap();
        assert_eq!(response.status(), 303);
        assert_eq!(portico_tests::location(&response), "/login", "a failed login, not a server error");
    }
}

/// RFC 6749 §5.2 (and §4.1.2.1, RFC 6750 §3): an `error_description`
/// holds only `%x20-21 / %x23-5B / %x5D-7E`. Portico's messages repeat
/// what a client sent (an assertion's or a proof's `alg`, a registered
/// address) and cite sections with `§`; every OAuth error answer keeps to
/// the set, short, and still says what was wrong.
#[tokio::test]
async fn oauth_error_descriptions_keep_to_the_characters_rfc_6749_allows() {
    use portico_crypto::jwt::{Algorithm, SigningKey};
    use portico_tests::{demo, jws};
    use serde_json::{Value, json};

    const INITIAL: &str = "the-initial-access-token-0123456789";
    let hostile = format!("Ø\"\\\u{202e}{}", "x".repeat(5_000));
    let check = |case: &str, body: &Value, says: &str| {
        let description = body["error_description"].as_str().unwrap_or_else(|| panic!("{case}: {body}"));
        let outside: Vec<char> =
            description.chars().filter(|c| !portico_model::text::is_description_char(*c)).collect();
        let shown: String = description.chars().take(200).collect();
        assert!(outside.is_empty(), "{case}: {outside:?} in {shown}");
        assert!(description.len() <= portico_model::text::MAX_DESCRIPTION_CHARS + 3, "{case}: {description}");
        assert!(description.contains(says), "{case}: {description}");
    };
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.registration.initial_access_token = Some(INITIAL.to_owned());
            c.notifications.allow_insecure_callbacks = Some(false);
            // Certificates reach it, as a fapi-ru client's must.
            c.mtls.certificate_header = Some("x-client-cert".into());
            c.mtls.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()];
        })
        .await;
        let now = {
            use portico_model::clock::Clock as _;
            app.clock.now().unix_timestamp()
        };
        let http = app.http();

        // A client assertion whose alg is hostile text.
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        let created = app
            .admin_create_client(&json!({
                "clientId": "fintech", "redirectUris": ["https://rp.example/cb"],
                "tokenEndpointAuthMethod": "private_key_jwt", "jwks": {"keys": [key.jwk()]},
            }))
            .await;
        assert_eq!(created.status(), 201, "{backend:?}");
        let pair = app.token_pair_for("ivan", "fintech").await;
        let claims = json!({"iss": "fintech", "sub": "fintech", "aud": app.base, "exp": now + 60,
                            "jti": uuid::Uuid::new_v4().to_string()});
        let assertion = jws::sign(&key, &json!({"alg": hostile, "typ": "JWT"}), &claims);
        let response = app.refresh_by_assertion(&pair.refresh_token, &assertion).await;
        assert_eq!(response.status(), 401, "{backend:?}");
        check(
            &format!("{backend:?} assertion"),
            &response.json().await.unwrap(),
            "the client assertion is signed with",
        );

        // A DPoP proof whose alg is hostile text.
        let demo_pair = app.token_pair("ivan").await;
        let proof = jws::dpop_proof(&key, &hostile, &app, "POST", &app.url("/oauth2/token"), None);
        let response = http
            .post(app.url("/oauth2/token"))
            .basic_auth(demo::CLIENT_ID, Some(demo::CLIENT_SECRET))
            .header("dpop", proof)
            .form(&[("grant_type", "refresh_token"), ("refresh_token", demo_pair.refresh_token.as_str())])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{backend:?}");
        check(&format!("{backend:?} proof"), &response.json().await.unwrap(), "the DPoP proof is signed with");

        // Registration (RFC 7591 §3.2.2: ASCII): an address in Cyrillic
        // with quotes, another scheme, and a profile's rule citing FAPI.
        let before = app.store.list_clients(portico_storage::KeyPage::ALL, None).await.unwrap().len();
        for (case, uris, profile, says) in [
            ("idn", json!(["https://банк.рф/cb#\"x\""]), "standard", "must not have a fragment"),
            ("scheme", json!(["ftp://rp.example/cb"]), "standard", "is not allowed"),
            ("profile", json!(["http://127.0.0.1/cb"]), "fapi-ru", "Baseline section 5.2.2"),
        ] {
            let metadata = json!({"redirect_uris": uris, "security_profile": profile,
                                  "token_endpoint_auth_method": "private_key_jwt", "jwks": {"keys": [key.jwk()]}});
            let (status, body) = app.register(Some(INITIAL), &metadata).await;
            assert_eq!(
                (status, body["error"].as_str()),
                (400, Some("invalid_redirect_uri")),
                "{backend:?} {case}: {body}"
            );
            check(&format!("{backend:?} registration {case}"), &body, says);
        }
        assert_eq!(
            app.store.list_clients(portico_storage::KeyPage::ALL, None).await.unwrap().len(),
            before,
            "{backend:?}: nothing registered"
        );
    }
}
