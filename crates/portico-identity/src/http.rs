//! The redirects every part of the identity service answers with: the
//! protocol's (to a client's `redirect_uri`), the login's (between its
//! pages and back to `/oauth2/authorize`) and logout's.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

/// `uri` with `pairs` appended to its query.
pub fn with_query(uri: &str, pairs: &[(&str, &str)]) -> String {
    match url::Url::parse(uri) {
        Ok(mut url) => {
            url.query_pairs_mut().extend_pairs(pairs);
            url.into()
        }
        Err(_) => {
            let query: String = form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish();
            let sep = if uri.contains('?') { '&' } else { '?' };
            format!("{uri}{sep}{query}")
        }
    }
}

/// A redirect with `status` to `location`, never cached.
pub fn redirect(status: StatusCode, location: &str) -> Response {
    let mut response = portico_api::no_store(status);
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}
