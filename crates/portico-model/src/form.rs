//! Strict `application/x-www-form-urlencoded` forms (and query strings),
//! read into typed values: the one deserializer of Portico's HTTP edge.
//!
//! The rules, the same for every endpoint:
//! - a parameter the type knows may appear once: a repeat is an error
//!   (RFC 6749 §3.1 and §3.2), never "first wins" or "last wins";
//! - a value holding a NUL character is an error (no Portico parameter can
//!   hold one, and PostgreSQL text cannot store one), and so is one whose
//!   bytes, once decoded, are not UTF-8 (`%FF`): it would otherwise be read
//!   as U+FFFD and answered changed (a `state` that does not come back as
//!   it was sent);
//! - an empty value is an absent one (`Option` fields are `None`, others
//!   missing);
//! - parameters the type does not know are ignored, unread (a type that
//!   says `#[serde(deny_unknown_fields)]` refuses them, naming the first).
//!
//! Endpoints whose contract checks their parameters in an order, or
//! names every problem at once, read a type whose fields are [`Param`]s
//! with [`Form::read_each`]: each field then holds its parameter's reading
//! (absent, empty, a value, or refused and why), and the handler walks
//! them in its contract's order.
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

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{BorrowedStrDeserializer, StrDeserializer};
use serde::de::{self, Deserialize, DeserializeOwned, DeserializeSeed, IntoDeserializer as _, MapAccess, Visitor};
use serde::forward_to_deserialize_any;

/// The parameters of one form or query string, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Form(Vec<Field>);

/// One parameter as given: its name and value decoded (a name or value
/// that is not UTF-8 with U+FFFD in place of its bad bytes), and whether
/// the value was UTF-8 text.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Field {
    key: String,
    value: String,
    text: bool,
}

impl Field {
    /// Whether the value can be read as a parameter's text at all: UTF-8,
    /// without a NUL character.
    fn readable(&self) -> bool {
        self.text && !self.value.contains('\0')
    }

    fn entry(&self, repeated: bool) -> Entry<'_> {
        Entry { key: &self.key, value: &self.value, text: self.text, repeated }
    }
}

/// What was wrong with a parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Absent or empty, and required.
    Missing,
    /// Given more than once.
    Repeated,
    /// Not a value of the parameter's type (or holding a NUL character).
    Invalid(String),
    /// A parameter the type does not know, where it refuses those.
    Unknown,
}

/// One parameter as a form gave it, whatever that was: a field of a type
/// read by [`Form::read_each`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Param<T> {
    /// Not in the form.
    #[default]
    Absent,
    /// Given once, empty.
    Empty,
    /// Given once, a value of `T`.
    Given(T),
    /// Repeated, holding a NUL character, or not a value of `T`.
    Refused(Problem),
}

impl<T> Param<T> {
    /// The value by the reader's rule: empty is absent.
    ///
    /// # Errors
    /// The parameter's problem.
    pub fn value(self) -> Result<Option<T>, Problem> {
        match self {
            Self::Absent | Self::Empty => Ok(None),
            Self::Given(value) => Ok(Some(value)),
            Self::Refused(problem) => Err(problem),
        }
    }

    /// The value, when there is a good one.
    pub fn ok(self) -> Option<T> {
        self.value().ok().flatten()
    }
}

/// The name under which [`Param`] asks this reader for its parameter's
/// reading (another deserializer gives it the plain value).
const PARAM: &str = "portico_model::form::Param";

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Param<T> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_newtype_struct(PARAM, ParamVisitor(PhantomData))
    }
}

struct ParamVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ParamVisitor<T> {
    type Value = Param<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a form parameter")
    }

    fn visit_newtype_struct<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Param<T>, D::Error> {
        Ok(T::deserialize(deserializer).map_or_else(|e| Param::Refused(Problem::Invalid(e.to_string())), Param::Given))
    }

    /// This reader's answer: the reading's name, then (when given) the value.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Param<T>, A::Error> {
        let reading: Option<&str> = map.next_key()?;
        Ok(match reading {
            Some(REPEATED) => Param::Refused(Problem::Repeated),
            Some(EMPTY) => Param::Empty,
            _ => map.next_value::<T>().map_or_else(|e| Param::Refused(Problem::Invalid(e.to_string())), Param::Given),
        })
    }
}

const REPEATED: &str = "repeated";
const EMPTY: &str = "empty";
const GIVEN: &str = "given";

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
            Problem::Unknown => write!(f, "{}: unknown parameter", self.field),
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

    fn unknown_field(field: &str, _expected: &'static [&'static str]) -> Self {
        Self::new(field, Problem::Unknown)
    }
}

