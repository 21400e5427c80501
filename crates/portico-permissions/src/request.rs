//! What every operation reads from the request: the caller (the shared
//! token-pair extractor, refused in this API's words), the consumer system
//! id, and array parameters.

use axum::extract::FromRequestParts;
use axum::extract::path::ErrorKind;
use axum::extract::rejection::PathRejection;
use axum::http::HeaderMap;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use portico_tokens::TokenPairError;

use crate::PermissionsApi;
use crate::error::PermissionError;

/// Most values an array parameter may hold.
pub const MAX_ARRAY: usize = 100;
/// Longest `cnum` or object path accepted in a request.
pub const MAX_VALUE: usize = 64;

/// The caller of a permission API operation: a checked token pair, or the
/// API's 401 / 500 in its own body.
pub type Caller = portico_api::TokenPair<Refusal>;

/// The permission API's answer to a refused token pair.
pub struct Refusal;

impl portico_api::PairRefusal for Refusal {
    fn refusal(error: TokenPairError) -> Response {
        PermissionError::from(error).into_response()
    }
}

impl portico_api::HasTokenVerifier for PermissionsApi {
    fn token_verifier(&self) -> &portico_tokens::TokenVerifier {
        &self.tokens
    }
}

/// The `x-system-id` header the current operations require, after the
/// token pair.
///
/// # Errors
/// `header_is_missing`.
pub fn system_id(headers: &HeaderMap) -> Result<(), PermissionError> {
    let system_id = headers.get("x-system-id").and_then(|v| v.to_str().ok()).map(str::trim);
    if system_id.is_none_or(str::is_empty) {
        return Err(PermissionError::HeaderMissing("x-system-id"));
    }
    Ok(())
}

/// The `x-system-id` header, as an extractor: it comes after the token
/// pair in each operation's arguments, so a request without either is
/// refused for the token pair first.
pub struct SystemId;

impl<S: Send + Sync> FromRequestParts<S> for SystemId {
    type Rejection = PermissionError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, PermissionError> {
        system_id(&parts.headers).map(|()| Self)
    }
}

/// A single text parameter: present, at most [`MAX_VALUE`] characters, no
/// control character, no white space around it (the published documents
/// state it as `maxLength` and a `pattern`).
///
/// # Errors
/// `bad_request` naming `parameter`.
pub fn value(parameter: &'static str, raw: &str) -> Result<String, PermissionError> {
    if raw.is_empty() {
        return Err(PermissionError::bad_request(parameter, format!("{parameter} is missing")));
    }
    if raw.chars().count() > MAX_VALUE || raw.chars().any(char::is_control) {
        return Err(PermissionError::bad_request(
            parameter,
            format!("{parameter} must be at most {MAX_VALUE} printable characters"),
        ));
    }
    if raw.trim() != raw {
        return Err(PermissionError::bad_request(
            parameter,
            format!("{parameter} must not start or end with white space"),
        ));
    }
    Ok(raw.to_owned())
}

/// An array parameter holding an empty or invalid value.
fn invalid_element(parameter: &'static str) -> PermissionError {
    PermissionError::bad_request(
        parameter,
        format!("{parameter} holds an empty or invalid value; give a comma-separated list"),
    )
}

/// A path the router matched whose parameters could not be read: one of
/// them is not UTF-8 once percent-decoded (`%FF`). `bad_request` naming
/// that one of `names` (the operation's parameters, in path order).
pub fn segment_error(names: &[&'static str], rejection: &PathRejection) -> PermissionError {
    let failed = match rejection {
        PathRejection::FailedToDeserializePathParams(e) => match e.kind() {
            ErrorKind::InvalidUtf8InPathParam { key } => names.iter().find(|name| **name == key.as_str()),
            _ => None,
        },
        _ => None,
    };
    let parameter = failed.or(names.first()).copied().unwrap_or("path");
    PermissionError::bad_request(parameter, format!("{parameter} is not a valid path segment"))
}

/// The values of an array parameter given as `a,b,c` in one or more places.
///
/// # Errors
/// `bad_request` naming `parameter` for an empty array, an empty element,
/// more than [`MAX_ARRAY`] values or an invalid value.
pub fn array<'a>(
    parameter: &'static str,
    parts: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<String>, PermissionError> {
    let mut values = Vec::new();
    for part in parts {
        for element in part.split(',') {
            if values.len() == MAX_ARRAY {
                return Err(PermissionError::bad_request(
                    parameter,
                    format!("{parameter} holds more than {MAX_ARRAY} values"),
                ));
            }
            values.push(value(parameter, element).map_err(|_| invalid_element(parameter))?);
        }
    }
    if values.is_empty() {
        return Err(PermissionError::bad_request(parameter, format!("{parameter} is empty")));
    }
    Ok(values)
}

/// The `cnum` query array (repeated and/or comma-separated), `None` when absent.
///
/// # Errors
/// As [`array`].
pub fn cnum_query(query: Option<&str>) -> Result<Option<Vec<String>>, PermissionError> {
    // An array parameter: every value of `cnum`, each checked by `array`.
    let query = portico_model::form::Form::parse(query.unwrap_or_default().as_bytes());
    let cnums = query.values("cnum").map_err(|_| invalid_element("cnum"))?;
    if cnums.is_empty() {
        return Ok(None);
    }
    array("cnum", cnums).map(Some)
}
