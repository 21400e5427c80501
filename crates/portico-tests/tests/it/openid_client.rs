//! panva's certified relying-party library, `openid-client` (npm, run by
//! Node), against Portico on both backends: discovery, the code flow with
//! PKCE, nonce and state, the ID token's signature checked with the JWKS for
//! each algorithm Portico signs with, introspection signed (RFC 9701, the
//! same algorithm) and plain, a refresh, a revocation, the revoked grant's
//! access token inactive, and the revoked refresh token refused; and the
//! same with client assertions (`private_key_jwt` with the relying party's
//! own ES256, PS256 and Ed25519 keys, `client_secret_jwt`), with ID tokens, signed
//! userinfo and introspection answers in ES256, EdDSA and PS256.
//!
//! Needs `PORTICO_TEST_OPENID_CLIENT`: a folder where `npm install
//! openid-client@6` was run (`.ci/run` makes one).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use portico_tests::{TestApp, backends, demo, location};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

const SCRIPT: &str = include_str!("../../node/relying_party.mjs");
const KEY_CLIENT: &str = include_str!("../../node/key_client.mjs");

/// The folder holding `node_modules/openid-client`, or `None` (said once).
pub(crate) fn library() -> Option<PathBuf> {
    let dir = std::env::var_os("PORTICO_TEST_OPENID_CLIENT").map(PathBuf::from);
    if dir.is_none() {
        portico_tests::skipped(
            "PORTICO_TEST_OPENID_CLIENT is not set; the openid-client tests need a folder where \
             `npm install openid-client@6` was run",
        );
    }
    dir
}

