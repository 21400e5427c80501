//! Reading the form body of the token and revoke endpoints; its
//! parameters are then read by the one strict deserializer
//! ([`portico_model::form`]).

use axum::body::{Body, to_bytes};
use axum::http::{HeaderMap, header};

use portico_model::form::Form;

use super::error::OAuthError;

/// Reads a form body: checks the content type and the size limit.
///
/// # Errors
/// `invalid_request` for another content type, an oversized or unreadable body.
pub async fn read_form(headers: &HeaderMap, body: Body, limit: usize) -> Result<Form, OAuthError> {
    if !is_form(headers) {
        return Err(OAuthError::bad_request("the body must be application/x-www-form-urlencoded"));
    }
    let bytes = to_bytes(body, limit)
        .await
        .map_err(|_| OAuthError::bad_request(format!("the body must be at most {limit} bytes")))?;
    Ok(Form::parse(&bytes))
}

/// Whether the request's body is declared `application/x-www-form-urlencoded`.
pub fn is_form(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/x-www-form-urlencoded"))
}
