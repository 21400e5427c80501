//! The admin commands, run as the real binary against the database of a
//! running server: what they change takes effect at once, or, for what the
//! server answers from its node memory (revocations, the permission
//! revision), within `database_cache_staleness_ms` of the command.

use std::future::Future;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use portico_tests::{Pkce, TestApp, backends, jwt_claims, jwt_header};

mod common;

fn portico(app: &TestApp, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_portico"))
        .args(args)
        .env_clear()
        .env("PORTICO_DATABASE_URL", app.config.database_url.as_deref().unwrap())
        .env("PORTICO_DATA_DIR", &app.config.data_dir)
        .env("PORTICO_LOG", "warn")
        .output()
        .expect("run portico")
}

/// Whether `holds` comes true within the server's staleness bound, asked
/// every 10 ms from now (after the command that made it true committed).
async fn within_the_bound<F, Fut>(app: &TestApp, mut holds: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_millis(app.config.database_cache_staleness_ms.into());
    loop {
        if holds().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn ok(output: Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_commands_take_effect_on_a_running_server() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;

        // clients add / list / remove
        let out = ok(portico(
            &app,
            &["clients", "add", "--client-id", "crm", "--redirect-uri", "https://crm.example/cb", "--scope", "openid"],
        ));
        assert!(out.contains("client secret (shown once"), "{out}");
        assert!(ok(portico(&app, &["clients", "list"])).contains("crm"));
        let url = format!(
            "{}/oauth2/authorize?response_type=code&client_id=crm&redirect_uri=https%3A%2F%2Fcrm.example%2Fcb\
             &scope=openid&state=s&code_challenge={}&code_challenge_method=S256",
            app.base,
            Pkce::new().challenge
        );
        let response = app.browser().get(&url).send().await.unwrap();
        assert_eq!(response.status(), 303, "{backend:?}: the new client is known at once");
        let duplicate =
            portico(&app, &["clients", "add", "--client-id", "crm", "--redirect-uri", "https://x.example/"]);
        assert!(!duplicate.status.success());
        assert!(String::from_utf8_lossy(&duplicate.stderr).contains("already exists"));
        ok(portico(&app, &["clients", "remove", "--client-id", "crm"]));
        // The server answers what a client is registered with from memory:
        // a change by another process reaches it within the bound.
        let removed =
            within_the_bound(&app, || async { app.browser().get(&url).send().await.unwrap().status() == 400 }).await;
        assert!(removed, "{backend:?}: removed within the staleness bound");

        // A client held to pushed requests and DPoP-bound tokens.
        let args = [
            "clients",
            "add",
            "--client-id",
            "fintech",
            "--redirect-uri",
            "https://fintech.example/cb",
            "--require-pushed-requests",
            "--dpop-bound",
        ];
        ok(portico(&app, &args));
        let fintech = app.store.find_client(&"fintech".into()).await.unwrap().expect("added");
        assert!(fintech.security.require_pushed_authorization_requests && fintech.security.dpop_bound_access_tokens);
        assert!(!fintech.security.require_signed_request_object, "{backend:?}");
        let keyless = [
            "clients",
            "add",
            "--client-id",
            "keyless",
            "--redirect-uri",
            "https://k.example/cb",
            "--require-signed-request-object",
        ];
        let refused = portico(&app, &keyless);
        assert!(!refused.status.success(), "{backend:?}: signed request objects need the client's keys");
        assert!(String::from_utf8_lossy(&refused.stderr).contains("jwks"), "{backend:?}");
        // A profile the client's settings do not meet is refused, naming it;
        // rotation is a setting of its own.
        let profiled = ["clients", "add", "--client-id", "fapi", "--redirect-uri", "https://f.example/cb"];
        let refused = portico(&app, &[&profiled[..], &["--security-profile", "fapi2"]].concat());
        assert!(!refused.status.success(), "{backend:?}: a secret client is no FAPI 2.0 client");
        assert!(String::from_utf8_lossy(&refused.stderr).contains("fapi2 profile"), "{backend:?}");
        ok(portico(&app, &[&profiled[..], &["--refresh-token-rotation", "false"]].concat()));
        let fapi = app.store.find_client(&"fapi".into()).await.unwrap().expect("added");
        assert_eq!(fapi.security.refresh_token_rotation, Some(false), "{backend:?}");

        // users add / block / unblock
        ok(portico(
            &app,
            &["users", "add", "--login", "olga", "--password", "olga-password", "--phone", "+79001112233"],
        ));
        let tokens = app.tokens_for("olga", "olga-password").await;
        assert_eq!(app.liveness(&tokens.access_token).await, 200);
        let out = ok(portico(&app, &["users", "set-role", "--login", "olga", "--role", "support"]));
        assert!(out.contains("olga is an operator with the role support"), "{out}");
        let olga = app.store.find_user_by_login("olga").await.unwrap().unwrap();
        let role = app.store.operator_role(olga.id).await.unwrap();
        assert_eq!(role, Some(portico_model::user::OperatorRole::Support), "{backend:?}");
        let refused = portico(&app, &["users", "set-role", "--login", "olga", "--role", "root"]);
        assert!(String::from_utf8_lossy(&refused.stderr).contains("support, admin or none"));
        ok(portico(&app, &["users", "set-role", "--login", "olga", "--role", "none"]));
        assert_eq!(app.store.operator_role(olga.id).await.unwrap(), None);
        ok(portico(&app, &["users", "block", "--login", "olga"]));
        let refused = within_the_bound(&app, || async { app.liveness(&tokens.access_token).await == 401 }).await;
        assert!(refused, "{backend:?}: blocked within the staleness bound");
        assert!(ok(portico(&app, &["users", "list"])).contains("BLOCKED"));
        let audit = app.store.recent_audit(2).await.unwrap();
        assert_eq!(audit[0].kind, "user.blocked", "the block is audited");
        assert_eq!(audit[0].actor.as_deref(), Some("cli"), "as the command's");
        assert_eq!((audit[1].kind.as_str(), audit[1].detail["by"].as_str()), ("session.ended", Some("user blocked")));
        ok(portico(&app, &["users", "unblock", "--login", "olga"]));
        app.tokens_for("olga", "olga-password").await;

        // keys rotate
        let before = app.tokens_for("ivan", "ivan-password").await;
        let out = ok(portico(&app, &["keys", "rotate"]));
        assert!(out.contains("now signs new tokens"), "{out}");
        let old_kid = jwt_header(&before.access_token)["kid"].clone();
        // Refreshes sign without a login in between, so the bound is
        // measured finely; each presents the token the previous one issued.
        let refresh = std::sync::Mutex::new(before.refresh_token.clone().unwrap());
        let rotated = within_the_bound(&app, || async {
            let current = refresh.lock().unwrap().clone();
            let response = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", &current)]).await;
            assert_eq!(response.status(), 200, "{backend:?}");
            let next: serde_json::Value = response.json().await.unwrap();
            *refresh.lock().unwrap() = next["refresh_token"].as_str().unwrap().to_owned();
            jwt_header(next["access_token"].as_str().unwrap())["kid"] != old_kid
        })
        .await;
        assert!(rotated, "{backend:?}: the new key signs within the staleness bound");
        let after = app.tokens_for("ivan", "ivan-password").await;
        assert_ne!(jwt_header(&after.access_token)["kid"], old_kid);
        assert_eq!(app.liveness(&before.access_token).await, 200);
        assert_eq!(ok(portico(&app, &["keys", "list"])).lines().count(), 2);

        ok(portico(&app, &["migrate"]));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_registrations_are_listed_and_approved_by_command_on_a_running_server() {
    const INITIAL: &str = portico_tests::REGISTRATION_TOKEN;
    for backend in backends() {
        let app = TestApp::spawn_holding_registrations(backend).await;
        let metadata = serde_json::json!({"redirect_uris": ["https://f.example/cb"], "client_name": "Held"});
        let (status, registered) = app.register(Some(INITIAL), &metadata).await;
        assert_eq!(status, 201, "{backend:?}: {registered}");
        let client_id = registered["client_id"].as_str().unwrap().to_owned();
        let secret = registered["client_secret"].as_str().unwrap().to_owned();
        // A made-up refresh token: `invalid_client` while held, `invalid_grant` once approved.
        let refresh = || async {
            let response = app
                .http()
                .post(app.url("/oauth2/token"))
                .basic_auth(&client_id, Some(&secret))
                .form(&[("grant_type", "refresh_token"), ("refresh_token", "no-such-token")])
                .send()
                .await
                .unwrap();
            let body: serde_json::Value = response.json().await.unwrap();
            body["error"].as_str().unwrap().to_owned()
        };
        assert_eq!(refresh().await, "invalid_client", "{backend:?}");

        let held = ok(portico(&app, &["clients", "list", "--awaiting-approval"]));
        assert_eq!(held.lines().count(), 1, "{backend:?}: only the held one: {held}");
        assert!(held.starts_with(&format!("{client_id}\t")) && held.contains("\tawaiting approval"), "{held}");
        let all = ok(portico(&app, &["clients", "list"]));
        assert!(all.lines().any(|l| l.starts_with("demo-app\t") && !l.contains("awaiting")), "{backend:?}: {all}");

        let approved = ok(portico(&app, &["clients", "approve", "--client-id", &client_id]));
        assert_eq!(approved.trim(), format!("client {client_id} approved"), "{backend:?}");
        let audit = app.store.recent_audit(1).await.unwrap();
        assert_eq!(audit[0].kind, "client.approved", "{backend:?}");
        assert!(within_the_bound(&app, || async { refresh().await == "invalid_grant" }).await, "{backend:?}");
        assert_eq!(ok(portico(&app, &["clients", "list", "--awaiting-approval"])), "", "{backend:?}");

        let again = portico(&app, &["clients", "approve", "--client-id", &client_id]);
        let said = String::from_utf8_lossy(&again.stderr);
        assert!(!again.status.success() && said.contains("not awaiting approval"), "{backend:?}: {said}");
        let unknown = portico(&app, &["clients", "approve", "--client-id", "no-such-client"]);
        let said = String::from_utf8_lossy(&unknown.stderr);
        assert!(!unknown.status.success() && said.contains("no-such-client"), "{backend:?}: {said}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_tokens_are_listed_and_withdrawn_by_command_on_a_running_server() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.registration.initial_access_token = Some("the-initial-access-token-0123456789".to_owned());
        })
        .await;
        let issued = ok(portico(&app, &["clients", "registration-token", "--expires-in-secs", "3600"]));
        let token = issued.lines().find_map(|l| l.split(": ").nth(1)).expect("the token").to_owned();
        let id = issued.lines().find_map(|l| l.strip_prefix("id ")).and_then(|l| l.split(',').next()).expect("its id");
        let listed = ok(portico(&app, &["clients", "registration-tokens"]));
        assert!(listed.starts_with(&format!("{id}\tissued ")) && !listed.contains(&token), "{backend:?}: {listed}");

        let withdrawn = ok(portico(&app, &["clients", "withdraw-registration-token", "--id", id]));
        assert_eq!(withdrawn.trim(), format!("registration token {id} withdrawn"), "{backend:?}");
        assert_eq!(ok(portico(&app, &["clients", "registration-tokens"])).trim(), "no unspent registration token");
        let metadata = serde_json::json!({"redirect_uris": ["https://f.example/cb"]});
        let (status, body) = app.register(Some(&token), &metadata).await;
        assert_eq!((status, body["error"].as_str()), (401, Some("invalid_token")), "{backend:?}: {body}");
        let again = portico(&app, &["clients", "withdraw-registration-token", "--id", id]);
        let said = String::from_utf8_lossy(&again.stderr);
        assert!(!again.status.success() && said.contains(&format!("no unspent registration token {id}")), "{said}");
    }
}

#[test]
fn bad_input_is_refused_with_a_message_that_names_it() {
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let dir = portico_tests::TempDir::new();
        Command::new(env!("CARGO_BIN_EXE_portico"))
            .args(args)
            .env_clear()
            .env("PORTICO_DATA_DIR", &dir.0)
            .envs(env.iter().copied())
            .output()
            .expect("run portico")
    };
    let out = run(&["migrate"], &[("PORTICO_LISTN", "1")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown setting `listn`"));
    let out = run(&["migrate"], &[("PORTICO_PUBLIC_URL", "ftp://x")]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("PORTICO_PUBLIC_URL"));
    let out =
        run(&["clients", "add", "--client-id", "a", "--redirect-uri", "https://a.example/", "--secret", "short"], &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least 16 characters"));
    let out = run(&["clients", "add", "--client-id", "a", "--redirect-uri", "not-a-url"], &[]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--redirect-uri"));
    let out = run(&["users", "block", "--login", "nobody"], &[]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("there is no user nobody"));
    let out = run(
        &[
            "clients",
            "add",
            "--client-id",
            "a",
            "--redirect-uri",
            "https://a.example/",
            "--post-logout-redirect-uri",
            "https://a.example/bye#top",
        ],
        &[],
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("--post-logout-redirect-uri https://a.example/bye#top"));
    let out = run(&["sessions", "list", "--login", "nobody"], &[]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("there is no user nobody"));
    let out = run(&["sessions", "end", "--sid", "0195f0a0-0000-7000-8000-000000000000"], &[]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("there is no live session"));
    let out = run(&["sessions", "end"], &[]);
    assert_eq!(out.status.code(), Some(2), "neither --sid nor --login");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_listed_and_ended_by_an_operator_on_a_running_server() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let browser = app.browser();
        let pkce = Pkce::new();
        let code = app.login_for_code(&browser, &pkce, "ivan", "ivan-password").await;
        let tokens: portico_tests::TokenResponse = app.exchange(&code, &pkce.verifier).await.json().await.unwrap();
        let sid = jwt_claims(tokens.id_token.as_deref().unwrap())["sid"].as_str().unwrap().to_owned();

        let listed = ok(portico(&app, &["sessions", "list", "--login", "ivan"]));
        assert!(listed.starts_with(&sid) && listed.contains("clients: demo-app"), "{backend:?}: {listed}");
        let ended = ok(portico(&app, &["sessions", "end", "--sid", &sid]));
        assert!(ended.contains(&format!("session {sid} ended; 1 grant(s) revoked")), "{backend:?}: {ended}");
        // The browser is signed out at once (sessions are not kept in memory) …
        let response = browser.get(app.authorize_url(&Pkce::new(), &[("prompt", Some("none"))])).send().await.unwrap();
        assert_eq!(portico_tests::location_param(&response, "error").as_deref(), Some("login_required"));
        // … and the demo client's grant, revoked with it, within the bound.
        let refused = within_the_bound(&app, || async { app.liveness(&tokens.access_token).await == 401 }).await;
        assert!(refused, "{backend:?}");
        assert!(ok(portico(&app, &["sessions", "list", "--login", "ivan"])).contains("no live session"));
        let audit = app.store.recent_audit(1).await.unwrap();
        assert_eq!((audit[0].kind.as_str(), audit[0].detail["by"].as_str()), ("session.ended", Some("operator")));

        // Every session of a user at once.
        app.tokens_for("ivan", "ivan-password").await;
        app.tokens_for("ivan", "ivan-password").await;
        let ended = ok(portico(&app, &["sessions", "end", "--login", "ivan"]));
        assert_eq!(ended.matches(" ended;").count(), 2, "{backend:?}: {ended}");
        assert!(ok(portico(&app, &["sessions", "end", "--login", "ivan"])).contains("no live session to end"));
    }
}

#[test]
fn serve_outside_the_demo_refuses_development_delivery_unless_named() {
    use std::io::{BufRead as _, BufReader};
    let dir = portico_tests::TempDir::new();
    let serve = |env: &[(&str, &str)]| {
        Command::new(env!("CARGO_BIN_EXE_portico"))
            .arg("serve")
            .env_clear()
            .env("PORTICO_DATA_DIR", &dir.0)
            .env("PORTICO_LISTEN", "127.0.0.1:0")
            .env("PORTICO_LOG", "info")
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start portico serve")
    };
    let out = serve(&[]).wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(2), "refused");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("delivery.sms (PORTICO_DELIVERY__SMS) is not set"), "{stderr}");
    let out = serve(&[("PORTICO_DELIVERY__SMS", "outbox"), ("PORTICO_DELIVERY__EMAIL", "outbox")])
        .wait_with_output()
        .expect("wait");
    assert_eq!(out.status.code(), Some(2), "refused");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("captcha.kind (PORTICO_CAPTCHA__KIND) is not set"), "{stderr}");

    // Named explicitly, the development ways start, with a warning each.
    let mut child = serve(&[
        ("PORTICO_DELIVERY__SMS", "outbox"),
        ("PORTICO_DELIVERY__EMAIL", "outbox"),
        ("PORTICO_CAPTCHA__KIND", "dev"),
    ]);
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let lines: Vec<String> =
        stderr.by_ref().map_while(Result::ok).take_while(|line| !line.contains("Portico is serving")).collect();
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let rest: Vec<String> = stderr.map_while(Result::ok).collect();
    assert!(child.wait().expect("wait").success(), "{lines:?} {rest:?}");
    assert!(lines.iter().any(|l| l.contains("development delivery") && l.contains("outbox.jsonl")), "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("development CAPTCHA")), "{lines:?}");
}

#[test]
fn serve_stops_gracefully_on_sigterm() {
    use std::io::{BufRead as _, BufReader};
    let dir = portico_tests::TempDir::new();
    let mut child = common::serve_demo(&dir.0, &[]);
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let mut lines = stderr.lines();
    assert!(lines.by_ref().map_while(Result::ok).any(|line| line.contains("Portico is serving")), "server started");
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    assert!(status.success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let exit = child.wait().expect("wait");
    assert!(exit.success(), "exits cleanly on SIGTERM: {exit:?}");
    assert!(rest.iter().any(|l| l.contains("shutting down")), "{rest:?}");
    let mut banner = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut banner).unwrap();
    assert!(banner.contains("/demo/login") && banner.contains("ivan"), "the demo banner: {banner}");
}

#[test]
fn serve_finishes_requests_in_flight_and_closes_what_is_still_open_when_its_shutdown_grace_runs_out() {
    use std::io::{BufRead as _, BufReader, Read as _, Write as _};
    let dir = portico_tests::TempDir::new();
    // A request head never finished holds a connection for the header
    // timeout: two minutes here, far past the grace of three seconds.
    let settings = [
        ("PORTICO_HTTP__HEADER_READ_TIMEOUT_SECS", "120"),
        ("PORTICO_HTTP__IDLE_TIMEOUT_SECS", "120"),
        ("PORTICO_HTTP__SHUTDOWN_GRACE_SECS", "3"),
    ];
    let mut child = common::serve_demo(&dir.0, &settings);
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let serving =
        lines.by_ref().map_while(Result::ok).find(|line| line.contains("Portico is serving")).expect("started");
    let listen = serving.split_whitespace().find_map(|field| field.strip_prefix("listen=")).expect("its address");
    let connect = || std::net::TcpStream::connect(listen.trim_matches('"')).expect("connect");
    let mut held = connect();
    held.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n").unwrap();
    // A request in flight: its body comes in two parts, the second once
    // the server is stopping.
    let body = "grant_type=refresh_token&refresh_token=x";
    let mut in_flight = connect();
    let head = format!(
        "POST /oauth2/token HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    in_flight.write_all(format!("{head}{}", &body[..18]).as_bytes()).unwrap();
    // The server has taken both connections once it answers a third.
    let mut other = connect();
    other.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    other.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    let asked = Instant::now();
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    assert!(status.success());
    assert!(lines.by_ref().map_while(Result::ok).any(|l| l.contains("shutting down")), "the stop began");
    in_flight.write_all(&body.as_bytes()[18..]).unwrap();
    let mut answer = String::new();
    in_flight.read_to_string(&mut answer).unwrap();
    // Answered, then closed (the read ends): with `Connection: close` when
    // the stop reached the connection before the answer, or as an idle
    // connection just after it. Not by the grace: that closes one only.
    assert!(answer.starts_with("HTTP/1.1 401") && answer.contains("invalid_client"), "answered: {answer}");

    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let exit = child.wait().expect("wait");
    let took = asked.elapsed();
    assert!(exit.success(), "exits cleanly: {exit:?}");
    assert!(took < Duration::from_secs(60), "stopped after the grace, not the header timeout: {took:?}");
    let cut = rest.iter().find(|l| l.contains("shutdown grace ran out")).unwrap_or_else(|| panic!("{rest:?}"));
    assert!(cut.contains("open=1") && cut.contains("WARN"), "only the unfinished head was cut: {cut}");
    // The held connection was closed, unanswered.
    held.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buffer = [0_u8; 64];
    assert_eq!(held.read(&mut buffer).map_err(|e| e.kind()), Ok(0), "closed");
}

/// The stop reaches every listener and worker at once, not after the
/// public listener's drain: while a request head that never finishes holds
/// the public listener for its grace (a minute here), the background
/// workers stop and the mutual-TLS listener takes no new connection.
#[test]
fn serve_stops_its_workers_and_its_other_listeners_when_the_stop_begins_not_after_the_drain() {
    use std::io::{BufRead as _, BufReader, Write as _};
    let dir = portico_tests::TempDir::new();
    let certificate = portico_tests::certificates::TestCertificate::new("127.0.0.1");
    let (chain, key) = (dir.0.join("mtls-server.pem"), dir.0.join("mtls-server.key"));
    std::fs::write(&chain, &certificate.pem).unwrap();
    std::fs::write(&key, &certificate.key_pem).unwrap();
    let settings = [
        ("PORTICO_HTTP__HEADER_READ_TIMEOUT_SECS", "120"),
        ("PORTICO_HTTP__IDLE_TIMEOUT_SECS", "120"),
        ("PORTICO_HTTP__SHUTDOWN_GRACE_SECS", "60"),
        ("PORTICO_MTLS__LISTEN", "127.0.0.1:0"),
        ("PORTICO_MTLS__SERVER_CERTIFICATE_FILE", chain.to_str().unwrap()),
        ("PORTICO_MTLS__SERVER_KEY_FILE", key.to_str().unwrap()),
    ];
    let mut child = common::serve_demo(&dir.0, &settings);
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let serving =
        lines.by_ref().map_while(Result::ok).find(|line| line.contains("Portico is serving")).expect("started");
    let field = |name: &str| {
        let value = serving.split_whitespace().find_map(|field| field.strip_prefix(name)).expect(name);
        value.trim_matches('"').trim_start_matches("Some(").trim_end_matches(')').to_owned()
    };
    let (listen, mtls) = (field("listen="), field("mtls_listen="));
    let mut held = std::net::TcpStream::connect(&listen).expect("connect");
    held.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n").unwrap();
    // The server has taken that connection once it answers a later one.
    let mut other = std::net::TcpStream::connect(&listen).expect("connect");
    other.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut other, &mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(std::net::TcpStream::connect(&mtls).is_ok(), "the mutual-TLS listener takes connections: {mtls}");

    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    assert!(status.success());
    let mut seen = Vec::new();
    for line in lines.by_ref().map_while(Result::ok) {
        let done = line.contains("background work stopped") || line.contains("shutdown grace ran out");
        seen.push(line);
        if done {
            break;
        }
    }
    assert!(seen.iter().any(|l| l.contains("shutting down")), "the stop began: {seen:?}");
    let last = seen.last().map(String::as_str).unwrap_or_default();
    assert!(last.contains("background work stopped"), "the workers stopped during the drain: {seen:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    let refused = loop {
        match std::net::TcpStream::connect(&mtls) {
            Err(error) => break Some(error.kind()),
            Ok(_) if Instant::now() > deadline => break None,
            Ok(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    assert_eq!(refused, Some(std::io::ErrorKind::ConnectionRefused), "the mutual-TLS listener closed");
    assert!(child.try_wait().unwrap().is_none(), "while the public listener still drains");
    child.kill().unwrap();
    child.wait().unwrap();
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permissions_import_is_all_or_nothing_and_takes_effect_at_once() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let maria = app.token_pair("maria").await;
        let flags = || async {
            let response =
                maria.on(app.http().get(app.url("/api/v2/permissions/payments/7700000001"))).send().await.unwrap();
            assert_eq!(response.status(), 200);
            response.json::<serde_json::Value>().await.unwrap()
        };
        assert_eq!(flags().await["sign"], true, "{backend:?}: maria is the accountant");
        let before = ok(portico(&app, &["permissions", "export"]));

        let dir = portico_tests::TempDir::new();
        let bad = dir.0.join("bad.yaml");
        std::fs::write(
            &bad,
            "employees:\n  - {user: maria, cnum: \"7700000001\", role: OPERATOR}\n  - {user: nobody, cnum: \"7700000001\"}\n",
        )
        .unwrap();
        let output = portico(&app, &["permissions", "import", bad.to_str().unwrap()]);
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("employees[1].user") && stderr.contains("nothing was changed"), "{stderr}");
        assert_eq!(ok(portico(&app, &["permissions", "export"])), before, "nothing changed");
        assert_eq!(flags().await["sign"], true);

        let syntax = dir.0.join("syntax.json");
        std::fs::write(&syntax, "{\"employees\": [{\"user\": \"maria\", \"cnum\": 7700000001}]}").unwrap();
        let output = portico(&app, &["permissions", "import", syntax.to_str().unwrap()]);
        assert!(!output.status.success());
        assert!(String::from_utf8_lossy(&output.stderr).contains("line 1 column"), "the parser names the place");

        let good = dir.0.join("good.yaml");
        std::fs::write(&good, "employees:\n  - {user: maria, cnum: \"7700000001\", role: OPERATOR}\n").unwrap();
        let dry = ok(portico(&app, &["permissions", "import", "--dry-run", good.to_str().unwrap()]));
        assert!(dry.contains("dry run"), "{dry}");
        assert_eq!(flags().await["sign"], true, "a dry run saves nothing");
        let out = ok(portico(&app, &["permissions", "import", good.to_str().unwrap()]));
        assert!(out.contains("revision"), "{out}");
        let applied = within_the_bound(&app, || async { flags().await["sign"] == false }).await;
        assert!(applied, "{backend:?}: the running server uses the new model within the staleness bound");
        let audit = &app.store.recent_audit(1).await.unwrap()[0];
        assert_eq!((audit.kind.as_str(), audit.actor.as_deref()), ("permissions.imported", Some("cli")), "audited");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merchants_are_added_listed_and_get_new_keys_on_a_running_server() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let out = ok(portico(
            &app,
            &[
                "merchants",
                "add",
                "--merchant-id",
                "shop-1",
                "--public-id",
                "pub-shop-1",
                "--sbp-merchant-id",
                "MA0000000001",
            ],
        ));
        let key = out.lines().find_map(|l| l.split("API key (shown once, hand it to the merchant): ").nth(1)).unwrap();
        let settings = |key: String| {
            let http = app.http();
            let url = app.url("/v1/notifications/settings");
            async move { http.get(url).header("authorization", key).send().await.unwrap().status().as_u16() }
        };
        assert_eq!(settings(key.to_owned()).await, 404, "{backend:?}: the key works (no settings yet)");
        let audit = &app.store.recent_audit(1).await.unwrap()[0];
        assert_eq!((audit.kind.as_str(), audit.actor.as_deref()), ("merchant.created", Some("cli")), "audited");
        let bad = portico(
            &app,
            &["merchants", "add", "--merchant-id", "bad id", "--public-id", "p", "--sbp-merchant-id", "x"],
        );
        assert!(!bad.status.success());
        assert!(String::from_utf8_lossy(&bad.stderr).contains("merchant id"), "names the bad id");
        assert!(ok(portico(&app, &["merchants", "list"])).contains("shop-1\tpublic pub-shop-1"));

        let out = ok(portico(&app, &["merchants", "rotate-key", "--merchant-id", "shop-1"]));
        let new_key = out.lines().find_map(|l| l.split("API key (shown once): ").nth(1)).unwrap();
        assert_eq!(settings(key.to_owned()).await, 401, "the old key stops at once");
        assert_eq!(settings(new_key.to_owned()).await, 404);
        let audit = &app.store.recent_audit(1).await.unwrap()[0];
        assert_eq!((audit.kind.as_str(), audit.actor.as_deref()), ("merchant.key_rotated", Some("cli")), "audited");
        assert!(!portico(&app, &["merchants", "rotate-key", "--merchant-id", "nobody"]).status.success());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn portico_worker_alone_delivers_what_the_server_took_in() {
    use std::sync::{Arc, Mutex};
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| c.notifications.deliver = false).await;
        // A merchant receiver on loopback.
        let got: Arc<Mutex<Vec<String>>> = Arc::default();
        let sink = Arc::clone(&got);
        let receiver = axum::Router::new().route(
            "/notify",
            axum::routing::post(move |body: String| {
                let sink = Arc::clone(&sink);
                async move { sink.lock().unwrap().push(body) }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/notify", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, receiver).await });

        let out = ok(portico(
            &app,
            &["merchants", "add", "--merchant-id", "m1", "--public-id", "p1", "--sbp-merchant-id", "MA01"],
        ));
        let key = out.lines().find_map(|l| l.split("hand it to the merchant): ").nth(1)).unwrap().to_owned();
        let settings = app
            .http()
            .put(app.url("/v1/notifications/settings"))
            .header("authorization", &key)
            .header("content-type", "application/json")
            .body(format!(r#"{{"callbackUrl": "{url}"}}"#))
            .send()
            .await
            .unwrap();
        assert_eq!(settings.status(), 200);
        let event = serde_json::json!({ "eventId": "ev-1", "merchantId": "m1", "event": {
            "paymentId": "pay-1", "transactionId": 1, "orderId": "o-1", "amount": 100, "currency": "RUB",
            "status": "SUCCESS", "statusDate": "2026-11-22T13:45:00+03:00", "paymentMethod": "SBP",
            "sbpTransactionId": null, "qrId": null, "comment": null, "additionalInfo": null, "extra": {},
            "createdAt": "2026-11-22T13:45:00+03:00" }});
        let intake = app
            .http()
            .post(app.url("/internal/v1/notifications/events/payment"))
            .bearer_auth(portico_tests::INTERNAL_TOKEN)
            .json(&event)
            .send()
            .await
            .unwrap();
        assert_eq!(intake.status(), 202);

        let mut worker = Command::new(env!("CARGO_BIN_EXE_portico"))
            .arg("worker")
            .env_clear()
            .env("PORTICO_DATABASE_URL", app.config.database_url.as_deref().unwrap())
            .env("PORTICO_DATA_DIR", &app.config.data_dir)
            .env("PORTICO_NOTIFICATIONS__ALLOW_INSECURE_CALLBACKS", "true")
            .env("PORTICO_NOTIFICATIONS__DELIVERY_INTERVAL_MS", "50")
            .env("PORTICO_LOG", "warn")
            .spawn()
            .expect("start portico worker");
        let started = std::time::Instant::now();
        while got.lock().unwrap().is_empty() && started.elapsed() < std::time::Duration::from_secs(20) {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let status = Command::new("kill").args(["-TERM", &worker.id().to_string()]).status().expect("kill");
        assert!(status.success());
        assert!(worker.wait().expect("wait").success(), "the worker stops cleanly on SIGTERM");
        let got = got.lock().unwrap().clone();
        assert_eq!(got.len(), 1, "{backend:?}: delivered once by the worker alone");
        assert!(got[0].contains(r#""event":"PAYMENT""#));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_listen_verifies_and_answers_like_a_merchant_endpoint() {
    use std::io::{BufRead as _, BufReader};
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    /// Kills the listener whatever happens, so a failing test cannot leave it running.
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Kill(
        Command::new(env!("CARGO_BIN_EXE_portico"))
            .args(["notifications", "listen", "--secret", "merchant-key", "--port", &port.to_string()])
            .env_clear()
            .env("PORTICO_LOG", "warn")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start the listener"),
    );
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    assert!(lines.next().unwrap().unwrap().contains("listening on"));
    let body = r#"{"event":"SUBSCRIPTION","data":{"id":"s1","publicId":"p1","status":{"value":"SUBSCRIBED","date":"2026-11-24T10:30:00+03:00"}}}"#;
    let signature = portico_webhook::signature(b"merchant-key", "p1|s1|SUBSCRIBED|2026-11-24T10:30:00+03:00");
    let http = portico_tests::plain_http();
    let url = format!("http://127.0.0.1:{port}/notify");
    let good = http.post(&url).header("x-api-signature-sha256", &signature).body(body).send().await.unwrap();
    assert_eq!(good.status(), 200);
    let bad = http.post(&url).header("x-api-signature-sha256", "00").body(body).send().await.unwrap();
    assert_eq!(bad.status(), 401);
    let status = Command::new("kill").args(["-TERM", &child.0.id().to_string()]).status().expect("kill");
    assert!(status.success());
    assert!(child.0.wait().unwrap().success());
    let printed: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(printed.iter().any(|l| l.starts_with("verified Subscription")), "{printed:?}");
    assert!(printed.iter().any(|l| l.starts_with("rejected (the signature does not match)")), "{printed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_simulate_queues_sample_events_that_deliver() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| c.notifications.deliver = false).await;
        ok(portico(
            &app,
            &["merchants", "add", "--merchant-id", "m1", "--public-id", "p1", "--sbp-merchant-id", "MA01"],
        ));
        let out = ok(portico(
            &app,
            &["notifications", "simulate", "--merchant-id", "m1", "--type", "refund", "--count", "3"],
        ));
        assert_eq!(out.lines().filter(|l| l.starts_with("refund event sim-")).count(), 3, "{out}");
        let (queued, total) = app.store.list_deliveries("m1", None, 0, 10).await.unwrap();
        assert_eq!(total, 3, "{backend:?}");
        for delivery in &queued {
            let event = app.store.find_event(&delivery.event_id).await.unwrap().unwrap();
            let parsed: portico_model::notify::RefundEvent = serde_json::from_value(event.payload).unwrap();
            assert_eq!(parsed.status, "COMPLETED");
        }
        let bad = portico(&app, &["notifications", "simulate", "--merchant-id", "nobody"]);
        assert!(!bad.status.success());
        assert!(String::from_utf8_lossy(&bad.stderr).contains("no merchant"));
    }
}

/// The CSV examples in docs/examples/brokerage.
fn example(name: &str) -> String {
    format!("{}/../../docs/examples/brokerage/{name}.csv", env!("CARGO_MANIFEST_DIR"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brokerage_csv_tables_create_and_update_agreements_all_or_nothing() {
    let tables = ["agreements", "accounts", "instruments", "trades", "cash_movements", "positions", "cash_balances"];
    let files: Vec<String> = tables.iter().map(|t| example(t)).collect();
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let demo = app.store.find_agreement("БД-0001").await.unwrap().unwrap();

        // A dry run checks and saves nothing.
        let mut args = vec!["brokerage", "import", "--dry-run"];
        args.extend(files.iter().map(String::as_str));
        assert!(ok(portico(&app, &args)).contains("nothing saved"));
        assert!(app.store.find_agreement("БД-0002").await.unwrap().is_none(), "{backend:?}");

        // The documented example creates a whole agreement.
        args.remove(2);
        ok(portico(&app, &args));
        let created = app.store.find_agreement("БД-0002").await.unwrap().expect("created");
        assert_eq!((created.cnum.as_str(), created.client_name.as_str()), ("7700000001", "ООО «Ромашка»"));
        let audit = &app.store.recent_audit(1).await.unwrap()[0];
        assert_eq!((audit.kind.as_str(), audit.actor.as_deref()), ("brokerage.loaded", Some("cli")), "audited");
        assert_eq!(audit.detail["agreements"], serde_json::json!(["БД-0002"]));
        assert_eq!(created.accounts[0].owner.kpp.as_deref(), Some("770701001"));
        let trades: Vec<(&str, i64, String)> =
            created.trades.iter().map(|t| (t.id.as_str(), t.quantity, t.amount.to_string())).collect();
        assert_eq!(
            trades,
            [
                ("T-2026-0001", 1000, "301450.00".into()),
                ("T-2026-0002", 200, "120820.00".into()),
                ("T-2026-0003", 400, "127280.00".into())
            ]
        );
        assert_eq!(
            created.cash_movements[0].purpose,
            "Пополнение брокерского счёта по договору БД-0002, НДС не облагается"
        );
        assert_eq!(created.cash_movements[1].counterparty.bank.bic, "044525225");
        assert_eq!((created.positions.len(), created.cash_balances.len()), (2, 1));
        assert!(ok(portico(&app, &["brokerage", "list"])).contains("БД-0002\t7700000001"));
        // A report made from it at once: a 1C statement with both movements.
        let ivan = app.token_pair("ivan").await;
        let request = serde_json::json!({
            "reportType": "STATEMENT_FOR_1C", "agreementNumber": "БД-0002",
            "account": "40702810900000000003", "fromDate": "2026-01-01", "toDate": "2026-03-31"
        });
        let task: serde_json::Value = ivan
            .on(app.http().post(app.url("/v1/reports/tasks")))
            .json(&request)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let done = loop {
            let path = format!("/v1/reports/tasks/{}", task["id"].as_str().expect("a task"));
            let task: serde_json::Value =
                ivan.on(app.http().get(app.url(&path))).send().await.unwrap().json().await.unwrap();
            if task["status"] != "NEW" && task["status"] != "IN_PROGRESS" {
                break task;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        };
        assert_eq!(done["status"], "DONE", "{done}");
        let path = format!("/v1/reports/files/download/{}", done["files"][0]["id"].as_str().unwrap());
        let bytes = ivan.on(app.http().get(app.url(&path))).send().await.unwrap().bytes().await.unwrap();
        let (text, _, _) = encoding_rs::WINDOWS_1251.decode(&bytes);
        assert!(text.contains("ВсегоПоступило=500000.00\r\nВсегоСписано=100000.00\r\n"), "{text}");

        // A table for a stored agreement, as a spreadsheet saves it (BOM,
        // semicolons): replaces that table only.
        let dir = portico_tests::TempDir::new();
        let first = &demo.trades[0];
        let trades = dir.0.join("trades.csv");
        let line = |id: &str, ticker: &str| {
            format!(
                "БД-0001;{id};{};{};{};{ticker};SELL;5;{};{};{}\r\n",
                first.account, first.date, first.settlement_date, first.price, first.amount, first.fees
            )
        };
        let header = "agreement;id;account;date;settlementDate;ticker;side;quantity;price;amount;fees\r\n";
        let file = format!("\u{feff}{header}{}{}", line("X-1", &first.ticker), line("X-2", &first.ticker));
        std::fs::write(&trades, file).unwrap();
        ok(portico(&app, &["brokerage", "import", trades.to_str().unwrap()]));
        let updated = app.store.find_agreement("БД-0001").await.unwrap().unwrap();
        let ids: Vec<&str> = updated.trades.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["X-1", "X-2"]);
        assert_eq!(updated.cash_movements, demo.cash_movements, "other tables stay");
        assert_eq!(updated.positions, demo.positions);

        // One bad row anywhere, and nothing of the import is saved.
        let bad = dir.0.join("more-trades.csv");
        std::fs::write(&bad, format!("{header}{}", line("X-3", "NOPE"))).unwrap();
        let output = portico(&app, &["brokerage", "import", &example("trades"), bad.to_str().unwrap()]);
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(
                "more-trades.csv line 2, column ticker (agreement БД-0001): an instrument listed in instruments"
            ),
            "{stderr}"
        );
        assert!(stderr.contains("nothing was changed"), "{stderr}");
        let after = app.store.find_agreement("БД-0001").await.unwrap().unwrap();
        assert_eq!(after, updated, "{backend:?}");
        assert_eq!(app.store.find_agreement("БД-0002").await.unwrap().unwrap(), created);
    }
}

/// `portico probe` asks the node's own listener: 0 for a 200, a message
/// and a failure otherwise (a 404, or nothing listening).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_exits_zero_only_when_the_node_answers_200() {
    let app = TestApp::spawn(backends()[0]).await;
    let probe = |listen: String, args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_portico"))
            .arg("probe")
            .args(args)
            .env_clear()
            .env("PORTICO_LISTEN", listen)
            .env("PORTICO_LOG", "warn")
            .output()
            .expect("run portico")
    };
    let listen = app.config.listen.to_string();
    let ready = tokio::task::spawn_blocking({
        let listen = listen.clone();
        move || probe(listen, &[])
    });
    assert!(ok(ready.await.unwrap()).contains("/readyz: HTTP/1.1 200"));
    // Listening on every address: the probe asks over loopback.
    let any = format!("0.0.0.0:{}", app.config.listen.port());
    assert!(ok(tokio::task::spawn_blocking(move || probe(any, &["/healthz"])).await.unwrap()).contains("200"));

    let missing = tokio::task::spawn_blocking(move || probe(listen, &["/no-such-page"])).await.unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("404"), "{missing:?}");
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let refused = tokio::task::spawn_blocking(move || probe(closed, &[])).await.unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("cannot reach"), "{refused:?}");
}

/// Users made before logins were compared by their key, whose login is the
/// same as an older user's under the rules, or no valid login at all, are
/// named at every start, each with its problem and what to do.
#[tokio::test]
async fn every_start_names_the_logins_left_without_a_key() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        app.run_sql("UPDATE users SET login = 'IVAN', login_key = NULL WHERE login = 'oleg'").await;
        app.run_sql("UPDATE users SET login = 'two words', login_key = NULL WHERE login = 'anna'").await;
        let out = portico(&app, &["migrate"]);
        assert!(out.status.success(), "{out:?}");
        let log = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        let warnings: Vec<&str> = log.lines().filter(|l| l.contains("compared by its exact form only")).collect();
        assert_eq!(warnings.len(), 2, "{backend:?}: {log}");
        let named = |login: &str, problem: &str| {
            warnings.iter().any(|w| w.contains(login) && w.contains(problem) && w.contains("rename the user"))
        };
        assert!(named("IVAN", r#"the same login as \"ivan\""#), "{backend:?}: {warnings:?}");
        assert!(named("two words", "U+0020"), "{backend:?}: {warnings:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_retire_stops_an_algorithm_the_configuration_no_longer_names() {
    for backend in backends() {
        // The server still signs with ES256; the command's configuration
        // (the default: RS256 only) no longer names it.
        let app = TestApp::spawn_with(backend, |c| c.tokens.signing_algorithms = vec!["ES256".into()]).await;
        let refused = portico(&app, &["keys", "retire", "--alg", "RS256"]);
        assert!(!refused.status.success(), "{backend:?}");
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(said.contains("RS256 is configured"), "{backend:?}: {said}");

        let es256 = app.identity.tokens.keys.signing_key_for(portico_crypto::jwt::Algorithm::Es256).await.unwrap();
        let out = ok(portico(&app, &["keys", "retire", "--alg", "ES256"]));
        assert!(out.contains(es256.kid()) && out.contains("nothing signs with ES256"), "{out}");
        let list = ok(portico(&app, &["keys", "list"]));
        let line = list.lines().find(|line| line.starts_with(es256.kid())).expect("the retired key is listed");
        assert!(line.contains("retired"), "{backend:?}: {list}");
        assert_eq!(app.store.recent_audit(1).await.unwrap()[0].kind, "key.retired");

        let again = portico(&app, &["keys", "retire", "--alg", "ES256"]);
        assert!(String::from_utf8_lossy(&again.stderr).contains("no active ES256 key"), "{backend:?}");
    }
}
