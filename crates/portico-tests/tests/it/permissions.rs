//! The permissions API (`spec/3-permissions.md`): every operation and every
//! error row, on the demo permission model (README: ivan is the EIO of
//! 7700000001, maria its accountant and also the accountant of 7700000002,
//! whose EIO is anna; oleg is an operator in 7700000001 and the EIO of
//! 7700000003, whose contract is blocked).

use portico_tests::{ADMIN_TOKEN, TestApp, TokenPair, backends};
use reqwest::Method;
use serde_json::{Value, json};

const ROMASHKA: &str = "7700000001";
const VASILEK: &str = "7700000002";
const LUTIK: &str = "7700000003";

async fn call(app: &TestApp, pair: &TokenPair, method: Method, path: &str) -> (u16, Value) {
    let response = pair.on(app.http().request(method, app.url(path))).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn get(app: &TestApp, pair: &TokenPair, path: &str) -> (u16, Value) {
    call(app, pair, Method::GET, path).await
}

async fn role(app: &TestApp, pair: &TokenPair, body: &Value) -> (u16, Value) {
    let response = pair.on(app.http().post(app.url("/api/v1/employee/role"))).json(body).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn assert_error(found: &(u16, Value), status: u16, code: &str, mentions: &str) {
    assert_eq!(found.0, status, "{found:?}");
    assert_eq!(found.1["code"], code, "{found:?}");
    let message = found.1["message"].as_str().unwrap_or_default();
    assert!(message.contains(mentions), "{message:?} should mention {mentions:?}");
}

#[tokio::test]
async fn an_eio_looks_up_an_employees_role_with_tokens_from_the_browser_login() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let tokens = app.tokens_for("ivan", "ivan-password").await;
        let maria = app.token_pair("maria").await.user_id;
        let response = app
            .http()
            .post(app.url("/api/v1/employee/role"))
            .header("authorization", &tokens.access_token) // without "Bearer ": accepted too
            .header("id-token", tokens.id_token.as_deref().unwrap())
            .header("x-system-id", "crm")
            .json(&json!({ "userId": maria, "cnum": ROMASHKA }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{backend:?}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["code"], "ACCOUNTANT");
        assert_eq!(body["name"], "Главный бухгалтер");
        assert!(uuid::Uuid::parse_str(body["id"].as_str().unwrap()).is_ok());
        assert_eq!(body.as_object().unwrap().len(), 3);
    }
}

#[tokio::test]
async fn role_lookup_answers_every_error_row() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let ivan = app.token_pair("ivan").await;
        let maria = app.token_pair("maria").await;
        let anna = app.token_pair("anna").await;
        let nobody = app.add_user("nobody").await;
        let body = |user: uuid::Uuid, cnum: &str| json!({ "userId": user, "cnum": cnum });

        assert_error(&role(&app, &maria, &body(ivan.user_id, ROMASHKA)).await, 403, "executive_not_eio", ROMASHKA);
        assert_error(&role(&app, &ivan, &body(maria.user_id, "0000")).await, 403, "executive_not_eio", "0000");
        let ghost = uuid::Uuid::new_v4();
        assert_error(&role(&app, &ivan, &body(ghost, ROMASHKA)).await, 400, "user_not_found", &ghost.to_string());
        assert_error(&role(&app, &ivan, &body(nobody, ROMASHKA)).await, 400, "employee_not_found", &nobody.to_string());
        assert_error(&role(&app, &ivan, &body(anna.user_id, ROMASHKA)).await, 400, "employee_not_found", ROMASHKA);

        let changed = app
            .apply_permissions(&json!({
                "roles": [{"code": "AUDITOR", "name": "Аудитор", "available": false}],
                "employees": [{"user": "nobody", "cnum": ROMASHKA},
                              {"user": "anna", "cnum": ROMASHKA, "role": "AUDITOR"}]
            }))
            .await;
        assert_eq!(changed.status(), 200);
        assert_error(&role(&app, &ivan, &body(nobody, ROMASHKA)).await, 400, "role_not_found", &nobody.to_string());
        assert_error(&role(&app, &ivan, &body(anna.user_id, ROMASHKA)).await, 403, "unavailable_role", "not available");

        // The header, then the body, each named.
        let response = app
            .http()
            .post(app.url("/api/v1/employee/role"))
            .bearer_auth(&ivan.access_token)
            .header("id-token", &ivan.id_token)
            .json(&body(maria.user_id, ROMASHKA))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400);
        let found: Value = response.json().await.unwrap();
        assert_eq!(found["code"], "header_is_missing");
        assert!(found["message"].as_str().unwrap().contains("x-system-id"));

        for (raw, content_type, parameter) in [
            ("", "application/json", "body"),
            ("{\"userId\": ", "application/json", "body"),
            ("userId=1&cnum=2", "application/x-www-form-urlencoded", "body"),
            ("[1, 2]", "application/json", "body"),
            ("{\"cnum\": \"7700000001\"}", "application/json", "userId"),
            ("{\"userId\": \"not-a-uuid\", \"cnum\": \"7700000001\"}", "application/json", "userId"),
            ("{\"userId\": 42, \"cnum\": \"7700000001\"}", "application/json", "userId"),
            ("{\"userId\": \"6f1c2a8e-8d5b-4a43-9d3e-2f1a9f0c7b11\"}", "application/json", "cnum"),
            ("{\"userId\": \"6f1c2a8e-8d5b-4a43-9d3e-2f1a9f0c7b11\", \"cnum\": 7}", "application/json", "cnum"),
            ("{\"userId\": \"6f1c2a8e-8d5b-4a43-9d3e-2f1a9f0c7b11\", \"cnum\": \"  \"}", "application/json", "cnum"),
            (
                "{\"userId\": \"6f1c2a8e-8d5b-4a43-9d3e-2f1a9f0c7b11\", \"cnum\": \"1\", \"x\": 1}",
                "application/json",
                "body",
            ),
        ] {
            let response = ivan
                .on(app.http().post(app.url("/api/v1/employee/role")))
                .header("content-type", content_type)
                .body(raw)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 400, "{raw:?}");
            let found: Value = response.json().await.unwrap();
            assert_eq!(found["code"], "bad_request", "{raw:?}");
            assert_eq!(found["messageData"]["parameter"], parameter, "{raw:?}: {found}");
        }
    }
}

