//! The console's own session and the operator behind each request.
//!
//! Two cookies, both sealed (AES-256-GCM under a key derived from the
//! instance secret, so every node of a cluster opens them), `HttpOnly`,
//! `Path=/console`, and `Secure` unless the server is a plain-HTTP
//! loopback demo:
//! - `svc.console.login` (`SameSite=Lax`, 10 minutes): the `state`,
//!   `nonce` and PKCE verifier of a sign-in under way, and the page to
//!   return to.
//! - `svc.console` (`SameSite=Strict`): the access token Portico issued to
//!   the console for the operator, and the CSRF token of the console's
//!   forms. It lives as long as the access token
//!   (`tokens.access_token_ttl_secs`, 15 minutes by default); after that
//!   the next page goes through Portico's login again, which the single
//!   sign-on session answers at once while it lasts.
//!
//! Every request is checked as the admin API checks an operator's token:
//! the signature, expiry and revocation of the token, its client, the user
//! not blocked, and the role read afresh, so a block or a role taken away
//! ends the operator's console at their next click.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use portico_api::Admin;
use portico_api::auth::Role;
use portico_identity::cookies::SetCookies;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::forms::Form;
use crate::page::Refusal;
use crate::{Console, ConsoleState};

pub const SESSION: &str = "svc.console";
pub const LOGIN: &str = "svc.console.login";
const SESSION_LABEL: &str = "portico console session";
pub(crate) const LOGIN_LABEL: &str = "portico console sign-in";
/// How long a sign-in may take, from the console's redirect to Portico's
/// login to the browser's return.
pub(crate) const LOGIN_MAX_AGE: i64 = 600;

/// The console session's cookie.
#[derive(Serialize, Deserialize)]
pub(crate) struct SessionCookie {
    /// The access token Portico issued to the console for the operator.
    pub(crate) token: String,
    pub(crate) csrf: String,
}

/// An operator signed in to the console.
pub struct Operator {
    /// Who (for the audit log) and with which role.
    pub admin: Admin,
    /// The token every form of this session carries in `_csrf`.
    pub csrf: String,
    /// The access token, to revoke its grant at sign-out.
    pub(crate) token: String,
}

impl Operator {
    pub fn is_admin(&self) -> bool {
        self.admin.role == Role::Admin
    }

    /// The login shown in the header (the actor without its `operator:`).
    pub fn login(&self) -> String {
        let actor = self.admin.actor.to_string();
        actor.strip_prefix("operator:").unwrap_or(&actor).to_owned()
    }

    pub fn role(&self) -> &'static str {
        self.admin.role.as_str()
    }
}

impl Console {
    pub(crate) fn seal_cookie<T: Serialize>(&self, label: &str, value: &T) -> String {
        portico_identity::cookies::seal_with(&self.sealer, label, value)
    }

    pub(crate) fn open_cookie<T: DeserializeOwned>(&self, headers: &HeaderMap, name: &str, label: &str) -> Option<T> {
        portico_identity::cookies::open_with(&self.sealer, headers, name, label)
    }

    /// The console's cookies, under `/console` with `same_site`.
    pub(crate) fn cookies(&self, same_site: &'static str) -> SetCookies {
        SetCookies::scoped(self.identity.settings.secure_cookies, "/console", same_site)
    }

    /// The session cookie for `token`, valid `max_age` seconds.
    pub(crate) fn session_cookie(&self, token: String, max_age: i64) -> SetCookies {
        let cookie = SessionCookie { token, csrf: portico_crypto::random::token() };
        let mut cookies = self.cookies("Strict");
        cookies.set(SESSION, &self.seal_cookie(SESSION_LABEL, &cookie), Some(max_age));
        cookies
    }

    /// The signed-in operator of this request. Without one (no session,
    /// an expired or revoked token, a role taken away) the answer is a
    /// redirect through Portico's login, back to `back` afterwards.
    ///
    /// # Errors
    /// The refusal to answer instead: that redirect, or a page saying the
    /// store is unavailable.
    pub async fn operator(&self, headers: &HeaderMap, back: &str) -> Result<Operator, Refusal> {
        let Some(cookie) = self.open_cookie::<SessionCookie>(headers, SESSION, SESSION_LABEL) else {
            return Err(Refusal::SignIn(back.to_owned()));
        };
        match self.operators.operator(&cookie.token).await {
            Ok(Some(admin)) => Ok(Operator { admin, csrf: cookie.csrf, token: cookie.token }),
            Ok(None) => Err(Refusal::SignIn(back.to_owned())),
            Err(error) => {
                tracing::warn!(status = error.status().as_u16(), "the console could not check an operator");
                Err(Refusal::unavailable(headers))
            }
        }
    }

