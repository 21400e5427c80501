//! DPoP (RFC 9449) on both backends: a token request with a proof gets
//! tokens bound to the proof's key (`token_type` `DPoP`, `cnf.jkt`, in
//! introspection too); userinfo and liveness take a bound token only as
//! `DPoP` with a fresh proof of that key for the method, the address and
//! the token (and so do the business APIs); malformed, unsigned, symmetric, foreign, stale and replayed
//! proofs are `invalid_dpop_proof` and spend nothing; a client registered
//! with `dpop_bound_access_tokens` gets nothing without a proof; a proof
//! replayed on a second node (one PostgreSQL) is refused.

use portico_crypto::jwt::{Algorithm, SigningKey};
use portico_model::clock::Clock as _;
use portico_tests::{Pkce, TestApp, backends, jwt_claims};
use serde_json::{Value, json};

/// A client's DPoP key.
struct DpopKey {
    key: SigningKey,
}

impl DpopKey {
    fn new() -> Self {
        Self { key: SigningKey::generate(Algorithm::Es256).unwrap() }
    }

    fn thumbprint(&self) -> String {
        portico_crypto::dpop::thumbprint(&serde_json::to_value(self.key.jwk()).unwrap()).unwrap()
    }

    /// A proof for `method` on `path` of `app`, with `claims` changed.
    fn proof_with(&self, app: &TestApp, method: &str, path: &str, token: Option<&str>, changes: Value) -> String {
        let header = json!({ "typ": "dpop+jwt", "alg": "ES256", "jwk": self.key.jwk() });
        let mut claims = json!({
            "jti": uuid::Uuid::new_v4().to_string(),
            "htm": method,
            "htu": app.url(path),
            "iat": app.clock.now().unix_timestamp(),
        });
        if let Some(token) = token {
            claims["ath"] = portico_crypto::b64url(portico_crypto::hash::sha256(token.as_bytes())).into();
        }
        for (name, value) in changes.as_object().unwrap() {
            claims[name] = value.clone();
        }
        portico_tests::jws::sign(&self.key, &header, &claims)
    }

    fn proof(&self, app: &TestApp, method: &str, path: &str, token: Option<&str>) -> String {
        self.proof_with(app, method, path, token, json!({}))
    }
}

/// A code of the demo client for ivan, and its verifier.
async fn new_code(app: &TestApp) -> (String, Pkce) {
    let pkce = Pkce::new();
    let code = app.login_for_code(&app.browser(), &pkce, "ivan", "ivan-password").await;
    (code, pkce)
}

/// Exchanges `code` with the DPoP proofs given (none, one or several).
async fn exchange(app: &TestApp, code: &str, pkce: &Pkce, proofs: &[&str]) -> (u16, Value) {
    let redirect_uri = app.redirect_uri();
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("code_verifier", &pkce.verifier),
        ("redirect_uri", &redirect_uri),
    ];
    token_with(app, &form, proofs).await
}

/// A refresh at `app` with the DPoP proofs given.
async fn refresh(app: &TestApp, refresh_token: &str, proofs: &[&str]) -> (u16, Value) {
    token_with(app, &[("grant_type", "refresh_token"), ("refresh_token", refresh_token)], proofs).await
}