#[tokio::test]
async fn v1_reads_list_allowed_actions_per_contract_and_are_deprecated() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let maria = app.token_pair("maria").await;
        // x-system-id is optional on the v1 reads.
        let response = app
            .http()
            .get(app.url("/api/v1/permissions"))
            .bearer_auth(&maria.access_token)
            .header("id-token", &maria.id_token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert!(response.headers()["deprecation"].to_str().unwrap().starts_with('@'));
        assert!(response.headers()["link"].to_str().unwrap().contains("successor-version"));
        // A refused token pair is answered as every v1 read is: deprecated.
        for path in ["/api/v1/permissions", "/api/v1/permissions/payments"] {
            let refused = app.http().get(app.url(path)).bearer_auth(&maria.access_token).send().await.unwrap();
            assert_eq!(refused.status(), 401, "{path}: no Id-Token");
            assert!(refused.headers()["deprecation"].to_str().unwrap().starts_with('@'), "{path}");
        }
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["userId"], maria.user_id.to_string());
        assert_eq!(body["aud"], portico_tests::demo::CLIENT_ID);
        let contracts = body["contracts"].as_array().unwrap();
        assert_eq!(contracts.len(), 2, "{backend:?}: {body}");
        assert_eq!(contracts[0]["cnum"], ROMASHKA);
        assert_eq!(contracts[0]["contractStatus"], "ACTIVE");
        let payments = contracts[0]["permissions"].as_array().unwrap().iter().find(|p| p["name"] == "payments");
        assert_eq!(payments.unwrap()["actions"], json!(["create", "sign", "view"]));

        // cnum as a repeated and as a comma-separated array.
        for query in
            [format!("cnum={VASILEK}"), format!("cnum={VASILEK},{VASILEK}"), format!("cnum={VASILEK}&cnum={VASILEK}")]
        {
            let (status, body) = get(&app, &maria, &format!("/api/v1/permissions?{query}")).await;
            assert_eq!(status, 200);
            assert_eq!(body["contracts"].as_array().unwrap().len(), 1, "{query}");
            assert_eq!(body["contracts"][0]["cnum"], VASILEK);
        }
        let (status, body) = get(&app, &maria, "/api/v1/permissions/payments,statements").await;
        assert_eq!(status, 200);
        let names: Vec<&str> = body["contracts"][0]["permissions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["payments", "statements"]);

        assert_error(
            &get(&app, &maria, &format!("/api/v1/permissions?cnum={LUTIK}")).await,
            400,
            "employee_not_found",
            LUTIK,
        );
        assert_error(&get(&app, &maria, "/api/v1/permissions?cnum=").await, 400, "bad_request", "cnum");
        assert_error(&get(&app, &maria, "/api/v1/permissions?cnum=1,,2").await, 400, "bad_request", "cnum");
        let many = vec!["1"; 101].join(",");
        assert_error(&get(&app, &maria, &format!("/api/v1/permissions?cnum={many}")).await, 400, "bad_request", "100");
        assert_error(&get(&app, &maria, "/api/v1/permissions/payments,rockets").await, 400, "bad_request", "rockets");
        assert_error(&get(&app, &maria, "/api/v1/permissions/").await, 400, "bad_request", "object_path");
    }
}

