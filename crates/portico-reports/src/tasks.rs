//! The task operations: `POST /v1/reports/tasks` (createReportTask),
//! `GET /v1/reports/tasks` (getReportTasks), `GET /v1/reports/tasks/{taskId}`
//! (getReportTask).
//!
//! Every problem of a request is reported at once, each under its field's
//! name in `errors`, and nothing is created.

use std::collections::BTreeMap;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use portico_model::form::{Form, Param, Problem};
use portico_model::ids::ReportTaskId;
use portico_model::reports::{FileType, MAX_PERIOD_DAYS, ReportTask, ReportType, Source, TaskStatus};
use portico_storage::{ReportTaskFilter, Reuse};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use time::Date;
use uuid::Uuid;

use crate::ReportsState;
use crate::access::{Action, Caller};
use crate::error::{Errors, NotFound, ReportError};
use crate::views::TaskView;

/// Default and largest page size of the task list.
pub const DEFAULT_SIZE: u32 = 10;
pub const MAX_SIZE: u32 = 100;

/// Reads a query of the report API by the one reader
/// ([`portico_model::form`]): every parameter the query type `T` does not
/// know, and every repeated one, is refused at once; then each parameter
/// keeps its reading.
///
/// # Errors
/// `VALIDATION_ERROR` naming each stray parameter.
pub fn read_query<T: DeserializeOwned + Default>(query: Option<&str>) -> Result<T, ReportError> {
    let form = Form::parse(query.unwrap_or_default().as_bytes());
    let strays: BTreeMap<String, String> = form
        .strays::<T>()
        .into_iter()
        .map(|stray| {
            let why = if stray.problem == Problem::Unknown { "unknown parameter" } else { "given more than once" };
            (stray.field, why.to_owned())
        })
        .collect();
    if !strays.is_empty() {
        return Err(ReportError::Validation(strays));
    }
    // A query type's fields are `Param`s, which hold any reading.
    Ok(form.read_each().unwrap_or_default())
}

/// A query parameter as this API reads it: `Ok(None)` when absent; given,
/// its text (an empty value included: each parameter says what it takes);
/// its problem for a value with a NUL character, which is no value of any.
///
/// # Errors
/// The parameter's problem.
pub fn text(param: &Param<String>) -> Result<Option<&str>, &Problem> {
    match param {
        Param::Absent => Ok(None),
        Param::Empty => Ok(Some("")),
        Param::Given(text) => Ok(Some(text)),
        Param::Refused(problem) => Err(problem),
    }
}

/// `YYYY-MM-DD`.
pub fn parse_date(text: &str) -> Option<Date> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    Date::parse(text, format).ok().filter(|_| text.len() == 10)
}

/// A task id from the path.
///
/// # Errors
/// `VALIDATION_ERROR` naming `parameter`.
pub fn parse_id(parameter: &str, text: &str) -> Result<Uuid, ReportError> {
    Uuid::parse_str(text)
        .ok()
        .filter(|_| text.len() == 36)
        .ok_or_else(|| ReportError::field(parameter, "a UUID such as 0192f5e4-8c7a-7cc1-9a4e-3b1d2c5f6a70"))
}

/// What a look-up by id reads from the request: the id in the path
/// (`parameter` names it; a segment that is not UTF-8 is no id) and the
/// optional `cnum`, the only query parameter it takes.
///
/// # Errors
/// `VALIDATION_ERROR`.
pub fn by_id<Id: From<Uuid>>(
    query: Option<&str>,
    parameter: &str,
    raw_id: Result<Path<String>, PathRejection>,
) -> Result<(Id, Option<String>), ReportError> {
    let query: Cnum = read_query(query)?;
    let raw_id = raw_id.map(|Path(id)| id).unwrap_or_default();
    let id = parse_id(parameter, &raw_id)?;
    let cnum = crate::access::given_cnum(&query.cnum)?;
    Ok((id.into(), cnum))
}

