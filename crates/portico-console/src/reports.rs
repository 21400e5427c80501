//! `/console/reports` (admin): a company's report tasks (by status, a page
//! at a time) and the retry of a failed one.

use askama::Template;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use portico_admin::ServiceError;
use portico_model::reports::{ReportTask, TaskStatus};
use portico_reports::admin::RetryError;
use portico_storage::ReportTaskFilter;

use serde::Deserialize;

use crate::ConsoleState;
use crate::forms::{self, NoFields};
use crate::page::{self, Layout, Refusal, Segments, done, render};
use crate::session::AdminOperator;

/// Tasks per page.
const PAGE: u32 = 25;

#[derive(Template)]
#[template(path = "tasks.html")]
struct TasksPage {
    l: Layout,
    cnum: String,
    status: String,
    tasks: Vec<ReportTask>,
    next: Option<String>,
    problem: Option<&'static str>,
}

impl TasksPage {
    fn period(task: &ReportTask) -> String {
        format!("{} — {}", task.period_from, task.period_to)
    }
}

/// The task list's query.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct TaskSearch {
    pub done: Option<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub cnum: Option<String>,
    pub status: Option<String>,
    /// Tasks to skip, from 0.
    pub offset: Option<String>,
}

/// `GET /console/reports?cnum=&status=&offset=`.
pub async fn tasks(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    AdminOperator(operator): AdminOperator,
) -> Response {
    let here = page::here("/console/reports", raw.as_deref());
    let query: TaskSearch = page::query(raw.as_deref());
    let l = Layout::new(&headers, &operator, "reports", &here).with_notice(query.done.as_deref());
    let cnum = query.cnum.unwrap_or_default();
    let status = query.status.as_deref().and_then(TaskStatus::parse);
    let offset: u32 = query.offset.and_then(|o| o.parse().ok()).filter(|o| *o <= 100_000).unwrap_or(0);
    let mut problem = None;
    let mut tasks = Vec::new();
    if !cnum.is_empty() {
        match portico_reports::access::parse_cnum(&cnum) {
            Ok(cnum) => {
                let filter =
                    ReportTaskFilter { cnums: vec![cnum], status, offset, limit: PAGE + 1, ..Default::default() };
                match console.reports.store.list_report_tasks(&filter).await {
                    Ok(found) => tasks = found,
                    Err(error) => return page::storage_error(l, &error),
                }
            }
            Err(_) => problem = Some("reports.bad_cnum"),
        }
    }
    let status = status.map(|s| s.as_str().to_owned()).unwrap_or_default();
    let next = (tasks.len() > PAGE as usize).then(|| {
        tasks.truncate(PAGE as usize);
        let mut next = form_urlencoded::Serializer::new(String::new());
        next.append_pair("cnum", &cnum);
        if !status.is_empty() {
            next.append_pair("status", &status);
        }
        format!("/console/reports?{}", next.append_pair("offset", &(offset + PAGE).to_string()).finish())
    });
    render(StatusCode::OK, &TasksPage { l, cnum, status, tasks, next, problem })
}

/// `POST /console/reports/{id}/retry`: a new task with the failed one's
/// request.
pub async fn retry(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    Segments(id): Segments<String>,
    body: Body,
) -> Result<Response, Refusal> {
    let action = page::Action {
        admin: true,
        section: "reports",
        here: "/console/reports".into(),
        question: "confirm.retry",
        button: "task.retry",
        path: format!("/console/reports/{id}/retry"),
    };
    let missing = || ServiceError::NotFound("task_not_found", "there is no report task with this id".into());
    let task_id = id.parse::<portico_model::ids::ReportTaskId>().ok();
    page::confirmed(
        &console,
        &headers,
        body,
        action,
        async |_| {
            let task =
                console.reports.store.find_report_task(task_id.ok_or_else(missing)?).await?.ok_or_else(missing)?;
            Ok(format!("{} · {} · {}", task.id, task.cnum, task.report_type.as_str()))
        },
        async |operator, _: &NoFields| match portico_reports::admin::retry_task(
            &console.reports,
            &operator.admin.actor,
            task_id.ok_or_else(missing)?,
        )
        .await
        {
            Ok(task) => Ok(done(&format!("/console/reports?cnum={}", task.cnum), "retried")),
            Err(RetryError::NotFound) => Err(missing()),
            Err(RetryError::NotFailed(status)) => Err(ServiceError::Conflict(
                "task_not_failed",
                format!("the task is {}; only a FAILED task is retried", status.as_str()),
            )),
            Err(RetryError::Storage(error)) => Err(error.into()),
        },
    )
    .await
}
