//! Security profiles per client (`security_profile`) on both backends:
//! `fapi2` (FAPI 2.0 Security Profile) and `fapi-ru` (ФАПИ.СЕК advanced)
//! add their rules to a client's own settings. Registration settles the
//! algorithms a profile leaves open and refuses what it forbids; each
//! rule broken at authorize, PAR and the token endpoint is refused with
//! the RFCs' error, naming the profile, and spends nothing; the server's
//! default profile holds third parties that name none; refresh-token
//! rotation is a client setting, off under `fapi2`.

use portico_crypto::jwt::{Algorithm, SigningKey};
use portico_model::clock::Clock as _;
use portico_model::ids::ClientId;
use portico_tests::certificates::TestCertificate;
use portico_tests::{Pkce, TestApp, backends, demo, jwt_claims, location, location_param};
use serde_json::{Value, json};

const RP: &str = "https://rp.example/cb";
const CERTIFICATE_HEADER: &str = "x-client-cert";

/// A server keeping ES256 and PS256 keys beside its RS256 default, and
/// believing client certificates from a terminator on the loopback.
async fn spawn(backend: portico_tests::Backend) -> TestApp {
    TestApp::spawn_with(backend, |c| {
        c.tokens.signing_algorithms = ["ES256", "PS256"].map(String::from).to_vec();
        c.mtls.certificate_header = Some(CERTIFICATE_HEADER.into());
        c.mtls.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()];
    })
    .await
}

/// A third party's `private_key_jwt` client: its keys, one per algorithm.
struct Party {
    client_id: String,
    keys: Vec<SigningKey>,
}

impl Party {
    fn new(client_id: &str, algs: &[Algorithm]) -> Self {
        let keys = algs.iter().map(|alg| SigningKey::generate(*alg).unwrap()).collect();
        Self { client_id: client_id.into(), keys }
    }

    fn key(&self, alg: Algorithm) -> &SigningKey {
        self.keys.iter().find(|key| key.algorithm() == alg).expect("a key of the algorithm")
    }

    /// The admin API's body registering it under `profile`, with `extra`.
    fn body(&self, profile: &str, extra: Value) -> Value {
        let keys: Vec<_> = self.keys.iter().map(SigningKey::jwk).collect();
        let mut body = json!({
            "clientId": self.client_id,
            "redirectUris": [RP],
            "tokenEndpointAuthMethod": "private_key_jwt",
            "jwks": { "keys": keys },
            "securityProfile": profile,
        });
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        body
    }

    async fn register(&self, app: &TestApp, profile: &str) -> Value {
        self.register_with(app, profile, json!({})).await
    }

    /// The same, with `extra` in the admin API's body.
    async fn register_with(&self, app: &TestApp, profile: &str, extra: Value) -> Value {
        let response = app.admin_create_client(&self.body(profile, extra)).await;
        assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
        response.json::<Value>().await.unwrap()["client"].clone()
    }

    /// A client assertion signed with its `alg` key, for the issuer.
    fn assertion(&self, app: &TestApp, alg: Algorithm) -> String {
        self.assertion_for(app, alg, json!(app.base))
    }

    /// A client assertion signed with its `alg` key, with `aud`.
    fn assertion_for(&self, app: &TestApp, alg: Algorithm, aud: Value) -> String {
        let now = app.clock.now().unix_timestamp();
        let claims = json!({
            "iss": self.client_id, "sub": self.client_id, "aud": aud, "iat": now, "exp": now + 60,
            "jti": uuid::Uuid::new_v4().to_string(),
        });
        self.key(alg).sign("JWT", &claims)
    }

    /// The parameters of a good authorization request to `RP`.
    fn params(&self, pkce: &Pkce, extra: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut params: Vec<(String, String)> = [
            ("response_type", "code"),
            ("client_id", self.client_id.as_str()),
            ("redirect_uri", RP),
            ("scope", "openid profile"),
            ("state", "st-profile"),
            ("nonce", "n-profile"),
            ("code_challenge", pkce.challenge.as_str()),
            ("code_challenge_method", "S256"),
        ]
        .iter()
        .chain(extra)
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        params.dedup_by(|a, b| a.0 == b.0);
        params
    }

    /// The same parameters as a request object signed with its `alg` key.
    fn request_object(&self, app: &TestApp, alg: Algorithm, params: &[(String, String)]) -> String {
        self.request_object_with(app, alg, params, |_| {})
    }