/// The token endpoint with `form` as the demo client and the DPoP proofs given.
async fn token_with(app: &TestApp, form: &[(&str, &str)], proofs: &[&str]) -> (u16, Value) {
    let mut form = form.to_vec();
    form.extend([("client_id", portico_tests::demo::CLIENT_ID), ("client_secret", portico_tests::demo::CLIENT_SECRET)]);
    let mut request = app.http().post(app.url("/oauth2/token")).form(&form);
    for proof in proofs {
        request = request.header("DPoP", *proof);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

async fn userinfo(app: &TestApp, authorization: &str, proof: Option<&str>) -> reqwest::Response {
    let mut request = app.http().get(app.url("/oauth2/userinfo")).header("Authorization", authorization);
    if let Some(proof) = proof {
        request = request.header("DPoP", proof);
    }
    request.send().await.unwrap()
}

#[tokio::test]
async fn a_proof_binds_the_tokens_and_resources_take_them_only_with_a_fresh_proof() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let key = DpopKey::new();
        let (code, pkce) = new_code(&app).await;
        let (status, tokens) = exchange(&app, &code, &pkce, &[&key.proof(&app, "POST", "/oauth2/token", None)]).await;
        assert_eq!(status, 200, "{backend:?}: {tokens}");
        assert_eq!(tokens["token_type"], "DPoP");
        let access = tokens["access_token"].as_str().unwrap().to_owned();
        assert_eq!(jwt_claims(&access)["cnf"], json!({ "jkt": key.thumbprint() }));

        // Introspection names the binding.
        let introspected = app.introspect_as_demo(&access).await;
        assert_eq!(
            (introspected["token_type"].as_str(), &introspected["cnf"]["jkt"]),
            (Some("DPoP"), &json!(key.thumbprint()))
        );

        // Userinfo: only as DPoP, with a proof of the key for GET on it.
        let scheme = format!("DPoP {access}");
        let good = key.proof(&app, "GET", "/oauth2/userinfo", Some(&access));
        assert_eq!(userinfo(&app, &scheme, Some(&good)).await.status(), 200, "{backend:?}");
        // RFC 9449 §7.1: a bad proof is `invalid_dpop_proof`, a good proof
        // of another key `invalid_token`.
        let challenge = |response: &reqwest::Response| {
            let value = response.headers()["www-authenticate"].to_str().unwrap().to_owned();
            value.split('"').nth(1).unwrap_or_default().to_owned()
        };
        let replayed = userinfo(&app, &scheme, Some(&good)).await;
        assert_eq!(replayed.status(), 401, "{backend:?}: a proof is taken once");
        assert!(replayed.headers()["www-authenticate"].to_str().unwrap().starts_with("DPoP error="));
        assert_eq!(challenge(&replayed), "invalid_dpop_proof", "{backend:?}");
        assert_eq!(challenge(&userinfo(&app, &scheme, None).await), "invalid_dpop_proof", "{backend:?}: none");
        let foreign_key = DpopKey::new();
        let foreign =
            userinfo(&app, &scheme, Some(&foreign_key.proof(&app, "GET", "/oauth2/userinfo", Some(&access)))).await;
        assert_eq!(challenge(&foreign), "invalid_token", "{backend:?}: another key's good proof");
        let fresh = key.proof(&app, "GET", "/oauth2/userinfo", Some(&access));
        let bearer = userinfo(&app, &format!("Bearer {access}"), Some(&fresh)).await;
        assert_eq!(bearer.status(), 401, "{backend:?}: a bound token is no bearer token");
        let other = DpopKey::new();
        let foreign = other.proof(&app, "GET", "/oauth2/userinfo", Some(&access));
        assert_eq!(userinfo(&app, &scheme, Some(&foreign)).await.status(), 401, "{backend:?}: another key");
        let no_ath = key.proof(&app, "GET", "/oauth2/userinfo", None);
        assert_eq!(userinfo(&app, &scheme, Some(&no_ath)).await.status(), 401, "{backend:?}: no ath");
        let post = key.proof(&app, "POST", "/oauth2/userinfo", Some(&access));
        assert_eq!(userinfo(&app, &scheme, Some(&post)).await.status(), 401, "{backend:?}: another method");
        assert_eq!(userinfo(&app, &scheme, None).await.status(), 401, "{backend:?}: no proof");
        // RFC 9449 §4.3: htu is compared after RFC 3986 §6.2.2
        // normalization, so an unreserved character escaped (`%75` for
        // `u`) names the same address, and a reserved one (`%2F`) another.
        let escaped = |htu: &str| key.proof_with(&app, "GET", "/", Some(&access), json!({ "htu": app.url(htu) }));
        let same = userinfo(&app, &scheme, Some(&escaped("/oauth2/%75serinfo"))).await;
        assert_eq!(same.status(), 200, "{backend:?}: an escaped unreserved character");
        let other_path = userinfo(&app, &scheme, Some(&escaped("/oauth2%2Fuserinfo"))).await;
        assert_eq!(other_path.status(), 401, "{backend:?}: an escaped slash");

        // Liveness: the same rule.
        let live = app
            .http()
            .get(app.url("/oauth2/token/liveness"))
            .header("Authorization", &scheme)
            .header("DPoP", key.proof(&app, "GET", "/oauth2/token/liveness", Some(&access)))
            .send()
            .await
            .unwrap();
        assert_eq!(live.status(), 200, "{backend:?}");
        assert_eq!(app.liveness(&access).await, 401, "{backend:?}: as a bearer token");

        // The business APIs: the token pair's access token by the same
        // rule, and refused with the same challenges (RFC 9449 §7.1).
        let id_token = tokens["id_token"].as_str().unwrap();
        for path in ["/api/v1/permissions", "/v1/reports/types"] {
            let api = |scheme: Option<String>, proof: Option<String>| {
                let mut request = app.http().get(app.url(path)).header("id-token", id_token);
                if let Some(scheme) = scheme {
                    request = request.header("Authorization", scheme);
                }
                if let Some(proof) = proof {
                    request = request.header("DPoP", proof);
                }
                async move {
                    let response = request.send().await.unwrap();
                    let challenge = response.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned());
                    (response.status().as_u16(), challenge.unwrap_or_default())
                }
            };
            let dpop =
                |code: &str| format!("DPoP error=\"{code}\", algs=\"{}\"", portico_crypto::dpop::ALGORITHMS.join(" "));
            let proof = || key.proof(&app, "GET", path, Some(&access));
            assert_eq!(api(Some(scheme.clone()), Some(proof())).await.0, 200, "{backend:?} {path}");
            let bearer = api(Some(format!("Bearer {access}")), Some(proof())).await;
            assert_eq!(
                bearer,
                (401, "Bearer error=\"invalid_token\"".to_owned()),
                "{backend:?} {path}: as a bearer token"
            );
            let elsewhere = key.proof(&app, "GET", "/api/v2/permissions", Some(&access));
            let elsewhere = api(Some(scheme.clone()), Some(elsewhere)).await;
            assert_eq!(elsewhere, (401, dpop("invalid_dpop_proof")), "{backend:?} {path}: a proof for another address");
            assert_eq!(
                api(Some(scheme.clone()), None).await,
                (401, dpop("invalid_dpop_proof")),
                "{backend:?} {path}: none"
            );
            let foreign = DpopKey::new().proof(&app, "GET", path, Some(&access));
            let foreign = api(Some(scheme.clone()), Some(foreign)).await;
            assert_eq!(foreign, (401, dpop("invalid_token")), "{backend:?} {path}: another key's good proof");
            // RFC 6750 §3.1: no token, no error code.
            assert_eq!(api(None, None).await, (401, "Bearer".to_owned()), "{backend:?} {path}: no token");
        }
        for path in ["/oauth2/userinfo", "/oauth2/token/liveness"] {
            let response = app.http().get(app.url(path)).send().await.unwrap();
            assert_eq!(response.status(), 401);
            assert_eq!(response.headers()["www-authenticate"], "Bearer", "{backend:?} {path}: no token, no error code");
        }

        // A refresh with a proof binds the new access token; a plain token
        // of an unbound exchange stays a bearer token.
        let refresh = tokens["refresh_token"].as_str().unwrap();
        let refreshed = app
            .http()
            .post(app.url("/oauth2/token"))
            .header("DPoP", key.proof(&app, "POST", "/oauth2/token", None))
            .form(&[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh),
                ("client_id", portico_tests::demo::CLIENT_ID),
                ("client_secret", portico_tests::demo::CLIENT_SECRET),
            ])
            .send()
            .await
            .unwrap();
        let refreshed: Value = refreshed.json().await.unwrap();
        assert_eq!(refreshed["token_type"], "DPoP", "{backend:?}: {refreshed}");
        let (code, pkce) = new_code(&app).await;
        let (_, plain) = exchange(&app, &code, &pkce, &[]).await;
        assert_eq!(plain["token_type"], "Bearer");
        assert_eq!(app.liveness(plain["access_token"].as_str().unwrap()).await, 200);
    }
}