/// Writes `text` as a script beside `openid-client` (Node resolves the
/// library from the script's folder) and runs it with `args`, its stdin
/// and stdout piped: the script's path and the process.
fn node(library: &Path, name: &str, text: &str, args: &[&str]) -> (PathBuf, tokio::process::Child) {
    let script = library.join(format!("{name}_{}.mjs", uuid::Uuid::new_v4().simple()));
    std::fs::write(&script, text).expect("write the relying party");
    let child = tokio::process::Command::new("node")
        .arg(&script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("run node");
    (script, child)
}

/// Runs the relying party against `app` as the demo client expecting ID
/// tokens signed with `alg`, logging `login` in when it sends the browser
/// to authorize; the outcome it prints.
pub(crate) async fn relying_party(app: &TestApp, library: &Path, alg: &str, login: &str, password: &str) -> Value {
    let redirect_uri = app.redirect_uri();
    let args = [app.base.as_str(), demo::CLIENT_ID, demo::CLIENT_SECRET, &redirect_uri, alg];
    app.catch_up_with_the_wall_clock();
    let (script, mut node) = node(library, "relying_party", SCRIPT, &args);
    let mut lines = BufReader::new(node.stdout.take().expect("stdout")).lines();
    let first: Value = serde_json::from_str(&lines.next_line().await.unwrap().expect("the authorization URL")).unwrap();
    let authorize = first["authorize"].as_str().expect("authorize").to_owned();
    assert!(authorize.starts_with(&format!("{}/oauth2/authorize?", app.base)), "{authorize}");

    let response = app.login_at(&app.browser(), &authorize, login, password).await;
    let callback = location(&response);
    let mut stdin = node.stdin.take().expect("stdin");
    stdin.write_all(format!("{callback}\n").as_bytes()).await.unwrap();
    drop(stdin);
    let outcome = lines.next_line().await.unwrap().expect("the relying party's outcome");
    let status = node.wait().await.expect("node ran");
    let _ = std::fs::remove_file(&script);
    assert!(status.success(), "the relying party failed: {outcome}");
    serde_json::from_str(&outcome).unwrap()
}

#[tokio::test]
async fn openid_client_completes_the_flow_with_each_signing_algorithm() {
    let Some(library) = library() else { return };
    for backend in backends() {
        for alg in ["ES256", "EdDSA", "PS256", "RS256"] {
            let app = TestApp::spawn_with(backend, |c| c.tokens.signing_algorithm = alg.into()).await;
            let outcome = relying_party(&app, &library, alg, "ivan", "ivan-password").await;
            let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
            assert_eq!(outcome["sub"], ivan.id.to_string(), "{backend:?} {alg}: {outcome}");
            assert_eq!(outcome["idTokenAlg"], alg, "{backend:?}");
            assert_eq!(outcome["refreshedIdTokenAlg"], alg, "{backend:?}");
            assert_eq!(outcome["afterRevocation"], "invalid_grant", "{backend:?} {alg}: {outcome}");
            let introspected =
                serde_json::json!({"active": true, "client_id": demo::CLIENT_ID, "sub": ivan.id.to_string()});
            assert_eq!(outcome["introspected"], introspected, "{backend:?} {alg}: the signed answer");
            assert_eq!(outcome["introspectedPlain"], serde_json::json!({"active": true, "token_type": "Bearer"}));
            assert_eq!(outcome["afterRevocationIntrospected"], serde_json::json!({"active": false}));
        }
    }
}

/// Runs the assertion-authenticating relying party against `app`: it makes
/// its key (`private_key_jwt`), the client is registered through the admin
/// API with it (or with a generated secret, `client_secret_jwt`) and
/// `token_alg` for its ID tokens, userinfo and introspection answers, and
/// `ivan` signs in. The outcome it prints.
async fn key_client(app: &TestApp, library: &Path, method: &str, key_alg: &str, token_alg: &str) -> Value {
    key_client_with(app, library, method, key_alg, token_alg, None, "plain").await
}

/// As [`key_client`]; with `initial_access_token`, the relying party
/// registers itself (RFC 7591) instead, manages its registration (RFC 7592)
/// and deletes it at the end. `requests` is how it sends its authorization
/// request (`plain`, `par`, `jar`, `par+jar`); a client the test registers
/// is held to it (`requirePushedAuthorizationRequests`,
/// `requireSignedRequestObject`).
async fn key_client_with(
    app: &TestApp,
    library: &Path,
    method: &str,
    key_alg: &str,
    token_alg: &str,
    initial_access_token: Option<&str>,
    requests: &str,
) -> Value {
    let client_id = format!("rp-{}", uuid::Uuid::new_v4().simple());
    let redirect_uri = app.redirect_uri();
    let args = [app.base.as_str(), &client_id, &redirect_uri, method, key_alg, token_alg, requests];
    app.catch_up_with_the_wall_clock();
    let (script, mut node) = node(library, "key_client", KEY_CLIENT, &args);
    let mut lines = BufReader::new(node.stdout.take().expect("stdout")).lines();
    let mut stdin = node.stdin.take().expect("stdin");
    let first: Value = serde_json::from_str(&lines.next_line().await.unwrap().expect("the public key")).unwrap();
    if let Some(token) = initial_access_token {
        let line = serde_json::json!({ "initialAccessToken": token });
        stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        return finish(app, node, lines, stdin, &script, client_id).await;
    }
    let has = |modifier: &str| requests.split('+').any(|m| m == modifier);
    let mut body = serde_json::json!({
        "clientId": client_id,
        "redirectUris": [app.redirect_uri()],
        "tokenEndpointAuthMethod": method,
        "idTokenSignedResponseAlg": token_alg,
        "userinfoSignedResponseAlg": token_alg,
        "introspectionSignedResponseAlg": token_alg,
        "accessTokenSignedResponseAlg": token_alg,
        "authorizationSignedResponseAlg": token_alg,
    });
    // Under a profile the profile alone demands the request rules and the
    // binding; otherwise the client's own settings do.
    match ["fapi2", "fapi-ru"].into_iter().find(|profile| has(profile)) {
        Some(profile) => body["securityProfile"] = profile.into(),
        None => {
            body["requirePushedAuthorizationRequests"] = has("par").into();
            body["requireSignedRequestObject"] = has("jar").into();
            body["dpopBoundAccessTokens"] = has("dpop").into();
            body["tlsClientCertificateBoundAccessTokens"] = (has("mtls") || has("tls")).into();
        }
    }
    if method == "private_key_jwt" {
        body["jwks"] = serde_json::json!({ "keys": [first["jwk"]] });
    }
    // The client's certificate, for binding (`+mtls`) or authentication
    // (registered in its key set's `x5c`).
    let certificate = (has("mtls") || has("tls") || method == "self_signed_tls_client_auth")
        .then(|| portico_tests::certificates::TestCertificate::new("rp.example"));
    if let Some(certificate) = certificate.as_ref().filter(|_| method == "self_signed_tls_client_auth") {
        body["jwks"] = serde_json::json!({ "keys": [certificate.jwk("rp-certificate")] });
    }
    let created = app.admin_create_client(&body).await;
    assert_eq!(created.status(), 201, "{method}: {}", created.text().await.unwrap());
    let created: Value = created.json().await.unwrap();
    let secret = if method == "client_secret_jwt" { created["clientSecret"].clone() } else { Value::Null };
    // Over Portico's own listener (`+tls`) the certificate goes in the
    // handshake; else in the terminator's header.
    let tls = certificate.as_ref().filter(|_| has("tls")).map(|certificate| {
        let (_, server) = app.mtls.as_ref().expect("an mtls.listen");
        json!({ "cert": certificate.pem, "key": certificate.key_pem, "ca": server.pem })
    });
    let certificate = certificate.filter(|_| !has("tls")).map(|certificate| certificate.escaped);
    let line = serde_json::json!({ "secret": secret, "certificate": certificate, "tls": tls });
    stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    finish(app, node, lines, stdin, &script, client_id).await
}

/// The rest of a relying party's run: the browser's login at the
/// authorization URL it prints, then its outcome.
async fn finish(
    app: &TestApp,
    mut node: tokio::process::Child,
    mut lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    mut stdin: tokio::process::ChildStdin,
    script: &Path,
    client_id: String,
) -> Value {
    let first: Value = serde_json::from_str(&lines.next_line().await.unwrap().expect("the authorization URL")).unwrap();
    if !first["refused"].is_null() {
        // Refused before the browser was sent anywhere.
        let _ = node.wait().await;
        let _ = std::fs::remove_file(script);
        return first;
    }
    let authorize = first["authorize"].as_str().expect("authorize").to_owned();
    // Authorize answers the client at once (an error), or after the login.
    let browser = app.browser();
    let opened = browser.get(&authorize).send().await.unwrap();
    let response = if location(&opened).starts_with(&app.redirect_uri()) {
        opened
    } else {
        app.login_after(&browser, opened, "ivan", "ivan-password").await
    };
    let callback = location(&response);
    let callback_params: Vec<String> =
        url::Url::parse(&callback).map(|url| url.query_pairs().map(|(name, _)| name.into_owned()).collect()).unwrap();
    stdin.write_all(format!("{callback}\n").as_bytes()).await.unwrap();
    drop(stdin);
    let outcome = lines.next_line().await.unwrap().expect("the relying party's outcome");
    let status = node.wait().await.expect("node ran");
    let _ = std::fs::remove_file(script);
    assert!(status.success(), "the relying party failed: {outcome}");
    let mut outcome: Value = serde_json::from_str(&outcome).unwrap();
    outcome["callbackParams"] = callback_params.into();
    if outcome["registered"].is_null() {
        outcome["clientId"] = client_id.into();
    } else {
        outcome["clientId"] = outcome["registered"]["clientId"].clone();
    }
    outcome
}

#[tokio::test]
async fn openid_client_authenticates_with_client_assertions() {
    let Some(library) = library() else { return };
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.tokens.signing_algorithms = ["PS256", "ES256", "EdDSA"].map(String::from).to_vec();
        })
        .await;
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap().id.to_string();
        for (method, key_alg, token_alg) in [
            ("private_key_jwt", "ES256", "ES256"),
            ("private_key_jwt", "ES256", "EdDSA"),
            ("private_key_jwt", "PS256", "PS256"),
            ("private_key_jwt", "Ed25519", "EdDSA"),
            ("client_secret_jwt", "-", "ES256"),
        ] {
            let outcome = key_client(&app, &library, method, key_alg, token_alg).await;
            let case = format!("{backend:?} {method} {key_alg} {token_alg}: {outcome}");
            assert_eq!(outcome["sub"], ivan, "{case}");
            assert_eq!(outcome["idTokenAlg"], token_alg, "{case}");
            assert_eq!(outcome["accessTokenAlg"], token_alg, "{case}");
            assert_eq!(outcome["refreshedIdTokenAlg"], token_alg, "{case}");
            assert_eq!(outcome["userinfoSub"], ivan, "{case}: the signed userinfo answer");
            let introspected = serde_json::json!({"active": true, "client_id": outcome["clientId"], "sub": ivan});
            assert_eq!(outcome["introspected"], introspected, "{case}");
            assert_eq!(outcome["afterRevocation"], "invalid_grant", "{case}");
            assert_eq!(outcome["afterRevocationIntrospected"], serde_json::json!({"active": false}), "{case}");
        }
    }
}