#[tokio::test]
async fn v2_reads_agree_and_a_blocked_contract_allows_nothing() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let oleg = app.token_pair("oleg").await;
        let (status, full) = get(&app, &oleg, "/api/v2/permissions").await;
        assert_eq!(status, 200, "{backend:?}");
        assert_eq!(full[ROMASHKA]["payments"]["create"], true);
        assert_eq!(full[ROMASHKA]["payments"]["sign"], false);
        assert_eq!(full[ROMASHKA]["payments"]["drafts"]["create"], true);
        assert_eq!(full[ROMASHKA]["payments"]["drafts"]["delete"], false);
        // oleg is the EIO of 7700000003, but its contract is blocked.
        let lutik = &full[LUTIK]["payments"];
        assert!(lutik.as_object().unwrap().values().filter(|v| v.is_boolean()).all(|v| v == false), "{lutik}");
        assert!(lutik["drafts"].as_object().unwrap().values().all(|v| v == false), "{lutik}");

        let (status, by_object) = get(&app, &oleg, "/api/v2/permissions/payments").await;
        assert_eq!(status, 200);
        assert_eq!(
            by_object,
            json!({
                ROMASHKA: {"create": true, "send": false, "sign": false, "view": true},
                LUTIK: {"create": false, "send": false, "sign": false, "view": false},
            })
        );
        let (status, sub) = get(&app, &oleg, "/api/v2/permissions/payments.drafts").await;
        assert_eq!(status, 200);
        assert_eq!(sub[ROMASHKA], full[ROMASHKA]["payments"]["drafts"]);
        let (status, one) = get(&app, &oleg, &format!("/api/v2/permissions/payments/{ROMASHKA}")).await;
        assert_eq!(status, 200);
        assert_eq!(one, by_object[ROMASHKA]);

        assert_error(&get(&app, &oleg, "/api/v2/permissions/rockets").await, 400, "bad_request", "rockets");
        assert_error(
            &get(&app, &oleg, &format!("/api/v2/permissions/payments/{VASILEK}")).await,
            400,
            "employee_not_found",
            VASILEK,
        );
        assert_error(
            &get(&app, &oleg, "/api/v2/permissions/payments/no-such-company").await,
            400,
            "employee_not_found",
            "no-such-company",
        );
        assert_error(&get(&app, &oleg, "/api/v2/permissions/").await, 400, "bad_request", "obj");
        assert_error(&get(&app, &oleg, "/api/v2/permissions/payments/").await, 400, "bad_request", "cnum");
        assert_error(&get(&app, &oleg, &format!("/api/v2/permissions//{ROMASHKA}")).await, 400, "bad_request", "obj");

        let response = app
            .http()
            .get(app.url("/api/v2/permissions"))
            .bearer_auth(&oleg.access_token)
            .header("id-token", &oleg.id_token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400);
        assert_eq!(response.json::<Value>().await.unwrap()["code"], "header_is_missing");

        // Not an employee anywhere; an employee without a role.
        app.add_user("nobody").await;
        let nobody = app.token_pair("nobody").await;
        assert_error(&get(&app, &nobody, "/api/v2/permissions").await, 400, "employee_not_found", "any company");
        let applied = app.apply_permissions(&json!({"employees": [{"user": "nobody", "cnum": VASILEK}]})).await;
        assert_eq!(applied.status(), 200);
        assert_error(&get(&app, &nobody, "/api/v2/permissions").await, 400, "role_not_found", VASILEK);
        assert_error(
            &get(&app, &nobody, &format!("/api/v2/permissions/payments/{VASILEK}")).await,
            400,
            "role_not_found",
            VASILEK,
        );
    }
}

