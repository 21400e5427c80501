//! SCIM 2.0 provisioning at `/scim/v2`, on both backends: users the bank's
//! system creates log in, deactivation ends their sessions and tokens,
//! refusals are RFC 7644 error bodies, and scim2-tester (PyPI) finds
//! nothing wrong.

use portico_tests::{ADMIN_TOKEN, SCIM_TOKEN, TestApp, assert_bearer_challenges, backends, location, view_data};
use serde_json::{Value, json};

const CORE: &str = "urn:ietf:params:scim:schemas:core:2.0:User";

async fn scim(app: &TestApp, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let url = app.url(&format!("/scim/v2{path}"));
    let request = match method {
        "GET" => app.http().get(url),
        "POST" => app.http().post(url),
        "PUT" => app.http().put(url),
        "PATCH" => app.http().patch(url),
        "DELETE" => app.http().delete(url),
        other => panic!("no method {other}"),
    };
    let request = match body {
        Some(body) => request.header("content-type", "application/scim+json").body(body.to_string()),
        None => request,
    };
    let response = request.bearer_auth(SCIM_TOKEN).send().await.unwrap();
    let status = response.status().as_u16();
    if status != 204 {
        let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
        assert_eq!(content_type, "application/scim+json", "{method} {path}");
    }
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The error body of RFC 7644 §3.12.
fn assert_scim_error(body: &Value, status: u16, scim_type: Option<&str>) {
    assert_eq!(body["schemas"], json!(["urn:ietf:params:scim:api:messages:2.0:Error"]), "{body}");
    assert_eq!(body["status"], status.to_string(), "{body}");
    assert_eq!(body["scimType"].as_str(), scim_type, "{body}");
    assert!(body["detail"].as_str().is_some_and(|d| !d.is_empty()), "{body}");
}

/// Submits the password step for `login` in a fresh browser and returns
/// the error page's code, or `None` when the step was passed.
async fn login_error(app: &TestApp, login: &str, password: &str) -> Option<String> {
    let browser = app.browser();
    browser.get(app.authorize_url(&portico_tests::Pkce::new(), &[])).send().await.unwrap();
    let page = browser.get(app.url("/login")).send().await.unwrap().text().await.unwrap();
    let csrf = view_data(&page)["pageData"]["authenticationFlowContext"]["csrf"].as_str().unwrap().to_owned();
    let form = [("_csrf", csrf.as_str()), ("principal", login), ("credentials", password)];
    let response = browser.post(app.url("/login")).form(&form).send().await.unwrap();
    if location(&response) != "/error" {
        return None;
    }
    let page = browser.get(app.url("/error")).send().await.unwrap().text().await.unwrap();
    view_data(&page)["pageData"]["errorDetails"]["errorCode"].as_str().map(str::to_owned)
}

#[tokio::test]
async fn provisioned_users_log_in_and_deactivation_ends_their_sessions_and_tokens() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let sent = json!({
            "schemas": [CORE], "userName": "petr", "password": "petr-password-1", "externalId": "hr-0042",
            "name": {"givenName": "Пётр", "familyName": "Иванов"},
            "emails": [{"value": "petr@example.com", "type": "work", "primary": true}],
            "phoneNumbers": [{"value": "8 900 444-55-66", "type": "mobile"}]
        });
        let (status, created) = scim(&app, "POST", "/Users", Some(sent)).await;
        assert_eq!(status, 201, "{backend:?}: {created}");
        let id = created["id"].as_str().unwrap().to_owned();
        assert_eq!(created["meta"]["location"], app.url(&format!("/scim/v2/Users/{id}")));
        assert_eq!(created["phoneNumbers"], json!([{"value": "8 900 444-55-66", "type": "mobile"}]), "as sent");
        assert!(created.get("password").is_none());

        // Portico's user is what the resource states: the admin API shows it.
        let response = app.http().get(app.url(&format!("/admin/v1/users/{id}"))).bearer_auth(ADMIN_TOKEN).send().await;
        let user: Value = response.unwrap().json().await.unwrap();
        assert_eq!((user["login"].as_str(), user["phone"].as_str()), (Some("petr"), Some("+79004445566")));
        assert_eq!((user["email"].as_str(), user["name"].as_str()), (Some("petr@example.com"), Some("Пётр Иванов")));

        let tokens = app.tokens_for("petr", "petr-password-1").await;
        assert_eq!(app.liveness(&tokens.access_token).await, 200);
        let deactivate = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                                "Operations": [{"op": "replace", "path": "active", "value": false}]});
        let (status, patched) = scim(&app, "PATCH", &format!("/Users/{id}"), Some(deactivate)).await;
        assert_eq!((status, patched["active"].as_bool()), (200, Some(false)), "{patched}");
        assert_eq!(app.liveness(&tokens.access_token).await, 401, "{backend:?}: the user's tokens stop at once");
        let response = app.http().get(app.url(&format!("/admin/v1/users/{id}/sessions"))).bearer_auth(ADMIN_TOKEN);
        let sessions: Value = response.send().await.unwrap().json().await.unwrap();
        assert_eq!(sessions, json!([]), "their sessions ended");
        let kinds: Vec<(String, Option<String>)> =
            app.store.recent_audit(3).await.unwrap().into_iter().map(|e| (e.kind, e.actor)).collect();
        let scim_actor = Some("scim".to_owned());
        assert_eq!(
            kinds,
            [
                ("user.deactivated".to_owned(), scim_actor.clone()),
                ("session.ended".to_owned(), scim_actor.clone()),
                ("user.updated".to_owned(), scim_actor.clone())
            ]
        );

        assert_eq!(login_error(&app, "petr", "petr-password-1").await.as_deref(), Some("user-is-blocked"));

        // Reactivated with a new password by a replacement; removed.
        let replacement = json!({"schemas": [CORE], "userName": "petr", "active": true, "password": "another-password",
                                 "phoneNumbers": [{"value": "+79004445566"}], "emails": [{"value": "petr@example.com"}]});
        let (status, replaced) = scim(&app, "PUT", &format!("/Users/{id}"), Some(replacement)).await;
        assert_eq!((status, replaced["active"].as_bool()), (200, Some(true)));
        assert!(replaced.get("name").is_none() && replaced.get("externalId").is_none(), "a PUT states the user whole");
        let again = app.tokens_for("petr", "another-password").await;
        assert_eq!(app.liveness(&again.access_token).await, 200);
        let (status, _) = scim(&app, "DELETE", &format!("/Users/{id}"), None).await;
        assert_eq!(status, 204);
        assert_eq!(app.liveness(&again.access_token).await, 401);
        let (status, body) = scim(&app, "GET", &format!("/Users/{id}"), None).await;
        assert_eq!(status, 404);
        assert_scim_error(&body, 404, None);
    }
}

