//! Brokerage data and report tasks with their files.

use crate::{KeyPage, Result};
use async_trait::async_trait;
use portico_model::ids::{ReportFileId, ReportTaskId};
use portico_model::reports::brokerage::Agreement;
use portico_model::reports::{ReportFile, ReportTask, ReportType, TaskOutcome, TaskStatus};
use time::OffsetDateTime;

/// The brokerage data reports are made from, one document per agreement.
#[async_trait]
pub trait BrokerageRepository: Send + Sync {
    /// Stores each agreement, replacing the one of the same number whole,
    /// all in one transaction.
    ///
    /// # Errors
    /// Only when the store fails; then nothing changed.
    async fn save_agreements(&self, agreements: &[Agreement], now: OffsetDateTime) -> Result<()>;
    /// # Errors
    /// Only when the store fails.
    async fn find_agreement(&self, number: &str) -> Result<Option<Agreement>>;
    /// `(number, cnum)` of the agreements of `page`, by number.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn list_agreements(&self, page: KeyPage<'_>) -> Result<Vec<(String, String)>>;
}

/// Which report tasks a listing wants.
#[derive(Debug, Clone, Default)]
pub struct ReportTaskFilter {
    /// Tasks of these companies only (none: no tasks).
    pub cnums: Vec<String>,
    pub report_type: Option<ReportType>,
    pub agreement_number: Option<String>,
    pub account: Option<String>,
    /// Tasks whose period starts on or after this date.
    pub from: Option<time::Date>,
    /// Tasks whose period ends on or before this date.
    pub to: Option<time::Date>,
    pub status: Option<TaskStatus>,
    pub offset: u32,
    pub limit: u32,
}

/// Which earlier task asking for the same report may answer a new one
/// instead of it ([`ReportRepository::create_report_task`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reuse {
    /// None: the task is stored (a broker's `handleIfExists`).
    Never,
    /// The newest task that is not `FAILED` for the same company, type,
    /// agreement, account, period and file types.
    SameRequest,
    /// The same, created at or after this time: an operator's retry of a
    /// task that failed, which a retry made since (or the broker's own
    /// request since) answers, so that a failed task is asked again once.
    SameRequestSince(OffsetDateTime),
}

impl Reuse {
    /// Whether an earlier task may answer.
    pub const fn reuses(self) -> bool {
        !matches!(self, Self::Never)
    }

    /// The earliest creation of a task that may answer (`None`: any).
    pub const fn since(self) -> Option<OffsetDateTime> {
        match self {
            Self::SameRequestSince(since) => Some(since),
            Self::Never | Self::SameRequest => None,
        }
    }
}

/// Report tasks and their files.
#[async_trait]
pub trait ReportRepository: Send + Sync {
    /// Stores a new task, unless `reuse` names an earlier one that answers
    /// it ([`Reuse`]): then that one. Returns the task and whether it is
    /// new.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn create_report_task(&self, task: &ReportTask, reuse: Reuse) -> Result<(ReportTask, bool)> {
        let created = self.create_report_task_within(task, reuse, u32::MAX).await?;
        created.ok_or_else(|| crate::StorageError::Other("no company holds u32::MAX unfinished report tasks".into()))
    }
    /// [`ReportRepository::create_report_task`], unless the task's company
    /// has `max_unfinished` tasks `NEW` or `IN_PROGRESS` already: then
    /// `None` and nothing is stored. The count and the insert are one step
    /// (requests at once for one company never pass the limit together);
    /// a reused task is returned whatever the count.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn create_report_task_within(
        &self,
        task: &ReportTask,
        reuse: Reuse,
        max_unfinished: u32,
    ) -> Result<Option<(ReportTask, bool)>>;
    /// # Errors
    /// Only when the store fails.
    async fn find_report_task(&self, id: ReportTaskId) -> Result<Option<ReportTask>>;
    /// Newest first, with their files.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn list_report_tasks(&self, filter: &ReportTaskFilter) -> Result<Vec<ReportTask>>;
    /// Takes the oldest task that is `NEW`, or `IN_PROGRESS` with a lease
    /// that ran out (its worker died), makes it `IN_PROGRESS` leased until
    /// `lease_until` and counts the attempt; concurrent callers never take
    /// the same task.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn claim_report_task(&self, now: OffsetDateTime, lease_until: OffsetDateTime) -> Result<Option<ReportTask>>;
    /// Ends a task held under `lease_until`: `DONE` with its files or
    /// `FAILED` with the reason, in one transaction. Returns false (and
    /// changes nothing) when the lease is no longer the caller's.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn finish_report_task(
        &self,
        id: ReportTaskId,
        lease_until: OffsetDateTime,
        outcome: &TaskOutcome,
        now: OffsetDateTime,
    ) -> Result<bool>;
    /// A file and the company of its task.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_report_file(&self, id: ReportFileId) -> Result<Option<(ReportFile, String)>>;
    /// Finished tasks (`DONE` or `FAILED`) that finished before `before`,
    /// oldest first, at most `limit`, with their files: what retention
    /// removes.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn list_finished_report_tasks(&self, before: OffsetDateTime, limit: u32) -> Result<Vec<ReportTask>>;
    /// Removes a finished task that finished before `before`, with its
    /// files' rows (the objects are the caller's); returns whether it did. A
    /// task that is `NEW` or `IN_PROGRESS`, or finished later, stays.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn delete_finished_report_task(&self, id: ReportTaskId, before: OffsetDateTime) -> Result<bool>;
}
