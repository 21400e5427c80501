//! Brokerage data over HTTP: `POST /internal/v1/brokerage/agreements` (the
//! internal token) and `/admin/v1/brokerage/agreements` (the admin token),
//! all or nothing, on both backends.

use portico_reports::sample::{Shape, agreement};
use portico_tests::{ADMIN_TOKEN, INTERNAL_TOKEN, TestApp, backends};
use serde_json::{Value, json};

async fn send(app: &TestApp, path: &str, token: &str, body: Option<&Value>) -> (u16, Value) {
    let url = app.url(path);
    let request = match body {
        Some(body) => app.http().post(url).json(body),
        None => app.http().get(url),
    };
    let response = request.bearer_auth(token).send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn agreements_are_stored_whole_or_not_at_all_with_each_problem_named() {
    const INTERNAL: &str = "/internal/v1/brokerage/agreements";
    const ADMIN: &str = "/admin/v1/brokerage/agreements";
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let mut first = agreement(&Shape { number: "БД-0100", ..Shape::demo() });
        first.trades.truncate(3);
        let mut second = agreement(&Shape { number: "БД-0101", ..Shape::demo() });
        second.trades[1].ticker = "NOPE".into();
        second.cash_movements[0].counterparty.inn = "12".into();
        let document = json!({"agreements": [first, second]});

        for (path, wrong) in [(INTERNAL, ADMIN_TOKEN), (ADMIN, INTERNAL_TOKEN)] {
            let (status, body) = send(&app, path, wrong, Some(&document)).await;
            assert_eq!((status, body["code"].as_str()), (401, Some("unauthorized")), "{path}: {body}");
        }
        let (status, body) = send(&app, INTERNAL, INTERNAL_TOKEN, Some(&document)).await;
        assert_eq!((status, body["code"].as_str()), (400, Some("invalid_document")), "{backend:?}: {body}");
        assert_eq!(
            body["problems"],
            json!([
                {"place": "agreements[1].trades[1].ticker", "message": "an instrument listed in instruments"},
                {"place": "agreements[1].cashMovements[0].counterparty.inn", "message": "10 or 12 digits"}
            ])
        );
        assert!(app.store.find_agreement("БД-0100").await.unwrap().is_none(), "the valid one is not stored either");
        let (status, body) = send(&app, INTERNAL, INTERNAL_TOKEN, Some(&json!({"agreements": [first], "x": 1}))).await;
        let problem = &body["problems"][0];
        assert_eq!((status, problem["place"].as_str()), (400, Some("x")), "{body}");
        assert!(
            problem["message"].as_str().unwrap_or_default().starts_with("unknown field `x`, expected `agreements`")
        );

        let (status, body) = send(&app, INTERNAL, INTERNAL_TOKEN, Some(&json!({"agreements": [first]}))).await;
        assert_eq!((status, body), (200, json!({"agreements": ["БД-0100"]})));
        assert_eq!(app.store.find_agreement("БД-0100").await.unwrap().as_ref(), Some(&first));

        // Operators use the admin API: the same document replaces the agreement whole.
        first.trades.truncate(1);
        let (status, _) = send(&app, ADMIN, ADMIN_TOKEN, Some(&json!({"agreements": [first]}))).await;
        assert_eq!(status, 200);
        assert_eq!(app.store.find_agreement("БД-0100").await.unwrap().unwrap().trades.len(), 1);
        let audit = app.store.recent_audit(1).await.unwrap();
        assert_eq!((audit[0].kind.as_str(), audit[0].actor.as_deref()), ("brokerage.loaded", Some("token:admin")));
        assert_eq!(audit[0].detail, json!({"agreements": ["БД-0100"]}));
        let (status, listed) = send(&app, ADMIN, ADMIN_TOKEN, None).await;
        assert_eq!(status, 200);
        assert_eq!(
            listed,
            json!({"agreements": [{"number": "БД-0001", "cnum": "7700000001"}, {"number": "БД-0100", "cnum": "7700000001"}]})
        );
    }
}

/// A document wrong in hundreds of places is answered with the first 100
/// problems, in order, and how many more there are, by the API and by the
/// console's page alike; nothing is stored.
#[tokio::test]
async fn a_document_wrong_in_hundreds_of_places_is_answered_with_the_first_hundred() {
    let app = TestApp::spawn(backends()[0]).await;
    let mut wrong = agreement(&Shape { number: "БД-0200", ..Shape::demo() });
    let trade = wrong.trades[0].clone();
    wrong.trades = (0..250)
        .map(|n| portico_model::reports::brokerage::Trade {
            id: format!("T-{n}"),
            ticker: "NOPE".into(),
            ..trade.clone()
        })
        .collect();
    let document = json!({"agreements": [wrong]});
    let (status, body) = send(&app, "/admin/v1/brokerage/agreements", ADMIN_TOKEN, Some(&document)).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_document")), "{body}");
    let problems = body["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 101, "{body}");
    for (n, problem) in problems[..100].iter().enumerate() {
        let place = format!("agreements[0].trades[{n}].ticker");
        assert_eq!(problem["place"].as_str(), Some(place.as_str()), "in order: {problem}");
    }
    assert_eq!(problems[100], json!({"place": "", "message": "and 150 more problems: mend these and send it again"}));
    assert!(app.store.find_agreement("БД-0200").await.unwrap().is_none(), "nothing stored");

    // The console's page lists the same.
    let (browser, _) = crate::console::sign_in(&app, "operator", "operator-password").await;
    let html = browser.get(app.url("/console/brokerage")).send().await.unwrap().text().await.unwrap();
    let csrf = crate::console::csrf_of(&html);
    let text = serde_json::to_string(&document).unwrap();
    let form = [("_csrf", csrf.as_str()), ("document", text.as_str()), ("confirm", "yes")];
    let response = browser.post(app.url("/console/brokerage")).form(&form).send().await.unwrap();
    let page = (response.status().as_u16(), response.text().await.unwrap());
    assert_eq!(page.0, 400, "{}", page.1);
    assert!(page.1.contains("agreements[0].trades[99].ticker"), "{}", page.1);
    assert!(!page.1.contains("agreements[0].trades[100].ticker"), "the 101st is counted, not listed");
    assert!(page.1.contains("and 150 more problems"), "{}", page.1);
}