#[tokio::test]
async fn users_are_found_by_filter_a_page_at_a_time() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        for (login, email) in [("scim-a", "a@corp.example"), ("scim-b", "b@corp.example"), ("scim-c", "c@corp.example")]
        {
            let user = json!({"schemas": [CORE], "userName": login, "emails": [{"value": email}]});
            assert_eq!(scim(&app, "POST", "/Users", Some(user)).await.0, 201);
        }
        let (status, page) =
            scim(&app, "GET", "/Users?filter=userName%20sw%20%22scim-%22&startIndex=2&count=1", None).await;
        assert_eq!(status, 200, "{page}");
        assert_eq!((page["totalResults"].as_u64(), page["startIndex"].as_u64()), (Some(3), Some(2)), "{backend:?}");
        assert_eq!(page["itemsPerPage"], 1);
        assert_eq!(page["Resources"][0]["userName"], "scim-b");
        let filter = "emails.value eq \"c@corp.example\" and active eq true";
        let search = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"], "filter": filter,
                            "attributes": ["userName"]});
        let (status, found) = scim(&app, "POST", "/Users/.search", Some(search)).await;
        assert_eq!((status, found["totalResults"].as_u64()), (200, Some(1)), "{found}");
        let only: Vec<&String> = found["Resources"][0].as_object().unwrap().keys().collect();
        assert_eq!(only, ["id", "schemas", "userName"], "attributes= keeps id and schemas only besides");
        let (_, counted) = scim(&app, "GET", "/Users?filter=userName%20sw%20%22scim-%22&count=0", None).await;
        assert_eq!((counted["totalResults"].as_u64(), counted["Resources"].clone()), (Some(3), json!([])));
        let (status, body) = scim(&app, "GET", "/Users?filter=title%20co%20%22x%22", None).await;
        assert_eq!(status, 400);
        assert_scim_error(&body, 400, Some("invalidFilter"));
        // userName is not case-exact (RFC 7643 §4.1.1): it matches as the
        // login's key, in full width too.
        for filter in
            ["userName%20eq%20%22SCIM-B%22", "userName%20eq%20%22%EF%BC%B3CIM-b%22", "userName%20sw%20%22SCIM%22"]
        {
            let (status, found) = scim(&app, "GET", &format!("/Users?filter={filter}"), None).await;
            assert_eq!(status, 200, "{found}");
            let logins: Vec<&str> =
                found["Resources"].as_array().unwrap().iter().map(|r| r["userName"].as_str().unwrap()).collect();
            let expected: &[&str] = if filter.contains("sw") { &["scim-a", "scim-b", "scim-c"] } else { &["scim-b"] };
            assert_eq!(logins, expected, "{backend:?}: {filter}");
        }
        // The published schema says so of both.
        let (_, schema) = scim(&app, "GET", "/Schemas/urn:ietf:params:scim:schemas:core:2.0:User", None).await;
        let case_exact = |name: &str| {
            let attribute = schema["attributes"].as_array().unwrap().iter().find(|a| a["name"] == name).unwrap();
            let value = attribute["subAttributes"].as_array().and_then(|s| s.iter().find(|a| a["name"] == "value"));
            value.unwrap_or(attribute)["caseExact"].clone()
        };
        assert_eq!((case_exact("userName"), case_exact("emails")), (json!(false), json!(false)), "{schema}");
        // Nor is emails.value (§4.1.2): its ASCII letters match in either case.
        for filter in ["emails.value%20eq%20%22B@Corp.EXAMPLE%22", "emails%20sw%20%22B@CORP%22"] {
            let (status, found) = scim(&app, "GET", &format!("/Users?filter={filter}"), None).await;
            assert_eq!((status, found["totalResults"].as_u64()), (200, Some(1)), "{backend:?}: {filter}: {found}");
            assert_eq!(found["Resources"][0]["userName"], "scim-b");
        }
    }
}

