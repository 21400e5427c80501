//! The HTTP edge of the identity endpoints as the published document
//! describes it: what they read ([`inputs`]: queries, forms, headers,
//! cookies) and the error answers several of them share. The handlers name
//! these in their `#[utoipa::path]`; the document ([`crate::openapi`]) is
//! assembled on top, so nothing here depends on a handler.

use utoipa::IntoResponses;

use crate::oauth2::error::OAuth2ErrorDto;

mod inputs;

pub use inputs::*;

/// The store failed while serving a browser: a short plain-text page.
#[derive(IntoResponses)]
#[allow(dead_code)]
pub enum BrowserUnavailable {
    /// An internal error; details only in the log.
    #[response(status = 500, content_type = "text/plain")]
    Internal(String),
    /// The store is unavailable; try again shortly.
    #[response(status = 503, content_type = "text/plain")]
    Unavailable(String),
}

/// The refusals of userinfo, `GET` and `POST` alike (no body).
#[derive(IntoResponses)]
#[allow(dead_code)]
pub enum UserinfoRefusals {
    /// The token is missing or not valid (also: the user is blocked).
    #[response(status = 401, headers(("WWW-Authenticate" = String, description = "`Bearer` when no token came; \
        `Bearer error=\"invalid_token\"` for a bad one; `DPoP error=\"invalid_dpop_proof\"` (or \
        `\"invalid_token\"`) with `algs` for a token sent with the `DPoP` scheme (RFC 6750 §3.1, RFC 9449 §7.1)")))]
    Unauthorized,
    /// The token was not issued for OpenID Connect: its scope lacks `openid`.
    #[response(status = 403, headers(("WWW-Authenticate" = String, description = "`Bearer \
        error=\"insufficient_scope\", scope=\"openid\"` (under `DPoP`, with `algs`, for a token sent with that \
        scheme; RFC 6750 §3.1)")))]
    InsufficientScope,
    /// The check is temporarily unavailable.
    #[response(status = 503)]
    Unavailable,
}

/// The errors of the token and revoke endpoints.
#[derive(IntoResponses)]
#[allow(dead_code)]
pub enum ClientErrors<'a> {
    /// `invalid_request` (a parameter missing, repeated or malformed; a body that is no form),
    /// `invalid_grant`, `invalid_scope`, `unsupported_grant_type`.
    #[response(status = 400, headers(("Cache-Control" = String, description = "`no-store`")))]
    BadRequest(OAuth2ErrorDto<'a>),
    /// `invalid_client`: the client is unknown or its secret is wrong.
    #[response(status = 401, headers(
        ("WWW-Authenticate" = String, description = "`Basic realm=\"portico\"`"),
        ("Cache-Control" = String, description = "`no-store`")
    ))]
    Unauthorized(OAuth2ErrorDto<'a>),
    /// `server_error`; details only in the log.
    #[response(status = 500)]
    Internal(OAuth2ErrorDto<'a>),
    /// `temporarily_unavailable`: the store is unavailable.
    #[response(status = 503, headers(("Retry-After" = String, description = "Seconds, `5`.")))]
    Unavailable(OAuth2ErrorDto<'a>),
}
