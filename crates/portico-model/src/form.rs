//! Strict `application/x-www-form-urlencoded` forms (and query strings),
//! read into typed values: the one deserializer of Portico's HTTP edge.
//!
//! The rules, the same for every endpoint:
//! - a parameter the type knows may appear once: a repeat is an error
//!   (RFC 6749 §3.1 and §3.2), never "first wins" or "last wins";
//! - a value holding a NUL character is an error (no Portico parameter can
//!   hold one, and PostgreSQL text cannot store one);
//! - an empty value is an absent one (`Option` fields are `None`, others
//!   missing);
//! - parameters the type does not know are ignored, unread.
//!
//! Each error names its parameter, so that every contract can answer it
//! in its own words (`invalid_request` naming the parameter, a form's
//! error message).
//!
//! ```
//! # use portico_model::form::{Form, Problem};
//! #[derive(Debug, serde::Deserialize)]
//! struct Revoke {
//!     token: String,
//!     token_type_hint: Option<String>,
//! }
//! let form = Form::parse(b"token=abc&token_type_hint=&other=1&other=2");
//! let revoke: Revoke = form.read().unwrap();
//! assert_eq!((revoke.token.as_str(), revoke.token_type_hint), ("abc", None));
//! let repeated = Form::parse(b"token=a&token=b").read::<Revoke>().unwrap_err();
//! assert_eq!((repeated.field.as_str(), repeated.problem), ("token", Problem::Repeated));
//! ```

use std::fmt;

use serde::de::value::StrDeserializer;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer as _, MapAccess, Visitor};
use serde::forward_to_deserialize_any;

/// The parameters of one form or query string, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Form(Vec<(String, String)>);

/// What was wrong with a parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Absent or empty, and required.
    Missing,
    /// Given more than once.
    Repeated,
    /// Not a value of the parameter's type (or holding a NUL character).
    Invalid(String),
}

/// A parameter a form could not be read for, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormError {
    /// The parameter's name.
    pub field: String,
    pub problem: Problem,
}

impl FormError {
    fn new(field: &str, problem: Problem) -> Self {
        Self { field: field.to_owned(), problem }
    }

    /// Names `field` when the error did not know its parameter yet.
    fn at(mut self, field: &str) -> Self {
        if self.field.is_empty() {
            field.clone_into(&mut self.field);
        }
        self
    }
}

impl fmt::Display for FormError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.problem {
            Problem::Missing => write!(f, "{}: required", self.field),
            Problem::Repeated => write!(f, "{}: given more than once", self.field),
            Problem::Invalid(why) => write!(f, "{}: {why}", self.field),
        }
    }
}

impl std::error::Error for FormError {}

impl de::Error for FormError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Self::new("", Problem::Invalid(message.to_string()))
    }

    fn missing_field(field: &'static str) -> Self {
        Self::new(field, Problem::Missing)
    }

    fn duplicate_field(field: &'static str) -> Self {
        Self::new(field, Problem::Repeated)
    }
}

impl Form {
    /// The parameters of `encoded` (a request body or a query string).
    pub fn parse(encoded: &[u8]) -> Self {
        Self(form_urlencoded::parse(encoded).map(|(k, v)| (k.into_owned(), v.into_owned())).collect())
    }

    /// The form as a `T`, by the rules above.
    ///
    /// # Errors
    /// The first parameter (in the form's order) that is repeated, missing
    /// or not a value of its field's type.
    pub fn read<T: DeserializeOwned>(&self) -> Result<T, FormError> {
        T::deserialize(Whole(&self.0))
    }

    /// The form as a `T`, taking a parameter that is repeated or holds a
    /// NUL character as absent instead of refusing the form: the rule of
    /// the login pages' forms, whose contract has no error for either (a
    /// repeated password is no password, and counts as a wrong one).
    ///
    /// # Errors
    /// A required parameter missing, or one not a value of its type.
    pub fn read_lenient<T: DeserializeOwned>(&self) -> Result<T, FormError> {
        let once = |name: &str| self.0.iter().filter(|(k, _)| k == name).count() == 1;
        let kept: Vec<(String, String)> =
            self.0.iter().filter(|(k, v)| once(k) && !v.contains('\0')).cloned().collect();
        T::deserialize(Whole(&kept))
    }

