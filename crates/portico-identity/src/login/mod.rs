//! The browser login: a server-held process (see
//! [`portico_model::login`]) walked through HTML pages.
//!
//! - `GET /login` shows the current step; `POST /login` submits it.
//! - `GET /error` shows what went wrong; `GET /login/restart` starts over.
//! - `PATCH /login/user-settings/locale` switches the pages' language.
//! - The authorize endpoint starts a process ([`start`]) and, once the
//!   process is complete, issues the code.
//!
//! - `POST /login/user-settings/auth-method` restarts the process with the
//!   other method; `POST /login/user-settings/otp-method` sends the second
//!   factor by e-mail.
//!
//! The order of the steps is in [`flow`]; each step's submission in
//! [`steps`]; where a process is (in progress, completed, ended) is its
//! [`portico_model::login::Stage`]. Steps decide and store; what they
//! decided becomes the HTTP answer in one place, [`answer::Answer::respond`].

pub mod answer;
pub(crate) mod assets;
pub(crate) mod auth_method;
pub mod error_page;
pub mod flow;
pub mod guard;
pub(crate) mod locale;
pub(crate) mod otp_method;
pub(crate) mod page;
pub mod passkey;
pub mod passkey_enrolment;
pub(crate) mod restart;
pub mod session;
pub mod steps;
pub mod submit;
pub mod texts;
pub mod view;

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::get;
use portico_model::client::SecurityProfile;
use portico_model::ids::{ClientId, LoginProcessId};
use portico_model::login::{AuthMethod, LoginProcess, LoginState};
use portico_model::oauth::ResponseMode;
use portico_model::session::SsoSession;
use portico_storage::StorageError;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

use self::answer::Answer;

use crate::cookies::{self, SetCookies};
use crate::http::{redirect, with_query};
use crate::oauth2::AuthorizeRequest;
use crate::{Identity, IdentityState};

pub fn router() -> Router<IdentityState> {
    Router::new()
        .route("/login", get(page::login_page).post(submit::submit_step))
        .route("/login/restart", get(restart::restart))
        .route("/login/passkey", axum::routing::post(passkey::sign_in))
        .route("/login/passkey/options", axum::routing::post(passkey::options))
        .route("/login/assets/login.css", get(assets::css))
        .route("/login/assets/login.js", get(assets::js))
        .route("/login/assets/form_post.js", get(assets::form_post_js))
        .route("/login/assets/theme.css", get(assets::theme_css))
        .route("/login/assets/logo", get(assets::logo))
        .route("/login/return", get(return_to_client))
        .route("/login/user-settings/locale", axum::routing::patch(locale::update_locale).post(locale::submit_locale))
        .route("/login/user-settings/auth-method", axum::routing::post(auth_method::update_auth_method))
        .route("/login/user-settings/otp-method", axum::routing::post(otp_method::update_otp_method))
        .route("/error", get(error_page::error_page))
        .route("/logged-out", get(error_page::logged_out))
}

/// The browser's process for a form submission; `Err` with the answer when
/// there is none (back to the client or the logged-out page), when it is
/// complete (on to authorize), or when it cannot be read.
pub(crate) async fn process_to_submit(
    identity: &Identity,
    headers: &HeaderMap,
    now: OffsetDateTime,
) -> Result<LoginProcess, Response> {
    match current_process(identity, headers, now).await {
        Ok(Some(process)) if process.state.is_complete() => {
            Err(redirect(StatusCode::SEE_OTHER, &authorize_url(identity, &process)))
        }
        Ok(Some(process)) => Ok(process),
        Ok(None) => Err(no_process(identity, headers).await),
        Err(error) => Err(error_page::server_error(error)),
    }
}

