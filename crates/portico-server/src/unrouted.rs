//! Requests no operation takes: a path Portico does not serve (404), or a
//! path served with other methods (405, with the router's `Allow` naming
//! them). Each is answered in the error body of the API its path belongs
//! to, so a client reads it as it reads every other refusal of that API.
//! A path of no API gets a line of plain text, or, when a browser asks
//! for a page (`Accept` names `text/html`), the login's "page not found"
//! page in the browser's language.

use std::sync::Arc;

use axum::extract::OriginalUri;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

/// Characters of the path an answer repeats at most.
const SHOWN_PATH: usize = 200;

/// The APIs, by the error body they answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    /// `ErrorResponse` (`code`, `message`, `traceId`, `errors`).
    Reports,
    /// `{"code", "message"}` of the admin, internal and merchant APIs.
    Admin,
    /// `ErrorResponseDTO` (`code`, `message`, `messageData`).
    Permissions,
    /// RFC 7644 §3.12's error.
    Scim,
    /// RFC 6749 §5.2's error (`invalid_request`).
    OAuth,
    /// None: the pages, the probes, anything else.
    None,
}

/// Path prefixes and their API, the more specific first.
const APIS: &[(&str, Api)] = &[
    ("/v1/reports/", Api::Reports),
    ("/internal/v1/reports/", Api::Reports),
    ("/admin/v1/", Api::Admin),
    ("/internal/v1/", Api::Admin),
    ("/v1/notifications/", Api::Admin),
    ("/api/v1/", Api::Permissions),
    ("/api/v2/", Api::Permissions),
    ("/scim/v2/", Api::Scim),
    ("/oauth2/", Api::OAuth),
    ("/.well-known/", Api::OAuth),
];

/// The API `path` belongs to: under one of [`APIS`], or the prefix itself
/// without its last slash.
fn api(path: &str) -> Api {
    APIS.iter()
        .find(|(prefix, _)| path.starts_with(prefix) || path == &prefix[..prefix.len() - 1])
        .map_or(Api::None, |&(_, api)| api)
}

/// 404: no operation is at the path.
pub async fn not_found(
    identity: Arc<portico_identity::Identity>,
    method: Method,
    headers: HeaderMap,
    OriginalUri(uri): OriginalUri,
) -> Response {
    let path = shown(&uri);
    let api = api(uri.path());
    if api == Api::None && (method == Method::GET || method == Method::HEAD) && wants_a_page(&headers) {
        return portico_identity::login::error_page::not_found_page(&identity, &headers);
    }
    let message = match api {
        Api::OAuth => format!("there is no endpoint at {path}; /.well-known/openid-configuration lists them"),
        Api::Scim => format!("there is no endpoint at {path}; see /scim/v2/ResourceTypes"),
        Api::None => format!("Portico has nothing at {path}."),
        _ => format!("there is no operation at {path}; /openapi describes them"),
    };
    answer(api, StatusCode::NOT_FOUND, message)
}

/// 405: the path takes other methods; the router adds `Allow`.
pub async fn method_not_allowed(method: Method, OriginalUri(uri): OriginalUri) -> Response {
    let path = shown(&uri);
    let method = portico_model::text::capped(method.to_string(), 32);
    let message = format!("{path} takes no {method}; the Allow header names the methods it takes");
    answer(api(uri.path()), StatusCode::METHOD_NOT_ALLOWED, message)
}

/// Whether `Accept` names `text/html` (a browser's navigation does; an API
/// client's `*/*` or `application/json` does not).
fn wants_a_page(headers: &HeaderMap) -> bool {
    portico_identity::negotiation::weighted(headers, &header::ACCEPT)
        .any(|(range, weight)| weight > 0 && range.eq_ignore_ascii_case("text/html"))
}

fn shown(uri: &Uri) -> String {
    portico_model::text::capped(uri.path().to_owned(), SHOWN_PATH)
}

fn answer(api: Api, status: StatusCode, message: String) -> Response {
    let missing = status == StatusCode::NOT_FOUND;
    match api {
        Api::Reports if missing => portico_reports::error::ReportError::NotFound(message).into_response(),
        Api::Reports => portico_reports::error::ReportError::MethodNotAllowed(message).into_response(),
        Api::Admin if missing => portico_api::ApiError::not_found("not_found", message).into_response(),
        Api::Admin => portico_api::ApiError::MethodNotAllowed(message).into_response(),
        Api::Permissions if missing => {
            portico_permissions::error::PermissionError::NoSuchOperation(message).into_response()
        }
        Api::Permissions => portico_permissions::error::PermissionError::MethodNotAllowed(message).into_response(),
        Api::Scim if missing => portico_admin::scim::ScimError::NotFound(message).into_response(),
        Api::Scim => portico_admin::scim::ScimError::MethodNotAllowed(message).into_response(),
        // RFC 6749 has no code for either: `invalid_request` keeps every
        // client's reading of the body, the status says which.
        Api::OAuth => (status, portico_identity::oauth2::error::OAuthError::bad_request(message)).into_response(),
        Api::None => (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], message).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_belongs_to_the_api_of_its_longest_prefix() {
        assert_eq!(api("/v1/reports/nope"), Api::Reports);
        assert_eq!(api("/v1/reports"), Api::Reports);
        assert_eq!(api("/internal/v1/reports/tasks/x/y"), Api::Reports);
        assert_eq!(api("/internal/v1/nope"), Api::Admin);
        assert_eq!(api("/admin/v1"), Api::Admin);
        assert_eq!(api("/v1/notifications/nope"), Api::Admin);
        assert_eq!(api("/api/v2/nope"), Api::Permissions);
        assert_eq!(api("/scim/v2"), Api::Scim);
        assert_eq!(api("/oauth2/tokens"), Api::OAuth);
        assert_eq!(api("/.well-known/nope"), Api::OAuth);
        assert_eq!(api("/v1/reportsx"), Api::None, "a prefix ends at a slash");
        assert_eq!(api("/api/v3/x"), Api::None);
        assert_eq!(api("/"), Api::None);
    }
}
