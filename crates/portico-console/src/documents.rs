//! `/console/permissions` and `/console/brokerage` (admin): the data that
//! is loaded as whole documents. The permission model: its revision and
//! size, the current document to download, and a new one to check (a dry
//! run) or merge in. Brokerage data: the agreements held, and a document
//! to load (each agreement in it replaced whole). Both all or nothing, the
//! same operations as the admin API's.

use askama::Template;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use portico_admin::ServiceError;
use portico_api::{ApiError, Problem};
use portico_permissions::service::{ApplyError, ApplySummary, read_document};

use serde::Deserialize;

use crate::page::{self, Layout, Refusal, done, render};
use crate::session::AdminOperator;
use crate::{Console, ConsoleState};

/// The largest document form the console reads; larger documents go
/// through the admin API or the CLI.
const MAX_DOCUMENT_FORM: usize = 16 * 1024 * 1024;

#[derive(Template)]
#[template(path = "permissions.html")]
struct PermissionsPage {
    l: Layout,
    revision: i64,
    current: ApplySummary,
    /// A dry run's answer: what the document would hold.
    checked: Option<ApplySummary>,
    problems: Vec<(String, String)>,
    document: String,
}

/// The page of the permission model, with what a check found.
async fn permissions_page(
    console: &Console,
    l: Layout,
    checked: Option<ApplySummary>,
    problems: Vec<(String, String)>,
    document: String,
) -> Response {
    match console.permissions.model().await {
        Ok(model) => {
            let current = ApplySummary {
                revision: model.revision,
                companies: model.companies.len(),
                catalog: model.catalog.len(),
                roles: model.roles.len(),
                employees: model.employees.len(),
            };
            let status = if problems.is_empty() { StatusCode::OK } else { StatusCode::BAD_REQUEST };
            let page = PermissionsPage { l, revision: model.revision, current, checked, problems, document };
            render(status, &page)
        }
        Err(error) => page::storage_error(l, &error),
    }
}

/// `GET /console/permissions`.
pub async fn permissions(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    AdminOperator(operator): AdminOperator,
) -> Response {
    let query: page::Notice = page::query(raw.as_deref());
    let l = Layout::new(&headers, &operator, "permissions", "/console/permissions").with_notice(query.done.as_deref());
    permissions_page(&console, l, None, Vec::new(), String::new()).await
}

/// `GET /console/permissions/document`: the whole model as JSON, to save.
pub async fn permissions_document(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    _: AdminOperator,
) -> Result<Response, Refusal> {
    let model = console.permissions.model().await.map_err(|_| Refusal::unavailable(&headers))?;
    let json = serde_json::to_string_pretty(&model.to_document()).unwrap_or_default();
    let mut response = json.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let disposition = format!("attachment; filename=\"permission-model-{}.json\"", model.revision);
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(page::secure(response))
}

/// A document's form: the document as typed, and (for permissions) whether
/// only to check it (`action=check`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct DocumentFields {
    pub document: Option<String>,
    pub action: Option<String>,
}

