//! Lists kept in the order of a key (clients, merchants, brokerage
//! agreements, users) are read a page at a time: `?after=&limit=`, answered
//! with the page and `next`, the `after` of the page that follows (absent
//! on the last one).

use portico_storage::KeyPage;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::error::{ApiError, page_size};

/// Which page of a list to read.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// The `next` of the previous page.
    #[param(pattern = "^[^\\x00]*$")]
    pub after: Option<String>,
    /// 1 to 200; default 50.
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
}

impl PageParams {
    /// The page to read from the store (one entry more than the page
    /// holds, to know whether another follows), and the page's size.
    ///
    /// # Errors
    /// `bad_request` for a `limit` out of range.
    pub fn read(&self) -> Result<(KeyPage<'_>, u32), ApiError> {
        let limit = page_size(self.limit)?;
        Ok((KeyPage { after: self.after.as_deref(), limit: limit + 1 }, limit))
    }
}

/// The first `limit` of `rows` (read one over), and `next`: the key of the
/// last of them when more follow.
pub fn split<T>(mut rows: Vec<T>, limit: u32, key: impl Fn(&T) -> &str) -> (Vec<T>, Option<String>) {
    let limit = limit as usize;
    if rows.len() <= limit {
        return (rows, None);
    }
    rows.truncate(limit);
    let next = rows.last().map(|row| key(row).to_owned());
    (rows, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_read_one_over_says_where_the_next_begins() {
        let (page, next) = split(vec!["a", "b", "c"], 2, |s| s);
        assert_eq!((page, next.as_deref()), (vec!["a", "b"], Some("b")));
        let (page, next) = split(vec!["a", "b"], 2, |s| s);
        assert_eq!((page, next), (vec!["a", "b"], None));
        let (page, next) = split(Vec::<&str>::new(), 2, |s| s);
        assert_eq!((page, next), (Vec::<&str>::new(), None));
    }

    #[test]
    fn the_store_is_asked_for_one_entry_more_than_the_page() {
        let params = PageParams { after: Some("x".into()), limit: Some(3) };
        assert_eq!(params.read().unwrap(), (KeyPage { after: Some("x"), limit: 4 }, 3));
        let default = PageParams { after: None, limit: None };
        assert_eq!(default.read().unwrap().1, 50);
        assert!(PageParams { after: None, limit: Some(201) }.read().is_err());
        assert!(PageParams { after: None, limit: Some(0) }.read().is_err());
    }
}