#[tokio::test]
async fn openid_client_registers_itself_and_manages_its_registration() {
    let Some(library) = library() else { return };
    const INITIAL: &str = "an-initial-access-token-for-openid-client";
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.tokens.signing_algorithms = ["PS256", "ES256", "EdDSA"].map(String::from).to_vec();
            c.registration.initial_access_token = Some(INITIAL.to_owned());
        })
        .await;
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap().id.to_string();
        let outcome =
            key_client_with(&app, &library, "private_key_jwt", "ES256", "EdDSA", Some(INITIAL), "plain").await;
        let registered = &outcome["registered"];
        assert!(registered["clientId"].as_str().is_some_and(|id| id.starts_with("dcr-")), "{backend:?}: {outcome}");
        // Its assertions are held to the algorithm it registered, and its
        // whole flow (every assertion ES256) passes.
        assert_eq!(registered["assertionAlg"], "ES256", "{backend:?}: {outcome}");
        assert_eq!(
            (registered["readStatus"].as_u64(), registered["readName"].as_str()),
            (Some(200), Some("Relying party"))
        );
        assert_eq!(registered["updateStatus"], 200, "{backend:?}: {outcome}");
        assert_eq!(registered["updatedName"], "Relying party, renamed");
        // RFC 7592 §3: both answers carry the configuration address and
        // the registration access token the client holds.
        assert_eq!(
            (registered["readHolds"].as_bool(), registered["updateHolds"].as_bool()),
            (Some(true), Some(true)),
            "{backend:?}: {outcome}"
        );
        assert_eq!(
            (registered["deleteStatus"].as_u64(), registered["readAfterDeleteStatus"].as_u64()),
            (Some(204), Some(401))
        );
        assert_eq!(outcome["sub"], ivan, "{backend:?}: {outcome}");
        assert_eq!(outcome["idTokenAlg"], "EdDSA");
        assert_eq!(outcome["accessTokenAlg"], "EdDSA");
        assert_eq!(outcome["userinfoSub"], ivan);
        assert_eq!(outcome["afterRevocation"], "invalid_grant");
        assert_eq!(outcome["afterRevocationIntrospected"], serde_json::json!({"active": false}));
        let client_id = outcome["clientId"].as_str().unwrap();
        assert!(app.store.find_client(&client_id.into()).await.unwrap().is_none(), "{backend:?}: deleted");
    }
}