/// The body of `createReportTask`. The handler reads it field by field so
/// that every problem is named at once; this type describes it.
#[derive(Debug, utoipa::ToSchema)]
#[schema(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct ReportTaskCreateRequest {
    pub report_type: portico_model::reports::ReportType,
    #[schema(min_length = 1, max_length = 64, example = "БД-0001")]
    pub agreement_number: String,
    /// Required when the type's `isUseAccountParameter` is true.
    #[schema(pattern = "^[0-9]{20}$", example = "40702810900000000001")]
    pub account: Option<String>,
    #[schema(format = Date, example = "2026-01-01")]
    pub from_date: String,
    /// On or after `fromDate`; the period covers at most 366 days.
    #[schema(format = Date, example = "2026-03-31")]
    pub to_date: String,
    /// False (the default): an earlier task for the same report is returned
    /// instead of a new one; true: generated anew.
    pub handle_if_exists: Option<bool>,
    /// Codes from `allowedFileTypes`, each once; absent or empty means `defaultFileTypes`.
    pub file_types: Option<Vec<portico_model::reports::FileType>>,
}

/// Creates a report task (or, with `handleIfExists` false, returns the
/// earlier one for the same report).
#[utoipa::path(
    post,
    path = "/v1/reports/tasks",
    operation_id = "createReportTask",
    tag = "reports",
    params(Cnum),
    request_body = ReportTaskCreateRequest,
    responses(
        (status = 200, description = "The task (status `NEW`, or the earlier one).", body = TaskView),
        (status = 429, description = "`TOO_MANY_TASKS`: the company has `reports.max_unfinished_per_company` tasks \
                                      not finished yet; nothing was stored.", body = crate::error::ErrorResponse,
         headers(("Retry-After" = u32, description = "Seconds to wait."))),
        Errors
    )
)]
pub async fn create(
    State(api): State<ReportsState>,
    caller: Caller,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Result<Json<TaskView>, ReportError> {
    let query: Cnum = read_query(query.as_deref())?;
    let access = api.access(caller, &query.cnum, Action::Create).await?;
    let request = CreateRequest::parse(&body)?;
    let agreement = api.store.find_agreement(&request.agreement_number).await?;
    let mut errors = BTreeMap::new();
    match &agreement {
        Some(agreement) if agreement.cnum == access.cnum => {
            if let Some(account) = &request.account
                && agreement.account(account).is_none()
            {
                errors.insert("account".into(), "no such account in this agreement".into());
            }
        }
        _ => {
            errors.insert("agreementNumber".into(), "no such brokerage agreement in this company".into());
        }
    }
    if !errors.is_empty() {
        return Err(ReportError::Validation(errors));
    }
    let now = api.clock.now();
    let task = ReportTask {
        id: ReportTaskId::now_v7(),
        cnum: access.cnum,
        report_type: request.report_type,
        agreement_number: request.agreement_number,
        account: request.account,
        period_from: request.from,
        period_to: request.to,
        handle_if_exists: request.handle_if_exists,
        file_types: request.file_types,
        status: TaskStatus::New,
        source: match access.caller {
            Caller::User(_) => Source::PublicApiGateway,
            Caller::Bank => Source::OnlineBank,
        },
        error: None,
        created_by: access.caller.user(),
        attempts: 0,
        lease_until: None,
        created_at: now,
        updated_at: now,
        files: Vec::new(),
        trace_parent: portico_storage::trace::current(),
    };
    let (task, created) = api
        .store
        .create_report_task_within(
            &task,
            if task.handle_if_exists { Reuse::Never } else { Reuse::SameRequest },
            api.max_unfinished,
        )
        .await?
        .ok_or(ReportError::TooManyTasks(api.max_unfinished))?;
    if created {
        tracing::info!(task = %task.id, report = task.report_type.as_str(), "report task created");
        api.queued.notify_one();
    }
    Ok(Json(TaskView::from(&task)))
}

/// The fields of `ReportTaskCreateRequest` the handler reads; a test holds
/// them to the documented type's.
const CREATE_FIELDS: [&str; 7] =
    ["reportType", "agreementNumber", "account", "fromDate", "toDate", "handleIfExists", "fileTypes"];

/// A checked `ReportTaskCreateRequest`.
#[derive(Debug)]
struct CreateRequest {
    report_type: ReportType,
    agreement_number: String,
    account: Option<String>,
    from: Date,
    to: Date,
    handle_if_exists: bool,
    file_types: Vec<FileType>,
}

impl CreateRequest {
    fn parse(body: &[u8]) -> Result<Self, ReportError> {
        let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(body) else {
            return Err(ReportError::field("body", "a JSON object (ReportTaskCreateRequest)"));
        };
        let mut errors = BTreeMap::new();
        for name in fields.keys() {
            if !CREATE_FIELDS.contains(&name.as_str()) {
                errors.insert(name.clone(), "unknown field".to_owned());
            }
        }
        let text = |name: &str, errors: &mut BTreeMap<String, String>| -> Option<String> {
            match fields.get(name) {
                None | Some(Value::Null) => {
                    errors.insert(name.into(), "required".into());
                    None
                }
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => {
                    errors.insert(name.into(), "must be a string".into());
                    None
                }
            }
        };
        let report_type = text("reportType", &mut errors).and_then(|t| {
            let parsed = ReportType::parse(&t);
            if parsed.is_none() {
                errors.insert("reportType".into(), "one of STATEMENT_FOR_1C, BROKERAGE_REPORT".into());
            }
            parsed
        });
        let agreement_number = text("agreementNumber", &mut errors).and_then(|n| {
            let n = n.trim().to_owned();
            if n.is_empty() || n.chars().count() > 64 || n.chars().any(char::is_control) {
                errors.insert("agreementNumber".into(), "1 to 64 printable characters".into());
                return None;
            }
            Some(n)
        });
        let account = match fields.get("account") {
            None | Some(Value::Null) => None,
            Some(Value::String(a)) if a.len() == 20 && a.bytes().all(|b| b.is_ascii_digit()) => Some(a.clone()),
            Some(_) => {
                errors.insert("account".into(), "an account number: 20 digits".into());
                None
            }
        };
        if account.is_none() && !errors.contains_key("account") && report_type.is_some_and(ReportType::uses_account) {
            errors.insert("account".into(), "required for this report type".into());
        }
        let mut date = |name: &str| {
            text(name, &mut errors).and_then(|d| {
                let parsed = parse_date(&d);
                if parsed.is_none() {
                    errors.insert(name.into(), "a date: YYYY-MM-DD".into());
                }
                parsed
            })
        };
        let from = date("fromDate");
        let to = date("toDate");
        if let (Some(from), Some(to)) = (from, to) {
            if to < from {
                errors.insert("toDate".into(), "must not be before fromDate".into());
            } else if (to - from).whole_days() >= MAX_PERIOD_DAYS {
                errors.insert("toDate".into(), format!("the period may cover at most {MAX_PERIOD_DAYS} days"));
            }
        }
        let handle_if_exists = match fields.get("handleIfExists") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                errors.insert("handleIfExists".into(), "must be true or false".into());
                false
            }
        };
        let file_types = file_types(&fields, report_type, &mut errors);
        match (report_type, agreement_number, from, to) {
            (Some(report_type), Some(agreement_number), Some(from), Some(to)) if errors.is_empty() => {
                Ok(Self { report_type, agreement_number, account, from, to, handle_if_exists, file_types })
            }
            _ => Err(ReportError::Validation(errors)),
        }
    }
}

