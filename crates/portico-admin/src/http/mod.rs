//! The admin API over the [`AdminService`]: JSON in and out, the shared
//! error body ([`portico_api::ApiError`]), an admin token on every call.
//!
//! | route | operation | role |
//! |---|---|---|
//! | `GET/POST /admin/v1/clients` | list, register | admin |
//! | `GET/PATCH/DELETE /admin/v1/clients/{clientId}` | read, change, remove | admin |
//! | `POST /admin/v1/clients/{clientId}/secret` | new secret | admin |
//! | `POST /admin/v1/clients/{clientId}/approve` | approve a held registration | admin |
//! | `GET/POST /admin/v1/registration-tokens` | the unspent one-time initial access tokens, issue one | admin |
//! | `DELETE /admin/v1/registration-tokens/{id}` | withdraw one | admin |
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
//! | `GET /admin/v1/keys`, `POST /admin/v1/keys/rotate`, `POST /admin/v1/keys/retire` | signing keys | admin |
//! | `GET /admin/v1/audit` | the audit log (filtered, paged) | support |

pub mod clients;
pub mod system;
pub mod users;

use std::sync::Arc;

use axum::Router;
use axum::routing::{delete, get, post, put};
use portico_api::{ApiTokens, HasApiTokens};

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
        .route("/admin/v1/clients/{client_id}/approve", post(clients::approve))
        .route(
            "/admin/v1/registration-tokens",
            get(clients::initial_access_tokens).post(clients::issue_initial_access_token),
        )
        .route("/admin/v1/registration-tokens/{id}", delete(clients::withdraw_initial_access_token))
        .route("/admin/v1/users", get(users::search).post(users::create))
        .route("/admin/v1/users/{user_id}", get(users::read).patch(users::update).delete(users::remove))
        .route("/admin/v1/users/{user_id}/password", put(users::set_password))
        .route("/admin/v1/users/{user_id}/block", post(users::block))
        .route("/admin/v1/users/{user_id}/unblock", post(users::unblock))
        .route("/admin/v1/users/{user_id}/sessions", get(users::sessions))
        .route("/admin/v1/users/{user_id}/sessions/{sid}", delete(users::end_session))
        .route("/admin/v1/users/{user_id}/passkeys", get(users::passkeys))
        .route("/admin/v1/users/{user_id}/passkeys/{passkey_id}", delete(users::remove_passkey))
        .route("/admin/v1/users/{user_id}/role", get(users::role).put(users::set_role))
        .route("/admin/v1/users/{user_id}/grants", get(users::grants))
        .route("/admin/v1/users/{user_id}/grants/{grant_id}", delete(users::revoke_grant))
        .route("/admin/v1/keys", get(system::keys))
        .route("/admin/v1/keys/rotate", post(system::rotate_key))
        .route("/admin/v1/keys/retire", post(system::retire_key))
        .route("/admin/v1/audit", get(system::audit))
        .with_state(state)
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
