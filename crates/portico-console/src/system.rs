//! `/console/keys` (admin): the signing keys and their rotation;
//! `/console/audit` (support): the audit log, filtered by user, client,
//! kind, actor and days, newest first, a page at a time.

use askama::Template;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use portico_model::key::SigningKeyRecord;
use portico_storage::{AuditEntry, AuditQuery};
use time::{Date, OffsetDateTime, Time};

use serde::Deserialize;

use crate::ConsoleState;
use crate::forms::{self, NoFields};
use crate::page::{self, Layout, Refusal, done, render};
use crate::session::{AdminOperator, Operator};

/// Audit events per page.
const PAGE: u32 = 50;

#[derive(Template)]
#[template(path = "keys.html")]
struct KeysPage {
    l: Layout,
    keys: Vec<SigningKeyRecord>,
}

/// `GET /console/keys`.
pub async fn keys(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    AdminOperator(operator): AdminOperator,
) -> Response {
    let query: page::Notice = page::query(raw.as_deref());
    let l = Layout::new(&headers, &operator, "keys", "/console/keys").with_notice(query.done.as_deref());
    match console.admin.list_keys().await {
        Ok(keys) => render(StatusCode::OK, &KeysPage { l, keys }),
        Err(error) => page::service_error(l, error, "/console/"),
    }
}

/// `POST /console/keys/rotate`: a new active signing key; the old one
/// stays published until its tokens expire.
pub async fn rotate_key(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Refusal> {
    let action = page::Action {
        admin: true,
        section: "keys",
        here: "/console/keys".into(),
        question: "confirm.rotate_key",
        button: "keys.rotate",
        path: "/console/keys/rotate".into(),
    };
    page::confirmed(
        &console,
        &headers,
        body,
        action,
        async || {
            let keys = console.admin.list_keys().await?;
            Ok(keys.into_iter().find(|k| k.retired_at.is_none()).map(|k| k.kid).unwrap_or_default())
        },
        async |operator, _: &NoFields| {
            console.admin.rotate_key(&operator.admin.actor, None).await?;
            Ok(done("/console/keys", "key_rotated"))
        },
    )
    .await
}

#[derive(Template)]
#[template(path = "audit.html")]
struct AuditPage {
    l: Layout,
    user: String,
    client: String,
    kind: String,
    actor: String,
    from: String,
    to: String,
    entries: Vec<AuditEntry>,
    next: Option<String>,
    problem: Option<&'static str>,
}

impl AuditPage {
    fn detail(entry: &AuditEntry) -> String {
        match &entry.event.detail {
            serde_json::Value::Null => String::new(),
            detail => detail.to_string(),
        }
    }
}

/// A day of an `<input type=date>` (`2026-11-26`), at midnight UTC.
fn day(value: &str) -> Option<OffsetDateTime> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    Date::parse(value, &format).ok().map(|date| date.with_time(Time::MIDNIGHT).assume_utc())
}

/// The audit log's query: each filter trimmed, blank meaning none.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct AuditSearch {
    #[serde(deserialize_with = "forms::trimmed")]
    pub user: Option<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub client: Option<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub kind: Option<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub actor: Option<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub from: Option<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub to: Option<String>,
    /// The last entry's id of the page before.
    pub before: Option<String>,
}

/// `GET /console/audit?user=&client=&kind=&actor=&from=&to=&before=`:
/// `from` and `to` are days, both included.
pub async fn audit(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    operator: Operator,
) -> Response {
    let here = page::here("/console/audit", raw.as_deref());
    let query: AuditSearch = page::query(raw.as_deref());
    let l = Layout::new(&headers, &operator, "audit", &here);
    let text = |field: Option<String>| field.unwrap_or_default();
    let AuditSearch { user, client, kind, actor, from, to, before } = query;
    let (user, client, kind, actor, from, to) =
        (text(user), text(client), text(kind), text(actor), text(from), text(to));
    let mut problem = None;
    let user_id = if user.is_empty() {
        None
    } else {
        match uuid::Uuid::parse_str(&user) {
            Ok(id) => Some(id.into()),
            Err(_) => {
                problem = Some("audit.bad_user");
                None
            }
        }
    };
    let mut day_of = |value: &str| {
        if value.is_empty() {
            return None;
        }
        let found = day(value);
        if found.is_none() {
            problem = Some("audit.bad_day");
        }
        found
    };
    let start = day_of(&from);
    let end = day_of(&to).map(|d| d + time::Duration::days(1));
    let search = AuditQuery {
        user_id,
        client_id: (!client.is_empty()).then(|| client.as_str().into()),
        kind: (!kind.is_empty()).then(|| kind.clone()),
        actor: (!actor.is_empty()).then(|| actor.clone()),
        from: start,
        to: end,
        before: before.and_then(|b| b.parse().ok()),
        limit: PAGE + 1,
    };
    let mut entries = if problem.is_some() {
        Vec::new()
    } else {
        match console.admin.audit_log(&search).await {
            Ok(entries) => entries,
            Err(error) => return page::service_error(l, error, "/console/"),
        }
    };
    let next = (entries.len() > PAGE as usize).then(|| {
        entries.truncate(PAGE as usize);
        let last = entries.last().map_or(0, |e| e.id);
        let mut next = form_urlencoded::Serializer::new(String::new());
        for (name, value) in
            [("user", &user), ("client", &client), ("kind", &kind), ("actor", &actor), ("from", &from), ("to", &to)]
        {
            if !value.is_empty() {
                next.append_pair(name, value);
            }
        }
        format!("/console/audit?{}", next.append_pair("before", &last.to_string()).finish())
    });
    render(StatusCode::OK, &AuditPage { l, user, client, kind, actor, from, to, entries, next, problem })
}