/// What the signed `login_client_entry` cookie remembers: where to send the
/// browser back when its login process is gone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientEntry {
    #[serde(rename = "c")]
    pub client_id: ClientId,
    #[serde(rename = "r")]
    pub redirect_uri: String,
    #[serde(rename = "s", default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(rename = "m", default, skip_serializing_if = "is_query")]
    pub response_mode: ResponseMode,
    /// The client's `authorization_signed_response_alg` (JARM).
    #[serde(rename = "a", default, skip_serializing_if = "Option::is_none")]
    pub jwt_alg: Option<portico_model::key::Algorithm>,
    /// The client's profile (a signed answer lives as long as its code).
    #[serde(rename = "p", default, skip_serializing_if = "is_standard")]
    pub profile: SecurityProfile,
}

fn is_standard(profile: &SecurityProfile) -> bool {
    *profile == SecurityProfile::Standard
}

fn is_query(mode: &ResponseMode) -> bool {
    *mode == ResponseMode::Query
}

/// What the client is told when the login ends without completing.
const ACCESS_DENIED: [(&str, &str); 2] =
    [("error", "access_denied"), ("error_description", "the login process ended without completing")];

impl ClientEntry {
    /// The registered client address, with an OAuth error the client
    /// understands (`access_denied`), its `state` and the issuer (`iss`,
    /// RFC 9207).
    pub fn return_url(&self, issuer: &str) -> String {
        let [error, description] = ACCESS_DENIED;
        let mut pairs = vec![error, description];
        pairs.extend(self.state.as_deref().map(|state| ("state", state)));
        pairs.push(("iss", issuer));
        with_query(&self.redirect_uri, &pairs)
    }

    /// Where a link back to the client leads: [`ClientEntry::return_url`],
    /// or, when the client asked for `form_post` or a signed response
    /// (JARM), `/login/return`, which answers the same in the client's mode.
    pub fn return_link(&self, issuer: &str) -> String {
        match self.response_mode {
            ResponseMode::Query => self.return_url(issuer),
            _ => format!("{issuer}/login/return"),
        }
    }

    /// The answer that takes the browser back to the client with
    /// `access_denied`, in the client's response mode.
    pub async fn respond(&self, identity: &Identity, headers: &HeaderMap) -> Response {
        let [error, description] = ACCESS_DENIED;
        let mut pairs = vec![error, description];
        pairs.extend(self.state.as_deref().map(|state| ("state", state)));
        let to = crate::oauth2::response::Recipient {
            client_id: self.client_id.clone(),
            redirect_uri: self.redirect_uri.clone(),
            mode: self.response_mode,
            jwt_alg: self.jwt_alg,
            profile: self.profile,
        };
        crate::oauth2::response::to_client(identity, headers, &to, &pairs).await
    }

    pub fn from_cookie(identity: &Identity, headers: &HeaderMap) -> Option<Self> {
        cookies::open_json(
            &identity.cookies,
            cookies::LOGIN_CLIENT_ENTRY,
            cookies::get(headers, cookies::LOGIN_CLIENT_ENTRY),
        )
    }
}

/// Starts a login process for a valid authorize request: stores it and
/// answers 303 to `/login` with the process cookies. A request read from a
/// pushed one takes it in the same write; `None` (nothing stored) when a
/// parallel request took it first or it expired.
///
/// # Errors
/// When the process cannot be stored.
pub async fn start(
    identity: &Identity,
    headers: &HeaderMap,
    request: &AuthorizeRequest,
    now: OffsetDateTime,
) -> Result<Option<Response>, StorageError> {
    start_at(identity, headers, request, now, None).await
}

