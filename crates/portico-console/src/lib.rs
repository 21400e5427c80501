//! The operator console at `/console`: server-rendered pages (askama, no
//! script at all) over the same [`AdminService`] as the admin API and the
//! CLI, so every channel keeps the same rules and leaves the same audit
//! entries, named `operator:<login>`.
//!
//! - [`auth`]: the console is an OpenID Connect client of Portico itself
//!   (`operator_client_id`, registered at start;
//!   [`portico_identity::own_client`]): authorization code with PKCE and
//!   `nonce` through Portico's own login, the code redeemed in process by
//!   the token endpoint's own code, and a short session of its own (a
//!   sealed `svc.console` cookie holding the access token).
//! - [`session`]: the operator behind a request, checked on every request
//!   exactly as the admin API checks an operator's token (signature,
//!   expiry, revocation, the user not blocked, the role read afresh), and
//!   the CSRF token of its forms.
//! - [`page`]: rendering, the words in Russian and English, the strict
//!   Content-Security-Policy, forms and the confirmation step that every
//!   destructive action goes through.
//! - One module per section: [`users`], [`clients`] (with held
//!   registrations), [`system`] (signing keys per algorithm, audit log),
//!   [`merchants`] (registration, keys, deliveries), [`reports`] (tasks),
//!   [`documents`] (the permission model and brokerage data).
//!
//! What a `support` operator may do is what the admin API lets them do
//! (read users, sessions, grants and the audit log; block, unblock, end
//! sessions, revoke grants); everything else needs `admin`, and the pages
//! do not offer it to support.

// A refusal is the page to answer with: handlers pass `Response`s up as
// their error, as axum's own extractors do.
#![allow(clippy::result_large_err)]

pub mod auth;
pub mod clients;
pub mod documents;
pub mod forms;
pub mod merchants;
pub mod page;
pub mod reports;
pub mod session;
pub mod system;
pub mod texts;
pub mod users;

use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};
use portico_admin::AdminService;
use portico_api::auth::OperatorAuthority;
use portico_crypto::seal::Sealer;
use portico_identity::Identity;
use portico_identity::own_client::OwnClient;
use portico_model::client::LocalizedText;
use portico_model::ids::ClientId;

/// What the console's handlers share.
pub struct Console {
    pub identity: Arc<Identity>,
    pub admin: Arc<AdminService>,
    pub notify: Arc<portico_notify::Notify>,
    pub reports: Arc<portico_reports::Reports>,
    pub permissions: Arc<portico_permissions::service::PermissionService>,
    /// Who is an operator (the admin API's own check).
    pub operators: Arc<dyn OperatorAuthority>,
    /// The console's client at Portico (`operator_client_id`).
    pub client: OwnClient,
    /// Seals the console's cookies (the instance secret's).
    pub sealer: Sealer,
}

pub type ConsoleState = Arc<Console>;

impl Console {
    /// The console's client at Portico: `client_id` (`operator_client_id`)
    /// under `public_url`, whose sign-ins a single sign-on session answers
    /// only within `max_age` seconds of the operator's authentication
    /// (`console_sign_in_max_age_secs`).
    pub fn own_client(client_id: ClientId, public_url: &str, max_age: u32) -> OwnClient {
        OwnClient {
            client_id,
            base: "/console",
            name: LocalizedText {
                ru: "Консоль операторов".to_owned(), en: "Operator console".to_owned()
            },
            public_url: public_url.trim_end_matches('/').to_owned(),
            max_age: Some(max_age),
        }
    }
}

/// Every console route.
pub fn router(state: ConsoleState) -> Router {
    Router::new()
        .route("/console", get(users::home))
        .route("/console/", get(users::home))
        .route("/console/assets/console.css", get(page::css))
        .route("/console/login", get(auth::login))
        .route("/console/callback", get(auth::callback))
        .route("/console/logout", post(auth::logout))
        .route("/console/locale", post(page::locale))
        .route("/console/users", get(users::search).post(users::create))
        .route("/console/users/new", get(users::new_form))
        .route("/console/users/{id}", get(users::read).post(users::update))
        .route("/console/users/{id}/password", post(users::set_password))
        .route("/console/users/{id}/role", post(users::set_role))
        .route("/console/users/{id}/block", post(users::block))
        .route("/console/users/{id}/unblock", post(users::unblock))
        .route("/console/users/{id}/delete", post(users::delete))
        .route("/console/users/{id}/sessions/{sid}/end", post(users::end_session))
        .route("/console/users/{id}/grants/{grant}/revoke", post(users::revoke_grant))
        .route("/console/users/{id}/passkeys/{passkey}/remove", post(users::remove_passkey))
        .route("/console/clients", get(clients::list).post(clients::create))
        .route("/console/clients/new", get(clients::new_form))
        .route("/console/clients/{id}", get(clients::read).post(clients::update))
        .route("/console/clients/{id}/secret", post(clients::rotate_secret))
        .route("/console/clients/{id}/approve", post(clients::approve))
        .route("/console/clients/{id}/delete", post(clients::delete))
        .route("/console/keys", get(system::keys))
        .route("/console/keys/rotate", post(system::rotate_key))
        .route("/console/keys/retire", post(system::retire_key))
        .route("/console/audit", get(system::audit))
        .route("/console/merchants", get(merchants::list).post(merchants::create))
        .route("/console/merchants/{id}", get(merchants::deliveries))
        .route("/console/merchants/{id}/key", post(merchants::rotate_key))
        .route("/console/merchants/{id}/deliveries/{delivery}/resend", post(merchants::resend))
        .route("/console/permissions", get(documents::permissions).post(documents::apply_permissions))
        .route("/console/permissions/document", get(documents::permissions_document))
        .route("/console/brokerage", get(documents::brokerage).post(documents::load_brokerage))
        .route("/console/reports", get(reports::tasks))
        .route("/console/reports/{id}/retry", post(reports::retry))
        .route("/console/{*rest}", get(page::not_found).post(page::not_found))
        .with_state(state)
}
