//! Cookie names from the spec, and reading and writing them.
//!
//! Every cookie is `HttpOnly`, `SameSite=Lax` and `Path=/` (the operator
//! console's are scoped to `/console`), and `Secure` unless the server runs
//! as a plain-HTTP loopback demo. `Lax` (not `Strict`)
//! because the browser arrives at `/oauth2/authorize` from the client's site.

use axum::http::header::{COOKIE, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use portico_model::ids::LoginProcessId;
use serde::Serialize;
use serde::de::DeserializeOwned;

pub const AUTHENTICATION_FLOW: &str = "authentication_flow";
pub const FAILED_AUTHENTICATION_FLOW_ID: &str = "failed_authentication_flow_id";
pub const LOGIN_CLIENT_ENTRY: &str = "login_client_entry";
pub const XSRF_TOKEN: &str = "XSRF-TOKEN";
pub const STEP_ERROR_DETAILS: &str = "step_error_details";
pub const CAPTCHA_REQUIRED: &str = "svc.captcha.required";
pub const DEVICE_ID: &str = "svc.device.deviceId";
pub const ERROR_PAGE_DETAILS: &str = "error_page_details";
/// The SSO session (not named by the spec; carries the neutral prefix).
pub const SESSION: &str = "svc.session";
/// The language last chosen in this browser.
pub const LOCALE: &str = "svc.locale";

/// Device cookies live a year.
pub const DEVICE_MAX_AGE: i64 = 365 * 24 * 3600;

/// The value of cookie `name` in the request, if present.
pub fn get<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|line| line.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim_matches('"'))
}

/// The login process a process cookie (`authentication_flow`,
/// `failed_authentication_flow_id`) names, if present and well-formed.
pub fn process_id(headers: &HeaderMap, name: &str) -> Option<LoginProcessId> {
    get(headers, name).and_then(|value| uuid::Uuid::parse_str(value).ok()).map(LoginProcessId::from)
}

/// The double-submit CSRF check: `sent` (form field or `X-XSRF-TOKEN`
/// header) equals the `XSRF-TOKEN` cookie, compared in constant time.
pub fn xsrf_matches(headers: &HeaderMap, sent: &str) -> bool {
    get(headers, XSRF_TOKEN).is_some_and(|cookie| portico_crypto::constant_time_eq(sent.as_bytes(), cookie.as_bytes()))
}

/// `Set-Cookie` headers being collected for a response.
#[derive(Debug, Default)]
pub struct SetCookies {
    secure: bool,
    path: &'static str,
    same_site: &'static str,
    headers: Vec<HeaderValue>,
}

impl SetCookies {
    /// Cookies for the whole site (`Path=/`, `SameSite=Lax`).
    pub fn new(secure: bool) -> Self {
        Self::scoped(secure, "/", "Lax")
    }

    /// Cookies only under `path`, with `same_site` (`Lax` or `Strict`).
    pub fn scoped(secure: bool, path: &'static str, same_site: &'static str) -> Self {
        Self { secure, path, same_site, headers: Vec::new() }
    }

    /// Sets `name` for `max_age` seconds (a session cookie when `None`).
    /// `value` must be cookie-safe (Base64URL, UUIDs and dots are).
    pub fn set(&mut self, name: &str, value: &str, max_age: Option<i64>) -> &mut Self {
        let mut line = format!("{name}={value}; Path={}; HttpOnly; SameSite={}", self.path, self.same_site);
        if let Some(age) = max_age {
            line.push_str(&format!("; Max-Age={age}"));
        }
        if self.secure {
            line.push_str("; Secure");
        }
        self.push(line)
    }

    /// Clears `name` in the browser.
    pub fn clear(&mut self, name: &str) -> &mut Self {
        let mut line = format!("{name}=; Path={}; HttpOnly; SameSite={}; Max-Age=0", self.path, self.same_site);
        if self.secure {
            line.push_str("; Secure");
        }
        self.push(line)
    }

    fn push(&mut self, line: String) -> &mut Self {
        if let Ok(value) = HeaderValue::from_str(&line) {
            self.headers.push(value);
        }
        self
    }

    /// Adds the collected headers to `headers`.
    pub fn apply(self, headers: &mut HeaderMap) {
        for value in self.headers {
            headers.append(SET_COOKIE, value);
        }
    }
}

/// Whether a response's `Set-Cookie` headers give `name` a value (not
/// clear it).
pub fn is_set(headers: &HeaderMap, name: &str) -> bool {
    headers.get_all(SET_COOKIE).iter().filter_map(|v| v.to_str().ok()).any(|line| {
        line.strip_prefix(name).and_then(|rest| rest.strip_prefix('=')).is_some_and(|rest| !rest.starts_with(';'))
    })
}

/// Encodes `value` as signed, cookie-safe text: Base64URL JSON plus an HMAC.
pub fn seal_json<T: Serialize>(signer: &portico_crypto::cookie::CookieSigner, name: &str, value: &T) -> String {
    let json = serde_json::to_vec(value).unwrap_or_default();
    signer.sign(name, &URL_SAFE_NO_PAD.encode(json))
}

/// Reads what [`seal_json`] wrote; `None` when absent, forged or damaged.
pub fn open_json<T: DeserializeOwned>(
    signer: &portico_crypto::cookie::CookieSigner,
    name: &str,
    cookie: Option<&str>,
) -> Option<T> {
    let payload = signer.verify(name, cookie?)?;
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()
}

/// `value` as JSON sealed (AES-256-GCM) under `label`: cookie-safe text
/// that only `sealer` opens, and only under the same label.
pub fn seal_with<T: Serialize>(sealer: &portico_crypto::seal::Sealer, label: &str, value: &T) -> String {
    let json = serde_json::to_vec(value).unwrap_or_default();
    portico_crypto::b64url(sealer.seal(label, &json))
}

/// Cookie `name` of the request as [`seal_with`] wrote it; `None` when
/// absent, forged, damaged or sealed under another label.
pub fn open_with<T: DeserializeOwned>(
    sealer: &portico_crypto::seal::Sealer,
    headers: &HeaderMap,
    name: &str,
    label: &str,
) -> Option<T> {
    let sealed = portico_crypto::b64url_decode(get(headers, name)?).ok()?;
    serde_json::from_slice(&sealer.open(label, &sealed).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cookies_across_headers() {
        let mut headers = HeaderMap::new();
        headers.append(COOKIE, HeaderValue::from_static("a=1; XSRF-TOKEN=abc"));
        headers.append(COOKIE, HeaderValue::from_static("svc.device.deviceId=\"d-1\""));
        assert_eq!(get(&headers, "XSRF-TOKEN"), Some("abc"));
        assert_eq!(get(&headers, DEVICE_ID), Some("d-1"));
        assert_eq!(get(&headers, "b"), None);
    }

    #[test]
    fn set_cookie_attributes() {
        let mut cookies = SetCookies::new(true);
        cookies.set("a", "1", Some(60)).clear("b");
        let mut headers = HeaderMap::new();
        cookies.apply(&mut headers);
        let lines: Vec<_> = headers.get_all(SET_COOKIE).iter().map(|v| v.to_str().unwrap()).collect();
        assert_eq!(lines[0], "a=1; Path=/; HttpOnly; SameSite=Lax; Max-Age=60; Secure");
        assert_eq!(lines[1], "b=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0; Secure");
    }
}
