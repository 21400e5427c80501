//! Health, readiness, metrics, discovery, userinfo.

use portico_tests::{TestApp, backends};

#[tokio::test]
async fn health_readiness_and_metrics() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let http = app.http();
        assert_eq!(http.get(app.url("/healthz")).send().await.unwrap().status(), 200);
        assert_eq!(http.get(app.url("/readyz")).send().await.unwrap().status(), 200, "{backend:?}");
        let response = http.get(app.url("/metrics")).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let text = response.text().await.unwrap();
        assert!(text.contains("portico_http_requests_total"), "{text}");
        // Histograms (which add up across nodes), not summaries, with HELP.
        assert!(text.contains("# TYPE portico_http_request_duration_seconds histogram"), "{text}");
        assert!(text.contains("portico_http_request_duration_seconds_bucket{"), "{text}");
        assert!(!text.contains("quantile="), "no summaries: {text}");
        assert!(text.contains("# HELP portico_http_requests_total "), "{text}");
        assert!(text.contains("# HELP portico_http_request_duration_seconds "), "{text}");
        let response = http.get(app.url("/healthz")).send().await.unwrap();
        assert!(response.headers().contains_key("x-request-id"));
    }
}

/// A caller's `x-request-id` is played back (and named in error bodies)
/// when it is one short id of visible characters; anything else gets a
/// new one, as a request without one does.
#[tokio::test]
async fn a_callers_request_id_is_kept_only_when_it_is_a_short_visible_id() {
    let app = TestApp::spawn(backends()[0]).await;
    let answer = |ids: Vec<Vec<u8>>| {
        let mut request = app.http().get(app.url("/v1/reports/tasks"));
        for id in ids {
            request = request.header("x-request-id", reqwest::header::HeaderValue::from_bytes(&id).unwrap());
        }
        async move {
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 401);
            let played_back = response.headers()["x-request-id"].to_str().unwrap().to_owned();
            let body: serde_json::Value = response.json().await.unwrap();
            assert_eq!(body["traceId"], played_back.as_str(), "the error names the id played back");
            played_back
        }
    };
    let longest = "r".repeat(128);
    for kept in ["caller-7", "0f8fad5b-d9cb-469f-a165-70867728950e", longest.as_str()] {
        assert_eq!(answer(vec![kept.as_bytes().to_vec()]).await, kept);
    }
    let made = answer(vec![]).await;
    assert!(uuid::Uuid::try_parse(&made).is_ok(), "{made}");
    for replaced in [
        vec!["r".repeat(129).into_bytes()],
        vec!["r".repeat(100_000).into_bytes()],
        vec![b"with space".to_vec()],
        vec!["ид-запроса".as_bytes().to_vec()],
        vec![b"first".to_vec(), b"second".to_vec()],
    ] {
        let given: Vec<String> =
            replaced.iter().map(|id| String::from_utf8_lossy(&id[..id.len().min(20)]).into_owned()).collect();
        let id = answer(replaced).await;
        assert!(uuid::Uuid::try_parse(&id).is_ok(), "{given:?} is replaced by a new id, not {id}");
    }
}

/// FAPI 1.0 Part 1 §6.2.1 (ФАПИ.СЕК's resource servers): every answer
/// plays back the client's `x-fapi-interaction-id`, or gives a new UUID
/// when the request had none (or no UUID), refusals too.
#[tokio::test]
async fn every_answer_plays_back_the_fapi_interaction_id() {
    let app = TestApp::spawn(backends()[0]).await;
    let tokens = app.tokens_for("ivan", "ivan-password").await;
    let id = |response: &reqwest::Response| response.headers()["x-fapi-interaction-id"].to_str().unwrap().to_owned();
    let userinfo = || app.http().get(app.url("/oauth2/userinfo"));

    let given = "c770aef3-6784-41f7-8e0e-ff5f97bddb3a";
    let response = userinfo().bearer_auth(&tokens.access_token).header("x-fapi-interaction-id", given).send().await;
    let response = response.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(id(&response), given, "played back as given");
    let response = userinfo().header("x-fapi-interaction-id", given).send().await.unwrap();
    assert_eq!((response.status().as_u16(), id(&response)), (401, given.to_owned()), "refusals too");

    let mut seen = std::collections::HashSet::new();
    for sent in [None, Some("not-a-uuid"), None] {
        let mut request = userinfo().bearer_auth(&tokens.access_token);
        if let Some(sent) = sent {
            request = request.header("x-fapi-interaction-id", sent);
        }
        let response = request.send().await.unwrap();
        let made = id(&response);
        assert!(uuid::Uuid::try_parse(&made).is_ok(), "a new UUID: {made}");
        assert!(seen.insert(made), "one per request");
    }
    let response = app.http().get(app.url("/healthz")).send().await.unwrap();
    assert!(uuid::Uuid::try_parse(&id(&response)).is_ok(), "every endpoint");
}

