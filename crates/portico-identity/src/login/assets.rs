//! The pages' stylesheet and script, served from the binary, and the
//! security headers of every login page.
//!
//! The pages carry no inline script or style, so the Content-Security-Policy
//! allows scripts only from Portico itself (and the CAPTCHA service's
//! widget). Its `form-action` names Portico and, on a login page, the
//! origin of the client's `redirect_uri`: a completed login's form
//! submission ends in a redirect there, which Chromium checks against it
//! (docs/decisions.md, "Where the login pages' forms may post").

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

/// Adds the page security headers to an HTML response whose forms post to
/// Portico only (the error and logged-out pages).
pub fn secure(response: Response) -> Response {
    secure_to(response, None)
}

/// Adds the page security headers to a login page whose forms post to
/// Portico and may end, through Portico's redirects, at `redirect_uri`
/// (the authorization request's): a completed login answers the client
/// there. The policy's `form-action` names
/// Portico and that one address's origin, so that markup slipped into a
/// page cannot send what the user types anywhere else; Chromium checks
/// every redirect a form submission follows against it.
pub fn secure_to(mut response: Response, redirect_uri: Option<&str>) -> Response {
    let policy = format!("{CSP}; form-action 'self'{}", redirect_uri.map(form_target).unwrap_or_default());
    set_headers(&mut response, &policy);
    response
}

/// Adds the page security headers to the `form_post` page (OAuth 2.0 Form
/// Post Response Mode), whose one form posts the answer to `redirect_uri`.
pub fn secure_form_post(mut response: Response, redirect_uri: &str) -> Response {
    let policy = format!("{CSP}; form-action{}", form_target(redirect_uri));
    set_headers(&mut response, &policy);
    response
}

fn set_headers(response: &mut Response, policy: &str) {
    let headers = response.headers_mut();
    // Every part of the policy is ASCII: the constant, and a URL's scheme,
    // host (Punycode) and port.
    let policy = HeaderValue::from_str(policy).unwrap_or_else(|_| HeaderValue::from_static(CSP));
    headers.insert(header::CONTENT_SECURITY_POLICY, policy);
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
}

/// The source expression (CSP 3 §2.3.1) for a form target at
/// `redirect_uri`, with its leading space: the origin of an `http(s)`
/// address; a scheme alone for an IPv6 literal (source expressions have
/// no IPv6 hosts) and for a native app's private-use scheme (RFC 8252
/// §7.1). Nothing for what is not a URL (a checked redirect URI always is).
fn form_target(redirect_uri: &str) -> String {
    let Ok(url) = url::Url::parse(redirect_uri) else {
        return String::new();
    };
    match url.host() {
        Some(url::Host::Domain(_) | url::Host::Ipv4(_)) if matches!(url.scheme(), "http" | "https") => {
            format!(" {}", url.origin().ascii_serialization())
        }
        _ => format!(" {}:", url.scheme()),
    }
}

#[cfg(test)]
mod tests {
    use super::form_target;

    #[test]
    fn a_form_target_is_the_redirect_uris_origin_or_its_scheme() {
        assert_eq!(form_target("https://rp.example/cb?x=1"), " https://rp.example");
        assert_eq!(form_target("https://RP.example:8443/cb"), " https://rp.example:8443");
        assert_eq!(form_target("https://rp.example:443/cb"), " https://rp.example", "the default port is implied");
        assert_eq!(form_target("http://127.0.0.1:53124/callback"), " http://127.0.0.1:53124");
        assert_eq!(form_target("https://пример.рф/cb"), " https://xn--e1afmkfd.xn--p1ai", "Punycode");
        assert_eq!(form_target("http://[::1]:8080/cb"), " http:", "no IPv6 host in a source expression");
        assert_eq!(form_target("ru.bank.app:/oauth2redirect"), " ru.bank.app:");
        assert_eq!(form_target("not a url"), "");
    }
}
