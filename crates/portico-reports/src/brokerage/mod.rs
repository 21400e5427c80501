//! Loading the brokerage data: `POST /internal/v1/brokerage/agreements`
//! (internal token) and `portico brokerage import FILE` take the same
//! document, `{"agreements": [Agreement, ...]}` (JSON), and store it all
//! or nothing: every problem is reported with its place
//! (`agreements[0].trades[3].ticker`) and then nothing changes. The command
//! also reads the same data as CSV tables ([`csv`]).

pub mod csv;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use portico_model::reports::brokerage::Agreement;
use serde::Deserialize;
use serde_json::json;

use crate::ReportsState;

/// An import document.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Document {
    pub agreements: Vec<Agreement>,
}

/// Parses and checks a document.
///
/// # Errors
/// Every problem, each with its place.
pub fn parse(text: &[u8]) -> Result<Document, Vec<String>> {
    let deserializer = &mut serde_json::Deserializer::from_slice(text);
    let document: Document =
        serde_path_to_error::deserialize(deserializer).map_err(|e| vec![format!("{}: {}", e.path(), e.inner())])?;
    let mut problems = Vec::new();
    if document.agreements.is_empty() {
        problems.push("agreements: at least one agreement".to_owned());
    }
    for (i, agreement) in document.agreements.iter().enumerate() {
        if document.agreements[..i].iter().any(|a| a.number == agreement.number) {
            problems.push(format!("agreements[{i}].number: given twice"));
        }
        problems.extend(agreement.problems().into_iter().map(|p| format!("agreements[{i}].{p}")));
    }
    if problems.is_empty() { Ok(document) } else { Err(problems) }
}

pub async fn submit(State(api): State<ReportsState>, headers: HeaderMap, body: Bytes) -> Response {
    if !api.is_internal(&headers) {
        let body = json!({"code": "UNAUTHORIZED", "message": "the internal token is missing or wrong"});
        return (StatusCode::UNAUTHORIZED, Json(body)).into_response();
    }
    let document = match parse(&body) {
        Ok(document) => document,
        Err(problems) => {
            let body = json!({"code": "VALIDATION_ERROR", "message": "the document is not valid; nothing was stored", "problems": problems});
            return (StatusCode::BAD_REQUEST, Json(body)).into_response();
        }
    };
    match api.store.save_agreements(&document.agreements, api.clock.now()).await {
        Ok(()) => {
            let numbers: Vec<&str> = document.agreements.iter().map(|a| a.number.as_str()).collect();
            (StatusCode::OK, Json(json!({"agreements": numbers}))).into_response()
        }
        Err(e) => {
            tracing::error!(error = %e, "brokerage data intake failed");
            let body = json!({"code": "INTERNAL_ERROR", "message": "internal error; nothing was stored"});
            (StatusCode::INTERNAL_SERVER_ERROR, Json(body)).into_response()
        }
    }
}