#[tokio::test]
async fn acc_reads_answer_for_the_eio_and_for_colleagues() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let ivan = app.token_pair("ivan").await;
        let maria = app.token_pair("maria").await;
        let anna = app.token_pair("anna").await;

        let (status, own) = get(&app, &ivan, &format!("/api/v1/acc-permissions/{ROMASHKA}")).await;
        assert_eq!(status, 200, "{backend:?}");
        assert_eq!(own["employees"], json!({"block": true, "invite": true, "view": true}));
        assert_eq!(own["roles"]["assign"], true);
        assert_error(
            &get(&app, &maria, &format!("/api/v1/acc-permissions/{ROMASHKA}")).await,
            403,
            "executive_not_eio",
            ROMASHKA,
        );
        // No active employee for the caller and cnum: GenericError, only a message.
        let (status, body) = get(&app, &anna, &format!("/api/v1/acc-permissions/{ROMASHKA}")).await;
        assert_eq!(status, 400);
        assert_eq!(body.as_object().unwrap().keys().collect::<Vec<_>>(), ["message"]);
        assert!(body["message"].as_str().unwrap().contains(ROMASHKA));

        let (status, list) = get(&app, &ivan, &format!("/api/v2/acc-permissions/{}/{ROMASHKA}", maria.user_id)).await;
        assert_eq!(status, 200);
        assert_eq!(
            list,
            json!([
                {"code": "employees", "name": {"ru": "Сотрудники"}, "view": true},
                {"code": "roles", "name": {"ru": "Роли и права"}, "view": false},
                {"code": "signatures", "name": {"ru": "Подписи"}, "view": false},
            ])
        );
        // What the EIO sees for maria is what maria sees for herself.
        let (_, hers) = get(&app, &maria, &format!("/api/v2/acc-permissions/{}/{ROMASHKA}", maria.user_id)).await;
        assert_eq!(hers, list);

        let path = |user: &str, cnum: &str| format!("/api/v2/acc-permissions/{user}/{cnum}");
        let found = get(&app, &ivan, &path("not-a-uuid", ROMASHKA)).await;
        assert_error(&found, 400, "invalid_parameter_format", "userId");
        let ghost = uuid::Uuid::new_v4().to_string();
        assert_error(&get(&app, &ivan, &path(&ghost, ROMASHKA)).await, 400, "employee_not_found", &ghost);
        assert_error(
            &get(&app, &ivan, &path(&anna.user_id.to_string(), ROMASHKA)).await,
            403,
            "not_employee",
            ROMASHKA,
        );
        assert_error(
            &get(&app, &anna, &path(&maria.user_id.to_string(), ROMASHKA)).await,
            403,
            "not_employee",
            ROMASHKA,
        );
        assert_error(&get(&app, &ivan, &path(&maria.user_id.to_string(), "bogus")).await, 403, "not_employee", "bogus");
        assert_error(
            &get(&app, &ivan, &format!("/api/v2/acc-permissions/{}/", maria.user_id)).await,
            400,
            "bad_request",
            "cnum",
        );
        assert_error(&get(&app, &ivan, "/api/v2/acc-permissions/").await, 400, "bad_request", "userId");
        assert_error(
            &get(&app, &ivan, &format!("/api/v2/acc-permissions//{ROMASHKA}")).await,
            400,
            "bad_request",
            "userId",
        );
        assert_error(&get(&app, &ivan, "/api/v1/acc-permissions/").await, 400, "bad_request", "cnum");
    }
}

