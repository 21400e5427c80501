//! The `QES` file's signature: the built-in ECDSA key (the demo's
//! self-signed certificate), and GOST R 34.10-2012 made by an external
//! command (OpenSSL with the GOST engine standing in for CryptoPro),
//! checked by `openssl cms -verify`; commands that fail, hang or lie fail
//! the task with the reason.

use std::path::Path;

use portico_reports::generate::qes::{self, Output};
use portico_tests::gost::GostPki;
use portico_tests::{TestApp, TokenPair, backends};
use serde_json::{Value, json};

use crate::reports::{AGREEMENT, call, download, finished, keep, pdf_text, pdftotext};

/// A `QES` task for March, finished.
pub(crate) async fn qes_task(app: &TestApp, ivan: &TokenPair) -> Value {
    let body = json!({
        "reportType": "BROKERAGE_REPORT", "agreementNumber": AGREEMENT,
        "fromDate": "2026-03-01", "toDate": "2026-03-31", "fileTypes": ["QES"]
    });
    let (status, task) = call(app, Some(ivan), "POST", "/v1/reports/tasks", Some(body)).await;
    assert_eq!(status, 200, "{task}");
    finished(app, ivan, task["id"].as_str().unwrap()).await
}

/// Why the task failed, as recorded (the API does not show it).
pub(crate) async fn stored_error(app: &TestApp, task: &Value) -> String {
    let id: uuid::Uuid = task["id"].as_str().unwrap().parse().unwrap();
    let stored = app.store.find_report_task(id.into()).await.unwrap().expect("the task");
    stored.error.unwrap_or_default()
}

