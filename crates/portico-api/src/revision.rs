//! Revisions as HTTP validators (RFC 9110 §8.8.3, §13.1.1): what carries a
//! revision (a client, a user) answers it as a strong `ETag` (`"3"`), and a
//! change sent with `If-Match` is made only on a revision it names, so that
//! a program changing what it read never undoes a change made since.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};

use crate::ApiError;

/// The revisions an `If-Match` names: `None` without the header or with
/// `*` (whatever is stored); else the strong entity tags that are
/// revisions (a weak tag, or another server's tag, matches nothing: an
/// empty list then, and the change is refused).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfMatch(pub Option<Vec<u64>>);

impl<S: Send + Sync> FromRequestParts<S> for IfMatch {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        match if_match(&parts.headers) {
            Ok(revisions) => Ok(Self(revisions)),
            Err(Malformed) => Err(ApiError::bad_request(
                "If-Match: give the ETag a read of it answered (as \"3\", quotes included), several separated \
                 by commas, or *",
            )),
        }
    }
}

/// What a conditional header (`If-Match`, `If-None-Match`) names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// `*`: whatever is stored.
    Any,
    /// The revisions its entity tags name; tags that are no revision (of
    /// another server) are left out.
    Revisions(Vec<u64>),
}

impl Named {
    /// Whether `revision` is named.
    #[must_use]
    pub fn names(&self, revision: u64) -> bool {
        match self {
            Self::Any => true,
            Self::Revisions(revisions) => revisions.contains(&revision),
        }
    }
}

/// A conditional header that is no list of entity tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// The revisions the `If-Match` of `headers` names: `None` without it or
/// with `*` (whatever is stored).
///
/// # Errors
/// [`Malformed`] for a value that is no list of entity tags.
pub fn if_match(headers: &HeaderMap) -> Result<Option<Vec<u64>>, Malformed> {
    Ok(match named(headers, &header::IF_MATCH)? {
        None | Some(Named::Any) => None,
        Some(Named::Revisions(revisions)) => Some(revisions),
    })
}

/// What the conditional header `name` of `headers` names, `None` without
/// it. `If-Match` compares strongly (RFC 9110 §13.1.1: a weak tag matches
/// nothing, so it is left out); `If-None-Match` weakly (§13.1.2: `W/"3"`
/// names revision 3).
///
/// # Errors
/// [`Malformed`] for a value that is no list of entity tags.
pub fn named(headers: &HeaderMap, name: &HeaderName) -> Result<Option<Named>, Malformed> {
    let weak_counts = name != header::IF_MATCH;
    let mut values = headers.get_all(name).iter().peekable();
    if values.peek().is_none() {
        return Ok(None);
    }
    let mut revisions = Vec::new();
    for value in values {
        let text = value.to_str().map_err(|_| Malformed)?;
        if text.trim() == "*" {
            return Ok(Some(Named::Any));
        }
        let tags = entity_tags(text).ok_or(Malformed)?;
        let counted = tags.filter(|(weak, _)| weak_counts || !weak);
        revisions.extend(counted.filter_map(|(_, tag)| tag.parse::<u64>().ok()));
    }
    Ok(Some(Named::Revisions(revisions)))
}

/// The entity tags of a list (RFC 9110 §8.8.3: `W/"x"` or `"x"`,
/// separated by commas, empty elements allowed), each with whether it is
/// weak and its opaque part. `None` when the list is malformed or names
/// no tag at all.
fn entity_tags(text: &str) -> Option<impl Iterator<Item = (bool, &str)>> {
    let mut tags = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            // A list without a tag (an empty header) is a client's mistake,
            // not a condition that nothing could meet.
            return (!tags.is_empty()).then(|| tags.into_iter());
        }
        let (weak, tag) = match rest.strip_prefix("W/") {
            Some(tag) => (true, tag),
            None => (false, rest),
        };
        let tag = tag.strip_prefix('"')?;
        let end = tag.find('"')?;
        tags.push((weak, &tag[..end]));
        rest = tag[end + 1..].trim_start_matches([' ', '\t']);
        if !rest.is_empty() && !rest.starts_with(',') {
            return None;
        }
    }
}

/// The strong entity tag of `revision`: `"3"`.
pub fn etag(revision: u64) -> HeaderValue {
    HeaderValue::from_str(&format!("\"{revision}\"")).unwrap_or(HeaderValue::from_static("\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn parsed(values: &[&str]) -> Result<IfMatch, u16> {
        let mut request = axum::http::Request::builder();
        for value in values {
            request = request.header(header::IF_MATCH, *value);
        }
        let (mut parts, ()) = request.body(()).unwrap().into_parts();
        IfMatch::from_request_parts(&mut parts, &()).await.map_err(|e| e.status().as_u16())
    }

    #[tokio::test]
    async fn if_match_names_revisions_by_strong_tags_only() {
        assert_eq!(parsed(&[]).await, Ok(IfMatch(None)));
        assert_eq!(parsed(&["*"]).await, Ok(IfMatch(None)));
        assert_eq!(parsed(&["\"3\""]).await, Ok(IfMatch(Some(vec![3]))));
        assert_eq!(parsed(&["\"3\", W/\"4\", \"x\",, \"5\""]).await, Ok(IfMatch(Some(vec![3, 5]))));
        assert_eq!(parsed(&["\"3\"", "\"7\""]).await, Ok(IfMatch(Some(vec![3, 7]))));
        assert_eq!(parsed(&["W/\"3\""]).await, Ok(IfMatch(Some(vec![]))), "a weak tag matches nothing");
        assert_eq!(parsed(&["\"a,b\", \"4\""]).await, Ok(IfMatch(Some(vec![4]))), "a comma inside a tag");
        for malformed in ["3", "\"3", "\"3\"\"", "W/3", "\"3\" \"4\"", "", " , "] {
            assert_eq!(parsed(&[malformed]).await, Err(400), "{malformed}");
        }
        assert_eq!(etag(12), "\"12\"");
    }

    #[test]
    fn if_none_match_compares_weakly() {
        let headers = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::IF_NONE_MATCH, HeaderValue::from_str(value).unwrap());
            headers
        };
        let none_match = |value: &str| named(&headers(value), &header::IF_NONE_MATCH);
        assert_eq!(none_match("W/\"3\", \"4\""), Ok(Some(Named::Revisions(vec![3, 4]))));
        assert_eq!(none_match("*"), Ok(Some(Named::Any)));
        assert_eq!(none_match("3"), Err(Malformed));
        assert_eq!(named(&HeaderMap::new(), &header::IF_NONE_MATCH), Ok(None));
        assert!(Named::Any.names(7) && Named::Revisions(vec![7]).names(7) && !Named::Revisions(vec![]).names(7));
    }
}