#[tokio::test]
async fn a_parameter_that_is_not_utf8_is_refused_naming_it() {
    // `%FF` decodes to no text: refused as `bad_request` naming the very
    // parameter, never read as U+FFFD (a company "\u{FFFD}" the caller is
    // not an employee of).
    let app = TestApp::spawn(portico_tests::Backend::Sqlite).await;
    let ivan = app.token_pair("ivan").await;
    let maria = app.token_pair("maria").await.user_id;
    let colleague = format!("/api/v2/acc-permissions/{maria}/%FF");
    for (path, parameter) in [
        ("/api/v2/permissions/%FF", "obj"),
        ("/api/v2/permissions/%FF/7700000001", "obj"),
        ("/api/v2/permissions/payments/%FF", "cnum"),
        ("/api/v1/acc-permissions/%FF", "cnum"),
        ("/api/v2/acc-permissions/%FF/7700000001", "userId"),
        (colleague.as_str(), "cnum"),
        ("/api/v1/permissions/%FF", "object_path"),
        ("/api/v1/permissions?cnum=%FF", "cnum"),
        ("/api/v1/permissions/payments?cnum=7700000001&cnum=%C3%28", "cnum"),
    ] {
        let found = get(&app, &ivan, path).await;
        assert_error(&found, 400, "bad_request", parameter);
        assert_eq!(found.1["messageData"]["parameter"], parameter, "{path}: {found:?}");
    }
}

#[tokio::test]
async fn any_bad_token_pair_is_401_with_an_error_body() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let ivan = app.token_pair("ivan").await;
        let maria = app.token_pair("maria").await;
        let ivan_again = app.token_pair("ivan").await;
        let url = app.url("/api/v2/permissions");
        let send = |access: Option<&str>, id: Option<&str>| {
            let mut request = app.http().get(&url).header("x-system-id", "crm");
            if let Some(access) = access {
                request = request.header("authorization", access);
            }
            if let Some(id) = id {
                request = request.header("id-token", id);
            }
            request.send()
        };
        let bearer = format!("Bearer {}", ivan.access_token);
        for (access, id, what) in [
            (None, Some(ivan.id_token.as_str()), "missing Authorization"),
            (Some(bearer.as_str()), None, "missing Id-Token"),
            (Some("Bearer junk"), Some(ivan.id_token.as_str()), "malformed access token"),
            (Some(bearer.as_str()), Some("a.b.c"), "malformed id_token"),
            (Some(bearer.as_str()), Some(ivan.access_token.as_str()), "an access token as id_token"),
            (Some(ivan.id_token.as_str()), Some(ivan.id_token.as_str()), "an id_token as access token"),
            (Some(bearer.as_str()), Some(maria.id_token.as_str()), "another user's id_token"),
            (Some(bearer.as_str()), Some(ivan_again.id_token.as_str()), "an id_token of another login"),
            (Some("Basic aXZhbjpwdw=="), Some(ivan.id_token.as_str()), "another scheme"),
        ] {
            let response = send(access, id).await.unwrap();
            assert_eq!(response.status(), 401, "{what}");
            let body: Value = response.json().await.unwrap();
            assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()), "{what}: {body}");
        }
        assert_eq!(send(Some(&bearer), Some(&ivan.id_token)).await.unwrap().status(), 200);

        // Revoked: the grant goes with the refresh token.
        let revoked = app
            .http()
            .post(app.url("/oauth2/revoke"))
            .basic_auth(portico_tests::demo::CLIENT_ID, Some(portico_tests::demo::CLIENT_SECRET))
            .form(&[("token", ivan.refresh_token.as_str())])
            .send()
            .await
            .unwrap();
        assert_eq!(revoked.status(), 200);
        assert_eq!(send(Some(&bearer), Some(&ivan.id_token)).await.unwrap().status(), 401, "revoked");

        // Expired, by the injected clock.
        let bearer = format!("Bearer {}", maria.access_token);
        assert_eq!(send(Some(&bearer), Some(&maria.id_token)).await.unwrap().status(), 200);
        app.clock.advance(time::Duration::hours(1));
        assert_eq!(send(Some(&bearer), Some(&maria.id_token)).await.unwrap().status(), 401, "expired");
    }
}

