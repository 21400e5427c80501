//! A database outage: liveness answers 503, the token endpoint a clean 5xx
//! JSON error, readiness 503, the permissions and report APIs the spec's
//! 500 with `Retry-After`; the server recovers when the database returns.

use std::time::Duration;

use portico_tests::{Backend, POSTGRES_ENV, Pkce, TcpProxy, TestApp, location_param};

/// A PostgreSQL server behind a proxy that can cut it off, and Portico on
/// it with `acquire_timeout_secs`; `None` (said as skipped) without one.
async fn behind_a_proxy(test: &str, acquire_timeout_secs: u32) -> Option<(TcpProxy, TestApp)> {
    let Ok(base) = std::env::var(POSTGRES_ENV) else {
        portico_tests::skipped(&format!("{POSTGRES_ENV} is not set; {test} needs PostgreSQL"));
        return None;
    };
    let upstream = url::Url::parse(&base).unwrap();
    let upstream = format!("{}:{}", upstream.host_str().unwrap(), upstream.port().unwrap_or(5432));
    let proxy = TcpProxy::start(upstream).await;
    let app = TestApp::spawn_with(Backend::Postgres, |config| {
        config.database_url = Some(proxy.url_through(config.database_url.as_deref().unwrap()));
        config.database_acquire_timeout_secs = acquire_timeout_secs;
    })
    .await;
    Some((proxy, app))
}

#[tokio::test]
async fn a_database_outage_is_503_and_the_server_recovers() {
    let Some((proxy, app)) = behind_a_proxy("the database outage test", 1).await else { return };
    let tokens = app.tokens_for("ivan", "ivan-password").await;
    assert_eq!(app.liveness(&tokens.access_token).await, 200);
    let pair = app.token_pair("maria").await;
    let permissions = || pair.on(app.http().get(app.url("/api/v2/permissions"))).send();
    assert_eq!(permissions().await.unwrap().status(), 200);
    // More pooled connections than the outage below will touch: the ones it
    // does not touch must not serve a failure after the database is back.
    let mut parallel = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let (http, url, token) = (app.http(), app.url("/oauth2/token/liveness"), tokens.access_token.clone());
        parallel.spawn(async move { http.get(url).bearer_auth(token).send().await.unwrap().status() });
    }
    assert!(parallel.join_all().await.iter().all(|status| *status == 200));

    proxy.cut();
    // The node's memory of revocations is trusted for at most the
    // staleness bound after it last heard from the database.
    tokio::time::sleep(Duration::from_millis(app.config.database_cache_staleness_ms.into())).await;
    assert_eq!(app.liveness(&tokens.access_token).await, 503);
    let response = app
        .token_request(&[("grant_type", "refresh_token"), ("refresh_token", tokens.refresh_token.as_deref().unwrap())])
        .await;
    assert_eq!(response.status(), 503);
    let body: serde_json::Value = response.json().await.expect("a JSON error body");
    assert_eq!(body["error"], "temporarily_unavailable");
    let ready = app.http().get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 503);
    let response = permissions().await.unwrap();
    assert_eq!(response.status(), 500);
    assert_eq!(response.headers()["retry-after"], "5", "an outage's 500 says when to try again");
    let body: serde_json::Value = response.json().await.unwrap();
    assert!(body["message"].as_str().unwrap().contains("unavailable"), "{body}");
    // The report API, too, has only 500 for a server error: the same.
    let task = super::reports::statement("2026-01-01", "2026-01-31");
    let response = pair.on(app.http().post(app.url("/v1/reports/tasks"))).json(&task).send().await.unwrap();
    assert_eq!(response.status(), 500);
    assert_eq!(response.headers()["retry-after"], "5");
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["code"], "INTERNAL_ERROR");
    assert_eq!(body["message"], "the report store is unavailable; try again later", "{body}");

    proxy.restore();
    for _ in 0..16 {
        assert_eq!(app.liveness(&tokens.access_token).await, 200, "recovered");
    }
    assert_eq!(permissions().await.unwrap().status(), 200);
    let response = app
        .token_request(&[("grant_type", "refresh_token"), ("refresh_token", tokens.refresh_token.as_deref().unwrap())])
        .await;
    assert_eq!(response.status(), 200, "the refresh token survived the outage unspent");
}

