//! The account page and what its forms do. Every change is the signed-in
//! customer's own, checked against their session's CSRF token, audited as
//! the `account` actor with the user, and answered with a 303 back to the
//! page and a notice (`?done=…`) or a page saying why nothing changed.
//!
//! A passkey is added in two halves: the page, when it offers to add one,
//! starts a WebAuthn registration and keeps its state sealed in the
//! `svc.account.passkey` cookie (five minutes); the browser's answer comes
//! back in a form, and the ceremony's id is spent in the store's replay
//! cache before the answer is checked, so that one challenge makes at most
//! one passkey, on every node. The page offers it only within
//! [`crate::session::FRESH_SIGN_IN_SECS`] of the user's authentication; later it offers to
//! sign in again first (`max_age=0`: a single sign-on session does not
//! count), and issues no challenge, so no answer can be stored.

use askama::Template;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use portico_identity::passkeys::{CHALLENGE_SECONDS, PasskeyError};
use portico_model::audit::{Actor, AuditEvent, AuditKind};
use portico_model::ids::SessionId;
use portico_model::passkey::{MAX_PER_USER, Passkey};
use portico_model::session::TrustedDevice;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::page::{self, Form, Layout, Refusal, render};
use crate::session::{Customer, PASSKEY, PASSKEY_LABEL, see_other};
use crate::{Account, AccountState};

/// A passkey registration under way (sealed in `svc.account.passkey`).
#[derive(Serialize, Deserialize)]
struct Ceremony {
    /// Spent once in the replay cache.
    id: String,
    user_id: Uuid,
    /// webauthn-rs's registration state.
    state: String,
    /// Unix seconds.
    issued_at: i64,
}

/// A session or a device as the page lists it.
pub struct BrowserRow {
    /// What its forms name it by: the session's `sid`, the device's handle.
    pub key: String,
    /// "Chrome, Android"; `None` when the browser said nothing we know.
    pub browser: Option<String>,
    pub since: OffsetDateTime,
    /// This browser's own.
    pub current: bool,
}

#[derive(Template)]
#[template(path = "account.html")]
struct AccountPage {
    l: Layout,
    login: String,
    name: Option<String>,
    passkeys: Vec<Passkey>,
    /// Why no passkey can be added now (a text key), if none can.
    cannot_add: Option<&'static str>,
    /// One can, once the user has signed in again.
    sign_in_first: bool,
    /// The WebAuthn creation options, for the script (JSON).
    creation_options: Option<String>,
    sessions: Vec<BrowserRow>,
    devices: Vec<BrowserRow>,
}

#[derive(Template)]
#[template(path = "confirm.html")]
struct ConfirmPage {
    l: Layout,
    question: &'static str,
    warning: Option<&'static str>,
    subject: String,
    action: String,
}

/// The page's query: the notice of what was just done.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Notice {
    pub done: Option<String>,
}

/// The notice keys a `done` may name.
const NOTICES: [&str; 7] = [
    "passkey_added",
    "passkey_renamed",
    "passkey_removed",
    "session_ended",
    "sessions_ended",
    "device_forgotten",
    "signed_in_again",
];

fn unavailable(headers: &HeaderMap, error: &portico_storage::StorageError) -> Refusal {
    tracing::warn!(%error, "the account page failed in the store");
    Refusal::unavailable(headers)
}