/// `fileTypes`: codes the report type allows, each once; absent or empty
/// means the type's defaults.
fn file_types(
    fields: &Map<String, Value>,
    report_type: Option<ReportType>,
    errors: &mut BTreeMap<String, String>,
) -> Vec<FileType> {
    let defaults = || report_type.map(|t| t.default_file_types().to_vec()).unwrap_or_default();
    let items = match fields.get("fileTypes") {
        None | Some(Value::Null) => return defaults(),
        Some(Value::Array(items)) if items.is_empty() => return defaults(),
        Some(Value::Array(items)) => items,
        Some(_) => {
            errors.insert("fileTypes".into(), "an array of file type codes".into());
            return Vec::new();
        }
    };
    let mut types = Vec::new();
    for item in items {
        let parsed = item.as_str().and_then(FileType::parse);
        match (parsed, report_type) {
            (None, _) => {
                errors
                    .insert("fileTypes".into(), "codes among SIMPLE_DOCUMENTARY, PRINTED_FORM, QES, FACSIMILE".into());
            }
            (Some(t), _) if types.contains(&t) => {
                errors.insert("fileTypes".into(), format!("{} is given twice", t.as_str()));
            }
            (Some(t), Some(report)) if !report.allowed_file_types().contains(&t) => {
                errors.insert("fileTypes".into(), format!("{} is not allowed for {}", t.as_str(), report.as_str()));
            }
            (Some(t), _) => types.push(t),
        }
    }
    types
}

