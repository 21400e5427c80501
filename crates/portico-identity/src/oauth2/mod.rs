//! The OAuth 2.1 / OpenID Connect endpoints.

pub(crate) mod authorize;
mod client_auth;
pub(crate) mod discovery;
pub mod error;
pub mod forms;
pub(crate) mod introspect;
pub(crate) mod jwks;
pub(crate) mod liveness;
pub(crate) mod logout;
pub(crate) mod par;
pub mod params;
mod request_object;
pub mod response;
pub(crate) mod revoke;
pub mod token;
pub(crate) mod userinfo;

use axum::Router;
use axum::routing::{get, post};

use crate::IdentityState;

/// Largest form body the token, revoke and introspection endpoints read.
pub const MAX_FORM_BODY: usize = 16 * 1024;

pub fn router() -> Router<IdentityState> {
    Router::new()
        .route("/oauth2/authorize", get(authorize::authorize).post(authorize::authorize_form))
        .route("/oauth2/token", post(token::token))
        .route(par::PATH, post(par::par))
        .route("/oauth2/revoke", post(revoke::revoke))
        .route("/oauth2/introspect", post(introspect::introspect))
        .route("/oauth2/jwks", get(jwks::jwks))
        .route("/oauth2/token/liveness", get(liveness::liveness))
        .route("/oauth2/logout", get(logout::logout).post(logout::logout_form))
        .route("/oauth2/userinfo", get(userinfo::userinfo).post(userinfo::userinfo_post))
        .route("/.well-known/openid-configuration", get(discovery::openid_configuration))
        .route("/.well-known/oauth-authorization-server", get(discovery::authorization_server_metadata))
}

pub use authorize::AuthorizeRequest;