#[tokio::test]
async fn bad_proofs_are_refused_and_spend_nothing() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let key = DpopKey::new();
        let (code, pkce) = new_code(&app).await;
        let now = app.clock.now().unix_timestamp();
        let unsigned = {
            let part = |v: &Value| portico_crypto::b64url(serde_json::to_vec(v).unwrap());
            let header = json!({ "typ": "dpop+jwt", "alg": "none", "jwk": key.key.jwk() });
            let claims = json!({ "jti": "j", "htm": "POST", "htu": app.url("/oauth2/token"), "iat": now });
            format!("{}.{}.", part(&header), part(&claims))
        };
        let hs256 = {
            let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
            header.typ = Some("dpop+jwt".into());
            let claims = json!({ "jti": "j", "htm": "POST", "htu": app.url("/oauth2/token"), "iat": now });
            jsonwebtoken::encode(&header, &claims, &jsonwebtoken::EncodingKey::from_secret(b"k")).unwrap()
        };
        let good = key.proof(&app, "POST", "/oauth2/token", None);
        let replay = key.proof(&app, "POST", "/oauth2/token", None);
        let cases: Vec<(&str, Vec<String>)> = vec![
            ("malformed", vec!["not-a-jwt".into()]),
            ("unsigned", vec![unsigned]),
            ("HS256", vec![hs256]),
            ("another method", vec![key.proof(&app, "GET", "/oauth2/token", None)]),
            ("another address", vec![key.proof(&app, "POST", "/oauth2/par", None)]),
            ("stale", vec![key.proof_with(&app, "POST", "/oauth2/token", None, json!({ "iat": now - 600 }))]),
            ("from the future", vec![key.proof_with(&app, "POST", "/oauth2/token", None, json!({ "iat": now + 600 }))]),
            ("no jti", vec![key.proof_with(&app, "POST", "/oauth2/token", None, json!({ "jti": Value::Null }))]),
            ("two proofs", vec![good.clone(), key.proof(&app, "POST", "/oauth2/token", None)]),
        ];
        for (case, proofs) in &cases {
            let proofs: Vec<&str> = proofs.iter().map(String::as_str).collect();
            let (status, body) = exchange(&app, &code, &pkce, &proofs).await;
            assert_eq!(
                (status, body["error"].as_str()),
                (400, Some("invalid_dpop_proof")),
                "{backend:?} {case}: {body}"
            );
        }
        // A proof a refused request used (its code was unknown) is a replay.
        let (status, body) = exchange(&app, "no-such-code", &pkce, &[&replay]).await;
        assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "{body}");
        let (status, body) = exchange(&app, &code, &pkce, &[&replay]).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (400, Some("invalid_dpop_proof")),
            "{backend:?}: replayed: {body}"
        );
        // The code the refused requests presented still works.
        let (status, body) = exchange(&app, &code, &pkce, &[&good]).await;
        assert_eq!(status, 200, "{backend:?}: {body}");
        assert_eq!(body["token_type"], "DPoP");
    }
}

