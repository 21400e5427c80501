//! Resident memory of a server producing reports one after another: the
//! figure behind the choice of allocator (docs/benchmarks.md, "Memory over
//! consecutive reports").
//!
//! A real server (SQLite, two report workers) generates `TASKS` tasks, each
//! the XLSX and the printed PDF of a whole year with 10,000 trades
//! (`PORTICO_BENCH_REPORT_TRADES` changes that), queued two at a time
//! (`PORTICO_BENCH_REPORT_IN_FLIGHT`) so that both workers are busy. The
//! process's resident size (`VmRSS`) is read before the first task, after
//! every `STEP` tasks, and after 2 and 12 idle seconds at the end; the
//! growth is the last sample against the first one taken while working.

use std::time::{Duration, Instant};

use portico_model::reports::{FileType, ReportTask, ReportType, TaskStatus};
use portico_reports::sample::Shape;
use portico_tests::{Backend, TestApp};

const TASKS: usize = 100;
const STEP: usize = 20;

/// The process's resident size (MiB).
fn resident_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
        / 1024
}

fn task(shape: &Shape) -> ReportTask {
    let file_types = vec![FileType::SimpleDocumentary, FileType::PrintedForm];
    portico_reports::sample::task(shape, ReportType::BrokerageReport, file_types, None)
}

/// Runs the measurement and prints one line per sample, labelled `allocator`.
pub fn run(allocator: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let app = TestApp::spawn_with(Backend::Sqlite, |c| {
            c.reports.workers = 2;
            c.reports.interval_ms = 20;
        })
        .await;
        let shape = match std::env::var("PORTICO_BENCH_REPORT_TRADES").ok().and_then(|v| v.parse().ok()) {
            Some(trades) => Shape { number: "БД-0002", trades, cash_movements: trades / 5, ..Shape::demo() },
            None => Shape { number: "БД-0002", trades: 10_000, cash_movements: 2_000, ..Shape::demo() },
        };
        let in_flight: usize = std::env::var("PORTICO_BENCH_REPORT_IN_FLIGHT").ok().and_then(|v| v.parse().ok()).unwrap_or(2);
        let now = portico_model::clock::Clock::now(&portico_model::clock::SystemClock);
        app.store.save_agreements(&[portico_reports::sample::agreement(&shape)], now).await.expect("agreement");
        let started = Instant::now();
        let before = resident_mib();
        let mut samples = vec![before];
        let mut peak = before;
        let mut pending = Vec::new();
        let mut done = 0;
        let mut created = 0;
        while done < TASKS {
            while created < TASKS && pending.len() < in_flight {
                let (task, _) = app.store.create_report_task(&task(&shape), portico_storage::Reuse::Never).await.expect("task");
                app.reports.queued.notify_one();
                pending.push(task.id);
                created += 1;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
            let mut still = Vec::new();
            for id in pending {
                let task = app.store.find_report_task(id).await.expect("task").expect("exists");
                assert_ne!(task.status, TaskStatus::Failed, "{:?}", task.error);
                if task.status == TaskStatus::Done {
                    done += 1;
                    if done % STEP == 0 {
                        samples.push(resident_mib());
                    }
                } else {
                    still.push(id);
                }
            }
            pending = still;
            peak = peak.max(resident_mib());
        }
        let elapsed = started.elapsed();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let idle = resident_mib();
        tokio::time::sleep(Duration::from_secs(10)).await;
        let idle_12 = resident_mib();
        let growth = 100.0 * (samples[samples.len() - 1] as f64 / samples[1] as f64 - 1.0);
        let samples: Vec<String> = samples.iter().map(u64::to_string).collect();
        println!(
            "{allocator:<8}: {TASKS} tasks (XLSX + PDF of a year, {} trades) in {:.1} s; resident MiB every {STEP} tasks: {}; \
             growth while working {growth:+.0} %; peak {peak}; after 2 s idle {idle}, after 12 s {idle_12}",
            shape.trades,
            elapsed.as_secs_f64(),
            samples.join(" → "),
        );
    });
}