#[tokio::test]
async fn discovery_names_every_endpoint() {
    let app = TestApp::spawn(backends()[0]).await;
    let response = app.http().get(app.url("/.well-known/openid-configuration")).send().await.unwrap();
    assert_eq!(response.headers()["access-control-allow-origin"], "*", "browser clients may read it");
    assert_eq!(response.headers()["cache-control"], "public, max-age=3600");
    let doc: serde_json::Value = response.json().await.unwrap();
    assert_eq!(doc["issuer"], app.base);
    assert_eq!(doc["authorization_response_iss_parameter_supported"], true);
    for claim in ["sub", "auth_time", "amr", "sid", "nonce"] {
        assert!(doc["claims_supported"].as_array().unwrap().iter().any(|c| c == claim), "{claim}");
    }
    let jwks = app.http().get(app.url("/oauth2/jwks")).send().await.unwrap();
    assert_eq!(jwks.headers()["access-control-allow-origin"], "*");
    assert_eq!(jwks.headers()["cache-control"], "public, max-age=60");
    assert_eq!(doc["authorization_endpoint"], app.url("/oauth2/authorize"));
    assert_eq!(doc["token_endpoint"], app.url("/oauth2/token"));
    assert_eq!(doc["jwks_uri"], app.url("/oauth2/jwks"));
    assert_eq!(doc["revocation_endpoint"], app.url("/oauth2/revoke"));
    assert_eq!(doc["userinfo_endpoint"], app.url("/oauth2/userinfo"));
    assert_eq!(doc["code_challenge_methods_supported"], serde_json::json!(["S256"]));
    assert_eq!(doc["response_types_supported"], serde_json::json!(["code"]));

    // RFC 8414 §3 (which FAPI 2.0 names beside OpenID Connect Discovery):
    // the same document where OAuth clients look for it.
    let response = app.http().get(app.url("/.well-known/oauth-authorization-server")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    assert_eq!(response.headers()["cache-control"], "public, max-age=3600");
    let oauth: serde_json::Value = response.json().await.unwrap();
    assert_eq!(oauth, doc, "one document under both names");
}

#[tokio::test]
async fn userinfo_answers_by_scope() {
    let app = TestApp::spawn(backends()[0]).await;
    let tokens = app.tokens_for("ivan", "ivan-password").await;
    let response = app.http().get(app.url("/oauth2/userinfo")).bearer_auth(&tokens.access_token).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let info: serde_json::Value = response.json().await.unwrap();
    assert_eq!(info["preferred_username"], "ivan");
    assert_eq!(info["email"], "ivan@example.com");
    let response = app.http().get(app.url("/oauth2/userinfo")).bearer_auth("nope").send().await.unwrap();
    assert_eq!(response.status(), 401);
}

/// OpenID Connect Core §5.3: userinfo serves tokens of OpenID Connect
/// requests. A token of a plain OAuth request (`profile email`, no
/// `openid`) is good elsewhere but reads nothing here: 403 with RFC 6750
/// §3.1's `insufficient_scope`, from the header or a form body alike.
#[tokio::test]
async fn userinfo_refuses_a_token_issued_without_openid() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let pkce = portico_tests::Pkce::new();
        let browser = app.browser();
        let authorize = app.authorize_url(&pkce, &[("scope", Some("profile email"))]);
        let response = app.login_at(&browser, &authorize, "ivan", "ivan-password").await;
        let code = portico_tests::code_from(&response, &app.redirect_uri());
        let tokens: serde_json::Value = app.exchange(&code, &pkce.verifier).await.json().await.unwrap();
        assert!(tokens.get("id_token").is_none(), "{backend:?}: not an OpenID Connect request: {tokens}");
        let token = tokens["access_token"].as_str().unwrap();
        assert_eq!(app.liveness(token).await, 200, "{backend:?}: the token itself is good");

        let by_header = app.http().get(app.url("/oauth2/userinfo")).bearer_auth(token).send().await.unwrap();
        let by_body =
            app.http().post(app.url("/oauth2/userinfo")).form(&[("access_token", token)]).send().await.unwrap();
        for (how, response) in [("header", by_header), ("body", by_body)] {
            assert_eq!(response.status(), 403, "{backend:?} {how}");
            assert_eq!(
                response.headers()["www-authenticate"],
                "Bearer error=\"insufficient_scope\", scope=\"openid\"",
                "{backend:?} {how}"
            );
            assert!(response.text().await.unwrap().is_empty(), "{backend:?} {how}: nothing of the user");
        }
    }
}

