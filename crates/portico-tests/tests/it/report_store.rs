//! Report files in an S3-compatible bucket: a real S3 API server (moto's
//! `moto_server`, named by `PORTICO_TEST_MOTO`) on a loopback port. Files
//! are written to the bucket under the configured prefix, streamed back by
//! the download, and nothing lands in the local folder.

use portico_reports::files::S3Settings;
use portico_tests::{TestApp, backends};

use crate::reports::{call, download, finished, statement};

/// A running `moto_server`, killed when dropped.
struct S3Server {
    child: std::process::Child,
    url: String,
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn s3_server() -> Option<S3Server> {
    let Ok(moto) = std::env::var("PORTICO_TEST_MOTO") else {
        portico_tests::skipped(
            "PORTICO_TEST_MOTO is not set; the S3 store test needs moto_server (pip install 'moto[server]')",
        );
        return None;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = std::process::Command::new(moto)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start moto_server");
    let server = S3Server { child, url: format!("http://127.0.0.1:{port}") };
    for _ in 0..200 {
        if reqwest::get(&server.url).await.is_ok() {
            return Some(server);
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("moto_server did not start on port {port}");
}

const MOTO_AUTHORIZATION: &str =
    "AWS4-HMAC-SHA256 Credential=portico-test/20260101/eu-central-1/s3/aws4_request, SignedHeaders=host, Signature=0";

fn settings(server: &S3Server, bucket: &str) -> S3Settings {
    S3Settings {
        bucket: bucket.to_owned(),
        prefix: "/portico/reports/".to_owned(),
        region: "eu-central-1".to_owned(),
        endpoint: Some(server.url.clone()),
        access_key_id: Some("portico-test".to_owned()),
        secret_access_key: Some("portico-test-secret".to_owned()),
        allow_http: true,
    }
}

/// The keys in `bucket`, read with the S3 API's own listing.
async fn keys(server: &S3Server, bucket: &str) -> Vec<String> {
    let xml = reqwest::get(format!("{}/{bucket}?list-type=2", server.url)).await.unwrap().text().await.unwrap();
    xml.split("<Key>").skip(1).map(|rest| rest.split("</Key>").next().unwrap().to_owned()).collect()
}

fn local_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).map(|entries| entries.count()).unwrap_or(0)
}

#[tokio::test]
async fn report_files_are_kept_in_an_s3_bucket_under_the_prefix_and_downloaded_from_it() {
    let Some(server) = s3_server().await else { return };
    let bucket = "portico-reports";
    let created = reqwest::Client::new().put(format!("{}/{bucket}", server.url)).send().await.unwrap();
    assert!(created.status().is_success(), "create the bucket: {}", created.status());
    for backend in backends() {
        let s3 = settings(&server, bucket);
        let app = TestApp::spawn_with(backend, |config| config.reports.s3 = Some(s3)).await;
        let ivan = app.token_pair("ivan").await;
        let (status, task) =
            call(&app, Some(&ivan), "POST", "/v1/reports/tasks", Some(statement("2026-01-01", "2026-06-30"))).await;
        assert_eq!(status, 200, "{task}");
        let done = finished(&app, &ivan, task["id"].as_str().unwrap()).await;
        assert_eq!(done["status"], "DONE", "{backend:?}: {done}");
        let file_id = done["files"][0]["id"].as_str().unwrap();

        let stored = keys(&server, bucket).await;
        let key = stored
            .iter()
            .find(|k| k.starts_with("portico/reports/") && k.contains(file_id))
            .unwrap_or_else(|| panic!("{backend:?}: no object for file {file_id} under the prefix in {stored:?}"));
        let object = reqwest::Client::new()
            .get(format!("{}/{bucket}/{key}", server.url))
            // moto answers anonymous reads with 403 and does not check signatures.
            .header("authorization", MOTO_AUTHORIZATION)
            .send()
            .await
            .unwrap();
        assert_eq!(object.status(), 200);
        let in_bucket = object.bytes().await.unwrap();

        let (headers, downloaded) = download(&app, &ivan, &done["files"][0]).await;
        assert_eq!(headers["content-length"].to_str().unwrap(), in_bucket.len().to_string());
        assert!(downloaded.starts_with(b"1CClientBankExchange\r\n"));
        assert_eq!(downloaded, in_bucket, "the download is the bucket's object");
        assert_eq!(local_files(&app.config.data_dir.join("reports")), 0, "nothing in the local folder");
    }
}

#[tokio::test]
async fn a_bucket_that_does_not_answer_stops_the_start_naming_the_setting() {
    let Some(server) = s3_server().await else { return };
    let backend = backends()[0];
    let dir = portico_tests::TempDir::new();
    let config = portico_server::Config {
        data_dir: dir.0.clone(),
        database_url: Some(portico_tests::fresh_database(backend, &dir).await),
        reports: portico_server::config::ReportConfig {
            s3: Some(settings(&server, "no-such-bucket")),
            ..Default::default()
        },
        ..Default::default()
    };
    let clock = std::sync::Arc::new(portico_model::clock::SystemClock);
    let error = match portico_server::app::App::build(config, clock, false).await {
        Ok(_) => panic!("started with a missing bucket"),
        Err(e) => format!("{e:#}"),
    };
    assert!(error.starts_with("reports.s3: "), "{error}");
    assert!(error.contains("no-such-bucket"), "{error}");
}
