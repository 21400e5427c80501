//! The report tasks' admin API, for operators (admin token):
//!
//! - `GET /admin/v1/reports/tasks?cnum=&status=&offset=&limit=`: the tasks
//!   of a company, newest first, as the report API shows them;
//! - `POST /admin/v1/reports/tasks/{taskId}/retry`: a `FAILED` task asked
//!   again — a new task with the same request, queued now (the failed one
//!   stays as it was). Recorded in the audit log with the token's name.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use portico_api::error::ErrorBody;
use portico_api::openapi::AdminErrors;
use portico_api::{Admin, ApiError, Params, page_size};
use portico_model::audit::{AuditEvent, AuditKind};
use portico_model::ids::ReportTaskId;
use portico_model::reports::{ReportTask, TaskStatus};
use portico_storage::{ReportTaskFilter, Reuse};
use serde::Deserialize;
use utoipa::IntoParams;
use uuid::Uuid;

use crate::ReportsState;
use crate::views::TaskView;

/// Which tasks to list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TaskSearch {
    /// The company: 1 to 20 digits.
    #[param(pattern = "^[0-9]{1,20}$")]
    pub cnum: String,
    /// `NEW`, `IN_PROGRESS`, `DONE` or `FAILED`.
    #[param(value_type = Option<TaskStatus>)]
    pub status: Option<String>,
    /// Tasks to skip.
    #[param(minimum = 0, maximum = 100_000)]
    pub offset: Option<u32>,
    /// 1 to 200; default 50.
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
}

#[utoipa::path(
    get,
    path = "/admin/v1/reports/tasks",
    operation_id = "listReportTasksAdmin",
    tag = "report tasks",
    params(TaskSearch),
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "The company's tasks, newest first.", body = Vec<TaskView>),
        (status = 400, description = "`bad_request`: a parameter is missing, malformed or unknown.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn list(
    State(api): State<ReportsState>,
    _: Admin,
    Params(search): Params<TaskSearch>,
) -> Result<Json<Vec<TaskView>>, ApiError> {
    let cnum = crate::access::parse_cnum(&search.cnum).map_err(|_| ApiError::bad_request("cnum: 1 to 20 digits"))?;
    let limit = page_size(search.limit)?;
    let status = match search.status.as_deref() {
        None => None,
        Some(status) => Some(
            TaskStatus::parse(status)
                .ok_or_else(|| ApiError::bad_request("status: NEW, IN_PROGRESS, DONE or FAILED"))?,
        ),
    };
    let offset = search.offset.unwrap_or(0);
    if offset > 100_000 {
        return Err(ApiError::bad_request("offset: 0 to 100000"));
    }
    let filter = ReportTaskFilter { cnums: vec![cnum], status, offset, limit, ..Default::default() };
    let tasks =
        api.store.list_report_tasks(&filter).await.map_err(|e| ApiError::storage("listing report tasks", &e))?;
    Ok(Json(tasks.iter().map(TaskView::from).collect()))
}

#[utoipa::path(
    post,
    path = "/admin/v1/reports/tasks/{taskId}/retry",
    operation_id = "retryReportTask",
    tag = "report tasks",
    params(("taskId" = Uuid, Path, description = "The failed task.")),
    security(("adminToken" = [])),
    responses(
        (status = 202, description = "The new task, `NEW`, with the failed one's request.", body = TaskView),
        (status = 404, description = "`task_not_found`.", body = ErrorBody),
        (status = 409, description = "`task_not_failed`: only a `FAILED` task is retried.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn retry(
    State(api): State<ReportsState>,
    admin: Admin,
    id: Result<Path<String>, axum::extract::rejection::PathRejection>,
) -> Result<Response, ApiError> {
    let id = id.map(|Path(id)| id).unwrap_or_default();
    let gone = || ApiError::not_found("task_not_found", "there is no report task with this id");
    let id = ReportTaskId::from(Uuid::parse_str(&id).map_err(|_| gone())?);
    match retry_task(&api, &admin.actor, id).await {
        Ok(task) => Ok((StatusCode::ACCEPTED, Json(TaskView::from(&task))).into_response()),
        Err(RetryError::NotFound) => Err(gone()),
        Err(RetryError::NotFailed(status)) => {
            let message = format!("the task is {}; only a FAILED task is retried", status.as_str());
            Err(ApiError::conflict("task_not_failed", message))
        }
        Err(RetryError::Storage(e)) => Err(ApiError::storage("retrying a report task", &e)),
    }
}

/// Why a report task was not retried.
#[derive(Debug)]
pub enum RetryError {
    NotFound,
    /// Only a `FAILED` task is retried; this one is in the given state.
    NotFailed(TaskStatus),
    Storage(portico_storage::StorageError),
}

/// An operator's retry of the failed task `id`: a new task with its
/// request, queued now and recorded in the audit log with `actor` — or,
/// when a task for the same request was made since the failed one (an
/// earlier retry, one racing this, the broker's own request), that task.
/// The admin API and the console share it.
///
/// # Errors
/// [`RetryError`]: no such task, a task that has not failed, the store.
pub async fn retry_task(
    api: &ReportsState,
    actor: &portico_model::audit::Actor,
    id: ReportTaskId,
) -> Result<ReportTask, RetryError> {
    let failed = api.store.find_report_task(id).await.map_err(RetryError::Storage)?.ok_or(RetryError::NotFound)?;
    if failed.status != TaskStatus::Failed {
        return Err(RetryError::NotFailed(failed.status));
    }
    let now = api.clock.now();
    let again = ReportTask {
        id: ReportTaskId::now_v7(),
        status: TaskStatus::New,
        error: None,
        attempts: 0,
        lease_until: None,
        created_at: now,
        updated_at: now,
        files: Vec::new(),
        trace_parent: portico_storage::trace::current(),
        ..failed
    };
    let reuse = Reuse::SameRequestSince(failed.created_at);
    let (task, new) = api.store.create_report_task(&again, reuse).await.map_err(RetryError::Storage)?;
    if !new {
        return Ok(task);
    }
    api.queued.notify_one();
    tracing::info!(failed = %id, task = %task.id, %actor, "report task retried by an operator");
    let detail = serde_json::json!({ "failed": id, "task": task.id, "cnum": task.cnum });
    let event = AuditEvent::new(now, AuditKind::ReportTaskRetried).by(actor).detail(detail);
    portico_api::audit(api.store.as_ref(), event).await;
    Ok(task)
}
