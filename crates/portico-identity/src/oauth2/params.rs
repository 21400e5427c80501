//! Strict `application/x-www-form-urlencoded` parameters: RFC 6749 §3.1 and
//! §3.2 forbid repeating a parameter, so a repeat is an error rather than
//! "first wins" or "last wins". A value with a NUL character is an error too:
//! no Portico parameter can hold one, and PostgreSQL text cannot store one.

use axum::body::{Body, to_bytes};
use axum::http::{HeaderMap, header};

use portico_model::form::Form;

use super::error::OAuthError;

/// Parameters of one request, in order.
#[derive(Debug, Default)]
pub struct Params(Vec<(String, String)>);

/// A parameter that appears more than once or holds a NUL character.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadParam(pub &'static str);

impl Params {
    pub fn parse(encoded: &[u8]) -> Self {
        Self(form_urlencoded::parse(encoded).map(|(k, v)| (k.into_owned(), v.into_owned())).collect())
    }

    /// The one value of `name`; `Ok(None)` when absent or empty.
    ///
    /// # Errors
    /// [`BadParam`] when `name` appears more than once or holds a NUL.
    pub fn one(&self, name: &'static str) -> Result<Option<&str>, BadParam> {
        let mut values = self.0.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str());
        match (values.next(), values.next()) {
            (_, Some(_)) => Err(BadParam(name)),
            (Some(value), None) if value.contains('\0') => Err(BadParam(name)),
            (Some(""), None) | (None, None) => Ok(None),
            (Some(value), None) => Ok(Some(value)),
        }
    }

    /// Every value of `name` (a form's repeated checkboxes), without NULs.
    pub fn all(&self, name: &str) -> impl Iterator<Item = &str> {
        self.0.iter().filter(move |(k, v)| k == name && !v.contains('\0')).map(|(_, v)| v.as_str())
    }
}

/// Reads a form body: checks the content type and the size limit.
///
/// # Errors
/// `invalid_request` for another content type, an oversized or unreadable body.
pub async fn read_form(headers: &HeaderMap, body: Body, limit: usize) -> Result<Form, OAuthError> {
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/x-www-form-urlencoded"));
    if !is_form {
        return Err(OAuthError::bad_request("the body must be application/x-www-form-urlencoded"));
    }
    let bytes = to_bytes(body, limit)
        .await
        .map_err(|_| OAuthError::bad_request(format!("the body must be at most {limit} bytes")))?;
    Ok(Form::parse(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_values_repeats_and_blanks() {
        let params = Params::parse(b"a=1&b=2&b=3&c=&d=x%20y&e=x%00y");
        assert_eq!(params.one("a"), Ok(Some("1")));
        assert_eq!(params.one("b"), Err(BadParam("b")));
        assert_eq!(params.one("e"), Err(BadParam("e")), "a NUL character");
        assert_eq!(params.one("c"), Ok(None));
        assert_eq!(params.one("d"), Ok(Some("x y")));
        assert_eq!(params.one("z"), Ok(None));
    }
}