/// The company's tasks, newest first.
#[utoipa::path(
    get,
    path = "/v1/reports/tasks",
    operation_id = "getReportTasks",
    tag = "reports",
    params(TaskListQuery),
    responses((status = 200, description = "A page of tasks.", body = Vec<TaskView>), Errors)
)]
pub async fn list(
    State(api): State<ReportsState>,
    caller: Caller,
    RawQuery(query): RawQuery,
) -> Result<Json<Vec<TaskView>>, ReportError> {
    let query: TaskListQuery = read_query(query.as_deref())?;
    let access = api.access(caller, &query.cnum, Action::View).await?;
    let mut errors = BTreeMap::new();
    let mut filter = ReportTaskFilter { cnums: vec![access.cnum], limit: DEFAULT_SIZE, ..Default::default() };
    let e = &mut errors;
    filter.report_type =
        field(e, "reportType", &query.report_type, "one of STATEMENT_FOR_1C, BROKERAGE_REPORT", ReportType::parse);
    filter.status = field(e, "status", &query.status, "one of NEW, IN_PROGRESS, FAILED, DONE", TaskStatus::parse);
    let agreement = |n: &str| Some(n.to_owned());
    filter.agreement_number =
        field(e, "agreementNumber", &query.agreement_number, "text without a NUL character", agreement);
    let account = |a: &str| (a.len() == 20 && a.bytes().all(|b| b.is_ascii_digit())).then(|| a.to_owned());
    filter.account = field(e, "account", &query.account, "an account number: 20 digits", account);
    filter.from = field(e, "fromDate", &query.from_date, "a date: YYYY-MM-DD", parse_date);
    filter.to = field(e, "toDate", &query.to_date, "a date: YYYY-MM-DD", parse_date);
    let page = |p: &str| p.parse::<u32>().ok().filter(|p| *p <= 100_000);
    let page = field(e, "page", &query.page, "an integer from 0 (the first page)", page);
    let size = |s: &str| s.parse::<u32>().ok().filter(|s| (1..=MAX_SIZE).contains(s));
    let size = field(e, "size", &query.size, &format!("an integer from 1 to {MAX_SIZE}"), size);
    let page = page.unwrap_or(0);
    filter.limit = size.unwrap_or(DEFAULT_SIZE);
    if !errors.is_empty() {
        return Err(ReportError::Validation(errors));
    }
    filter.offset = page.saturating_mul(filter.limit);
    let tasks = api.store.list_report_tasks(&filter).await?;
    Ok(Json(tasks.iter().map(TaskView::from).collect()))
}