/// `openssl cms -verify` of `signature` over `content`, trusting `ca`.
pub(crate) fn openssl_verify(openssl: &str, gost: bool, signature: &[u8], content: &[u8], ca: &Path) -> (bool, String) {
    let dir = portico_tests::TempDir::new();
    let (content_path, signature_path) = (dir.0.join("form.pdf"), dir.0.join("form.pdf.sig"));
    std::fs::write(&signature_path, signature).unwrap();
    std::fs::write(&content_path, content).unwrap();
    let mut command = std::process::Command::new(openssl);
    command.args(["cms", "-verify", "-binary", "-inform", "DER", "-purpose", "any", "-out", "/dev/null"]);
    if gost {
        command.args(["-engine", "gost"]);
    }
    let out = command
        .arg("-in")
        .arg(&signature_path)
        .arg("-content")
        .arg(&content_path)
        .arg("-CAfile")
        .arg(ca)
        .output()
        .expect("run openssl");
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test]
async fn the_qes_form_comes_with_a_detached_cms_signature_that_openssl_verifies() {
    let Ok(openssl) = std::env::var("PORTICO_TEST_OPENSSL") else {
        portico_tests::skipped("PORTICO_TEST_OPENSSL is not set; the signature check needs the openssl command");
        return;
    };
    let app = TestApp::spawn(backends()[0]).await;
    let ivan = app.token_pair("ivan").await;
    let done = qes_task(&app, &ivan).await;
    assert_eq!(done["status"], "DONE", "{done}");
    let files = done["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "the form and its signature: {done}");
    assert!(files.iter().all(|f| f["fileType"] == "QES" && f["signatureType"]["code"] == "QES"));
    assert_eq!(files[0]["fileName"], "Брокерский_отчёт_БД-0001_2026-03-01_2026-03-31_КЭП.pdf");
    assert_eq!(files[1]["fileName"], "Брокерский_отчёт_БД-0001_2026-03-01_2026-03-31_КЭП.pdf.sig");
    let (_, pdf) = download(&app, &ivan, &files[0]).await;
    let (headers, signature) = download(&app, &ivan, &files[1]).await;
    assert_eq!(headers["content-type"], "application/octet-stream", "the contract's media type");
    keep("qes.pdf", &pdf);
    keep("qes.pdf.sig", &signature);

    let cert = app.config.data_dir.join("reports-signing-cert.pem");
    let (ok, said) = openssl_verify(&openssl, false, &signature, &pdf, &cert);
    assert!(ok, "openssl refused the signature: {said}");
    let summary = qes::summarize(&signature).unwrap();
    assert_eq!(
        (summary.digest_algorithm.as_str(), summary.signature_algorithm.as_str()),
        ("2.16.840.1.101.3.4.2.1", "1.2.840.10045.4.3.2"),
        "SHA-256, ECDSA"
    );
    assert!(summary.signed_attributes.contains(&"1.2.840.113549.1.9.16.2.47".to_owned()), "signing-certificate-v2");
    // The certificate's validity starts when it was made (this run), not
    // at some fixed date long ago.
    let dates = std::process::Command::new(&openssl)
        .args(["x509", "-noout", "-startdate", "-enddate", "-in"])
        .arg(&cert)
        .output()
        .expect("run openssl");
    let dates = String::from_utf8_lossy(&dates.stdout).into_owned();
    let year = time::OffsetDateTime::now_utc().year();
    let start = dates.lines().find_map(|l| l.strip_prefix("notBefore=")).expect("notBefore");
    assert!(start.contains(&format!(" {year} ")), "valid from this year: {dates}");
    let end = dates.lines().find_map(|l| l.strip_prefix("notAfter=")).expect("notAfter");
    assert!(end.contains(&format!(" {} ", year + 10)), "for ten years: {dates}");
    let mut changed = pdf.clone();
    let middle = changed.len() / 2;
    changed[middle] ^= 0x01;
    let (ok, _) = openssl_verify(&openssl, false, &signature, &changed, &cert);
    assert!(!ok, "a changed PDF must not verify");
    // The demo's self-signed certificate is marked as such on the form.
    if let Some(tool) = pdftotext() {
        let text = pdf_text(&tool, &pdf);
        assert!(text.contains("Демонстрационная подпись"), "the title block marks the demo signature: {text}");
    }
}

#[tokio::test]
async fn a_gost_qes_signature_made_by_the_external_command_verifies_with_openssl_gost() {
    let Some(pki) = GostPki::new() else { return };
    let modes = [(pki.cms_command(), Output::Cms), (pki.signature_command("broker.key"), Output::Signature)];
    for (backend, (command, output)) in backends().into_iter().cycle().zip(modes) {
        let app = TestApp::spawn_with(backend, |config| pki.configure(config, command, output)).await;
        let ivan = app.token_pair("ivan").await;
        let done = qes_task(&app, &ivan).await;
        assert_eq!(done["status"], "DONE", "{output:?}: {}", stored_error(&app, &done).await);
        let (_, pdf) = download(&app, &ivan, &done["files"][0]).await;
        let (_, signature) = download(&app, &ivan, &done["files"][1]).await;
        keep(&format!("qes-gost-{output:?}.pdf.sig"), &signature);

        let (ok, said) = openssl_verify(&pki.openssl, true, &signature, &pdf, &pki.path("ca.pem"));
        assert!(ok, "{output:?}: openssl refused the GOST signature: {said}");
        let summary = qes::summarize(&signature).unwrap();
        assert_eq!(summary.digest_algorithm, "1.2.643.7.1.1.2.2", "{output:?}: Streebog-256");
        assert_eq!(summary.signature_algorithm, "1.2.643.7.1.1.1.1", "{output:?}: GOST R 34.10-2012 256");
        for (oid, name) in [
            ("1.2.840.113549.1.9.3", "content type"),
            ("1.2.840.113549.1.9.4", "message digest"),
            ("1.2.840.113549.1.9.5", "signing time"),
            ("1.2.840.113549.1.9.16.2.47", "signing certificate v2"),
        ] {
            assert!(summary.signed_attributes.iter().any(|a| a == oid), "{output:?}: {name} is signed");
        }
        assert_eq!(summary.certificates, 2, "{output:?}: the broker's certificate and the CA");
        assert!(summary.detached, "{output:?}");

        let mut changed = pdf.clone();
        let middle = changed.len() / 2;
        changed[middle] ^= 0x01;
        let (ok, _) = openssl_verify(&pki.openssl, true, &signature, &changed, &pki.path("ca.pem"));
        assert!(!ok, "{output:?}: a changed report must not verify");
        if let Some(tool) = pdftotext() {
            let text = pdf_text(&tool, &pdf);
            assert!(!text.contains("Демонстрационная"), "the broker's own certificate is no demonstration");
        }
    }
}

#[tokio::test]
async fn a_signing_command_that_fails_hangs_or_lies_fails_the_task_with_the_reason() {
    let Some(pki) = GostPki::new() else { return };
    let sh = |script: &str| vec!["/bin/sh".to_owned(), "-c".to_owned(), script.to_owned()];
    let other = pki.path("other.bin");
    std::fs::write(&other, b"another document").unwrap();
    let other_signature = {
        let mut argv = pki.signature_command("broker.key");
        argv.push(other.display().to_string());
        argv.join(" ")
    };
    let cases = [
        (sh("cat > /dev/null; echo 'wrong PIN for the container' >&2; exit 2"), Output::Signature, "wrong PIN"),
        (sh("cat > /dev/null; exec sleep 30"), Output::Signature, "did not finish within 1 s"),
        (sh("cat > /dev/null; printf 'not a CMS'"), Output::Cms, "is not DER CMS"),
        (sh(&format!("cat > /dev/null; exec {other_signature}")), Output::Signature, "refused the signature"),
        (pki.signature_command("stranger.key"), Output::Signature, "refused the signature"),
    ];
    for (backend, (command, output, reason)) in backends().into_iter().cycle().zip(cases) {
        let app = TestApp::spawn_with(backend, |config| {
            pki.configure(config, command.clone(), output);
            config.reports.signature.timeout_secs = 1;
        })
        .await;
        let ivan = app.token_pair("ivan").await;
        let done = qes_task(&app, &ivan).await;
        assert_eq!(done["status"], "FAILED", "{backend:?} {command:?}: {done}");
        let said = stored_error(&app, &done).await;
        assert!(said.contains("could not be signed") && said.contains(reason), "{command:?}: {said}");
        assert!(done["files"].as_array().is_some_and(Vec::is_empty), "no file of a failed task: {done}");
    }
}

#[tokio::test]
async fn a_signature_configuration_that_cannot_work_stops_the_start_with_the_reason() {
    let Some(pki) = GostPki::new() else { return };
    type Change = Box<dyn Fn(&mut portico_server::Config)>;
    let cases: [(&str, Change); 5] = [
        ("reports.signature.verify_command", Box::new(|c| c.reports.signature.verify_command.clear())),
        ("is not found", Box::new(|c| c.reports.signature.command = vec!["/opt/cprocsp/bin/cryptcp".into()])),
        ("needs reports.signing_cert", Box::new(|c| c.reports.signing_cert = None)),
        (
            "not a GOST R 34.10-2012 (256) key",
            Box::new(|c| c.reports.signing_cert = Some(c.data_dir.join("ecdsa.pem"))),
        ),
        ("made by an external command", Box::new(|c| c.reports.signature.command.clear())),
    ];
    for (expected, change) in cases {
        let dir = portico_tests::TempDir::new();
        let mut config = portico_server::Config { data_dir: dir.0.clone(), ..Default::default() };
        pki.configure(&mut config, pki.cms_command(), Output::Cms);
        let (cert, _) = qes::Signer::generate_self_signed("Брокер", time::OffsetDateTime::now_utc()).unwrap();
        std::fs::write(dir.0.join("ecdsa.pem"), cert).unwrap();
        change(&mut config);
        let error = portico_tests::start_error(config).await;
        assert!(error.contains(expected), "{expected}: {error}");
    }
}
