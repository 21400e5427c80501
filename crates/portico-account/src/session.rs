//! Signing customers in and out of the account page, and the customer
//! behind each request.
//!
//! Cookies, all sealed (AES-256-GCM under a key derived from the instance
//! secret), `HttpOnly`, `Path=/account`, and `Secure` unless the server is
//! a plain-HTTP loopback demo:
//! - `svc.account.login` (`SameSite=Lax`, 10 minutes): a sign-in under
//!   way (state, nonce, PKCE verifier, the page to return to).
//! - `svc.account` (`SameSite=Strict`): the access token Portico issued
//!   to the page for the customer, the session (`sid`) it was issued
//!   under and the CSRF token of the page's forms. It lives as long as the
//!   access token; the next visit after that goes through Portico's login
//!   again, which the single sign-on session answers at once.
//! - `svc.account.passkey` (`SameSite=Strict`, 5 minutes): the challenge
//!   of a passkey being added ([`crate::actions`]).

use axum::extract::{FromRequestParts, RawQuery, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use portico_identity::cookies::SetCookies;
use portico_identity::own_client::{Callback, SignInFailed, SignInStarted};
use portico_model::ids::{SessionId, UserId};
use portico_model::user::User;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::page::{self, Form, Refusal};
use crate::{Account, AccountState};

pub const SESSION: &str = "svc.account";
pub const LOGIN: &str = "svc.account.login";
pub const PASSKEY: &str = "svc.account.passkey";
const SESSION_LABEL: &str = "portico account session";
const LOGIN_LABEL: &str = "portico account sign-in";
pub(crate) const PASSKEY_LABEL: &str = "portico account passkey";
/// How long a sign-in may take, from the redirect to Portico's login to
/// the browser's return.
const LOGIN_MAX_AGE: i64 = 600;
/// How long after the user authenticated (the id_token's `auth_time`) the
/// page offers to create a passkey: a new way into the account needs a
/// recent sign-in, not a single sign-on session of many hours that any
/// hand at the browser could use.
pub const FRESH_SIGN_IN_SECS: i64 = 600;

/// The page's session cookie.
#[derive(Serialize, Deserialize)]
struct SessionCookie {
    token: String,
    /// The single sign-on session the token was issued under.
    sid: Option<SessionId>,
    csrf: String,
    /// When the user authenticated (Unix seconds; the id_token's
    /// `auth_time`, kept when single sign-on answers a later sign-in).
    #[serde(default)]
    auth_time: i64,
}

/// The customer signed in to the page.
pub struct Customer {
    pub user: User,
    /// The single sign-on session this browser is signed in with.
    pub sid: Option<SessionId>,
    /// The token every form of this session carries in `_csrf`.
    pub csrf: String,
    /// When the user authenticated (Unix seconds).
    pub auth_time: i64,
    token: String,
}

impl Customer {
    /// Whether the user authenticated at most [`FRESH_SIGN_IN_SECS`]
    /// before `at` (Unix seconds).
    pub fn signed_in_recently(&self, at: i64) -> bool {
        at - self.auth_time <= FRESH_SIGN_IN_SECS
    }
}

impl Account {
    pub(crate) fn seal_cookie<T: Serialize>(&self, label: &str, value: &T) -> String {
        portico_identity::cookies::seal_with(&self.sealer, label, value)
    }

    pub(crate) fn open_cookie<T: DeserializeOwned>(&self, headers: &HeaderMap, name: &str, label: &str) -> Option<T> {
        portico_identity::cookies::open_with(&self.sealer, headers, name, label)
    }

    /// The page's cookies, under `/account` with `same_site`.
    pub(crate) fn cookies(&self, same_site: &'static str) -> SetCookies {
        SetCookies::scoped(self.identity.settings.secure_cookies, "/account", same_site)
    }

    /// The signed-in customer of this request. Without one (no session,
    /// an expired or revoked token, a blocked or deleted user) the answer
    /// is Portico's login, back to `back` afterwards.
    ///
    /// # Errors
    /// The refusal to answer instead: that redirect, or a page saying the
    /// store is unavailable.
    pub async fn customer(&self, headers: &HeaderMap, back: &str) -> Result<Customer, Refusal> {
        let sign_in = || Refusal::SignIn(back.to_owned());
        let cookie = self.open_cookie::<SessionCookie>(headers, SESSION, SESSION_LABEL).ok_or_else(sign_in)?;
        let claims = match self.identity.tokens.check_access_token(&cookie.token).await {
            Ok(claims) => claims,
            Err(portico_tokens::AccessTokenError::Unavailable(_)) => return Err(Refusal::unavailable(headers)),
            Err(_) => return Err(sign_in()),
        };
        if claims.client_id != self.client.client_id.as_str() || claims.cnf.is_some() {
            return Err(sign_in());
        }
        let id = uuid::Uuid::parse_str(&claims.sub).map(UserId::from).map_err(|_| sign_in())?;
        match self.identity.store.find_user(id).await {
            Ok(Some(user)) if user.may_sign_in() => Ok(Customer {
                user,
                sid: cookie.sid,
                csrf: cookie.csrf,
                auth_time: cookie.auth_time,
                token: cookie.token,
            }),
            Ok(_) => Err(sign_in()),
            Err(_) => Err(Refusal::unavailable(headers)),
        }
    }

    /// The customer of a form: signed in, and the form's `_csrf` is their
    /// session's (compared in constant time). A form sent after the
    /// session ended is not acted on: the customer signs in again and is
    /// back on the page.
    ///
    /// # Errors
    /// As [`Account::customer`]; a 403 page for a form without the token.
    pub async fn form_customer(&self, headers: &HeaderMap, form: &Form) -> Result<Customer, Refusal> {
        let customer = self.customer(headers, "/account/").await?;
        if portico_crypto::constant_time_eq(form.csrf().as_bytes(), customer.csrf.as_bytes()) {
            Ok(customer)
        } else {
            Err(Refusal::page(headers, StatusCode::FORBIDDEN, "error.csrf"))
        }
    }
}

/// The page a request is for, to come back to after signing in.
fn requested_page(parts: &Parts) -> &str {
    parts.uri.path_and_query().map_or("/account/", axum::http::uri::PathAndQuery::as_str)
}

impl FromRequestParts<AccountState> for Customer {
    type Rejection = Refusal;

    async fn from_request_parts(parts: &mut Parts, account: &AccountState) -> Result<Self, Refusal> {
        account.customer(&parts.headers, requested_page(parts)).await
    }
}

/// An account page address to return to: a path under `/account`, else
/// the page itself.
pub fn safe_back(back: &str) -> String {
    portico_identity::own_client::safe_back("/account", back)
}

/// A 303 to `location` (a path on this server), never cached.
pub fn see_other(location: &str) -> Response {
    portico_identity::own_client::see_other(location, "/account/")
}

/// Off to Portico's login, through the page's own start.
pub(crate) fn sign_in(back: &str) -> Response {
    let back: String = form_urlencoded::byte_serialize(safe_back(back).as_bytes()).collect();
    see_other(&format!("/account/login?back={back}"))
}

/// The sign-in's query: the page to come back to, and whether the user
/// must authenticate again (`fresh`, any value) even with a live single
/// sign-on session.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct SignIn {
    pub back: Option<String>,
    pub fresh: Option<String>,
}

