//! Signed authorization responses (JARM) on both backends: `jwt` and
//! `query.jwt` redirect with one parameter, `response`; `form_post.jwt`
//! posts it; the JWT carries the parameters beside `iss`, `aud` and `exp`,
//! is signed with the client's `authorization_signed_response_alg` (else
//! the server's default) under a key the JWKS publishes, for errors too;
//! a client whose algorithm the server holds no key of is told so,
//! unsigned.

use portico_model::clock::Clock as _;
use portico_tests::{Pkce, TestApp, backends, demo, jwt_header, location, location_params};
use serde_json::{Value, json};

/// The one `response` parameter of a JARM redirect to `redirect_uri`.
fn response_param(response: &reqwest::Response, redirect_uri: &str) -> String {
    assert_eq!(response.status(), 302);
    assert!(location(response).starts_with(&format!("{redirect_uri}?")), "{}", location(response));
    let params = location_params(response);
    assert_eq!(params.len(), 1, "only `response`, `iss` inside it: {params:?}");
    let (name, jwt) = params.into_iter().next().unwrap();
    assert_eq!(name, "response");
    jwt
}

/// The hidden fields of a form_post page.
fn posted_fields(html: &str) -> Vec<(String, String)> {
    let attr = |tag: &str, name: &str| {
        let start = tag.find(&format!("{name}=\"")).map(|i| i + name.len() + 2)?;
        Some(tag[start..start + tag[start..].find('"')?].to_owned())
    };
    html.split("<input ")
        .skip(1)
        .map(|input| {
            let tag = &input[..input.find('>').unwrap()];
            (attr(tag, "name").unwrap(), attr(tag, "value").unwrap())
        })
        .collect()
}

/// `jwt`'s claims, once its signature verifies with the key the JWKS
/// publishes under its `kid`.
async fn verified(app: &TestApp, jwt: &str) -> Value {
    let header = jwt_header(jwt);
    assert_eq!(header["typ"], "JWT");
    let set: Value = app.http().get(app.url("/oauth2/jwks")).send().await.unwrap().json().await.unwrap();
    let jwk = set["keys"].as_array().unwrap().iter().find(|k| k["kid"] == header["kid"]).expect("a published key");
    let key = portico_crypto::jwt::VerifyingKey::from_jwk(&serde_json::from_value(jwk.clone()).unwrap()).unwrap();
    let (_, claims) = portico_crypto::jwt::verify::<Value>(jwt, |_| Some(&key)).expect("a good signature");
    assert_eq!(claims["iss"], app.base);
    claims
}

#[tokio::test]
async fn a_signed_response_carries_the_code_which_redeems() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        for mode in ["jwt", "query.jwt"] {
            let pkce = Pkce::new();
            let url = app.authorize_url(&pkce, &[("response_mode", Some(mode))]);
            let response = app.login_at(&app.browser(), &url, "ivan", "ivan-password").await;
            let jwt = response_param(&response, &app.redirect_uri());
            assert_eq!(jwt_header(&jwt)["alg"], "RS256", "{backend:?}: the server's default");
            let claims = verified(&app, &jwt).await;
            assert_eq!(claims["aud"], demo::CLIENT_ID, "{backend:?} {mode}");
            assert_eq!(claims["state"], "st-123");
            // As long as the code lives (five minutes).
            assert_eq!(claims["exp"], app.clock.now().unix_timestamp() + 300);
            let code = claims["code"].as_str().expect("a code");
            let exchanged = app.exchange(code, &pkce.verifier).await;
            assert_eq!(exchanged.status(), 200, "{backend:?} {mode}: the code inside redeems");
        }
    }
}

#[tokio::test]
async fn errors_are_signed_and_posted_and_an_unknown_jwt_mode_is_refused_plainly() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let pkce = Pkce::new();
        // prompt=none without a session, in form_post.jwt: one field, signed.
        let url = app.authorize_url(&pkce, &[("response_mode", Some("form_post.jwt")), ("prompt", Some("none"))]);
        let page = app.browser().get(url).send().await.unwrap();
        assert_eq!(page.status(), 200, "{backend:?}: a page that posts");
        assert_eq!(page.headers()["cache-control"], "no-store");
        let fields = posted_fields(&page.text().await.unwrap());
        assert_eq!(fields.len(), 1, "{fields:?}");
        assert_eq!(fields[0].0, "response");
        let claims = verified(&app, &fields[0].1).await;
        assert_eq!((claims["error"].as_str(), claims["state"].as_str()), (Some("login_required"), Some("st-123")));
        assert_eq!(claims["aud"], demo::CLIENT_ID);

        // A parameter error after response_mode: signed as well.
        let url = app.authorize_url(&pkce, &[("response_mode", Some("jwt")), ("code_challenge_method", Some("plain"))]);
        let response = app.browser().get(url).send().await.unwrap();
        let claims = verified(&app, &response_param(&response, &app.redirect_uri())).await;
        assert_eq!(claims["error"], "invalid_request", "{backend:?}");
        assert_eq!(claims["error_description"], "OAuth 2.0 Parameter: code_challenge_method");

        // fragment.jwt is not offered for `code`: refused in the query.
        let url = app.authorize_url(&pkce, &[("response_mode", Some("fragment.jwt"))]);
        let response = app.browser().get(url).send().await.unwrap();
        let params: Vec<(String, String)> = location_params(&response);
        assert!(params.contains(&("error".into(), "invalid_request".into())), "{backend:?}: {params:?}");
        assert!(params.contains(&("error_description".into(), "OAuth 2.0 Parameter: response_mode".into())));
    }
}