    /// The one value of `name`, for endpoints whose contract orders the
    /// checks of their parameters (`/oauth2/authorize`, logout) and so
    /// reads them one at a time, by the same rules: `None` when absent or
    /// empty.
    ///
    /// # Errors
    /// `name` given more than once, or holding a NUL character.
    pub fn one(&self, name: &str) -> Result<Option<&str>, FormError> {
        let mut values = self.0.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str());
        match (values.next(), values.next()) {
            (_, Some(_)) => Err(FormError::new(name, Problem::Repeated)),
            (Some(value), None) if value.contains('\0') => {
                Err(FormError::new(name, Problem::Invalid("holds a NUL character".to_owned())))
            }
            (Some(""), None) | (None, None) => Ok(None),
            (Some(value), None) => Ok(Some(value)),
        }
    }

    /// Every non-empty value of `name` without a NUL (a form's repeated
    /// checkboxes).
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> {
        self.0.iter().filter(move |(k, v)| k == name && !v.is_empty() && !v.contains('\0')).map(|(_, v)| v.as_str())
    }
}

/// The whole form: a map of its parameters.
struct Whole<'a>(&'a [(String, String)]);

impl<'de> de::Deserializer<'de> for Whole<'_> {
    type Error = FormError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FormError> {
        visitor.visit_map(Pairs { pairs: self.0.iter(), current: None })
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

struct Pairs<'a> {
    pairs: std::slice::Iter<'a, (String, String)>,
    current: Option<&'a (String, String)>,
}

impl<'de> MapAccess<'de> for Pairs<'_> {
    type Error = FormError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, FormError> {
        let Some(pair) = self.pairs.next() else { return Ok(None) };
        self.current = Some(pair);
        let key: StrDeserializer<'_, FormError> = pair.0.as_str().into_deserializer();
        seed.deserialize(key).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, FormError> {
        let (key, value) = self.current.take().ok_or_else(|| de::Error::custom("a value without its name"))?;
        seed.deserialize(Value { key, value }).map_err(|error| error.at(key))
    }
}

/// One parameter's value.
struct Value<'a> {
    key: &'a str,
    value: &'a str,
}

impl<'a> Value<'a> {
    /// The value as text: present, and without a NUL.
    fn text(&self) -> Result<&'a str, FormError> {
        if self.value.is_empty() {
            Err(FormError::new(self.key, Problem::Missing))
        } else if self.value.contains('\0') {
            Err(FormError::new(self.key, Problem::Invalid("holds a NUL character".to_owned())))
        } else {
            Ok(self.value)
        }
    }

    fn number<T: std::str::FromStr>(&self) -> Result<T, FormError> {
        self.text()?.parse().map_err(|_| FormError::new(self.key, Problem::Invalid("not a number".to_owned())))
    }
}

