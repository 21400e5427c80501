//! Brokerage agreements (one document per agreement, replaced whole by an
//! import), report tasks and their files.

use async_trait::async_trait;
use portico_model::ids::{ReportFileId, ReportTaskId};
use portico_model::reports::brokerage::Agreement;
use portico_model::reports::{
    FileType, ReportFile, ReportTask, ReportType, SignatureType, Source, TaskOutcome, TaskStatus,
};
use portico_storage::{BrokerageRepository, KeyPage, ReportRepository, ReportTaskFilter, Reuse};
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::error::{damaged, storage_error};
use crate::{PgStore, Result, at, at_opt, count, get, int};

const WHAT: &str = "report";

fn task_from(row: &PgRow) -> Result<ReportTask> {
    let report_type: String = get(row, "report_type")?;
    let status: String = get(row, "status")?;
    let source: String = get(row, "source")?;
    let file_types: Vec<String> = get(row, "file_types")?;
    Ok(ReportTask {
        id: get::<Uuid>(row, "id")?.into(),
        cnum: get(row, "cnum")?,
        report_type: ReportType::parse(&report_type).ok_or_else(|| damaged("report type", &report_type))?,
        agreement_number: get(row, "agreement_number")?,
        account: get(row, "account")?,
        period_from: get(row, "period_from")?,
        period_to: get(row, "period_to")?,
        handle_if_exists: get(row, "handle_if_exists")?,
        file_types: file_types
            .iter()
            .map(|code| FileType::parse(code).ok_or_else(|| damaged("file type", code)))
            .collect::<Result<_>>()?,
        status: TaskStatus::parse(&status).ok_or_else(|| damaged("task status", &status))?,
        source: Source::parse(&source).ok_or_else(|| damaged("task source", &source))?,
        error: get(row, "error")?,
        created_by: get(row, "created_by")?,
        attempts: count(row, "attempts")?,
        lease_until: get(row, "lease_until")?,
        created_at: get(row, "created_at")?,
        updated_at: get(row, "updated_at")?,
        files: Vec::new(),
        trace_parent: get(row, "trace_parent")?,
    })
}

fn file_from(row: &PgRow) -> Result<ReportFile> {
    let file_type: String = get(row, "file_type")?;
    let signature: String = get(row, "signature_type")?;
    Ok(ReportFile {
        id: get::<Uuid>(row, "id")?.into(),
        task_id: get::<Uuid>(row, "task_id")?.into(),
        file_type: FileType::parse(&file_type).ok_or_else(|| damaged("file type", &file_type))?,
        name_rus: get(row, "name_rus")?,
        name_eng: get(row, "name_eng")?,
        file_name: get(row, "file_name")?,
        signature_type: SignatureType::parse(&signature).ok_or_else(|| damaged("signature type", &signature))?,
        content_type: get(row, "content_type")?,
        size: u64::try_from(get::<i64>(row, "size")?).unwrap_or(0),
        object_key: get(row, "object_key")?,
    })
}

fn file_type_codes(task: &ReportTask) -> Vec<&'static str> {
    task.file_types.iter().map(|f| f.as_str()).collect()
}

impl PgStore {
    /// `tasks` with their files, in one query.
    async fn with_files(&self, mut tasks: Vec<ReportTask>) -> Result<Vec<ReportTask>> {
        if tasks.is_empty() {
            return Ok(tasks);
        }
        let ids: Vec<Uuid> = tasks.iter().map(|t| t.id.as_uuid()).collect();
        let rows = sqlx::query("SELECT * FROM report_files WHERE task_id = ANY($1) ORDER BY task_id, position")
            .bind(ids)
            .fetch_all(&mut *self.conn().await?)
            .await
            .map_err(storage_error(WHAT))?;
        for row in &rows {
            let file = file_from(row)?;
            if let Some(task) = tasks.iter_mut().find(|t| t.id == file.task_id) {
                task.files.push(file);
            }
        }
        Ok(tasks)
    }
}

