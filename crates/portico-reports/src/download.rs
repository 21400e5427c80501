//! `GET /v1/reports/files/download/{fileId}` (downloadReportFile): the
//! file streamed from the object store (never whole in memory), with
//! `Content-Type`, `Content-Length` and an RFC 6266 `Content-Disposition`
//! carrying an ASCII `filename` and the real name in `filename*` (UTF-8,
//! percent-encoded), so that Cyrillic names survive.

use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use portico_model::ids::ReportFileId;

use crate::ReportsState;
use crate::access::{Action, Caller};
use crate::error::ReportError;

/// A file's bytes, as the contract says: `application/octet-stream`, whatever
/// the file (the 1C statement in Windows-1251, the spreadsheet, the PDF, the
/// CMS signature); the task's `files` say which it is, and
/// `Content-Disposition` names it.
#[derive(utoipa::ToSchema)]
#[schema(value_type = String, format = Binary)]
#[allow(dead_code)]
pub struct FileBytes(Vec<u8>);

/// A produced file, streamed.
#[utoipa::path(
    get,
    path = "/v1/reports/files/download/{fileId}",
    operation_id = "downloadReportFile",
    tag = "reports",
    params(("fileId" = uuid::Uuid, Path, description = "The file's id (`ReportFile.id`)."), crate::tasks::Cnum),
    responses(
        (
            status = 200,
            description = "The file, streamed.",
            content((FileBytes = "application/octet-stream")),
            headers(
                ("Content-Disposition" = String, description = "`attachment; filename=\"<ASCII>\"; filename*=UTF-8''<name>` (RFC 6266)"),
                ("Content-Length" = u64, description = "The file's size in bytes")
            )
        ),
        crate::error::Errors,
        crate::error::NotFound
    )
)]
pub async fn download(
    State(api): State<ReportsState>,
    caller: Caller,
    file_id: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Result<Response, ReportError> {
    let (id, cnum): (ReportFileId, _) = crate::tasks::by_id(query.as_deref(), "fileId", file_id)?;
    let found = api.store.find_report_file(id).await?;
    let Some((file, owner)) = found.filter(|(_, owner)| cnum.as_ref().is_none_or(|c| c == owner)) else {
        return Err(ReportError::NotFound(format!("there is no report file {id}")));
    };
    if !api.may(caller, &owner, Action::Download).await? {
        return Err(ReportError::Forbidden("the user may not download reports of this company".into()));
    }
    let (size, stream) = api.files.open(&file.object_key).await.map_err(|e| ReportError::internal(&e))?;
    let mut response = Body::from_stream(stream).into_response();
    *response.status_mut() = StatusCode::OK;
    let out = response.headers_mut();
    out.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
    out.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    if let Ok(value) = HeaderValue::from_str(&content_disposition(&file.file_name)) {
        out.insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}

/// `attachment; filename="…"; filename*=UTF-8''…` (RFC 6266, RFC 8187): the
/// ASCII fallback transliterates Russian letters and keeps letters, digits
/// and `.-_`; anything else becomes `_`.
pub fn content_disposition(name: &str) -> String {
    let mut fallback = String::new();
    for c in name.chars() {
        match transliterate(c) {
            Some(latin) => fallback.push_str(latin),
            None if c.is_ascii_alphanumeric() || ".-_".contains(c) => fallback.push(c),
            None => fallback.push('_'),
        }
    }
    let mut encoded = String::new();
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || b".-_~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    format!("attachment; filename=\"{fallback}\"; filename*=UTF-8''{encoded}")
}

/// The Latin spelling of a Russian letter (GOST 7.79 B, simplified).
fn transliterate(c: char) -> Option<&'static str> {
    const LOWER: [&str; 32] = [
        "a", "b", "v", "g", "d", "e", "zh", "z", "i", "y", "k", "l", "m", "n", "o", "p", "r", "s", "t", "u", "f", "kh",
        "ts", "ch", "sh", "shch", "", "y", "", "e", "yu", "ya",
    ];
    const UPPER: [&str; 32] = [
        "A", "B", "V", "G", "D", "E", "Zh", "Z", "I", "Y", "K", "L", "M", "N", "O", "P", "R", "S", "T", "U", "F", "Kh",
        "Ts", "Ch", "Sh", "Shch", "", "Y", "", "E", "Yu", "Ya",
    ];
    match c {
        'а'..='я' => Some(LOWER[(c as usize) - ('а' as usize)]),
        'А'..='Я' => Some(UPPER[(c as usize) - ('А' as usize)]),
        'ё' => Some("e"),
        'Ё' => Some("E"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cyrillic_names_get_an_ascii_fallback_and_an_encoded_original() {
        assert_eq!(
            super::content_disposition("Выписка 1С.txt"),
            "attachment; filename=\"Vypiska_1S.txt\"; filename*=UTF-8''%D0%92%D1%8B%D0%BF%D0%B8%D1%81%D0%BA%D0%B0%201%D0%A1.txt"
        );
    }
}
