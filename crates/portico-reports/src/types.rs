//! `GET /v1/reports/types` (getReportTypes): the report types, each with
//! whether it needs `account` and its allowed and default file types.

use axum::Json;
use axum::extract::{Extension, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use portico_model::reports::ReportType;

use crate::access::Action;
use crate::tasks::Params;
use crate::views::TypeView;
use crate::{Channel, ReportsState};

/// The report types, each with what it needs and the files it can make.
#[utoipa::path(
    get,
    path = "/v1/reports/types",
    operation_id = "getReportTypes",
    tag = "reports",
    params(crate::tasks::Cnum),
    responses((status = 200, description = "Every report type.", body = Vec<TypeView>), crate::error::Errors)
)]
pub async fn list(
    State(api): State<ReportsState>,
    Extension(channel): Extension<Channel>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let result = async {
        let params = Params::parse(query.as_deref());
        params.only(&["cnum"])?;
        // The types are the same in every company; the bank needs to name none.
        match channel {
            Channel::Public => drop(api.access(channel, &headers, params.get("cnum"), Action::View).await?),
            Channel::Bank => {
                api.caller(channel, &headers).await?;
                params.get("cnum").map(crate::access::parse_cnum).transpose()?;
            }
        }
        Ok::<_, crate::error::ReportError>(ReportType::ALL.iter().map(|t| TypeView::from(*t)).collect::<Vec<_>>())
    }
    .await;
    match result {
        Ok(types) => Json(types).into_response(),
        Err(e) => e.into_response_for(&headers),
    }
}
