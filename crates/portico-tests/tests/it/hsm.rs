//! Token signing keys inside an HSM (SoftHSM2 through PKCS#11): generated
//! in the token and never extractable, storage keeping only their label;
//! tokens they sign verify with openid-client against the JWKS; rotation;
//! an HSM that cannot sign answers 503 with `Retry-After`, spends nothing,
//! and the service recovers without a restart; a report's `QES` signature
//! made by a key in the HSM.

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

/// A read-write session of `token`'s user, opened beside Portico's (a
/// login is the whole process's, so it may be logged in already).
fn user_session(token: &softhsm::Token) -> cryptoki::session::Session {
    let module = portico_hsm::module(&token.module).unwrap();
    let slot = module
        .get_slots_with_token()
        .unwrap()
        .into_iter()
        .find(|slot| module.get_token_info(*slot).unwrap().label().trim_end() == token.label)
        .unwrap();
    let session = module.open_rw_session(slot).unwrap();
    let _ = session.login(UserType::User, Some(&AuthPin::from(PIN.to_owned())));
    session
}

#[tokio::test]
async fn tokens_signed_inside_the_hsm_verify_with_openid_client_and_the_keys_never_leave_it() {
    let Some(token) = softhsm::token("keys") else { return };
    let Some(library) = library() else { return };
    for (backend, alg) in backends().into_iter().cycle().zip(["ES256", "PS256", "RS256"]) {
        let app =
            TestApp::spawn_with(backend, |config| with_hsm(config, &token, alg, &["ES256", "PS256", "RS256"])).await;
        let algorithm = Algorithm::parse(alg).unwrap();
        let (kid, location) = app.active_signing_key(algorithm).await;
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
        let (new_kid, location) = app.active_signing_key(algorithm).await;
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
        let session = user_session(&token);
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
        assert_eq!(kid, app.active_signing_key(Algorithm::Es256).await.0);
    }
}

#[tokio::test]
async fn an_hsm_configuration_that_cannot_work_stops_the_start_with_the_reason() {
    // A token no other test logs in to: a login is the whole process's.
    let Some(token) = softhsm::token("setup") else { return };
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
        let error = portico_tests::start_error(config).await;
        assert!(error.contains(expected), "{expected}: {error}");
    }
}

#[tokio::test]
async fn a_node_without_the_hsm_or_with_a_token_lacking_the_key_refuses_to_start() {
    let (Some(token), Some(empty)) = (softhsm::token("node"), softhsm::token("empty")) else { return };
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |config| with_hsm(config, &token, "ES256", &["ES256"])).await;
        let (kid, _) = app.active_signing_key(Algorithm::Es256).await;
        // Another node of the same database: no HSM configured at all.
        let mut config = app.config.clone();
        config.tokens.hsm = portico_server::config::HsmConfig::default();
        let error = portico_tests::start_error(config).await;
        assert!(error.contains(&kid) && error.contains("configure tokens.hsm"), "{backend:?}: {error}");
        // A token that does not hold the key.
        let mut config = app.config.clone();
        config.tokens.hsm.token_label = empty.label.clone();
        config.tokens.hsm.algorithms.clear();
        let error = portico_tests::start_error(config).await;
        assert!(error.contains(&kid) && error.contains("has no public key labelled"), "{backend:?}: {error}");
    }
}

/// An HSM's P-256 public key, for a certificate to be issued to it.
struct HsmPublic(Vec<u8>);

impl rcgen::PublicKeyData for HsmPublic {
    fn der_bytes(&self) -> &[u8] {
        &self.0
    }

    fn algorithm(&self) -> &'static rcgen::SignatureAlgorithm {
        &rcgen::PKCS_ECDSA_P256_SHA256
    }
}

