//! Token signing keys held by a signing program (`tokens.command`):
//! registered with `portico keys import --command-key` (the admin
//! service's `import_key`), storage keeping only the label and the public
//! half; the program (OpenSSL over key files Portico never reads) signs
//! every token, which openid-client verifies against the JWKS; keys that
//! do not sign verifiably are refused at import; a program that fails
//! answers 503, spends nothing, and the same code works once it is back.

use std::sync::Arc;

use portico_admin::AdminService;
use portico_model::audit::Actor;
use portico_model::key::Algorithm;
use portico_tests::signing_program::{SigningProgram, write_program};
use portico_tests::{Pkce, TestApp, backends, jwt_header};
use portico_tokens::{ImportedKey, KeyLocation};

use crate::openid_client::{library, relying_party};

/// The OpenSSL the tests sign with, or `None` (and a skip).
fn openssl() -> Option<String> {
    let openssl = std::env::var("PORTICO_TEST_OPENSSL").ok();
    if openssl.is_none() {
        portico_tests::skipped("PORTICO_TEST_OPENSSL is not set; the signing-program tests sign with openssl");
    }
    openssl
}

fn with_program(config: &mut portico_server::Config, signer: &SigningProgram, default: &str) {
    config.tokens.signing_algorithm = default.into();
    config.tokens.signing_algorithms = vec!["ES256".into(), "PS256".into(), "RS256".into()];
    config.tokens.command.program = signer.program();
}

fn command_key(label: &str, public_key_pem: &[u8]) -> ImportedKey {
    ImportedKey::Command { label: label.to_owned(), public_key_pem: public_key_pem.to_vec() }
}

#[tokio::test]
async fn tokens_signed_by_a_signing_program_verify_with_openid_client_and_its_keys_stay_outside() {
    let Some(openssl) = openssl() else { return };
    let Some(library) = library() else { return };
    let signer = SigningProgram::new(&openssl);
    for (backend, alg) in backends().into_iter().cycle().zip(["ES256", "PS256", "RS256"]) {
        let app = TestApp::spawn_with(backend, |config| with_program(config, &signer, alg)).await;
        let algorithm = Algorithm::parse(alg).unwrap();
        let (before, location) = app.active_signing_key(algorithm).await;
        assert_eq!(location, KeyLocation::Sealed, "the first key is Portico's own");
        let old_tokens = app.tokens_for("maria", "maria-password").await;

        let label = format!("{}-{backend:?}", alg.to_ascii_lowercase());
        let public = signer.make_key(&label, alg == "ES256", 2048);
        let kid = app.admin_service().import_key(&Actor::Cli, algorithm, &command_key(&label, &public)).await.unwrap();
        let (active, location) = app.active_signing_key(algorithm).await;
        assert_eq!((active.as_str(), location), (kid.as_str(), KeyLocation::Command(label.clone())));

        let outcome = relying_party(&app, &library, alg, "ivan", "ivan-password").await;
        assert_eq!(outcome["idTokenAlg"], alg, "{backend:?}: {outcome}");
        assert_eq!(outcome["refreshedIdTokenAlg"], alg, "{backend:?}: {outcome}");
        let tokens = app.tokens_for("maria", "maria-password").await;
        assert_eq!(jwt_header(&tokens.access_token)["kid"], kid.as_str(), "{backend:?}: signed by the program's key");
        assert_eq!(app.liveness(&tokens.access_token).await, 200);

        // The previous key stays published and its tokens good, as after a rotation.
        let jwks: serde_json::Value =
            app.http().get(app.url("/oauth2/jwks")).send().await.unwrap().json().await.unwrap();
        let kids: Vec<&str> = jwks["keys"].as_array().unwrap().iter().filter_map(|k| k["kid"].as_str()).collect();
        assert!(kids.contains(&kid.as_str()) && kids.contains(&before.as_str()), "{kids:?}");
        assert_eq!(app.liveness(&old_tokens.access_token).await, 200, "a token of the previous key stays good");

        // The audit log says what was registered.
        let audit = app.store.recent_audit(50).await.unwrap();
        assert!(
            audit.iter().any(|entry| entry.detail["kid"] == kid.as_str() && entry.detail["imported"] == "command"),
            "{backend:?}: the import is audited"
        );
    }
}