#[tokio::test]
async fn a_client_with_bound_tokens_gets_nothing_without_a_proof() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let patched = app
            .http()
            .patch(app.url(&format!("/admin/v1/clients/{}", portico_tests::demo::CLIENT_ID)))
            .bearer_auth(portico_tests::ADMIN_TOKEN)
            .json(&json!({ "dpopBoundAccessTokens": true }))
            .send()
            .await
            .unwrap();
        let patched: Value = patched.json().await.unwrap();
        assert_eq!(patched["dpopBoundAccessTokens"], true, "{patched}");
        let (code, pkce) = new_code(&app).await;
        let (status, body) = exchange(&app, &code, &pkce, &[]).await;
        assert_eq!((status, body["error"].as_str()), (400, Some("invalid_dpop_proof")), "{backend:?}: {body}");
        let key = DpopKey::new();
        let (status, body) = exchange(&app, &code, &pkce, &[&key.proof(&app, "POST", "/oauth2/token", None)]).await;
        assert_eq!(
            (status, body["token_type"].as_str()),
            (200, Some("DPoP")),
            "{backend:?}: the code was not spent: {body}"
        );
    }
}

#[tokio::test]
async fn a_proof_replayed_on_a_second_node_is_refused() {
    let Some((a, b)) = TestApp::two_nodes("the second-node DPoP replay test").await else { return };
    let key = DpopKey::new();
    let (code, pkce) = new_code(&a).await;
    let (_, tokens) = exchange(&a, &code, &pkce, &[&key.proof(&a, "POST", "/oauth2/token", None)]).await;
    let access = tokens["access_token"].as_str().unwrap();
    let proof = key.proof(&a, "GET", "/oauth2/userinfo", Some(access));
    assert_eq!(userinfo(&a, &format!("DPoP {access}"), Some(&proof)).await.status(), 200);
    assert_eq!(userinfo(&b, &format!("DPoP {access}"), Some(&proof)).await.status(), 401, "the other node");
    let fresh = key.proof(&a, "GET", "/oauth2/userinfo", Some(access));
    assert_eq!(userinfo(&b, &format!("DPoP {access}"), Some(&fresh)).await.status(), 200);
}

