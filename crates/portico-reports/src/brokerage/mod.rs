//! Loading the brokerage data: `POST /internal/v1/brokerage/agreements`
//! (internal token, for the bank's systems), `POST
//! /admin/v1/brokerage/agreements` (admin token, for operators; `GET` lists
//! the agreements) and `portico brokerage import FILE` take the same
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

use crate::{Channel, ReportsState};

/// An import document.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = BrokerageDocument)]
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

/// What an intake stored: the agreements' numbers.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(as = BrokerageIntakeAnswer)]
pub struct Stored {
    #[schema(example = json!(["БД-0001"]))]
    pub agreements: Vec<String>,
}

/// An agreement as the list names it.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(as = BrokerageAgreementRef)]
pub struct AgreementRef {
    #[schema(example = "БД-0001")]
    pub number: String,
    /// The client company.
    #[schema(example = "7700000001")]
    pub cnum: String,
}

/// The body of a refused or failed intake.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(as = BrokerageError)]
pub struct IntakeError {
    /// `UNAUTHORIZED`, `VALIDATION_ERROR`, `INTERNAL_ERROR`.
    #[schema(example = "VALIDATION_ERROR")]
    pub code: &'static str,
    pub message: String,
    /// Each problem with its place (`agreements[0].trades[3].ticker: ...`); only with `VALIDATION_ERROR`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

impl IntakeError {
    fn respond(status: StatusCode, code: &'static str, message: impl Into<String>, problems: Vec<String>) -> Response {
        (status, Json(IntakeError { code, message: message.into(), problems })).into_response()
    }
}

/// Every error of the intake.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum IntakeErrors {
    /// `VALIDATION_ERROR`: every problem with its place; nothing was stored.
    #[response(status = 400)]
    Invalid(IntakeError),
    /// `UNAUTHORIZED`: the route's token is missing or wrong.
    #[response(status = 401)]
    Unauthorized(IntakeError),
    /// `INTERNAL_ERROR`: nothing was stored.
    #[response(status = 500)]
    Internal(IntakeError),
}

/// 401 unless the request carries the token of its route: the internal
/// token on `/internal/v1/...`, the admin token on `/admin/v1/...`.
fn refused(api: &ReportsState, channel: Channel, headers: &HeaderMap) -> Option<Response> {
    let (allowed, token) = match channel {
        Channel::Bank => (api.is_internal(headers), "internal"),
        Channel::Public => (api.is_admin(headers), "admin"),
    };
    let message = format!("the {token} token is missing or wrong");
    (!allowed).then(|| IntakeError::respond(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", message, Vec::new()))
}

#[utoipa::path(
    get,
    path = "/admin/v1/brokerage/agreements",
    operation_id = "listBrokerageAgreements",
    tag = "brokerage data",
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "Every agreement, by number.", body = Vec<AgreementRef>),
        (status = 401, description = "`UNAUTHORIZED`: the admin token is missing or wrong.", body = IntakeError),
        (status = 500, description = "`INTERNAL_ERROR`.", body = IntakeError)
    )
)]
pub async fn list(State(api): State<ReportsState>, headers: HeaderMap) -> Response {
    if let Some(refused) = refused(&api, Channel::Public, &headers) {
        return refused;
    }
    match api.store.list_agreements().await {
        Ok(agreements) => {
            let items: Vec<AgreementRef> =
                agreements.into_iter().map(|(number, cnum)| AgreementRef { number, cnum }).collect();
            Json(items).into_response()
        }
        Err(e) => {
            tracing::error!(error = %e, "listing brokerage agreements failed");
            let message = "internal error; try again later";
            IntakeError::respond(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL_ERROR", message, Vec::new())
        }
    }
}

#[utoipa::path(
    post,
    path = "/internal/v1/brokerage/agreements",
    operation_id = "submitBrokerageData",
    tag = "brokerage data",
    request_body = Document,
    security(("internalToken" = [])),
    responses((status = 200, description = "Stored: each agreement replaced whole.", body = Stored), IntakeErrors)
)]
pub async fn submit_bank(State(api): State<ReportsState>, headers: HeaderMap, body: Bytes) -> Response {
    submit(&api, Channel::Bank, &headers, &body).await
}

#[utoipa::path(
    post,
    path = "/admin/v1/brokerage/agreements",
    operation_id = "loadBrokerageData",
    tag = "brokerage data",
    request_body = Document,
    security(("adminToken" = [])),
    responses((status = 200, description = "Stored: each agreement replaced whole.", body = Stored), IntakeErrors)
)]
pub async fn submit_admin(State(api): State<ReportsState>, headers: HeaderMap, body: Bytes) -> Response {
    submit(&api, Channel::Public, &headers, &body).await
}

/// Checks the route's token, then stores the document all or nothing.
async fn submit(api: &ReportsState, channel: Channel, headers: &HeaderMap, body: &[u8]) -> Response {
    if let Some(refused) = refused(api, channel, headers) {
        return refused;
    }
    let document = match parse(body) {
        Ok(document) => document,
        Err(problems) => {
            let message = "the document is not valid; nothing was stored";
            return IntakeError::respond(StatusCode::BAD_REQUEST, "VALIDATION_ERROR", message, problems);
        }
    };
    match api.store.save_agreements(&document.agreements, api.clock.now()).await {
        Ok(()) => {
            let agreements = document.agreements.into_iter().map(|a| a.number).collect();
            Json(Stored { agreements }).into_response()
        }
        Err(e) => {
            tracing::error!(error = %e, "brokerage data intake failed");
            let message = "internal error; nothing was stored";
            IntakeError::respond(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL_ERROR", message, Vec::new())
        }
    }
}
