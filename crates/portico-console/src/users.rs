//! `/console/users`: finding a user (login prefix, phone in any form the
//! login page reads, e-mail; active or blocked; a page at a time), their
//! profile, sessions and grants; blocking, unblocking, ending sessions and
//! revoking grants (support); creating, changing, new passwords, operator
//! roles and removal (admin).

use askama::Template;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use portico_admin::ServiceError;
use portico_admin::service::{NewUser, UserChanges};
use portico_model::ids::{GrantId, SessionId, UserId};
use portico_model::user::{OperatorRole, User};
use portico_storage::{TextMatch, UserQuery};
use uuid::Uuid;

use serde::Deserialize;

use crate::ConsoleState;
use crate::forms;
use crate::page::{self, Layout, MAX_FORM, Refusal, Segments, done, render};
use crate::session::{AdminOperator, Operator, see_other};

/// Users per page.
const PAGE: u32 = 25;

/// `GET /console`: the users' page is the console's first.
pub async fn home() -> Response {
    see_other("/console/users")
}

#[derive(Template)]
#[template(path = "users.html")]
struct UsersPage {
    l: Layout,
    by: String,
    q: String,
    blocked: String,
    users: Vec<User>,
    /// The next page's address.
    next: Option<String>,
    searched: bool,
}

/// The user search's query.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct UserSearch {
    pub done: Option<String>,
    /// `login` (the default), `phone` or `email`.
    pub by: Option<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub q: Option<String>,
    /// `yes` or `no`; else either.
    pub blocked: Option<String>,
    /// The last login of the page before.
    #[serde(deserialize_with = "forms::trimmed")]
    pub after: Option<String>,
}

/// `GET /console/users?by=login|phone|email&q=…&blocked=yes|no&after=…`.
pub async fn search(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    operator: Operator,
) -> Response {
    let here = page::here("/console/users", raw.as_deref());
    let query: UserSearch = page::query(raw.as_deref());
    let l = Layout::new(&headers, &operator, "users", &here).with_notice(query.done.as_deref());
    let by = query.by.filter(|by| matches!(by.as_str(), "phone" | "email")).unwrap_or_else(|| "login".to_owned());
    let q = query.q.unwrap_or_default();
    let blocked = match query.blocked.as_deref() {
        Some("yes") => Some(true),
        Some("no") => Some(false),
        _ => None,
    };
    let mut search = UserQuery { blocked, after: query.after, limit: PAGE + 1, ..UserQuery::default() };
    let mut nobody = false;
    if !q.is_empty() {
        match by.as_str() {
            "phone" => match portico_model::otp::normalize_phone(&q) {
                Some(phone) => search.phone = Some(TextMatch::Is(phone)),
                None => nobody = true,
            },
            "email" => search.email = Some(TextMatch::Is(q.clone())),
            _ => search.login = Some(TextMatch::StartsWith(q.clone())),
        }
    }
    let mut users = if nobody {
        Vec::new()
    } else {
        match console.admin.search_users(&search).await {
            Ok(users) => users,
            Err(error) => return page::service_error(l, error, "/console/"),
        }
    };
    let next = (users.len() > PAGE as usize).then(|| {
        users.truncate(PAGE as usize);
        let last = users.last().map(|u| u.login.as_str()).unwrap_or_default();
        let mut next = form_urlencoded::Serializer::new(String::new());
        next.append_pair("by", &by).append_pair("q", &q);
        if let Some(blocked) = &query.blocked {
            next.append_pair("blocked", blocked);
        }
        format!("/console/users?{}", next.append_pair("after", last).finish())
    });
    let blocked = query.blocked.unwrap_or_default();
    let searched = !q.is_empty() || !blocked.is_empty();
    render(StatusCode::OK, &UsersPage { l, by, q, blocked, users, next, searched })
}

#[derive(Template)]
#[template(path = "user.html")]
struct UserPage {
    l: Layout,
    user: User,
    role: String,
    sessions: Vec<SessionRow>,
    passkeys: Vec<PasskeyRow>,
    grants: Vec<GrantRow>,
}

impl UserPage {
    /// The text key of the user's operator role.
    fn role_key(&self) -> &'static str {
        match self.role.as_str() {
            "admin" => "role.admin",
            "support" => "role.support",
            _ => "role.none",
        }
    }
}

struct SessionRow {
    sid: String,
    auth_time: String,
    expires_at: String,
    amr: String,
    clients: String,
}