/// A client without an assertion has its proof's `jti` remembered in the
/// write that redeems the code or rotates the refresh token: a proof one
/// token request took is refused at the next, which spends nothing.
#[tokio::test]
async fn a_proof_a_token_request_took_is_refused_at_the_next_which_spends_nothing() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let key = DpopKey::new();
        let (code, pkce) = new_code(&app).await;
        let proof = key.proof(&app, "POST", "/oauth2/token", None);
        let (status, tokens) = exchange(&app, &code, &pkce, &[&proof]).await;
        assert_eq!(status, 200, "{backend:?}: {tokens}");
        let refresh_token = tokens["refresh_token"].as_str().unwrap();
        let (status, refused) = refresh(&app, refresh_token, &[&proof]).await;
        assert_eq!((status, refused["error"].as_str()), (400, Some("invalid_dpop_proof")), "{backend:?}: {refused}");
        assert!(refused["error_description"].as_str().unwrap().contains("used before"), "{refused}");
        // The refresh token was not spent: a fresh proof refreshes, once.
        let fresh = key.proof(&app, "POST", "/oauth2/token", None);
        let (status, refreshed) = refresh(&app, refresh_token, &[&fresh]).await;
        assert_eq!((status, refreshed["token_type"].as_str()), (200, Some("DPoP")), "{backend:?}: {refreshed}");
        let (status, _) = refresh(&app, refreshed["refresh_token"].as_str().unwrap(), &[&fresh]).await;
        assert_eq!(status, 400, "{backend:?}: the fresh proof was taken too");
    }
}

#[tokio::test]
async fn discovery_lists_the_proof_algorithms() {
    let app = TestApp::spawn(backends()[0]).await;
    let document: Value = app.discovery().await;
    let algs = document["dpop_signing_alg_values_supported"].as_array().unwrap();
    assert!(algs.contains(&json!("ES256")) && !algs.iter().any(|a| a == "none" || a == "HS256"), "{algs:?}");
}

#[tokio::test]
async fn every_listed_proof_algorithm_binds_a_token_and_proves_it() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let document: Value = app.discovery().await;
        let listed: Vec<String> =
            serde_json::from_value(document["dpop_signing_alg_values_supported"].clone()).unwrap();
        assert_eq!(listed.len(), 5, "{listed:?}");
        let (token_url, liveness_url) = (app.url("/oauth2/token"), app.url("/oauth2/token/liveness"));
        for name in &listed {
            // `Ed25519` (RFC 9864's fully specified name) is an Ed25519 key too.
            let alg = if name == "Ed25519" { Algorithm::EdDsa } else { Algorithm::parse(name).unwrap() };
            let key = SigningKey::generate(alg).unwrap();
            let jkt = portico_crypto::dpop::thumbprint(&serde_json::to_value(key.jwk()).unwrap()).unwrap();
            let proof = portico_tests::jws::dpop_proof(&key, name, &app, "POST", &token_url, None);
            let pair = app.token_pair("ivan").await;
            let (status, tokens) = refresh(&app, &pair.refresh_token, &[&proof]).await;
            assert_eq!((status, tokens["token_type"].as_str()), (200, Some("DPoP")), "{backend:?} {name}: {tokens}");
            let access = tokens["access_token"].as_str().unwrap();
            assert_eq!(jwt_claims(access)["cnf"], json!({ "jkt": jkt }), "{backend:?} {name}");
            let check = |proof: String| {
                app.http()
                    .get(&liveness_url)
                    .header("Authorization", format!("DPoP {access}"))
                    .header("DPoP", proof)
                    .send()
            };
            let proof = portico_tests::jws::dpop_proof(&key, name, &app, "GET", &liveness_url, Some(access));
            assert_eq!(check(proof).await.unwrap().status(), 200, "{backend:?} {name}: a proof of the bound key");
            // A proof of another key of the same algorithm does not prove it.
            let other = SigningKey::generate(alg).unwrap();
            let proof = portico_tests::jws::dpop_proof(&other, name, &app, "GET", &liveness_url, Some(access));
            assert_eq!(check(proof).await.unwrap().status(), 401, "{backend:?} {name}: another key");
        }
    }
}

