//! `POST /oauth2/introspect` (RFC 7662) and its signed answer (RFC 9701),
//! on both backends: what a live token carries, exactly `{"active": false}`
//! for anything else, who may learn what, and the client's authentication.

use portico_model::clock::Clock as _;
use portico_tests::{TestApp, backends, demo, jwt_claims, jwt_header};
use serde_json::{Value, json};

/// Introspects `token` as `client_id` (`client_secret_basic`), asking for
/// `accept`; the status, content type and body.
async fn introspect(app: &TestApp, client: (&str, &str), token: &str, accept: &str) -> (u16, String, String) {
    let response = app
        .http()
        .post(app.url("/oauth2/introspect"))
        .basic_auth(client.0, Some(client.1))
        .header("accept", accept)
        .form(&[("token", token)])
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let kind = response.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    assert_eq!(response.headers().get("cache-control").map(|v| v.to_str().unwrap()), Some("no-store"));
    (status, kind, response.text().await.unwrap())
}

async fn answer(app: &TestApp, client: (&str, &str), token: &str) -> Value {
    let (status, kind, body) = introspect(app, client, token, "application/json").await;
    assert_eq!((status, kind.as_str()), (200, "application/json"), "{body}");
    serde_json::from_str(&body).unwrap()
}

const DEMO: (&str, &str) = (demo::CLIENT_ID, demo::CLIENT_SECRET);
const RESOURCE_SERVER: (&str, &str) = ("resource-server", "resource-server-secret-0123456789");

#[tokio::test]
async fn a_live_token_says_what_it_carries_and_anything_else_is_exactly_inactive() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        app.add_client(RESOURCE_SERVER.0, RESOURCE_SERVER.1).await;
        let tokens = app.tokens_for("ivan", "ivan-password").await;
        let refresh = tokens.refresh_token.clone().unwrap();
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
        let claims = jwt_claims(&tokens.access_token);

        // An access token, to its own client and to a resource server alike.
        for caller in [DEMO, RESOURCE_SERVER] {
            let active = answer(&app, caller, &tokens.access_token).await;
            assert_eq!(
                active,
                json!({
                    "active": true, "scope": claims["scope"], "client_id": demo::CLIENT_ID, "token_type": "Bearer",
                    "exp": claims["exp"], "iat": claims["iat"], "sub": ivan.id.to_string(), "aud": demo::CLIENT_ID,
                    "iss": app.base, "jti": claims["jti"]
                }),
                "{backend:?} {}",
                caller.0
            );
        }
        // A refresh token, to its own client only.
        let active = answer(&app, DEMO, &refresh).await;
        assert_eq!((active["active"].clone(), active["token_type"].clone()), (json!(true), json!("refresh_token")));
        assert_eq!(active["sub"], ivan.id.to_string());
        assert_eq!(answer(&app, RESOURCE_SERVER, &refresh).await, json!({"active": false}), "another client's");

        // Unknown, malformed, an id_token: nothing to say.
        let id_token = tokens.id_token.clone().unwrap();
        for token in ["garbage", "a.b.c", id_token.as_str(), "x".repeat(4000).as_str()] {
            assert_eq!(answer(&app, DEMO, token).await, json!({"active": false}), "{backend:?}");
        }

        // Introspection changes nothing: the refresh token still rotates.
        let rotated = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", &refresh)]).await;
        assert_eq!(rotated.status(), 200);
        let rotated: Value = rotated.json().await.unwrap();
        assert_eq!(answer(&app, DEMO, &refresh).await, json!({"active": false}), "spent by the rotation");

        // Revoking the grant ends the access token and the new refresh token.
        let new_refresh = rotated["refresh_token"].as_str().unwrap();
        let revoked = app.http().post(app.url("/oauth2/revoke")).basic_auth(DEMO.0, Some(DEMO.1));
        assert_eq!(revoked.form(&[("token", new_refresh)]).send().await.unwrap().status(), 200);
        assert_eq!(answer(&app, RESOURCE_SERVER, &tokens.access_token).await, json!({"active": false}));
        assert_eq!(answer(&app, DEMO, new_refresh).await, json!({"active": false}));

        // An expired access token.
        let later = app.tokens_for("maria", "maria-password").await;
        assert_eq!(answer(&app, DEMO, &later.access_token).await["active"], true);
        app.clock.advance(time::Duration::minutes(16));
        assert_eq!(answer(&app, DEMO, &later.access_token).await, json!({"active": false}), "{backend:?}: expired");
    }
}

#[tokio::test]
async fn the_signed_answer_is_a_jwt_for_the_caller_verified_with_the_published_key() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| c.tokens.signing_algorithm = "ES256".into()).await;
        app.add_client(RESOURCE_SERVER.0, RESOURCE_SERVER.1).await;
        let tokens = app.tokens_for("ivan", "ivan-password").await;
        let (status, kind, jwt) =
            introspect(&app, RESOURCE_SERVER, &tokens.access_token, "application/token-introspection+jwt").await;
        assert_eq!((status, kind.as_str()), (200, "application/token-introspection+jwt"), "{backend:?}: {jwt}");
        let header = jwt_header(&jwt);
        assert_eq!((header["typ"].as_str(), header["alg"].as_str()), (Some("token-introspection+jwt"), Some("ES256")));
        let claims = jwt_claims(&jwt);
        assert_eq!(
            (claims["iss"].as_str(), claims["aud"].as_str()),
            (Some(app.base.as_str()), Some(RESOURCE_SERVER.0))
        );
        assert_eq!(claims["iat"], app.clock.now().unix_timestamp());
        assert_eq!(claims["token_introspection"], answer(&app, RESOURCE_SERVER, &tokens.access_token).await);

        // The signature, with the key the JWKS publishes under its kid.
        let set: Value = app.http().get(app.url("/oauth2/jwks")).send().await.unwrap().json().await.unwrap();
        let jwk = set["keys"].as_array().unwrap().iter().find(|k| k["kid"] == header["kid"]).expect("a published key");
        let key = portico_crypto::jwt::VerifyingKey::from_jwk(&serde_json::from_value(jwk.clone()).unwrap()).unwrap();
        let verified = portico_crypto::jwt::verify::<Value>(&jwt, |_| Some(&key));
        assert_eq!(verified.unwrap().1, claims);

        let (_, _, inactive) = introspect(&app, DEMO, "garbage", "application/token-introspection+jwt").await;
        assert_eq!(jwt_claims(&inactive)["token_introspection"], json!({"active": false}));

        // Weights: JSON preferred is JSON (RFC 9110 §12.5.1).
        let preferred = "application/json, application/token-introspection+jwt;q=0.5";
        let (status, kind, _) = introspect(&app, RESOURCE_SERVER, &tokens.access_token, preferred).await;
        assert_eq!((status, kind.as_str()), (200, "application/json"), "{backend:?}");
    }
}