#[tokio::test]
async fn refusals_are_rfc_7644_errors_and_change_nothing() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let users = || app.http().get(app.url("/scim/v2/Users"));
        let place = format!("{backend:?}: the admin token is not the SCIM token");
        for refused in assert_bearer_challenges(users, &format!("Bearer {ADMIN_TOKEN}"), &place).await {
            assert_scim_error(&refused.body, 401, None);
        }

        let anna = json!({"schemas": [CORE], "userName": "anna-scim", "password": "anna-password-1"});
        let (_, created) = scim(&app, "POST", "/Users", Some(anna.clone())).await;
        let id = created["id"].as_str().unwrap().to_owned();
        let (status, body) = scim(&app, "POST", "/Users", Some(anna)).await;
        assert_scim_error(&body, status, Some("uniqueness"));
        assert_eq!(status, 409);

        let cases = [
            (json!({"schemas": [CORE], "userName": "x y"}), "invalidValue"),
            (json!({"schemas": [CORE], "userName": "olga", "password": "short"}), "invalidValue"),
            (json!({"schemas": [CORE], "userName": "olga", "phoneNumbers": [{"value": "12"}]}), "invalidValue"),
            (json!({"schemas": [CORE], "userName": "olga", "active": "no"}), "invalidValue"),
            (json!({"schemas": [CORE]}), "invalidValue"),
        ];
        for (bad, scim_type) in cases {
            let (status, body) = scim(&app, "POST", "/Users", Some(bad.clone())).await;
            assert_eq!(status, 400, "{bad}");
            assert_scim_error(&body, 400, Some(scim_type));
        }
        let filter_path = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                                 "Operations": [{"op": "replace", "path": "emails[type eq \"work\"].value", "value": "x@y.z"}]});
        let (status, body) = scim(&app, "PATCH", &format!("/Users/{id}"), Some(filter_path)).await;
        assert_eq!(status, 400);
        assert_scim_error(&body, 400, Some("invalidPath"));
        let taken = json!({"schemas": [CORE], "userName": "ivan"});
        let (status, body) = scim(&app, "PUT", &format!("/Users/{id}"), Some(taken)).await;
        assert_eq!(status, 409);
        assert_scim_error(&body, 409, Some("uniqueness"));
        let (_, unchanged) = scim(&app, "GET", &format!("/Users/{id}"), None).await;
        assert_eq!(unchanged["userName"], "anna-scim", "a refused replacement changed nothing");
        let (status, body) = scim(&app, "GET", "/Users?filter=userName%20sw%20%22olga", None).await;
        assert_eq!(status, 400);
        assert_scim_error(&body, 400, Some("invalidFilter"));
        let (_, none) = scim(&app, "GET", "/Users?filter=userName%20eq%20%22olga%22", None).await;
        assert_eq!(none["totalResults"], 0, "{backend:?}: no refused request created olga");
        let (status, body) = scim(&app, "GET", "/Nothing", None).await;
        assert_eq!(status, 404);
        assert_scim_error(&body, 404, None);
    }
}

#[tokio::test]
async fn without_its_token_scim_is_off() {
    let app = TestApp::spawn_with(backends()[0], |config| config.scim_token = None).await;
    let response = app.http().get(app.url("/scim/v2/Users")).bearer_auth(SCIM_TOKEN).send().await.unwrap();
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.unwrap();
    assert!(body["detail"].as_str().unwrap().contains("scim_token"), "it names the setting: {body}");
}

