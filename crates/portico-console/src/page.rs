//! Rendering the console's pages: the layout every page shares, the
//! security headers, forms, the confirmation step of destructive actions,
//! and the pages that say why something was refused.
//!
//! The pages carry no script and no inline style, so the
//! Content-Security-Policy allows nothing but the console's own
//! stylesheet, and forms only to this server.

use askama::Template;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use portico_model::login::Locale;

use crate::ConsoleState;
use crate::forms::Form;
use crate::session::{Operator, safe_back, see_other};
use crate::texts::Texts;

/// The policy of every console page.
pub const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
     frame-ancestors 'none'; base-uri 'none'";

/// Largest form the console reads.
pub const MAX_FORM: usize = 64 * 1024;

const CSS: &str = include_str!("../assets/console.css");

/// `/console/assets/console.css`.
pub async fn css() -> Response {
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/css; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600"));
    (headers, CSS).into_response()
}

/// What every page's frame shows: the language, the operator, the
/// sections they may open, the language switch and the sign-out.
pub struct Layout {
    pub t: Texts,
    /// The operator's login; empty on pages shown before sign-in.
    pub operator: String,
    pub role: &'static str,
    pub is_admin: bool,
    pub csrf: String,
    /// The section whose tab is current (`users`, `clients`, ...).
    pub section: &'static str,
    /// This page's address, for the language switch to return to.
    pub here: String,
    /// What the last action did (a text key), shown once above the page.
    pub notice: Option<&'static str>,
}

impl Layout {
    /// The frame of a signed-in operator's page.
    pub fn new(headers: &HeaderMap, operator: &Operator, section: &'static str, here: &str) -> Self {
        Self {
            t: Texts::new(language(headers)),
            operator: operator.login(),
            role: operator.role(),
            is_admin: operator.is_admin(),
            csrf: operator.csrf.clone(),
            section,
            here: safe_back(here),
            notice: None,
        }
    }

    /// The frame of a page shown without a signed-in operator.
    pub fn anonymous(headers: &HeaderMap) -> Self {
        Self::in_language(language(headers))
    }

    /// The frame of a page shown to nobody signed in, in `locale`.
    pub fn in_language(locale: Locale) -> Self {
        Self {
            t: Texts::new(locale),
            operator: String::new(),
            role: "",
            is_admin: false,
            csrf: String::new(),
            section: "",
            here: "/console/".to_owned(),
            notice: None,
        }
    }

    /// The operator's role, in words.
    pub fn role_name(&self) -> &'static str {
        self.s(if self.is_admin { "role.admin" } else { "role.support" })
    }

    /// A problem's place as the form names it: the field's label (and an
    /// address's position), or the place itself for what no form field
    /// shows.
    pub fn field(&self, place: &str) -> String {
        let (name, rest) = place.split_at(place.find('[').unwrap_or(place.len()));
        let key = match name {
            "login" => "user.login",
            "password" => "user.password",
            "phone" => "user.phone",
            "email" => "user.email",
            "name" => "user.name",
            "reason" => "user.reason",
            "role" => "user.role",
            "clientId" => "client.id",
            "secret" => "client.secret",
            "redirectUris" => "client.redirect_uris",
            "postLogoutRedirectUris" => "client.post_logout_uris",
            "backchannelLogoutUri" => "client.backchannel",
            "scope" => "client.scope",
            "nameRu" => "client.name_ru",
            "nameEn" => "client.name_en",
            "tokenEndpointAuthMethod" => "client.auth_method",
            "jwks" => "client.jwks",
            "jwksUri" => "client.jwks_uri",
            "tokenEndpointAuthSigningAlg" => "client.assertion_alg",
            "idTokenSignedResponseAlg" => "client.id_token_alg",
            "accessTokenSignedResponseAlg" => "client.access_token_alg",
            "userinfoSignedResponseAlg" => "client.userinfo_alg",
            "introspectionSignedResponseAlg" => "client.introspection_alg",
            "authorizationSignedResponseAlg" => "client.authorization_alg",
            "requestObjectSigningAlg" => "client.request_object_alg",
            "requireSignedRequestObject" => "client.require_jar",
            "securityProfile" => "client.profile",
            "refreshTokenRotation" => "client.rotation",
            "tlsClientAuthSubject"
            | "tlsClientAuthSubjectDn"
            | "tlsClientAuthSanDns"
            | "tlsClientAuthSanUri"
            | "tlsClientAuthSanIp"
            | "tlsClientAuthSanEmail" => "client.tls_subject",
            "alg" => "keys.algorithm",
            _ => return place.to_owned(),
        };
        format!("{}{rest}", self.s(key))
    }

    /// The text under `key` in the page's language.
    pub fn s(&self, key: &str) -> &'static str {
        self.t.s(key)
    }

    /// Shows the notice `done` names (`?done=unblocked`), if it is one.
    #[must_use]
    pub fn with_notice(mut self, done: Option<&str>) -> Self {
        self.notice = done.and_then(|done| self.t.notice(done));
        self
    }

    /// A time as the console shows it: UTC, to the second.
    pub fn time(&self, at: impl Moment) -> String {
        let at = at.moment();
        let format = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC");
        at.to_offset(time::UtcOffset::UTC).format(&format).unwrap_or_default()
    }
}