    /// The same, its claims changed by `change` before signing.
    fn request_object_with(
        &self,
        app: &TestApp,
        alg: Algorithm,
        params: &[(String, String)],
        change: impl FnOnce(&mut serde_json::Map<String, Value>),
    ) -> String {
        let now = app.clock.now().unix_timestamp();
        let mut claims = json!({ "iss": self.client_id, "aud": app.base, "nbf": now, "iat": now, "exp": now + 300 });
        for (name, value) in params {
            claims[name] = value.clone().into();
        }
        change(claims.as_object_mut().unwrap());
        self.key(alg).sign("oauth-authz-req+jwt", &claims)
    }

    /// Posts `form` to `path`, authenticated by an assertion of its `alg`
    /// key, with `headers`: the status and the answer.
    async fn post(
        &self,
        app: &TestApp,
        path: &str,
        alg: Algorithm,
        form: &[(String, String)],
        headers: &[(&str, &str)],
    ) -> (u16, Value) {
        self.post_asserted(app, path, self.assertion(app, alg), form, headers).await
    }

    /// Posts `form` to `path`, authenticated by `assertion`, with
    /// `headers`: the status and the answer.
    async fn post_asserted(
        &self,
        app: &TestApp,
        path: &str,
        assertion: String,
        form: &[(String, String)],
        headers: &[(&str, &str)],
    ) -> (u16, Value) {
        let mut form = form.to_vec();
        if !form.iter().any(|(name, _)| name == "client_id") {
            form.push(("client_id".into(), self.client_id.clone()));
        }
        form.extend([
            ("client_assertion_type".into(), "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into()),
            ("client_assertion".into(), assertion),
        ]);
        let mut request = app.http().post(app.url(path)).form(&form);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
    }

    /// Ivan's login at `authorize`: authorize's answer to the client.
    async fn login(&self, app: &TestApp, authorize: &str) -> reqwest::Response {
        app.login_at(&app.browser(), authorize, "ivan", "ivan-password").await
    }

    /// The authorize address carrying only `request_uri` (or `request`).
    fn authorize(&self, app: &TestApp, name: &str, value: &str) -> String {
        let mut url = url::Url::parse(&app.url("/oauth2/authorize")).unwrap();
        url.query_pairs_mut().append_pair("client_id", &self.client_id).append_pair(name, value);
        url.into()
    }
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

/// The code grant's form for `code`.
fn grant(code: &str, pkce: &Pkce) -> Vec<(String, String)> {
    pairs(&[
        ("grant_type", "authorization_code"),
        ("code", code),
        ("code_verifier", &pkce.verifier),
        ("redirect_uri", RP),
    ])
}

/// A DPoP proof for `POST <path>` signed with `key`.
fn proof(app: &TestApp, key: &SigningKey, path: &str) -> String {
    portico_tests::jws::dpop_proof(key, key.algorithm().as_str(), app, "POST", &app.url(path), None)
}

/// A refusal's description, which must name the profile.
fn names_profile(answer: &Value, profile: &str) -> bool {
    answer["error_description"].as_str().is_some_and(|d| d.contains(&format!("profile {profile}")))
}

#[tokio::test]
async fn registration_settles_a_profiles_algorithms_and_refuses_what_it_forbids() {
    for backend in backends() {
        let app = spawn(backend).await;
        // Left open, the algorithms become the profile's first the server
        // keeps (its RS256 default is not a FAPI algorithm).
        let party = Party::new("fapi2-rp", &[Algorithm::Es256]);
        let view = party.register(&app, "fapi2").await;
        assert_eq!(view["securityProfile"], "fapi2", "{backend:?}: {view}");
        for field in ["idTokenSignedResponseAlg", "accessTokenSignedResponseAlg", "authorizationSignedResponseAlg"] {
            assert_eq!(view[field], "ES256", "{backend:?} {field}: {view}");
        }
        assert_eq!(view["userinfoSignedResponseAlg"], Value::Null, "userinfo stays plain JSON");
        assert_eq!(view["refreshTokenRotation"], false, "FAPI 2.0 does not rotate refresh tokens");

        // What a profile forbids, each named.
        let refused = [
            (
                "fapi2",
                json!({ "tokenEndpointAuthMethod": "client_secret_basic", "jwks": null }),
                "tokenEndpointAuthMethod",
            ),
            ("fapi2", json!({ "idTokenSignedResponseAlg": "RS256" }), "idTokenSignedResponseAlg"),
            ("fapi-ru", json!({ "accessTokenSignedResponseAlg": "PS256" }), "accessTokenSignedResponseAlg"),
            ("fapi-ru", json!({ "requestObjectSigningAlg": "PS256" }), "requestObjectSigningAlg"),
            ("fapi-ru", json!({ "tokenEndpointAuthMethod": "self_signed_tls_client_auth" }), "tokenEndpointAuthMethod"),
        ];
        for (i, (profile, extra, field)) in refused.into_iter().enumerate() {
            let mut body = Party::new(&format!("refused-{i}"), &[Algorithm::Es256]).body(profile, extra);
            body.as_object_mut().unwrap().retain(|_, v| !v.is_null());
            let response = app.admin_create_client(&body).await;
            assert_eq!(response.status(), 400, "{backend:?} {profile} {field}");
            let answer: Value = response.json().await.unwrap();
            let named = answer["problems"].as_array().unwrap().iter().any(|p| {
                p["place"] == field && p["message"].as_str().is_some_and(|m| m.contains(&format!("{profile} profile")))
            });
            assert!(named, "{backend:?} {profile}: no problem at {field} naming the profile: {answer}");
            let stored = app.store.find_client(&ClientId::new(format!("refused-{i}"))).await.unwrap();
            assert!(stored.is_none(), "{backend:?}: nothing stored");
        }

        // An operator moving a secret client to a profile is refused, and
        // the client stays as it was.
        let url = app.url(&format!("/admin/v1/clients/{}", demo::CLIENT_ID));
        let admin = app.http().patch(&url).bearer_auth(portico_tests::ADMIN_TOKEN);
        let response = admin.json(&json!({ "securityProfile": "fapi-ru" })).send().await.unwrap();
        assert_eq!(response.status(), 400, "{backend:?}");
        let demo_client = app.store.find_client(&ClientId::new(demo::CLIENT_ID)).await.unwrap().unwrap();
        assert!(demo_client.security.security_profile.is_standard(), "{backend:?}");
    }
}

#[tokio::test]
async fn a_fapi_ru_client_redirects_to_https_addresses_matched_exactly() {
    const LOOPBACK: &str = "http://127.0.0.1/cb";
    const INITIAL: &str = "initial-access-token-of-the-bank-0123";
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.tokens.signing_algorithms = vec!["ES256".into()];
            c.registration.initial_access_token = Some(INITIAL.into());
            // Outside the demo and local development.
            c.notifications.allow_insecure_callbacks = Some(false);
            // Certificates reach it, as a fapi-ru client's must.
            c.mtls.certificate_header = Some("x-client-cert".into());
            c.mtls.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()];
        })
        .await;
        let count = || async { app.store.list_clients(portico_storage::KeyPage::ALL, None).await.unwrap().len() };
        let before = count().await;

        // FAPI 1.0 Baseline §5.2.2-20: https only — at registration, in
        // the admin API and when an operator moves a client to the profile.
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        let metadata = json!({
            "redirect_uris": [RP, LOOPBACK],
            "token_endpoint_auth_method": "private_key_jwt",
            "jwks": { "keys": [key.jwk()] },
            "security_profile": "fapi-ru",
        });
        let (status, answer) = app.register(Some(INITIAL), &metadata).await;
        assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_redirect_uri")), "{backend:?}: {answer}");
        assert!(answer["error_description"].as_str().unwrap().contains("fapi-ru profile"), "{answer}");
        let party = Party::new("loopback-rp", &[Algorithm::Es256]);
        let response = app.admin_create_client(&party.body("fapi-ru", json!({ "redirectUris": [RP, LOOPBACK] }))).await;
        assert_eq!(response.status(), 400, "{backend:?}");
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["problems"][0]["place"], "redirectUris[1]", "{backend:?}: {answer}");
        assert_eq!(count().await, before, "{backend:?}: nothing registered");

        let view = party.register_with(&app, "standard", json!({ "redirectUris": [RP, LOOPBACK] })).await;
        assert_eq!(view["redirectUris"][1], LOOPBACK, "{backend:?}: a standard client may use the loopback");
        let url = app.url("/admin/v1/clients/loopback-rp");
        let admin = app.http().patch(&url).bearer_auth(portico_tests::ADMIN_TOKEN);
        let response = admin.json(&json!({ "securityProfile": "fapi-ru" })).send().await.unwrap();
        assert_eq!(response.status(), 400, "{backend:?}");
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["problems"][0]["place"], "redirectUris[1]", "{backend:?}: {answer}");

        // FAPI 1.0 Baseline §5.2.2-10: a fapi-ru client's address matches
        // exactly, also one stored before the rule (RFC 8252's loopback
        // port rule is for the other profiles).
        let mut stored = app.store.find_client(&ClientId::new("loopback-rp")).await.unwrap().unwrap();
        stored.security.security_profile = portico_model::client::SecurityProfile::FapiRu;
        let written = app.store.update_client(&stored).await.unwrap();
        assert!(matches!(written, portico_storage::Update::Updated), "{backend:?}");
        let pkce = Pkce::new();
        for (redirect_uri, expected) in [("http://127.0.0.1:49152/cb", 400), (LOOPBACK, 303)] {
            let params = party.params(&pkce, &[("response_mode", "jwt"), ("redirect_uri", redirect_uri)]);
            let object = party.request_object(&app, Algorithm::Es256, &params);
            let answer = app.browser().get(party.authorize(&app, "request", &object)).send().await.unwrap();
            assert_eq!(answer.status(), expected, "{backend:?} {redirect_uri}: {}", location(&answer));
        }
    }
}