impl Form {
    /// A form of these parameters, in this order.
    pub fn from_pairs(pairs: Vec<(String, String)>) -> Self {
        Self(pairs.into_iter().map(|(key, value)| Field { key, value, text: true }).collect())
    }

    /// The parameters of `encoded` (a request body or a query string), as
    /// `application/x-www-form-urlencoded` parsing says (WHATWG URL §5.1:
    /// `&`-separated, empty pieces skipped, the name up to the first `=`,
    /// `+` a space, then percent-decoded), each value remembered as UTF-8
    /// text or not.
    pub fn parse(encoded: &[u8]) -> Self {
        // One allocation a name or value, as before: `+` is replaced only
        // where there is one, and a value without escapes is copied as is.
        let decode = |bytes: &[u8]| -> Vec<u8> {
            let spaced: std::borrow::Cow<'_, [u8]> = if bytes.contains(&b'+') {
                bytes.iter().map(|&b| if b == b'+' { b' ' } else { b }).collect::<Vec<u8>>().into()
            } else {
                bytes.into()
            };
            std::borrow::Cow::from(percent_encoding::percent_decode(&spaced)).into_owned()
        };
        let fields = encoded
            .split(|&b| b == b'&')
            .filter(|piece| !piece.is_empty())
            .map(|piece| {
                let (key, value) = match piece.iter().position(|&b| b == b'=') {
                    Some(at) => (&piece[..at], &piece[at + 1..]),
                    None => (piece, &[][..]),
                };
                let key = String::from_utf8_lossy(&decode(key)).into_owned();
                match String::from_utf8(decode(value)) {
                    Ok(value) => Field { key, value, text: true },
                    Err(e) => Field { key, value: String::from_utf8_lossy(e.as_bytes()).into_owned(), text: false },
                }
            })
            .collect();
        Self(fields)
    }

    /// The form as a `T`, by the rules above.
    ///
    /// # Errors
    /// The first parameter (in the form's order) that is repeated, missing
    /// or not a value of its field's type.
    pub fn read<T: DeserializeOwned>(&self) -> Result<T, FormError> {
        T::deserialize(Whole::absent_when_empty(self.0.iter().map(|field| field.entry(false))))
    }

    /// As [`Form::read`], but an empty value is given, not absent: the
    /// rule of APIs whose documents say what each parameter takes (an
    /// empty `userId` is no UUID, an empty `limit` no number), where RFC
    /// 6749's "a parameter without a value is omitted" does not apply.
    ///
    /// # Errors
    /// The first parameter (in the form's order) that is repeated, missing
    /// or not a value of its field's type.
    pub fn read_given<T: DeserializeOwned>(&self) -> Result<T, FormError> {
        let entries = self.0.iter().map(|field| field.entry(false)).collect();
        T::deserialize(Whole { entries, empty_is_absent: false })
    }

    /// The form as a `T` whose fields are [`Param`]s, each holding its
    /// parameter's reading; a repeated parameter is read once, as
    /// [`Problem::Repeated`].
    ///
    /// # Errors
    /// Only for a field that is not a [`Param`], as [`Form::read`].
    pub fn read_each<T: DeserializeOwned>(&self) -> Result<T, FormError> {
        let counts = self.counts();
        let mut seen = HashSet::with_capacity(counts.len());
        let entries = self
            .0
            .iter()
            .filter(|field| seen.insert(field.key.as_str()))
            .map(|field| field.entry(counts[field.key.as_str()] > 1));
        T::deserialize(Whole::absent_when_empty(entries))
    }

    /// The parameters a `T` does not know, and those it knows that are
    /// repeated, in the form's order (each name once): for a contract that
    /// refuses every stray parameter at once.
    pub fn strays<T: DeserializeOwned>(&self) -> Vec<FormError> {
        let known = fields_of::<T>();
        let (mut seen, mut named) = (HashSet::new(), HashSet::new());
        let mut strays: Vec<FormError> = Vec::new();
        for Field { key, .. } in &self.0 {
            let first = seen.insert(key.as_str());
            let problem = if !known.contains(&key.as_str()) {
                Problem::Unknown
            } else if !first {
                Problem::Repeated
            } else {
                continue;
            };
            if named.insert(key.as_str()) {
                strays.push(FormError::new(key, problem));
            }
        }
        strays
    }

    /// The form as a `T`, taking a parameter that is repeated, holds a NUL
    /// character or is not UTF-8 as absent instead of refusing the form:
    /// the rule of the login pages' forms, whose contract has no error for
    /// any of these (a repeated password is no password, and counts as a
    /// wrong one).
    ///
    /// # Errors
    /// A required parameter missing, or one not a value of its type.
    pub fn read_lenient<T: DeserializeOwned>(&self) -> Result<T, FormError> {
        let counts = self.counts();
        let once = |name: &str| counts[name] == 1;
        let kept = self.0.iter().filter(|field| once(&field.key) && field.readable()).map(|field| field.entry(false));
        T::deserialize(Whole::absent_when_empty(kept))
    }

    /// How often each parameter is given: one pass over the form, so that
    /// a hostile form of thousands of parameters costs no more than its
    /// length.
    fn counts(&self) -> HashMap<&str, usize> {
        let mut counts = HashMap::with_capacity(self.0.len());
        for Field { key, .. } in &self.0 {
            *counts.entry(key.as_str()).or_insert(0) += 1;
        }
        counts
    }

    /// Every parameter, in order, as given (a value that is not UTF-8
    /// with U+FFFD in place of its bad bytes: see [`Form::values`] for
    /// values read as parameters).
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|field| (field.key.as_str(), field.value.as_str()))
    }

    /// Every non-empty value of `name` without a NUL, UTF-8 (a form's
    /// repeated checkboxes).
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> {
        self.0
            .iter()
            .filter(move |field| field.key == name && !field.value.is_empty() && field.readable())
            .map(|field| field.value.as_str())
    }

    /// Every value of `name`, in order (an array parameter given in
    /// several places).
    ///
    /// # Errors
    /// [`Problem::Invalid`] naming `name` for a value holding a NUL
    /// character or not UTF-8.
    pub fn values<'a>(&'a self, name: &str) -> Result<Vec<&'a str>, FormError> {
        let mut values = Vec::new();
        for field in self.0.iter().filter(|field| field.key == name) {
            field.entry(false).value().text()?;
            values.push(field.value.as_str());
        }
        Ok(values)
    }
}

