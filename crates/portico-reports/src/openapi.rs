//! The brokerage report API's OpenAPI document (1.0.0), made from the
//! handlers' own annotations and answer types.

use portico_api::openapi::TokenPairSecurity;
use utoipa::OpenApi;
use utoipa::openapi::path::{ParameterIn, PathItem};
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::{Paths, Required};

use crate::error::ErrorResponse;
use crate::tasks::ReportTaskCreateRequest;
use crate::views::{FileTypeView, FileView, SignatureView, TaskView, TypeRef, TypeView};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Portico brokerage reports",
        version = "1.0.0",
        description = "Report tasks, their generation and the download of their files (spec part B)."
    ),
    paths(
        crate::tasks::create,
        crate::tasks::list,
        crate::tasks::get_one,
        crate::types::list,
        crate::download::download
    ),
    components(schemas(
        TaskView,
        FileView,
        SignatureView,
        TypeRef,
        TypeView,
        FileTypeView,
        ReportTaskCreateRequest,
        ErrorResponse
    )),
    modifiers(&TokenPairSecurity),
    security(("accessToken" = [], "idToken" = [])),
    tags((name = "reports", description = "Brokerage reports"))
)]
pub struct ReportsApi;

/// The same five operations for the bank's own channels, under
/// `/internal/v1/reports/...`, made from the public document: the internal
/// token instead of the token pair, `cnum` required, tasks sourced
/// `ONLINE_BANK`, and operation ids prefixed `bank` (`bankCreateReportTask`).
pub fn bank_channel() -> utoipa::openapi::OpenApi {
    let public = ReportsApi::openapi();
    let mut paths = Paths::new();
    for (path, item) in public.paths.paths {
        let mut item: PathItem = item;
        for operation in [&mut item.get, &mut item.post].into_iter().flatten() {
            if let Some(id) = &operation.operation_id {
                let mut chars = id.chars();
                let capitalized: String =
                    chars.next().map(|c| c.to_ascii_uppercase()).into_iter().chain(chars).collect();
                operation.operation_id = Some(format!("bank{capitalized}"));
            }
            operation.tags = Some(vec!["bank reports".to_owned()]);
            operation.security = Some(vec![SecurityRequirement::new("internalToken", Vec::<String>::new())]);
            // The bank names the company where it creates or lists tasks; a
            // look-up by id, or the list of types, needs none (`cnum` then
            // only narrows the look-up to that company).
            let names_company =
                matches!(operation.operation_id.as_deref(), Some("bankCreateReportTask" | "bankGetReportTasks"));
            for parameter in operation.parameters.iter_mut().flatten() {
                if parameter.name == "cnum" && parameter.parameter_in == ParameterIn::Query {
                    if names_company {
                        parameter.required = Required::True;
                        parameter.description =
                            Some("The company the bank acts for; its users see the task.".to_owned());
                    } else {
                        parameter.required = Required::False;
                        parameter.description =
                            Some("Optional: when given, the task or file must belong to this company.".to_owned());
                    }
                }
            }
            let what = "The bank's own channel (internal token): tasks are sourced `ONLINE_BANK`.";
            operation.description = Some(match operation.description.take() {
                Some(description) => format!("{what}\n\n{description}"),
                None => what.to_owned(),
            });
        }
        paths.paths.insert(format!("/internal{path}"), item);
    }
    let mut tag = utoipa::openapi::tag::Tag::new("bank reports");
    tag.description = Some("The report operations for the bank's own channels".to_owned());
    let mut document = utoipa::openapi::OpenApiBuilder::new().paths(paths).tags(Some([tag])).build();
    document.components = public.components;
    if let Some(components) = document.components.as_mut() {
        components.security_schemes.clear();
    }
    document
}

/// The brokerage data intake: for the bank's systems (internal token) and
/// for operators (admin token).
#[derive(OpenApi)]
#[openapi(
    paths(crate::brokerage::submit_bank, crate::brokerage::submit_admin, crate::brokerage::list),
    tags((name = "brokerage data", description = "The data brokerage reports are made from"))
)]
pub struct BrokerageIntakeApi;

/// The report tasks' admin API (admin token).
#[derive(OpenApi)]
#[openapi(
    paths(crate::admin::list, crate::admin::retry),
    tags((name = "report tasks", description = "Report tasks of any company, and retrying failed ones"))
)]
pub struct ReportsAdminApi;
