//! Rendering the account page: the bank's look (the login pages'
//! stylesheet, theme and logo, and the page's own additions), the security
//! headers, forms, and the pages that say why something was refused.
//!
//! The only script is the page's own (`/account/assets/account.js`,
//! WebAuthn's `navigator.credentials.create` for adding a passkey);
//! everything else works without it. The Content-Security-Policy allows
//! nothing else: no inline script or style, forms only to this server.

use askama::Template;
use axum::body::{Body, to_bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use portico_model::login::Locale;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::AccountState;
use crate::session::{safe_back, see_other};
use crate::texts::Texts;

/// The policy of every account page.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
     form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// Largest form the page reads (a new passkey's JSON is the largest).
pub const MAX_FORM: usize = 32 * 1024;

const CSS: &str = include_str!("../assets/account.css");
const JS: &str = include_str!("../assets/account.js");

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600"));
    (headers, body).into_response()
}

/// `/account/assets/account.css`.
pub async fn css() -> Response {
    asset("text/css; charset=utf-8", CSS)
}

/// `/account/assets/account.js`.
pub async fn js() -> Response {
    asset("text/javascript; charset=utf-8", JS)
}

/// The page's language: the `svc.locale` cookie the login pages share,
/// else the browser's.
pub fn language(headers: &HeaderMap) -> Locale {
    portico_identity::login::texts::negotiate(headers, None)
}

/// What every page's frame shows.
pub struct Layout {
    pub t: Texts,
    pub bank: String,
    pub notice_line: Option<String>,
    pub support: Option<String>,
    /// The form token; empty on pages shown before sign-in.
    pub csrf: String,
    /// This page's address, for the language switch to return to.
    pub here: String,
    /// What the last action did (a text key), shown once above the page.
    pub notice: Option<&'static str>,
}

impl Layout {
    pub fn new(account: &crate::Account, locale: Locale, csrf: &str, here: &str) -> Self {
        let brand = account.identity.settings.branding.view(locale, None);
        Self {
            t: Texts::new(locale),
            bank: brand.bank.to_owned(),
            notice_line: brand.notice.map(str::to_owned),
            support: brand.support.map(str::to_owned),
            csrf: csrf.to_owned(),
            here: safe_back(here),
            notice: None,
        }
    }

    /// The text under `key` in the page's language.
    pub fn s(&self, key: &str) -> &'static str {
        self.t.s(key)
    }

    /// A time as the page shows it: UTC, to the minute.
    pub fn time(&self, at: &time::OffsetDateTime) -> String {
        let format = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute] UTC");
        at.to_offset(time::UtcOffset::UTC).format(&format).unwrap_or_default()
    }
}

