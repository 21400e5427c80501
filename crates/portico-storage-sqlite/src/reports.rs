//! Brokerage agreements, report tasks and their files.

use async_trait::async_trait;
use portico_model::ids::{ReportFileId, ReportTaskId};
use portico_model::reports::brokerage::Agreement;
use portico_model::reports::{
    FileType, ReportFile, ReportTask, ReportType, SignatureType, Source, TaskOutcome, TaskStatus,
};
use portico_storage::{BrokerageRepository, KeyPage, ReportRepository, ReportTaskFilter, Reuse};
use rusqlite::{Connection, Row, params};
use time::{Date, OffsetDateTime};

use crate::db::{Columns, Res, all, damaged, one, run, secs, secs_opt, to_json};
use crate::{Result, SqliteStore};

fn date(row: &Row<'_>, column: &str) -> Res<Date> {
    let text: String = row.get(column)?;
    Date::parse(&text, &time::format_description::well_known::Iso8601::DATE)
        .map_err(|_| damaged(&format!("date {text:?}")))
}

fn ymd(date: Date) -> String {
    format!("{:04}-{:02}-{:02}", date.year(), u8::from(date.month()), date.day())
}

/// File types as stored: comma-separated codes.
fn file_type_list(types: &[FileType]) -> String {
    types.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(",")
}

fn task_from(row: &Row<'_>) -> Res<ReportTask> {
    let report_type: String = row.get("report_type")?;
    let status: String = row.get("status")?;
    let source: String = row.get("source")?;
    let file_types: String = row.get("file_types")?;
    Ok(ReportTask {
        id: row.uuid("id")?.into(),
        cnum: row.get("cnum")?,
        report_type: ReportType::parse(&report_type).ok_or_else(|| damaged(&format!("type {report_type:?}")))?,
        agreement_number: row.get("agreement_number")?,
        account: row.get("account")?,
        period_from: date(row, "period_from")?,
        period_to: date(row, "period_to")?,
        handle_if_exists: row.get("handle_if_exists")?,
        file_types: file_types
            .split(',')
            .filter(|c| !c.is_empty())
            .map(|c| FileType::parse(c).ok_or_else(|| damaged(&format!("file type {c:?}"))))
            .collect::<Res<_>>()?,
        status: TaskStatus::parse(&status).ok_or_else(|| damaged(&format!("status {status:?}")))?,
        source: Source::parse(&source).ok_or_else(|| damaged(&format!("source {source:?}")))?,
        error: row.get("error")?,
        created_by: row.uuid_opt("created_by")?,
        attempts: u32::try_from(row.get::<_, i64>("attempts")?).unwrap_or(0),
        lease_until: row.time_opt("lease_until")?,
        created_at: row.time("created_at")?,
        updated_at: row.time("updated_at")?,
        files: Vec::new(),
        trace_parent: row.get("trace_parent")?,
    })
}

fn file_from(row: &Row<'_>) -> Res<ReportFile> {
    let file_type: String = row.get("file_type")?;
    let signature: String = row.get("signature_type")?;
    Ok(ReportFile {
        id: row.uuid("id")?.into(),
        task_id: row.uuid("task_id")?.into(),
        file_type: FileType::parse(&file_type).ok_or_else(|| damaged(&format!("file type {file_type:?}")))?,
        name_rus: row.get("name_rus")?,
        name_eng: row.get("name_eng")?,
        file_name: row.get("file_name")?,
        signature_type: SignatureType::parse(&signature).ok_or_else(|| damaged(&format!("signature {signature:?}")))?,
        content_type: row.get("content_type")?,
        size: u64::try_from(row.get::<_, i64>("size")?).unwrap_or(0),
        object_key: row.get("object_key")?,
    })
}

