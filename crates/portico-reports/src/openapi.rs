//! The brokerage report API's OpenAPI document (1.0.0), made from the
//! handlers' own annotations and answer types.

use portico_identity::openapi::TokenPairSecurity;
use utoipa::{OpenApi, ToSchema};

use crate::error::ErrorResponse;
use crate::views::{FileTypeView, FileView, SignatureView, TaskView, TypeRef, TypeView};

/// The body of `createReportTask`. The handler reads it field by field so
/// that every problem is named at once; this type describes it.
#[derive(Debug, ToSchema)]
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