/// The names of the fields of a struct `T` (as its `Deserialize` knows
/// them, renamed); empty for a type that is no plain struct.
pub fn fields_of<T: DeserializeOwned>() -> &'static [&'static str] {
    /// A deserializer that only asks `T` for its fields.
    struct Probe<'a>(&'a mut &'static [&'static str]);

    impl<'de> de::Deserializer<'de> for Probe<'_> {
        type Error = de::value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("no struct"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("only its fields were asked for"))
        }

        forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }

    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Probe(&mut fields));
    fields
}

/// One parameter of the form, and whether it was repeated (known only
/// to [`Form::read_each`], which reads a repeated parameter once).
struct Entry<'a> {
    key: &'a str,
    value: &'a str,
    /// Whether the value was UTF-8.
    text: bool,
    repeated: bool,
}

impl<'a> Entry<'a> {
    /// The entry's value, read where empty is a value.
    fn value(&self) -> Value<'a> {
        Value { key: self.key, value: self.value, text: self.text, repeated: self.repeated, empty_is_absent: false }
    }
}

/// The whole form: a map of its parameters.
struct Whole<'a> {
    entries: Vec<Entry<'a>>,
    /// Whether an empty value counts as absent (RFC 6749 §3.1's rule).
    empty_is_absent: bool,
}

impl<'a> Whole<'a> {
    fn absent_when_empty(entries: impl IntoIterator<Item = Entry<'a>>) -> Self {
        Self { entries: entries.into_iter().collect(), empty_is_absent: true }
    }
}

impl<'de> de::Deserializer<'de> for Whole<'_> {
    type Error = FormError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FormError> {
        let empty_is_absent = self.empty_is_absent;
        visitor.visit_map(Pairs { entries: self.entries.into_iter(), current: None, empty_is_absent })
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

struct Pairs<'a> {
    entries: std::vec::IntoIter<Entry<'a>>,
    current: Option<Entry<'a>>,
    empty_is_absent: bool,
}

impl<'de> MapAccess<'de> for Pairs<'_> {
    type Error = FormError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, FormError> {
        let Some(entry) = self.entries.next() else { return Ok(None) };
        let key: StrDeserializer<'_, FormError> = entry.key.into_deserializer();
        self.current = Some(entry);
        seed.deserialize(key).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, FormError> {
        let Entry { key, value, text, repeated } =
            self.current.take().ok_or_else(|| de::Error::custom("a value without its name"))?;
        let empty_is_absent = self.empty_is_absent;
        seed.deserialize(Value { key, value, text, repeated, empty_is_absent }).map_err(|error| error.at(key))
    }
}