/// scim2-tester (PyPI, in the Python named by `PORTICO_TEST_SCIM`) runs
/// its whole suite — discovery, create, read, list, search, attribute
/// selection, replace, patch add / replace / remove of every attribute,
/// delete — and finds no failure.
#[tokio::test]
async fn scim2_tester_finds_no_failure() {
    let Ok(python) = std::env::var("PORTICO_TEST_SCIM") else {
        portico_tests::skipped("PORTICO_TEST_SCIM is not set; the scim2-tester run needs a Python with scim2-tester");
        return;
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scim/check.py");
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let base = app.url("/scim/v2");
        // The server runs on this test's runtime: the checker waits on a thread of its own.
        let (python, base) = (python.clone(), base.clone());
        let output = tokio::task::spawn_blocking(move || {
            std::process::Command::new(python).args([script, &base, SCIM_TOKEN]).output().expect("run scim2-tester")
        })
        .await
        .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{backend:?}:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        let summary = stdout.lines().last().unwrap_or_default();
        assert!(summary.ends_with(" checks, 0 failed"), "{summary}");
        let checks: u32 = summary.split(' ').next().unwrap().parse().unwrap();
        assert!(checks >= 70, "the whole suite ran: {summary}");
    }
}

#[tokio::test]
async fn thirty_provisioning_requests_for_one_user_name_make_one_user() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let body = json!({"schemas": [CORE], "userName": "raced-scim", "password": "a-long-password"}).to_string();
        let mut requests = tokio::task::JoinSet::new();
        for _ in 0..30 {
            let request = app
                .http()
                .post(app.url("/scim/v2/Users"))
                .bearer_auth(SCIM_TOKEN)
                .header("content-type", "application/scim+json")
                .body(body.clone());
            requests.spawn(async move { request.send().await.unwrap().status().as_u16() });
        }
        let statuses = requests.join_all().await;
        assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 1, "{backend:?}: {statuses:?}");
        assert_eq!(statuses.iter().filter(|s| **s == 409).count(), 29, "{backend:?}: {statuses:?}");
        let (_, found) = scim(&app, "GET", "/Users?filter=userName%20eq%20%22raced-scim%22", None).await;
        assert_eq!(found["totalResults"], 1);
    }
}

#[tokio::test]
async fn an_oversized_body_is_refused_as_a_scim_error() {
    let app = TestApp::spawn(backends()[0]).await;
    let huge = json!({"schemas": [CORE], "userName": "big", "displayName": "x".repeat(3 * 1024 * 1024)});
    let (status, body) = scim(&app, "POST", "/Users", Some(huge)).await;
    assert_eq!(status, 413);
    assert_scim_error(&body, 413, None);
    let (_, found) = scim(&app, "GET", "/Users?filter=userName%20eq%20%22big%22", None).await;
    assert_eq!(found["totalResults"], 0);
}

#[tokio::test]
async fn a_path_segment_that_is_not_utf8_is_a_scim_404() {
    let app = TestApp::spawn(backends()[0]).await;
    for path in ["/Users/%FF", "/Schemas/%FF", "/ResourceTypes/%FF"] {
        let (status, body) = scim(&app, "GET", path, None).await;
        assert_eq!(status, 404, "{path}");
        assert_scim_error(&body, 404, None);
    }
}

/// The id of `login`, from the admin API.
async fn user_id(app: &TestApp, login: &str) -> String {
    let url = app.url(&format!("/admin/v1/users?login={login}"));
    let found: Value = app.http().get(url).bearer_auth(ADMIN_TOKEN).send().await.unwrap().json().await.unwrap();
    found["users"][0]["id"].as_str().unwrap().to_owned()
}

/// Operators are managed by operators only: the SCIM token can neither
/// give an operator a new password and phone (and so take over the
/// console) nor replace or remove them. Each refusal is a SCIM 403 and
/// changes nothing.
#[tokio::test]
async fn scim_cannot_change_or_remove_an_operator() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let id = user_id(&app, "operator").await;
        let (status, before) = scim(&app, "GET", &format!("/Users/{id}"), None).await;
        assert_eq!(status, 200);
        let takeover = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [
            {"op": "replace", "path": "password", "value": "attacker-password-1"},
            {"op": "replace", "path": "phoneNumbers", "value": [{"value": "+79990001122"}]}
        ]});
        let replacement = json!({"schemas": [CORE], "userName": "operator", "password": "attacker-password-1"});
        for (method, body) in [("PATCH", Some(takeover)), ("PUT", Some(replacement)), ("DELETE", None)] {
            let (status, refusal) = scim(&app, method, &format!("/Users/{id}"), body).await;
            assert_eq!(status, 403, "{backend:?} {method}: {refusal}");
            assert_scim_error(&refusal, 403, None);
            assert!(refusal["detail"].as_str().unwrap().contains("operator"), "{refusal}");
        }
        assert_eq!(scim(&app, "GET", &format!("/Users/{id}"), None).await, (200, before), "nothing changed");
        let tokens = app.tokens_for("operator", "operator-password").await;
        assert_eq!(app.liveness(&tokens.access_token).await, 200, "the old password still works");
        let audit = app.store.recent_audit(50).await.unwrap();
        assert!(audit.iter().all(|e| e.actor.as_deref() != Some("scim")), "nothing recorded as scim");
    }
}

