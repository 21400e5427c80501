//! Token signing keys inside an HSM (SoftHSM2 through PKCS#11): generated
//! in the token and never extractable, storage keeping only their label;
//! tokens they sign verify with openid-client against the JWKS; rotation;
//! an HSM that cannot sign answers 503 with `Retry-After`, spends nothing,
//! and the service recovers without a restart.

use cryptoki::session::UserType;
use cryptoki::types::AuthPin;
use portico_model::key::Algorithm;
use portico_tests::softhsm::{self, PIN};
use portico_tests::{Pkce, TestApp, backends, jwt_header};

use crate::openid_client::{library, relying_party};

fn with_hsm(config: &mut portico_server::Config, token: &softhsm::Token, default: &str, algorithms: &[&str]) {
    config.tokens.signing_algorithm = default.into();
    config.tokens.signing_algorithms = algorithms.iter().map(|a| (*a).to_owned()).collect();
    config.tokens.hsm = portico_server::config::HsmConfig {
        module: Some(token.module.clone()),
        token_label: token.label.clone(),
        pin: Some(PIN.into()),
        pin_file: None,
        algorithms: algorithms.iter().map(|a| (*a).to_owned()).collect(),
    };
}

/// Where the active key of `alg` lives, and its `kid`.
async fn active_key(app: &TestApp, alg: Algorithm) -> (String, portico_tokens::KeyLocation) {
    let secret = portico_server::secret::InstanceSecret::load(&app.config).unwrap();
    let records = app.store.list_signing_keys().await.unwrap();
    let record = records.iter().find(|r| r.alg == alg.as_str() && r.retired_at.is_none()).expect("an active key");
    (record.kid.clone(), portico_tokens::key_location(&secret.sealer(), record).unwrap())
}

