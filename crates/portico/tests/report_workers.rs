//! Report workers as real processes (`portico worker`) on both backends: a
//! worker killed with SIGKILL in the middle of a large report leaves a task
//! that another worker finishes, once its lease runs out, with intact files.

use std::time::Duration;

use portico_model::reports::TaskStatus;
use portico_reports::sample::Shape;
use portico_tests::{TestApp, backends};
use serde_json::{Value, json};

mod common;

use common::Worker;

/// A worker that only generates reports, holding a task for `lease` seconds.
fn reporter(app: &TestApp, lease: &str) -> Worker {
    Worker::start(
        app,
        &[
            ("PORTICO_REPORTS__LEASE_SECS", lease),
            ("PORTICO_REPORTS__INTERVAL_MS", "50"),
            ("PORTICO_REPORTS__WORKERS", "1"),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_generation_leaves_the_task_to_another_that_finishes_it() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| c.reports.generate = false).await;
        // A year with 10,000 trades and 2,000 cash movements: seconds of work.
        let big = Shape { number: "БД-0002", trades: 10_000, cash_movements: 2_000, ..Shape::demo() };
        let now = portico_model::clock::Clock::now(&portico_model::clock::SystemClock);
        app.store.save_agreements(&[portico_reports::sample::agreement(&big)], now).await.unwrap();
        let ivan = app.token_pair("ivan").await;
        let body = json!({
            "reportType": "BROKERAGE_REPORT", "agreementNumber": "БД-0002",
            "fromDate": "2025-11-01", "toDate": "2026-10-31",
            "fileTypes": ["PRINTED_FORM", "FACSIMILE", "SIMPLE_DOCUMENTARY"]
        });
        let response = app
            .http()
            .post(app.url("/v1/reports/tasks"))
            .bearer_auth(&ivan.access_token)
            .header("id-token", &ivan.id_token)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let task: Value = response.json().await.unwrap();
        let id = uuid::Uuid::parse_str(task["id"].as_str().unwrap()).unwrap();

        let mut first = reporter(&app, "6");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let task = app.store.find_report_task(id.into()).await.unwrap().unwrap();
            if task.status == TaskStatus::InProgress {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "{backend:?}: the worker never took the task");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        first.kill();
        let killed = app.store.find_report_task(id.into()).await.unwrap().unwrap();
        assert_eq!((killed.status, killed.attempts), (TaskStatus::InProgress, 1), "{backend:?}: killed mid-generation");

        let _second = reporter(&app, "60");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        let done = loop {
            let task = app.store.find_report_task(id.into()).await.unwrap().unwrap();
            if task.status == TaskStatus::Done || task.status == TaskStatus::Failed {
                break task;
            }
            assert!(tokio::time::Instant::now() < deadline, "{backend:?}: the task was never finished");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!((done.status, done.attempts, done.error.as_deref()), (TaskStatus::Done, 2, None), "{backend:?}");
        assert_eq!(done.files.len(), 3);
        for file in &done.files {
            let bytes = app.reports.files.read(&file.object_key).await.unwrap();
            assert_eq!(bytes.len() as u64, file.size, "{backend:?}: {} whole", file.file_name);
            if file.content_type == "application/pdf" {
                assert!(bytes.starts_with(b"%PDF-") && bytes.windows(5).rev().take(64).any(|w| w == b"%%EOF"));
            } else {
                assert!(bytes.starts_with(b"PK\x03\x04"), "an XLSX is a zip");
            }
        }
    }
}
