//! The pages' stylesheet and script, served from the binary, and the
//! security headers of every login page.
//!
//! The pages carry no inline script or style, so the Content-Security-Policy
//! allows scripts only from Portico itself (and the CAPTCHA service's
//! widget). `form-action` is left out on purpose: a completed login's form
//! submission ends in a redirect to the client's own address, which
//! `form-action 'self'` would block.

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};

const CSS: &str = include_str!("../../assets/login.css");
const JS: &str = include_str!("../../assets/login.js");
const FORM_POST_JS: &str = include_str!("../../assets/form_post.js");

/// The policy of the login, error and logged-out pages.
pub const CSP: &str = "default-src 'none'; script-src 'self' https://smartcaptcha.yandexcloud.net; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; \
     frame-src https://smartcaptcha.yandexcloud.net; frame-ancestors 'none'; base-uri 'none'";

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600"));
    (headers, body).into_response()
}

pub async fn css() -> Response {
    asset("text/css; charset=utf-8", CSS)
}

pub async fn js() -> Response {
    asset("text/javascript; charset=utf-8", JS)
}

/// `/login/assets/theme.css`: the bank's colours (`[theme]`).
pub async fn theme_css(axum::extract::State(identity): axum::extract::State<crate::IdentityState>) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/css; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600"));
    (headers, identity.settings.branding.css.clone()).into_response()
}

/// `/login/assets/logo`: the bank's logo (`theme.logo`), or Portico's mark.
pub async fn logo(axum::extract::State(identity): axum::extract::State<crate::IdentityState>) -> Response {
    let (bytes, content_type) = &identity.settings.branding.logo;
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600"));
    // An SVG logo is an image, never a document that runs scripts.
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'"),
    );
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    (headers, bytes.clone()).into_response()
}

pub async fn form_post_js() -> Response {
    asset("text/javascript; charset=utf-8", FORM_POST_JS)
}

/// Adds the page security headers to an HTML response.
pub fn secure(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}