#[async_trait]
impl BrokerageRepository for PgStore {
    async fn save_agreements(&self, agreements: &[Agreement], now: OffsetDateTime) -> Result<()> {
        sqlx::query(
            "INSERT INTO brokerage_agreements (number, cnum, data, updated_at) \
             SELECT number, cnum, data, $4 FROM UNNEST($1::text[], $2::text[], $3::jsonb[]) AS v (number, cnum, data) \
             ON CONFLICT (number) DO UPDATE SET cnum = excluded.cnum, data = excluded.data, \
             updated_at = excluded.updated_at",
        )
        .bind(agreements.iter().map(|a| a.number.as_str()).collect::<Vec<_>>())
        .bind(agreements.iter().map(|a| a.cnum.as_str()).collect::<Vec<_>>())
        .bind(agreements.iter().map(Json).collect::<Vec<_>>())
        .bind(at(now))
        .execute(&mut *self.conn().await?)
        .await
        .map_err(storage_error("agreement"))?;
        Ok(())
    }

    async fn find_agreement(&self, number: &str) -> Result<Option<Agreement>> {
        let data: Option<Json<Agreement>> =
            sqlx::query_scalar("SELECT data FROM brokerage_agreements WHERE number = $1")
                .bind(number)
                .fetch_optional(&mut *self.conn().await?)
                .await
                .map_err(storage_error("agreement"))?;
        Ok(data.map(|json| json.0))
    }