#[tokio::test]
async fn the_admin_api_applies_documents_all_or_nothing() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let export = || app.permission_model();
        let before = export().await;
        assert_eq!(before["companies"].as_array().unwrap().len(), 3, "{backend:?}");

        for token in [None, Some("wrong-token")] {
            let mut request = app.http().get(app.url("/admin/v1/permissions"));
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            assert_eq!(request.send().await.unwrap().status(), 401);
        }
        // The right token without its scheme is not a bearer credential.
        let bare = app.http().get(app.url("/admin/v1/permissions")).header("authorization", ADMIN_TOKEN);
        assert_eq!(bare.send().await.unwrap().status(), 401, "{backend:?}");

        let response = app
            .apply_permissions(&json!({
                "companies": [{"cnum": "7700000009", "name": "Новая", "contractStatus": "ACTIVE"}],
                "employees": [{"user": "ivan", "cnum": "7700000009", "role": "NO_SUCH_ROLE"},
                              {"user": "ghost", "cnum": ROMASHKA}]
            }))
            .await;
        assert_eq!(response.status(), 400);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["code"], "invalid_document");
        let places: Vec<&str> =
            body["problems"].as_array().unwrap().iter().map(|p| p["place"].as_str().unwrap()).collect();
        assert_eq!(places, ["employees[0].role", "employees[1].user"]);
        assert_eq!(export().await, before, "nothing changed");

        let response = app.apply_permissions(&json!({"unknown": []})).await;
        assert_eq!(response.status(), 400);
        assert!(response.text().await.unwrap().contains("unknown"));

        // YAML, and the change is visible at once.
        let yaml = "employees:\n  - {user: maria, cnum: \"7700000001\", role: OPERATOR}\n";
        let response = app
            .http()
            .post(app.url("/admin/v1/permissions"))
            .bearer_auth(ADMIN_TOKEN)
            .header("content-type", "application/yaml")
            .body(yaml)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let maria = app.token_pair("maria").await;
        let (_, flags) = get(&app, &maria, &format!("/api/v2/permissions/payments/{ROMASHKA}")).await;
        assert_eq!(flags["sign"], false, "maria is an operator now");
        assert_eq!(flags["create"], true);
    }
}

/// 32 documents applied at once, each adding its own company, are all
/// applied: the node takes them in turn (before, 9 of 32 were answered
/// `503` "other writers kept changing the permission model").
#[tokio::test]
async fn thirty_two_documents_applied_at_once_are_all_kept() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let revision = app.store.permission_revision().await.unwrap();
        let mut requests = tokio::task::JoinSet::new();
        for i in 0..32 {
            let doc = json!({"companies": [{"cnum": format!("78{i:08}"), "name": format!("Co {i}"), "contractStatus": "ACTIVE"}]});
            let request = app.http().post(app.url("/admin/v1/permissions")).bearer_auth(ADMIN_TOKEN).json(&doc);
            requests.spawn(async move { request.send().await.unwrap().status().as_u16() });
        }
        let statuses = requests.join_all().await;
        assert!(statuses.iter().all(|s| *s == 200), "{backend:?}: {statuses:?}");
        let model = app.permission_model().await;
        let added = model["companies"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["cnum"].as_str().unwrap().starts_with("78"))
            .count();
        assert_eq!(added, 32, "{backend:?}");
        assert_eq!(app.store.permission_revision().await.unwrap(), revision + 32, "{backend:?}");
    }
}

