//! Revisions as HTTP validators (RFC 9110 §8.8.3, §13.1.1): what carries a
//! revision (a client, a user) answers it as a strong `ETag` (`"3"`), and a
//! change sent with `If-Match` is made only on a revision it names, so that
//! a program changing what it read never undoes a change made since.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderValue, header};

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
        let mut values = parts.headers.get_all(header::IF_MATCH).iter().peekable();
        if values.peek().is_none() {
            return Ok(Self(None));
        }
        let refused = || {
            ApiError::bad_request(
                "If-Match: give the ETag a read of it answered (as \"3\", quotes included), several separated \
                 by commas, or *",
            )
        };
        let mut revisions = Vec::new();
        for value in values {
            let text = value.to_str().map_err(|_| refused())?;
            if text.trim() == "*" {
                return Ok(Self(None));
            }
            revisions.extend(strong_tags(text).ok_or_else(refused)?.filter_map(|tag| tag.parse::<u64>().ok()));
        }
        Ok(Self(Some(revisions)))
    }
}

/// The opaque parts of the strong tags of an `If-Match` list (RFC 9110
/// §8.8.3: `W/"x"` or `"x"`, separated by commas, empty elements allowed);
/// weak tags never match (§13.1.1: strong comparison), so they are left
/// out. `None` when the list is malformed.
fn strong_tags(text: &str) -> Option<impl Iterator<Item = &str>> {
    let mut tags = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            return Some(tags.into_iter());
        }
        let (weak, tag) = match rest.strip_prefix("W/") {
            Some(tag) => (true, tag),
            None => (false, rest),
        };
        let tag = tag.strip_prefix('"')?;
        let end = tag.find('"')?;
        if !weak {
            tags.push(&tag[..end]);
        }
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
        for malformed in ["3", "\"3", "\"3\"\"", "W/3", "\"3\" \"4\""] {
            assert_eq!(parsed(&[malformed]).await, Err(400), "{malformed}");
        }
        assert_eq!(etag(12), "\"12\"");
    }
}