    async fn list_agreements(&self, page: KeyPage<'_>) -> Result<Vec<(String, String)>> {
        sqlx::query_as(r#"SELECT number, cnum FROM brokerage_agreements WHERE $1::text IS NULL OR number > $1 ORDER BY number LIMIT $2"#)
            .bind(page.after)
            .bind(page.sql_limit())
            .fetch_all(&mut *self.conn().await?)
            .await
            .map_err(storage_error("agreement"))
    }
}

#[async_trait]
impl ReportRepository for PgStore {
    async fn create_report_task_within(
        &self,
        task: &ReportTask,
        reuse: Reuse,
        max_unfinished: u32,
    ) -> Result<Option<(ReportTask, bool)>> {
        let file_types = file_type_codes(task);
        let mut tx = self.begin().await?;
        // One company's creations take turns (to the commit): the reuse
        // check and the count see every earlier creation of the company.
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('report_tasks:' || $1, 0))")
            .bind(&task.cnum)
            .execute(&mut *tx)
            .await
            .map_err(storage_error(WHAT))?;
        if reuse.reuses() {
            // The same file types in any order (each is named once).
            let existing = sqlx::query(
                "SELECT * FROM report_tasks WHERE cnum = $1 AND report_type = $2 AND agreement_number = $3 \
                 AND COALESCE(account, '') = $4 AND period_from = $5 AND period_to = $6 \
                 AND file_types @> $7 AND file_types <@ $7 AND status <> 'FAILED' \
                 AND ($8::timestamptz IS NULL OR created_at >= $8) \
                 ORDER BY created_at DESC, id DESC LIMIT 1",
            )
            .bind(&task.cnum)
            .bind(task.report_type.as_str())
            .bind(&task.agreement_number)
            .bind(task.account.as_deref().unwrap_or(""))
            .bind(task.period_from)
            .bind(task.period_to)
            .bind(&file_types)
            .bind(at_opt(reuse.since()))
            .fetch_optional(&mut *tx)
            .await
            .map_err(storage_error(WHAT))?;
            if let Some(row) = existing {
                tx.commit().await.map_err(storage_error(WHAT))?;
                let mut found = self.with_files(vec![task_from(&row)?]).await?;
                return Ok(Some((found.remove(0), false)));
            }
        }
        let unfinished: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM report_tasks WHERE cnum = $1 AND status IN ('NEW', 'IN_PROGRESS')",
        )
        .bind(&task.cnum)
        .fetch_one(&mut *tx)
        .await
        .map_err(storage_error(WHAT))?;
        if unfinished >= i64::from(max_unfinished) {
            return Ok(None);
        }
        sqlx::query(
            "INSERT INTO report_tasks (id, cnum, report_type, agreement_number, account, period_from, period_to, \
             handle_if_exists, file_types, status, source, error, created_by, attempts, lease_until, created_at, \
             updated_at, trace_parent) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)",
        )
        .bind(task.id.as_uuid())
        .bind(&task.cnum)
        .bind(task.report_type.as_str())
        .bind(&task.agreement_number)
        .bind(&task.account)
        .bind(task.period_from)
        .bind(task.period_to)
        .bind(task.handle_if_exists)
        .bind(&file_types)
        .bind(task.status.as_str())
        .bind(task.source.as_str())
        .bind(&task.error)
        .bind(task.created_by)
        .bind(int(task.attempts))
        .bind(at_opt(task.lease_until))
        .bind(at(task.created_at))
        .bind(at(task.updated_at))
        .bind(&task.trace_parent)
        .execute(&mut *tx)
        .await
        .map_err(storage_error("report task"))?;
        tx.commit().await.map_err(storage_error("report task"))?;
        Ok(Some((task.clone(), true)))
    }

    async fn find_report_task(&self, id: ReportTaskId) -> Result<Option<ReportTask>> {
        let row = sqlx::query("SELECT * FROM report_tasks WHERE id = $1")
            .bind(id.as_uuid())
            .fetch_optional(&mut *self.conn().await?)
            .await
            .map_err(storage_error(WHAT))?;
        let Some(row) = row else { return Ok(None) };
        Ok(self.with_files(vec![task_from(&row)?]).await?.pop())
    }

    async fn list_report_tasks(&self, filter: &ReportTaskFilter) -> Result<Vec<ReportTask>> {
        if filter.cnums.is_empty() {
            return Ok(Vec::new());
        }
        let rows = sqlx::query(
            "SELECT * FROM report_tasks WHERE cnum = ANY($9) \
             AND ($1::text IS NULL OR report_type = $1) AND ($2::text IS NULL OR agreement_number = $2) \
             AND ($3::text IS NULL OR account = $3) AND ($4::date IS NULL OR period_from >= $4) \
             AND ($5::date IS NULL OR period_to <= $5) AND ($6::text IS NULL OR status = $6) \
             ORDER BY created_at DESC, id DESC LIMIT $7 OFFSET $8",
        )
        .bind(filter.report_type.map(ReportType::as_str))
        .bind(filter.agreement_number.as_deref())
        .bind(filter.account.as_deref())
        .bind(filter.from)
        .bind(filter.to)
        .bind(filter.status.map(TaskStatus::as_str))
        .bind(i64::from(filter.limit))
        .bind(i64::from(filter.offset))
        .bind(&filter.cnums)
        .fetch_all(&mut *self.conn().await?)
        .await
        .map_err(storage_error(WHAT))?;
        let tasks = rows.iter().map(task_from).collect::<Result<Vec<_>>>()?;
        self.with_files(tasks).await
    }

    async fn claim_report_task(&self, now: OffsetDateTime, lease_until: OffsetDateTime) -> Result<Option<ReportTask>> {
        let row = sqlx::query(
            "WITH candidate AS (SELECT id FROM report_tasks \
             WHERE status = 'NEW' OR (status = 'IN_PROGRESS' AND lease_until <= $2) \
             ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) \
             UPDATE report_tasks SET status = 'IN_PROGRESS', lease_until = $1, attempts = attempts + 1, updated_at = $2 \
             WHERE id IN (SELECT id FROM candidate) RETURNING *",
        )
        .bind(at(lease_until))
        .bind(at(now))
        .fetch_optional(&mut *self.conn().await?)
        .await
        .map_err(storage_error(WHAT))?;
        row.as_ref().map(task_from).transpose()
    }

    async fn list_finished_report_tasks(&self, before: OffsetDateTime, limit: u32) -> Result<Vec<ReportTask>> {
        let rows = sqlx::query(
            "SELECT * FROM report_tasks WHERE status IN ('DONE', 'FAILED') AND updated_at < $1 \
             ORDER BY updated_at, id LIMIT $2",
        )
        .bind(at(before))
        .bind(i64::from(limit))
        .fetch_all(&mut *self.conn().await?)
        .await
        .map_err(storage_error(WHAT))?;
        let tasks = rows.iter().map(task_from).collect::<Result<Vec<_>>>()?;
        self.with_files(tasks).await
    }

    async fn delete_finished_report_task(&self, id: ReportTaskId, before: OffsetDateTime) -> Result<bool> {
        let done =
            sqlx::query("DELETE FROM report_tasks WHERE id = $1 AND status IN ('DONE', 'FAILED') AND updated_at < $2")
                .bind(id.as_uuid())
                .bind(at(before))
                .execute(&mut *self.conn().await?)
                .await
                .map_err(storage_error(WHAT))?;
        Ok(done.rows_affected() > 0)
    }

    async fn finish_report_task(
        &self,
        id: ReportTaskId,
        lease_until: OffsetDateTime,
        outcome: &TaskOutcome,
        now: OffsetDateTime,
    ) -> Result<bool> {
        let (status, error, files) = match outcome {
            TaskOutcome::Done(files) => (TaskStatus::Done, None, files.as_slice()),
            TaskOutcome::Failed(reason) => (TaskStatus::Failed, Some(reason.as_str()), &[][..]),
        };
        // One statement: the task finishes under its lease, and its files
        // go in only then.
        let done: i64 = sqlx::query_scalar(
            "WITH finished AS (UPDATE report_tasks SET status = $3, error = $4, lease_until = NULL, updated_at = $5 \
             WHERE id = $1 AND status = 'IN_PROGRESS' AND lease_until = $2 RETURNING id), \
             files AS (INSERT INTO report_files (id, task_id, position, file_type, name_rus, name_eng, file_name, \
             signature_type, content_type, size, object_key) \
             SELECT v.id, finished.id, v.position, v.file_type, v.name_rus, v.name_eng, v.file_name, \
             v.signature_type, v.content_type, v.size, v.object_key FROM finished, \
             UNNEST($6::uuid[], $7::int4[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], \
             $13::text[], $14::int8[], $15::text[]) AS v (id, position, file_type, name_rus, name_eng, file_name, \
             signature_type, content_type, size, object_key)) \
             SELECT count(*) FROM finished",
        )
        .bind(id.as_uuid())
        .bind(at(lease_until))
        .bind(status.as_str())
        .bind(error)
        .bind(at(now))
        .bind(files.iter().map(|f| f.id.as_uuid()).collect::<Vec<_>>())
        .bind((0..files.len()).map(|p| i32::try_from(p).unwrap_or(i32::MAX)).collect::<Vec<_>>())
        .bind(files.iter().map(|f| f.file_type.as_str()).collect::<Vec<_>>())
        .bind(files.iter().map(|f| f.name_rus.as_str()).collect::<Vec<_>>())
        .bind(files.iter().map(|f| f.name_eng.as_str()).collect::<Vec<_>>())
        .bind(files.iter().map(|f| f.file_name.as_str()).collect::<Vec<_>>())
        .bind(files.iter().map(|f| f.signature_type.as_str()).collect::<Vec<_>>())
        .bind(files.iter().map(|f| f.content_type.as_str()).collect::<Vec<_>>())
        .bind(files.iter().map(|f| i64::try_from(f.size).unwrap_or(i64::MAX)).collect::<Vec<_>>())
        .bind(files.iter().map(|f| f.object_key.as_str()).collect::<Vec<_>>())
        .fetch_one(&mut *self.conn().await?)
        .await
        .map_err(storage_error("report file"))?;
        Ok(done == 1)
    }

    async fn find_report_file(&self, id: ReportFileId) -> Result<Option<(ReportFile, String)>> {
        let row = sqlx::query(
            "SELECT f.*, t.cnum FROM report_files f JOIN report_tasks t ON t.id = f.task_id WHERE f.id = $1",
        )
        .bind(id.as_uuid())
        .fetch_optional(&mut *self.conn().await?)
        .await
        .map_err(storage_error(WHAT))?;
        row.as_ref().map(|row| Ok((file_from(row)?, get(row, "cnum")?))).transpose()
    }
}