/// `GET /account/login`: off to Portico's authorization endpoint.
pub async fn login(State(account): State<AccountState>, headers: HeaderMap, RawQuery(raw): RawQuery) -> Response {
    let query: SignIn = page::query(raw.as_deref());
    let back = safe_back(query.back.as_deref().unwrap_or("/account/"));
    let (started, location) = account.client.start(back, page::language(&headers), query.fresh.is_some());
    let sealed = account.seal_cookie(LOGIN_LABEL, &started);
    let mut response = see_other(&location);
    let mut cookies = account.cookies("Lax");
    cookies.set(LOGIN, &sealed, Some(LOGIN_MAX_AGE));
    cookies.apply(response.headers_mut());
    response
}

/// `GET /account/callback`: the end of a sign-in. Any user who may sign in
/// gets the page's session.
pub async fn callback(State(account): State<AccountState>, headers: HeaderMap, RawQuery(raw): RawQuery) -> Response {
    let query: Callback = page::query(raw.as_deref());
    let started = account.open_cookie::<SignInStarted>(&headers, LOGIN, LOGIN_LABEL);
    let mut response = match account.client.finish(&account.identity, started.as_ref(), &query).await {
        Ok(signed_in) => {
            let back = started.map_or_else(|| "/account/".to_owned(), |s| s.back);
            tracing::info!(user = %signed_in.claims.sub, "a customer signed in to the account page");
            let cookie = SessionCookie {
                token: signed_in.tokens.access_token,
                sid: signed_in.claims.sid,
                csrf: portico_crypto::random::token(),
                auth_time: signed_in.claims.auth_time,
            };
            let mut response = see_other(&back);
            let mut cookies = account.cookies("Strict");
            cookies.set(SESSION, &account.seal_cookie(SESSION_LABEL, &cookie), Some(signed_in.tokens.expires_in));
            cookies.apply(response.headers_mut());
            response
        }
        Err(failed) => {
            let (status, key) = match failed {
                SignInFailed::Lost => (StatusCode::BAD_REQUEST, "error.sign_in_lost"),
                SignInFailed::Refused => (StatusCode::FORBIDDEN, "error.sign_in_refused"),
                SignInFailed::NoClient | SignInFailed::Unavailable => {
                    (StatusCode::SERVICE_UNAVAILABLE, "error.unavailable")
                }
            };
            Refusal::page(&headers, status, key).into_response()
        }
    };
    let mut cookies = account.cookies("Lax");
    cookies.clear(LOGIN);
    cookies.apply(response.headers_mut());
    response
}

/// `POST /account/logout`: the page's grant revoked, its session cleared,
/// then Portico's logout (which ends the single sign-on session). A forged
/// sign-out can only sign the customer out.
pub async fn logout(State(account): State<AccountState>, headers: HeaderMap, body: axum::body::Body) -> Response {
    let form = Form::read(&headers, body).await.unwrap_or_default();
    if let Ok(customer) = account.form_customer(&headers, &form).await
        && let Ok(claims) = account.identity.tokens.check_access_token(&customer.token).await
    {
        let now = account.identity.clock.now();
        if let Err(error) = account.identity.store.revoke_grant(claims.gid, now).await {
            tracing::warn!(%error, "the account page could not revoke its grant at sign-out");
        }
    }
    let mut response = see_other(&account.client.sign_out_url());
    let mut cookies = account.cookies("Strict");
    cookies.clear(SESSION).clear(PASSKEY);
    cookies.apply(response.headers_mut());
    response
}

#[cfg(test)]
mod tests {
    use super::safe_back;

    #[test]
    fn only_account_paths_are_returned_to() {
        assert_eq!(safe_back("/account/?done=passkey_added"), "/account/?done=passkey_added");
        for hostile in
            ["https://evil.example/", "//evil.example", "/account//evil", "/accounts", "/console/", "/account/\r\nx"]
        {
            assert_eq!(safe_back(hostile), "/account/", "{hostile}");
        }
    }
}