/// Sets `proxy` to lose the answer to the statement holding `marker`
/// (`what`), then, a second after that happened, to forward again: to be
/// joined with the request that sends it.
fn answer_lost_then_back<'a>(
    proxy: &'a TcpProxy,
    marker: &[u8],
    what: &'static str,
) -> impl std::future::Future<Output = ()> + 'a {
    let sprung = proxy.lose_the_answer_to(marker);
    async move {
        sprung.await.unwrap_or_else(|_| panic!("{what}'s answer was lost"));
        tokio::time::sleep(Duration::from_secs(1)).await;
        proxy.restore();
    }
}

/// A code's redemption and a refresh token's rotation that PostgreSQL
/// committed while their answers were lost on the way back (the path to
/// it broke) are answered with their tokens once it can be reached again:
/// a 503 there would send the client to try again with a code or token
/// already spent, and its retry would be refused as a replay.
#[tokio::test]
async fn a_token_write_whose_answer_was_lost_is_settled_and_answered_with_its_tokens() {
    use super::ops::{scrape, sum};
    let Some((proxy, app)) = behind_a_proxy("the lost-answer test", 2).await else { return };
    let before = scrape(&app.url("/metrics")).await;
    let pkce = Pkce::new();
    let code = app.login_for_code(&app.browser(), &pkce, "ivan", "ivan-password").await;

    // Only a redemption's record has this key (its statement's text names
    // the column without quotes).
    let lost = answer_lost_then_back(&proxy, br#""token_created_at":"#, "the redemption");
    let (response, ()) = tokio::join!(app.exchange(&code, &pkce.verifier), lost);
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap_or_default());
    let tokens: serde_json::Value = response.json().await.unwrap();
    assert_eq!(app.liveness(tokens["access_token"].as_str().unwrap()).await, 200);

    let lost = answer_lost_then_back(&proxy, br#""old_hash":"#, "the rotation");
    let refresh = [("grant_type", "refresh_token"), ("refresh_token", tokens["refresh_token"].as_str().unwrap())];
    let (response, ()) = tokio::join!(app.token_request(&refresh), lost);
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap_or_default());
    let rotated: serde_json::Value = response.json().await.unwrap();
    // The successor answered is the one stored: it rotates in turn.
    let next = [("grant_type", "refresh_token"), ("refresh_token", rotated["refresh_token"].as_str().unwrap())];
    assert_eq!(app.token_request(&next).await.status(), 200);
    // And the first sendings did commit: the code is spent.
    let replay = app.exchange(&code, &pkce.verifier).await;
    assert_eq!(replay.status(), 400);
    let body: serde_json::Value = replay.json().await.unwrap();
    assert_eq!(body["error_description"], "the authorization code was already used", "{body}");

    let after = scrape(&app.url("/metrics")).await;
    for statement in ["code_redemption", "refresh_rotation"] {
        let labels = [("statement", statement), ("outcome", "settled")];
        let name = "portico_database_writes_in_doubt_total";
        assert_eq!(sum(&after, name, &labels) - sum(&before, name, &labels), 1.0, "{statement}: {after}");
    }
}