/// A time, however many references deep the template holds it.
pub trait Moment {
    fn moment(&self) -> time::OffsetDateTime;
}

impl Moment for time::OffsetDateTime {
    fn moment(&self) -> time::OffsetDateTime {
        *self
    }
}

impl<T: Moment + ?Sized> Moment for &T {
    fn moment(&self) -> time::OffsetDateTime {
        (**self).moment()
    }
}

/// The console's language: the `svc.locale` cookie the login pages share,
/// else the browser's.
pub fn language(headers: &HeaderMap) -> Locale {
    portico_identity::login::texts::negotiate(headers, None)
}

/// A page with the console's security headers.
pub fn render(status: StatusCode, page: &impl Template) -> Response {
    match page.render() {
        Ok(html) => secure((status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()),
        Err(error) => {
            tracing::error!(%error, "a console page could not be rendered");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// Adds the console's security headers; nothing it shows is cached.
pub fn secure(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A route's path parameters; a segment that is no text (not UTF-8) names
/// nothing: the console's 404 page, not a bare 400.
pub struct Segments<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned + Send> axum::extract::FromRequestParts<S> for Segments<T> {
    type Rejection = Refusal;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self, Refusal> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(value)) => Ok(Segments(value)),
            Err(_) => Err(Refusal::page(&parts.headers, StatusCode::NOT_FOUND, "error.not_found")),
        }
    }
}

/// A page's query as a `T`, read by the one reader leniently: a page's
/// query is navigation, so a parameter given twice (or holding a NUL)
/// counts as not given, and a value the page cannot use shows its default.
pub fn query<T: serde::de::DeserializeOwned + Default>(raw: Option<&str>) -> T {
    // A query type's fields are all optional text: reading cannot fail.
    portico_model::form::Form::parse(raw.unwrap_or_default().as_bytes()).read_lenient().unwrap_or_default()
}

/// Entries of a list page kept in the order of its key (clients,
/// merchants, agreements).
pub const LIST_PAGE: u32 = 50;

/// The query of a list page kept in key order: what was just done, and
/// the key the page begins after.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
pub struct ListQuery {
    /// The notice's text key, after a form's 303.
    pub done: Option<String>,
    /// The key of the last entry of the page before.
    pub after: Option<String>,
}

impl ListQuery {
    /// What to read from the store: a page and one entry more, to know
    /// whether another page follows.
    pub fn page(&self) -> portico_storage::KeyPage<'_> {
        portico_storage::KeyPage { after: self.after.as_deref(), limit: LIST_PAGE + 1 }
    }
}

/// The first [`LIST_PAGE`] of `rows` (read one over), and the address of
/// the page after them, at `path`, when more follow.
pub fn list_page<T>(rows: Vec<T>, path: &str, key: impl Fn(&T) -> &str) -> (Vec<T>, Option<String>) {
    let (rows, next) = portico_api::pagination::split(rows, LIST_PAGE, key);
    let next = next.map(|after| {
        format!("{path}?{}", form_urlencoded::Serializer::new(String::new()).append_pair("after", &after).finish())
    });
    (rows, next)
}

/// The query of a page that only shows what was just done (`done`).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
pub struct Notice {
    /// The notice's text key, after a form's 303.
    pub done: Option<String>,
}

#[derive(Template)]
#[template(path = "confirm.html")]
struct ConfirmPage {
    l: Layout,
    question: &'static str,
    subject: String,
    action: String,
    button: &'static str,
    fields: Vec<(String, String)>,
    cancel: String,
}

/// The confirmation step of a destructive action: the same form again,
/// with `confirm=yes`, behind a question naming what it will do to
/// `subject`. Nothing has changed yet.
pub fn confirm(
    l: Layout,
    form: &Form,
    question: &'static str,
    subject: String,
    action: &str,
    button: &'static str,
) -> Response {
    let cancel = l.here.clone();
    let page = ConfirmPage { l, question, subject, action: action.to_owned(), button, fields: form.carried(), cancel };
    render(StatusCode::OK, &page)
}

#[derive(Template)]
#[template(path = "message.html")]
struct MessagePage {
    l: Layout,
    heading: &'static str,
    text: String,
    problems: Vec<(String, String)>,
    back: String,
    /// Portico's logout, offered to an account that is no operator's.
    sign_out: Option<String>,
}

/// Every answer of a console page or form that is not the page asked
/// for, in one place: the console's handlers return `Result<_, Refusal>`.
#[derive(Debug)]
pub enum Refusal {
    /// No operator signed in (or no longer one): Portico's sign-in, back
    /// to this page afterwards.
    SignIn(String),
    /// A page in the request's language saying why nothing was done
    /// (`key` names its text): a bad form (400), a CSRF failure or a role
    /// too low (403), an address naming nothing (404).
    Page { locale: Locale, status: StatusCode, key: &'static str },
    /// The store is unavailable: 503 with `Retry-After`.
    Unavailable(Locale),
}

impl Refusal {
    /// A [`Refusal::Page`] in the language `headers` ask for.
    pub fn page(headers: &HeaderMap, status: StatusCode, key: &'static str) -> Self {
        Self::Page { locale: language(headers), status, key }
    }

    /// A [`Refusal::Unavailable`] in the language `headers` ask for.
    pub fn unavailable(headers: &HeaderMap) -> Self {
        Self::Unavailable(language(headers))
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Self::SignIn(back) => crate::session::sign_in(&back),
            Self::Page { locale, status, key } => message(Layout::in_language(locale), status, key, "/console/"),
            Self::Unavailable(locale) => {
                let l = Layout::in_language(locale);
                let mut response = message(l, StatusCode::SERVICE_UNAVAILABLE, "error.unavailable", "/console/");
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
                response
            }
        }
    }
}

/// The page for a signed-in account without an operator role, with a way
/// to sign in as someone else.
pub fn not_operator(headers: &HeaderMap, sign_out: &str) -> Response {
    let l = Layout::anonymous(headers);
    let text = l.s("error.not_operator").to_owned();
    let page = MessagePage {
        l,
        heading: "error.heading",
        text,
        problems: Vec::new(),
        back: "/console/".into(),
        sign_out: Some(sign_out.to_owned()),
    };
    render(StatusCode::FORBIDDEN, &page)
}

/// A console address that names nothing.
pub async fn not_found(headers: HeaderMap) -> Refusal {
    Refusal::page(&headers, StatusCode::NOT_FOUND, "error.not_found")
}

/// What the admin service refused, said on a page of the operator's
/// frame: every problem with its field, or what was not found or is
/// taken. `back` is the page to return to.
pub fn service_error(l: Layout, error: portico_admin::ServiceError, back: &str) -> Response {
    use portico_admin::ServiceError;
    let (status, text, problems) = match error {
        ServiceError::Invalid(problems) => (
            StatusCode::BAD_REQUEST,
            l.s("error.invalid").to_owned(),
            portico_api::Problem::listed(problems).into_iter().map(|p| (p.place, p.message)).collect(),
        ),
        ServiceError::NotFound(_, message) => (StatusCode::NOT_FOUND, message, Vec::new()),
        ServiceError::Conflict(_, message) => (StatusCode::CONFLICT, message, Vec::new()),
        ServiceError::Forbidden(message) => (StatusCode::FORBIDDEN, message, Vec::new()),
        ServiceError::Stale(_) => (StatusCode::CONFLICT, l.s("error.changed_meanwhile").to_owned(), Vec::new()),
        ServiceError::Storage(error) => {
            tracing::warn!(%error, "a console action failed in the store");
            (StatusCode::SERVICE_UNAVAILABLE, l.s("error.unavailable").to_owned(), Vec::new())
        }
    };
    render(status, &MessagePage { l, heading: "error.heading", text, problems, back: safe_back(back), sign_out: None })
}

/// A storage failure on a page of the operator's frame.
pub fn storage_error(l: Layout, error: &portico_storage::StorageError) -> Response {
    tracing::warn!(%error, "a console page failed in the store");
    let text = l.s("error.unavailable").to_owned();
    let back = l.here.clone();
    render(
        StatusCode::SERVICE_UNAVAILABLE,
        &MessagePage { l, heading: "error.heading", text, problems: Vec::new(), back, sign_out: None },
    )
}

/// A page in the operator's frame saying `key` (a 404 or 409 of a
/// section's own).
pub fn message(l: Layout, status: StatusCode, key: &'static str, back: &str) -> Response {
    let text = l.s(key).to_owned();
    render(
        status,
        &MessagePage { l, heading: "error.heading", text, problems: Vec::new(), back: safe_back(back), sign_out: None },
    )
}

/// The language switch's form.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
pub struct LocaleFields {
    pub locale: Option<String>,
    /// The page to return to.
    pub back: Option<String>,
}

/// `POST /console/locale`: the language switch (`locale`, `back`). Sets
/// `svc.locale`, which the login pages read too, and returns to `back`.
pub async fn locale(State(console): State<ConsoleState>, headers: HeaderMap, body: Body) -> Result<Response, Refusal> {
    let form = Form::read(&headers, body).await?;
    let fields: LocaleFields = form.fields(&headers)?;
    let back = safe_back(fields.back.as_deref().unwrap_or_default());
    console.form_operator(&headers, &form, &back).await?;
    let Some(locale) = fields.locale.as_deref().and_then(Locale::parse) else {
        return Err(Refusal::page(&headers, StatusCode::BAD_REQUEST, "error.form"));
    };
    let mut response = see_other(&back);
    let mut cookies = portico_identity::cookies::SetCookies::new(console.identity.settings.secure_cookies);
    cookies.set(portico_identity::cookies::LOCALE, locale.as_str(), Some(365 * 24 * 3600));
    cookies.apply(response.headers_mut());
    Ok(response)
}

/// A page's address: `path`, with its query when there is one.
pub fn here(path: &str, raw: Option<&str>) -> String {
    match raw {
        Some(query) if !query.is_empty() => format!("{path}?{query}"),
        _ => path.to_owned(),
    }
}

#[derive(Template)]
#[template(path = "secret.html")]
struct SecretPage {
    l: Layout,
    /// What `id` is (a text key).
    label: &'static str,
    id: String,
    secret: String,
    back: String,
}

/// The page that shows a new secret (a client's, a merchant's key) this
/// once, in the answer to the form that made it; never cached.
pub fn shown_once(l: Layout, label: &'static str, id: String, secret: String, back: &str) -> Response {
    render(StatusCode::OK, &SecretPage { l, label, id, secret, back: safe_back(back) })
}

/// `done=<notice>` appended to a console path.
pub fn done(path: &str, notice: &str) -> String {
    let separator = if path.contains('?') { '&' } else { '?' };
    format!("{path}{separator}done={notice}")
}

/// A destructive action behind a confirmation.
pub struct Action {
    /// Whether it needs the `admin` role (else `support` may).
    pub admin: bool,
    pub section: &'static str,
    /// The page it is taken from (the confirmation's way back).
    pub here: String,
    /// The confirmation's question and button (text keys).
    pub question: &'static str,
    pub button: &'static str,
    /// Where the confirmed form goes.
    pub path: String,
}

/// Runs an action once the operator confirmed it: the form's operator
/// (CSRF, role), then, without `confirm=yes`, the confirmation page naming
/// the `subject` of the form; with it, `run`, whose answer is the address
/// to show next.
pub async fn confirmed<T: serde::de::DeserializeOwned>(
    console: &crate::Console,
    headers: &HeaderMap,
    body: Body,
    action: Action,
    subject: impl AsyncFnOnce(&T) -> Result<String, portico_admin::ServiceError>,
    run: impl AsyncFnOnce(&Operator, &T) -> Result<String, portico_admin::ServiceError>,
) -> Result<Response, Refusal> {
    let (fields, form, operator) = console.read_form(headers, body, &action.here, action.admin, MAX_FORM).await?;
    let l = Layout::new(headers, &operator, action.section, &action.here);
    if !form.confirmed() {
        return Ok(match subject(&fields).await {
            Ok(subject) => confirm(l, &form, action.question, subject, &action.path, action.button),
            Err(error) => service_error(l, error, &action.here),
        });
    }
    Ok(match run(&operator, &fields).await {
        Ok(next) => see_other(&next),
        Err(error) => service_error(l, error, &action.here),
    })
}