/// RFC 6750 §2.2 (OpenID Connect Core §5.3.1): a POST to userinfo may
/// carry the bearer token in its form body instead of the header, once;
/// never in the query (§2.3, which FAPI 2.0 forbids).
#[tokio::test]
async fn userinfo_takes_a_bearer_token_from_a_form_body_once() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let tokens = app.tokens_for("ivan", "ivan-password").await;
        let token = tokens.access_token.as_str();
        let userinfo = || app.http().post(app.url("/oauth2/userinfo"));

        let response = userinfo().form(&[("access_token", token)]).send().await.unwrap();
        assert_eq!(response.status(), 200, "{backend:?}");
        assert_eq!(response.headers()["cache-control"], "no-store");
        let info: serde_json::Value = response.json().await.unwrap();
        assert_eq!(info["preferred_username"], "ivan");

        // Two ways at once, or twice in the body: invalid_request (RFC 6750 §3.1).
        for response in [
            userinfo().bearer_auth(token).form(&[("access_token", token)]).send().await.unwrap(),
            userinfo().form(&[("access_token", token), ("access_token", token)]).send().await.unwrap(),
        ] {
            assert_eq!(response.status(), 400, "{backend:?}");
            let challenge = response.headers()["www-authenticate"].to_str().unwrap();
            assert!(challenge.starts_with("Bearer error=\"invalid_request\", error_description="), "{challenge}");
            assert_eq!(response.headers()["cache-control"], "no-store");
        }

        // A token that is not Portico's, from the body as from the header.
        let response = userinfo().form(&[("access_token", "nope")]).send().await.unwrap();
        assert_eq!(response.status(), 401);
        assert_eq!(response.headers()["www-authenticate"], "Bearer error=\"invalid_token\"");
        // A body that is no form, and the query, carry no token.
        let response = userinfo().body(format!("access_token={token}")).send().await.unwrap();
        assert_eq!(response.status(), 401, "no form without its content type");
        let query = format!("/oauth2/userinfo?access_token={token}");
        assert_eq!(app.http().get(app.url(&query)).send().await.unwrap().status(), 401, "never in the query");
        // The header alone, as before.
        assert_eq!(userinfo().bearer_auth(token).send().await.unwrap().status(), 200);
    }
}

#[tokio::test]
async fn demo_client_page_is_served() {
    let app = TestApp::spawn(backends()[0]).await;
    let response = app.http().get(app.url("/demo")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let html = response.text().await.unwrap();
    assert!(html.contains("Sign in with Portico"));
    assert!(html.contains(&app.redirect_uri()), "configured with the demo client's redirect URI");
}

/// One sample of the Prometheus text format: the family's name, its
/// labels, its value.
type Sample = (String, std::collections::BTreeMap<String, String>, f64);

/// `GET /metrics` on `url`, as text.
pub(crate) async fn scrape(url: &str) -> String {
    let response = portico_tests::plain_http().get(url).send().await.unwrap();
    assert_eq!(response.status(), 200, "{url}");
    response.text().await.unwrap()
}

/// The sum of the samples of `name` whose labels include `labels`.
pub(crate) fn sum(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    parse_prometheus(text)
        .2
        .iter()
        .filter(|(n, l, _)| n == name && labels.iter().all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v)))
        .map(|(_, _, value)| *value)
        .sum()
}