/// A SCIM change is recorded with what changed, as the admin API records
/// it: the fields by name, and a new password as its own event.
#[tokio::test]
async fn scim_changes_are_audited_with_what_changed() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let sent = json!({"schemas": [CORE], "userName": "vera", "emails": [{"value": "vera@example.com"}]});
        let (_, created) = scim(&app, "POST", "/Users", Some(sent)).await;
        let id = created["id"].as_str().unwrap().to_owned();
        let patch = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [
            {"op": "replace", "path": "password", "value": "vera-password-2"},
            {"op": "add", "path": "phoneNumbers", "value": [{"value": "+79001112233"}]}
        ]});
        let (status, patched) = scim(&app, "PATCH", &format!("/Users/{id}"), Some(patch)).await;
        assert_eq!(status, 200, "{backend:?}: {patched}");
        let audit = app.store.recent_audit(2).await.unwrap();
        let kinds: Vec<(&str, Option<&str>)> = audit.iter().map(|e| (e.kind.as_str(), e.actor.as_deref())).collect();
        assert_eq!(kinds, [("user.password_set", Some("scim")), ("user.updated", Some("scim"))], "{backend:?}");
        assert_eq!(audit[1].detail, json!({"changed": ["phone", "attributes"]}), "{backend:?}");
    }
}

/// What the SCIM token may send is bounded: multi-valued attributes, text
/// values, filters, attribute lists, PATCH operations; a repeated query
/// parameter is refused. Each refusal is a SCIM 400 and stores nothing.
#[tokio::test]
async fn scim_requests_are_bounded() {
    let app = TestApp::spawn(backends()[0]).await;
    let emails: Vec<Value> = (0..11).map(|i| json!({"value": format!("e{i}@example.com")})).collect();
    for (user, scim_type) in [
        (json!({"schemas": [CORE], "userName": "many", "emails": emails}), "invalidValue"),
        (json!({"schemas": [CORE], "userName": "many", "displayName": "x".repeat(1025)}), "invalidValue"),
    ] {
        let (status, body) = scim(&app, "POST", "/Users", Some(user)).await;
        assert_eq!(status, 400, "{body}");
        assert_scim_error(&body, 400, Some(scim_type));
    }
    let (_, found) = scim(&app, "GET", "/Users?filter=userName%20eq%20%22many%22", None).await;
    assert_eq!(found["totalResults"], 0, "nothing stored");

    let clauses = ["userName eq \"a\""; 11].join(" and ");
    let long_filter = format!("userName eq \"{}\"", "a".repeat(1000));
    let many_names = ["userName"; 51].join(",");
    for (query, scim_type) in [
        (
            format!("filter={}", form_urlencoded::byte_serialize(clauses.as_bytes()).collect::<String>()),
            "invalidFilter",
        ),
        (
            format!("filter={}", form_urlencoded::byte_serialize(long_filter.as_bytes()).collect::<String>()),
            "invalidFilter",
        ),
        (format!("attributes={many_names}"), "invalidValue"),
        ("count=1&count=2".to_owned(), "invalidSyntax"),
    ] {
        let (status, body) = scim(&app, "GET", &format!("/Users?{query}"), None).await;
        assert_eq!(status, 400, "{query:.80}: {body}");
        assert_scim_error(&body, 400, Some(scim_type));
    }
    let (_, created) = scim(&app, "POST", "/Users", Some(json!({"schemas": [CORE], "userName": "bounded"}))).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let (status, body) = scim(&app, "GET", &format!("/Users/{id}?attributes=userName&attributes=emails"), None).await;
    assert_eq!(status, 400, "{body}");
    let operations: Vec<Value> =
        (0..51).map(|_| json!({"op": "replace", "path": "displayName", "value": "x"})).collect();
    let patch = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": operations});
    let (status, body) = scim(&app, "PATCH", &format!("/Users/{id}"), Some(patch)).await;
    assert_eq!(status, 400, "{body}");
    let add = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                     "Operations": [{"op": "add", "path": "emails", "value": emails_of(11)}]});
    let (status, body) = scim(&app, "PATCH", &format!("/Users/{id}"), Some(add)).await;
    assert_eq!(status, 400, "{body}");
    let (_, read) = scim(&app, "GET", &format!("/Users/{id}"), None).await;
    assert!(read.get("emails").is_none() && read.get("displayName").is_none(), "unchanged: {read}");
}

fn emails_of(n: usize) -> Value {
    Value::Array((0..n).map(|i| json!({"value": format!("e{i}@example.com")})).collect())
}

