//! How an authorization response reaches the client's `redirect_uri`.
//!
//! `response_mode=query`, the default for `code`, is a 302 with the
//! parameters in the query. `response_mode=form_post` (OAuth 2.0 Form Post
//! Response Mode) is a page whose form the browser posts to `redirect_uri`,
//! the parameters as `application/x-www-form-urlencoded` fields: at once
//! with JavaScript, with one press of its button without. Either way the
//! response carries `iss` (RFC 9207), is `no-store`, and the page may not be
//! framed.

use askama::Template;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use portico_model::oauth::ResponseMode;

use crate::Identity;
use crate::http::{redirect, with_query};
use crate::login::texts::{self, Texts};

#[derive(Template)]
#[template(path = "form_post.html")]
struct FormPostPage<'a> {
    t: &'a Texts,
    action: &'a str,
    fields: &'a [(&'a str, &'a str)],
}

/// The response that carries `pairs`, and the issuer, to `redirect_uri` as
/// `mode` says; a form_post page speaks the browser's language.
pub fn to_client(
    identity: &Identity,
    headers: &HeaderMap,
    mode: ResponseMode,
    redirect_uri: &str,
    pairs: &[(&str, &str)],
) -> Response {
    let mut fields = pairs.to_vec();
    fields.push(("iss", &identity.settings.issuer));
    match mode {
        ResponseMode::Query => redirect(StatusCode::FOUND, &with_query(redirect_uri, &fields)),
        ResponseMode::FormPost => {
            let t = texts::for_locale(texts::negotiate(headers, identity.settings.default_locale));
            let Ok(html) = (FormPostPage { t, action: redirect_uri, fields: &fields }).render() else {
                return StatusCode::INTERNAL_SERVER_ERROR.into_response();
            };
            let mut response = Html(html).into_response();
            response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            crate::login::assets::secure(response)
        }
    }
}

/// An OAuth error response to the client: `error`, `error_description`,
/// `state` when there is one, and `iss`.
pub fn error_to_client(
    identity: &Identity,
    headers: &HeaderMap,
    mode: ResponseMode,
    redirect_uri: &str,
    error: &str,
    description: &str,
    state: Option<&str>,
) -> Response {
    let mut pairs = vec![("error", error), ("error_description", description)];
    if let Some(state) = state {
        pairs.push(("state", state));
    }
    to_client(identity, headers, mode, redirect_uri, &pairs)
}