/// Pushes a request of the demo client with `proof` (and `dpop_jkt` when
/// given), logs ivan in at its `request_uri`: the status of the push and
/// the code (empty when the push was refused).
async fn pushed_code(app: &TestApp, pkce: &Pkce, proof: &str, dpop_jkt: Option<&str>) -> (u16, Value, String) {
    let redirect_uri = app.redirect_uri();
    let mut form = vec![
        ("response_type", "code"),
        ("redirect_uri", redirect_uri.as_str()),
        ("scope", "openid"),
        ("state", "st-123"),
        ("code_challenge", pkce.challenge.as_str()),
        ("code_challenge_method", "S256"),
    ];
    if let Some(jkt) = dpop_jkt {
        form.push(("dpop_jkt", jkt));
    }
    let response = app
        .http()
        .post(app.url("/oauth2/par"))
        .basic_auth(portico_tests::demo::CLIENT_ID, Some(portico_tests::demo::CLIENT_SECRET))
        .header("DPoP", proof)
        .form(&form)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    if status != 201 {
        return (status, body, String::new());
    }
    let mut url = url::Url::parse(&app.url("/oauth2/authorize")).unwrap();
    url.query_pairs_mut()
        .append_pair("client_id", portico_tests::demo::CLIENT_ID)
        .append_pair("request_uri", body["request_uri"].as_str().unwrap());
    let done = app.login_at(&app.browser(), url.as_str(), "ivan", "ivan-password").await;
    (status, body, portico_tests::code_from(&done, &app.redirect_uri()))
}

#[tokio::test]
async fn a_proof_at_the_pushed_request_binds_the_code_to_its_key() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let key = DpopKey::new();
        let other = DpopKey::new();

        let pkce = Pkce::new();
        let (_, _, code) = pushed_code(&app, &pkce, &key.proof(&app, "POST", "/oauth2/par", None), None).await;
        let (status, body) = exchange(&app, &code, &pkce, &[&other.proof(&app, "POST", "/oauth2/token", None)]).await;
        assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "{backend:?}: another key: {body}");

        let pkce = Pkce::new();
        let (_, _, code) = pushed_code(&app, &pkce, &key.proof(&app, "POST", "/oauth2/par", None), None).await;
        let (status, body) = exchange(&app, &code, &pkce, &[]).await;
        assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "{backend:?}: no proof: {body}");

        let pkce = Pkce::new();
        let thumbprint = key.thumbprint();
        let par_proof = key.proof(&app, "POST", "/oauth2/par", None);
        let (_, _, code) = pushed_code(&app, &pkce, &par_proof, Some(&thumbprint)).await;
        let (status, body) = exchange(&app, &code, &pkce, &[&key.proof(&app, "POST", "/oauth2/token", None)]).await;
        assert_eq!((status, body["token_type"].as_str()), (200, Some("DPoP")), "{backend:?}: {body}");

        // dpop_jkt naming another key than the proof's, and a bad proof at PAR.
        let (par_proof, foreign) = (key.proof(&app, "POST", "/oauth2/par", None), other.thumbprint());
        let (status, body, _) = pushed_code(&app, &pkce, &par_proof, Some(&foreign)).await;
        assert_eq!((status, body["error"].as_str()), (400, Some("invalid_dpop_proof")), "{backend:?}: {body}");
        let (status, body, _) = pushed_code(&app, &pkce, &key.proof(&app, "POST", "/oauth2/token", None), None).await;
        assert_eq!((status, body["error"].as_str()), (400, Some("invalid_dpop_proof")), "{backend:?}: htu: {body}");
    }
}

