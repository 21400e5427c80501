//! OpenID Connect Back-Channel Logout 1.0: when a session ends, each client
//! signed in under it that registered a `backchannel_logout_uri` receives a
//! signed logout token, durably, retried until it acknowledges.

use std::sync::{Arc, Mutex};
use std::time::{Duration as StdDuration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use openidconnect::JsonWebKey as _;
use openidconnect::core::{CoreJsonWebKeySet, CoreJwsSigningAlgorithm};
use portico_model::clock::Clock as _;
use portico_tests::{Pkce, TestApp, backends, jwt_claims, jwt_header, location_param};
use serde_json::Value;
use time::Duration;

/// A request the receiver got: its content type and body.
type Received = (Option<String>, String);

/// A relying party's back-channel endpoint: records each form and answers
/// the next status (200 when none is queued).
#[derive(Clone, Default)]
struct Receiver {
    got: Arc<Mutex<Vec<Received>>>,
    answers: Arc<Mutex<Vec<u16>>>,
}

impl Receiver {
    async fn start() -> (String, Self) {
        let state = Self::default();
        let app = axum::Router::new()
            .route(
                "/backchannel",
                axum::routing::post(
                    |State(r): State<Receiver>, headers: axum::http::HeaderMap, body: String| async move {
                        let content_type = headers.get("content-type").map(|v| v.to_str().unwrap().to_owned());
                        r.got.lock().unwrap().push((content_type, body));
                        let status = r.answers.lock().unwrap().pop().unwrap_or(200);
                        StatusCode::from_u16(status).unwrap()
                    },
                ),
            )
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/backchannel", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, state)
    }

    fn count(&self) -> usize {
        self.got.lock().unwrap().len()
    }

    /// Waits (up to 10 s) until `n` requests have arrived.
    async fn until(&self, n: usize) {
        let deadline = Instant::now() + StdDuration::from_secs(10);
        while self.count() < n {
            assert!(Instant::now() < deadline, "{} of {n} back-channel requests arrived", self.count());
            tokio::time::sleep(StdDuration::from_millis(10)).await;
        }
    }
}

/// Ivan signed in to the demo client in a browser, then, from the same
/// session, to client `bc` whose back-channel endpoint is `uri`. The
/// browser and `bc`'s id_token.
async fn signed_in_to_both(app: &TestApp, uri: &str) -> (reqwest::Client, String) {
    app.add_client_with("bc", "bc-secret-0123456789", |client| {
        client.redirect_uris = vec!["https://bc.example/cb".into()];
        client.post_logout_redirect_uris = Vec::new();
        client.backchannel_logout_uri = Some(uri.to_owned());
    })
    .await;
    let browser = app.browser();
    app.login_for_code(&browser, &Pkce::new(), "ivan", "ivan-password").await;
    let pkce = Pkce::new();
    let url = app.authorize_url(
        &pkce,
        &[("client_id", Some("bc")), ("redirect_uri", Some("https://bc.example/cb")), ("scope", Some("openid"))],
    );
    let code = location_param(&browser.get(url).send().await.unwrap(), "code").expect("a code from the session");
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("code_verifier", pkce.verifier.as_str()),
        ("redirect_uri", "https://bc.example/cb"),
        ("client_id", "bc"),
        ("client_secret", "bc-secret-0123456789"),
    ];
    let tokens: Value =
        app.http().post(app.url("/oauth2/token")).form(&form).send().await.unwrap().json().await.unwrap();
    (browser, tokens["id_token"].as_str().unwrap().to_owned())
}

/// Checks a logout token as a relying party must (§2.6), the signature
/// with the `openidconnect` crate against the published key set.
async fn check_logout_token(app: &TestApp, token: &str, sid: &str) {
    let header = jwt_header(token);
    assert_eq!((header["typ"].as_str(), header["alg"].as_str()), (Some("logout+jwt"), Some("RS256")));
    let jwks: CoreJsonWebKeySet = app.http().get(app.url("/oauth2/jwks")).send().await.unwrap().json().await.unwrap();
    let key = jwks.keys().iter().find(|k| k.key_id().map(|id| id.as_str()) == header["kid"].as_str()).expect("kid");
    let (signed, signature) = token.rsplit_once('.').unwrap();
    let signature = portico_crypto::b64url_decode(signature).unwrap();
    key.verify_signature(&CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256, signed.as_bytes(), &signature)
        .expect("signed by a published key");
    let claims = jwt_claims(token);
    let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
    assert_eq!(claims["iss"], app.base.as_str());
    assert_eq!(claims["aud"], "bc");
    assert_eq!(claims["sub"], ivan.id.to_string().as_str());
    assert_eq!(claims["sid"], sid);
    assert_eq!(claims["events"], serde_json::json!({ "http://schemas.openid.net/event/backchannel-logout": {} }));
    assert!(claims["jti"].as_str().is_some_and(|j| !j.is_empty()));
    let (iat, exp) = (claims["iat"].as_i64().unwrap(), claims["exp"].as_i64().unwrap());
    assert!(iat <= app.clock.now().unix_timestamp() && exp > iat, "{claims}");
    assert!(claims.get("nonce").is_none(), "a logout token never carries a nonce");
}