/// One parameter of a filter: `None` when absent; given, `read` must take
/// it, else `why` is recorded under `name`.
fn field<T>(
    errors: &mut BTreeMap<String, String>,
    name: &str,
    param: &Param<String>,
    why: &str,
    read: impl Fn(&str) -> Option<T>,
) -> Option<T> {
    match text(param) {
        Ok(None) => None,
        Ok(Some(text)) if let Some(value) = read(text) => Some(value),
        _ => {
            errors.insert(name.to_owned(), why.to_owned());
            None
        }
    }
}

/// One task.
#[utoipa::path(
    get,
    path = "/v1/reports/tasks/{taskId}",
    operation_id = "getReportTask",
    tag = "reports",
    params(("taskId" = uuid::Uuid, Path, description = "The task's id."), Cnum),
    responses((status = 200, description = "The task.", body = TaskView), Errors, NotFound)
)]
pub async fn get_one(
    State(api): State<ReportsState>,
    caller: Caller,
    task_id: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Result<Json<TaskView>, ReportError> {
    let (id, cnum): (ReportTaskId, _) = by_id(query.as_deref(), "taskId", task_id)?;
    let task = api.store.find_report_task(id).await?;
    let Some(task) = task.filter(|t| cnum.as_ref().is_none_or(|c| *c == t.cnum)) else {
        return Err(ReportError::NotFound(format!("there is no report task {id}")));
    };
    if !api.may(caller, &task.cnum, Action::View).await? {
        return Err(ReportError::Forbidden("the user may not view reports of this task's company".into()));
    }
    Ok(Json(TaskView::from(&task)))
}

/// `cnum`: the client organization; optional when the user holds report
/// rights in one company only. The whole query of the operations on one
/// task or file, and of the type list.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(default)]
#[into_params(parameter_in = Query)]
pub struct Cnum {
    /// The client organization id (1 to 20 digits).
    #[param(value_type = Option<String>, pattern = "^[0-9]{1,20}$", example = "7700000001")]
    pub cnum: Param<String>,
}

/// The query of `getReportTasks`: the company, the filters and paging.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(default, rename_all = "camelCase")]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
pub struct TaskListQuery {
    /// The client organization id (1 to 20 digits).
    #[param(value_type = Option<String>, pattern = "^[0-9]{1,20}$", example = "7700000001")]
    pub cnum: Param<String>,
    #[param(value_type = Option<ReportType>)]
    pub report_type: Param<String>,
    /// Tasks of this agreement (any text without a NUL character).
    #[param(value_type = Option<String>, pattern = "^[^\\x00]*$")]
    pub agreement_number: Param<String>,
    #[param(value_type = Option<String>, pattern = "^[0-9]{20}$")]
    pub account: Param<String>,
    /// Tasks whose period starts on or after this day.
    #[param(value_type = Option<String>, format = Date)]
    pub from_date: Param<String>,
    /// Tasks whose period ends on or before this day.
    #[param(value_type = Option<String>, format = Date)]
    pub to_date: Param<String>,
    #[param(value_type = Option<TaskStatus>)]
    pub status: Param<String>,
    /// The page, from 0.
    #[param(value_type = Option<u32>, minimum = 0, maximum = 100_000, default = 0)]
    pub page: Param<String>,
    /// Tasks per page.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100, default = 10)]
    pub size: Param<String>,
}

#[cfg(test)]
mod tests {
    use utoipa::PartialSchema as _;
    use utoipa::openapi::{RefOr, Schema};

    use super::*;

    #[test]
    fn the_create_request_is_read_by_the_fields_its_document_names() {
        let RefOr::T(Schema::Object(schema)) = ReportTaskCreateRequest::schema() else {
            panic!("ReportTaskCreateRequest is an object");
        };
        let documented: Vec<&str> = schema.properties.keys().map(String::as_str).collect();
        assert_eq!(documented, CREATE_FIELDS);
    }
}
