//! Signing keys, JWKS, and what liveness makes of bad tokens.

use portico_crypto::jwt::Algorithm;
use portico_model::clock::Clock as _;
use portico_tests::{TestApp, backends, jwt_header};
use time::Duration;

async fn jwks(app: &TestApp) -> serde_json::Value {
    app.http().get(app.url("/oauth2/jwks")).send().await.unwrap().json().await.unwrap()
}

async fn published_kids(app: &TestApp) -> Vec<String> {
    jwks(app).await["keys"].as_array().unwrap().iter().map(|k| k["kid"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn jwks_publishes_only_public_rsa_members() {
    let app = TestApp::spawn(backends()[0]).await;
    let set = jwks(&app).await;
    let keys = set["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 1);
    let mut members: Vec<_> = keys[0].as_object().unwrap().keys().cloned().collect();
    members.sort();
    assert_eq!(members, ["alg", "e", "kid", "kty", "n", "use"]);
    assert_eq!(keys[0]["kty"], "RSA");
    assert_eq!(keys[0]["alg"], "RS256");
    assert_eq!(keys[0]["use"], "sig");
    assert_eq!(keys[0]["e"], "AQAB");
    assert_eq!(portico_crypto::b64url_decode(keys[0]["n"].as_str().unwrap()).unwrap().len(), 256, "RSA-2048");
}

#[tokio::test]
async fn rotation_keeps_old_tokens_valid_until_the_old_key_ages_out() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let before = app.tokens_for("ivan", "ivan-password").await;
        let old_kid = jwt_header(&before.access_token)["kid"].as_str().unwrap().to_owned();
        let secret = portico_server::secret::InstanceSecret::load(&app.config).unwrap();
        let new_kid =
            portico_tokens::KeyRing::rotate(app.store.as_ref(), &secret.sealer(), Algorithm::Rs256, app.clock.now())
                .await
                .unwrap();
        assert_ne!(old_kid, new_kid);

        let after = app.tokens_for("maria", "maria-password").await;
        assert_eq!(jwt_header(&after.access_token)["kid"], new_kid.as_str(), "{backend:?}: takes effect at once");
        assert_eq!(app.liveness(&before.access_token).await, 200, "a token of the previous key still verifies");
        assert_eq!(app.liveness(&after.access_token).await, 200);
        let kids = published_kids(&app).await;
        assert!(kids.contains(&old_kid) && kids.contains(&new_kid), "JWKS lists both: {kids:?}");

        // Once every token of the old key has expired, it is no longer published.
        app.clock.advance(Duration::minutes(21));
        let kids = published_kids(&app).await;
        assert_eq!(kids, [new_kid]);
    }
}

#[tokio::test]
async fn a_server_signing_with_another_algorithm_publishes_a_key_of_each_configured_one() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.tokens.signing_algorithm = "ES256".into();
            c.tokens.signing_algorithms = vec!["EdDSA".into(), "PS256".into(), "ES256".into()];
        })
        .await;
        let set = jwks(&app).await;
        let mut published: Vec<(String, String)> = set["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| (k["alg"].as_str().unwrap().to_owned(), k["kty"].as_str().unwrap().to_owned()))
            .collect();
        published.sort();
        let expected = [("ES256", "EC"), ("EdDSA", "OKP"), ("PS256", "RSA")].map(|(a, k)| (a.into(), k.into()));
        assert_eq!(published, expected, "{backend:?}");

        // Tokens are signed with the configured algorithm, by a published
        // key; the id_token's at_hash is of that algorithm's hash.
        let tokens = app.tokens_for("ivan", "ivan-password").await;
        let header = jwt_header(&tokens.access_token);
        assert_eq!(header["alg"], "ES256");
        let es = set["keys"].as_array().unwrap().iter().find(|k| k["alg"] == "ES256").unwrap();
        assert_eq!(header["kid"], es["kid"]);
        assert_eq!(app.liveness(&tokens.access_token).await, 200);
        let id_token = tokens.id_token.unwrap();
        assert_eq!(jwt_header(&id_token)["alg"], "ES256");
        let claims = portico_tests::jwt_claims(&id_token);
        assert_eq!(claims["at_hash"], portico_crypto::jwt::token_hash(Algorithm::Es256, &tokens.access_token));
        let discovery: serde_json::Value = app.discovery().await;
        // Discovery lists every algorithm a client may choose, the default first.
        let supported = serde_json::json!(["ES256", "PS256", "EdDSA"]);
        assert_eq!(discovery["id_token_signing_alg_values_supported"], supported);
        assert_eq!(discovery["userinfo_signing_alg_values_supported"], supported);
        assert_eq!(discovery["introspection_signing_alg_values_supported"], supported);

        // Each algorithm rotates on its own: the EdDSA key is replaced, the
        // ES256 key that signs goes on.
        let secret = portico_server::secret::InstanceSecret::load(&app.config).unwrap();
        let sealer = secret.sealer();
        let new_ed = portico_tokens::KeyRing::rotate(app.store.as_ref(), &sealer, Algorithm::EdDsa, app.clock.now());
        let new_ed = new_ed.await.unwrap();
        let after = app.tokens_for("maria", "maria-password").await;
        assert_eq!(jwt_header(&after.access_token)["kid"], es["kid"], "the signing key is not the one rotated");
        let kids = published_kids(&app).await;
        assert_eq!(kids.len(), 4, "the new EdDSA key and the old one until it ages out: {kids:?}");
        assert!(kids.contains(&new_ed));
    }
}