#[tokio::test]
async fn tokens_signed_inside_the_hsm_verify_with_openid_client_and_the_keys_never_leave_it() {
    let Some(token) = softhsm::token("keys") else { return };
    let Some(library) = library() else { return };
    for (backend, alg) in backends().into_iter().cycle().zip(["ES256", "PS256", "RS256"]) {
        let app =
            TestApp::spawn_with(backend, |config| with_hsm(config, &token, alg, &["ES256", "PS256", "RS256"])).await;
        let algorithm = Algorithm::parse(alg).unwrap();
        let (kid, location) = active_key(&app, algorithm).await;
        let portico_tokens::KeyLocation::Hsm(label) = location else {
            panic!("{backend:?} {alg}: the key is kept in storage, not in the HSM")
        };
        let hsm = portico_hsm::Hsm::open(&token.module, &token.label, PIN).unwrap();
        assert!(hsm.private_key_is_protected(&label).unwrap(), "{alg}: sensitive, not extractable, value not shown");

        let outcome = relying_party(&app, &library, alg, "ivan", "ivan-password").await;
        assert_eq!(outcome["idTokenAlg"], alg, "{backend:?}: {outcome}");
        assert_eq!(outcome["refreshedIdTokenAlg"], alg, "{backend:?}: {outcome}");
        let tokens = app.tokens_for("maria", "maria-password").await;
        assert_eq!(jwt_header(&tokens.access_token)["kid"], kid.as_str(), "signed by the HSM's key");

        // Rotation makes the next key inside the HSM too; the old one stays
        // published, and tokens it signed stay good.
        let rotate = app
            .http()
            .post(app.url(&format!("/admin/v1/keys/rotate?alg={alg}")))
            .bearer_auth(portico_tests::ADMIN_TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(rotate.status(), 200, "{alg}: {}", rotate.text().await.unwrap_or_default());
        let (new_kid, location) = active_key(&app, algorithm).await;
        assert_ne!(new_kid, kid);
        assert!(matches!(location, portico_tokens::KeyLocation::Hsm(_)), "{alg}: the new key is in the HSM too");
        let jwks: serde_json::Value =
            app.http().get(app.url("/oauth2/jwks")).send().await.unwrap().json().await.unwrap();
        let kids: Vec<&str> = jwks["keys"].as_array().unwrap().iter().filter_map(|k| k["kid"].as_str()).collect();
        assert!(kids.contains(&kid.as_str()) && kids.contains(&new_kid.as_str()), "{kids:?}");
        assert_eq!(app.liveness(&tokens.access_token).await, 200, "a token of the old key stays good");
        let outcome = relying_party(&app, &library, alg, "ivan", "ivan-password").await;
        assert_eq!(outcome["idTokenAlg"], alg, "{backend:?} after rotation: {outcome}");
    }
}

#[tokio::test]
async fn an_hsm_that_cannot_sign_answers_503_spends_nothing_and_recovers_without_restart() {
    let Some(token) = softhsm::token("outage") else { return };
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |config| with_hsm(config, &token, "ES256", &["ES256"])).await;
        let pkce = Pkce::new();
        let code = app.login_for_code(&app.browser(), &pkce, "ivan", "ivan-password").await;

        // The operator's mistake in the HSM: the user PIN changed and every
        // session logged out (C_Logout ends the login of all of them).
        let module = portico_hsm::module(&token.module).unwrap();
        let slot = module
            .get_slots_with_token()
            .unwrap()
            .into_iter()
            .find(|slot| module.get_token_info(*slot).unwrap().label().trim_end() == token.label)
            .unwrap();
        let session = module.open_rw_session(slot).unwrap();
        let _ = session.login(UserType::User, Some(&AuthPin::from(PIN.to_owned())));
        session.set_pin(&AuthPin::from(PIN.to_owned()), &AuthPin::from("999999".to_owned())).unwrap();
        session.logout().unwrap();

        let refused = app.exchange(&code, &pkce.verifier).await;
        assert_eq!(refused.status(), 503, "{backend:?}");
        assert_eq!(refused.headers()["retry-after"], "5");
        let body: serde_json::Value = refused.json().await.unwrap();
        assert_eq!(body["error"], "temporarily_unavailable", "{body}");
        let again = app.exchange(&code, &pkce.verifier).await;
        assert_eq!(again.status(), 503, "{backend:?}: still down, and no 500");

        // The PIN restored: the same code works, without a restart.
        session.login(UserType::User, Some(&AuthPin::from("999999".to_owned()))).unwrap();
        session.set_pin(&AuthPin::from("999999".to_owned()), &AuthPin::from(PIN.to_owned())).unwrap();
        drop(session);
        let answered = app.exchange(&code, &pkce.verifier).await;
        assert_eq!(answered.status(), 200, "{backend:?}: the code was not spent by the failures");
        let tokens: serde_json::Value = answered.json().await.unwrap();
        let kid = jwt_header(tokens["access_token"].as_str().unwrap())["kid"].as_str().unwrap().to_owned();
        assert_eq!(kid, active_key(&app, Algorithm::Es256).await.0);
    }
}

#[tokio::test]
async fn an_hsm_configuration_that_cannot_work_stops_the_start_with_the_reason() {
    let Some(token) = softhsm::token("keys") else { return };
    type Change = Box<dyn Fn(&mut portico_server::Config)>;
    let cases: [(&str, Change); 5] = [
        ("refuses the PIN", Box::new(|c| c.tokens.hsm.pin = Some("000000".into()))),
        ("does not load", Box::new(|c| c.tokens.hsm.module = Some("/nonexistent/libpkcs11.so".into()))),
        ("no token labelled", Box::new(|c| c.tokens.hsm.token_label = "no-such-token".into())),
        ("not one of RS256, PS256, ES256", Box::new(|c| c.tokens.hsm.algorithms = vec!["EdDSA".into()])),
        ("set exactly one of pin", Box::new(|c| c.tokens.hsm.pin = None)),
    ];
    for (expected, change) in cases {
        let dir = portico_tests::TempDir::new();
        let mut config = portico_server::Config { data_dir: dir.0.clone(), ..Default::default() };
        with_hsm(&mut config, &token, "ES256", &["ES256"]);
        change(&mut config);
        let clock = std::sync::Arc::new(portico_model::clock::SystemClock);
        let error = match portico_server::app::App::build(config, clock, true).await {
            Ok(_) => panic!("started with an HSM configuration that cannot work ({expected})"),
            Err(error) => format!("{error:#}"),
        };
        assert!(error.contains(expected), "{expected}: {error}");
    }
}
