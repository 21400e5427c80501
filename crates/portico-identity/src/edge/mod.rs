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