#[tokio::test]
async fn an_algorithm_portico_does_not_sign_with_is_refused_at_start() {
    let mut config = portico_server::config::Config::default();
    config.tokens.signing_algorithms = vec!["HS256".into()];
    let error = config.tokens.algorithms().unwrap_err().to_string();
    assert!(error.contains("tokens.signing_algorithms") && error.contains("HS256"), "{error}");
    config.tokens.signing_algorithms = Vec::new();
    config.tokens.signing_algorithm = "es256".into();
    let error = config.tokens.algorithms().unwrap_err().to_string();
    assert!(error.contains("tokens.signing_algorithm ") && error.contains("JWA names"), "{error}");
    config.tokens.signing_algorithm = "EdDSA".into();
    config.tokens.signing_algorithms = vec!["RS256".into(), "EdDSA".into()];
    assert_eq!(config.tokens.algorithms().unwrap(), (Algorithm::EdDsa, vec![Algorithm::EdDsa, Algorithm::Rs256]));
}

#[tokio::test]
async fn liveness_refuses_anything_that_is_not_a_live_access_token() {
    let app = TestApp::spawn(backends()[0]).await;
    let tokens = app.tokens_for("ivan", "ivan-password").await;
    let http = app.http();
    let url = app.url("/oauth2/token/liveness");

    let missing = http.get(&url).send().await.unwrap();
    assert_eq!(missing.status(), 401);
    assert!(missing.bytes().await.unwrap().is_empty(), "no body");
    let basic = http.get(&url).header("authorization", "Basic abc").send().await.unwrap();
    assert_eq!(basic.status(), 401);

    let (head, rest) = tokens.access_token.split_once('.').unwrap();
    let (_, signature) = rest.split_once('.').unwrap();
    let unknown_kid =
        format!("{}.{rest}", portico_crypto::b64url(br#"{"alg":"RS256","kid":"no-such-key","typ":"at+jwt"}"#));
    let forged = format!("{head}.{}.{signature}", portico_crypto::b64url(br#"{"sub":"x"}"#));
    let none = format!("{}.{}.", portico_crypto::b64url(br#"{"alg":"none"}"#), portico_crypto::b64url(b"{}"));
    let id_token = tokens.id_token.clone().unwrap();
    for bad in ["garbage", "a.b.c", unknown_kid.as_str(), forged.as_str(), none.as_str(), id_token.as_str()] {
        let response = http.get(&url).bearer_auth(bad).send().await.unwrap();
        assert_eq!(response.status(), 401, "{bad}");
        assert!(response.bytes().await.unwrap().is_empty());
    }
    // Accepted without the "Bearer " prefix too.
    let bare = http.get(&url).header("authorization", &tokens.access_token).send().await.unwrap();
    assert_eq!(bare.status(), 200);
}

#[tokio::test]
async fn the_admin_api_lists_and_rotates_keys_per_algorithm() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| c.tokens.signing_algorithms = vec!["ES256".into()]).await;
        let admin = |request: reqwest::RequestBuilder| request.bearer_auth(portico_tests::ADMIN_TOKEN).send();
        let keys: serde_json::Value =
            admin(app.http().get(app.url("/admin/v1/keys"))).await.unwrap().json().await.unwrap();
        let mut algs: Vec<&str> = keys.as_array().unwrap().iter().map(|k| k["alg"].as_str().unwrap()).collect();
        algs.sort_unstable();
        assert_eq!(algs, ["ES256", "RS256"], "{backend:?}: {keys}");
        let old_es = keys.as_array().unwrap().iter().find(|k| k["alg"] == "ES256").unwrap()["kid"].clone();
        let rotated = admin(app.http().post(app.url("/admin/v1/keys/rotate?alg=ES256"))).await.unwrap();
        assert_eq!(rotated.status(), 200, "{backend:?}");
        let new_kid = rotated.json::<serde_json::Value>().await.unwrap()["kid"].clone();
        let keys: serde_json::Value =
            admin(app.http().get(app.url("/admin/v1/keys"))).await.unwrap().json().await.unwrap();
        let active: Vec<(String, String)> = keys
            .as_array()
            .unwrap()
            .iter()
            .filter(|k| k["active"] == true)
            .map(|k| (k["alg"].as_str().unwrap().to_owned(), k["kid"].as_str().unwrap().to_owned()))
            .collect();
        assert!(active.contains(&("ES256".to_owned(), new_kid.as_str().unwrap().to_owned())), "{backend:?}: {keys}");
        assert!(active.iter().any(|(alg, _)| alg == "RS256"), "{backend:?}: the RS256 key goes on");
        assert!(keys.as_array().unwrap().iter().any(|k| k["kid"] == old_es && k["active"] == false), "{backend:?}");
        let refused = admin(app.http().post(app.url("/admin/v1/keys/rotate?alg=HS256"))).await.unwrap();
        assert_eq!(refused.status(), 400, "{backend:?}");
    }
}

/// Sets the demo client's `idTokenSignedResponseAlg` through the admin API.
async fn demo_id_token_alg(app: &TestApp, alg: serde_json::Value) {
    let patched = app
        .http()
        .patch(app.url(&format!("/admin/v1/clients/{}", portico_tests::demo::CLIENT_ID)))
        .bearer_auth(portico_tests::ADMIN_TOKEN)
        .json(&serde_json::json!({ "idTokenSignedResponseAlg": alg }))
        .send()
        .await
        .unwrap();
    assert_eq!(patched.status(), 200, "{:?}", app.backend);
}

/// An admin API read.
async fn admin_read(app: &TestApp, path: &str) -> serde_json::Value {
    let response = app.http().get(app.url(path)).bearer_auth(portico_tests::ADMIN_TOKEN).send().await.unwrap();
    response.json().await.unwrap()
}

#[tokio::test]
async fn an_algorithm_taken_off_the_configuration_is_retired_once_no_client_uses_it() {
    // Base64 of 32 bytes: "two-configurations-one-secret-32".
    const SECRET: &str = "dHdvLWNvbmZpZ3VyYXRpb25zLW9uZS1zZWNyZXQtMzI=";
    for backend in backends() {
        // Yesterday's configuration signed with ES256 too.
        let before = TestApp::spawn_with(backend, |c| {
            c.secret_key = Some(SECRET.to_owned());
            c.tokens.signing_algorithms = vec!["ES256".into()];
        })
        .await;
        let admin =
            |app: &TestApp, path: &str| app.http().post(app.url(path)).bearer_auth(portico_tests::ADMIN_TOKEN).send();
        let refused = admin(&before, "/admin/v1/keys/retire?alg=ES256").await.unwrap();
        assert_eq!(refused.status(), 409, "{backend:?}: configured");
        assert!(refused.text().await.unwrap().contains("tokens.signing_algorithms"));
        demo_id_token_alg(&before, "ES256".into()).await;
        let es256 = before.identity.tokens.keys.signing_key_for(Algorithm::Es256).await.unwrap().kid().to_owned();

        // Today's configuration does not name ES256 (the same database).
        let (url, issuer) = (before.config.database_url.clone(), before.config.public_url.clone());
        let app = TestApp::spawn_with(backend, |c| {
            c.secret_key = Some(SECRET.to_owned());
            c.database_url = url;
            c.public_url = issuer;
        })
        .await;
        let refused = admin(&app, "/admin/v1/keys/retire?alg=ES256").await.unwrap();
        assert_eq!(refused.status(), 409, "{backend:?}: a client uses it");
        assert!(refused.text().await.unwrap().contains(portico_tests::demo::CLIENT_ID));
        assert!(published_kids(&app).await.contains(&es256), "{backend:?}: still published");

        demo_id_token_alg(&app, serde_json::Value::Null).await;
        let retired = admin(&app, "/admin/v1/keys/retire?alg=ES256").await.unwrap();
        assert_eq!(retired.status(), 200, "{backend:?}");
        assert_eq!(retired.json::<serde_json::Value>().await.unwrap()["kid"], es256.as_str());
        let keys = admin_read(&app, "/admin/v1/keys").await;
        let key = keys.as_array().unwrap().iter().find(|k| k["kid"] == es256.as_str()).unwrap().clone();
        assert_eq!(key["active"], false, "{backend:?}: {keys}");
        assert!(keys.as_array().unwrap().iter().any(|k| k["alg"] == "RS256" && k["active"] == true), "RS256 signs on");
        let audit = admin_read(&app, "/admin/v1/audit?kind=key.retired").await;
        assert_eq!(audit["events"][0]["detail"]["kid"], es256.as_str(), "{backend:?}: {audit}");

        // Published until every token it signed has expired, then gone.
        assert!(published_kids(&app).await.contains(&es256), "{backend:?}: published while its tokens live");
        app.clock.advance(app.identity.settings.key_retention() + Duration::seconds(1));
        assert!(!published_kids(&app).await.contains(&es256), "{backend:?}: gone after the retention");
        let again = admin(&app, "/admin/v1/keys/retire?alg=ES256").await.unwrap();
        assert_eq!(again.status(), 404, "{backend:?}: no active ES256 key any more");
    }
}