#[tokio::test]
async fn the_servers_default_profile_holds_third_parties_that_name_none() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.tokens.signing_algorithms = vec!["ES256".into()];
            c.registration.initial_access_token = Some("initial-access-token-of-the-bank-0123".into());
            c.registration.default_security_profile = portico_model::client::SecurityProfile::Fapi2;
        })
        .await;
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        let metadata = json!({
            "redirect_uris": [RP],
            "token_endpoint_auth_method": "private_key_jwt",
            "jwks": { "keys": [key.jwk()] },
        });
        let token = Some("initial-access-token-of-the-bank-0123");
        let (status, registered) = app.register(token, &metadata).await;
        assert_eq!(status, 201, "{backend:?}: {registered}");
        assert_eq!(registered["security_profile"], "fapi2", "{registered}");
        assert_eq!(registered["id_token_signed_response_alg"], "ES256", "{registered}");

        // A third party cannot step down to `standard`, on registration or
        // on a later PUT of its registration.
        let mut standard = metadata.clone();
        standard["security_profile"] = "standard".into();
        let (status, refused) = app.register(token, &standard).await;
        assert_eq!((status, refused["error"].as_str()), (400, Some("invalid_client_metadata")), "{refused}");
        assert!(refused["error_description"].as_str().unwrap().contains("security_profile"), "{refused}");
        let client_id = registered["client_id"].as_str().unwrap();
        standard["client_id"] = client_id.into();
        let put = app.http().put(registered["registration_client_uri"].as_str().unwrap());
        let bearer = registered["registration_access_token"].as_str().unwrap();
        let response = put.bearer_auth(bearer).json(&standard).send().await.unwrap();
        assert_eq!(response.status(), 400, "{backend:?}");
        let stored = app.store.find_client(&ClientId::new(client_id)).await.unwrap().unwrap();
        assert_eq!(stored.security.security_profile.as_str(), "fapi2", "{backend:?}");

        // An operator's new client without a profile gets the default too.
        let party = Party::new("operators-rp", &[Algorithm::Es256]);
        let mut body = party.body("-", json!({}));
        body.as_object_mut().unwrap().remove("securityProfile");
        let response = app.admin_create_client(&body).await;
        assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
        let created: Value = response.json().await.unwrap();
        assert_eq!(created["client"]["securityProfile"], "fapi2", "{backend:?}");
    }
}

