//! `GET /v1/reports/types` (getReportTypes): the report types, each with
//! whether it needs `account` and its allowed and default file types.

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use portico_model::reports::ReportType;

use crate::ReportsState;
use crate::access::Action;
use crate::tasks::Params;

pub async fn list(State(api): State<ReportsState>, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    let result = async {
        let params = Params::parse(query.as_deref());
        params.only(&["cnum"])?;
        api.access(&headers, params.get("cnum"), Action::View).await?;
        Ok::<_, crate::error::ReportError>(
            ReportType::ALL.iter().map(|t| crate::views::report_type(*t)).collect::<Vec<_>>(),
        )
    }
    .await;
    match result {
        Ok(types) => Json(types).into_response(),
        Err(e) => e.into_response_for(&headers),
    }
}
