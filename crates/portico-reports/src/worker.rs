//! The report worker: takes the oldest `NEW` task (or one whose worker
//! died: its lease ran out) with a lease, produces its files, stores them
//! and marks the task `DONE`, or `FAILED` with the reason. A generation
//! that fails or outlives most of its lease ends `FAILED`; nothing stays
//! `IN_PROGRESS` once its lease has run out, since another worker then takes
//! the task again.

use std::time::Duration;

use portico_model::ids::ReportFileId;
use portico_model::reports::{ReportFile, ReportTask, TaskOutcome};
use tokio::sync::watch;
use tracing::Instrument as _;

use crate::ReportsState;
use crate::generate::{self, GenerateError};

/// Takes and generates one task. Returns whether there was one.
///
/// # Errors
/// When the store fails to hand out or take back a task.
pub async fn run_once(api: &ReportsState) -> Result<bool, portico_storage::StorageError> {
    let now = api.clock.now();
    let lease = time::Duration::try_from(api.lease).unwrap_or(time::Duration::minutes(5));
    let Some(task) = api.store.claim_report_task(now, now + lease).await? else {
        return Ok(false);
    };
    let Some(lease_until) = task.lease_until else {
        return Ok(true);
    };
    // Continues the trace of the request that asked for it.
    let span = tracing::info_span!(
        "generate",
        otel.name = "generate report",
        task = %task.id,
        report_type = task.report_type.as_str(),
        attempt = task.attempts,
    );
    portico_storage::trace::continue_in(&span, task.trace_parent.as_deref());
    generate_claimed(api, task, lease_until).instrument(span).await
}

/// Produces a claimed task's files and records the outcome.
async fn generate_claimed(
    api: &ReportsState,
    task: ReportTask,
    lease_until: time::OffsetDateTime,
) -> Result<bool, portico_storage::StorageError> {
    // Most of the lease, so that the outcome is recorded while it holds.
    let budget = api.lease.mul_f64(0.8);
    let started = std::time::Instant::now();
    let outcome = match tokio::time::timeout(budget, produce_all(api, &task)).await {
        Ok(Ok(files)) => TaskOutcome::Done(files),
        Ok(Err(reason)) => TaskOutcome::Failed(reason),
        Err(_) => TaskOutcome::Failed(format!("the generation took longer than {} s", budget.as_secs())),
    };
    let counted = if matches!(outcome, TaskOutcome::Done(_)) { "done" } else { "failed" };
    metrics::counter!("portico_report_tasks_total", "outcome" => counted).increment(1);
    metrics::histogram!("portico_report_generation_seconds", "outcome" => counted)
        .record(started.elapsed().as_secs_f64());
    if let TaskOutcome::Failed(reason) = &outcome {
        tracing::warn!(task = %task.id, %reason, "report task failed");
    }
    let recorded = api.store.finish_report_task(task.id, lease_until, &outcome, api.clock.now()).await?;
    if recorded {
        tracing::info!(task = %task.id, done = matches!(outcome, TaskOutcome::Done(_)), "report task finished");
    } else {
        tracing::warn!(task = %task.id, "report task lease ran out before it finished; another worker has it");
    }
    Ok(true)
}

/// Every file of the task, written to the file store.
async fn produce_all(api: &ReportsState, task: &ReportTask) -> Result<Vec<ReportFile>, String> {
    let agreement = api
        .store
        .find_agreement(&task.agreement_number)
        .await
        .map_err(|e| format!("the brokerage data could not be read: {e}"))?
        .ok_or_else(|| format!("there is no brokerage data for agreement {}", task.agreement_number))?;
    let agreement = std::sync::Arc::new(agreement);
    let mut files = Vec::new();
    for &file_type in &task.file_types {
        let (task_copy, data, now) = (task.clone(), std::sync::Arc::clone(&agreement), api.clock.now());
        let assets = std::sync::Arc::clone(&api.assets);
        let produced =
            tokio::task::spawn_blocking(move || generate::produce(&task_copy, &data, file_type, &assets, now))
                .await
                .map_err(|e| format!("the generator stopped: {e}"))?
                .map_err(|e: GenerateError| e.to_string())?;
        for produced in produced {
            let id = ReportFileId::now_v7();
            let object_key = format!("reports/{}/{id}", task.id);
            let size = produced.content.len() as u64;
            api.files.put(&object_key, produced.content).await.map_err(|e| e.to_string())?;
            let (name_rus, name_eng) = file_type.names();
            files.push(ReportFile {
                id,
                task_id: task.id,
                file_type,
                name_rus: name_rus.to_owned(),
                name_eng: name_eng.to_owned(),
                file_name: produced.file_name,
                signature_type: produced.signature_type,
                content_type: produced.content_type.to_owned(),
                size,
                object_key,
            });
        }
    }
    Ok(files)
}

/// Runs the worker until `stop` turns true, looking for tasks every
/// `interval` and whenever one is created on this node.
pub async fn run(api: ReportsState, interval: Duration, mut stop: watch::Receiver<bool>) {
    while !*stop.borrow() {
        match run_once(&api).await {
            Ok(true) => continue,
            Ok(false) => {}
            Err(error) => tracing::warn!(%error, "cannot take report tasks; retrying"),
        }
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            () = api.queued.notified() => {}
            _ = stop.changed() => {}
        }
    }
}