#[tokio::test]
async fn leaving_a_jarm_login_answers_access_denied_signed() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let browser = app.browser();
        let url = app.authorize_url(&Pkce::new(), &[("response_mode", Some("query.jwt"))]);
        assert_eq!(location(&browser.get(url).send().await.unwrap()), "/login", "{backend:?}");
        let response = browser.get(app.url("/login/return")).send().await.unwrap();
        let claims = verified(&app, &response_param(&response, &app.redirect_uri())).await;
        assert_eq!((claims["error"].as_str(), claims["state"].as_str()), (Some("access_denied"), Some("st-123")));
    }
}

#[tokio::test]
async fn the_clients_algorithm_signs_and_one_without_a_key_is_refused_unsigned() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.tokens.signing_algorithms = vec!["RS256".into(), "ES256".into()];
            // The row changed below is read as it is, not from the node's cache.
            c.database_cache_staleness_ms = 0;
        })
        .await;
        let body = json!({
            "clientId": "jarm-rp",
            "secret": "a-secret-of-the-jarm-client-0123456789",
            "redirectUris": ["https://rp.example/cb"],
            "authorizationSignedResponseAlg": "ES256",
        });
        let created = app.admin_create_client(&body).await;
        assert_eq!(created.status(), 201, "{backend:?}: {}", created.text().await.unwrap());
        let created: Value = created.json().await.unwrap();
        assert_eq!(created["client"]["authorizationSignedResponseAlg"], "ES256", "{backend:?}: the admin API shows it");

        let url = |state: &str| {
            let mut url = url::Url::parse(&app.url("/oauth2/authorize")).unwrap();
            url.query_pairs_mut().extend_pairs([
                ("client_id", "jarm-rp"),
                ("redirect_uri", "https://rp.example/cb"),
                ("response_type", "code"),
                ("response_mode", "jwt"),
                ("scope", "openid"),
                ("state", state),
                ("code_challenge", Pkce::new().challenge.as_str()),
                ("code_challenge_method", "S256"),
                ("prompt", "none"),
            ]);
            url.to_string()
        };
        let response = app.browser().get(url("s-1")).send().await.unwrap();
        let jwt = response_param(&response, "https://rp.example/cb");
        assert_eq!(jwt_header(&jwt)["alg"], "ES256", "{backend:?}");
        let claims = verified(&app, &jwt).await;
        assert_eq!((claims["aud"].as_str(), claims["error"].as_str()), (Some("jarm-rp"), Some("login_required")));

        // The client's algorithm is one the server no longer signs with (a
        // configuration changed under it): nothing can be signed, and the
        // client hears why in the plain query.
        app.run_sql(
            "UPDATE clients SET security = '{\"authorization_signed_response_alg\":\"EdDSA\"}' \
             WHERE client_id = 'jarm-rp'",
        )
        .await;
        let response = app.browser().get(url("s-2")).send().await.unwrap();
        let params = location_params(&response);
        let get = |name: &str| params.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
        assert_eq!(get("error"), Some("invalid_request"), "{backend:?}: {params:?}");
        assert_eq!(get("state"), Some("s-2"));
        assert_eq!(get("iss"), Some(app.base.as_str()));
        assert!(get("error_description").unwrap().contains("no EdDSA key"), "{params:?}");
    }
}

#[tokio::test]
async fn discovery_and_registration_speak_of_jarm() {
    let app = TestApp::spawn_with(backends()[0], |c| {
        c.tokens.signing_algorithms = vec!["RS256".into(), "ES256".into()];
        c.registration.initial_access_token = Some("the-initial-access-token-0123456789".to_owned());
    })
    .await;
    let metadata: Value = app.discovery().await;
    assert_eq!(
        metadata["response_modes_supported"],
        json!(["query", "form_post", "jwt", "query.jwt", "form_post.jwt"])
    );
    assert_eq!(metadata["authorization_signing_alg_values_supported"], json!(["RS256", "ES256"]));

    let token = Some("the-initial-access-token-0123456789");
    let (status, answer) = app
        .register(
            token,
            &json!({"redirect_uris": ["https://f.example/cb"], "authorization_signed_response_alg": "ES256"}),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["authorization_signed_response_alg"], "ES256");
    for (alg, why) in [("none", "none"), ("EdDSA", "no EdDSA key")] {
        let metadata = json!({"redirect_uris": ["https://f.example/cb"], "authorization_signed_response_alg": alg});
        let (status, answer) = app.register(token, &metadata).await;
        assert_eq!(status, 400, "{alg}: {answer}");
        assert_eq!(answer["error"], "invalid_client_metadata");
        let description = answer["error_description"].as_str().unwrap();
        assert!(description.contains("authorization_signed_response_alg"), "{alg}: {description} ({why})");
    }
}
