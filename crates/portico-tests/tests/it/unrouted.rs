//! A path no operation serves (404) and a method a path does not take
//! (405, with the router's `Allow`) are answered in the error body of the
//! API the path belongs to; a path of no API gets a line of plain text, or
//! a browser the "page not found" page.

use portico_tests::{Backend, TestApp};
use serde_json::Value;

/// One request and how its API answers it: the body's member that holds
/// the code (`None` for plain text) and the code.
struct Case {
    method: &'static str,
    path: &'static str,
    status: u16,
    allow: &'static str,
    content_type: &'static str,
    code: Option<(&'static str, &'static str)>,
}

const CASES: &[Case] = &[
    Case {
        method: "GET",
        path: "/v1/reports/nope",
        status: 404,
        allow: "",
        content_type: "application/json",
        code: Some(("/code", "NOT_FOUND")),
    },
    Case {
        method: "PUT",
        path: "/v1/reports/tasks",
        status: 405,
        allow: "GET,HEAD,POST",
        content_type: "application/json",
        code: Some(("/code", "METHOD_NOT_ALLOWED")),
    },
    Case {
        method: "DELETE",
        path: "/internal/v1/reports/types",
        status: 405,
        allow: "GET,HEAD",
        content_type: "application/json",
        code: Some(("/code", "METHOD_NOT_ALLOWED")),
    },
    Case {
        method: "GET",
        path: "/admin/v1/nope",
        status: 404,
        allow: "",
        content_type: "application/json",
        code: Some(("/code", "not_found")),
    },
    Case {
        method: "PUT",
        path: "/admin/v1/merchants",
        status: 405,
        allow: "GET,HEAD,POST",
        content_type: "application/json",
        code: Some(("/code", "method_not_allowed")),
    },
    Case {
        method: "POST",
        path: "/internal/v1/nope",
        status: 404,
        allow: "",
        content_type: "application/json",
        code: Some(("/code", "not_found")),
    },
    Case {
        method: "DELETE",
        path: "/v1/notifications/settings",
        status: 405,
        allow: "GET,HEAD,PUT",
        content_type: "application/json",
        code: Some(("/code", "method_not_allowed")),
    },
    Case {
        method: "GET",
        path: "/api/v2/nope/a/b",
        status: 404,
        allow: "",
        content_type: "application/json",
        code: Some(("/code", "not_found")),
    },
    Case {
        method: "POST",
        path: "/api/v2/permissions",
        status: 405,
        allow: "GET,HEAD",
        content_type: "application/json",
        code: Some(("/code", "method_not_allowed")),
    },
    Case {
        method: "PATCH",
        path: "/scim/v2/Users",
        status: 405,
        allow: "GET,HEAD,POST",
        content_type: "application/scim+json",
        code: Some(("/status", "405")),
    },
    Case {
        method: "GET",
        path: "/oauth2/tokens",
        status: 404,
        allow: "",
        content_type: "application/json",
        code: Some(("/error", "invalid_request")),
    },
    Case {
        method: "GET",
        path: "/oauth2/token",
        status: 405,
        allow: "POST",
        content_type: "application/json",
        code: Some(("/error", "invalid_request")),
    },
    Case { method: "GET", path: "/nope", status: 404, allow: "", content_type: "text/plain", code: None },
    Case { method: "DELETE", path: "/healthz", status: 405, allow: "GET,HEAD", content_type: "text/plain", code: None },
];

fn methods(allow: &str) -> Vec<&str> {
    let mut methods: Vec<&str> = allow.split(',').map(str::trim).filter(|m| !m.is_empty()).collect();
    methods.sort_unstable();
    methods
}

#[tokio::test]
async fn a_request_no_operation_takes_is_refused_in_the_words_of_its_api() {
    // Routing is the same whatever the store.
    let app = TestApp::spawn(Backend::Sqlite).await;
    let client = reqwest::Client::new();
    for case in CASES {
        let what = format!("{} {}", case.method, case.path);
        let response =
            client.request(case.method.parse().unwrap(), format!("{}{}", app.base, case.path)).send().await.unwrap();
        assert_eq!(response.status().as_u16(), case.status, "{what}");
        let header =
            |name: &str| response.headers().get(name).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
        assert_eq!(methods(&header("allow")), methods(case.allow), "{what}: Allow");
        assert!(header("content-type").starts_with(case.content_type), "{what}: {}", header("content-type"));
        let request_id = header("x-request-id");
        let text = response.text().await.unwrap();
        let said = match case.code {
            Some((member, code)) => {
                let body: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{what}: {text}"));
                assert_eq!(body.pointer(member), Some(&Value::from(code)), "{what}: {body}");
                if case.path.starts_with("/v1/reports") {
                    assert_eq!(body["traceId"], request_id, "{what}: the report API names the request");
                }
                ["/message", "/error_description", "/detail"]
                    .iter()
                    .find_map(|m| body.pointer(m)?.as_str())
                    .unwrap()
                    .to_owned()
            }
            None => text,
        };
        assert!(said.contains(case.path), "{what}: the answer names the path: {said}");
        if case.status == 405 {
            assert!(said.contains(case.method), "{what}: and the method: {said}");
        }
    }
}

#[tokio::test]
async fn what_an_unserved_path_repeats_is_capped() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let long = format!("/admin/v1/{}", "x".repeat(5_000));
    let response = reqwest::get(format!("{}{long}", app.base)).await.unwrap();
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.unwrap();
    let message = body["message"].as_str().unwrap();
    assert!(message.starts_with("there is no operation at /admin/v1/xxx"), "{message}");
    assert!(message.chars().count() < 300, "{} characters", message.chars().count());
}

#[tokio::test]
async fn the_scim_api_asks_for_its_token_before_it_says_a_path_is_unserved() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let url = format!("{}/scim/v2/Nope", app.base);
    assert_eq!(reqwest::get(&url).await.unwrap().status(), 401);
    let response = reqwest::Client::new().get(&url).bearer_auth(portico_tests::SCIM_TOKEN).send().await.unwrap();
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["status"], "404", "{body}");
}

#[tokio::test]
async fn a_browser_at_an_address_of_no_api_is_shown_a_page_in_its_language() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let client = reqwest::Client::new();
    let page = |path: &'static str, language: &'static str| {
        client
            .get(format!("{}{path}", app.base))
            .header("accept", "text/html,application/xhtml+xml,*/*;q=0.8")
            .header("accept-language", language)
            .send()
    };
    for (language, heading) in [("en-GB,en;q=0.9", "Page not found"), ("ru-RU,ru;q=0.9", "Страница не найдена")]
    {
        let response = page("/no-such-page", language).await.unwrap();
        assert_eq!(response.status(), 404, "{language}");
        assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
        let html = response.text().await.unwrap();
        assert!(html.contains(&format!("<h1>{heading}</h1>")), "{language}: {html}");
    }
    // An API's path is answered in the API's words, page or not.
    let response = page("/v1/reports/nope", "en").await.unwrap();
    assert_eq!(response.status(), 404);
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("application/json"));
}