/// An operator's block and the provisioning system's `active` are two
/// states: a SCIM replacement without `active` (or with `active: true`)
/// does not lift a block, and an operator's unblock does not reactivate a
/// user the provisioning system deactivated.
#[tokio::test]
async fn an_operators_block_and_scims_active_are_apart() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let sent = json!({"schemas": [CORE], "userName": "olya", "password": "olya-password-1",
                          "phoneNumbers": [{"value": "+79005550011"}]});
        let (_, created) = scim(&app, "POST", "/Users", Some(sent.clone())).await;
        let id = created["id"].as_str().unwrap().to_owned();
        let operator = |action: &'static str| {
            let url = app.url(&format!("/admin/v1/users/{id}/{action}"));
            let request = app.http().post(url).bearer_auth(ADMIN_TOKEN).json(&json!({"reason": "fraud check"}));
            async move { request.send().await.unwrap().status().as_u16() }
        };
        assert_eq!(operator("block").await, 200);
        for replacement in [sent.clone(), {
            let mut active = sent.clone();
            active["active"] = json!(true);
            active
        }] {
            let (status, replaced) = scim(&app, "PUT", &format!("/Users/{id}"), Some(replacement)).await;
            assert_eq!(status, 200);
            assert_ne!(replaced["active"], json!(false), "{backend:?}: SCIM's own state, not the operator's block");
            assert_eq!(login_error(&app, "olya", "olya-password-1").await.as_deref(), Some("user-is-blocked"));
        }
        let audit = app.store.recent_audit(20).await.unwrap();
        assert!(!audit.iter().any(|e| e.kind == "user.unblocked" && e.actor.as_deref() == Some("scim")), "{backend:?}");
        assert_eq!(operator("unblock").await, 200);
        assert_eq!(login_error(&app, "olya", "olya-password-1").await, None, "the operator lifted it");

        let deactivate = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                                "Operations": [{"op": "replace", "path": "active", "value": false}]});
        assert_eq!(scim(&app, "PATCH", &format!("/Users/{id}"), Some(deactivate)).await.0, 200);
        assert_eq!(operator("unblock").await, 200);
        assert_eq!(login_error(&app, "olya", "olya-password-1").await.as_deref(), Some("user-is-blocked"));
        let response = app.http().get(app.url(&format!("/admin/v1/users/{id}"))).bearer_auth(ADMIN_TOKEN).send().await;
        let user: Value = response.unwrap().json().await.unwrap();
        assert_eq!((user["blocked"].as_bool(), user["deactivated"].as_bool()), (Some(false), Some(true)));
        let (_, inactive) = scim(&app, "GET", "/Users?filter=active%20eq%20false", None).await;
        assert_eq!(inactive["totalResults"], 1, "{backend:?}: {inactive}");
        let activate = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                              "Operations": [{"op": "replace", "path": "active", "value": true}]});
        assert_eq!(scim(&app, "PATCH", &format!("/Users/{id}"), Some(activate)).await.0, 200);
        assert_eq!(login_error(&app, "olya", "olya-password-1").await, None, "the provisioning system lifted it");
    }
}

