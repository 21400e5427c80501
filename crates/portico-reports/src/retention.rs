//! Retention: a finished task (`DONE` or `FAILED`) and its files are kept
//! for `reports.retention_days` after it finished; then the clean-up task
//! removes the files from the file store (folder or bucket) and the task.
//! Tasks still `NEW` or `IN_PROGRESS` are never removed.
//!
//! Files go first, the task after: a pass interrupted in between leaves a
//! task whose files are gone, which the next pass removes (a file already
//! gone is no error). Any number of nodes may run it at once.

use crate::Reports;

/// Tasks looked at per batch.
const BATCH: u32 = 100;

/// What a pass removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Removed {
    pub tasks: usize,
    pub files: usize,
}

/// Removes what finished more than the retention period ago (nothing when
/// the period is `None`: kept for ever).
///
/// # Errors
/// When the store or the file store fails; what was removed before stays
/// removed.
pub async fn remove_expired(reports: &Reports) -> Result<Removed, String> {
    let mut removed = Removed::default();
    let Some(retention) = reports.retention else {
        return Ok(removed);
    };
    let before = reports.clock.now() - retention;
    loop {
        let tasks = reports.store.list_finished_report_tasks(before, BATCH).await.map_err(|e| e.to_string())?;
        let last_batch = tasks.len() < BATCH as usize;
        for task in tasks {
            for file in &task.files {
                reports.files.delete(&file.object_key).await.map_err(|e| e.to_string())?;
                removed.files += 1;
            }
            if reports.store.delete_finished_report_task(task.id, before).await.map_err(|e| e.to_string())? {
                removed.tasks += 1;
            }
        }
        if last_batch {
            return Ok(removed);
        }
    }
}