/// A device's name in the page's forms: the first 16 hex digits of its
/// id's SHA-256, so that the page never shows the device cookie itself.
pub fn device_handle(device: &TrustedDevice) -> String {
    portico_crypto::hash::sha256(device.device_id.as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// `GET /account/`: the customer's passkeys, sessions and devices.
pub async fn home(
    State(account): State<AccountState>,
    headers: HeaderMap,
    customer: Customer,
    RawQuery(raw): RawQuery,
) -> Result<Response, Refusal> {
    let query: Notice = page::query(raw.as_deref());
    let identity = &account.identity;
    let now = identity.clock.now();
    let user = &customer.user;
    let store = &identity.store;
    let passkeys = store.passkeys_of(user.id).await.map_err(|e| unavailable(&headers, &e))?;
    let sessions = store.list_sessions(user.id, now).await.map_err(|e| unavailable(&headers, &e))?;
    let not_before = now - identity.settings.device_trust_ttl;
    let devices = store.trusted_devices(user.id, not_before).await.map_err(|e| unavailable(&headers, &e))?;
    let this_device = portico_identity::cookies::get(&headers, portico_identity::cookies::DEVICE_ID);

    let mut l = Layout::new(&account, page::language(&headers), &customer.csrf, "/account/");
    l.notice = query.done.as_deref().and_then(|done| NOTICES.iter().find(|n| **n == done)).map(|done| match *done {
        "passkey_added" => "done.passkey_added",
        "passkey_renamed" => "done.passkey_renamed",
        "passkey_removed" => "done.passkey_removed",
        "session_ended" => "done.session_ended",
        "sessions_ended" => "done.sessions_ended",
        "signed_in_again" => "done.signed_in_again",
        _ => "done.device_forgotten",
    });
    let describe = |agent: &Option<String>| agent.as_deref().and_then(portico_model::user_agent::describe);
    let mut sessions: Vec<BrowserRow> = sessions
        .iter()
        .map(|s| BrowserRow {
            key: s.id.to_string(),
            browser: describe(&s.user_agent),
            since: s.created_at,
            current: Some(s.id) == customer.sid,
        })
        .collect();
    sessions.sort_by_key(|s| (!s.current, std::cmp::Reverse(s.since)));
    let devices = devices
        .iter()
        .map(|d| BrowserRow {
            key: device_handle(d),
            browser: describe(&d.user_agent),
            since: d.trusted_at,
            current: this_device == Some(d.device_id.as_str()),
        })
        .collect();

    // The offer to add one, with a challenge of its own.
    let mut cookie = None;
    let cannot_add = if identity.passkeys.unavailable().is_some() {
        Some("passkeys.off")
    } else if passkeys.len() >= MAX_PER_USER {
        Some("passkeys.full")
    } else {
        None
    };
    let sign_in_first = cannot_add.is_none() && !customer.signed_in_recently(now.unix_timestamp());
    let mut creation_options = None;
    if cannot_add.is_none() && !sign_in_first {
        let display = user.name.as_deref().unwrap_or(&user.login);
        match identity.passkeys.start_enrolment(user.id, &user.login, display, &passkeys) {
            Ok(started) => {
                let ceremony = Ceremony {
                    id: portico_crypto::random::token(),
                    user_id: user.id.as_uuid(),
                    state: started.state,
                    issued_at: now.unix_timestamp(),
                };
                cookie = Some(account.seal_cookie(PASSKEY_LABEL, &ceremony));
                creation_options = Some(portico_identity::login::view::script_json(&started.options));
            }
            Err(error) => tracing::warn!(%error, "the account page could not start a passkey registration"),
        }
    }
    let page = AccountPage {
        l,
        login: user.login.clone(),
        name: user.name.clone(),
        passkeys,
        cannot_add,
        sign_in_first,
        creation_options,
        sessions,
        devices,
    };
    let mut response = render(StatusCode::OK, &page);
    if let Some(cookie) = cookie {
        let mut cookies = account.cookies("Strict");
        cookies.set(PASSKEY, &cookie, Some(i64::try_from(CHALLENGE_SECONDS).unwrap_or(300)));
        cookies.apply(response.headers_mut());
    }
    Ok(response)
}

/// A form of the page with its fields as a `T`, and its customer.
async fn read<T: serde::de::DeserializeOwned>(
    account: &Account,
    headers: &HeaderMap,
    body: Body,
) -> Result<(T, Form, Customer), Refusal> {
    let form = Form::read(headers, body).await?;
    let customer = account.form_customer(headers, &form).await?;
    Ok((form.fields(headers)?, form, customer))
}

fn done(notice: &str) -> Response {
    see_other(&format!("/account/?done={notice}"))
}

/// The new passkey's form.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct NewPasskey {
    /// The browser's `PublicKeyCredential`, as JSON.
    pub credential: Option<String>,
}

/// `POST /account/passkeys`: stores the passkey the browser created for
/// the page's challenge, named after the browser.
pub async fn add_passkey(
    State(account): State<AccountState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Refusal> {
    let (fields, _, customer): (NewPasskey, _, _) = read(&account, &headers, body).await?;
    let identity = &account.identity;
    let now = identity.clock.now();
    let expired = || Refusal::page(&headers, StatusCode::BAD_REQUEST, "error.passkey_expired");
    let ceremony = account
        .open_cookie::<Ceremony>(&headers, PASSKEY, PASSKEY_LABEL)
        .filter(|c| c.user_id == customer.user.id.as_uuid())
        .ok_or_else(expired)?;
    let age = now.unix_timestamp() - ceremony.issued_at;
    if !(0..=i64::try_from(CHALLENGE_SECONDS).unwrap_or(300)).contains(&age) {
        return Err(expired());
    }
    // Spent before it is checked, on every node: one challenge, one try.
    let until = OffsetDateTime::from_unix_timestamp(ceremony.issued_at).unwrap_or(now)
        + time::Duration::seconds(i64::try_from(CHALLENGE_SECONDS).unwrap_or(300));
    let jti = format!("passkey:{}", ceremony.id);
    match identity.store.remember_client_assertion(&account.client.client_id, &jti, until, now).await {
        Ok(true) => {}
        Ok(false) => return Err(expired()),
        Err(error) => return Err(unavailable(&headers, &error)),
    }
    let credential = fields.credential.unwrap_or_default();
    let agent = headers.get(axum::http::header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let t = crate::texts::Texts::new(page::language(&headers));
    let name = portico_model::user_agent::describe(agent).unwrap_or_else(|| t.s("passkeys.default_name").to_owned());
    let user = customer.user.id;
    let mut response = match identity
        .passkeys
        .finish_enrolment(identity.store.as_ref(), user, &ceremony.state, &credential, &name, now)
        .await
    {
        Ok(passkey) => {
            tracing::info!(passkey = %passkey.id, "a customer added a passkey on the account page");
            done("passkey_added")
        }
        Err(PasskeyError::Taken) => {
            Refusal::page(&headers, StatusCode::CONFLICT, "error.passkey_taken").into_response()
        }
        Err(PasskeyError::TooMany) => Refusal::page(&headers, StatusCode::CONFLICT, "passkeys.full").into_response(),
        Err(PasskeyError::Storage(error)) => unavailable(&headers, &error).into_response(),
        Err(error) => {
            tracing::info!(%error, "a passkey was refused on the account page");
            Refusal::page(&headers, StatusCode::BAD_REQUEST, "error.passkey_refused").into_response()
        }
    };
    let mut cookies = account.cookies("Strict");
    cookies.clear(PASSKEY);
    cookies.apply(response.headers_mut());
    Ok(response)
}

/// The rename form.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Rename {
    pub name: Option<String>,
}

/// `POST /account/passkeys/{id}/rename`.
pub async fn rename_passkey(
    State(account): State<AccountState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response, Refusal> {
    let (fields, _, customer): (Rename, _, _) = read(&account, &headers, body).await?;
    let id = Uuid::parse_str(&id).map_err(|_| Refusal::page(&headers, StatusCode::NOT_FOUND, "error.not_found"))?;
    let name = fields
        .name
        .as_deref()
        .and_then(portico_model::passkey::name)
        .ok_or_else(|| Refusal::page(&headers, StatusCode::BAD_REQUEST, "error.passkey_name"))?;
    match account.identity.store.rename_passkey(customer.user.id, id, &name).await {
        Ok(true) => Ok(done("passkey_renamed")),
        Ok(false) => Err(Refusal::page(&headers, StatusCode::NOT_FOUND, "error.not_found")),
        Err(error) => Err(unavailable(&headers, &error)),
    }
}

/// The confirmation of a passkey's removal, which says so when it is the
/// customer's last: nothing has changed yet.
fn confirmation(
    account: &Account,
    headers: &HeaderMap,
    customer: &Customer,
    passkeys: &[Passkey],
    passkey: &Passkey,
) -> Response {
    let action = format!("/account/passkeys/{}/remove", passkey.id);
    let page = ConfirmPage {
        l: Layout::new(account, page::language(headers), &customer.csrf, &action),
        question: "confirm.remove",
        warning: (passkeys.len() == 1).then_some("confirm.remove_last"),
        subject: passkey.name.clone(),
        action,
    };
    render(StatusCode::OK, &page)
}

/// The customer's passkeys and the one `id` names.
async fn own_passkey(
    account: &Account,
    headers: &HeaderMap,
    customer: &Customer,
    id: &str,
) -> Result<(Vec<Passkey>, Passkey), Refusal> {
    let not_found = || Refusal::page(headers, StatusCode::NOT_FOUND, "error.not_found");
    let id = Uuid::parse_str(id).map_err(|_| not_found())?;
    let passkeys = account.identity.store.passkeys_of(customer.user.id).await.map_err(|e| unavailable(headers, &e))?;
    let passkey = passkeys.iter().find(|p| p.id == id).cloned().ok_or_else(not_found)?;
    Ok((passkeys, passkey))
}

/// `GET /account/passkeys/{id}/remove`: the confirmation.
pub async fn confirm_removal(
    State(account): State<AccountState>,
    headers: HeaderMap,
    customer: Customer,
    Path(id): Path<String>,
) -> Result<Response, Refusal> {
    let (passkeys, passkey) = own_passkey(&account, &headers, &customer, &id).await?;
    Ok(confirmation(&account, &headers, &customer, &passkeys, &passkey))
}

/// `POST /account/passkeys/{id}/remove`: with `confirm=yes` the passkey
/// goes, audited; without it, the confirmation.
pub async fn remove_passkey(
    State(account): State<AccountState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response, Refusal> {
    let (_, form, customer): (page::NoFields, _, _) = read(&account, &headers, body).await?;
    let (passkeys, passkey) = own_passkey(&account, &headers, &customer, &id).await?;
    if !form.confirmed() {
        return Ok(confirmation(&account, &headers, &customer, &passkeys, &passkey));
    }
    let now = account.identity.clock.now();
    let audit = AuditEvent::new(now, AuditKind::PasskeyRemoved)
        .user(customer.user.id)
        .by(&Actor::Account)
        .detail(serde_json::json!({ "passkey": passkey.id, "name": passkey.name }));
    match account.identity.store.delete_passkey(customer.user.id, passkey.id, &audit).await {
        Ok(true) => Ok(done("passkey_removed")),
        Ok(false) => Err(Refusal::page(&headers, StatusCode::NOT_FOUND, "error.not_found")),
        Err(error) => Err(unavailable(&headers, &error)),
    }
}

/// `POST /account/sessions/{sid}/end`: one of the customer's other
/// sessions ends (its grants revoked as at a logout, back-channel
/// logouts sent), audited.
pub async fn end_session(
    State(account): State<AccountState>,
    headers: HeaderMap,
    Path(sid): Path<String>,
    body: Body,
) -> Result<Response, Refusal> {
    let (_, _, customer): (page::NoFields, _, _) = read(&account, &headers, body).await?;
    let not_found = || Refusal::page(&headers, StatusCode::NOT_FOUND, "error.not_found");
    let sid = Uuid::parse_str(&sid).map(SessionId::from).map_err(|_| not_found())?;
    let identity = &account.identity;
    let now = identity.clock.now();
    let session = identity
        .store
        .find_session_by_id(sid, now)
        .await
        .map_err(|e| unavailable(&headers, &e))?
        .filter(|s| s.user_id == customer.user.id)
        .ok_or_else(not_found)?;
    match portico_identity::login::session::end(
        identity.store.as_ref(),
        &session,
        "account",
        Some(&Actor::Account),
        now,
    )
    .await
    {
        Ok(Some(_)) => Ok(done("session_ended")),
        Ok(None) => Err(not_found()),
        Err(error) => Err(unavailable(&headers, &error)),
    }
}

/// `POST /account/sessions/end-others`: every session of the customer but
/// this browser's ends.
pub async fn end_other_sessions(
    State(account): State<AccountState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Refusal> {
    let (_, _, customer): (page::NoFields, _, _) = read(&account, &headers, body).await?;
    let identity = &account.identity;
    let now = identity.clock.now();
    let sessions = identity.store.list_sessions(customer.user.id, now).await.map_err(|e| unavailable(&headers, &e))?;
    for session in sessions.iter().filter(|s| Some(s.id) != customer.sid) {
        portico_identity::login::session::end(identity.store.as_ref(), session, "account", Some(&Actor::Account), now)
            .await
            .map_err(|e| unavailable(&headers, &e))?;
    }
    Ok(done("sessions_ended"))
}

/// `POST /account/devices/{handle}/forget`: the device's next password
/// sign-in asks a code again.
pub async fn forget_device(
    State(account): State<AccountState>,
    headers: HeaderMap,
    Path(handle): Path<String>,
    body: Body,
) -> Result<Response, Refusal> {
    let (_, _, customer): (page::NoFields, _, _) = read(&account, &headers, body).await?;
    let not_found = || Refusal::page(&headers, StatusCode::NOT_FOUND, "error.not_found");
    let identity = &account.identity;
    let now = identity.clock.now();
    let user = customer.user.id;
    let devices = identity
        .store
        .trusted_devices(user, now - identity.settings.device_trust_ttl)
        .await
        .map_err(|e| unavailable(&headers, &e))?;
    let device = devices.iter().find(|d| device_handle(d) == handle).ok_or_else(not_found)?;
    let audit = AuditEvent::new(now, AuditKind::DeviceForgotten)
        .user(user)
        .by(&Actor::Account)
        .detail(serde_json::json!({ "device": handle, "browser": device.user_agent }));
    match identity.store.forget_device(user, &device.device_id, &audit).await {
        Ok(true) => Ok(done("device_forgotten")),
        Ok(false) => Err(not_found()),
        Err(error) => Err(unavailable(&headers, &error)),
    }
}