/// A page with the account page's security headers.
pub fn render(status: StatusCode, page: &impl Template) -> Response {
    match page.render() {
        Ok(html) => secure((status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()),
        Err(error) => {
            tracing::error!(%error, "an account page could not be rendered");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// Adds the security headers; nothing the page shows is cached.
pub fn secure(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A page's query as a `T`, read leniently: a parameter given twice (or
/// holding a NUL) counts as not given.
pub fn query<T: DeserializeOwned + Default>(raw: Option<&str>) -> T {
    portico_model::form::Form::parse(raw.unwrap_or_default().as_bytes()).read_lenient().unwrap_or_default()
}

/// A form read once, with its guard fields (`_csrf`, `confirm`).
#[derive(Debug, Default)]
pub struct Form {
    fields: portico_model::form::Form,
    guard: Guard,
}

#[derive(Debug, Default, Deserialize)]
struct Guard {
    #[serde(rename = "_csrf")]
    csrf: Option<String>,
    confirm: Option<String>,
}

impl Form {
    /// A form of at most [`MAX_FORM`] bytes; a larger one or one with a
    /// repeated or NUL-holding field is no form (400).
    ///
    /// # Errors
    /// The 400 page.
    pub async fn read(headers: &HeaderMap, body: Body) -> Result<Self, Refusal> {
        let bytes = to_bytes(body, MAX_FORM).await.map_err(|_| not_a_form(headers))?;
        let fields = portico_model::form::Form::parse(&bytes);
        let guard = fields.read().map_err(|_| not_a_form(headers))?;
        Ok(Self { fields, guard })
    }

    /// The form's own fields as a `T`.
    ///
    /// # Errors
    /// The 400 page.
    pub fn fields<T: DeserializeOwned>(&self, headers: &HeaderMap) -> Result<T, Refusal> {
        self.fields.read().map_err(|_| not_a_form(headers))
    }

    pub fn csrf(&self) -> &str {
        self.guard.csrf.as_deref().unwrap_or_default()
    }

    /// Whether the form comes from the confirmation page.
    pub fn confirmed(&self) -> bool {
        self.guard.confirm.as_deref() == Some("yes")
    }
}

/// A form with no fields of its own (only its guard).
#[derive(Debug, Default, Deserialize)]
pub struct NoFields {}

fn not_a_form(headers: &HeaderMap) -> Refusal {
    Refusal::page(headers, StatusCode::BAD_REQUEST, "error.form")
}

#[derive(Template)]
#[template(path = "message.html")]
struct MessagePage {
    l: Layout,
    text: &'static str,
}

/// Every answer that is not the page asked for.
#[derive(Debug)]
pub enum Refusal {
    /// No customer signed in (or no longer): Portico's sign-in, back to
    /// this page afterwards.
    SignIn(String),
    /// A page in the request's language saying why nothing was done.
    Page { locale: Locale, status: StatusCode, key: &'static str },
}

impl Refusal {
    pub fn page(headers: &HeaderMap, status: StatusCode, key: &'static str) -> Self {
        Self::Page { locale: language(headers), status, key }
    }

    pub fn unavailable(headers: &HeaderMap) -> Self {
        Self::page(headers, StatusCode::SERVICE_UNAVAILABLE, "error.unavailable")
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Self::SignIn(back) => crate::session::sign_in(&back),
            Self::Page { locale, status, key } => {
                let l = Layout {
                    t: Texts::new(locale),
                    bank: String::new(),
                    notice_line: None,
                    support: None,
                    csrf: String::new(),
                    here: "/account/".to_owned(),
                    notice: None,
                };
                let mut response = render(status, &MessagePage { text: l.s(key), l });
                if status == StatusCode::SERVICE_UNAVAILABLE {
                    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
                }
                response
            }
        }
    }
}

/// An account address that names nothing.
pub async fn not_found(headers: HeaderMap) -> Refusal {
    Refusal::page(&headers, StatusCode::NOT_FOUND, "error.not_found")
}

/// The language switch's form.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct LocaleFields {
    locale: Option<String>,
    /// The page to return to.
    back: Option<String>,
}

/// `POST /account/locale`: the language switch (`locale`, `back`). Sets
/// `svc.locale`, which the login pages and the console read too, and
/// returns to `back`.
pub async fn locale(State(account): State<AccountState>, headers: HeaderMap, body: Body) -> Result<Response, Refusal> {
    let form = Form::read(&headers, body).await?;
    let fields: LocaleFields = form.fields(&headers)?;
    account.form_customer(&headers, &form).await?;
    let Some(locale) = fields.locale.as_deref().and_then(Locale::parse) else {
        return Err(Refusal::page(&headers, StatusCode::BAD_REQUEST, "error.form"));
    };
    let mut response = see_other(&safe_back(fields.back.as_deref().unwrap_or_default()));
    let mut cookies = portico_identity::cookies::SetCookies::new(account.identity.settings.secure_cookies);
    cookies.set(portico_identity::cookies::LOCALE, locale.as_str(), Some(365 * 24 * 3600));
    cookies.apply(response.headers_mut());
    Ok(response)
}
