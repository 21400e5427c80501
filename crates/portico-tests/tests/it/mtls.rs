//! Certificate-bound access tokens (RFC 8705 §3) on both backends, with the
//! client certificate passed by a TLS terminator in `x-client-cert`
//! (URL-encoded PEM, as nginx's `$ssl_client_escaped_cert`): a client
//! registered with `tls_client_certificate_bound_access_tokens` gets
//! tokens bound to its certificate (`cnf.x5t#S256`), refused without one
//! and spending nothing; every protected resource takes such a token only
//! with that very certificate; the header is believed only from a trusted
//! proxy, and a malformed or huge one is refused with its reason.

use portico_tests::{Pkce, TestApp, backends, demo, jwt_claims};
use serde_json::{Value, json};

const HEADER: &str = "x-client-cert";

/// A client certificate as the terminator passes it, and its thumbprint.
struct Certificate {
    escaped: String,
    thumbprint: String,
}

impl Certificate {
    fn new(name: &str) -> Self {
        let made = portico_tests::certificates::TestCertificate::new(name);
        Self { escaped: made.escaped, thumbprint: made.thumbprint }
    }
}

async fn spawn(backend: portico_tests::Backend, trusted: &str) -> TestApp {
    spawn_with(backend, trusted, |_| {}).await
}

async fn spawn_with(
    backend: portico_tests::Backend,
    trusted: &str,
    configure: impl FnOnce(&mut portico_server::config::Config),
) -> TestApp {
    let trusted = trusted.parse().unwrap();
    let app = TestApp::spawn_with(backend, |c| {
        c.mtls.certificate_header = Some(HEADER.into());
        c.mtls.trusted_proxies = vec![trusted];
        configure(c);
    })
    .await;
    set_rule(&app, true).await;
    app
}

/// Sets the demo client's `tls_client_certificate_bound_access_tokens`
/// through the admin API.
async fn set_rule(app: &TestApp, bound: bool) {
    let patch = json!({ "tlsClientCertificateBoundAccessTokens": bound });
    let url = app.url(&format!("/admin/v1/clients/{}", demo::CLIENT_ID));
    let response = app.http().patch(url).bearer_auth(portico_tests::ADMIN_TOKEN).json(&patch).send().await.unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
}