struct PasskeyRow {
    id: String,
    name: String,
    created_at: String,
    /// `None`: not used yet.
    last_used_at: Option<String>,
    locked: bool,
}

struct GrantRow {
    id: String,
    client: String,
    scope: String,
    created_at: String,
}

/// A path's user id; what is no UUID names no user.
fn user_id(raw: &str) -> Option<UserId> {
    Uuid::parse_str(raw).ok().map(UserId::from)
}

/// `GET /console/users/{id}`: the profile, live sessions and grants.
pub async fn read(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    Segments(id): Segments<String>,
    RawQuery(raw): RawQuery,
    operator: Operator,
) -> Response {
    let here = format!("/console/users/{id}");
    let query: page::Notice = page::query(raw.as_deref());
    let l = Layout::new(&headers, &operator, "users", &here).with_notice(query.done.as_deref());
    let Some(id) = user_id(&id) else {
        return page::message(l, StatusCode::NOT_FOUND, "error.no_user", "/console/users");
    };
    let loaded = async {
        let user = console.admin.user(id).await?;
        let role = console.admin.operator_role(id).await?;
        let sessions = console.admin.sessions(id).await?;
        let passkeys = console.admin.passkeys(id).await?;
        let grants = console.admin.grants(id).await?;
        Ok::<_, portico_admin::ServiceError>((user, role, sessions, passkeys, grants))
    }
    .await;
    let (user, role, sessions, passkeys, grants) = match loaded {
        Ok(loaded) => loaded,
        Err(error) => return page::service_error(l, error, "/console/users"),
    };
    let rows = sessions
        .into_iter()
        .map(|(session, clients)| SessionRow {
            sid: session.id.as_uuid().to_string(),
            auth_time: l.time(session.auth_time),
            expires_at: l.time(session.expires_at),
            amr: session.amr.join(", "),
            clients: clients.join(", "),
        })
        .collect();
    let passkeys = passkeys
        .into_iter()
        .map(|p| PasskeyRow {
            id: p.id.to_string(),
            name: p.name,
            created_at: l.time(p.created_at),
            last_used_at: p.last_used_at.map(|at| l.time(at)),
            locked: p.locked_at.is_some(),
        })
        .collect();
    let grants = grants
        .into_iter()
        .map(|g| GrantRow {
            id: g.id.as_uuid().to_string(),
            client: g.client_id.to_string(),
            scope: g.scope,
            created_at: l.time(g.created_at),
        })
        .collect();
    let role = role.map(OperatorRole::as_str).unwrap_or_default().to_owned();
    render(StatusCode::OK, &UserPage { l, user, role, sessions: rows, passkeys, grants })
}

#[derive(Template)]
#[template(path = "user_new.html")]
struct NewUserPage {
    l: Layout,
}

/// `GET /console/users/new` (admin).
pub async fn new_form(headers: HeaderMap, AdminOperator(operator): AdminOperator) -> Response {
    render(StatusCode::OK, &NewUserPage { l: Layout::new(&headers, &operator, "users", "/console/users/new") })
}

/// A user's form (new, their page's, or the password's alone): text fields
/// trimmed, the password as typed.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct UserFields {
    #[serde(deserialize_with = "forms::trimmed")]
    pub login: Option<String>,
    pub password: Option<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub phone: Option<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub email: Option<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub name: Option<String>,
    /// Whether the phone number starts a login.
    #[serde(deserialize_with = "forms::ticked")]
    pub phone_login: bool,
    /// A block's or an unblock's reason.
    #[serde(deserialize_with = "forms::trimmed")]
    pub reason: Option<String>,
    /// An operator role: `support`, `admin`, or blank (none).
    pub role: Option<String>,
    /// The user's revision the page was made of (its edit form).
    #[serde(deserialize_with = "forms::trimmed")]
    pub revision: Option<String>,
}

/// `POST /console/users` (admin): a new user.
pub async fn create(State(console): State<ConsoleState>, headers: HeaderMap, body: Body) -> Result<Response, Refusal> {
    let (form, _, operator): (UserFields, _, _) =
        console.read_form(&headers, body, "/console/users/new", true, MAX_FORM).await?;
    let new = NewUser {
        login: form.login.unwrap_or_default(),
        password: form.password.unwrap_or_default(),
        phone: form.phone,
        email: form.email,
        name: form.name,
        phone_login_enabled: Some(form.phone_login),
    };
    Ok(match console.admin.create_user(&operator.admin.actor, new).await {
        Ok(user) => see_other(&done(&format!("/console/users/{}", user.id.as_uuid()), "created")),
        Err(error) => page::service_error(
            Layout::new(&headers, &operator, "users", "/console/users/new"),
            error,
            "/console/users/new",
        ),
    })
}

