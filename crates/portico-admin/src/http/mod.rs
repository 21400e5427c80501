//! The admin API over the [`AdminService`]: JSON in and out, the shared
//! error body ([`portico_api::ApiError`]), an admin token on every call.
//!
//! | route | operation | role |
//! |---|---|---|
//! | `GET/POST /admin/v1/clients` | list, register | admin |
//! | `GET/PATCH/DELETE /admin/v1/clients/{clientId}` | read, change, remove | admin |
//! | `POST /admin/v1/clients/{clientId}/secret` | new secret | admin |
//! | `GET /admin/v1/users` | search (login, phone, e-mail; paged) | support |
//! | `POST /admin/v1/users` | create | admin |
//! | `GET /admin/v1/users/{userId}` | read | support |
//! | `PATCH/DELETE /admin/v1/users/{userId}` | change, remove | admin |
//! | `PUT /admin/v1/users/{userId}/password` | set the password | admin |
//! | `POST /admin/v1/users/{userId}/block`, `/unblock` | block, unblock | support |
//! | `GET /admin/v1/users/{userId}/sessions` | live sessions | support |
//! | `DELETE /admin/v1/users/{userId}/sessions/{sid}` | end one | support |
//! | `GET/PUT /admin/v1/users/{userId}/role` | operator role | admin |
//! | `GET /admin/v1/users/{userId}/grants` | live grants | support |
//! | `DELETE /admin/v1/users/{userId}/grants/{grantId}` | revoke one | support |
//! | `GET /admin/v1/keys`, `POST /admin/v1/keys/rotate` | signing keys | admin |
//! | `GET /admin/v1/audit` | the audit log (filtered, paged) | support |

pub mod clients;
pub mod system;
pub mod users;

use std::sync::Arc;

use axum::Router;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::routing::{delete, get, post, put};
use portico_api::{ApiError, ApiTokens, HasApiTokens};
use serde::de::DeserializeOwned;

use crate::service::AdminService;

/// What the admin handlers share.
pub struct AdminApi {
    pub service: Arc<AdminService>,
    pub api_tokens: ApiTokens,
}

pub type AdminState = Arc<AdminApi>;

impl HasApiTokens for AdminApi {
    fn api_tokens(&self) -> &ApiTokens {
        &self.api_tokens
    }
}

pub fn router(state: AdminState) -> Router {
    Router::new()
        .route("/admin/v1/clients", get(clients::list).post(clients::create))
        .route("/admin/v1/clients/{client_id}", get(clients::read).patch(clients::update).delete(clients::remove))
        .route("/admin/v1/clients/{client_id}/secret", post(clients::rotate_secret))
        .route("/admin/v1/users", get(users::search).post(users::create))
        .route("/admin/v1/users/{user_id}", get(users::read).patch(users::update).delete(users::remove))
        .route("/admin/v1/users/{user_id}/password", put(users::set_password))
        .route("/admin/v1/users/{user_id}/block", post(users::block))
        .route("/admin/v1/users/{user_id}/unblock", post(users::unblock))
        .route("/admin/v1/users/{user_id}/sessions", get(users::sessions))
        .route("/admin/v1/users/{user_id}/sessions/{sid}", delete(users::end_session))
        .route("/admin/v1/users/{user_id}/role", get(users::role).put(users::set_role))
        .route("/admin/v1/users/{user_id}/grants", get(users::grants))
        .route("/admin/v1/users/{user_id}/grants/{grant_id}", delete(users::revoke_grant))
        .route("/admin/v1/keys", get(system::keys))
        .route("/admin/v1/keys/rotate", post(system::rotate_key))
        .route("/admin/v1/audit", get(system::audit))
        .with_state(state)
}

/// A JSON body whose refusal is the shared error body (`bad_request`
/// saying what could not be read).
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(request, state).await {
            Ok(axum::Json(value)) => Ok(Self(value)),
            Err(e) => Err(json_refusal(&e)),
        }
    }
}

/// 415 without a JSON content type, else 400 (not JSON, or not the shape).
fn json_refusal(e: &JsonRejection) -> ApiError {
    match e {
        JsonRejection::MissingJsonContentType(_) => ApiError::new(
            axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "bad_request",
            "send the body as application/json",
        ),
        _ => ApiError::bad_request(e.body_text()),
    }
}

/// Query parameters whose refusal is the shared error body.
pub struct Params<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => Ok(Self(value)),
            Err(e) => Err(query_refusal(&e)),
        }
    }
}

fn query_refusal(e: &QueryRejection) -> ApiError {
    ApiError::bad_request(e.body_text())
}

/// `Some(None)` for an explicit `null`, `None` when the field is absent
/// (with `#[serde(default)]`): a change that clears a field.
pub(crate) fn nullable<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    serde::Deserialize::deserialize(deserializer).map(Some)
}

/// A page size from the query: 1 to 200, default 50.
pub(crate) fn page_size(limit: Option<u32>) -> Result<u32, ApiError> {
    match limit {
        None => Ok(50),
        Some(limit @ 1..=200) => Ok(limit),
        Some(_) => Err(ApiError::bad_request("limit: 1 to 200")),
    }
}
