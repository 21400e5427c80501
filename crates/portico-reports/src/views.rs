//! The JSON the report API answers with: `ReportTask`, `ReportFile`,
//! `ReportTaskType`, exactly as the spec names their fields.

use portico_model::reports::{FileType, ReportFile, ReportTask, ReportType};
use serde_json::{Value, json};
use time::macros::format_description;
use time::{Date, OffsetDateTime, UtcOffset};

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

pub fn file(file: &ReportFile) -> Value {
    let (sig_rus, sig_eng) = file.signature_type.names();
    json!({
        "id": file.id,
        "fileType": file.file_type.as_str(),
        "nameRus": file.name_rus,
        "nameEng": file.name_eng,
        "fileName": file.file_name,
        "signatureType": { "code": file.signature_type.as_str(), "nameRus": sig_rus, "nameEng": sig_eng },
    })
}

pub fn task(task: &ReportTask) -> Value {
    // The deprecated single-file fields: the main file is the first file of
    // the first type asked for; the printed form is the PRINTED_FORM file.
    let main = task.file_types.first().and_then(|t| task.files.iter().find(|f| f.file_type == *t));
    let printed = task.files.iter().find(|f| f.file_type == FileType::PrintedForm);
    json!({
        "id": task.id,
        "reportType": { "type": task.report_type.as_str(), "desc": task.report_type.description() },
        "agreementNumber": task.agreement_number,
        "account": task.account,
        "periodFrom": date(task.period_from),
        "periodTo": date(task.period_to),
        "handleIfExists": task.handle_if_exists,
        "status": task.status.as_str(),
        "source": task.source.as_str(),
        "fileId": main.map(|f| f.id),
        "printedFormFileId": printed.map(|f| f.id),
        "files": task.files.iter().map(file).collect::<Vec<_>>(),
        "createdAt": date_time(task.created_at),
        "updatedAt": date_time(task.updated_at),
    })
}

fn file_types(types: &[FileType]) -> Vec<Value> {
    types
        .iter()
        .map(|t| {
            let (rus, eng) = t.names();
            json!({ "type": t.as_str(), "nameRus": rus, "nameEng": eng })
        })
        .collect()
}

pub fn report_type(report_type: ReportType) -> Value {
    json!({
        "type": report_type.as_str(),
        "desc": report_type.description(),
        "isUseAccountParameter": report_type.uses_account(),
        "allowedFileTypes": file_types(report_type.allowed_file_types()),
        "defaultFileTypes": file_types(report_type.default_file_types()),
    })
}