/// A YAML document of a megabyte whose aliases repeat a megabyte of text
/// 2,000 times stands for two gigabytes: it is refused as the document it
/// stands for, past the 16 MiB a document may hold, without being read
/// into memory, and nothing changes.
#[tokio::test]
async fn a_yaml_document_whose_aliases_expand_past_the_largest_document_is_refused() {
    let big = "v".repeat(1_000_000);
    let bomb = format!("roles:\n  - code: R\n    grants: {{payments: [&s \"{big}\", {}]}}\n", ["*s"; 2000].join(","));
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let revision = app.store.permission_revision().await.unwrap();
        let response = app
            .http()
            .post(app.url("/admin/v1/permissions"))
            .bearer_auth(ADMIN_TOKEN)
            .header("content-type", "application/yaml")
            .body(bomb.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{backend:?}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["code"], "invalid_document", "{backend:?}");
        assert!(body["message"].as_str().unwrap().contains("YAML aliases"), "{backend:?}: {body}");
        assert_eq!(app.store.permission_revision().await.unwrap(), revision, "{backend:?}: nothing changed");
    }
}

#[tokio::test]
async fn generated_bad_input_gets_a_4xx_with_a_spec_body_and_changes_nothing() {
    const VALUES: [&str; 10] =
        ["", "%00", "7700000001", "payments", "a,,b", "not-a-uuid", "Иван", "%2F", "acc.employees", "x"];
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let ivan = app.token_pair("ivan").await;
        let revision = app.store.permission_revision().await.unwrap();
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..400 {
            let mut pick = || VALUES[(next() % VALUES.len() as u64) as usize].to_owned();
            let (a, b) = (pick(), pick());
            let many = vec![a.clone(); 150].join(",");
            let path = match round % 9 {
                0 => format!("/api/v1/permissions?cnum={a}&cnum={b}"),
                1 => format!("/api/v1/permissions/{a}?cnum={many}"),
                2 => format!("/api/v2/permissions/{a}"),
                3 => format!("/api/v2/permissions/{a}/{b}"),
                4 => format!("/api/v1/acc-permissions/{a}"),
                5 => format!("/api/v2/acc-permissions/{a}/{b}"),
                6 => format!("/api/v1/permissions/{many}"),
                7 => format!("/api/v2/acc-permissions/{a}"),
                _ => "/api/v1/employee/role".to_owned(),
            };
            let mut request = if path.ends_with("/role") {
                let body = match round % 4 {
                    0 => format!("{{\"userId\": \"{a}\", \"cnum\": \"{b}\"}}"),
                    1 => format!("{{\"userId\": {a:?}}}"),
                    2 => a.repeat(1000),
                    _ => format!("{{\"cnum\": [\"{b}\"], \"userId\": null}}"),
                };
                ivan.on(app.http().post(app.url(&path))).header("content-type", "application/json").body(body)
            } else {
                ivan.on(app.http().get(app.url(&path)))
            };
            if round % 7 == 0 {
                request = request.header("x-system-id", "");
            }
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let body: Value = response.json().await.unwrap_or(Value::Null);
            assert!(status < 500, "{backend:?} {path} -> {status} {body}");
            assert_ne!(status, 404, "{path}: a missing segment is a 400 naming the parameter");
            if status >= 400 {
                let shaped = body["code"].is_string() || body["message"].is_string() || body["error"].is_string();
                assert!(shaped, "{path} -> {status} {body}");
            }
        }
        assert_eq!(app.store.permission_revision().await.unwrap(), revision, "nothing changed");
    }
}

/// An error repeats at most the first characters of what it refuses:
/// a megabyte sent as `userId` (or as an unknown field's name) does not
/// come back in the answer.
#[tokio::test]
async fn errors_repeat_only_the_start_of_a_long_value() {
    let app = TestApp::spawn(backends()[0]).await;
    let pair = app.token_pair("ivan").await;
    let long = "7".repeat(900_000);
    for body in
        [json!({"userId": long, "cnum": "7700000001"}), Value::Object([(long.clone(), json!(1))].into_iter().collect())]
    {
        let found = role(&app, &pair, &body).await;
        assert_eq!((found.0, found.1["code"].as_str()), (400, Some("bad_request")), "{:.200}", found.1);
        let message = found.1["message"].as_str().unwrap();
        assert!(message.len() < 300, "{} bytes: {message:.200}", message.len());
        assert!(message.contains("(900000 characters)"), "says how long it was: {message}");
    }
}