#[tokio::test]
async fn only_an_authenticated_client_asks_and_the_token_is_required() {
    let app = TestApp::spawn(backends()[0]).await;
    let tokens = app.tokens_for("ivan", "ivan-password").await;
    let url = app.url("/oauth2/introspect");
    let wrong =
        app.http().post(&url).basic_auth(DEMO.0, Some("wrong")).form(&[("token", tokens.access_token.as_str())]);
    let wrong = wrong.send().await.unwrap();
    assert_eq!(wrong.status(), 401);
    assert_eq!(wrong.json::<Value>().await.unwrap()["error"], "invalid_client");
    let nobody = app.http().post(&url).form(&[("token", tokens.access_token.as_str())]).send().await.unwrap();
    assert_eq!(nobody.status(), 401, "no client, no answer");
    let post = [("client_id", DEMO.0), ("client_secret", DEMO.1)];
    let missing = app.http().post(&url).form(&post).send().await.unwrap();
    assert_eq!(missing.status(), 400);
    assert_eq!(missing.json::<Value>().await.unwrap()["error"], "invalid_request");
    let twice = [("client_id", DEMO.0), ("client_secret", DEMO.1), ("token", "a"), ("token", "b")];
    let twice = app.http().post(&url).form(&twice).send().await.unwrap();
    assert_eq!(twice.status(), 400, "a repeated token");
    let by_post = [("client_id", DEMO.0), ("client_secret", DEMO.1), ("token", tokens.access_token.as_str())];
    let by_post = app.http().post(&url).form(&by_post).send().await.unwrap();
    assert_eq!(by_post.json::<Value>().await.unwrap()["active"], true, "client_secret_post too");
}

/// Introspects `token` with `authorization` as the header, asking for `accept`.
async fn with_header(app: &TestApp, authorization: &str, form: &[(&str, &str)], accept: &str) -> (u16, String) {
    let response = app
        .http()
        .post(app.url("/oauth2/introspect"))
        .header("authorization", authorization)
        .header("accept", accept)
        .form(form)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test]
async fn the_internal_token_introspects_access_tokens_without_a_client() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let tokens = app.tokens_for("ivan", "ivan-password").await;
        let refresh = tokens.refresh_token.clone().unwrap();
        let bearer = format!("Bearer {}", portico_tests::INTERNAL_TOKEN);

        let (status, body) = with_header(&app, &bearer, &[("token", &tokens.access_token)], "application/json").await;
        assert_eq!(status, 200, "{backend:?}: {body}");
        let internal: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(internal, answer(&app, DEMO, &tokens.access_token).await, "what a client learns");
        assert_eq!(internal["active"], true);

        // A refresh token is its own client's business only.
        let (_, body) = with_header(&app, &bearer, &[("token", &refresh)], "application/json").await;
        assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), json!({"active": false}));

        // The signed answer names the internal caller as its audience and
        // is signed with the server's default algorithm.
        let (status, jwt) =
            with_header(&app, &bearer, &[("token", &tokens.access_token)], "application/token-introspection+jwt").await;
        assert_eq!(status, 200, "{backend:?}: {jwt}");
        assert_eq!(jwt_header(&jwt)["alg"], "RS256");
        let claims = jwt_claims(&jwt);
        assert_eq!((claims["aud"].as_str(), claims["iss"].as_str()), (Some("internal"), Some(app.base.as_str())));
        assert_eq!(claims["token_introspection"], internal);

        // A wrong token is no credential; the internal token with a client
        // secret beside it is two methods at once.
        let (status, body) = with_header(&app, "Bearer not-the-internal-token-0000000", &[("token", "x")], "*/*").await;
        assert_eq!(status, 401, "{body}");
        assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["error"], "invalid_client");
        let form = [("token", "x"), ("client_id", DEMO.0), ("client_secret", DEMO.1)];
        let (status, body) = with_header(&app, &bearer, &form, "*/*").await;
        assert_eq!(
            (status, serde_json::from_str::<Value>(&body).unwrap()["error"].clone()),
            (400, json!("invalid_request"))
        );
    }
}

#[tokio::test]
async fn without_an_internal_token_configured_a_bearer_header_is_no_credential() {
    let app = TestApp::spawn_with(portico_tests::Backend::Sqlite, |c| c.internal_token = None).await;
    let tokens = app.tokens_for("ivan", "ivan-password").await;
    let bearer = format!("Bearer {}", portico_tests::INTERNAL_TOKEN);
    let (status, body) = with_header(&app, &bearer, &[("token", &tokens.access_token)], "application/json").await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["error"], "invalid_client");
}