#[tokio::test]
async fn a_qes_signature_is_made_by_a_report_key_inside_the_hsm() {
    let Some(token) = softhsm::token("reports") else { return };
    let Ok(openssl) = std::env::var("PORTICO_TEST_OPENSSL") else {
        portico_tests::skipped("PORTICO_TEST_OPENSSL is not set; the HSM report test checks with openssl");
        return;
    };
    let hsm = portico_hsm::Hsm::open(&token.module, &token.label, PIN).unwrap();
    let label = portico_hsm::new_label(Algorithm::Es256).replace("es256", "reports");
    let portico_crypto::jwt::RemotePublic::P256 { x, y } = hsm.generate(Algorithm::Es256, &label).unwrap() else {
        panic!("a P-256 key")
    };
    // The broker's certificate for the HSM's key, from a test CA.
    let ca_key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "Test CA");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, "Broker reports (HSM)");
    let point = [&[0x04][..], &x, &y].concat();
    let cert = params.signed_by(&HsmPublic(point), &issuer).unwrap();
    let dir = portico_tests::TempDir::new();
    let (cert_path, ca_path) = (dir.0.join("broker.pem"), dir.0.join("ca.pem"));
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&ca_path, ca_cert.pem()).unwrap();

    for backend in backends() {
        let app = TestApp::spawn_with(backend, |config| {
            with_hsm(config, &token, "RS256", &[]);
            config.reports.signing_cert = Some(cert_path.clone());
            config.reports.signature.chain = Some(ca_path.clone());
            config.reports.signature.hsm_key_label = Some(label.clone());
        })
        .await;
        let ivan = app.token_pair("ivan").await;
        let done = crate::reports_signature::qes_task(&app, &ivan).await;
        assert_eq!(done["status"], "DONE", "{}", crate::reports_signature::stored_error(&app, &done).await);
        let (_, pdf) = crate::reports::download(&app, &ivan, &done["files"][0]).await;
        let (_, signature) = crate::reports::download(&app, &ivan, &done["files"][1]).await;
        let (ok, said) = crate::reports_signature::openssl_verify(&openssl, false, &signature, &pdf, &ca_path);
        assert!(ok, "{backend:?}: openssl refused the HSM's signature: {said}");
        let mut changed = pdf.clone();
        changed[pdf.len() / 3] ^= 0x01;
        let (ok, _) = crate::reports_signature::openssl_verify(&openssl, false, &signature, &changed, &ca_path);
        assert!(!ok, "a changed report must not verify");
    }

    // A certificate of another key than the labelled one stops the start.
    let (other, _) =
        portico_reports::generate::qes::Signer::generate_self_signed("Другой", time::OffsetDateTime::now_utc())
            .unwrap();
    std::fs::write(&cert_path, other).unwrap();
    let mut config = portico_server::Config { data_dir: dir.0.join("data"), ..Default::default() };
    with_hsm(&mut config, &token, "RS256", &[]);
    config.reports.signing_cert = Some(cert_path.clone());
    config.reports.signature.hsm_key_label = Some(label.clone());
    let error = portico_tests::start_error(config).await;
    assert!(error.contains("is not the key of reports.signing_cert"), "{error}");
}

/// Makes an ES256 key pair in `token` as a vendor's tools would (not
/// through Portico), protected or readable.
fn vendor_key(token: &softhsm::Token, label: &str, protected: bool) {
    use cryptoki::mechanism::Mechanism;
    use cryptoki::object::Attribute;
    let session = user_session(token);
    // prime256v1's OID, DER.
    let p256 = vec![0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
    let name = || Attribute::Label(label.as_bytes().to_vec());
    let public = [Attribute::Token(true), Attribute::Verify(true), Attribute::EcParams(p256), name()];
    let private = [
        Attribute::Token(true),
        Attribute::Private(true),
        Attribute::Sign(true),
        Attribute::Sensitive(protected),
        Attribute::Extractable(!protected),
        name(),
    ];
    session.generate_key_pair(&Mechanism::EccKeyPairGen, &public, &private).unwrap();
}

#[tokio::test]
async fn a_key_the_vendors_tools_made_in_the_hsm_is_imported_and_signs_and_a_readable_one_is_refused() {
    let Some(token) = softhsm::token("vendor") else { return };
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |config| with_hsm(config, &token, "ES256", &[])).await;
        let (before, location) = app.active_signing_key(Algorithm::Es256).await;
        assert_eq!(location, portico_tokens::KeyLocation::Sealed, "no algorithm is made in the HSM");
        let admin = app.admin_service();
        let import = |label: &str| portico_tokens::ImportedKey::Hsm { label: label.to_owned() };
        let actor = portico_model::audit::Actor::Cli;

        let readable = portico_hsm::new_label(Algorithm::Es256).replace("portico", "readable");
        vendor_key(&token, &readable, false);
        let refused = admin.import_key(&actor, Algorithm::Es256, &import(&readable)).await.unwrap_err();
        assert!(refused.to_string().contains("sensitive and not extractable"), "{backend:?}: {refused}");
        let missing = admin.import_key(&actor, Algorithm::Es256, &import("no-such-key")).await.unwrap_err();
        assert!(missing.to_string().contains("has no public key labelled \"no-such-key\""), "{missing}");
        let wrong_alg = portico_hsm::new_label(Algorithm::Es256).replace("portico", "vendor");
        vendor_key(&token, &wrong_alg, true);
        let refused = admin.import_key(&actor, Algorithm::Rs256, &import(&wrong_alg)).await.unwrap_err();
        assert!(refused.to_string().contains("is not a RS256 key"), "{backend:?}: {refused}");
        assert_eq!(app.active_signing_key(Algorithm::Es256).await.0, before, "{backend:?}: nothing was registered");

        let label = portico_hsm::new_label(Algorithm::Es256).replace("portico", "vendor");
        vendor_key(&token, &label, true);
        let kid = admin.import_key(&actor, Algorithm::Es256, &import(&label)).await.unwrap();
        assert_eq!(
            app.active_signing_key(Algorithm::Es256).await,
            (kid.clone(), portico_tokens::KeyLocation::Hsm(label))
        );
        let tokens = app.tokens_for("maria", "maria-password").await;
        assert_eq!(jwt_header(&tokens.access_token)["kid"], kid.as_str(), "{backend:?}: signed by the vendor's key");
        assert_eq!(app.liveness(&tokens.access_token).await, 200);
    }
}