/// `POST /console/permissions`: `document` (YAML, or JSON when it starts
/// with `{`) checked (`action=check`) or merged in, after a confirmation.
pub async fn apply_permissions(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Refusal> {
    let (fields, form, operator): (DocumentFields, _, _) =
        console.read_form(&headers, body, "/console/permissions", true, MAX_DOCUMENT_FORM).await?;
    let l = Layout::new(&headers, &operator, "permissions", "/console/permissions");
    let text = fields.document.unwrap_or_default();
    let yaml = !text.trim_start().starts_with('{');
    let doc = match read_document(text.clone(), yaml).await {
        Ok(doc) => doc,
        Err(message) => return Ok(permissions_page(&console, l, None, vec![(String::new(), message)], text).await),
    };
    let problems = |e: ApplyError| match e {
        ApplyError::Invalid(problems) => {
            let problems = problems.into_iter().map(|p| Problem::new(p.place, p.message)).collect();
            Ok(Problem::listed(problems).into_iter().map(|p| (p.place, p.message)).collect())
        }
        ApplyError::Storage(error) => Err(error),
    };
    if fields.action.as_deref() == Some("check") {
        return Ok(match console.permissions.check(&doc).await.map_err(problems) {
            Ok(summary) => permissions_page(&console, l, Some(summary), Vec::new(), text).await,
            Err(Ok(found)) => permissions_page(&console, l, None, found, text).await,
            Err(Err(error)) => page::storage_error(l, &error),
        });
    }
    if !form.confirmed() {
        let subject = format!(
            "{} companies, {} catalog entries, {} roles, {} employees",
            doc.companies.len(),
            doc.catalog.len(),
            doc.roles.len(),
            doc.employees.len()
        );
        return Ok(page::confirm(
            l,
            &form,
            "confirm.permissions",
            subject,
            "/console/permissions",
            "permissions.apply",
        ));
    }
    let store = console.identity.store.as_ref();
    let clock = console.identity.clock.as_ref();
    Ok(
        match portico_permissions::admin::apply_by(&console.permissions, store, clock, &operator.admin.actor, &doc)
            .await
            .map_err(problems)
        {
            Ok(_) => crate::session::see_other(&done("/console/permissions", "applied")),
            Err(Ok(found)) => permissions_page(&console, l, None, found, text).await,
            Err(Err(error)) => page::storage_error(l, &error),
        },
    )
}

#[derive(Template)]
#[template(path = "brokerage.html")]
struct BrokeragePage {
    l: Layout,
    agreements: Vec<(String, String)>,
    /// The next page's address.
    next: Option<String>,
}

/// `GET /console/brokerage`: the agreements held, by number.
pub async fn brokerage(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    AdminOperator(operator): AdminOperator,
) -> Response {
    let here = page::here("/console/brokerage", raw.as_deref());
    let query: page::ListQuery = page::query(raw.as_deref());
    let l = Layout::new(&headers, &operator, "brokerage", &here).with_notice(query.done.as_deref());
    match console.reports.store.list_agreements(query.page()).await {
        Ok(agreements) => {
            let (agreements, next) = page::list_page(agreements, "/console/brokerage", |(number, _)| number.as_str());
            render(StatusCode::OK, &BrokeragePage { l, agreements, next })
        }
        Err(error) => page::storage_error(l, &error),
    }
}

/// `POST /console/brokerage`: a JSON document of brokerage data, loaded
/// after a confirmation.
pub async fn load_brokerage(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Refusal> {
    let (fields, form, operator): (DocumentFields, _, _) =
        console.read_form(&headers, body, "/console/brokerage", true, MAX_DOCUMENT_FORM).await?;
    let l = Layout::new(&headers, &operator, "brokerage", "/console/brokerage");
    let text = fields.document.unwrap_or_default();
    if !form.confirmed() {
        let subject = format!("{} bytes", text.len());
        return Ok(page::confirm(l, &form, "confirm.brokerage", subject, "/console/brokerage", "brokerage.load"));
    }
    Ok(match portico_reports::brokerage::load_by(&console.reports, &operator.admin.actor, text.as_bytes()).await {
        Ok(_) => crate::session::see_other(&done("/console/brokerage", "loaded")),
        Err(error) => {
            let status = error.status();
            let error = match error {
                // Every problem: the page lists them as it lists the service's.
                ApiError::Invalid { problems, .. } if !problems.is_empty() => ServiceError::Invalid(problems),
                error if status == StatusCode::BAD_REQUEST => {
                    ServiceError::Invalid(vec![Problem::new("", error.body().message)])
                }
                error => ServiceError::Storage(portico_storage::StorageError::Unavailable(error.body().message)),
            };
            page::service_error(l, error, "/console/brokerage")
        }
    })
}