#[tokio::test]
async fn a_fapi2_client_pushes_binds_its_tokens_and_redeems_its_codes_within_a_minute() {
    for backend in backends() {
        let app = spawn(backend).await;
        let party = Party::new("fapi2-rp", &[Algorithm::Es256, Algorithm::Rs256]);
        party.register(&app, "fapi2").await;
        let pkce = Pkce::new();
        let params = party.params(&pkce, &[]);

        // Not pushed: refused at authorize, in the client's query.
        let mut url = url::Url::parse(&app.url("/oauth2/authorize")).unwrap();
        url.query_pairs_mut().extend_pairs(&params);
        let refused = app.browser().get(url.as_str()).send().await.unwrap();
        assert!(location(&refused).starts_with(RP), "{backend:?}: {}", location(&refused));
        assert_eq!(location_param(&refused, "error").as_deref(), Some("invalid_request"));
        let description = location_param(&refused, "error_description").unwrap();
        assert!(description.contains("pushed") && description.contains("profile fapi2"), "{description}");

        // An RS256 assertion is not a FAPI 2.0 one.
        let (status, answer) = party.post(&app, "/oauth2/par", Algorithm::Rs256, &params, &[]).await;
        assert_eq!((status, answer["error"].as_str()), (401, Some("invalid_client")), "{backend:?}: {answer}");
        assert!(names_profile(&answer, "fapi2"), "{answer}");

        // The issuer alone, as a string, is a FAPI 2.0 assertion's aud: not
        // the endpoint's address, nor a list, though other clients may
        // send those.
        for aud in [json!(app.url("/oauth2/par")), json!(app.url("/oauth2/token")), json!([app.base])] {
            let assertion = party.assertion_for(&app, Algorithm::Es256, aud.clone());
            let (status, answer) = party.post_asserted(&app, "/oauth2/par", assertion, &params, &[]).await;
            assert_eq!(
                (status, answer["error"].as_str()),
                (401, Some("invalid_client")),
                "{backend:?} {aud}: {answer}"
            );
            assert!(names_profile(&answer, "fapi2") && answer["error_description"].as_str().unwrap().contains("aud"));
        }

        let (status, pushed) = party.post(&app, "/oauth2/par", Algorithm::Es256, &params, &[]).await;
        assert_eq!(status, 201, "{backend:?}: {pushed}");
        let done =
            party.login(&app, &party.authorize(&app, "request_uri", pushed["request_uri"].as_str().unwrap())).await;
        let code = location_param(&done, "code").expect("a code");
        assert_eq!(location_param(&done, "iss").as_deref(), Some(app.base.as_str()), "RFC 9207 iss");
        let form = grant(&code, &pkce);

        // An assertion for the token endpoint's address: refused there too,
        // the code not spent.
        let assertion = party.assertion_for(&app, Algorithm::Es256, json!(app.url("/oauth2/token")));
        let (status, answer) = party.post_asserted(&app, "/oauth2/token", assertion, &form, &[]).await;
        assert_eq!((status, answer["error"].as_str()), (401, Some("invalid_client")), "{backend:?}: {answer}");

        // Neither a proof nor a certificate: refused, the code not spent.
        let (status, answer) = party.post(&app, "/oauth2/token", Algorithm::Es256, &form, &[]).await;
        assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_request")), "{backend:?}: {answer}");
        assert!(names_profile(&answer, "fapi2") && answer["error_description"].as_str().unwrap().contains("DPoP"));
        // A proof of RS256: not a FAPI 2.0 algorithm.
        let rsa = SigningKey::generate(Algorithm::Rs256).unwrap();
        let headers = [("dpop", proof(&app, &rsa, "/oauth2/token"))];
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, answer) = party.post(&app, "/oauth2/token", Algorithm::Es256, &form, &headers).await;
        assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_dpop_proof")), "{backend:?}: {answer}");
        assert!(names_profile(&answer, "fapi2"), "{answer}");

        let dpop_key = SigningKey::generate(Algorithm::Es256).unwrap();
        let with_proof = |path: &str| vec![("dpop".to_owned(), proof(&app, &dpop_key, path))];
        let headers = with_proof("/oauth2/token");
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let (status, tokens) = party.post(&app, "/oauth2/token", Algorithm::Es256, &form, &headers).await;
        assert_eq!(status, 200, "{backend:?}: {tokens}");
        assert_eq!(tokens["token_type"], "DPoP");
        assert!(jwt_claims(tokens["access_token"].as_str().unwrap())["cnf"]["jkt"].is_string());

        // No rotation: the refresh token is answered again and stays good.
        let refresh_token = tokens["refresh_token"].as_str().unwrap();
        for round in 0..2 {
            let form = pairs(&[("grant_type", "refresh_token"), ("refresh_token", refresh_token)]);
            let headers = with_proof("/oauth2/token");
            let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let (status, refreshed) = party.post(&app, "/oauth2/token", Algorithm::Es256, &form, &headers).await;
            assert_eq!(status, 200, "{backend:?} round {round}: {refreshed}");
            assert_eq!(refreshed["refresh_token"].as_str(), Some(refresh_token), "{backend:?} round {round}");
        }

        // Codes live 60 s under FAPI 2.0, though the server gives others 5
        // min; a signed answer (JARM) that carries one lives as long.
        let pkce = Pkce::new();
        let params = party.params(&pkce, &[("response_mode", "jwt")]);
        let (_, pushed) = party.post(&app, "/oauth2/par", Algorithm::Es256, &params, &[]).await;
        let done =
            party.login(&app, &party.authorize(&app, "request_uri", pushed["request_uri"].as_str().unwrap())).await;
        let signed = jwt_claims(&location_param(&done, "response").expect("a signed answer"));
        assert_eq!(signed["exp"], app.clock.now().unix_timestamp() + 60, "{backend:?}: {signed}");
        let code = signed["code"].as_str().expect("a code").to_owned();
        app.clock.advance(time::Duration::seconds(61));
        let headers = with_proof("/oauth2/token");
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let (status, answer) =
            party.post(&app, "/oauth2/token", Algorithm::Es256, &grant(&code, &pkce), &headers).await;
        assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_grant")), "{backend:?}: {answer}");
    }
}