/// `tasks` with their files, in one query.
/// The tasks `sql` selects, with their files, read in one snapshot.
fn tasks_with_files(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> Res<Vec<ReportTask>> {
    let snapshot = conn.unchecked_transaction()?;
    let tasks = all(&snapshot, sql, params, task_from)?;
    let tasks = with_files(&snapshot, tasks)?;
    snapshot.finish()?;
    Ok(tasks)
}

fn with_files(conn: &Connection, mut tasks: Vec<ReportTask>) -> Res<Vec<ReportTask>> {
    if tasks.is_empty() {
        return Ok(tasks);
    }
    let ids: Vec<String> = tasks.iter().map(|task| task.id.to_string()).collect();
    let sql = "SELECT * FROM report_files WHERE task_id IN (SELECT value FROM json_each(?1)) \
               ORDER BY task_id, position";
    for file in all(conn, sql, [to_json(&ids)?], file_from)? {
        if let Some(task) = tasks.iter_mut().find(|task| task.id == file.task_id) {
            task.files.push(file);
        }
    }
    Ok(tasks)
}

/// The newest task that is not failed and asks for what `task` asks for:
/// the same company, type, agreement, account, period and file types (in
/// any order).
fn same_request(conn: &Connection, task: &ReportTask, since: Option<OffsetDateTime>) -> Res<Option<ReportTask>> {
    let candidates = all(
        conn,
        "SELECT * FROM report_tasks WHERE cnum = ?1 AND report_type = ?2 AND agreement_number = ?3 \
         AND COALESCE(account, '') = ?4 AND period_from = ?5 AND period_to = ?6 AND status <> 'FAILED' \
         AND created_at >= ?7 ORDER BY created_at DESC, id DESC",
        params![
            task.cnum,
            task.report_type.as_str(),
            task.agreement_number,
            task.account.as_deref().unwrap_or(""),
            ymd(task.period_from),
            ymd(task.period_to),
            // Whole seconds, as stored: the exact bound is checked below.
            since.map_or(i64::MIN, secs)
        ],
        task_from,
    )?;
    let mut wanted = task.file_types.clone();
    wanted.sort_unstable_by_key(|f| f.as_str());
    Ok(candidates.into_iter().filter(|found| since.is_none_or(|since| found.created_at >= since)).find(|found| {
        let mut types = found.file_types.clone();
        types.sort_unstable_by_key(|f| f.as_str());
        types == wanted
    }))
}

#[async_trait]
impl BrokerageRepository for SqliteStore {
    async fn save_agreements(&self, agreements: &[Agreement], now: OffsetDateTime) -> Result<()> {
        let agreements = agreements.to_vec();
        self.db
            .write("agreement", move |tx| {
                for agreement in &agreements {
                    run(
                        tx,
                        "INSERT INTO brokerage_agreements (number, cnum, data, updated_at) VALUES (?1, ?2, ?3, ?4) \
                         ON CONFLICT (number) DO UPDATE SET cnum = ?2, data = ?3, updated_at = ?4",
                        params![agreement.number, agreement.cnum, to_json(agreement)?, secs(now)],
                    )?;
                }
                Ok(())
            })
            .await
    }

    async fn find_agreement(&self, number: &str) -> Result<Option<Agreement>> {
        let number = number.to_owned();
        self.db
            .read(move |c| {
                one(c, "SELECT data FROM brokerage_agreements WHERE number = ?1", [number], |row| row.json("data"))
            })
            .await
    }

    async fn list_agreements(&self, page: KeyPage<'_>) -> Result<Vec<(String, String)>> {
        let (after, limit) = (page.after.map(str::to_owned), page.sql_limit());
        let sql =
            "SELECT number, cnum FROM brokerage_agreements WHERE ?1 IS NULL OR number > ?1 ORDER BY number LIMIT ?2";
        self.db
            .read(move |c| all(c, sql, params![after, limit], |row| Ok((row.get("number")?, row.get("cnum")?))))
            .await
    }
}

#[async_trait]
impl ReportRepository for SqliteStore {
    async fn create_report_task_within(
        &self,
        task: &ReportTask,
        reuse: Reuse,
        max_unfinished: u32,
    ) -> Result<Option<(ReportTask, bool)>> {
        let task = task.clone();
        self.db
            .write("report task", move |tx| {
                if reuse.reuses()
                    && let Some(found) = same_request(tx, &task, reuse.since())?
                {
                    return Ok(Some((with_files(tx, vec![found])?.remove(0), false)));
                }
                // The one writer runs this whole: no other insert between the count and ours.
                let unfinished: i64 = tx.query_row(
                    "SELECT count(*) FROM report_tasks WHERE cnum = ?1 AND status IN ('NEW', 'IN_PROGRESS')",
                    [&task.cnum],
                    |row| row.get(0),
                )?;
                if unfinished >= i64::from(max_unfinished) {
                    return Ok(None);
                }
                run(
                    tx,
                    "INSERT INTO report_tasks (id, cnum, report_type, agreement_number, account, period_from, \
                     period_to, handle_if_exists, file_types, status, source, error, created_by, attempts, \
                     lease_until, created_at, updated_at, trace_parent) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
                    params![
                        task.id.to_string(),
                        task.cnum,
                        task.report_type.as_str(),
                        task.agreement_number,
                        task.account,
                        ymd(task.period_from),
                        ymd(task.period_to),
                        task.handle_if_exists,
                        file_type_list(&task.file_types),
                        task.status.as_str(),
                        task.source.as_str(),
                        task.error,
                        task.created_by.map(|u| u.to_string()),
                        task.attempts,
                        secs_opt(task.lease_until),
                        secs(task.created_at),
                        secs(task.updated_at),
                        task.trace_parent,
                    ],
                )?;
                Ok(Some((task, true)))
            })
            .await
    }

    async fn find_report_task(&self, id: ReportTaskId) -> Result<Option<ReportTask>> {
        self.db
            .read(move |c| {
                let snapshot = c.unchecked_transaction()?;
                let found = one(&snapshot, "SELECT * FROM report_tasks WHERE id = ?1", [id.to_string()], task_from)?;
                let found = found.map(|task| with_files(&snapshot, vec![task])).transpose()?.and_then(|mut t| t.pop());
                snapshot.finish()?;
                Ok(found)
            })
            .await
    }

    async fn list_report_tasks(&self, filter: &ReportTaskFilter) -> Result<Vec<ReportTask>> {
        if filter.cnums.is_empty() {
            return Ok(Vec::new());
        }
        let cnums = to_json(&filter.cnums).map_err(|e| e.storage("report task"))?;
        let filter = filter.clone();
        self.db
            .read(move |c| {
                tasks_with_files(
                    c,
                    "SELECT * FROM report_tasks WHERE cnum IN (SELECT value FROM json_each(?9)) \
                     AND (?1 IS NULL OR report_type = ?1) AND (?2 IS NULL OR agreement_number = ?2) \
                     AND (?3 IS NULL OR account = ?3) AND (?4 IS NULL OR period_from >= ?4) \
                     AND (?5 IS NULL OR period_to <= ?5) AND (?6 IS NULL OR status = ?6) \
                     ORDER BY created_at DESC, id DESC LIMIT ?7 OFFSET ?8",
                    params![
                        filter.report_type.map(ReportType::as_str),
                        filter.agreement_number,
                        filter.account,
                        filter.from.map(ymd),
                        filter.to.map(ymd),
                        filter.status.map(TaskStatus::as_str),
                        filter.limit,
                        filter.offset,
                        cnums,
                    ],
                )
            })
            .await
    }

    async fn claim_report_task(&self, now: OffsetDateTime, lease_until: OffsetDateTime) -> Result<Option<ReportTask>> {
        self.db
            .write("report task", move |tx| {
                one(
                    tx,
                    "UPDATE report_tasks SET status = 'IN_PROGRESS', lease_until = ?1, attempts = attempts + 1, \
                     updated_at = ?2 WHERE id = (SELECT id FROM report_tasks \
                     WHERE status = 'NEW' OR (status = 'IN_PROGRESS' AND lease_until <= ?2) \
                     ORDER BY created_at, id LIMIT 1) RETURNING *",
                    params![secs(lease_until), secs(now)],
                    task_from,
                )
            })
            .await
    }

    async fn list_finished_report_tasks(&self, before: OffsetDateTime, limit: u32) -> Result<Vec<ReportTask>> {
        self.db
            .read(move |c| {
                tasks_with_files(
                    c,
                    "SELECT * FROM report_tasks WHERE status IN ('DONE', 'FAILED') AND updated_at < ?1 \
                     ORDER BY updated_at, id LIMIT ?2",
                    params![secs(before), limit],
                )
            })
            .await
    }

    async fn delete_finished_report_task(&self, id: ReportTaskId, before: OffsetDateTime) -> Result<bool> {
        self.db
            .write("report task", move |tx| {
                let removed = run(
                    tx,
                    "DELETE FROM report_tasks WHERE id = ?1 AND status IN ('DONE', 'FAILED') AND updated_at < ?2",
                    params![id.to_string(), secs(before)],
                )?;
                Ok(removed > 0)
            })
            .await
    }

    async fn finish_report_task(
        &self,
        id: ReportTaskId,
        lease_until: OffsetDateTime,
        outcome: &TaskOutcome,
        now: OffsetDateTime,
    ) -> Result<bool> {
        let outcome = outcome.clone();
        self.db
            .write("report file", move |tx| {
                let (status, error) = match &outcome {
                    TaskOutcome::Done(_) => (TaskStatus::Done, None),
                    TaskOutcome::Failed(reason) => (TaskStatus::Failed, Some(reason.as_str())),
                };
                let finished = run(
                    tx,
                    "UPDATE report_tasks SET status = ?3, error = ?4, lease_until = NULL, updated_at = ?5 \
                     WHERE id = ?1 AND status = 'IN_PROGRESS' AND lease_until = ?2",
                    params![id.to_string(), secs(lease_until), status.as_str(), error, secs(now)],
                )?;
                if finished != 1 {
                    return Ok(false);
                }
                if let TaskOutcome::Done(files) = &outcome {
                    for (position, file) in files.iter().enumerate() {
                        run(
                            tx,
                            "INSERT INTO report_files (id, task_id, position, file_type, name_rus, name_eng, \
                             file_name, signature_type, content_type, size, object_key) \
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                            params![
                                file.id.to_string(),
                                id.to_string(),
                                position,
                                file.file_type.as_str(),
                                file.name_rus,
                                file.name_eng,
                                file.file_name,
                                file.signature_type.as_str(),
                                file.content_type,
                                i64::try_from(file.size).unwrap_or(i64::MAX),
                                file.object_key,
                            ],
                        )?;
                    }
                }
                Ok(true)
            })
            .await
    }

    async fn find_report_file(&self, id: ReportFileId) -> Result<Option<(ReportFile, String)>> {
        self.db
            .read(move |c| {
                one(
                    c,
                    "SELECT f.*, t.cnum FROM report_files f JOIN report_tasks t ON t.id = f.task_id WHERE f.id = ?1",
                    [id.to_string()],
                    |row| Ok((file_from(row)?, row.get("cnum")?)),
                )
            })
            .await
    }
}