#[tokio::test]
async fn a_logout_token_reaches_the_client_and_is_retried_until_acknowledged() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| c.login.logout_delivery_interval_ms = 20).await;
        let (uri, receiver) = Receiver::start().await;
        let (browser, id_token) = signed_in_to_both(&app, &uri).await;
        let sid = jwt_claims(&id_token)["sid"].as_str().unwrap().to_owned();
        receiver.answers.lock().unwrap().push(503);

        let response = browser.get(app.url("/oauth2/logout")).query(&[("id_token_hint", &id_token)]).send().await;
        assert_eq!(response.unwrap().status(), 200, "{backend:?}");
        receiver.until(1).await;
        // The first attempt was refused: the next waits 5 s of the clock.
        tokio::time::sleep(StdDuration::from_millis(200)).await;
        assert_eq!(receiver.count(), 1, "{backend:?}: not tried again before its time");
        app.clock.advance(Duration::seconds(5));
        receiver.until(2).await;

        let got = receiver.got.lock().unwrap().clone();
        for (content_type, body) in &got {
            assert_eq!(content_type.as_deref(), Some("application/x-www-form-urlencoded"));
            let form: Vec<(String, String)> = form_urlencoded::parse(body.as_bytes()).into_owned().collect();
            assert_eq!(form.len(), 1, "{body}");
            assert_eq!(form[0].0, "logout_token");
            check_logout_token(&app, &form[0].1, &sid).await;
        }
        // Acknowledged: nothing is left to deliver, and the demo client (no
        // back-channel endpoint) was owed nothing.
        let later = app.clock.now() + Duration::days(2);
        assert_eq!(app.store.claim_logout_notices(later, later, 10).await.unwrap(), vec![], "{backend:?}");
        assert_eq!(receiver.count(), 2);
    }
}

#[tokio::test]
async fn a_logout_never_acknowledged_is_given_up_after_the_retry_window_and_audited() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.login.logout_delivery_interval_ms = 20;
            c.login.logout_retry_window_secs = 60;
        })
        .await;
        let (uri, receiver) = Receiver::start().await;
        receiver.answers.lock().unwrap().extend([500, 500, 500]);
        let (_, id_token) = signed_in_to_both(&app, &uri).await;
        let sid = jwt_claims(&id_token)["sid"].as_str().unwrap().to_owned();
        // An operator ends the session: the same notices follow.
        let sid_id: portico_model::ids::SessionId = sid.parse::<uuid::Uuid>().unwrap().into();
        let session = app.store.find_session_by_id(sid_id, app.clock.now()).await.unwrap().unwrap();
        let ended =
            portico_identity::login::session::end(app.store.as_ref(), &session, "operator", None, app.clock.now());
        assert_eq!(ended.await.unwrap().unwrap().notices, 1, "{backend:?}: one client listens");
        receiver.until(1).await;
        app.clock.advance(Duration::seconds(61));
        receiver.until(2).await;
        let deadline = Instant::now() + StdDuration::from_secs(10);
        loop {
            let audit = app.store.recent_audit(5).await.unwrap();
            if let Some(event) = audit.iter().find(|e| e.kind == "logout.undelivered") {
                assert_eq!(event.detail["sid"], sid.as_str());
                assert_eq!(event.detail["attempts"], 2);
                break;
            }
            assert!(Instant::now() < deadline, "{backend:?}: the notice was not given up on");
            tokio::time::sleep(StdDuration::from_millis(10)).await;
        }
        app.clock.advance(Duration::hours(2));
        tokio::time::sleep(StdDuration::from_millis(200)).await;
        assert_eq!(receiver.count(), 2, "{backend:?}: given up means never tried again");
    }
}

/// Outside the demo, a back-channel address into the bank's own network is
/// never posted to, even when it was registered before the rule (straight
/// in the store here): neither by host name (`localhost` resolves to
/// loopback) nor as an IP literal (which no resolver sees).
#[tokio::test]
async fn a_back_channel_address_into_the_bank_is_never_posted_to_outside_the_demo() {
    let (uri, receiver) = Receiver::start().await;
    for address in [uri.clone(), uri.replace("127.0.0.1", "localhost")] {
        let app = TestApp::spawn_with(backends()[0], |c| {
            c.login.logout_delivery_interval_ms = 20;
            c.notifications.allow_insecure_callbacks = Some(false);
        })
        .await;
        let (browser, id_token) = signed_in_to_both(&app, &address).await;
        let response = browser.get(app.url("/oauth2/logout")).query(&[("id_token_hint", &id_token)]).send().await;
        assert_eq!(response.unwrap().status(), 200);
        // Several delivery passes.
        tokio::time::sleep(StdDuration::from_millis(500)).await;
        assert_eq!(receiver.count(), 0, "{address}: nothing reached the internal address");
        let later = app.clock.now() + Duration::seconds(30);
        let owed = app.store.claim_logout_notices(later, later, 10).await.unwrap();
        assert_eq!(owed.len(), 1, "{address}: the notice is still owed, not delivered");
    }
}
