//! The console's forms, read by the one reader ([`portico_model::form`])
//! strictly: each field at most once, none holding a NUL character; a form
//! that is not one is the 400 page. Each handler reads its form as a type
//! (beside the handler); the helpers here say how a field of a page reads:
//! a text field trimmed, blank meaning absent ([`trimmed`]); a text area as
//! its non-blank lines ([`lines`]); a checkbox ticked when sent
//! ([`ticked`]).

use axum::body::{Body, to_bytes};
use axum::http::{HeaderMap, StatusCode};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};

use crate::page::{MAX_FORM, Refusal};

/// A console form: its fields in order (a confirmation page carries them
/// on) and what every form carries besides its own fields.
#[derive(Debug, Default)]
pub struct Form {
    fields: portico_model::form::Form,
    guard: Guard,
}

/// What every console form carries: the CSRF token and, once the operator
/// confirmed on the confirmation page, `confirm=yes`.
#[derive(Debug, Default, Deserialize)]
struct Guard {
    #[serde(rename = "_csrf")]
    csrf: Option<String>,
    confirm: Option<String>,
}

impl Form {
    /// Reads an `application/x-www-form-urlencoded` body of at most 64 KiB.
    ///
    /// # Errors
    /// A 400 page for a larger or unreadable body, or a repeated guard field.
    pub async fn read(headers: &HeaderMap, body: Body) -> Result<Self, Refusal> {
        Self::read_up_to(headers, body, MAX_FORM).await
    }

    /// Reads a form of at most `limit` bytes (a document's).
    ///
    /// # Errors
    /// A 400 page for a larger or unreadable body, or a repeated guard field.
    pub async fn read_up_to(headers: &HeaderMap, body: Body, limit: usize) -> Result<Self, Refusal> {
        let bytes = to_bytes(body, limit).await.map_err(|_| not_a_form(headers))?;
        let fields = portico_model::form::Form::parse(&bytes);
        let guard = fields.read().map_err(|_| not_a_form(headers))?;
        Ok(Self { fields, guard })
    }

    /// The form's own fields as a `T`.
    ///
    /// # Errors
    /// A 400 page for a field given twice, holding a NUL, or not of its type.
    pub fn fields<T: DeserializeOwned>(&self, headers: &HeaderMap) -> Result<T, Refusal> {
        self.fields.read().map_err(|_| not_a_form(headers))
    }

    /// The CSRF token the form carries (empty when none).
    pub fn csrf(&self) -> &str {
        self.guard.csrf.as_deref().unwrap_or_default()
    }

    /// Whether the operator has confirmed the action (`confirm=yes`).
    pub fn confirmed(&self) -> bool {
        self.guard.confirm.as_deref() == Some("yes")
    }

    /// Every field but the guard's, to carry through the confirmation page.
    pub fn carried(&self) -> Vec<(String, String)> {
        let own = |key: &str| key != "_csrf" && key != "confirm";
        self.fields.pairs().filter(|(key, _)| own(key)).map(|(k, v)| (k.to_owned(), v.to_owned())).collect()
    }
}

fn not_a_form(headers: &HeaderMap) -> Refusal {
    Refusal::page(headers, StatusCode::BAD_REQUEST, "error.form")
}

/// A form with no fields of its own (a confirmed action's).
#[derive(Debug, Default, Deserialize)]
pub struct NoFields {}

/// What a form's `revision` field asks of the stored revision: `None`
/// without the field (the change is made on what is stored); else only
/// that revision (one that is not a number matches none).
pub fn revision(field: Option<&str>) -> Option<Vec<u64>> {
    field.map(|revision| revision.parse().ok().into_iter().collect())
}

/// A text field: trimmed; blank is absent.
///
/// # Errors
/// The reader's, for a field that is no text.
pub fn trimmed<'de, D: Deserializer<'de>>(field: D) -> Result<Option<String>, D::Error> {
    Ok(Option::<String>::deserialize(field)?.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()))
}

/// A text area: its lines, trimmed, without blank ones.
///
/// # Errors
/// The reader's, for a field that is no text.
pub fn lines<'de, D: Deserializer<'de>>(field: D) -> Result<Vec<String>, D::Error> {
    let text = Option::<String>::deserialize(field)?.unwrap_or_default();
    Ok(text.lines().map(str::trim).filter(|line| !line.is_empty()).map(str::to_owned).collect())
}

/// A checkbox: ticked when the browser sent it.
///
/// # Errors
/// The reader's, for a field that is no text.
pub fn ticked<'de, D: Deserializer<'de>>(field: D) -> Result<bool, D::Error> {
    Ok(Option::<String>::deserialize(field)?.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, Deserialize)]
    #[serde(default)]
    struct Sample {
        #[serde(deserialize_with = "trimmed")]
        name: Option<String>,
        #[serde(deserialize_with = "lines")]
        uris: Vec<String>,
        #[serde(deserialize_with = "ticked")]
        consent: bool,
        raw: Option<String>,
    }

    fn form(encoded: &[u8]) -> Form {
        let fields = portico_model::form::Form::parse(encoded);
        let guard = fields.read().unwrap_or_default();
        Form { fields, guard }
    }

    #[test]
    fn fields_read_as_the_pages_mean_them() {
        let headers = HeaderMap::new();
        let sample: Sample =
            form(b"name=+Ann+&uris=a%0D%0A%0D%0A++b+&consent=yes&raw=+x+&_csrf=t").fields(&headers).unwrap();
        assert_eq!(sample.name.as_deref(), Some("Ann"));
        assert_eq!(sample.uris, ["a", "b"]);
        assert!(sample.consent);
        assert_eq!(sample.raw.as_deref(), Some(" x "), "a field without a helper is as sent");
        let blank: Sample = form(b"name=+++&uris=").fields(&headers).unwrap();
        assert_eq!((blank.name, blank.uris.len(), blank.consent), (None, 0, false));
    }

    #[test]
    fn a_repeated_field_or_a_nul_is_no_form() {
        let headers = HeaderMap::new();
        assert!(form(b"name=a&name=b").fields::<Sample>(&headers).is_err());
        assert!(form(b"raw=a%00b").fields::<Sample>(&headers).is_err());
        assert!(form(b"other=1&other=2").fields::<Sample>(&headers).is_ok(), "fields a form does not know are left");
    }

    #[test]
    fn the_guard_and_what_a_confirmation_carries() {
        let confirmed = form(b"_csrf=t&reason=r&confirm=yes");
        assert_eq!((confirmed.csrf(), confirmed.confirmed()), ("t", true));
        assert_eq!(confirmed.carried(), [("reason".to_owned(), "r".to_owned())]);
        assert!(!form(b"_csrf=t&confirm=no").confirmed());
        assert_eq!(form(b"reason=r").csrf(), "");
    }
}