/// Reads the Prometheus text format: `# HELP` and `# TYPE` per family, and
/// the samples (each line `name{label="value",…} number`).
pub(crate) fn parse_prometheus(
    text: &str,
) -> (std::collections::BTreeMap<String, String>, std::collections::BTreeMap<String, String>, Vec<Sample>) {
    let (mut help, mut types, mut samples) = (Default::default(), Default::default(), Vec::new());
    let (help_map, type_map): (&mut std::collections::BTreeMap<_, _>, &mut std::collections::BTreeMap<_, _>) =
        (&mut help, &mut types);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, text) = rest.split_once(' ').expect("HELP name text");
            help_map.insert(name.to_owned(), text.to_owned());
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
            type_map.insert(name.to_owned(), kind.to_owned());
        } else {
            let (series, value) = line.rsplit_once(' ').expect("a sample");
            let value: f64 = value.parse().unwrap_or_else(|_| panic!("a number in {line:?}"));
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => {
                    let body = rest.strip_suffix('}').expect("closed labels");
                    let labels = body
                        .split("\",")
                        .filter(|pair| !pair.is_empty())
                        .map(|pair| {
                            let (key, value) = pair.split_once("=\"").expect("label=\"value\"");
                            (key.to_owned(), value.trim_end_matches('"').to_owned())
                        })
                        .collect();
                    (name.to_owned(), labels)
                }
                None => (series.to_owned(), std::collections::BTreeMap::new()),
            };
            samples.push((name, labels, value));
        }
    }
    (help, types, samples)
}