#[tokio::test]
async fn dpop_jkt_at_authorize_binds_the_code() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let key = DpopKey::new();
        let pkce = Pkce::new();
        let thumbprint = key.thumbprint();
        let url = app.authorize_url(&pkce, &[("dpop_jkt", Some(&thumbprint))]);
        let done = app.login_at(&app.browser(), &url, "ivan", "ivan-password").await;
        let code = portico_tests::code_from(&done, &app.redirect_uri());
        let (status, body) = exchange(&app, &code, &pkce, &[&key.proof(&app, "POST", "/oauth2/token", None)]).await;
        assert_eq!((status, body["token_type"].as_str()), (200, Some("DPoP")), "{backend:?}: {body}");

        let bad = app.authorize_url(&pkce, &[("dpop_jkt", Some("not-a-thumbprint"))]);
        let refused = app.http().get(bad).send().await.unwrap();
        assert_eq!(portico_tests::location_param(&refused, "error").as_deref(), Some("invalid_request"));
        let description = portico_tests::location_param(&refused, "error_description").unwrap();
        assert_eq!(description, "OAuth 2.0 Parameter: dpop_jkt");
    }
}

#[tokio::test]
async fn server_nonces_are_required_when_configured_and_rotate() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| c.dpop.require_nonce = true).await;
        let key = DpopKey::new();
        let (code, pkce) = new_code(&app).await;

        // Without a nonce: use_dpop_nonce and the nonce to use; nothing spent.
        let response = app
            .http()
            .post(app.url("/oauth2/token"))
            .header("DPoP", key.proof(&app, "POST", "/oauth2/token", None))
            .form(&[
                ("grant_type", "authorization_code"),
                ("code", code.as_str()),
                ("code_verifier", pkce.verifier.as_str()),
                ("client_id", portico_tests::demo::CLIENT_ID),
                ("client_secret", portico_tests::demo::CLIENT_SECRET),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{backend:?}");
        let nonce = response.headers()["dpop-nonce"].to_str().unwrap().to_owned();
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"], "use_dpop_nonce", "{backend:?}: {body}");
        let wrong = key.proof_with(&app, "POST", "/oauth2/token", None, json!({ "nonce": "made-up" }));
        let (status, body) = exchange(&app, &code, &pkce, &[&wrong]).await;
        assert_eq!((status, body["error"].as_str()), (400, Some("use_dpop_nonce")), "{backend:?}: {body}");

        // With it: the tokens, and the nonce again for the next request.
        let with_nonce = key.proof_with(&app, "POST", "/oauth2/token", None, json!({ "nonce": nonce }));
        let (status, body) = exchange(&app, &code, &pkce, &[&with_nonce]).await;
        assert_eq!((status, body["token_type"].as_str()), (200, Some("DPoP")), "{backend:?}: {body}");

        // Still good in the next window, stale after that.
        app.clock.advance(time::Duration::seconds(portico_identity::dpop::NONCE_WINDOW));
        let (code, pkce) = new_code(&app).await;
        let proof = key.proof_with(&app, "POST", "/oauth2/token", None, json!({ "nonce": nonce }));
        assert_eq!(exchange(&app, &code, &pkce, &[&proof]).await.0, 200, "{backend:?}: the window after");
        app.clock.advance(time::Duration::seconds(portico_identity::dpop::NONCE_WINDOW));
        let (code, pkce) = new_code(&app).await;
        let proof = key.proof_with(&app, "POST", "/oauth2/token", None, json!({ "nonce": nonce }));
        let (status, body) = exchange(&app, &code, &pkce, &[&proof]).await;
        assert_eq!((status, body["error"].as_str()), (400, Some("use_dpop_nonce")), "{backend:?}: stale: {body}");
    }
}
