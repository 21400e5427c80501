//! `GET /v1/reports/types` (getReportTypes): the report types, each with
//! whether it needs `account` and its allowed and default file types.

use axum::Json;
use axum::extract::{RawQuery, State};
use portico_model::reports::ReportType;

use crate::ReportsState;
use crate::access::{Action, Caller};
use crate::error::ReportError;
use crate::tasks::{Cnum, read_query};
use crate::views::TypeView;

/// The report types, each with what it needs and the files it can make.
#[utoipa::path(
    get,
    path = "/v1/reports/types",
    operation_id = "getReportTypes",
    tag = "reports",
    params(Cnum),
    responses((status = 200, description = "Every report type.", body = Vec<TypeView>), crate::error::Errors)
)]
pub async fn list(
    State(api): State<ReportsState>,
    caller: Caller,
    RawQuery(query): RawQuery,
) -> Result<Json<Vec<TypeView>>, ReportError> {
    let query: Cnum = read_query(query.as_deref())?;
    // The types are the same in every company; the bank needs to name none.
    match caller {
        Caller::User(_) => drop(api.access(caller, &query.cnum, Action::View).await?),
        Caller::Bank => drop(crate::access::given_cnum(&query.cnum)?),
    }
    Ok(Json(ReportType::ALL.iter().map(|t| TypeView::from(*t)).collect()))
}
