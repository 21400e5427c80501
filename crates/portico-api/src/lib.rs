//! The HTTP plumbing Portico's APIs share.
//!
//! - [`auth`]: who may call the admin and internal APIs — extractors for
//!   the named admin tokens ([`auth::Admin`], which also names the actor
//!   for the audit log) and the internal token ([`auth::Internal`]).
//! - [`pair`]: the caller of the business APIs, a token pair
//!   ([`pair::TokenPair`]), refused in each API's own words.
//! - [`error`]: the one error body of every `/admin/v1/...` and
//!   `/internal/v1/...` operation ([`error::ApiError`]).
//! - [`openapi`]: their security schemes and shared error responses.
//! - [`request`]: the id of the request being answered, for error bodies
//!   that name it.
//! - [`revision`]: revisions as `ETag`s, and `If-Match` ([`revision::IfMatch`]).
//!
//! The public APIs keep the bodies their contracts give (the report API's
//! `UNAUTHORIZED`, the permission API's `{"error": ...}`); the report
//! operations of the bank's channel (`/internal/v1/reports/...`) are the
//! report API's own and answer as it does.

pub mod auth;
pub mod error;
pub mod openapi;
pub mod pagination;
pub mod pair;
pub mod request;
pub mod revision;

pub use auth::{Admin, ApiTokens, HasApiTokens, Internal, Support};
pub use error::{ApiError, Body, Params, PathParams, Problem, page_size};
pub use pagination::PageParams;
pub use pair::{HasTokenVerifier, PairRefusal, TokenPair, called_path};
/// The challenge of every 401 (RFC 6750 §3, RFC 9449 §7.1).
pub use portico_tokens::Challenge;
/// The token of an `Authorization` header, `Bearer` in any case or no
/// scheme at all (RFC 9110 §11.1: schemes are case-insensitive).
pub use portico_tokens::bearer;
pub use revision::{IfMatch, etag};

/// `response`, which no cache may store (`Cache-Control: no-store`): an
/// answer that carries tokens, secrets, one user's data or one login's
/// page (RFC 6749 §5.1, RFC 9110 §5.2.2).
pub fn no_store(response: impl axum::response::IntoResponse) -> axum::response::Response {
    use axum::http::{HeaderValue, header};
    let mut response = response.into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Records an administrative change in the audit log. A failure to record
/// is logged, not raised: the change is made and answered for.
pub async fn audit(store: &dyn portico_storage::AuditRepository, event: portico_model::audit::AuditEvent) {
    if let Err(error) = store.record_audit(&event).await {
        tracing::warn!(kind = %event.kind, %error, "could not record an audit event");
    }
}
