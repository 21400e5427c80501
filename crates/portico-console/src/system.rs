//! `/console/keys` (admin): the signing keys of each algorithm, their
//! rotation, and retiring an algorithm no configuration names any more;
//! `/console/audit` (support): the audit log, filtered by user, client,
//! kind, actor and days, newest first, a page at a time.

use askama::Template;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use portico_model::key::{Algorithm, SigningKeyRecord};
use portico_storage::{AuditEntry, AuditQuery};
use time::{Date, OffsetDateTime, Time};

use serde::Deserialize;

use crate::ConsoleState;
use crate::forms;
use crate::page::{self, Layout, Refusal, done, render};
use crate::session::{AdminOperator, Operator};

/// Audit events per page.
const PAGE: u32 = 50;

#[derive(Template)]
#[template(path = "keys.html")]
struct KeysPage {
    l: Layout,
    algorithms: Vec<AlgorithmKeys>,
}

/// One algorithm's keys, newest first.
struct AlgorithmKeys {
    alg: &'static str,
    /// The server's default (`tokens.signing_algorithm`).
    default: bool,
    /// Named by this node's configuration: it cannot be retired.
    configured: bool,
    keys: Vec<SigningKeyRecord>,
}

impl AlgorithmKeys {
    fn active(&self) -> bool {
        self.keys.iter().any(|key| key.retired_at.is_none())
    }
}

/// Every algorithm configured or with a key, in the order of
/// [`Algorithm::ALL`].
fn by_algorithm(console: &crate::Console, keys: Vec<SigningKeyRecord>) -> Vec<AlgorithmKeys> {
    let admin = &console.admin;
    let mut algorithms: Vec<AlgorithmKeys> = Algorithm::ALL
        .into_iter()
        .map(|alg| AlgorithmKeys {
            alg: alg.as_str(),
            default: alg == admin.signing_algorithm,
            configured: admin.signing_algorithms.contains(&alg),
            keys: Vec::new(),
        })
        .collect();
    for key in keys {
        if let Some(group) = algorithms.iter_mut().find(|group| group.alg == key.alg) {
            group.keys.push(key);
        }
    }
    algorithms.retain(|group| group.configured || !group.keys.is_empty());
    algorithms
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
        Ok(keys) => render(StatusCode::OK, &KeysPage { l, algorithms: by_algorithm(&console, keys) }),
        Err(error) => page::service_error(l, error, "/console/"),
    }
}

/// The algorithm a key form acts on (`alg`; the server's default when
/// absent, as before there were several).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct KeyChoice {
    #[serde(deserialize_with = "forms::trimmed")]
    pub alg: Option<String>,
}

impl KeyChoice {
    fn algorithm(&self, default: Algorithm) -> Result<Algorithm, portico_admin::ServiceError> {
        match self.alg.as_deref() {
            None => Ok(default),
            Some(name) => Algorithm::parse(name).ok_or_else(|| {
                portico_admin::ServiceError::Invalid(vec![portico_api::Problem::new(
                    "alg",
                    format!("{name} is not an algorithm Portico signs with"),
                )])
            }),
        }
    }
}

/// The active key of `alg`, named on a confirmation.
async fn active_kid(console: &crate::Console, alg: Algorithm) -> Result<String, portico_admin::ServiceError> {
    let keys = console.admin.list_keys().await?;
    let active = keys.into_iter().find(|k| k.alg == alg.as_str() && k.retired_at.is_none());
    Ok(format!("{alg}: {}", active.map(|k| k.kid).unwrap_or_else(|| "—".into())))
}

/// `POST /console/keys/rotate`: a new active signing key of the form's
/// algorithm; the old one stays published until its tokens expire.
pub async fn rotate_key(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Refusal> {
    let run = async |actor: &portico_model::audit::Actor, alg| console.admin.rotate_key(actor, Some(alg)).await;
    key_action(&console, &headers, body, KeyAction::Rotate, run).await
}

/// `POST /console/keys/retire`: the form's algorithm stops signing; its
/// key stays published until its tokens expire. Refused while the
/// configuration or a client names the algorithm.
pub async fn retire_key(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Refusal> {
    let run = async |actor: &portico_model::audit::Actor, alg| console.admin.retire_key(actor, alg).await;
    key_action(&console, &headers, body, KeyAction::Retire, run).await
}

/// What the keys page does to an algorithm's active key.
#[derive(Clone, Copy)]
enum KeyAction {
    Rotate,
    Retire,
}

/// A confirmed action on the active key of the form's algorithm, naming
/// that key on the confirmation.
async fn key_action(
    console: &crate::Console,
    headers: &HeaderMap,
    body: Body,
    which: KeyAction,
    run: impl AsyncFnOnce(&portico_model::audit::Actor, Algorithm) -> Result<String, portico_admin::ServiceError>,
) -> Result<Response, Refusal> {
    let (question, button, path, notice) = match which {
        KeyAction::Rotate => ("confirm.rotate_key", "keys.rotate", "/console/keys/rotate", "key_rotated"),
        KeyAction::Retire => ("confirm.retire_key", "keys.retire", "/console/keys/retire", "key_retired"),
    };
    let action = page::Action {
        admin: true,
        section: "keys",
        here: "/console/keys".into(),
        question,
        button,
        path: path.into(),
    };
    let default = console.admin.signing_algorithm;
    page::confirmed(
        console,
        headers,
        body,
        action,
        async |choice: &KeyChoice| active_kid(console, choice.algorithm(default)?).await,
        async |operator, choice: &KeyChoice| {
            run(&operator.admin.actor, choice.algorithm(default)?).await?;
            Ok(done("/console/keys", notice))
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