/// Like [`start`]; with `consent_of`, for a user already authenticated by
/// the SSO session, the process starts at the `consent` step.
///
/// # Errors
/// When the process cannot be stored.
pub async fn start_at(
    identity: &Identity,
    headers: &HeaderMap,
    request: &AuthorizeRequest,
    now: OffsetDateTime,
    consent_of: Option<&SsoSession>,
) -> Result<Option<Response>, StorageError> {
    let ttl = identity.settings.login_process_ttl;
    let existing_device = cookies::get(headers, cookies::DEVICE_ID)
        .filter(|d| !d.is_empty() && d.len() <= 64 && d.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    let device_id = existing_device.map_or_else(|| Uuid::new_v4().to_string(), str::to_owned);
    let mut state = LoginState::start(
        request.client.client_id.clone(),
        request.pending(),
        portico_crypto::random::token(),
        AuthMethod::Password,
    );
    state.device_id = Some(device_id.clone());
    state.user_agent = headers
        .get(axum::http::header::USER_AGENT)
        .and_then(|agent| agent.to_str().ok())
        .and_then(portico_model::user_agent::kept);
    state.force_consent = request.prompt.is_some_and(portico_model::oauth::Prompt::forces_consent);
    state.locale = request.ui_locale;
    state.principal.clone_from(&request.login_hint);
    if let Some(session) = consent_of {
        state.user_id = Some(session.user_id);
        state.session_id = Some(session.id);
        state.go_to(portico_model::login::StepType::Consent, portico_model::login::ViewType::Default);
    }
    let process =
        LoginProcess { id: LoginProcessId::random(), version: 0, created_at: now, expires_at: now + ttl, state };
    match &request.pushed_to_take {
        Some(hash) => {
            if !identity.store.create_login_process_taking(&process, hash).await? {
                return Ok(None);
            }
        }
        None => identity.store.create_login_process(&process).await?,
    }

    let mut response = redirect(StatusCode::SEE_OTHER, "/login");
    let mut set = SetCookies::new(identity.settings.secure_cookies);
    let max_age = Some(ttl.whole_seconds());
    set.set(cookies::AUTHENTICATION_FLOW, &process.id.to_string(), max_age)
        .set(cookies::XSRF_TOKEN, &process.state.csrf, max_age)
        .set(
            cookies::LOGIN_CLIENT_ENTRY,
            &cookies::seal_json(&identity.cookies, cookies::LOGIN_CLIENT_ENTRY, &request.client_entry()),
            None,
        );
    if existing_device.is_none() {
        set.set(cookies::DEVICE_ID, &device_id, Some(cookies::DEVICE_MAX_AGE));
    }
    set.apply(response.headers_mut());
    Ok(Some(response))
}

/// The live process named by the `authentication_flow` cookie; one that
/// ended in an error is not continued, nor one stored without its request
/// (by a release that kept the raw query).
async fn current_process(
    identity: &Identity,
    headers: &HeaderMap,
    now: OffsetDateTime,
) -> Result<Option<LoginProcess>, StorageError> {
    match cookies::process_id(headers, cookies::AUTHENTICATION_FLOW) {
        Some(id) => Ok(identity
            .store
            .find_login_process(id, now)
            .await?
            .filter(|p| !p.state.is_ended() && p.state.request.is_some())),
        None => Ok(None),
    }
}

/// The answer when there is no process: 302 to the client address from a
/// valid `login_client_entry`, or else to the logged-out page.
async fn no_process(identity: &Identity, headers: &HeaderMap) -> Response {
    let response = match ClientEntry::from_cookie(identity, headers) {
        Some(entry) => entry.respond(identity, headers).await,
        None => redirect(StatusCode::FOUND, &identity.settings.logged_out_url),
    };
    ended(identity, response)
}

/// `response`, an answer after which the browser has no login process:
/// its cookies of one (`authentication_flow`, `login_client_entry`) cleared.
pub(crate) fn ended(identity: &Identity, mut response: Response) -> Response {
    let mut set = SetCookies::new(identity.settings.secure_cookies);
    set.clear(cookies::AUTHENTICATION_FLOW).clear(cookies::LOGIN_CLIENT_ENTRY);
    set.apply(response.headers_mut());
    response
}

/// The authorize request of a process, as a local URL
/// ([`crate::oauth2::authorize::location`]); the logged-out page for a
/// process stored without its request.
fn authorize_url(identity: &Identity, process: &LoginProcess) -> String {
    match &process.state.request {
        Some(request) => crate::oauth2::authorize::location(&process.state.client_id, request),
        None => identity.settings.logged_out_url.clone(),
    }
}

/// Where the process's client wants the browser back: the request's
/// `redirect_uri` with `access_denied` and its `state`, or else the
/// logged-out page.
pub fn return_url_of(identity: &Identity, process: &LoginProcess) -> String {
    let entry = process.state.request.as_ref().map(|request| ClientEntry {
        client_id: process.state.client_id.clone(),
        redirect_uri: request.redirect_uri.clone(),
        state: request.state.clone(),
        response_mode: request.response_mode,
        // Only the link is made of it, and a JARM link is `/login/return`.
        jwt_alg: None,
        profile: SecurityProfile::Standard,
    });
    entry.map_or_else(|| identity.settings.logged_out_url.clone(), |e| e.return_link(&identity.settings.issuer))
}

/// `GET /login/return`: the way back to the client from the error page of
/// a `form_post` client (a link cannot post): the `access_denied` answer,
/// posted; without a valid `login_client_entry`, the logged-out page.
pub async fn return_to_client(
    axum::extract::State(identity): axum::extract::State<IdentityState>,
    headers: HeaderMap,
) -> Response {
    no_process(&identity, &headers).await
}

/// A settings call's form (`auth-method`, `otp-method`), which carries
/// its CSRF token unless the header does.
trait SettingsForm: serde::de::DeserializeOwned {
    fn csrf(&self) -> Option<&str>;
}

impl SettingsForm for crate::edge::AuthMethodRequest {
    fn csrf(&self) -> Option<&str> {
        self.csrf.as_deref()
    }
}

impl SettingsForm for crate::edge::OtpMethodRequest {
    fn csrf(&self) -> Option<&str> {
        self.csrf.as_deref()
    }
}

/// What a settings call acts on: the live, unfinished process and the
/// call's form, read and its CSRF token checked.
enum SettingsRequest<T> {
    Ready(Box<LoginProcess>, T),
    /// No live process, an unreadable or bad form, a failed CSRF check:
    /// answer this.
    Refused(Answer),
}

/// The process and form of a settings call, or the answer refusing it.
///
/// # Errors
/// When storage fails.
async fn settings_request<T: SettingsForm>(
    identity: &Identity,
    headers: &HeaderMap,
    body: axum::body::Body,
) -> Result<SettingsRequest<T>, StorageError> {
    let now = identity.clock.now();
    let process = match current_process(identity, headers, now).await? {
        Some(process) if !process.state.is_complete() => process,
        _ => return Ok(SettingsRequest::Refused(settings_failure(identity, headers, None).await)),
    };
    let form = axum::body::to_bytes(body, 4096)
        .await
        .ok()
        .and_then(|bytes| portico_model::form::Form::parse(&bytes).read_lenient::<T>().ok())
        .filter(|form| submit::csrf_ok(headers, form.csrf(), &process));
    Ok(match form {
        Some(form) => SettingsRequest::Ready(Box::new(process), form),
        None => SettingsRequest::Refused(settings_failure(identity, headers, Some(&process)).await),
    })
}

/// A settings call (`auth-method`, `otp-method`) without a live process or
/// with a bad parameter or CSRF token: 303 to `/error` with `fatal-error`
/// and a way back (restart when there is a process to restart).
async fn settings_failure(identity: &Identity, headers: &HeaderMap, process: Option<&LoginProcess>) -> Answer {
    use view::{ActionKind, ErrorAction, ErrorDetails};
    let (action, url) = match process {
        Some(_) => (ActionKind::RetryLogin, "/login/restart".to_owned()),
        None => (
            ActionKind::Redirect,
            ClientEntry::from_cookie(identity, headers).map_or_else(
                || identity.settings.logged_out_url.clone(),
                |entry| entry.return_link(&identity.settings.issuer),
            ),
        ),
    };
    let details = ErrorDetails {
        error_code: portico_model::login::codes::FATAL_ERROR.to_owned(),
        actions: vec![ErrorAction { action, url: Some(url) }],
    };
    error_page::error(identity, details, process).await
}