macro_rules! numbers {
    ($($method:ident => $visit:ident),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FormError> {
            visitor.$visit(self.number()?)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Value<'_> {
    type Error = FormError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FormError> {
        visitor.visit_str(self.text()?)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FormError> {
        if self.value.is_empty() { visitor.visit_none() } else { visitor.visit_some(self) }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FormError> {
        match self.text()? {
            "true" => visitor.visit_bool(true),
            "false" => visitor.visit_bool(false),
            _ => Err(FormError::new(self.key, Problem::Invalid("true or false".to_owned()))),
        }
    }

    numbers! {
        deserialize_u8 => visit_u8, deserialize_u16 => visit_u16, deserialize_u32 => visit_u32,
        deserialize_u64 => visit_u64, deserialize_i8 => visit_i8, deserialize_i16 => visit_i16,
        deserialize_i32 => visit_i32, deserialize_i64 => visit_i64
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, FormError> {
        let value: StrDeserializer<'_, FormError> = self.text()?.into_deserializer();
        visitor.visit_enum(value)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, FormError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FormError> {
        visitor.visit_unit()
    }

    forward_to_deserialize_any! {
        i128 u128 f32 f64 char str string bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        Query,
        FormPost,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Request {
        code: String,
        state: Option<String>,
        mode: Option<Mode>,
        max_age: Option<u32>,
        remember: Option<bool>,
    }

    fn read(encoded: &str) -> Result<Request, FormError> {
        Form::parse(encoded.as_bytes()).read()
    }

    fn failure(encoded: &str) -> (String, Problem) {
        let error = read(encoded).unwrap_err();
        (error.field, error.problem)
    }

    #[test]
    fn reads_typed_values_and_ignores_unknown_parameters() {
        let request = read("code=a%20b&mode=form_post&max_age=60&remember=true&x=1&x=2&y=%00").unwrap();
        assert_eq!(
            request,
            Request {
                code: "a b".into(),
                state: None,
                mode: Some(Mode::FormPost),
                max_age: Some(60),
                remember: Some(true)
            }
        );
        assert_eq!(read("code=c&state=&mode=").unwrap().state, None, "empty is absent");
    }

    #[test]
    fn refuses_repeats_nul_missing_and_mistyped_values_naming_them() {
        assert_eq!(failure("code=a&code=b"), ("code".into(), Problem::Repeated));
        assert_eq!(failure("code=a&state=s&state="), ("state".into(), Problem::Repeated));
        assert_eq!(failure("state=s"), ("code".into(), Problem::Missing));
        assert_eq!(failure("code="), ("code".into(), Problem::Missing));
        assert!(matches!(failure("code=a%00b"), (field, Problem::Invalid(_)) if field == "code"));
        assert!(matches!(failure("code=a&state=%00"), (field, Problem::Invalid(_)) if field == "state"));
        assert!(matches!(failure("code=a&mode=fragment"), (field, Problem::Invalid(_)) if field == "mode"));
        assert!(matches!(failure("code=a&max_age=-1"), (field, Problem::Invalid(_)) if field == "max_age"));
        assert!(matches!(failure("code=a&remember=yes"), (field, Problem::Invalid(_)) if field == "remember"));
    }

    #[test]
    fn one_parameter_at_a_time_by_the_same_rules() {
        let form = Form::parse(b"a=1&b=2&b=3&c=&d=x%20y&e=x%00y");
        assert_eq!(form.one("a"), Ok(Some("1")));
        assert_eq!(form.one("b"), Err(FormError::new("b", Problem::Repeated)));
        assert!(matches!(form.one("e"), Err(FormError { problem: Problem::Invalid(_), .. })), "a NUL character");
        assert_eq!(form.one("c"), Ok(None));
        assert_eq!(form.one("d"), Ok(Some("x y")));
        assert_eq!(form.one("z"), Ok(None));
    }

    #[test]
    fn leniently_a_repeated_or_nul_parameter_is_absent() {
        let request: Request = Form::parse(b"code=c&state=a&state=b&max_age=%00").read_lenient().unwrap();
        assert_eq!((request.code.as_str(), request.state, request.max_age), ("c", None, None));
        let missing = Form::parse(b"code=a&code=b").read_lenient::<Request>().unwrap_err();
        assert_eq!((missing.field.as_str(), missing.problem), ("code", Problem::Missing), "required, so missing");
        let mistyped = Form::parse(b"code=a&max_age=x").read_lenient::<Request>().unwrap_err();
        assert_eq!(mistyped.field, "max_age", "a value of the wrong type is still refused");
    }

    #[test]
    fn the_first_problem_in_the_forms_order_is_named() {
        assert_eq!(failure("state=a&state=b&code=c&code=d"), ("state".into(), Problem::Repeated));
        let form = Form::parse(b"g=1&g=&g=%00&g=2");
        let all: Vec<&str> = form.all("g").collect();
        assert_eq!(all, ["1", "2"]);
    }
}