#[tokio::test]
async fn keys_that_do_not_sign_verifiably_are_refused_and_nothing_is_registered() {
    let Some(openssl) = openssl() else { return };
    let signer = SigningProgram::new(&openssl);
    let es = signer.make_key("es", true, 0);
    let other = signer.make_key("other", true, 0);
    let small = signer.make_key("small", false, 1024);
    let rsa = signer.make_key("rsa", false, 2048);
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |config| with_program(config, &signer, "ES256")).await;
        let (active, _) = app.active_signing_key(Algorithm::Es256).await;
        let cases: [(Algorithm, ImportedKey, &str); 7] = [
            (Algorithm::Es256, command_key("es", &other), "did not make a signature its public half verifies"),
            (Algorithm::Es256, command_key("missing", &es), "did not make a signature"),
            (Algorithm::Rs256, command_key("small", &small), "1024 bits"),
            (Algorithm::Es256, command_key("rsa", &rsa), "not a key of this algorithm"),
            (
                Algorithm::Es256,
                command_key("es", b"-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n"),
                "not a PUBLIC KEY",
            ),
            (Algorithm::Es256, command_key("es\nother", &es), "without control characters"),
            (Algorithm::EdDsa, command_key("es", &es), "EdDSA keys are kept by Portico only"),
        ];
        for (alg, key, expected) in cases {
            let error = app.admin_service().import_key(&Actor::Cli, alg, &key).await.unwrap_err().to_string();
            assert!(error.contains(expected), "{backend:?} {key:?}: {error}");
        }
        assert_eq!(app.active_signing_key(Algorithm::Es256).await.0, active, "{backend:?}: nothing was registered");

        let kid = app.admin_service().import_key(&Actor::Cli, Algorithm::Es256, &command_key("es", &es)).await.unwrap();
        let twice =
            app.admin_service().import_key(&Actor::Cli, Algorithm::Es256, &command_key("es", &es)).await.unwrap_err();
        assert!(twice.to_string().contains(&format!("registered already (kid {kid})")), "{twice}");

        // Without a signing program, a key of one cannot be imported, and
        // a node cannot start with one registered.
        let mut config = app.config.clone();
        config.tokens.command = Default::default();
        let bare = AdminService::new(
            Arc::clone(&app.store),
            app.clock.clone(),
            portico_server::secret::InstanceSecret::load(&config).unwrap().sealer(),
        )
        .with_key_holders(config.tokens.key_holders().unwrap());
        let refused = bare.import_key(&Actor::Cli, Algorithm::Es256, &command_key("es", &es)).await.unwrap_err();
        assert!(refused.to_string().contains("configure tokens.command"), "{refused}");
        let error = portico_tests::start_error(config).await;
        assert!(error.contains(&kid) && error.contains("configure tokens.command"), "{backend:?}: {error}");
    }
    let dir = portico_tests::TempDir::new();
    let mut config = portico_server::Config { data_dir: dir.0.clone(), ..Default::default() };
    config.tokens.command.program = vec!["/nonexistent/signer".into()];
    let error = portico_tests::start_error(config).await;
    assert!(error.contains("tokens.command") && error.contains("not found"), "{error}");
}

#[tokio::test]
async fn a_program_that_cannot_sign_answers_503_spends_nothing_and_recovers_without_restart() {
    let Some(openssl) = openssl() else { return };
    let signer = SigningProgram::new(&openssl);
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |config| with_program(config, &signer, "ES256")).await;
        let label = format!("outage-{backend:?}");
        let public = signer.make_key(&label, true, 0);
        let kid =
            app.admin_service().import_key(&Actor::Cli, Algorithm::Es256, &command_key(&label, &public)).await.unwrap();
        let pkce = Pkce::new();
        let code = app.login_for_code(&app.browser(), &pkce, "ivan", "ivan-password").await;

        // The key file moved away: the program exits with an error.
        let (key, aside) = (signer.key_path(&label), signer.dir.0.join("aside.pem"));
        std::fs::rename(&key, &aside).unwrap();
        for _ in 0..2 {
            let refused = app.exchange(&code, &pkce.verifier).await;
            assert_eq!(refused.status(), 503, "{backend:?}");
            assert_eq!(refused.headers()["retry-after"], "5");
            let body: serde_json::Value = refused.json().await.unwrap();
            assert_eq!(body["error"], "temporarily_unavailable", "{body}");
        }
        // Another key's file in its place: signatures that do not verify are refused too.
        signer.make_key(&label, true, 0);
        assert_eq!(app.exchange(&code, &pkce.verifier).await.status(), 503, "{backend:?}: a wrong signature");

        std::fs::rename(&aside, &key).unwrap();
        let answered = app.exchange(&code, &pkce.verifier).await;
        assert_eq!(answered.status(), 200, "{backend:?}: the code was not spent by the failures");
        let tokens: serde_json::Value = answered.json().await.unwrap();
        assert_eq!(jwt_header(tokens["access_token"].as_str().unwrap())["kid"], kid.as_str());
    }
}

/// A program that hangs is stopped at `tokens.command.timeout_secs`; the
/// request is answered 503 and its code stays good.
#[tokio::test]
async fn a_program_that_hangs_is_stopped_at_its_deadline() {
    let Some(openssl) = openssl() else { return };
    let signer = SigningProgram::new(&openssl);
    let public = signer.make_key("hang", true, 0);
    let hang = signer.dir.0.join("hang.sh");
    write_program(&hang, "#!/bin/sh\nexec sleep 30\n");
    let backend = backends()[0];
    // This node's program never answers; the key is registered through a
    // working one (as `portico keys import` on another machine would).
    let app = TestApp::spawn_with(backend, |config| {
        with_program(config, &signer, "ES256");
        config.tokens.command.program = vec![hang.display().to_string(), "{key}".into()];
        config.tokens.command.timeout_secs = 1;
    })
    .await;
    let mut working = app.config.clone();
    working.tokens.command.program = signer.program();
    let secret = portico_server::secret::InstanceSecret::load(&working).unwrap();
    AdminService::new(Arc::clone(&app.store), app.clock.clone(), secret.sealer())
        .with_key_holders(working.tokens.key_holders().unwrap())
        .import_key(&Actor::Cli, Algorithm::Es256, &command_key("hang", &public))
        .await
        .unwrap();
    let pkce = Pkce::new();
    let code = app.login_for_code(&app.browser(), &pkce, "ivan", "ivan-password").await;
    let refused = app.exchange(&code, &pkce.verifier).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "5");
}
