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
use portico_api::error::ErrorBody;
use portico_api::openapi::{AdminErrors, InternalErrors};
use portico_api::{Admin, ApiError, Internal, PageParams, Params, Problem, pagination};
use portico_model::audit::{AuditEvent, AuditKind};
use portico_model::reports::brokerage::Agreement;
use serde::Deserialize;

use crate::ReportsState;

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
    let mut numbers = std::collections::HashSet::new();
    for (i, agreement) in document.agreements.iter().enumerate() {
        if !numbers.insert(agreement.number.as_str()) {
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

/// Every error of the intake.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum IntakeErrors {
    /// `invalid_document`: every problem with its place; nothing was stored.
    #[response(status = 400)]
    Invalid(ErrorBody),
}

#[utoipa::path(
    get,
    path = "/admin/v1/brokerage/agreements",
    operation_id = "listBrokerageAgreements",
    tag = "brokerage data",
    security(("adminToken" = [])),
    params(PageParams),
    responses(
        (status = 200, description = "A page of agreements, by number.", body = AgreementPage),
        (status = 400, description = "`bad_request`: a parameter is unknown or malformed (`limit` 1 to 200).", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn list(
    State(api): State<ReportsState>,
    _: Admin,
    Params(params): Params<PageParams>,
) -> Result<Json<AgreementPage>, ApiError> {
    let (page, limit) = params.read()?;
    let agreements =
        api.store.list_agreements(page).await.map_err(|e| ApiError::storage("listing brokerage agreements", &e))?;
    let (agreements, next) = pagination::split(agreements, limit, |(number, _)| number.as_str());
    let agreements = agreements.into_iter().map(|(number, cnum)| AgreementRef { number, cnum }).collect();
    Ok(Json(AgreementPage { agreements, next }))
}

/// A page of agreements, by number.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(as = BrokerageAgreementPage)]
pub struct AgreementPage {
    pub agreements: Vec<AgreementRef>,
    /// Pass as `after` for the next page; absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

#[utoipa::path(
    post,
    path = "/internal/v1/brokerage/agreements",
    operation_id = "submitBrokerageData",
    tag = "brokerage data",
    request_body = Document,
    security(("internalToken" = [])),
    responses((status = 200, description = "Stored: each agreement replaced whole.", body = Stored), IntakeErrors, InternalErrors)
)]
pub async fn submit_bank(State(api): State<ReportsState>, _: Internal, body: Bytes) -> Result<Json<Stored>, ApiError> {
    store(&api, &body).await
}

#[utoipa::path(
    post,
    path = "/admin/v1/brokerage/agreements",
    operation_id = "loadBrokerageData",
    tag = "brokerage data",
    request_body = Document,
    security(("adminToken" = [])),
    responses((status = 200, description = "Stored: each agreement replaced whole.", body = Stored), IntakeErrors, AdminErrors)
)]
pub async fn submit_admin(
    State(api): State<ReportsState>,
    admin: Admin,
    body: Bytes,
) -> Result<Json<Stored>, ApiError> {
    load_by(&api, &admin.actor, &body).await
}

/// An operator's load of brokerage data (a JSON `Document`), all or
/// nothing, recorded in the audit log with `actor`. The admin API and the
/// console share it.
///
/// # Errors
/// `invalid_document` with every problem; the store.
pub async fn load_by(
    api: &ReportsState,
    actor: &portico_model::audit::Actor,
    body: &[u8],
) -> Result<Json<Stored>, ApiError> {
    let stored = store(api, body).await?;
    record_load(api.store.as_ref(), api.clock.now(), actor, &stored.agreements).await;
    Ok(stored)
}

/// Records a load of brokerage data in the audit log: who, and which
/// agreements. The admin API, the console and the CLI record it alike.
pub async fn record_load(
    store: &dyn portico_storage::Storage,
    now: time::OffsetDateTime,
    actor: &portico_model::audit::Actor,
    agreements: &[String],
) {
    let event = AuditEvent::new(now, AuditKind::BrokerageDataLoaded).by(actor);
    portico_api::audit(store, event.detail(serde_json::json!({ "agreements": agreements }))).await;
}

/// Stores the document all or nothing.
async fn store(api: &ReportsState, body: &[u8]) -> Result<Json<Stored>, ApiError> {
    // Off the runtime's threads: the console takes documents of up to 16 MiB.
    let body = body.to_vec();
    let parsed = tokio::task::spawn_blocking(move || parse(&body)).await.map_err(|error| {
        tracing::error!(%error, "reading a brokerage document stopped");
        ApiError::Internal
    })?;
    let document = parsed.map_err(|problems| {
        let problems = problems.iter().map(|line| Problem::from_line(line)).collect();
        ApiError::invalid("the document is not valid; nothing was stored", problems)
    })?;
    api.store
        .save_agreements(&document.agreements, api.clock.now())
        .await
        .map_err(|e| ApiError::storage("brokerage data intake", &e))?;
    Ok(Json(Stored { agreements: document.agreements.into_iter().map(|a| a.number).collect() }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{Shape, agreement};

    #[test]
    fn a_number_given_twice_and_each_unknown_reference_are_named_in_place() {
        let first = agreement(&Shape { number: "БД-0001", ..Shape::demo() });
        let mut second = first.clone();
        second.trades[0].ticker = "NOPE".into();
        second.trades[1].account = "40702810900000009999".into();
        let third = agreement(&Shape { number: "БД-0002", ..Shape::demo() });
        let text = serde_json::to_vec(&serde_json::json!({"agreements": [first, second, third]})).unwrap();
        assert_eq!(
            parse(&text).unwrap_err(),
            [
                "agreements[1].number: given twice",
                "agreements[1].trades[0].ticker: an instrument listed in instruments",
                "agreements[1].trades[1].account: an account of this agreement",
            ]
        );
    }
}