#[tokio::test]
async fn a_fapi_ru_client_signs_its_requests_reads_signed_answers_and_binds_to_its_certificate() {
    for backend in backends() {
        let app = spawn(backend).await;
        let party = Party::new("fapi-ru-rp", &[Algorithm::Es256, Algorithm::Ps256]);
        party.register(&app, "fapi-ru").await;
        let pkce = Pkce::new();
        let jarm = party.params(&pkce, &[("response_mode", "jwt")]);

        // Unsigned: refused.
        let mut url = url::Url::parse(&app.url("/oauth2/authorize")).unwrap();
        url.query_pairs_mut().extend_pairs(&jarm);
        let refused = app.browser().get(url.as_str()).send().await.unwrap();
        let refusal = location_param(&refused, "response").map(|jwt| jwt_claims(&jwt)).unwrap_or_default();
        assert_eq!(refusal["error"], "invalid_request", "{backend:?}: {}", location(&refused));
        let description = refusal["error_description"].as_str().unwrap();
        assert!(description.contains("signed request objects") && description.contains("profile fapi-ru"));

        // Signed with PS256: not an elliptic-curve signature.
        let object = party.request_object(&app, Algorithm::Ps256, &jarm);
        let refused = app.browser().get(party.authorize(&app, "request", &object)).send().await.unwrap();
        assert_eq!(refused.status(), 400, "{backend:?}: an object that cannot be trusted names no redirect");
        assert!(refused.text().await.unwrap().contains("profile fapi-ru"));

        // Without nbf (FAPI 1.0 Advanced §5.2.2-17): refused at authorize
        // and at /oauth2/par.
        let object = party.request_object_with(&app, Algorithm::Es256, &jarm, |claims| drop(claims.remove("nbf")));
        let refused = app.browser().get(party.authorize(&app, "request", &object)).send().await.unwrap();
        assert_eq!(refused.status(), 400, "{backend:?}");
        let page = refused.text().await.unwrap();
        assert!(page.contains("no nbf") && page.contains("profile fapi-ru"), "{backend:?}");
        let certificate = TestCertificate::new("fapi-ru-rp.example");
        let headers = [(CERTIFICATE_HEADER, certificate.escaped.as_str())];
        let (status, answer) =
            party.post(&app, "/oauth2/par", Algorithm::Es256, &pairs(&[("request", &object)]), &headers).await;
        assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_request_object")), "{backend:?}: {answer}");
        assert!(names_profile(&answer, "fapi-ru") && answer["error_description"].as_str().unwrap().contains("nbf"));
        // The same object with nbf is pushed.
        let object = party.request_object(&app, Algorithm::Es256, &jarm);
        let (status, answer) =
            party.post(&app, "/oauth2/par", Algorithm::Es256, &pairs(&[("request", &object)]), &headers).await;
        assert_eq!(status, 201, "{backend:?}: {answer}");

        // Asking for openid without a nonce (FAPI 1.0 Baseline §5.2.2.2):
        // refused at authorize, in the signed answer, and at /oauth2/par.
        let mut no_nonce = jarm.clone();
        no_nonce.retain(|(name, _)| name != "nonce");
        let object = party.request_object(&app, Algorithm::Es256, &no_nonce);
        let refused = app.browser().get(party.authorize(&app, "request", &object)).send().await.unwrap();
        let refusal = location_param(&refused, "response").map(|jwt| jwt_claims(&jwt)).unwrap_or_default();
        assert_eq!(refusal["error"], "invalid_request", "{backend:?}: {}", location(&refused));
        let description = refusal["error_description"].as_str().unwrap();
        assert!(description.contains("nonce") && description.contains("profile fapi-ru"), "{description}");
        let (status, answer) =
            party.post(&app, "/oauth2/par", Algorithm::Es256, &pairs(&[("request", &object)]), &headers).await;
        assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_request")), "{backend:?}: {answer}");
        assert!(names_profile(&answer, "fapi-ru") && answer["error_description"].as_str().unwrap().contains("nonce"));
        // Without openid, state binds the answer: no nonce is needed.
        let mut oauth_only = no_nonce.clone();
        oauth_only.iter_mut().filter(|(name, _)| name == "scope").for_each(|(_, scope)| *scope = "profile".into());
        let object = party.request_object(&app, Algorithm::Es256, &oauth_only);
        let (status, answer) =
            party.post(&app, "/oauth2/par", Algorithm::Es256, &pairs(&[("request", &object)]), &headers).await;
        assert_eq!(status, 201, "{backend:?}: {answer}");

        // Signed, but asking for a plain response: refused.
        let plain = party.params(&pkce, &[]);
        let object = party.request_object(&app, Algorithm::Es256, &plain);
        let refused = app.browser().get(party.authorize(&app, "request", &object)).send().await.unwrap();
        assert_eq!(location_param(&refused, "error").as_deref(), Some("invalid_request"), "{backend:?}");
        let description = location_param(&refused, "error_description").unwrap();
        assert!(description.contains("response_mode") && description.contains("profile fapi-ru"), "{description}");

        // Signed, with a signed answer: the code comes inside it.
        let object = party.request_object(&app, Algorithm::Es256, &jarm);
        let done = party.login(&app, &party.authorize(&app, "request", &object)).await;
        let answer = jwt_claims(&location_param(&done, "response").expect("a signed response"));
        let code = answer["code"].as_str().expect("a code").to_owned();
        let form = grant(&code, &pkce);

        // A PS256 assertion is refused; without a certificate the token
        // request is refused; neither spends the code.
        let (status, refused) = party.post(&app, "/oauth2/token", Algorithm::Ps256, &form, &[]).await;
        assert_eq!((status, refused["error"].as_str()), (401, Some("invalid_client")), "{backend:?}: {refused}");
        assert!(names_profile(&refused, "fapi-ru"), "{refused}");
        let (status, refused) = party.post(&app, "/oauth2/token", Algorithm::Es256, &form, &[]).await;
        assert_eq!((status, refused["error"].as_str()), (400, Some("invalid_request")), "{backend:?}: {refused}");
        assert!(
            names_profile(&refused, "fapi-ru") && refused["error_description"].as_str().unwrap().contains("mutual TLS")
        );

        let (status, tokens) = party.post(&app, "/oauth2/token", Algorithm::Es256, &form, &headers).await;
        assert_eq!(status, 200, "{backend:?}: {tokens}");
        let claims = jwt_claims(tokens["access_token"].as_str().unwrap());
        assert_eq!(claims["cnf"]["x5t#S256"], certificate.thumbprint.as_str(), "{backend:?}");
        // Rotation stays on for fapi-ru: the refresh token is a new one.
        let refresh =
            pairs(&[("grant_type", "refresh_token"), ("refresh_token", tokens["refresh_token"].as_str().unwrap())]);
        let (status, refreshed) = party.post(&app, "/oauth2/token", Algorithm::Es256, &refresh, &headers).await;
        assert_eq!(status, 200, "{backend:?}: {refreshed}");
        assert_ne!(refreshed["refresh_token"], tokens["refresh_token"], "{backend:?}");
    }
}

