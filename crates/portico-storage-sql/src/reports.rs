//! [`sql_report_repositories!`]: brokerage agreements, report tasks and files.

/// Implements `BrokerageRepository` and `ReportRepository` for `$store`
/// (see [`sql_repositories!`](crate::sql_repositories) for the fields it
/// needs); `skip_locked` as in [`sql_notify_repositories!`](crate::sql_notify_repositories).
#[macro_export]
macro_rules! sql_report_repositories {
    ($store:ident, $db:ty, skip_locked = $skip_locked:literal) => {
        const _: () = {
            use $crate::deps::async_trait::async_trait;
            use $crate::deps::portico_model::reports::brokerage::Agreement;
            use $crate::deps::portico_model::reports::{
                FileType, ReportFile, ReportTask, ReportType, SignatureType, Source, TaskOutcome, TaskStatus,
            };
            use $crate::deps::portico_storage::{
                BrokerageRepository, ReportRepository, ReportTaskFilter, Result, StorageError,
            };
            use $crate::deps::sqlx::{self, Row};
            use $crate::deps::time::{Date, OffsetDateTime};
            use $crate::deps::uuid::Uuid;
            use $crate::{json, storage_error, timestamp, timestamp_opt, to_json, uuid};

            const ROW: &str = "report row";
            type DbRow = <$db as sqlx::Database>::Row;

            fn get<'r, T: sqlx::Decode<'r, $db> + sqlx::Type<$db>>(row: &'r DbRow, column: &str) -> Result<T> {
                row.try_get(column).map_err(storage_error(ROW))
            }

            fn damaged(what: &str, value: &str) -> StorageError {
                StorageError::Other(format!("damaged report row: {what} {value:?}"))
            }

            fn date(text: &str) -> Result<Date> {
                Date::parse(text, &$crate::deps::time::format_description::well_known::Iso8601::DATE)
                    .map_err(|_| damaged("date", text))
            }

            fn ymd(date: Date) -> String {
                format!("{:04}-{:02}-{:02}", date.year(), u8::from(date.month()), date.day())
            }

            fn task_from(row: &DbRow) -> Result<ReportTask> {
                let text = |c: &str| get::<String>(row, c);
                let report_type = text("report_type")?;
                let status = text("status")?;
                let source = text("source")?;
                let file_types = text("file_types")?;
                let attempts: i32 = get(row, "attempts")?;
                let created_by: Option<String> = get(row, "created_by")?;
                Ok(ReportTask {
                    id: uuid(&text("id")?)?,
                    cnum: text("cnum")?,
                    report_type: ReportType::parse(&report_type).ok_or_else(|| damaged("type", &report_type))?,
                    agreement_number: text("agreement_number")?,
                    account: get(row, "account")?,
                    period_from: date(&text("period_from")?)?,
                    period_to: date(&text("period_to")?)?,
                    handle_if_exists: get(row, "handle_if_exists")?,
                    file_types: file_types
                        .split(',')
                        .filter(|c| !c.is_empty())
                        .map(|c| FileType::parse(c).ok_or_else(|| damaged("file type", c)))
                        .collect::<Result<_>>()?,
                    status: TaskStatus::parse(&status).ok_or_else(|| damaged("status", &status))?,
                    source: Source::parse(&source).ok_or_else(|| damaged("source", &source))?,
                    error: get(row, "error")?,
                    created_by: created_by.as_deref().map(uuid).transpose()?,
                    attempts: attempts.max(0) as u32,
                    lease_until: timestamp_opt(get(row, "lease_until")?)?,
                    created_at: timestamp(get(row, "created_at")?)?,
                    updated_at: timestamp(get(row, "updated_at")?)?,
                    files: Vec::new(),
                })
            }

            fn file_from(row: &DbRow) -> Result<ReportFile> {
                let text = |c: &str| get::<String>(row, c);
                let file_type = text("file_type")?;
                let signature = text("signature_type")?;
                let size: i64 = get(row, "size")?;
                Ok(ReportFile {
                    id: uuid(&text("id")?)?,
                    task_id: uuid(&text("task_id")?)?,
                    file_type: FileType::parse(&file_type).ok_or_else(|| damaged("file type", &file_type))?,
                    name_rus: text("name_rus")?,
                    name_eng: text("name_eng")?,
                    file_name: text("file_name")?,
                    signature_type: SignatureType::parse(&signature).ok_or_else(|| damaged("signature", &signature))?,
                    content_type: text("content_type")?,
                    size: u64::try_from(size).unwrap_or(0),
                    object_key: text("object_key")?,
                })
            }

            impl $store {
                /// `tasks` with their files, in one query.
                async fn with_files(&self, mut tasks: Vec<ReportTask>) -> Result<Vec<ReportTask>> {
                    if tasks.is_empty() {
                        return Ok(tasks);
                    }
                    let places: Vec<String> = (1..=tasks.len()).map(|i| format!("${i}")).collect();
                    let sql = format!(
                        "SELECT * FROM report_files WHERE task_id IN ({}) ORDER BY task_id, position",
                        places.join(", ")
                    );
                    let mut query = sqlx::query(&sql);
                    for task in &tasks {
                        query = query.bind(task.id.to_string());
                    }
                    let files =
                        query.fetch_all(&self.read_pool).await.map_err(storage_error(ROW))?;
                    for row in &files {
                        let file = file_from(row)?;
                        if let Some(task) = tasks.iter_mut().find(|t| t.id == file.task_id) {
                            task.files.push(file);
                        }
                    }
                    Ok(tasks)
                }
            }

            #[async_trait]
            impl BrokerageRepository for $store {
                async fn save_agreements(&self, agreements: &[Agreement], now: OffsetDateTime) -> Result<()> {
                    let mut tx = self.pool.begin().await.map_err(storage_error(ROW))?;
                    for agreement in agreements {
                        sqlx::query(
                            "INSERT INTO brokerage_agreements (number, cnum, data, updated_at) VALUES ($1, $2, $3, $4) \
                             ON CONFLICT (number) DO UPDATE SET cnum = $2, data = $3, updated_at = $4",
                        )
                        .bind(&agreement.number)
                        .bind(&agreement.cnum)
                        .bind(to_json(agreement)?)
                        .bind(now.unix_timestamp())
                        .execute(&mut *tx)
                        .await
                        .map_err(storage_error("agreement"))?;
                    }
                    tx.commit().await.map_err(storage_error(ROW))?;
                    Ok(())
                }

                async fn find_agreement(&self, number: &str) -> Result<Option<Agreement>> {
                    let data: Option<String> =
                        sqlx::query_scalar("SELECT data FROM brokerage_agreements WHERE number = $1")
                            .bind(number)
                            .fetch_optional(&self.read_pool)
                            .await
                            .map_err(storage_error(ROW))?;
                    data.as_deref().map(json).transpose()
                }

                async fn list_agreements(&self) -> Result<Vec<(String, String)>> {
                    let rows = sqlx::query("SELECT number, cnum FROM brokerage_agreements ORDER BY number")
                        .fetch_all(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?;
                    rows.iter().map(|row| Ok((get(row, "number")?, get(row, "cnum")?))).collect()
                }
            }

            #[async_trait]
            impl ReportRepository for $store {
                async fn create_report_task(&self, task: &ReportTask, reuse: bool) -> Result<(ReportTask, bool)> {
                    let file_types: Vec<&str> = task.file_types.iter().map(|f| f.as_str()).collect();
                    let file_types = file_types.join(",");
                    let mut tx = self.pool.begin().await.map_err(storage_error(ROW))?;
                    if reuse {
                        // The same file types in any order: as many of them
                        // (their comma-joined length; each is named once),
                        // and each of this task's among them.
                        let mut sql = String::from(
                            "SELECT * FROM report_tasks WHERE cnum = $1 AND report_type = $2 AND agreement_number = $3 \
                             AND COALESCE(account, '') = $4 AND period_from = $5 AND period_to = $6 \
                             AND length(file_types) = $7",
                        );
                        for n in 0..task.file_types.len() {
                            sql.push_str(&format!(" AND (',' || file_types || ',') LIKE ${}", n + 8));
                        }
                        sql.push_str(" AND status <> 'FAILED' ORDER BY created_at DESC, id DESC LIMIT 1");
                        let mut query = sqlx::query(&sql)
                            .bind(&task.cnum)
                            .bind(task.report_type.as_str())
                            .bind(&task.agreement_number)
                            .bind(task.account.as_deref().unwrap_or(""))
                            .bind(ymd(task.period_from))
                            .bind(ymd(task.period_to))
                            .bind(i32::try_from(file_types.len()).unwrap_or(i32::MAX));
                        for file_type in &task.file_types {
                            query = query.bind(format!("%,{},%", file_type.as_str()));
                        }
                        let existing = query
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(storage_error(ROW))?;
                        if let Some(row) = existing {
                            let found = task_from(&row)?;
                            tx.rollback().await.map_err(storage_error(ROW))?;
                            let mut found = self.with_files(vec![found]).await?;
                            return Ok((found.remove(0), false));
                        }
                    }
                    sqlx::query(
                        "INSERT INTO report_tasks (id, cnum, report_type, agreement_number, account, period_from, \
                         period_to, handle_if_exists, file_types, status, source, error, created_by, attempts, \
                         lease_until, created_at, updated_at) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
                    )
                    .bind(task.id.to_string())
                    .bind(&task.cnum)
                    .bind(task.report_type.as_str())
                    .bind(&task.agreement_number)
                    .bind(&task.account)
                    .bind(ymd(task.period_from))
                    .bind(ymd(task.period_to))
                    .bind(task.handle_if_exists)
                    .bind(&file_types)
                    .bind(task.status.as_str())
                    .bind(task.source.as_str())
                    .bind(&task.error)
                    .bind(task.created_by.map(|u| u.to_string()))
                    .bind(i32::try_from(task.attempts).unwrap_or(i32::MAX))
                    .bind(task.lease_until.map(OffsetDateTime::unix_timestamp))
                    .bind(task.created_at.unix_timestamp())
                    .bind(task.updated_at.unix_timestamp())
                    .execute(&mut *tx)
                    .await
                    .map_err(storage_error("report task"))?;
                    tx.commit().await.map_err(storage_error(ROW))?;
                    Ok((task.clone(), true))
                }

                async fn find_report_task(&self, id: Uuid) -> Result<Option<ReportTask>> {
                    let row = sqlx::query("SELECT * FROM report_tasks WHERE id = $1")
                        .bind(id.to_string())
                        .fetch_optional(&self.read_pool)
                        .await
                        .map_err(storage_error(ROW))?;
                    let Some(row) = row else { return Ok(None) };
                    Ok(self.with_files(vec![task_from(&row)?]).await?.pop())
                }

                async fn list_report_tasks(&self, filter: &ReportTaskFilter) -> Result<Vec<ReportTask>> {
                    if filter.cnums.is_empty() {
                        return Ok(Vec::new());
                    }
                    let cnums: Vec<String> = (0..filter.cnums.len()).map(|i| format!("${}", i + 9)).collect();
                    let sql = format!(
                        "SELECT * FROM report_tasks WHERE cnum IN ({}) \
                         AND ($1 IS NULL OR report_type = $1) AND ($2 IS NULL OR agreement_number = $2) \
                         AND ($3 IS NULL OR account = $3) AND ($4 IS NULL OR period_from >= $4) \
                         AND ($5 IS NULL OR period_to <= $5) AND ($6 IS NULL OR status = $6) \
                         ORDER BY created_at DESC, id DESC LIMIT $7 OFFSET $8",
                        cnums.join(", ")
                    );
                    let mut query = sqlx::query(&sql)
                        .bind(filter.report_type.map(ReportType::as_str))
                        .bind(filter.agreement_number.as_deref())
                        .bind(filter.account.as_deref())
                        .bind(filter.from.map(ymd))
                        .bind(filter.to.map(ymd))
                        .bind(filter.status.map(TaskStatus::as_str))
                        .bind(i64::from(filter.limit))
                        .bind(i64::from(filter.offset));
                    for cnum in &filter.cnums {
                        query = query.bind(cnum);
                    }
                    let rows = query.fetch_all(&self.read_pool).await.map_err(storage_error(ROW))?;
                    let tasks = rows.iter().map(task_from).collect::<Result<Vec<_>>>()?;
                    self.with_files(tasks).await
                }

                async fn claim_report_task(
                    &self,
                    now: OffsetDateTime,
                    lease_until: OffsetDateTime,
                ) -> Result<Option<ReportTask>> {
                    let due = "(status = 'NEW' OR (status = 'IN_PROGRESS' AND lease_until <= $2))";
                    let sql = format!(
                        "WITH candidate AS (SELECT id FROM report_tasks WHERE {due} \
                         ORDER BY created_at, id LIMIT 1{}) \
                         UPDATE report_tasks SET status = 'IN_PROGRESS', lease_until = $1, attempts = attempts + 1, \
                         updated_at = $2 WHERE id IN (SELECT id FROM candidate) AND {due} RETURNING *",
                        $skip_locked
                    );
                    let row = sqlx::query(&sql)
                        .bind(lease_until.unix_timestamp())
                        .bind(now.unix_timestamp())
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(storage_error(ROW))?;
                    row.as_ref().map(task_from).transpose()
                }

                async fn finish_report_task(
                    &self,
                    id: Uuid,
                    lease_until: OffsetDateTime,
                    outcome: &TaskOutcome,
                    now: OffsetDateTime,
                ) -> Result<bool> {
                    let mut tx = self.pool.begin().await.map_err(storage_error(ROW))?;
                    let (status, error) = match outcome {
                        TaskOutcome::Done(_) => (TaskStatus::Done, None),
                        TaskOutcome::Failed(reason) => (TaskStatus::Failed, Some(reason.as_str())),
                    };
                    let done = sqlx::query(
                        "UPDATE report_tasks SET status = $3, error = $4, lease_until = NULL, updated_at = $5 \
                         WHERE id = $1 AND status = 'IN_PROGRESS' AND lease_until = $2",
                    )
                    .bind(id.to_string())
                    .bind(lease_until.unix_timestamp())
                    .bind(status.as_str())
                    .bind(error)
                    .bind(now.unix_timestamp())
                    .execute(&mut *tx)
                    .await
                    .map_err(storage_error(ROW))?;
                    if done.rows_affected() != 1 {
                        tx.rollback().await.map_err(storage_error(ROW))?;
                        return Ok(false);
                    }
                    if let TaskOutcome::Done(files) = outcome {
                        for (position, file) in files.iter().enumerate() {
                            sqlx::query(
                                "INSERT INTO report_files (id, task_id, position, file_type, name_rus, name_eng, \
                                 file_name, signature_type, content_type, size, object_key) \
                                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                            )
                            .bind(file.id.to_string())
                            .bind(id.to_string())
                            .bind(i32::try_from(position).unwrap_or(i32::MAX))
                            .bind(file.file_type.as_str())
                            .bind(&file.name_rus)
                            .bind(&file.name_eng)
                            .bind(&file.file_name)
                            .bind(file.signature_type.as_str())
                            .bind(&file.content_type)
                            .bind(i64::try_from(file.size).unwrap_or(i64::MAX))
                            .bind(&file.object_key)
                            .execute(&mut *tx)
                            .await
                            .map_err(storage_error("report file"))?;
                        }
                    }
                    tx.commit().await.map_err(storage_error(ROW))?;
                    Ok(true)
                }

                async fn find_report_file(&self, id: Uuid) -> Result<Option<(ReportFile, String)>> {
                    let row = sqlx::query(
                        "SELECT f.*, t.cnum FROM report_files f JOIN report_tasks t ON t.id = f.task_id WHERE f.id = $1",
                    )
                    .bind(id.to_string())
                    .fetch_optional(&self.read_pool)
                    .await
                    .map_err(storage_error(ROW))?;
                    row.as_ref().map(|row| Ok((file_from(row)?, get(row, "cnum")?))).transpose()
                }
            }
        };
    };
}