/// Pushes a good authorization request of the demo client (RFC 9126) and
/// answers the authorize URL that presents its `request_uri`, and the
/// `request_uri`.
async fn pushed_authorize_url(app: &TestApp, pkce: &Pkce, state: &str) -> (String, String) {
    use portico_tests::demo;
    let redirect_uri = app.redirect_uri();
    let params = [
        ("response_type", "code"),
        ("client_id", demo::CLIENT_ID),
        ("redirect_uri", redirect_uri.as_str()),
        ("scope", "openid profile"),
        ("state", state),
        ("code_challenge", pkce.challenge.as_str()),
        ("code_challenge_method", "S256"),
    ];
    let pushed = app.http().post(app.url("/oauth2/par")).basic_auth(demo::CLIENT_ID, Some(demo::CLIENT_SECRET));
    let pushed: serde_json::Value = pushed.form(&params).send().await.unwrap().json().await.unwrap();
    let request_uri = pushed["request_uri"].as_str().expect("a request_uri").to_owned();
    let mut url = url::Url::parse(&app.url("/oauth2/authorize")).unwrap();
    url.query_pairs_mut().append_pair("client_id", demo::CLIENT_ID).append_pair("request_uri", &request_uri);
    (url.into(), request_uri)
}

/// The write that takes a pushed request — storing its login process, or
/// the code a single sign-on session answers with — settles a lost answer
/// as the token writes do: the browser gets its login and its code, not a
/// 503 whose retry would meet a `request_uri` used by the first sending.
#[tokio::test]
async fn a_write_taking_a_pushed_request_whose_answer_was_lost_still_serves_the_browser() {
    use super::ops::{scrape, sum};
    let Some((proxy, app)) = behind_a_proxy("the pushed-request lost-answer test", 2).await else { return };
    let before = scrape(&app.url("/metrics")).await;
    let browser = app.browser();

    // Only the login process's write carries the request_uri itself (in
    // the state it stores; the reads before it carry its hash).
    let pkce = Pkce::new();
    let (url, request_uri) = pushed_authorize_url(&app, &pkce, "st-process").await;
    let lost = answer_lost_then_back(&proxy, request_uri.as_bytes(), "the login process's write");
    let (started, ()) = tokio::join!(async { browser.get(&url).send().await.unwrap() }, lost);
    assert_eq!(started.status(), 303, "the login starts");
    let done = app.login_after(&browser, started, "ivan", "ivan-password").await;
    assert_eq!(location_param(&done, "state").as_deref(), Some("st-process"));
    let code = location_param(&done, "code").unwrap();
    assert_eq!(app.exchange(&code, &pkce.verifier).await.status(), 200);

    // With a session, the code's write takes the request: only it carries
    // the PKCE challenge on the way to the database.
    let pkce = Pkce::new();
    let (url, _) = pushed_authorize_url(&app, &pkce, "st-code").await;
    let lost = answer_lost_then_back(&proxy, pkce.challenge.as_bytes(), "the code's write");
    let (issued, ()) = tokio::join!(async { browser.get(&url).send().await.unwrap() }, lost);
    assert_eq!(issued.status(), 302, "the code, at once");
    assert_eq!(location_param(&issued, "state").as_deref(), Some("st-code"));
    let code = location_param(&issued, "code").unwrap();
    assert_eq!(app.exchange(&code, &pkce.verifier).await.status(), 200);
    // Taken once all the same.
    assert_eq!(app.browser().get(&url).send().await.unwrap().status(), 400);

    let after = scrape(&app.url("/metrics")).await;
    for statement in ["pushed_login_process", "pushed_code"] {
        let labels = [("statement", statement), ("outcome", "settled")];
        let name = "portico_database_writes_in_doubt_total";
        assert_eq!(sum(&after, name, &labels) - sum(&before, name, &labels), 1.0, "{statement}: {after}");
    }
}