/// A user's passkeys are Portico's read-only extension: shown unless left
/// out by `attributes`/`excludedAttributes`, named in the resource's
/// schemas, published in `/Schemas` and the resource type, and never
/// changed through SCIM.
#[tokio::test]
async fn passkeys_are_a_read_only_extension() {
    const PASSKEYS: &str = "urn:portico:params:scim:schemas:extension:passkeys:1.0:User";
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let id = user_id(&app, "ivan").await;
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
        let passkey = crate::passkeys::enrolled_elsewhere(&app, ivan.id).await;

        let (status, plain) = scim(&app, "GET", &format!("/Users/{id}?excludedAttributes={PASSKEYS}"), None).await;
        assert_eq!(status, 200);
        assert!(plain.get(PASSKEYS).is_none(), "{backend:?}: left out when excluded: {plain}");
        let (_, asked) = scim(&app, "GET", &format!("/Users/{id}"), None).await;
        let listed = &asked[PASSKEYS]["passkeys"];
        assert_eq!(listed.as_array().map(Vec::len), Some(1), "{backend:?}: {asked}");
        assert_eq!(listed[0]["value"], passkey.id.to_string());
        assert_eq!((listed[0]["display"].as_str(), listed[0]["locked"].as_bool()), (Some("Phone"), Some(false)));
        assert!(listed[0]["created"].as_str().is_some_and(|t| t.contains('T')), "RFC 3339: {asked}");
        assert!(asked["schemas"].as_array().unwrap().contains(&json!(PASSKEYS)), "{asked}");
        let filter = "filter=userName%20eq%20%22ivan%22";
        let (_, found) = scim(&app, "GET", &format!("/Users?{filter}&attributes=userName,{PASSKEYS}"), None).await;
        assert_eq!(found["Resources"][0][PASSKEYS]["passkeys"][0]["value"], passkey.id.to_string(), "{found}");
        let (_, found) = scim(&app, "GET", &format!("/Users?{filter}&attributes=userName"), None).await;
        assert!(found["Resources"][0].get(PASSKEYS).is_none(), "{backend:?}: {found}");
        // A page of several users: each shows its own passkeys.
        let (_, page) = scim(&app, "GET", "/Users?count=50", None).await;
        let resources = page["Resources"].as_array().unwrap();
        assert!(resources.len() > 1, "{page}");
        for resource in resources {
            let own = resource[PASSKEYS]["passkeys"].as_array().map_or(0, Vec::len);
            assert_eq!(own, usize::from(resource["id"] == id.as_str()), "{backend:?}: {resource}");
        }

        let (_, schemas) = scim(&app, "GET", "/Schemas", None).await;
        assert!(schemas["Resources"].as_array().unwrap().iter().any(|s| s["id"] == PASSKEYS), "{schemas}");
        let (status, schema) = scim(&app, "GET", &format!("/Schemas/{PASSKEYS}"), None).await;
        assert_eq!(status, 200);
        assert_eq!(schema["attributes"][0]["mutability"], "readOnly");
        assert_eq!(schema["attributes"][0]["returned"], "default");
        let (_, kind) = scim(&app, "GET", "/ResourceTypes/User", None).await;
        assert!(kind["schemaExtensions"].as_array().unwrap().iter().any(|e| e["schema"] == PASSKEYS), "{kind}");

        // A PATCH of the extension is refused; a PUT's copy of it is ignored.
        let patch = json!({
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
            "Operations": [{"op": "replace", "path": PASSKEYS, "value": {"passkeys": []}}]
        });
        let (status, body) = scim(&app, "PATCH", &format!("/Users/{id}"), Some(patch)).await;
        assert_eq!(status, 400, "{backend:?}: {body}");
        assert_scim_error(&body, 400, Some("mutability"));
        let mut resource = plain.clone();
        resource[PASSKEYS] = json!({"passkeys": []});
        let (status, replaced) = scim(&app, "PUT", &format!("/Users/{id}"), Some(resource)).await;
        assert_eq!(status, 200, "{backend:?}");
        assert_eq!(replaced[PASSKEYS]["passkeys"][0]["value"], passkey.id.to_string(), "{replaced}");
        assert_eq!(app.store.passkeys_of(ivan.id).await.unwrap().len(), 1, "{backend:?}: nothing removed");
    }
}

/// A SCIM request with conditional headers, answering the status, the
/// `ETag` and the body.
async fn conditional(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, Option<String>, Value) {
    let mut request = app.http().request(method, app.url(&format!("/scim/v2{path}"))).bearer_auth(SCIM_TOKEN);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request.header("content-type", "application/scim+json").body(body.to_string());
    }
    let response = request.send().await.unwrap();
    let tag = response.headers().get("etag").map(|tag| tag.to_str().unwrap().to_owned());
    (response.status().as_u16(), tag, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_change_made_from_an_older_version_is_refused_and_changes_nothing() {
    use reqwest::Method;
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (_, config) = scim(&app, "GET", "/ServiceProviderConfig", None).await;
        assert_eq!(config["etag"]["supported"], true, "{config}");
        let id = user_id(&app, "ivan").await;
        let path = format!("/Users/{id}");
        let (status, read_tag, read) = conditional(&app, Method::GET, &path, &[], None).await;
        assert_eq!(status, 200, "{backend:?}: {read}");
        let read_tag = read_tag.expect("an ETag");
        assert_eq!(read["meta"]["version"].as_str(), Some(read_tag.as_str()), "the version is the ETag");

        // Not modified while it stands; weakly compared.
        for held in [read_tag.clone(), format!("W/{read_tag}"), "*".to_owned()] {
            let (status, tag, _) = conditional(&app, Method::GET, &path, &[("if-none-match", &held)], None).await;
            assert_eq!((status, tag.as_deref()), (304, Some(read_tag.as_str())), "{backend:?}: {held}");
        }

        // A change since the read.
        let rename = |name: &str| {
            json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                   "Operations": [{"op": "replace", "path": "displayName", "value": name}]})
        };
        let (status, since_tag, since) =
            conditional(&app, Method::PATCH, &path, &[("if-match", &read_tag)], Some(rename("Иван Первый"))).await;
        assert_eq!(status, 200, "{backend:?}: {since}");
        let since_tag = since_tag.expect("an ETag");
        assert_ne!(since_tag, read_tag, "{backend:?}: a change is a new version");
        assert_eq!(since["meta"]["version"].as_str(), Some(since_tag.as_str()));

        // PATCH, PUT and DELETE from the older read are refused.
        let older = [("if-match", read_tag.as_str())];
        let (status, _, refused) = conditional(&app, Method::PATCH, &path, &older, Some(rename("Иван Второй"))).await;
        assert_eq!(status, 412, "{backend:?}: {refused}");
        assert_scim_error(&refused, 412, None);
        let mut replacement = since.clone();
        replacement["displayName"] = json!("Иван Третий");
        let (status, _, refused) = conditional(&app, Method::PUT, &path, &older, Some(replacement.clone())).await;
        assert_eq!(status, 412, "{backend:?}: {refused}");
        let (status, _, refused) = conditional(&app, Method::DELETE, &path, &older, None).await;
        assert_eq!(status, 412, "{backend:?}: {refused}");
        let (status, _, refused) =
            conditional(&app, Method::PATCH, &path, &[("if-match", "3")], Some(rename("x"))).await;
        assert_scim_error(&refused, 400, Some("invalidSyntax"));
        assert_eq!(status, 400);
        let (_, now_tag, now) = conditional(&app, Method::GET, &path, &[], None).await;
        assert_eq!((now_tag, now), (Some(since_tag.clone()), since), "{backend:?}: nothing was changed");

        // From the latest read they are made; an older version is then sent in full again.
        let latest = [("if-match", since_tag.as_str())];
        let (status, put_tag, put) = conditional(&app, Method::PUT, &path, &latest, Some(replacement)).await;
        assert_eq!((status, put["displayName"].as_str()), (200, Some("Иван Третий")), "{backend:?}: {put}");
        let put_tag = put_tag.expect("an ETag");
        let (status, _, _) = conditional(&app, Method::GET, &path, &[("if-none-match", &since_tag)], None).await;
        assert_eq!(status, 200, "{backend:?}: a changed user is sent again");
        let (status, _, _) = conditional(&app, Method::DELETE, &path, &[("if-match", &put_tag)], None).await;
        assert_eq!(status, 204, "{backend:?}");
    }
}

