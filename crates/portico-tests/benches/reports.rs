//! Report generation: time and peak memory per file type for a year with
//! 10,000 trades and 2,000 cash movements, and tasks completed per second
//! by two workers.
//!
//! `cargo bench -p portico-tests --bench reports` (add
//! `PORTICO_TEST_POSTGRES_URL=…` to measure the workers on PostgreSQL too).
//! 1. Each file type is produced five times by the generator itself (no
//!    storage, no HTTP); the figure is the median. Peak memory is the
//!    process's high-water mark (`VmHWM`, reset through
//!    `/proc/self/clear_refs` before each file), so it includes the
//!    process's baseline (reported too).
//! 2. With `PORTICO_TEST_OPENSSL` set: the `QES` signature of the year's
//!    printed form by the built-in key against the external signing
//!    command (`openssl dgst -sign`, ECDSA P-256, and with the GOST engine
//!    installed `openssl dgst -engine gost`, GOST R 34.10-2012), each
//!    signature made and checked 20 times in alternating rounds: the median
//!    time per signature. GOST's check runs `openssl cms -verify` too.
//! 3. Two workers of a real server generate 20 tasks (XLSX + PDF of one
//!    month of the same agreement, about 830 trades each): tasks per second
//!    from the first create to the last `DONE`.

#[path = "common/allocator.rs"]
mod allocator;

use std::time::{Duration, Instant};

use portico_model::reports::{FileType, ReportTask, ReportType, TaskStatus};
use portico_reports::generate::{Assets, produce};
use portico_reports::sample::{ACCOUNT_RUB, Shape};
use portico_tests::{Backend, TestApp, backends};
use time::OffsetDateTime;

const TASKS: usize = 20;

fn main() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("machine: {cores} cores; {}", std::env::consts::ARCH);
    let shape = Shape { number: "БД-0002", trades: 10_000, cash_movements: 2_000, ..Shape::demo() };
    let agreement = portico_reports::sample::agreement(&shape);
    let baseline = peak_kib();
    println!("process baseline: {} MiB resident", baseline / 1024);
    let (cert, key) =
        portico_reports::generate::qes::Signer::generate_self_signed("Портико", OffsetDateTime::now_utc())
            .expect("certificate");
    let signer = portico_reports::generate::qes::Signer::builtin(&cert, &key, None).expect("signer");
    let assets = Assets { signer: Some(std::sync::Arc::new(signer)), ..Assets::default() };
    for (report_type, file_type, account) in [
        (ReportType::StatementFor1c, FileType::SimpleDocumentary, Some(ACCOUNT_RUB)),
        (ReportType::BrokerageReport, FileType::SimpleDocumentary, None),
        (ReportType::BrokerageReport, FileType::PrintedForm, None),
        (ReportType::BrokerageReport, FileType::Facsimile, None),
        (ReportType::BrokerageReport, FileType::Qes, None),
    ] {
        let task = task(report_type, file_type, account, &shape);
        let mut times = Vec::new();
        let mut peak = 0;
        let mut size = 0;
        for _ in 0..5 {
            reset_peak();
            let started = Instant::now();
            let produced = produce(&task, &agreement, file_type, &assets, OffsetDateTime::now_utc()).expect("produce");
            times.push(started.elapsed());
            peak = peak.max(peak_kib());
            size = produced.iter().map(|p| p.content.len()).sum();
        }
        times.sort();
        println!(
            "{:<17} {:<18}: median {:>7.1} ms (min {:.1}, max {:.1}); {:>6} KiB; peak resident {} MiB",
            report_type.as_str(),
            file_type.as_str(),
            ms(times[2]),
            ms(times[0]),
            ms(times[4]),
            size / 1024,
            peak / 1024
        );
    }
    if let Ok(openssl) = std::env::var("PORTICO_TEST_OPENSSL") {
        let task = task(ReportType::BrokerageReport, FileType::PrintedForm, None, &shape);
        let form = produce(&task, &agreement, FileType::PrintedForm, &assets, OffsetDateTime::now_utc())
            .expect("the printed form")
            .remove(0)
            .content;
        signers(&openssl, &cert, &key, &form);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    for backend in backends() {
        runtime.block_on(workers(backend, &shape));
    }
}

