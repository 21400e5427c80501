//! The bank's own channel to reports (`/internal/v1/reports/...`, the
//! internal token): tasks it creates carry the source `ONLINE_BANK` and
//! are visible to the company's users; it names the company with `cnum`.

use portico_tests::{INTERNAL_TOKEN, TestApp, backends};
use serde_json::{Value, json};

use crate::reports::{call, statement};

async fn bank(app: &TestApp, token: Option<&str>, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let url = app.url(path);
    let mut request = if method == "POST" { app.http().post(url) } else { app.http().get(url) };
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_banks_own_channel_creates_online_bank_tasks_for_a_named_company() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let token = Some(INTERNAL_TOKEN);
        let create = "/internal/v1/reports/tasks?cnum=7700000001";
        let body = statement("2026-05-01", "2026-05-31");

        let (status, error) = bank(&app, None, "POST", create, Some(body.clone())).await;
        assert_eq!((status, error["code"].as_str()), (401, Some("UNAUTHORIZED")), "{error}");
        let ivan = app.token_pair("ivan").await;
        let user_on_bank_path = app
            .http()
            .post(app.url(create))
            .bearer_auth(&ivan.access_token)
            .header("id-token", &ivan.id_token)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(user_on_bank_path.status(), 401, "a user's token is not the internal token");
        let (status, error) = bank(&app, token, "POST", "/internal/v1/reports/tasks", Some(body.clone())).await;
        assert_eq!((status, error["errors"]["cnum"].is_string()), (400, true), "{error}");
        let (status, error) =
            bank(&app, token, "POST", "/internal/v1/reports/tasks?cnum=7700000002", Some(body.clone())).await;
        assert_eq!((status, error["errors"]["agreementNumber"].is_string()), (400, true), "another company: {error}");
        assert_eq!(call(&app, Some(&ivan), "GET", "/v1/reports/tasks", None).await.1, json!([]), "nothing created");

        let (status, task) = bank(&app, token, "POST", create, Some(body)).await;
        assert_eq!(status, 200, "{backend:?}: {task}");
        assert_eq!(task["source"], "ONLINE_BANK");
        let id = task["id"].as_str().unwrap();
        let done = loop {
            let (status, task) = bank(&app, token, "GET", &format!("/internal/v1/reports/tasks/{id}"), None).await;
            assert_eq!(status, 200, "{task}");
            if task["status"] == "DONE" || task["status"] == "FAILED" {
                break task;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        };
        assert_eq!(done["status"], "DONE", "{done}");
        let file = done["files"][0]["id"].as_str().unwrap();
        let download = app
            .http()
            .get(app.url(&format!("/internal/v1/reports/files/download/{file}")))
            .bearer_auth(INTERNAL_TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(download.status(), 200);
        assert!(download.bytes().await.unwrap().starts_with(b"1CClientBankExchange\r\n"));

        let (status, listed) = bank(&app, token, "GET", "/internal/v1/reports/tasks?cnum=7700000001", None).await;
        assert_eq!((status, listed.as_array().map(Vec::len)), (200, Some(1)), "{listed}");
        let (status, types) = bank(&app, token, "GET", "/internal/v1/reports/types", None).await;
        assert_eq!((status, types[1]["type"].as_str()), (200, Some("BROKERAGE_REPORT")));
        // The company's user sees the bank's task as one of the company's.
        let (_, theirs) = call(&app, Some(&ivan), "GET", "/v1/reports/tasks", None).await;
        assert_eq!(theirs[0]["id"], id);
        assert_eq!(theirs[0]["source"], "ONLINE_BANK");
    }
}