/// The token endpoint with `form` (the demo client's secret added), and
/// the certificate header's value when given.
async fn token(app: &TestApp, form: &[(&str, &str)], certificate: Option<&str>) -> (u16, Value) {
    let mut form = form.to_vec();
    form.extend([("client_id", demo::CLIENT_ID), ("client_secret", demo::CLIENT_SECRET)]);
    let mut request = app.http().post(app.url("/oauth2/token")).form(&form);
    if let Some(value) = certificate {
        request = request.header(HEADER, value);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

/// A code of the demo client after ivan's login, for its grant form.
struct DemoCode {
    code: String,
    pkce: Pkce,
    redirect_uri: String,
}

impl DemoCode {
    async fn new(app: &TestApp) -> Self {
        let pkce = Pkce::new();
        let code = app.login_for_code(&app.browser(), &pkce, "ivan", "ivan-password").await;
        Self { code, pkce, redirect_uri: app.redirect_uri() }
    }

    /// The `authorization_code` grant form (without client credentials).
    fn grant(&self) -> [(&str, &str); 4] {
        [
            ("grant_type", "authorization_code"),
            ("code", &self.code),
            ("code_verifier", &self.pkce.verifier),
            ("redirect_uri", &self.redirect_uri),
        ]
    }
}

async fn get(app: &TestApp, path: &str, access: &str, id_token: Option<&str>, certificate: Option<&str>) -> u16 {
    let mut request = app.http().get(app.url(path)).bearer_auth(access);
    if let Some(id_token) = id_token {
        request = request.header("id-token", id_token);
    }
    if let Some(value) = certificate {
        request = request.header(HEADER, value);
    }
    request.send().await.unwrap().status().as_u16()
}

#[tokio::test]
async fn tokens_are_bound_to_the_certificate_and_taken_only_with_it() {
    for backend in backends() {
        let app = spawn(backend, "127.0.0.1/32").await;
        let mine = Certificate::new("fintech.example");
        let code = DemoCode::new(&app).await;
        let grant = code.grant();

        // Without a certificate: refused, and the code is not spent.
        let (status, refused) = token(&app, &grant, None).await;
        assert_eq!((status, refused["error"].as_str()), (400, Some("invalid_request")), "{backend:?}: {refused}");
        assert!(refused["error_description"].as_str().unwrap().contains("mutual TLS"), "{refused}");
        let (status, garbage) = token(&app, &grant, Some("not%20a%20certificate")).await;
        assert_eq!(status, 400, "{backend:?}: {garbage}");
        assert!(garbage["error_description"].as_str().unwrap().contains("PEM"), "{garbage}");
        let huge = "A".repeat(17 * 1024);
        let (status, huge) = token(&app, &grant, Some(&huge)).await;
        assert_eq!(status, 400, "{backend:?}: {huge}");
        assert!(huge["error_description"].as_str().unwrap().contains("larger than"), "{huge}");

        let (status, tokens) = token(&app, &grant, Some(&mine.escaped)).await;
        assert_eq!(status, 200, "{backend:?}: the code still redeems: {tokens}");
        assert_eq!(tokens["token_type"], "Bearer");
        let access = tokens["access_token"].as_str().unwrap().to_owned();
        let id_token = tokens["id_token"].as_str().unwrap().to_owned();
        assert_eq!(jwt_claims(&access)["cnf"], json!({ "x5t#S256": mine.thumbprint }), "{backend:?}");

        // Every resource: only over the same certificate.
        let other = Certificate::new("other.example");
        for (path, id_token) in
            [("/oauth2/userinfo", None), ("/oauth2/token/liveness", None), ("/api/v1/permissions", Some(&id_token))]
        {
            let id_token = id_token.map(String::as_str);
            assert_eq!(get(&app, path, &access, id_token, Some(&mine.escaped)).await, 200, "{backend:?} {path}");
            assert_eq!(get(&app, path, &access, id_token, None).await, 401, "{backend:?} {path}: no certificate");
            let another = get(&app, path, &access, id_token, Some(&other.escaped)).await;
            assert_eq!(another, 401, "{backend:?} {path}: another certificate");
        }

        // Introspection names the binding.
        let introspected = app.introspect_as_demo(&access).await;
        assert_eq!(introspected["cnf"], json!({ "x5t#S256": mine.thumbprint }), "{backend:?}");
        assert_eq!(introspected["token_type"], "Bearer");

        // A refresh binds the new token to the certificate it came over;
        // without one it is refused and the refresh token is not spent.
        let refresh = tokens["refresh_token"].as_str().unwrap();
        let grant = [("grant_type", "refresh_token"), ("refresh_token", refresh)];
        let (status, _) = token(&app, &grant, None).await;
        assert_eq!(status, 400, "{backend:?}");
        let (status, refreshed) = token(&app, &grant, Some(&other.escaped)).await;
        assert_eq!(status, 200, "{backend:?}: {refreshed}");
        let access = refreshed["access_token"].as_str().unwrap();
        assert_eq!(jwt_claims(access)["cnf"]["x5t#S256"], json!(other.thumbprint));
        assert_eq!(get(&app, "/oauth2/token/liveness", access, None, Some(&other.escaped)).await, 200);

        // A client without the rule gets bearer tokens, certificate or not.
        set_rule(&app, false).await;
        let code = DemoCode::new(&app).await;
        let grant = code.grant();
        let (status, tokens) = token(&app, &grant, Some(&mine.escaped)).await;
        assert_eq!(status, 200, "{backend:?}: {tokens}");
        assert!(jwt_claims(tokens["access_token"].as_str().unwrap()).get("cnf").is_none(), "{backend:?}");
    }
}

#[tokio::test]
async fn the_header_is_believed_only_from_a_trusted_proxy() {
    for backend in backends() {
        // The tests' requests come from 127.0.0.1, not a trusted address.
        let app = spawn(backend, "10.0.0.0/8").await;
        let mine = Certificate::new("fintech.example");
        let code = DemoCode::new(&app).await;
        let grant = code.grant();
        let (status, refused) = token(&app, &grant, Some(&mine.escaped)).await;
        assert_eq!(status, 400, "{backend:?}: the header from anywhere else is no certificate: {refused}");
        assert!(refused["error_description"].as_str().unwrap().contains("mutual TLS"), "{refused}");
    }
}

/// Discovery offers certificate authentication and certificate-bound
/// tokens only where certificates reach Portico, and registration takes
/// only what discovery offers (RFC 7591 §2): on a server without mutual
/// TLS a client registering them could never get a token. Where they do
/// reach it, a certificate client is registered without a secret (RFC 8705
/// §2: it has no use for one).
#[tokio::test]
async fn discovery_and_registration_offer_certificates_only_where_they_reach_portico() {
    const INITIAL: &str = "the-initial-access-token-0123456789";
    for backend in backends() {
        let plain =
            TestApp::spawn_with(backend, |c| c.registration.initial_access_token = Some(INITIAL.to_owned())).await;
        let metadata: Value = plain.discovery().await;
        assert_eq!(metadata["tls_client_certificate_bound_access_tokens"], false, "{backend:?}");
        let methods = metadata["token_endpoint_auth_methods_supported"].as_array().unwrap();
        assert!(
            !methods.iter().any(|m| m.as_str().unwrap().contains("tls")),
            "{backend:?}: no certificates reach this server: {methods:?}"
        );
        let before = plain.store.list_clients(portico_storage::KeyPage::ALL, None).await.unwrap().len();
        for (member, value, instead) in [
            ("tls_client_certificate_bound_access_tokens", json!(true), "dpop_bound_access_tokens"),
            ("token_endpoint_auth_method", json!("self_signed_tls_client_auth"), "private_key_jwt"),
            ("token_endpoint_auth_method", json!("tls_client_auth"), "private_key_jwt"),
            ("security_profile", json!("fapi-ru"), "mutual TLS"),
        ] {
            let mut body = json!({"redirect_uris": ["https://f.example/cb"], "tls_client_auth_subject_dn": "CN=f"});
            body[member] = value.clone();
            let (status, answer) = plain.register(Some(INITIAL), &body).await;
            let case = format!("{backend:?} {member}={value}: {answer}");
            assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_client_metadata")), "{case}");
            let said = answer["error_description"].as_str().unwrap();
            assert!(said.starts_with(&format!("{member}: ")) && said.contains(instead), "{case}");
        }
        // An unknown method is told the methods this server offers.
        let unknown = json!({"redirect_uris": ["https://f.example/cb"], "token_endpoint_auth_method": "none"});
        let (_, answer) = plain.register(Some(INITIAL), &unknown).await;
        let said = answer["error_description"].as_str().unwrap();
        assert!(
            said.ends_with("is not one of client_secret_basic, client_secret_post, client_secret_jwt, private_key_jwt"),
            "{backend:?}: {said}"
        );
        assert_eq!(
            plain.store.list_clients(portico_storage::KeyPage::ALL, None).await.unwrap().len(),
            before,
            "{backend:?}: nothing registered"
        );
        // Nor does a replacement (RFC 7592) bring them in.
        let (status, registered) =
            plain.register(Some(INITIAL), &json!({"redirect_uris": ["https://f.example/cb"]})).await;
        assert_eq!(status, 201, "{backend:?}: {registered}");
        let mut replacement = registered.clone();
        replacement["tls_client_certificate_bound_access_tokens"] = json!(true);
        let uri = registered["registration_client_uri"].as_str().unwrap();
        let token = registered["registration_access_token"].as_str().unwrap();
        let answer = plain.http().put(uri).bearer_auth(token).json(&replacement).send().await.unwrap();
        assert_eq!(answer.status(), 400, "{backend:?}");
        let client = plain.store.find_client(&registered["client_id"].as_str().unwrap().into()).await.unwrap().unwrap();
        assert!(!client.security.tls_client_certificate_bound_access_tokens, "{backend:?}: unchanged");

        let app =
            spawn_with(backend, "127.0.0.1/32", |c| c.registration.initial_access_token = Some(INITIAL.to_owned()))
                .await;
        let metadata: Value = app.discovery().await;
        assert_eq!(metadata["tls_client_certificate_bound_access_tokens"], true, "{backend:?}");
        let methods = metadata["token_endpoint_auth_methods_supported"].as_array().unwrap();
        assert!(methods.contains(&json!("self_signed_tls_client_auth")), "{backend:?}: {methods:?}");
        assert!(!methods.contains(&json!("tls_client_auth")), "{backend:?}: no authority is trusted: {methods:?}");
        let (status, answer) = app
            .register(
                Some(INITIAL),
                &json!({"redirect_uris": ["https://f.example/cb"], "tls_client_certificate_bound_access_tokens": true}),
            )
            .await;
        assert_eq!(status, 201, "{backend:?}: {answer}");
        assert_eq!(answer["tls_client_certificate_bound_access_tokens"], true);
        let client = app.store.find_client(&answer["client_id"].as_str().unwrap().into()).await.unwrap().unwrap();
        assert!(client.security.tls_client_certificate_bound_access_tokens);
        let pki = json!({"redirect_uris": ["https://f.example/cb"], "token_endpoint_auth_method": "tls_client_auth",
                         "tls_client_auth_subject_dn": "CN=f"});
        let (status, answer) = app.register(Some(INITIAL), &pki).await;
        assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_client_metadata")), "{backend:?}: {answer}");
        assert!(answer["error_description"].as_str().unwrap().contains("no certificate authority"), "{answer}");
        let (_, answer) = app
            .register(
                Some(INITIAL),
                &json!({"redirect_uris": ["https://f.example/cb"], "token_endpoint_auth_method": "none"}),
            )
            .await;
        let said = answer["error_description"].as_str().unwrap();
        assert!(said.ends_with("private_key_jwt, self_signed_tls_client_auth"), "{backend:?}: {said}");
        let (_, jwk) = certificate_with_jwk("f.example");
        let own = json!({"redirect_uris": ["https://f.example/cb"], "jwks": {"keys": [jwk]},
                         "token_endpoint_auth_method": "self_signed_tls_client_auth"});
        let (status, answer) = app.register(Some(INITIAL), &own).await;
        assert_eq!(status, 201, "{backend:?}: {answer}");
        assert!(
            answer.get("client_secret").is_none() && answer.get("client_secret_expires_at").is_none(),
            "{backend:?}: a certificate client has no secret: {answer}"
        );
    }
}

/// The redirect address of the clients registered here.
const RP: &str = "https://rp.example/cb";

/// A code for `client_id` (redirecting to [`RP`], scope `openid`) after
/// ivan's login, and its PKCE pair.
async fn code_for(app: &TestApp, client_id: &str) -> (String, Pkce) {
    let pkce = Pkce::new();
    let mut authorize = url::Url::parse(&app.url("/oauth2/authorize")).unwrap();
    authorize.query_pairs_mut().extend_pairs([
        ("client_id", client_id),
        ("redirect_uri", RP),
        ("response_type", "code"),
        ("scope", "openid"),
        ("state", "st-123"),
        ("code_challenge", pkce.challenge.as_str()),
        ("code_challenge_method", "S256"),
    ]);
    let response = app.login_at(&app.browser(), authorize.as_str(), "ivan", "ivan-password").await;
    (portico_tests::code_from(&response, RP), pkce)
}

/// A P-256 certificate and the public JWK that carries it (`x5c`).
/// The `authorization_code` grant form of a client that authenticates by
/// its certificate (its id only).
fn code_grant<'a>(code: &'a str, pkce: &'a Pkce, client_id: &'a str) -> [(&'static str, &'a str); 4] {
    [("grant_type", "authorization_code"), ("code", code), ("code_verifier", &pkce.verifier), ("client_id", client_id)]
}

fn certificate_with_jwk(name: &str) -> (Certificate, Value) {
    let made = portico_tests::certificates::TestCertificate::new(name);
    let jwk = made.jwk(name);
    (Certificate { escaped: made.escaped, thumbprint: made.thumbprint }, jwk)
}

#[tokio::test]
async fn a_client_authenticates_with_the_certificate_it_registered() {
    for backend in backends() {
        let app = spawn(backend, "127.0.0.1/32").await;
        let (mine, jwk) = certificate_with_jwk("fintech.example");
        let mut without_x5c = jwk.clone();
        without_x5c.as_object_mut().unwrap().remove("x5c");
        let body = |jwk: &Value| {
            json!({
                "clientId": "tls-rp",
                "redirectUris": [RP],
                "tokenEndpointAuthMethod": "self_signed_tls_client_auth",
                "jwks": { "keys": [jwk] },
            })
        };
        let metadata: Value = app.discovery().await;
        let methods = &metadata["token_endpoint_auth_methods_supported"];
        assert!(methods.as_array().unwrap().contains(&json!("self_signed_tls_client_auth")), "{methods}");
        let refused = app.admin_create_client(&body(&without_x5c)).await;
        assert_eq!(refused.status(), 400, "{backend:?}: a key set without a certificate");
        assert!(refused.text().await.unwrap().contains("x5c"));
        let created = app.admin_create_client(&body(&jwk)).await;
        assert_eq!(created.status(), 201, "{backend:?}: {}", created.text().await.unwrap());

        let (code, pkce) = code_for(&app, "tls-rp").await;
        let grant = code_grant(&code, &pkce, "tls-rp");
        let exchange = |certificate: Option<String>| {
            let mut request = app.http().post(app.url("/oauth2/token")).form(&grant);
            if let Some(value) = certificate {
                request = request.header(HEADER, value);
            }
            async move {
                let response = request.send().await.unwrap();
                (response.status().as_u16(), response.json::<Value>().await.unwrap())
            }
        };
        let (status, refused) = exchange(None).await;
        assert_eq!((status, refused["error"].as_str()), (401, Some("invalid_client")), "{backend:?}: {refused}");
        let (other, _) = certificate_with_jwk("other.example");
        let (status, refused) = exchange(Some(other.escaped)).await;
        assert_eq!((status, refused["error"].as_str()), (401, Some("invalid_client")), "{backend:?}: {refused}");
        assert!(refused["error_description"].as_str().unwrap().contains("not one the client registered"));
        let (status, tokens) = exchange(Some(mine.escaped.clone())).await;
        assert_eq!(status, 200, "{backend:?}: the code was not spent by the refusals: {tokens}");

        // The same at introspection, for the client's own token.
        let introspected = app
            .http()
            .post(app.url("/oauth2/introspect"))
            .header(HEADER, &mine.escaped)
            .form(&[("client_id", "tls-rp"), ("token", tokens["access_token"].as_str().unwrap())])
            .send()
            .await
            .unwrap();
        assert_eq!(introspected.status(), 200, "{backend:?}");
        assert_eq!(introspected.json::<Value>().await.unwrap()["active"], true);
        assert!(!mine.thumbprint.is_empty());
    }
}

/// A certificate authority of the bank's, and the certificates it issues.
struct Authority {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    pem: String,
}

impl Authority {
    fn new() -> Self {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let pem = params.self_signed(&key).unwrap().pem();
        Self { issuer: rcgen::Issuer::new(params, key), pem }
    }

    /// A client certificate for `(CN, O, C)`, issued by this authority or,
    /// with `self_signed`, by itself.
    fn issue(&self, cn: &str, self_signed: bool) -> String {
        let mut params = rcgen::CertificateParams::new(Vec::new()).unwrap();
        let mut name = rcgen::DistinguishedName::new();
        name.push(rcgen::DnType::CountryName, "RU");
        name.push(rcgen::DnType::OrganizationName, "Fintech");
        name.push(rcgen::DnType::CommonName, cn);
        params.distinguished_name = name;
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = if self_signed { params.self_signed(&key) } else { params.signed_by(&key, &self.issuer) };
        percent_encoding::utf8_percent_encode(&cert.unwrap().pem(), percent_encoding::NON_ALPHANUMERIC).to_string()
    }
}

#[tokio::test]
async fn a_client_authenticates_with_a_certificate_of_a_trusted_authority_naming_its_subject() {
    for backend in backends() {
        let authority = Authority::new();
        let ca_file = std::env::temp_dir().join(format!("portico-client-ca-{}.pem", uuid::Uuid::new_v4()));
        std::fs::write(&ca_file, &authority.pem).unwrap();
        let app = spawn_with(backend, "127.0.0.1/32", |c| c.mtls.client_ca_file = Some(ca_file.clone())).await;
        let metadata: Value = app.discovery().await;
        let methods = metadata["token_endpoint_auth_methods_supported"].as_array().unwrap();
        assert!(methods.contains(&json!("tls_client_auth")), "{backend:?}: {methods:?}");

        let mut body = json!({
            "clientId": "pki-rp",
            "secret": "a-secret-never-used-by-this-client-0123",
            "redirectUris": [RP],
            "tokenEndpointAuthMethod": "tls_client_auth",
        });
        let refused = app.admin_create_client(&body).await;
        assert_eq!(refused.status(), 400, "{backend:?}: no subject registered");
        assert!(refused.text().await.unwrap().contains("tls_client_auth_subject_dn"));
        body["tlsClientAuthSubjectDn"] = "CN=fintech,O=Fintech,C=RU".into();
        let created = app.admin_create_client(&body).await;
        assert_eq!(created.status(), 201, "{backend:?}: {}", created.text().await.unwrap());

        let (code, pkce) = code_for(&app, "pki-rp").await;
        let grant = code_grant(&code, &pkce, "pki-rp");
        let exchange = |certificate: String| {
            let request = app.http().post(app.url("/oauth2/token")).form(&grant).header(HEADER, certificate);
            async move {
                let response = request.send().await.unwrap();
                (response.status().as_u16(), response.json::<Value>().await.unwrap())
            }
        };
        for (certificate, why) in [
            (authority.issue("other", false), "does not name"),
            (authority.issue("fintech", true), "not one of a trusted authority"),
        ] {
            let (status, refused) = exchange(certificate).await;
            assert_eq!((status, refused["error"].as_str()), (401, Some("invalid_client")), "{backend:?}: {refused}");
            assert!(refused["error_description"].as_str().unwrap().contains(why), "{refused}");
        }
        let (status, tokens) = exchange(authority.issue("fintech", false)).await;
        assert_eq!(status, 200, "{backend:?}: the refusals spent nothing: {tokens}");
        let _ = std::fs::remove_file(&ca_file);
    }
}

/// Portico's own mutual-TLS listener, beside a terminator's header that it
/// must never read.
async fn spawn_listener(backend: portico_tests::Backend) -> TestApp {
    spawn_with(backend, "127.0.0.1/32", |c| c.mtls.listen = Some("127.0.0.1:0".parse().unwrap())).await
}

#[tokio::test]
async fn porticos_own_listener_binds_tokens_to_the_connections_certificate() {
    for backend in backends() {
        let app = spawn_listener(backend).await;
        let mine = portico_tests::certificates::TestCertificate::new("fintech.example");
        let other = portico_tests::certificates::TestCertificate::new("other.example");

        // Discovery names the endpoints under the listener (RFC 8705 §5).
        let metadata: Value = app.discovery().await;
        let aliases = &metadata["mtls_endpoint_aliases"];
        for (name, path) in [
            ("token_endpoint", "/oauth2/token"),
            ("revocation_endpoint", "/oauth2/revoke"),
            ("introspection_endpoint", "/oauth2/introspect"),
            ("pushed_authorization_request_endpoint", "/oauth2/par"),
            ("userinfo_endpoint", "/oauth2/userinfo"),
        ] {
            assert_eq!(aliases[name], app.mtls_url(path), "{backend:?}: {aliases}");
        }

        let code = DemoCode::new(&app).await;
        let mut form = code.grant().to_vec();
        form.extend([("client_id", demo::CLIENT_ID), ("client_secret", demo::CLIENT_SECRET)]);
        let exchange = |client: reqwest::Client, header: Option<&str>| {
            let mut request = client.post(app.mtls_url("/oauth2/token")).form(&form);
            if let Some(value) = header {
                request = request.header(HEADER, value);
            }
            async move {
                let response = request.send().await.unwrap();
                (response.status().as_u16(), response.json::<Value>().await.unwrap_or(Value::Null))
            }
        };
        // No certificate on the connection: a header naming one is not read
        // there, even from the trusted address; nothing is spent.
        let (status, refused) = exchange(app.mtls_http(None), Some(&mine.escaped)).await;
        assert_eq!((status, refused["error"].as_str()), (400, Some("invalid_request")), "{backend:?}: {refused}");
        // The connection's certificate wins over a header naming another.
        let (status, tokens) = exchange(app.mtls_http(Some(&mine)), Some(&other.escaped)).await;
        assert_eq!(status, 200, "{backend:?}: {tokens}");
        let access = tokens["access_token"].as_str().unwrap();
        assert_eq!(jwt_claims(access)["cnf"]["x5t#S256"], mine.thumbprint.as_str(), "{backend:?}");

        // The token is good over a connection with the very certificate,
        // and through the terminator with it; not with another or none.
        let userinfo = |client: reqwest::Client, url: String, header: Option<String>| {
            let mut request = client.get(url).bearer_auth(access);
            if let Some(value) = header {
                request = request.header(HEADER, value);
            }
            async move { request.send().await.unwrap().status().as_u16() }
        };
        let over_tls = app.mtls_url("/oauth2/userinfo");
        assert_eq!(userinfo(app.mtls_http(Some(&mine)), over_tls.clone(), None).await, 200, "{backend:?}");
        assert_eq!(userinfo(app.mtls_http(Some(&other)), over_tls.clone(), None).await, 401, "{backend:?}");
        let forged = Some(mine.escaped.clone());
        assert_eq!(userinfo(app.mtls_http(None), over_tls, forged.clone()).await, 401, "{backend:?}");
        assert_eq!(userinfo(app.http(), app.url("/oauth2/userinfo"), forged).await, 200, "{backend:?}");
    }
}

#[tokio::test]
async fn a_client_authenticates_by_its_certificate_on_porticos_own_listener() {
    for backend in backends() {
        let app = spawn_listener(backend).await;
        let mine = portico_tests::certificates::TestCertificate::new("fintech.example");
        let jwk = mine.jwk("fintech.example");
        let body = json!({
            "clientId": "tls-rp",
            "redirectUris": [RP],
            "tokenEndpointAuthMethod": "self_signed_tls_client_auth",
            "jwks": { "keys": [jwk] },
        });
        let created = app.admin_create_client(&body).await;
        assert_eq!(created.status(), 201, "{backend:?}: {}", created.text().await.unwrap());
        let (code, pkce) = code_for(&app, "tls-rp").await;
        let grant = code_grant(&code, &pkce, "tls-rp");
        let other = portico_tests::certificates::TestCertificate::new("other.example");
        let refused =
            app.mtls_http(Some(&other)).post(app.mtls_url("/oauth2/token")).form(&grant).send().await.unwrap();
        assert_eq!(refused.status(), 401, "{backend:?}: another certificate");
        let response =
            app.mtls_http(Some(&mine)).post(app.mtls_url("/oauth2/token")).form(&grant).send().await.unwrap();
        assert_eq!(response.status(), 200, "{backend:?}: {}", response.text().await.unwrap());
    }
}

/// FAPI 2.0 §5.2 and RFC 9325 §4.2: under TLS 1.2 the listener takes
/// ECDHE with AES-GCM only (the ChaCha20 suites a conformance suite offers
/// as not allowed are refused); under TLS 1.3 any of its suites.
#[tokio::test]
async fn porticos_own_listener_negotiates_under_tls_1_2_the_suites_fapi_allows_only() {
    use rustls::crypto::aws_lc_rs::cipher_suite as suite;
    use rustls::pki_types::pem::PemObject as _;
    let app = spawn_listener(portico_tests::Backend::Sqlite).await;
    let (_, server) = app.mtls.as_ref().expect("the listener");
    let mut roots = rustls::RootCertStore::empty();
    roots.add(rustls::pki_types::CertificateDer::from_pem_slice(server.pem.as_bytes()).unwrap()).unwrap();
    let connects = |offered: rustls::SupportedCipherSuite| {
        let provider = rustls::crypto::CryptoProvider {
            cipher_suites: vec![offered],
            ..rustls::crypto::aws_lc_rs::default_provider()
        };
        let version = match offered {
            rustls::SupportedCipherSuite::Tls12(_) => &rustls::version::TLS12,
            rustls::SupportedCipherSuite::Tls13(_) => &rustls::version::TLS13,
        };
        let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(provider))
            .with_protocol_versions(&[version])
            .unwrap()
            .with_root_certificates(roots.clone())
            .with_no_client_auth();
        let client = reqwest::Client::builder().tls_backend_preconfigured(config).build().unwrap();
        let url = app.mtls_url("/healthz");
        async move { client.get(url).send().await.map(|r| r.status().as_u16()) }
    };
    // The test's server certificate is a P-256 one: the ECDSA suites.
    for allowed in [
        suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        suite::TLS13_AES_128_GCM_SHA256,
        suite::TLS13_AES_256_GCM_SHA384,
        suite::TLS13_CHACHA20_POLY1305_SHA256,
    ] {
        assert_eq!(connects(allowed).await.ok(), Some(200), "{:?} is taken", allowed.suite());
    }
    let refused = connects(suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256).await;
    assert!(refused.is_err(), "TLS 1.2 with ChaCha20-Poly1305 is refused: {refused:?}");
}