#[tokio::test]
async fn a_users_name_holds_no_invisible_or_direction_changing_character() {
    // The name is the `name` claim third parties show and what support
    // operators read in the console: U+202E would show "Olga" + "kcab"
    // reversed. Refused from the provisioning system and from operators
    // alike; a name stored before the rule stays as it is when resent.
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let reversed = "Olga \u{202E}kcab";
        let bad = json!({"schemas": [CORE], "userName": "olga-n", "displayName": reversed});
        let (status, body) = scim(&app, "POST", "/Users", Some(bad)).await;
        assert_eq!(status, 400, "{backend:?}: {body}");
        assert_scim_error(&body, 400, Some("invalidValue"));
        assert!(body["detail"].as_str().unwrap().contains("U+202E"), "{body}");
        assert!(app.store.find_user_by_login("olga-n").await.unwrap().is_none(), "{backend:?}: nothing created");

        let good = json!({"schemas": [CORE], "userName": "olga-n", "displayName": "Olga Back"});
        let (status, created) = scim(&app, "POST", "/Users", Some(good)).await;
        assert_eq!(status, 201, "{backend:?}: {created}");
        let id = created["id"].as_str().unwrap().to_owned();
        let patch = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                           "Operations": [{"op": "replace", "path": "displayName", "value": reversed}]});
        let (status, body) = scim(&app, "PATCH", &format!("/Users/{id}"), Some(patch)).await;
        assert_eq!(status, 400, "{backend:?}: {body}");
        assert_scim_error(&body, 400, Some("invalidValue"));
        let (status, body) = admin_patch(&app, &format!("/admin/v1/users/{id}"), json!({"name": reversed})).await;
        assert_eq!((status, body["problems"][0]["place"].as_str()), (400, Some("name")), "{backend:?}: {body}");
        let stored = app.store.find_user_by_login("olga-n").await.unwrap().unwrap();
        assert_eq!(stored.name.as_deref(), Some("Olga Back"), "{backend:?}: refused changes changed nothing");

        // A name from before the rule, resent unchanged with a deactivation.
        let mut old = stored.clone();
        old.name = Some(reversed.to_owned());
        app.store.update_user(&old).await.unwrap();
        let kept = json!({"schemas": [CORE], "userName": "olga-n", "displayName": reversed, "active": false});
        let (status, body) = scim(&app, "PUT", &format!("/Users/{id}"), Some(kept)).await;
        assert_eq!((status, body["active"].as_bool()), (200, Some(false)), "{backend:?}: {body}");
    }
}

/// `PATCH`es `path` of the admin API with `body`.
async fn admin_patch(app: &TestApp, path: &str, body: Value) -> (u16, Value) {
    let response = app.http().patch(app.url(path)).bearer_auth(ADMIN_TOKEN).json(&body).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}
