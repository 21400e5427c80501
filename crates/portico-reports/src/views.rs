//! The JSON the report API answers with: `ReportTask`, `ReportFile`,
//! `ReportTaskType`, exactly as the spec names their fields. These types
//! are also what the published OpenAPI document describes.

use portico_model::reports::{FileType, ReportFile, ReportTask, ReportType, SignatureType, Source, TaskStatus};
use serde::Serialize;
use time::macros::format_description;
use time::{Date, OffsetDateTime, UtcOffset};
use utoipa::ToSchema;
use uuid::Uuid;

/// `2026-11-22`.
pub fn date(date: Date) -> String {
    format!("{:04}-{:02}-{:02}", date.year(), u8::from(date.month()), date.day())
}

/// UTC without an offset: `2026-11-22T13:45:00`.
pub fn date_time(at: OffsetDateTime) -> String {
    at.to_offset(UtcOffset::UTC)
        .format(format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]"))
        .unwrap_or_default()
}

/// A report type with its description: `{type, desc}`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ReportTypeRef)]
pub struct TypeRef {
    #[serde(rename = "type")]
    pub report_type: ReportType,
    #[schema(example = "Выписка по счёту для 1С")]
    pub desc: &'static str,
}

impl From<ReportType> for TypeRef {
    fn from(report_type: ReportType) -> Self {
        Self { report_type, desc: report_type.description() }
    }
}

/// How a file is signed.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = SignatureType)]
pub struct SignatureView {
    pub code: SignatureType,
    pub name_rus: &'static str,
    pub name_eng: &'static str,
}

/// A produced file.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ReportFile)]
pub struct FileView {
    pub id: Uuid,
    pub file_type: FileType,
    pub name_rus: String,
    pub name_eng: String,
    #[schema(example = "Выписка_40702810900000000001_2026-01-01_2026-03-31.txt")]
    pub file_name: Option<String>,
    pub signature_type: SignatureView,
}

impl From<&ReportFile> for FileView {
    fn from(file: &ReportFile) -> Self {
        let (name_rus, name_eng) = file.signature_type.names();
        Self {
            id: file.id.as_uuid(),
            file_type: file.file_type,
            name_rus: file.name_rus.clone(),
            name_eng: file.name_eng.clone(),
            file_name: Some(file.file_name.clone()),
            signature_type: SignatureView { code: file.signature_type, name_rus, name_eng },
        }
    }
}

/// A report task.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ReportTask)]
pub struct TaskView {
    pub id: Uuid,
    pub report_type: TypeRef,
    #[schema(example = "БД-0001")]
    pub agreement_number: String,
    #[schema(example = "40702810900000000001")]
    pub account: Option<String>,
    #[schema(format = Date, example = "2026-01-01")]
    pub period_from: String,
    #[schema(format = Date, example = "2026-03-31")]
    pub period_to: String,
    pub handle_if_exists: bool,
    pub status: TaskStatus,
    pub source: Source,
    /// Deprecated: the main file; use `files`.
    #[schema(deprecated)]
    pub file_id: Option<Uuid>,
    /// Deprecated: the `PRINTED_FORM` file; use `files`.
    #[schema(deprecated)]
    pub printed_form_file_id: Option<Uuid>,
    pub files: Vec<FileView>,
    /// UTC, without an offset.
    #[schema(pattern = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$", example = "2026-11-22T13:45:00")]
    pub created_at: String,
    /// UTC, without an offset.
    #[schema(pattern = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$", example = "2026-11-22T13:45:07")]
    pub updated_at: String,
}

impl From<&ReportTask> for TaskView {
    fn from(task: &ReportTask) -> Self {
        // The deprecated single-file fields: the main file is the first file
        // of the first type asked for; the printed form is the PRINTED_FORM file.
        let main = task.file_types.first().and_then(|t| task.files.iter().find(|f| f.file_type == *t));
        let printed = task.files.iter().find(|f| f.file_type == FileType::PrintedForm);
        Self {
            id: task.id.as_uuid(),
            report_type: task.report_type.into(),
            agreement_number: task.agreement_number.clone(),
            account: task.account.clone(),
            period_from: date(task.period_from),
            period_to: date(task.period_to),
            handle_if_exists: task.handle_if_exists,
            status: task.status,
            source: task.source,
            file_id: main.map(|f| f.id.as_uuid()),
            printed_form_file_id: printed.map(|f| f.id.as_uuid()),
            files: task.files.iter().map(FileView::from).collect(),
            created_at: date_time(task.created_at),
            updated_at: date_time(task.updated_at),
        }
    }
}

/// A file type with its names: `{type, nameRus, nameEng}`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ReportFileType)]
pub struct FileTypeView {
    #[serde(rename = "type")]
    pub file_type: FileType,
    pub name_rus: &'static str,
    pub name_eng: &'static str,
}

fn file_types(types: &[FileType]) -> Vec<FileTypeView> {
    types
        .iter()
        .map(|t| {
            let (name_rus, name_eng) = t.names();
            FileTypeView { file_type: *t, name_rus, name_eng }
        })
        .collect()
}

/// A report type, what it needs and the files it can make.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ReportTaskType)]
pub struct TypeView {
    #[serde(rename = "type")]
    pub report_type: ReportType,
    pub desc: &'static str,
    /// When true, `account` is required at task creation.
    pub is_use_account_parameter: bool,
    pub allowed_file_types: Vec<FileTypeView>,
    /// Used when `fileTypes` is absent or empty.
    pub default_file_types: Vec<FileTypeView>,
}

impl From<ReportType> for TypeView {
    fn from(report_type: ReportType) -> Self {
        Self {
            report_type,
            desc: report_type.description(),
            is_use_account_parameter: report_type.uses_account(),
            allowed_file_types: file_types(report_type.allowed_file_types()),
            default_file_types: file_types(report_type.default_file_types()),
        }
    }
}