/// `POST /console/users/{id}` (admin): login, phone, e-mail, name and
/// whether the phone starts a login; a blank field clears it.
pub async fn update(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    Segments(id): Segments<String>,
    body: Body,
) -> Result<Response, Refusal> {
    let here = format!("/console/users/{id}");
    let (form, _, operator): (UserFields, _, _) = console.read_form(&headers, body, &here, true, MAX_FORM).await?;
    let l = Layout::new(&headers, &operator, "users", &here);
    let Some(user) = user_id(&id) else {
        return Ok(page::message(l, StatusCode::NOT_FOUND, "error.no_user", "/console/users"));
    };
    let changes = UserChanges {
        login: form.login,
        phone: Some(form.phone),
        email: Some(form.email),
        name: Some(form.name),
        phone_login_enabled: Some(form.phone_login),
        // Every field of the form replaces the stored one: only on what the
        // form was made of, never over a change made since.
        if_match: forms::revision(form.revision.as_deref()),
    };
    Ok(match console.admin.update_user(&operator.admin.actor, user, changes).await {
        Ok(_) => see_other(&done(&here, "saved")),
        Err(error) => page::service_error(l, error, &here),
    })
}

/// `POST /console/users/{id}/password` (admin).
pub async fn set_password(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    Segments(id): Segments<String>,
    body: Body,
) -> Result<Response, Refusal> {
    let here = format!("/console/users/{id}");
    let (form, _, operator): (UserFields, _, _) = console.read_form(&headers, body, &here, true, MAX_FORM).await?;
    let l = Layout::new(&headers, &operator, "users", &here);
    let Some(user) = user_id(&id) else {
        return Ok(page::message(l, StatusCode::NOT_FOUND, "error.no_user", "/console/users"));
    };
    let password = form.password.unwrap_or_default();
    Ok(match console.admin.set_password(&operator.admin.actor, user, password).await {
        Ok(()) => see_other(&done(&here, "password_set")),
        Err(error) => page::service_error(l, error, &here),
    })
}

/// A destructive action on the user `id`; its confirmation names the
/// user's login. `run` answers the notice to show on the user's page
/// (`deleted` goes back to the list).
async fn user_action(
    console: &ConsoleState,
    headers: &HeaderMap,
    id: &str,
    body: Body,
    Ask { admin, question, button, path }: Ask,
    run: impl AsyncFnOnce(&Operator, UserId, &UserFields) -> Result<&'static str, ServiceError>,
) -> Result<Response, Refusal> {
    let here = format!("/console/users/{id}");
    let user = user_id(id);
    let missing = || ServiceError::NotFound("user_not_found", format!("there is no user {id:?}"));
    let action = page::Action { admin, section: "users", here: here.clone(), question, button, path };
    page::confirmed(
        console,
        headers,
        body,
        action,
        async |_| Ok(console.admin.user(user.ok_or_else(missing)?).await?.login),
        async |operator, form| {
            let user = user.ok_or_else(missing)?;
            console.admin.may_act_on(operator.admin.role, user).await?;
            match run(operator, user, form).await? {
                "deleted" => Ok(done("/console/users", "deleted")),
                notice => Ok(done(&here, notice)),
            }
        },
    )
    .await
}

/// What a destructive action on a user needs and asks.
struct Ask {
    admin: bool,
    /// The confirmation's question and button (text keys).
    question: &'static str,
    button: &'static str,
    /// Where the confirmed form goes.
    path: String,
}

/// `POST /console/users/{id}/block` (support): with a reason; sessions end,
/// grants are revoked.
pub async fn block(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    Segments(id): Segments<String>,
    body: Body,
) -> Result<Response, Refusal> {
    let what = Ask {
        admin: false,
        question: "confirm.block",
        button: "user.block",
        path: format!("/console/users/{id}/block"),
    };
    user_action(&console, &headers, &id, body, what, async |operator, user, form| {
        console.admin.block_user(&operator.admin.actor, user, form.reason.clone()).await.map(|_| "blocked")
    })
    .await
}

