//! The permissions API: employee roles and permission look-ups for
//! corporate clients (`spec/3-permissions.md`), and the admin API that
//! manages the model behind them.
//!
//! Every operation first checks the caller's token pair (the shared
//! extractor [`portico_api::TokenPair`], refused in this API's body:
//! [`request::Caller`]), then `x-system-id`, then its parameters, and answers from the in-memory
//! [`PermissionModel`](portico_model::permissions::PermissionModel) that
//! [`service::PermissionService`] keeps current. Other modules ask their
//! authorization questions through [`service::PermissionService::allowed`].

pub mod acc;
pub mod admin;
pub mod edge;
pub mod error;
mod expansion;
pub mod openapi;
pub mod request;
pub mod role;
pub mod service;
pub mod v1;
pub mod v2;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::HeaderMap;
use axum::routing::{MethodRouter, get, post};
use portico_model::clock::Clock;
use portico_storage::Storage;
use portico_tokens::TokenVerifier;

use crate::error::PermissionError;
use crate::service::PermissionService;

pub struct PermissionsApi {
    pub store: Arc<dyn Storage>,
    pub clock: Arc<dyn Clock>,
    /// Checks the callers' `Authorization` + `Id-Token` pairs.
    pub tokens: Arc<TokenVerifier>,
    pub service: Arc<PermissionService>,
    /// The admin API's tokens; the admin API is off without one.
    pub api_tokens: portico_api::ApiTokens,
}

pub type PermissionsState = Arc<PermissionsApi>;

impl portico_api::HasApiTokens for PermissionsApi {
    fn api_tokens(&self) -> &portico_api::ApiTokens {
        &self.api_tokens
    }
}

/// A route whose path lacks a required segment (`/api/v2/permissions/x/`):
/// after the usual caller checks, `bad_request` naming the parameter.
fn missing(parameter: &'static str, system_id_required: bool) -> MethodRouter<PermissionsState> {
    get(move |_: request::Caller, headers: HeaderMap| async move {
        if system_id_required {
            request::system_id(&headers)?;
        }
        Err::<(), _>(PermissionError::bad_request(parameter, format!("the path parameter {parameter} is missing")))
    })
}

/// Every route of the permissions API and its admin API.
#[allow(deprecated, reason = "the deprecated v1 reads are still served")]
pub fn router(api: PermissionsState) -> Router {
    Router::new()
        .route("/api/v1/employee/role", post(role::employee_role))
        .route("/api/v1/permissions", get(v1::permissions))
        .route("/api/v1/permissions/", missing("object_path", false))
        .route("/api/v1/permissions/{object_path}", get(v1::permissions_by_object))
        .route("/api/v2/permissions", get(v2::permissions))
        .route("/api/v2/permissions/", missing("obj", true))
        .route("/api/v2/permissions/{obj}", get(v2::by_object))
        .route("/api/v2/permissions/{obj}/", missing("cnum", true))
        .route("/api/v2/permissions//{cnum}", missing("obj", true))
        .route("/api/v2/permissions/{obj}/{cnum}", get(v2::by_object_and_company))
        .route("/api/v1/acc-permissions/", missing("cnum", true))
        .route("/api/v1/acc-permissions/{cnum}", get(acc::by_company))
        .route("/api/v2/acc-permissions/", missing("userId", true))
        .route("/api/v2/acc-permissions/{userId}", missing("cnum", true))
        .route("/api/v2/acc-permissions/{userId}/", missing("cnum", true))
        .route("/api/v2/acc-permissions//{cnum}", missing("userId", true))
        .route("/api/v2/acc-permissions/{userId}/{cnum}", get(acc::by_user_and_company))
        .route(
            "/admin/v1/permissions",
            get(admin::export).post(admin::apply).layer(DefaultBodyLimit::max(admin::MAX_DOCUMENT)),
        )
        .with_state(api)
}