    /// The operator of a form: signed in, and the form's `_csrf` is their
    /// session's (compared in constant time). A form sent after the
    /// session ended is not acted on: the operator signs in again and is
    /// back on `page`, the page the form was on.
    ///
    /// # Errors
    /// As [`Console::operator`]; a 403 page for a form without the token.
    pub async fn form_operator(&self, headers: &HeaderMap, form: &Form, page: &str) -> Result<Operator, Refusal> {
        let operator = self.operator(headers, page).await?;
        if portico_crypto::constant_time_eq(form.csrf().as_bytes(), operator.csrf.as_bytes()) {
            Ok(operator)
        } else {
            Err(Refusal::page(headers, StatusCode::FORBIDDEN, "error.csrf"))
        }
    }
}

/// The page a request is for, to come back to after signing in.
fn requested_page(parts: &Parts) -> &str {
    parts.uri.path_and_query().map_or("/console/", axum::http::uri::PathAndQuery::as_str)
}

/// Every console page takes its operator this way: signed in (otherwise
/// the answer is the sign-in, back to the page asked for), the role read
/// afresh.
impl FromRequestParts<ConsoleState> for Operator {
    type Rejection = Refusal;

    async fn from_request_parts(parts: &mut Parts, console: &ConsoleState) -> Result<Self, Refusal> {
        console.operator(&parts.headers, requested_page(parts)).await
    }
}

/// The operator of a page only admins may open: a support operator gets a
/// 403 page naming the role needed.
pub struct AdminOperator(pub Operator);

impl FromRequestParts<ConsoleState> for AdminOperator {
    type Rejection = Refusal;

    async fn from_request_parts(parts: &mut Parts, console: &ConsoleState) -> Result<Self, Refusal> {
        console.admin_operator(&parts.headers, requested_page(parts)).await.map(Self)
    }
}

impl Console {
    /// The signed-in operator of a page only admins may open.
    ///
    /// # Errors
    /// As [`Console::operator`]; a 403 page for support.
    pub async fn admin_operator(&self, headers: &HeaderMap, back: &str) -> Result<Operator, Refusal> {
        let operator = self.operator(headers, back).await?;
        require_admin(headers, operator)
    }

    /// A form (at most `limit` bytes) sent from `page`, its own fields as
    /// a `T`, and its operator: signed in, the form's CSRF token theirs, and
    /// an admin when `admin`. The fields are read once the operator is
    /// known: a forged form learns nothing.
    ///
    /// # Errors
    /// The refusal to answer instead: an unreadable form, a sign-in, a 403.
    pub async fn read_form<T: serde::de::DeserializeOwned>(
        &self,
        headers: &HeaderMap,
        body: axum::body::Body,
        page: &str,
        admin: bool,
        limit: usize,
    ) -> Result<(T, Form, Operator), Refusal> {
        let form = Form::read_up_to(headers, body, limit).await?;
        let operator = self.form_operator(headers, &form, page).await?;
        let operator = if admin { require_admin(headers, operator)? } else { operator };
        Ok((form.fields(headers)?, form, operator))
    }
}

/// The operator, when their role is `admin`.
///
/// # Errors
/// A 403 page naming the role needed.
pub fn require_admin(headers: &HeaderMap, operator: Operator) -> Result<Operator, Refusal> {
    if operator.is_admin() {
        Ok(operator)
    } else {
        Err(Refusal::page(headers, StatusCode::FORBIDDEN, "error.admin_only"))
    }
}

/// A console address to return to: a path under `/console`, else the
/// console's first page.
pub fn safe_back(back: &str) -> String {
    portico_identity::own_client::safe_back("/console", back)
}

/// Off to Portico's login, through the console's own start.
pub(crate) fn sign_in(back: &str) -> Response {
    let back: String = form_urlencoded::byte_serialize(safe_back(back).as_bytes()).collect();
    see_other(&format!("/console/login?back={back}"))
}

/// A 303 to `location` (a path on this server), never cached; to the
/// console's first page should `location` be nothing a header can carry.
pub fn see_other(location: &str) -> Response {
    portico_identity::own_client::see_other(location, "/console/")
}

#[cfg(test)]
mod tests {
    use super::safe_back;

    #[test]
    fn only_console_paths_are_returned_to() {
        assert_eq!(safe_back("/console/users?phone=%2B7900"), "/console/users?phone=%2B7900");
        assert_eq!(safe_back("/console"), "/console");
        for hostile in [
            "https://evil.example/",
            "//evil.example",
            "/console//evil",
            "/consoles",
            "/login",
            "/console/\\x",
            "/console/\0x",
            "/console/\r\nSet-Cookie: x=y",
            "/console/a b",
            "/console/пользователи",
            "/console/\u{7f}",
        ] {
            assert_eq!(safe_back(hostile), "/console/", "{hostile}");
        }
    }
}