/// What operators watch is on `/metrics`, each family with `# HELP` and
/// `# TYPE`: logins by method and outcome, codes by channel, token
/// requests by grant type and outcome, report tasks and their duration as
/// a histogram. (The recorder is the process's: other tests add to the
/// same counters, so figures are checked as at least what this one did.)
#[tokio::test]
async fn metrics_count_logins_codes_tokens_and_reports_with_help() {
    let app = TestApp::spawn(backends()[0]).await;
    // A browser login with its SMS code and the code's exchange.
    app.tokens_for("ivan", "ivan-password").await;
    let ivan = app.token_pair("ivan").await;
    let refused = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", "not-a-token")]).await;
    assert_eq!(refused.status(), 400);
    let (status, task) = super::reports::call(
        &app,
        Some(&ivan),
        "POST",
        "/v1/reports/tasks",
        Some(super::reports::statement("2026-01-01", "2026-01-31")),
    )
    .await;
    assert_eq!(status, 200, "{task}");
    let done = super::reports::finished(&app, &ivan, task["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "DONE");

    let text = scrape(&app.url("/metrics")).await;
    let (help, types, _) = parse_prometheus(&text);
    let at_least = |name: &str, labels: &[(&str, &str)]| sum(&text, name, labels);
    for (family, kind) in [
        ("portico_logins_total", "counter"),
        ("portico_login_codes_total", "counter"),
        ("portico_token_requests_total", "counter"),
        ("portico_report_tasks_total", "counter"),
        ("portico_report_generation_seconds", "histogram"),
    ] {
        assert!(help.get(family).is_some_and(|h| !h.is_empty()), "# HELP {family}: {text}");
        assert_eq!(types.get(family).map(String::as_str), Some(kind), "# TYPE {family}");
    }
    assert!(at_least("portico_logins_total", &[("method", "PASSWORD"), ("outcome", "succeeded")]) >= 1.0);
    assert!(at_least("portico_login_codes_total", &[("channel", "sms"), ("outcome", "sent")]) >= 1.0);
    let issued = [("grant_type", "authorization_code"), ("outcome", "issued")];
    assert!(at_least("portico_token_requests_total", &issued) >= 1.0, "{text}");
    let refused = [("grant_type", "refresh_token"), ("outcome", "invalid_grant")];
    assert!(at_least("portico_token_requests_total", &refused) >= 1.0, "{text}");
    assert!(at_least("portico_report_tasks_total", &[("outcome", "done")]) >= 1.0);
    assert!(at_least("portico_report_generation_seconds_count", &[("outcome", "done")]) >= 1.0);
    assert!(at_least("portico_report_generation_seconds_bucket", &[("outcome", "done"), ("le", "+Inf")]) >= 1.0);
}

/// With `metrics_listen`, `/metrics` is answered on that port only: the
/// public listener no longer has it, and the metrics port has nothing else.
#[tokio::test]
async fn metrics_listen_serves_metrics_on_its_own_port_only() {
    let app = TestApp::spawn_with(backends()[0], |c| c.metrics_listen = Some("127.0.0.1:0".parse().unwrap())).await;
    let metrics = app.config.metrics_listen.expect("bound");
    assert_ne!(metrics.port(), 0);
    assert_ne!(metrics, app.config.listen);
    let http = app.http();
    assert_eq!(http.get(app.url("/healthz")).send().await.unwrap().status(), 200);
    assert_eq!(http.get(app.url("/metrics")).send().await.unwrap().status(), 404, "not on the public listener");
    let text = scrape(&format!("http://{metrics}/metrics")).await;
    let (help, types, _) = parse_prometheus(&text);
    assert_eq!(types.get("portico_http_requests_total").map(String::as_str), Some("counter"), "{text}");
    assert!(help.contains_key("portico_http_request_duration_seconds"), "{text}");
    assert!(sum(&text, "portico_http_requests_total", &[("route", "/healthz"), ("status", "200")]) >= 1.0);
    let other = http.get(format!("http://{metrics}/healthz")).send().await.unwrap();
    assert_eq!(other.status(), 404, "the metrics port serves only /metrics");
}

/// Revocations by reason, the delivery lag, and the waits for a database
/// connection are counted, on both backends; on PostgreSQL also the items
/// of each combined token statement. (The recorder is the
/// process's: each figure is compared with a scrape before the actions.)
#[tokio::test]
async fn metrics_count_revocations_delivery_lag_and_database_waits() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.notifications.deliver = false;
            c.database_max_connections = 7;
        })
        .await;
        let url = app.url("/metrics");
        let before = scrape(&url).await;
        let backend_name = app.store.backend();

        // The client revokes a refresh token: its grant is revoked.
        let tokens = app.tokens_for("ivan", "ivan-password").await;
        let refresh = tokens.refresh_token.clone().expect("a refresh token");
        let form = [
            ("token", refresh.as_str()),
            ("client_id", portico_tests::demo::CLIENT_ID),
            ("client_secret", portico_tests::demo::CLIENT_SECRET),
        ];
        let revoked = app.http().post(app.url("/oauth2/revoke")).form(&form).send().await.unwrap();
        assert_eq!(revoked.status(), 200);

        // A payment delivered on its second attempt, 70 s after intake.
        let (_, _, receiver) = super::notifications::subscribed(&app).await;
        let event = serde_json::json!({
            "eventId": "lag-1", "merchantId": "m1", "event": super::notifications::payment("order-lag")
        });
        let submitted = super::notifications::submit(&app, "payment", &event, Some(portico_tests::INTERNAL_TOKEN));
        assert_eq!(submitted.await.0, 202);
        let deliverer = portico_notify::delivery::Deliverer::new(std::sync::Arc::clone(&app.notify)).unwrap();
        *receiver.answers.lock().unwrap() = vec![500];
        assert_eq!(deliverer.run_once().await.unwrap(), 1);
        app.clock.advance(time::Duration::seconds(70));
        assert_eq!(deliverer.run_once().await.unwrap(), 1);

        let after = scrape(&url).await;
        let grew = |name: &str, labels: &[(&str, &str)]| sum(&after, name, labels) - sum(&before, name, labels);
        let revocations = [("what", "grant"), ("reason", "revocation_endpoint")];
        assert!(grew("portico_revocations_total", &revocations) >= 1.0, "{backend:?}: {after}");
        assert!(grew("portico_delivery_lag_seconds_count", &[]) >= 1.0, "{backend:?}");
        assert!(grew("portico_delivery_lag_seconds_sum", &[]) >= 70.0, "the lag since intake: {backend:?}");
        let waits = [("backend", backend_name)];
        assert!(grew("portico_database_wait_seconds_count", &waits) >= 2.0, "{backend:?}: {after}");
        let (help, types, _) = parse_prometheus(&after);
        for (family, kind) in [
            ("portico_revocations_total", "counter"),
            ("portico_delivery_lag_seconds", "histogram"),
            ("portico_database_wait_seconds", "histogram"),
            ("portico_database_waiting", "gauge"),
        ] {
            assert!(help.get(family).is_some_and(|h| !h.is_empty()), "# HELP {family}");
            assert_eq!(types.get(family).map(String::as_str), Some(kind), "# TYPE {family}");
        }
        if backend_name == "postgres" {
            // The pool's size as configured, its connections busy or idle.
            assert_eq!(sum(&after, "portico_database_connections_max", &waits), 7.0, "{after}");
            let open = sum(&after, "portico_database_connections", &waits);
            assert!((1.0..=7.0).contains(&open), "{open} connections open");
            // The token endpoint's writes, each counted in the statement
            // that carried it.
            let redemptions = [("statement", "code_redemption")];
            assert!(grew("portico_database_batch_items_count", &redemptions) >= 1.0, "{after}");
            assert!(grew("portico_database_batch_items_sum", &redemptions) >= 1.0, "{after}");
            assert!(help.get("portico_database_batch_items").is_some_and(|h| !h.is_empty()));
            assert_eq!(types.get("portico_database_batch_items").map(String::as_str), Some("histogram"));
        }
    }
}

