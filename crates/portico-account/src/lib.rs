//! The customer's own security page at `/account`: their passkeys (add,
//! rename, remove), their single sign-on sessions (current and others, by
//! browser and time; end one or all others) and their trusted devices
//! (forget one).
//!
//! - [`session`]: the page is an OpenID Connect client of Portico itself
//!   (`account_client_id`, default `portico-account`, registered at start;
//!   [`portico_identity::own_client`]), signed in through Portico's own
//!   login like the operator console, with a short session of its own (the
//!   sealed `svc.account` cookie, `Path=/account`, `SameSite=Strict`,
//!   holding the access token and the CSRF token of its forms). Every
//!   request checks the token afresh (signature, expiry, revocation, its
//!   client, the user not blocked).
//! - [`page`]: rendering in the bank's look (the login pages' stylesheet,
//!   theme and logo), the words in Russian and English, the
//!   Content-Security-Policy (the console's, plus the page's own script,
//!   which WebAuthn needs), and the pages that say why something was
//!   refused.
//! - [`actions`]: what the forms do, each audited as the `account` actor
//!   with the user: a passkey created (its challenge sealed in a cookie of
//!   five minutes and spent once on every node), renamed or removed (after
//!   a confirmation), a session ended, a device forgotten.

// A refusal is the page to answer with: handlers pass `Response`s up as
// their error, as axum's own extractors do.
#![allow(clippy::result_large_err)]

pub mod actions;
pub mod page;
pub mod session;
pub mod texts;

use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};
use portico_crypto::seal::Sealer;
use portico_identity::Identity;
use portico_identity::own_client::OwnClient;
use portico_model::client::LocalizedText;
use portico_model::ids::ClientId;

/// What the account page's handlers share.
pub struct Account {
    pub identity: Arc<Identity>,
    /// The page's client at Portico (`account_client_id`).
    pub client: OwnClient,
    /// Seals the page's cookies (a key derived from the instance secret,
    /// so that every node opens them).
    pub sealer: Sealer,
}

pub type AccountState = Arc<Account>;

impl Account {
    /// The page's client at Portico: `client_id` under `public_url`.
    pub fn own_client(client_id: ClientId, public_url: &str) -> OwnClient {
        OwnClient {
            client_id,
            base: "/account",
            name: LocalizedText { ru: "Мой аккаунт".to_owned(), en: "My account".to_owned() },
            public_url: public_url.trim_end_matches('/').to_owned(),
            max_age: None,
        }
    }
}

/// Every route of the account page.
pub fn router(state: AccountState) -> Router {
    Router::new()
        .route("/account", get(actions::home))
        .route("/account/", get(actions::home))
        .route("/account/assets/account.css", get(page::css))
        .route("/account/assets/account.js", get(page::js))
        .route("/account/login", get(session::login))
        .route("/account/callback", get(session::callback))
        .route("/account/logout", post(session::logout))
        .route("/account/locale", post(page::locale))
        .route("/account/passkeys", post(actions::add_passkey))
        .route("/account/passkeys/{id}/rename", post(actions::rename_passkey))
        .route("/account/passkeys/{id}/remove", get(actions::confirm_removal).post(actions::remove_passkey))
        .route("/account/sessions/{sid}/end", post(actions::end_session))
        .route("/account/sessions/end-others", post(actions::end_other_sessions))
        .route("/account/devices/{handle}/forget", post(actions::forget_device))
        .route("/account/{*rest}", get(page::not_found).post(page::not_found))
        .with_state(state)
}