/// A server for third parties: FAPI algorithms, server nonces required
/// (openid-client takes the one offered), client certificates from a TLS
/// terminator's header (which the tests stand in for) and on Portico's own
/// mutual-TLS listener (`+tls`).
async fn open_banking_server(backend: portico_tests::Backend) -> TestApp {
    TestApp::spawn_with(backend, |c| {
        c.tokens.signing_algorithms = ["PS256", "ES256", "EdDSA"].map(String::from).to_vec();
        c.dpop.require_nonce = true;
        c.mtls.certificate_header = Some("x-client-cert".into());
        c.mtls.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()];
        c.mtls.listen = Some("127.0.0.1:0".parse().unwrap());
    })
    .await
}

#[tokio::test]
async fn openid_client_is_refused_each_rule_of_its_profile_and_told_which() {
    let Some(library) = library() else { return };
    for backend in backends() {
        let app = open_banking_server(backend).await;
        // What openid-client sends, under the profile named first, and
        // where and how Portico refuses it.
        for (requests, stage, broken) in [
            ("fapi2+plain", "authorize", "pushed"),
            ("fapi2+par", "token", "sender-constrained"),
            ("fapi-ru+par", "request", "signed request objects"),
            ("fapi-ru+jar+mtls", "authorize", "must be signed"),
            ("fapi-ru+jar+jarm", "token", "TLS client certificate"),
        ] {
            let outcome = key_client_with(&app, &library, "private_key_jwt", "ES256", "ES256", None, requests).await;
            let case = format!("{backend:?} {requests}: {outcome}");
            let refused = &outcome["refused"];
            assert_eq!(
                (refused["stage"].as_str(), refused["error"].as_str()),
                (Some(stage), Some("invalid_request")),
                "{case}"
            );
            let profile = requests.split('+').next().unwrap();
            let description = refused["description"].as_str().unwrap_or_default();
            assert!(description.contains(&format!("profile {profile}")) && description.contains(broken), "{case}");
        }
    }
}