/// SoftHSM2 failed one run in three of 32 generations at once in one
/// token (`CKR_GENERAL_ERROR`, a creation meeting another session's
/// reads) before Portico generated its keys alone; four rounds, with a
/// key signing throughout, make a lucky pass unlikely.
#[test]
fn keys_generated_at_once_in_one_token_are_all_made_while_another_signs() {
    const AT_ONCE: usize = 32;
    const SIGNERS: usize = 8;
    const SIGNATURES: usize = 4;
    const ROUNDS: usize = 4;
    let Some(token) = softhsm::token("many") else { return };
    let hsm = portico_hsm::Hsm::open(&token.module, &token.label, PIN).unwrap();
    let signing = |label: &str, public: &portico_crypto::jwt::RemotePublic| {
        let signer = hsm.signer(Algorithm::Es256, label);
        portico_crypto::jwt::SigningKey::from_remote(Algorithm::Es256, public, signer).unwrap()
    };
    let first = portico_hsm::new_label(Algorithm::Es256);
    let first = signing(&first, &hsm.generate(Algorithm::Es256, &first).unwrap());
    let (mut made, mut signed) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        std::thread::scope(|scope| {
            let generators: Vec<_> = (0..AT_ONCE)
                .map(|_| {
                    scope.spawn(|| {
                        let label = portico_hsm::new_label(Algorithm::Es256);
                        hsm.generate(Algorithm::Es256, &label).map(|public| (label, public))
                    })
                })
                .collect();
            let signers: Vec<_> = (0..SIGNERS)
                .map(|_| scope.spawn(|| (0..SIGNATURES).map(|_| first.try_sign("JWT", &1).is_ok()).collect::<Vec<_>>()))
                .collect();
            made.extend(generators.into_iter().map(|worker| worker.join().unwrap()));
            signed.extend(signers.into_iter().flat_map(|worker| worker.join().unwrap()));
        });
    }
    let failed: Vec<String> = made.iter().filter_map(|m| m.as_ref().err()).map(ToString::to_string).collect();
    assert!(failed.is_empty(), "{} of {} generations failed: {failed:?}", failed.len(), AT_ONCE * ROUNDS);
    let good = signed.iter().filter(|ok| **ok).count();
    assert_eq!(good, SIGNERS * SIGNATURES * ROUNDS, "every signature meanwhile is made");
    let made: Vec<_> = made.into_iter().map(Result::unwrap).collect();
    let distinct: std::collections::HashSet<_> = made.iter().map(|(_, public)| format!("{public:?}")).collect();
    assert_eq!(distinct.len(), AT_ONCE * ROUNDS, "every key is a key of its own");
    for (label, public) in &made {
        assert_eq!(&hsm.public_key(Algorithm::Es256, label).unwrap(), public, "{label} reads back");
        assert!(hsm.private_key_is_protected(label).unwrap(), "{label}: sensitive, not extractable");
        assert!(signing(label, public).try_sign("JWT", &serde_json::json!({"sub": label})).is_ok(), "{label} signs");
    }
}