#[tokio::test]
async fn refresh_token_rotation_is_a_client_setting() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let url = app.url(&format!("/admin/v1/clients/{}", demo::CLIENT_ID));
        let patch = |rotation: Value| {
            app.http()
                .patch(&url)
                .bearer_auth(portico_tests::ADMIN_TOKEN)
                .json(&json!({ "refreshTokenRotation": rotation }))
        };
        let response = patch(false.into()).send().await.unwrap();
        assert_eq!(response.status(), 200, "{backend:?}");
        assert_eq!(response.json::<Value>().await.unwrap()["refreshTokenRotation"], false);

        let tokens = app.tokens_for("ivan", "ivan-password").await;
        let refresh_token = tokens.refresh_token.clone().expect("a refresh token");
        for round in 0..2 {
            let response =
                app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", &refresh_token)]).await;
            assert_eq!(response.status(), 200, "{backend:?} round {round}");
            let refreshed: Value = response.json().await.unwrap();
            assert_eq!(refreshed["refresh_token"].as_str(), Some(refresh_token.as_str()), "{backend:?} round {round}");
        }

        // Back to the default: the next refresh rotates, and the old token
        // is spent.
        let response = patch(Value::Null).send().await.unwrap();
        assert_eq!(response.json::<Value>().await.unwrap()["refreshTokenRotation"], true, "{backend:?}");
        let response = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", &refresh_token)]).await;
        let rotated: Value = response.json().await.unwrap();
        assert_ne!(rotated["refresh_token"].as_str(), Some(refresh_token.as_str()), "{backend:?}: {rotated}");
        let again = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", &refresh_token)]).await;
        assert_eq!(again.status(), 400, "{backend:?}: the rotated token is spent");
    }
}

