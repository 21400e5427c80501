//! Loading the brokerage data: `POST /internal/v1/brokerage/agreements`
//! (internal token, for the bank's systems), `POST
//! /admin/v1/brokerage/agreements` (admin token, for operators; `GET` lists
//! the agreements) and `portico brokerage import FILE` take the same
//! document, `{"agreements": [Agreement, ...]}` (JSON), and store it all
//! or nothing: every problem is reported with its place
//! (`agreements[0].trades[3].ticker`) and then nothing changes. The command
//! also reads the same data as CSV tables ([`csv`]).

pub mod csv;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use portico_model::reports::brokerage::Agreement;
use serde::Deserialize;
use serde_json::json;

use crate::{Channel, ReportsState};

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

/// 401 unless the request carries the token of its route: the internal
/// token on `/internal/v1/...`, the admin token on `/admin/v1/...`.
fn refused(api: &ReportsState, channel: Option<Extension<Channel>>, headers: &HeaderMap) -> Option<Response> {
    let (allowed, token) = match channel {
        Some(Extension(Channel::Bank)) => (api.is_internal(headers), "internal"),
        _ => (api.is_admin(headers), "admin"),
    };
    let body = json!({"code": "UNAUTHORIZED", "message": format!("the {token} token is missing or wrong")});
    (!allowed).then(|| (StatusCode::UNAUTHORIZED, Json(body)).into_response())
}

/// `GET /admin/v1/brokerage/agreements`: `[{"number", "cnum"}]`, by number.
pub async fn list(State(api): State<ReportsState>, headers: HeaderMap) -> Response {
    if let Some(refused) = refused(&api, None, &headers) {
        return refused;
    }
    match api.store.list_agreements().await {
        Ok(agreements) => {
            let items: Vec<_> =
                agreements.iter().map(|(number, cnum)| json!({"number": number, "cnum": cnum})).collect();
            Json(items).into_response()
        }
        Err(e) => {
            tracing::error!(error = %e, "listing brokerage agreements failed");
            let body = json!({"code": "INTERNAL_ERROR", "message": "internal error; try again later"});
            (StatusCode::INTERNAL_SERVER_ERROR, Json(body)).into_response()
        }
    }
}

pub async fn submit(
    State(api): State<ReportsState>,
    channel: Option<Extension<Channel>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(refused) = refused(&api, channel, &headers) {
        return refused;
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