/// `POST /console/users/{id}/unblock` (support).
pub async fn unblock(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    Segments(id): Segments<String>,
    body: Body,
) -> Result<Response, Refusal> {
    let what = Ask {
        admin: false,
        question: "confirm.unblock",
        button: "user.unblock",
        path: format!("/console/users/{id}/unblock"),
    };
    user_action(&console, &headers, &id, body, what, async |operator, user, form| {
        console.admin.unblock_user(&operator.admin.actor, user, form.reason.clone()).await.map(|_| "unblocked")
    })
    .await
}

/// `POST /console/users/{id}/delete` (admin): sessions end first; the
/// audit log keeps the user's events.
pub async fn delete(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    Segments(id): Segments<String>,
    body: Body,
) -> Result<Response, Refusal> {
    let what = Ask {
        admin: true,
        question: "confirm.delete_user",
        button: "user.delete",
        path: format!("/console/users/{id}/delete"),
    };
    user_action(&console, &headers, &id, body, what, async |operator, user, _| {
        console.admin.delete_user(&operator.admin.actor, user).await.map(|()| "deleted")
    })
    .await
}

/// `POST /console/users/{id}/role` (admin): `role` = `support`, `admin` or
/// blank (none).
pub async fn set_role(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    Segments(id): Segments<String>,
    body: Body,
) -> Result<Response, Refusal> {
    let what = Ask {
        admin: true,
        question: "confirm.role",
        button: "user.set_role",
        path: format!("/console/users/{id}/role"),
    };
    user_action(&console, &headers, &id, body, what, async |operator, user, form| {
        let role = match form.role.as_deref().unwrap_or_default() {
            "" => None,
            role => Some(OperatorRole::parse(role).ok_or_else(|| {
                ServiceError::Invalid(vec![portico_api::Problem::new("role", "support, admin, or none")])
            })?),
        };
        console.admin.set_operator_role(&operator.admin.actor, user, role).await.map(|()| "role_set")
    })
    .await
}

/// `POST /console/users/{id}/sessions/{sid}/end` (support).
pub async fn end_session(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    Segments((id, sid)): Segments<(String, String)>,
    body: Body,
) -> Result<Response, Refusal> {
    let what = Ask {
        admin: false,
        question: "confirm.end_session",
        button: "session.end",
        path: format!("/console/users/{id}/sessions/{sid}/end"),
    };
    user_action(&console, &headers, &id, body, what, async |operator, user, _| {
        let sid = Uuid::parse_str(&sid)
            .map(SessionId::from)
            .map_err(|_| ServiceError::NotFound("session_not_found", "there is no such session".into()))?;
        console.admin.end_session(&operator.admin.actor, user, sid).await.map(|()| "session_ended")
    })
    .await
}

/// `POST /console/users/{id}/passkeys/{passkey}/remove` (support).
pub async fn remove_passkey(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    Segments((id, passkey)): Segments<(String, String)>,
    body: Body,
) -> Result<Response, Refusal> {
    let what = Ask {
        admin: false,
        question: "confirm.remove_passkey",
        button: "passkey.remove",
        path: format!("/console/users/{id}/passkeys/{passkey}/remove"),
    };
    user_action(&console, &headers, &id, body, what, async |operator, user, _| {
        let passkey = Uuid::parse_str(&passkey)
            .map_err(|_| ServiceError::NotFound("passkey_not_found", "there is no such passkey".into()))?;
        console.admin.remove_passkey(&operator.admin.actor, user, passkey).await.map(|()| "passkey_removed")
    })
    .await
}

/// `POST /console/users/{id}/grants/{grant}/revoke` (support).
pub async fn revoke_grant(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    Segments((id, grant)): Segments<(String, String)>,
    body: Body,
) -> Result<Response, Refusal> {
    let what = Ask {
        admin: false,
        question: "confirm.revoke_grant",
        button: "grant.revoke",
        path: format!("/console/users/{id}/grants/{grant}/revoke"),
    };
    user_action(&console, &headers, &id, body, what, async |operator, user, _| {
        let grant = Uuid::parse_str(&grant)
            .map(GrantId::from)
            .map_err(|_| ServiceError::NotFound("grant_not_found", "there is no such grant".into()))?;
        console.admin.revoke_grant(&operator.admin.actor, user, grant).await.map(|()| "grant_revoked")
    })
    .await
}
