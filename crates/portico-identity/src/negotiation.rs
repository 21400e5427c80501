//! Choosing by a request's weighted preferences (RFC 9110 §12.4.2,
//! §12.5): `Accept` (introspection's signed answer or JSON) and
//! `Accept-Language` (the pages' language).

use axum::http::{HeaderMap, HeaderName};

/// Each range (media range, language tag) of every `name` header, in
/// order, trimmed, with its weight in thousandths (`q=0.5` is 500; none is
/// 1000). A range whose weight is no `qvalue` is left out.
pub fn weighted<'a>(headers: &'a HeaderMap, name: &HeaderName) -> impl Iterator<Item = (&'a str, u16)> {
    headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).filter_map(|range| {
        let mut parts = range.split(';');
        let value = parts.next().unwrap_or_default().trim();
        let q = parts.find_map(|p| p.trim().strip_prefix("q=").or_else(|| p.trim().strip_prefix("Q=")));
        let weight = q.map_or(Some(1000), weight)?;
        (!value.is_empty()).then_some((value, weight))
    })
}

/// An RFC 9110 §12.4.2 `qvalue` in thousandths (`0.5` is 500); `None` for
/// anything else.
pub fn weight(q: &str) -> Option<u16> {
    let (whole, fraction) = q.split_once('.').unwrap_or((q, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths: u16 = format!("{fraction:0<3}").parse().ok()?;
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderValue, header};

    #[test]
    fn weights_are_qvalues_in_thousandths() {
        assert_eq!(
            (weight("1"), weight("1.000"), weight("0.5"), weight("0.125")),
            (Some(1000), Some(1000), Some(500), Some(125))
        );
        assert_eq!((weight("0"), weight("0.")), (Some(0), Some(0)));
        assert_eq!(
            (weight("1.5"), weight("0.1234"), weight("-0"), weight(""), weight("high")),
            (None, None, None, None, None)
        );
    }

    #[test]
    fn ranges_come_in_order_with_their_weights_and_bad_ones_left_out() {
        let mut headers = HeaderMap::new();
        headers.append(header::ACCEPT_LANGUAGE, HeaderValue::from_static("ru;q=0.3 , en-GB;Q=0.8,, de;q=x"));
        headers.append(header::ACCEPT_LANGUAGE, HeaderValue::from_static("fr"));
        let ranges: Vec<_> = weighted(&headers, &header::ACCEPT_LANGUAGE).collect();
        assert_eq!(ranges, [("ru", 300), ("en-GB", 800), ("fr", 1000)]);
    }
}