/// The built-in key against external signing commands, on `form`.
fn signers(openssl: &str, cert: &str, key: &str, form: &[u8]) {
    use portico_reports::generate::qes::{Algorithm, Output, Signer, command::Command};
    let dir = portico_tests::TempDir::new();
    let key_path = dir.0.join("key.pem");
    std::fs::write(&key_path, key).expect("write the key");
    let run = |argv: Vec<String>| Command::new(argv, Duration::from_secs(30), 2).expect("the command");
    let argv = |args: &[&str]| -> Vec<String> {
        std::iter::once(openssl).chain(args.iter().copied()).map(str::to_owned).collect()
    };
    let key_arg = key_path.display().to_string();
    let mut signers = vec![
        ("built-in ECDSA P-256", Signer::builtin(cert, key, None).expect("built-in")),
        (
            "command, openssl dgst ECDSA P-256",
            Signer::external(
                Algorithm::EcdsaP256,
                run(argv(&["dgst", "-sha256", "-sign", &key_arg])),
                Output::Signature,
                cert,
                None,
                None,
            )
            .expect("external"),
        ),
    ];
    if let Some(pki) = portico_tests::gost::GostPki::new() {
        let broker = std::fs::read_to_string(pki.path("broker.pem")).expect("the GOST certificate");
        let verify = run(pki.verify_command());
        signers.push((
            "command, openssl GOST 2012-256",
            Signer::external(
                Algorithm::Gost2012_256,
                run(pki.signature_command("broker.key")),
                Output::Signature,
                &broker,
                None,
                Some(verify),
            )
            .expect("GOST"),
        ));
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); signers.len()];
    for _ in 0..20 {
        for ((_, signer), times) in signers.iter().zip(&mut times) {
            let started = Instant::now();
            signer.sign_detached(form, OffsetDateTime::now_utc()).expect("a signature");
            times.push(started.elapsed());
        }
    }
    let builtin = {
        let mut first = times[0].clone();
        first.sort();
        first[first.len() / 2]
    };
    for ((name, _), mut times) in signers.iter().zip(times) {
        times.sort();
        let median = times[times.len() / 2];
        println!(
            "QES signature of the year's form ({} KiB), {name:<34}: median {:>7.2} ms ({:.1}× the built-in key)",
            form.len() / 1024,
            ms(median),
            median.as_secs_f64() / builtin.as_secs_f64()
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn task(report_type: ReportType, file_type: FileType, account: Option<&str>, shape: &Shape) -> ReportTask {
    portico_reports::sample::task(shape, report_type, vec![file_type], account)
}

/// The process's peak resident memory (KiB).
fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Resets the peak to the current resident size.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

async fn workers(backend: Backend, shape: &Shape) {
    let app = TestApp::spawn_with(backend, |c| {
        c.reports.workers = 2;
        c.reports.interval_ms = 20;
    })
    .await;
    let now = portico_model::clock::Clock::now(&portico_model::clock::SystemClock);
    app.store.save_agreements(&[portico_reports::sample::agreement(shape)], now).await.expect("agreement");
    let started = Instant::now();
    let mut ids = Vec::new();
    for i in 0..TASKS {
        let month = shape.last - time::Duration::days(30 * (i as i64 % 12) + 30);
        let mut task = task(ReportType::BrokerageReport, FileType::SimpleDocumentary, None, shape);
        task.file_types = vec![FileType::SimpleDocumentary, FileType::PrintedForm];
        task.period_from = month;
        task.period_to = month + time::Duration::days(29);
        let (task, _) = app.store.create_report_task(&task, portico_storage::Reuse::Never).await.expect("task");
        app.reports.queued.notify_one();
        ids.push(task.id);
    }
    loop {
        let mut done = 0;
        for id in &ids {
            let task = app.store.find_report_task(*id).await.expect("task").expect("exists");
            assert_ne!(task.status, TaskStatus::Failed, "{:?}", task.error);
            done += usize::from(task.status == TaskStatus::Done);
        }
        if done == TASKS {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let elapsed = started.elapsed();
    println!(
        "{backend:?}: two workers, {TASKS} tasks (XLSX + PDF of one month, ~830 trades): {:.1} s, {:.2} tasks/s",
        elapsed.as_secs_f64(),
        TASKS as f64 / elapsed.as_secs_f64()
    );
}
