//! Brokerage reports (`spec/2-notifications-and-reports.md`, part B).
//!
//! - [`tasks`]: `POST` / `GET /v1/reports/tasks`, `GET /v1/reports/tasks/{taskId}`;
//! - [`types`]: `GET /v1/reports/types`;
//! - [`download`]: `GET /v1/reports/files/download/{fileId}`, streamed from
//!   the object store;
//! - [`access`]: the token pair, the company (`cnum`) and report rights;
//! - [`worker`]: takes `NEW` tasks with a lease and produces their files
//!   ([`generate`]);
//! - [`brokerage`]: the data reports are made from, loaded through the
//!   internal API and `portico brokerage import`.

pub mod access;
pub mod admin;
pub mod brokerage;
pub mod download;
pub mod error;
pub mod files;
pub mod generate;
pub mod openapi;
pub mod retention;
pub mod sample;
pub mod tasks;
pub mod types;
pub mod views;
pub mod worker;

use std::sync::Arc;

use axum::routing::{get, post};
use axum::{Extension, Router};
use portico_model::clock::Clock;
use portico_permissions::service::PermissionService;
use portico_storage::Storage;
use portico_tokens::TokenVerifier;

/// What the report handlers and workers share.
pub struct Reports {
    pub store: Arc<dyn Storage>,
    pub clock: Arc<dyn Clock>,
    /// Checks the callers' `Authorization` + `Id-Token` pairs.
    pub tokens: Arc<TokenVerifier>,
    pub permissions: Arc<PermissionService>,
    /// Where produced files live.
    pub files: files::FileStore,
    /// The internal token (the bank's channel, brokerage data intake) and
    /// the admin tokens (brokerage data); each closed without its own.
    pub api_tokens: portico_api::ApiTokens,
    /// How long a worker holds a task it generates; a generation that
    /// takes longer fails.
    pub lease: std::time::Duration,
    /// The facsimile image and anything else generators need.
    pub assets: Arc<generate::Assets>,
    /// Rung when a task is created, so that this node's worker takes it at once.
    pub queued: tokio::sync::Notify,
    /// How long finished tasks and their files are kept ([`retention`]);
    /// `None`: for ever.
    pub retention: Option<time::Duration>,
    /// Tasks `NEW` or `IN_PROGRESS` one company may have at once.
    pub max_unfinished: u32,
}

pub type ReportsState = Arc<Reports>;

impl portico_api::HasApiTokens for Reports {
    fn api_tokens(&self) -> &portico_api::ApiTokens {
        &self.api_tokens
    }
}

/// The permission catalog object whose actions (`view`, `create`,
/// `download`) grant report rights in a company.
pub const OBJECT: &str = "reports";

/// Who a route serves: the public API's users, or the bank's own channels
/// (the internal token; tasks they create have the source `ONLINE_BANK`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Public,
    Bank,
}

pub fn router(state: ReportsState) -> Router {
    let operations = |channel: Channel| {
        Router::new()
            .route("/tasks", post(tasks::create).get(tasks::list))
            .route("/tasks/{task_id}", get(tasks::get_one))
            .route("/types", get(types::list))
            .route("/files/download/{file_id}", get(download::download))
            .layer(Extension(channel))
    };
    Router::new()
        .nest("/v1/reports", operations(Channel::Public))
        .nest("/internal/v1/reports", operations(Channel::Bank))
        .route("/internal/v1/brokerage/agreements", post(brokerage::submit_bank))
        .route("/admin/v1/brokerage/agreements", post(brokerage::submit_admin).get(brokerage::list))
        .route("/admin/v1/reports/tasks", get(admin::list))
        .route("/admin/v1/reports/tasks/{task_id}/retry", post(admin::retry))
        .with_state(state)
}