/// A [`Param`]'s reading: its name, then (when given) the value.
struct Reading<'a> {
    name: Option<&'static str>,
    value: Option<Value<'a>>,
}

impl<'de> MapAccess<'de> for Reading<'_> {
    type Error = FormError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, FormError> {
        let Some(name) = self.name.take() else { return Ok(None) };
        seed.deserialize(BorrowedStrDeserializer::<FormError>::new(name)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, FormError> {
        seed.deserialize(self.value.take().ok_or_else(|| de::Error::custom("no value to read"))?)
    }
}

/// One parameter's value.
struct Value<'a> {
    key: &'a str,
    value: &'a str,
    /// Whether the value was UTF-8.
    text: bool,
    repeated: bool,
    empty_is_absent: bool,
}

impl<'a> Value<'a> {
    /// The value as text: given once, present, UTF-8 and without a NUL.
    fn text(&self) -> Result<&'a str, FormError> {
        if self.repeated {
            Err(FormError::new(self.key, Problem::Repeated))
        } else if self.value.is_empty() && self.empty_is_absent {
            Err(FormError::new(self.key, Problem::Missing))
        } else if !self.text {
            Err(FormError::new(self.key, Problem::Invalid("is not UTF-8 text".to_owned())))
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
        if self.value.is_empty() && self.empty_is_absent && !self.repeated {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
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

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, FormError> {
        if name != PARAM {
            return visitor.visit_newtype_struct(self);
        }
        let reading = if self.repeated {
            Reading { name: Some(REPEATED), value: None }
        } else if self.value.is_empty() && self.empty_is_absent {
            Reading { name: Some(EMPTY), value: None }
        } else {
            Reading { name: Some(GIVEN), value: Some(self) }
        };
        visitor.visit_map(reading)
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
    fn a_value_that_is_not_utf8_is_refused_naming_it_never_read_as_u_fffd() {
        let not_text = Problem::Invalid("is not UTF-8 text".to_owned());
        assert_eq!(failure("code=a&state=%FF"), ("state".into(), not_text.clone()));
        assert_eq!(failure("code=%C3%28"), ("code".into(), not_text.clone()), "a broken sequence");
        // U+FFFD itself, sent as UTF-8, is text like any other.
        assert_eq!(read("code=a&state=%EF%BF%BD").unwrap().state.as_deref(), Some("\u{FFFD}"));
        assert_eq!(read("code=%C3%A9+x").unwrap().code, "é x");
        let each: Ordered = Form::parse(b"state=%FF&nonce=n").read_each().unwrap();
        assert!(matches!(each.state, Param::Refused(Problem::Invalid(why)) if why.ends_with("is not UTF-8 text")));
        assert_eq!(each.nonce, Param::Given("n".to_owned()));
        let lenient: Request = Form::parse(b"code=c&state=%FE").read_lenient().unwrap();
        assert_eq!(lenient.state, None, "leniently absent, as a NUL is");
        let form = Form::parse(b"g=a&g=%FF&g=b&cnum=1&cnum=%FF");
        assert_eq!(form.all("g").collect::<Vec<_>>(), ["a", "b"]);
        let error = form.values("cnum").unwrap_err();
        assert_eq!((error.field.as_str(), error.problem), ("cnum", not_text));
        assert_eq!(form.values("g=").unwrap(), Vec::<&str>::new());
    }

    #[test]
    fn parses_as_form_urlencoded_does() {
        for encoded in ["a=1&b=2", "a+b=c+d&%2B=%2b", "a==b&&c", "=x&y=&z", "a=%zz&b=%4", "%C3%A9=%E2%82%AC", ""] {
            let form = Form::parse(encoded.as_bytes());
            let ours: Vec<(&str, &str)> = form.pairs().collect();
            let theirs: Vec<(String, String)> = url::form_urlencoded::parse(encoded.as_bytes()).into_owned().collect();
            let theirs: Vec<(&str, &str)> = theirs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            assert_eq!(ours, theirs, "{encoded}");
        }
    }

    #[test]
    fn one_parameter_at_a_time_by_the_same_rules() {
        #[derive(Debug, Default, Deserialize)]
        #[serde(default)]
        struct Each {
            a: Param<String>,
            b: Param<String>,
            c: Param<String>,
            d: Param<String>,
            e: Param<String>,
            z: Param<String>,
        }
        let each: Each = Form::parse(b"a=1&b=2&b=3&c=&d=x%20y&e=x%00y").read_each().unwrap();
        assert_eq!(each.a.value(), Ok(Some("1".to_owned())));
        assert_eq!(each.b.value(), Err(Problem::Repeated));
        assert!(matches!(each.e.value(), Err(Problem::Invalid(_))), "a NUL character");
        assert_eq!(each.c.value(), Ok(None));
        assert_eq!(each.d.value(), Ok(Some("x y".to_owned())));
        assert_eq!(each.z.value(), Ok(None));
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

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default, rename_all = "camelCase")]
    struct Ordered {
        client_id: Param<String>,
        max_age: Param<u32>,
        mode: Param<Mode>,
        state: Param<String>,
        nonce: Param<String>,
    }

    #[test]
    fn each_parameter_keeps_its_reading_whatever_it_was() {
        let read: Ordered =
            Form::parse(b"clientId=a&maxAge=x&mode=query&state=s&state=t&nonce=&other=1&other=2").read_each().unwrap();
        assert_eq!(read.client_id, Param::Given("a".to_owned()));
        assert!(matches!(read.max_age, Param::Refused(Problem::Invalid(_))), "not a number");
        assert_eq!(read.mode, Param::Given(Mode::Query));
        assert_eq!(read.state, Param::Refused(Problem::Repeated));
        assert_eq!(read.nonce, Param::Empty);
        assert_eq!(read.nonce.clone().value(), Ok(None), "empty is absent");
        let read: Ordered = Form::parse(b"clientId=a%00b&mode=fragment").read_each().unwrap();
        assert!(matches!(read.client_id, Param::Refused(Problem::Invalid(_))), "a NUL character");
        assert!(matches!(read.mode, Param::Refused(Problem::Invalid(_))));
        assert_eq!((read.max_age, read.state), (Param::Absent, Param::Absent));
        let repeated_empty: Ordered = Form::parse(b"state=&state=").read_each().unwrap();
        assert_eq!(repeated_empty.state, Param::Refused(Problem::Repeated));
    }

    #[test]
    fn strays_are_the_unknown_and_the_repeated_each_named_once() {
        assert_eq!(fields_of::<Ordered>(), ["clientId", "maxAge", "mode", "state", "nonce"]);
        let strays = Form::parse(b"x=1&state=a&mode=q&state=b&x=2&state=c&client_id=z").strays::<Ordered>();
        let named: Vec<(&str, &Problem)> = strays.iter().map(|e| (e.field.as_str(), &e.problem)).collect();
        assert_eq!(named, [("x", &Problem::Unknown), ("state", &Problem::Repeated), ("client_id", &Problem::Unknown)]);
        assert!(Form::parse(b"state=a&mode=q").strays::<Ordered>().is_empty());
    }

    #[test]
    fn where_an_empty_value_is_given_it_must_be_one_of_its_type() {
        let read = |encoded: &[u8]| Form::parse(encoded).read_given::<Request>();
        assert_eq!(read(b"code=c&state=").unwrap().state.as_deref(), Some(""), "an empty text is a text");
        assert!(matches!(read(b"code=c&max_age="), Err(FormError { problem: Problem::Invalid(_), .. })));
        assert!(matches!(read(b"code=c&mode="), Err(FormError { problem: Problem::Invalid(_), .. })));
        assert_eq!(read(b"code=").unwrap().code, "", "given, if empty");
        assert_eq!(read(b"state=s").unwrap_err().problem, Problem::Missing, "absent is still missing");
        assert_eq!(read(b"code=a&code=").unwrap_err().problem, Problem::Repeated);
        assert_eq!(Form::parse(b"code=c&max_age=").read::<Request>().unwrap().max_age, None, "read: absent");
    }

    #[test]
    fn a_type_that_denies_unknown_parameters_names_the_first() {
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Strict {
            page: Option<u32>,
        }
        let error = Form::parse(b"page=1&size=2&other=3").read::<Strict>().unwrap_err();
        assert_eq!((error.field.as_str(), error.problem), ("size", Problem::Unknown));
    }

    #[test]
    fn the_first_problem_in_the_forms_order_is_named() {
        assert_eq!(failure("state=a&state=b&code=c&code=d"), ("state".into(), Problem::Repeated));
        let form = Form::parse(b"g=1&g=&g=%00&g=2");
        let all: Vec<&str> = form.all("g").collect();
        assert_eq!(all, ["1", "2"]);
    }
}