/// `/metrics` read by the Prometheus project's own text-format parser
/// (`prometheus_client.parser` from PyPI, in the Python named by
/// `PORTICO_TEST_PROMETHEUS`): it accepts the whole page, and the families
/// operators watch are there, counters and histograms (never summaries),
/// each with its HELP.
#[tokio::test]
async fn the_prometheus_parser_reads_metrics_with_every_family_typed_and_described() {
    let Ok(python) = std::env::var("PORTICO_TEST_PROMETHEUS") else {
        portico_tests::skipped(
            "PORTICO_TEST_PROMETHEUS is not set; the check with Prometheus' own parser needs a Python with \
             prometheus_client",
        );
        return;
    };
    let app = TestApp::spawn(backends()[0]).await;
    app.tokens_for("ivan", "ivan-password").await;
    let text = scrape(&app.url("/metrics")).await;
    let script = "import json, sys\n\
        from prometheus_client.parser import text_string_to_metric_families\n\
        families = [{'name': f.name, 'type': f.type, 'help': f.documentation, 'samples': len(f.samples)}\n\
                    for f in text_string_to_metric_families(sys.stdin.read())]\n\
        print(json.dumps(families))\n";
    let mut child = std::process::Command::new(python)
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run the parser");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the parser refused the page: {}", String::from_utf8_lossy(&out.stderr));
    let families: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    // The parser names a counter's family without `_total`.
    let family = |name: &str| families.iter().find(|f| f["name"] == name).cloned();
    for (name, kind) in [
        ("portico_http_requests", "counter"),
        ("portico_http_request_duration_seconds", "histogram"),
        ("portico_logins", "counter"),
        ("portico_login_codes", "counter"),
        ("portico_token_requests", "counter"),
        ("portico_database_wait_seconds", "histogram"),
        ("portico_database_waiting", "gauge"),
    ] {
        let found = family(name).unwrap_or_else(|| panic!("no family {name}: {families:?}"));
        assert_eq!(found["type"], kind, "{name}");
        assert!(found["help"].as_str().is_some_and(|h| !h.is_empty()), "{name} has HELP");
        assert!(found["samples"].as_u64().unwrap_or(0) > 0, "{name} has samples");
    }
    assert!(families.iter().all(|f| f["type"] != "summary"), "no summaries: {families:?}");
    assert!(
        families.iter().filter(|f| f["name"].as_str().unwrap_or("").starts_with("portico_")).all(|f| f["help"] != ""),
        "every family of Portico's has HELP"
    );
}

/// Made-up request methods (sent on a raw socket, as any client may) are
/// counted as one `other` series: unauthenticated requests cannot grow
/// `/metrics` or the server's memory without bound.
#[tokio::test]
async fn made_up_methods_add_no_metric_series() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let app = TestApp::spawn(backends()[0]).await;
    let addr = app.url("").trim_start_matches("http://").to_owned();
    let metrics = || async { app.http().get(app.url("/metrics")).send().await.unwrap().text().await.unwrap() };
    let before = metrics().await;
    let mut methods = Vec::new();
    for _ in 0..300 {
        let noise =
            [uuid::Uuid::new_v4().into_bytes(), uuid::Uuid::new_v4().into_bytes(), uuid::Uuid::new_v4().into_bytes()];
        let method: String = noise.concat().iter().take(40).map(|b| char::from(b'A' + b % 26)).collect();
        let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let request = format!("{method} /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.unwrap();
        assert!(answer.starts_with(b"HTTP/1.1 "), "answered: {}", String::from_utf8_lossy(&answer));
        methods.push(method);
    }
    let after = metrics().await;
    for method in &methods {
        assert!(!after.contains(method.as_str()), "{method} became a label");
    }
    assert!(after.contains(r#"method="other""#), "counted as other: {after}");
    // Other tests share the process's registry; this test's own requests
    // may add at most the few `other` series (one per status and route).
    let series = |text: &str| text.lines().filter(|l| l.contains(r#"method="other""#)).count();
    assert!(series(&after) <= series(&before) + 40, "{} lines before, {} after", series(&before), series(&after));
}