/// `state` is required of the contract's clients; a `fapi2` client may
/// leave it out (RFC 6749 §4.1.1, PKCE binds the answer: the FAPI 2.0
/// conformance tests ask for a request without one to succeed), and so may
/// a `fapi-ru` client that asks for `openid` (and so sends a `nonce`), but
/// not one without `openid` (FAPI 1.0 Baseline §5.2.2.3). An answer to a
/// request without `state` carries none.
#[tokio::test]
async fn state_may_be_left_out_only_where_the_clients_profile_allows() {
    for backend in backends() {
        let app = spawn(backend).await;
        let without_state = |params: Vec<(String, String)>| -> Vec<(String, String)> {
            params.into_iter().filter(|(name, _)| name != "state").collect()
        };

        // The contract's client: refused, in its query, with no state.
        let pkce = Pkce::new();
        let mut url = url::Url::parse(&app.url("/oauth2/authorize")).unwrap();
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", demo::CLIENT_ID)
            .append_pair("redirect_uri", &app.redirect_uri())
            .append_pair("scope", "openid")
            .append_pair("code_challenge", &pkce.challenge)
            .append_pair("code_challenge_method", "S256");
        let refused = app.browser().get(url.as_str()).send().await.unwrap();
        assert_eq!(location_param(&refused, "error").as_deref(), Some("invalid_request"), "{backend:?}");
        assert_eq!(location_param(&refused, "error_description").as_deref(), Some("OAuth 2.0 Parameter: state"));
        assert_eq!(location_param(&refused, "state"), None);

        // A FAPI 2.0 client: pushed without state, answered without one,
        // in the query and in a signed answer.
        let party = Party::new("fapi2-no-state", &[Algorithm::Es256]);
        party.register(&app, "fapi2").await;
        for mode in ["query", "jwt"] {
            let pkce = Pkce::new();
            let params = without_state(party.params(&pkce, &[("response_mode", mode)]));
            let (status, pushed) = party.post(&app, "/oauth2/par", Algorithm::Es256, &params, &[]).await;
            assert_eq!(status, 201, "{backend:?} {mode}: {pushed}");
            let authorize = party.authorize(&app, "request_uri", pushed["request_uri"].as_str().unwrap());
            let done = party.login(&app, &authorize).await;
            let answer = match mode {
                "query" => Value::Object(
                    url::Url::parse(&location(&done))
                        .unwrap()
                        .query_pairs()
                        .map(|(name, value)| (name.into_owned(), Value::from(value.into_owned())))
                        .collect(),
                ),
                _ => jwt_claims(&location_param(&done, "response").expect("a signed answer")),
            };
            assert!(answer["code"].is_string(), "{backend:?} {mode}: {answer}");
            assert!(answer.get("state").is_none(), "{backend:?} {mode}: {answer}");
            assert_eq!(answer["iss"].as_str(), Some(app.base.as_str()));
        }

        // ФАПИ.СЕК: without openid, state is what binds the answer.
        let party = Party::new("fapi-ru-no-state", &[Algorithm::Es256]);
        party.register(&app, "fapi-ru").await;
        let pkce = Pkce::new();
        let jarm = without_state(party.params(&pkce, &[("response_mode", "jwt")]));
        let mut oauth_only = jarm.clone();
        oauth_only.iter_mut().filter(|(name, _)| name == "scope").for_each(|(_, scope)| *scope = "profile".into());
        oauth_only.retain(|(name, _)| name != "nonce");
        let object = party.request_object(&app, Algorithm::Es256, &oauth_only);
        let refused = app.browser().get(party.authorize(&app, "request", &object)).send().await.unwrap();
        let refusal = location_param(&refused, "response").map(|jwt| jwt_claims(&jwt)).unwrap_or_default();
        assert_eq!(refusal["error"], "invalid_request", "{backend:?}: {}", location(&refused));
        let description = refusal["error_description"].as_str().unwrap();
        assert!(description.contains("state") && description.contains("profile fapi-ru"), "{description}");
        assert!(refusal.get("state").is_none(), "{refusal}");
        // With openid (and its nonce): answered without state.
        let object = party.request_object(&app, Algorithm::Es256, &jarm);
        let done = party.login(&app, &party.authorize(&app, "request", &object)).await;
        let answer = jwt_claims(&location_param(&done, "response").expect("a signed answer"));
        assert!(answer["code"].is_string() && answer.get("state").is_none(), "{backend:?}: {answer}");
    }
}