#[tokio::test]
async fn openid_client_pushes_signs_binds_with_dpop_or_certificates_and_reads_signed_responses() {
    let Some(library) = library() else { return };
    for backend in backends() {
        let app = open_banking_server(backend).await;
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap().id.to_string();
        const KEY: &str = "private_key_jwt";
        for (requests, method, key_alg) in [
            ("par", KEY, "ES256"),
            ("jar", KEY, "PS256"),
            ("par+jar", KEY, "ES256"),
            ("par+jar", KEY, "Ed25519"),
            ("par+dpop", KEY, "ES256"),
            ("par+jar+dpop", KEY, "PS256"),
            ("jar+jarm", KEY, "ES256"),
            ("par+jarm+dpop", KEY, "Ed25519"),
            ("par+mtls", KEY, "ES256"),
            ("jar+jarm+mtls", KEY, "ES256"),
            // The client's own key is its certificate's.
            ("par+jarm+mtls", "self_signed_tls_client_auth", "-"),
            // The profiles: FAPI 2.0 with DPoP or mutual TLS, ФАПИ.СЕК.
            ("fapi2+par+dpop", KEY, "ES256"),
            ("fapi2+par+mtls", "self_signed_tls_client_auth", "-"),
            ("fapi-ru+jar+jarm+mtls", KEY, "ES256"),
            ("fapi-ru+par+jar+jarm+mtls", KEY, "ES256"),
            // Over Portico's own mutual-TLS listener.
            ("par+dpop+tls", KEY, "ES256"),
            ("par+jarm+tls", "self_signed_tls_client_auth", "-"),
            ("fapi-ru+par+jar+jarm+tls", KEY, "ES256"),
        ] {
            let outcome = key_client_with(&app, &library, method, key_alg, "ES256", None, requests).await;
            let case = format!("{backend:?} {requests} {method} {key_alg}: {outcome}");
            assert_eq!(outcome["sub"], ivan, "{case}");
            assert_eq!(outcome["idTokenAlg"], "ES256", "{case}");
            assert_eq!(outcome["userinfoSub"], ivan, "{case}");
            assert_eq!(outcome["afterRevocation"], "invalid_grant", "{case}");
            // openid-client gives token_type in lower case.
            let token_type = if requests.contains("dpop") { "dpop" } else { "bearer" };
            assert_eq!(
                (outcome["tokenType"].as_str(), outcome["refreshedTokenType"].as_str()),
                (Some(token_type), Some(token_type)),
                "{case}"
            );
            // FAPI 2.0 keeps the refresh token; everyone else rotates it.
            assert_eq!(outcome["refreshRotated"], !requests.contains("fapi2"), "{case}");
            assert_eq!(outcome["introspectedCnf"]["jkt"].is_string(), requests.contains("dpop"), "{case}");
            let over_tls = requests.split('+').any(|m| m == "mtls" || m == "tls");
            assert_eq!(outcome["introspectedCnf"]["x5t#S256"].is_string(), over_tls, "{case}");
            // JARM: the code came only inside the signed `response`.
            let callback =
                if requests.contains("jarm") { json!(["response"]) } else { json!(["code", "state", "iss"]) };
            assert_eq!(outcome["callbackParams"], callback, "{case}");
        }
    }
}