/// The login process's write that stores a one-time code, committed while
/// its answer was lost on the way back, is settled once PostgreSQL
/// answers again: the code is sent and the page asks for it. Answered 503
/// instead, the retried page found the code stored and never sent, and
/// the customer waited for an SMS that was not coming (found by the
/// cluster test: "no SMS code arrived").
#[tokio::test]
async fn a_login_write_storing_a_code_whose_answer_was_lost_still_sends_the_code() {
    use super::ops::{scrape, sum};
    let Some((proxy, app)) = behind_a_proxy("the lost-answer code test", 2).await else { return };
    let before = scrape(&app.url("/metrics")).await;
    let browser = app.browser();
    let pkce = Pkce::new();
    let started = browser.get(app.authorize_url(&pkce, &[])).send().await.unwrap();
    assert_eq!(started.status(), 303);
    let view = app.login_view(&browser).await;
    let csrf = view["pageData"]["authenticationFlowContext"]["csrf"].as_str().unwrap().to_owned();
    let form = [("_csrf", csrf.as_str()), ("principal", "ivan"), ("credentials", "ivan-password")];
    let response = browser.post(app.url("/login")).form(&form).send().await.unwrap();
    assert_eq!((response.status().as_u16(), portico_tests::location(&response)), (303, "/login".to_owned()));

    // Only the write that stores the code carries its hash.
    let phone = app.store.find_user_by_login("ivan").await.unwrap().unwrap().phone.unwrap();
    let sent = |app: &TestApp| app.outbox().iter().filter(|m| m["to"] == phone.as_str()).count();
    let sent_before = sent(&app);
    let lost = answer_lost_then_back(&proxy, br#""code_hash":"#, "the code's write");
    let (page, ()) = tokio::join!(async { browser.get(app.url("/login")).send().await.unwrap() }, lost);
    assert_eq!(page.status(), 200, "the page, once the write was settled");
    let view = portico_tests::view_data(&page.text().await.unwrap());
    assert_eq!(view["pageData"]["stepViewData"]["stepType"], "sms-otp", "{view}");
    assert_eq!(sent(&app), sent_before + 1, "the code was sent, once");

    let back = app.second_factor_if_asked(&browser, &csrf, "ivan", "/login".to_owned()).await;
    let done = browser.get(app.url(&back)).send().await.unwrap();
    let code = location_param(&done, "code").expect("the login completes with the code sent");
    assert_eq!(app.exchange(&code, &pkce.verifier).await.status(), 200);

    let after = scrape(&app.url("/metrics")).await;
    let labels = [("statement", "login_process"), ("outcome", "settled")];
    let name = "portico_database_writes_in_doubt_total";
    assert_eq!(sum(&after, name, &labels) - sum(&before, name, &labels), 1.0, "{after}");
}

/// A redemption whose answer was lost while PostgreSQL stays out of reach
/// is answered 503 once 15 s have passed, not held open for ever, and
/// counted as unknown; its outcome was a commit, so the client's retry
/// meets a spent code (the one case docs/decisions.md leaves).
#[tokio::test]
async fn a_token_write_still_in_doubt_after_15_s_is_answered_503_and_counted_unknown() {
    use super::ops::{scrape, sum};
    let Some((proxy, app)) = behind_a_proxy("the in-doubt give-up test", 1).await else { return };
    let name = "portico_database_writes_in_doubt_total";
    let labels = [("statement", "code_redemption"), ("outcome", "unknown")];
    let before = sum(&scrape(&app.url("/metrics")).await, name, &labels);
    let pkce = Pkce::new();
    let code = app.login_for_code(&app.browser(), &pkce, "ivan", "ivan-password").await;

    let _sprung = proxy.lose_the_answer_to(br#""token_created_at":"#);
    let started = std::time::Instant::now();
    let response = app.exchange(&code, &pkce.verifier).await;
    let took = started.elapsed();
    assert_eq!(response.status(), 503);
    assert!(response.headers().contains_key("retry-after"));
    assert!(took >= Duration::from_secs(15) && took < Duration::from_secs(25), "answered after {took:?}");
    let after = sum(&scrape(&app.url("/metrics")).await, name, &labels);
    assert_eq!(after - before, 1.0);

    proxy.restore();
    let retry = app.exchange(&code, &pkce.verifier).await;
    assert_eq!(retry.status(), 400, "the first sending had committed");
}

#[tokio::test]
async fn readiness_answers_within_a_second_when_the_database_is_cut_off() {
    let Some((proxy, app)) = behind_a_proxy("the readiness test", 5).await else { return };
    assert_eq!(app.http().get(app.url("/readyz")).send().await.unwrap().status(), 200);
    proxy.cut();
    let started = std::time::Instant::now();
    let ready = app.http().get(app.url("/readyz")).send().await.unwrap();
    let took = started.elapsed();
    assert_eq!(ready.status(), 503);
    assert!(took < std::time::Duration::from_millis(1500), "answered in {took:?}, not the 5 s acquire timeout");
    proxy.restore();
}

#[tokio::test]
async fn during_an_outage_the_event_intake_answers_503_within_the_acquire_timeout_and_keeps_what_it_took() {
    let Some((proxy, app)) = behind_a_proxy("the intake outage test", 1).await else { return };
    let submit = |event_id: &str| {
        submit_to(app.http(), app.url("/internal/v1/notifications/events/payment"), event_id.to_owned())
    };
    assert_eq!(submit("before-1").await.0, 202, "acknowledged before the outage");

    proxy.cut();
    // Several at once, so that they share a batch of the intake writer.
    let started = std::time::Instant::now();
    let mut during = tokio::task::JoinSet::new();
    for i in 0..8 {
        let (http, url) = (app.http(), app.url("/internal/v1/notifications/events/payment"));
        during.spawn(async move { submit_to(http, url, format!("during-{i}")).await });
    }
    let answers = during.join_all().await;
    let took = started.elapsed();
    for (status, retry_after, body) in &answers {
        assert_eq!(*status, 503, "{body}");
        assert!(retry_after.is_some(), "Retry-After is set");
        assert!(body.contains("temporarily_unavailable"), "{body}");
    }
    assert!(took < std::time::Duration::from_secs(4), "answered within the 1 s acquire timeout and a margin: {took:?}");

    proxy.restore();
    let mut accepted = false;
    for _ in 0..20 {
        if submit("after-1").await.0 == 202 {
            accepted = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(accepted, "recovered");
    let (deliveries, _) = app.store.list_deliveries("demo-shop", None, 0, 100).await.unwrap();
    let events: Vec<&str> = deliveries.iter().map(|d| d.event_id.as_str()).collect();
    assert!(events.contains(&"before-1") && events.contains(&"after-1"), "{events:?}");
    assert!(!events.iter().any(|e| e.starts_with("during-")), "nothing answered 503 was stored: {events:?}");
}

/// Submissions that arrive one after another during an outage are each
/// answered within the acquire timeout and a second of their own arrival:
/// one that queued behind a batch the database failed does not wait a
/// second timeout for its own batch.
#[tokio::test]
async fn intake_submissions_arriving_one_after_another_in_an_outage_wait_one_timeout_each() {
    let Some((proxy, app)) = behind_a_proxy("the staggered intake outage test", 2).await else { return };
    assert_eq!(
        submit_to(app.http(), app.url("/internal/v1/notifications/events/payment"), "before-1".into()).await.0,
        202
    );
    proxy.cut();
    let mut during = tokio::task::JoinSet::new();
    for i in 0..10 {
        let (http, url) = (app.http(), app.url("/internal/v1/notifications/events/payment"));
        during.spawn(async move {
            let started = std::time::Instant::now();
            let (status, ..) = submit_to(http, url, format!("staggered-{i}")).await;
            (status, started.elapsed())
        });
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    }
    for (status, took) in during.join_all().await {
        assert_eq!(status, 503);
        assert!(
            took < std::time::Duration::from_secs(3),
            "answered within the 2 s acquire timeout and a second: {took:?}"
        );
    }
    proxy.restore();
}

async fn submit_to(http: reqwest::Client, url: String, event_id: String) -> (u16, Option<String>, String) {
    let event = serde_json::json!({
        "paymentId": "pay-1", "transactionId": 9001, "orderId": "order-1", "amount": 150050,
        "currency": "RUB", "status": "SUCCESS", "statusDate": "2026-11-22T13:45:00+03:00",
        "paymentMethod": "SBP", "createdAt": "2026-11-22T13:45:01+03:00"
    });
    let body = serde_json::json!({ "eventId": event_id, "merchantId": "demo-shop", "event": event });
    let response = http.post(url).bearer_auth(portico_tests::INTERNAL_TOKEN).json(&body).send().await.unwrap();
    let status = response.status().as_u16();
    let retry_after = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    (status, retry_after, response.text().await.unwrap())
}

#[tokio::test]
async fn connections_killed_by_a_database_shutdown_are_an_outage_never_a_500() {
    use sqlx::Connection as _;
    let Ok(base) = std::env::var(POSTGRES_ENV) else {
        portico_tests::skipped(&format!("{POSTGRES_ENV} is not set; the shutdown test needs PostgreSQL"));
        return;
    };
    let app = TestApp::spawn(Backend::Postgres).await;
    let tokens = app.tokens_for("ivan", "ivan-password").await;
    // Fill the pool with connections that have served.
    let mut warm = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (http, url, token) = (app.http(), app.url("/oauth2/token/liveness"), tokens.access_token.clone());
        warm.spawn(async move { http.get(url).bearer_auth(token).send().await.unwrap().status() });
    }
    assert!(warm.join_all().await.iter().all(|status| *status == 200));

    // What `pg_ctl -m fast stop` does to each session, under load: terminate
    // it with 57P01 ("terminating connection due to administrator command"),
    // again and again while requests are in flight.
    let database = url::Url::parse(app.config.database_url.as_deref().unwrap()).unwrap().path()[1..].to_owned();
    let mut admin = sqlx::PgConnection::connect(&base).await.unwrap();
    // The token endpoint reads the store for each of these (the client, the
    // refresh token's hash): 400 invalid_grant normally, 503 in an outage.
    let mut load = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let (http, url) = (app.http(), app.url("/oauth2/token"));
        load.spawn(async move {
            let mut statuses = Vec::new();
            for _ in 0..150 {
                let form = [("grant_type", "refresh_token"), ("refresh_token", "not-a-token-portico-issued")];
                let request = http
                    .post(&url)
                    .basic_auth(portico_tests::demo::CLIENT_ID, Some(portico_tests::demo::CLIENT_SECRET));
                statuses.push(request.form(&form).send().await.unwrap().status().as_u16());
            }
            statuses
        });
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let terminator = {
        let stop = std::sync::Arc::clone(&stop);
        tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                sqlx::query(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                     WHERE datname = $1 AND pid <> pg_backend_pid()",
                )
                .bind(&database)
                .execute(&mut admin)
                .await
                .unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        })
    };
    let statuses: Vec<u16> = load.join_all().await.into_iter().flatten().collect();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    terminator.await.unwrap();
    assert!(statuses.iter().all(|s| *s == 400 || *s == 503), "an outage, never a 500: {:?}", {
        let mut counts = std::collections::BTreeMap::new();
        statuses.iter().for_each(|s| *counts.entry(*s).or_insert(0) += 1);
        counts
    });
    let refresh = tokens.refresh_token.clone().unwrap();
    let response = app.token_request(&[("grant_type", "refresh_token"), ("refresh_token", &refresh)]).await;
    assert!(matches!(response.status().as_u16(), 200 | 503), "{}", response.status());
    // And it recovers without a restart.
    let mut last = 0;
    for _ in 0..20 {
        last = app.liveness(&tokens.access_token).await;
        if last == 200 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(last, 200, "recovered");
}
