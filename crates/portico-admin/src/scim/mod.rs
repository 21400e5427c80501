//! User provisioning over SCIM 2.0 (RFC 7643, RFC 7644) at `/scim/v2`, for
//! the bank's systems to keep Portico's users in step with their own.
//!
//! - `GET /ServiceProviderConfig`, `GET /ResourceTypes[/User]`,
//!   `GET /Schemas[/{urn}]`: what is served ([`schema`]).
//! - `GET /Users` (with `filter`, `startIndex`, `count`, `attributes`,
//!   `excludedAttributes`), `POST /Users/.search` (and `/.search`, Users
//!   being the only resource type), `POST /Users`,
//!   `GET / PUT / PATCH / DELETE /Users/{id}`.
//!
//! Authenticated by its own bearer token (`scim_token`); without one the
//! endpoints answer 404. Every change goes through the [`AdminService`]
//! with the actor `scim`, so the rules are the admin API's and the audit
//! log says who. `active: false` blocks the user: their sessions end and
//! their tokens stop working. Errors are RFC 7644 §3.12 bodies with
//! `scimType` where one applies.

pub mod filter;
pub mod patch;
pub mod resource;
pub mod schema;

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequestParts, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use portico_api::etag;
use portico_api::revision::{self, Malformed};
use portico_crypto::hash::BearerSecret;
use portico_model::audit::Actor;
use portico_model::form::Problem;
use portico_model::ids::UserId;
use portico_model::passkey::Passkey;
use portico_model::user::User;
use portico_storage::UserQuery;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::service::{AdminService, ServiceError};
use resource::Refusal;
use schema::{ENTERPRISE_USER, MAX_RESULTS};

/// What the SCIM handlers share.
pub struct Scim {
    pub service: Arc<AdminService>,
    /// The SCIM token; the endpoints are off without one.
    pub token: Option<BearerSecret>,
    /// `<public_url>/scim/v2`, for `meta.location`.
    pub base: String,
}

pub type ScimState = Arc<Scim>;

pub fn router(state: ScimState) -> Router {
    Router::new()
        .route("/scim/v2/ServiceProviderConfig", get(service_provider_config))
        .route("/scim/v2/ResourceTypes", get(resource_types))
        .route("/scim/v2/ResourceTypes/{name}", get(resource_type))
        .route("/scim/v2/Schemas", get(schemas))
        .route("/scim/v2/Schemas/{urn}", get(schema_by_id))
        .route("/scim/v2/Users", get(list).post(create))
        .route("/scim/v2/Users/.search", axum::routing::post(search))
        .route("/scim/v2/.search", axum::routing::post(search))
        .route("/scim/v2", axum::routing::any(unknown))
        .route("/scim/v2/{*rest}", axum::routing::any(unknown))
        .route("/scim/v2/Users/{id}", get(read).put(replace).patch(modify).delete(remove))
        .with_state(state)
}

/// An RFC 7644 §3.12 error: one variant per kind of refusal, each with
/// its `detail`.
#[derive(Debug)]
pub enum ScimError {
    /// 400 with its `scimType` (`invalidSyntax`, `invalidValue`,
    /// `invalidFilter`, `tooMany`, ...).
    BadRequest(&'static str, String),
    /// 400 `invalidValue`: the user the document describes breaks a rule.
    Invalid(String),
    /// 401, with RFC 6750 §3's challenge: `Bearer` alone when no token
    /// came, `Bearer error="invalid_token"` for a wrong one.
    Unauthorized(&'static str, portico_tokens::Challenge),
    /// 403.
    Forbidden(String),
    /// 404: no such user, schema, resource type or endpoint (or SCIM is off).
    NotFound(String),
    /// 405: the path takes other methods (the router's `Allow` header
    /// names them).
    MethodNotAllowed(String),
    /// 409 `uniqueness`: the login is another user's.
    Conflict(String),
    /// 409 without a `scimType`: others kept changing the user meanwhile.
    Changed(String),
    /// 412: the user is no longer at the version `If-Match` names.
    PreconditionFailed(String),
    /// 413: the body is over the size limit, or 400: it could not be read.
    Unread(StatusCode, String),
    /// 415 `invalidSyntax`: not JSON's media type.
    UnsupportedMediaType,
    /// 503 with `Retry-After`, or 500: the store failed (the cause logged).
    Store(StatusCode, String),
}

impl ScimError {
    fn not_found(id: &str) -> Self {
        Self::NotFound(format!("there is no user {id}"))
    }

    /// The status, `scimType` and `detail` of the answer.
    fn parts(self) -> (StatusCode, Option<&'static str>, String) {
        match self {
            Self::BadRequest(scim_type, detail) => (StatusCode::BAD_REQUEST, Some(scim_type), detail),
            Self::Invalid(detail) => (StatusCode::BAD_REQUEST, Some("invalidValue"), detail),
            Self::Unauthorized(detail, _) => (StatusCode::UNAUTHORIZED, None, detail.to_owned()),
            Self::Forbidden(detail) => (StatusCode::FORBIDDEN, None, detail),
            Self::NotFound(detail) => (StatusCode::NOT_FOUND, None, detail),
            Self::MethodNotAllowed(detail) => (StatusCode::METHOD_NOT_ALLOWED, None, detail),
            Self::Conflict(detail) => (StatusCode::CONFLICT, Some("uniqueness"), detail),
            Self::Changed(detail) => (StatusCode::CONFLICT, None, detail),
            Self::PreconditionFailed(detail) => (StatusCode::PRECONDITION_FAILED, None, detail),
            Self::Unread(status, detail) => (status, None, detail),
            Self::UnsupportedMediaType => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                Some("invalidSyntax"),
                "send the body as application/scim+json".to_owned(),
            ),
            Self::Store(status, detail) => (status, None, detail),
        }
    }
}

impl From<Refusal> for ScimError {
    fn from(refusal: Refusal) -> Self {
        Self::BadRequest(refusal.scim_type, refusal.detail)
    }
}

impl From<ServiceError> for ScimError {
    fn from(error: ServiceError) -> Self {
        match error {
            ServiceError::Invalid(_) => Self::Invalid(error.to_string()),
            ServiceError::NotFound(_, detail) => Self::NotFound(detail),
            ServiceError::Conflict("user_changed", detail) => Self::Changed(detail),
            ServiceError::Conflict(_, detail) => Self::Conflict(detail),
            ServiceError::Forbidden(detail) => Self::Forbidden(detail),
            ServiceError::Stale(detail) => Self::PreconditionFailed(detail),
            ServiceError::Storage(e) => {
                let answer = portico_api::ApiError::storage("a SCIM request", &e);
                Self::Store(answer.status(), answer.body().message)
            }
        }
    }
}

impl IntoResponse for ScimError {
    fn into_response(self) -> Response {
        let challenge = match &self {
            Self::Unauthorized(_, challenge) => Some(challenge.header()),
            _ => None,
        };
        let (status, scim_type, detail) = self.parts();
        let mut body = json!({"schemas": [schema::ERROR], "status": status.as_u16().to_string(), "detail": detail});
        if let Some(scim_type) = scim_type {
            body["scimType"] = json!(scim_type);
        }
        let mut response = scim_json(status, &body);
        if status == StatusCode::SERVICE_UNAVAILABLE {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        }
        if let Some(challenge) = challenge {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
        }
        response
    }
}

/// `application/scim+json` (RFC 7644 §3.1).
fn scim_json(status: StatusCode, body: &Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/scim+json"));
    response
}

type Answer = Result<Response, ScimError>;

/// A path segment; one that is not UTF-8 names nothing: a SCIM 404.
struct ScimPath(String);

impl<S: Send + Sync> FromRequestParts<S> for ScimPath {
    type Rejection = ScimError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Path::<String>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(segment)) => Ok(Self(segment)),
            Err(e) => Err(ScimError::NotFound(format!("the path names nothing: {}", e.body_text()))),
        }
    }
}

impl Scim {
    fn authorize(&self, headers: &HeaderMap) -> Result<(), ScimError> {
        let Some(token) = &self.token else {
            return Err(ScimError::NotFound(
                "SCIM provisioning is off; set scim_token (PORTICO_SCIM_TOKEN) to turn it on".to_owned(),
            ));
        };
        let authorization = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        if token.authorizes(authorization) {
            Ok(())
        } else {
            let challenge = portico_tokens::Challenge::for_request(headers, false);
            Err(ScimError::Unauthorized("send the SCIM token as Authorization: Bearer <token>", challenge))
        }
    }

    fn location(&self, user: &User) -> String {
        format!("{}/Users/{}", self.base, user.id)
    }

    fn render(&self, user: &User) -> Value {
        resource::render(user, &self.location(user))
    }

    /// The user as `shown` asks, with the passkeys extension unless it is
    /// left out.
    async fn rendered(&self, user: &User, shown: &Shown) -> Result<Value, ScimError> {
        if !shown.asks_for_passkeys() {
            return Ok(self.render(user));
        }
        let passkeys = self.service.store.passkeys_of(user.id).await.map_err(ServiceError::from)?;
        Ok(self.with_passkeys(user, &passkeys))
    }

    /// A page of users as `shown` asks, their passkeys read in one query.
    async fn rendered_page(&self, users: &[User], shown: &Shown) -> Result<Vec<Value>, ScimError> {
        if !shown.asks_for_passkeys() {
            return Ok(users.iter().map(|user| shown.apply(self.render(user))).collect());
        }
        let ids: Vec<UserId> = users.iter().map(|user| user.id).collect();
        let passkeys = self.service.store.passkeys_of_users(&ids).await.map_err(ServiceError::from)?;
        Ok(users
            .iter()
            .map(|user| {
                let own: Vec<Passkey> = passkeys.iter().filter(|passkey| passkey.user_id == user.id).cloned().collect();
                shown.apply(self.with_passkeys(user, &own))
            })
            .collect())
    }

    /// The user with the passkeys extension (`{}` for a user who keeps
    /// none: the extension is there, its attribute unassigned).
    fn with_passkeys(&self, user: &User, passkeys: &[Passkey]) -> Value {
        let mut resource = self.render(user);
        resource[schema::PASSKEYS] = schema::passkeys_value(passkeys);
        if let Some(schemas) = resource["schemas"].as_array_mut() {
            schemas.push(Value::from(schema::PASSKEYS));
        }
        resource
    }

    async fn user(&self, id: &str) -> Result<User, ScimError> {
        let uuid = Uuid::parse_str(id).map_err(|_| ScimError::not_found(id))?;
        match self.service.user(UserId::from(uuid)).await {
            Err(ServiceError::NotFound(..)) => Err(ScimError::not_found(id)),
            other => Ok(other?),
        }
    }
}

/// A body that could not be read: over the size limit (413), or broken.
fn unread(rejection: &BytesRejection) -> ScimError {
    ScimError::Unread(rejection.status(), format!("the body could not be read: {}", rejection.body_text()))
}

/// A body as JSON, whichever of the two JSON types it was sent with.
fn body_json(headers: &HeaderMap, body: Result<Bytes, BytesRejection>) -> Result<Value, ScimError> {
    let body = body.map_err(|e| unread(&e))?;
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    if !content_type.starts_with("application/scim+json") && !content_type.starts_with("application/json") {
        return Err(ScimError::UnsupportedMediaType);
    }
    serde_json::from_slice(&body)
        .map_err(|e| ScimError::BadRequest("invalidSyntax", format!("the body is not JSON: {e}")))
}

/// Any other path: 404 as a SCIM error (after the token check).
async fn unknown(State(scim): State<ScimState>, headers: HeaderMap) -> Answer {
    scim.authorize(&headers)?;
    Err(ScimError::NotFound("no such endpoint; see /scim/v2/ResourceTypes".to_owned()))
}

async fn service_provider_config(State(scim): State<ScimState>, headers: HeaderMap) -> Answer {
    scim.authorize(&headers)?;
    Ok(scim_json(StatusCode::OK, &schema::service_provider_config(&scim.base)))
}

async fn resource_types(State(scim): State<ScimState>, headers: HeaderMap) -> Answer {
    scim.authorize(&headers)?;
    Ok(scim_json(StatusCode::OK, &schema::list(vec![schema::user_resource_type(&scim.base)], 1, 1)))
}

async fn resource_type(State(scim): State<ScimState>, headers: HeaderMap, ScimPath(name): ScimPath) -> Answer {
    scim.authorize(&headers)?;
    if name != "User" {
        return Err(ScimError::NotFound(format!("there is no resource type {name}; there is User")));
    }
    Ok(scim_json(StatusCode::OK, &schema::user_resource_type(&scim.base)))
}

async fn schemas(State(scim): State<ScimState>, headers: HeaderMap) -> Answer {
    scim.authorize(&headers)?;
    let all = vec![
        schema::core_user_schema(&scim.base),
        schema::enterprise_user_schema(&scim.base),
        schema::passkeys_schema(&scim.base),
    ];
    Ok(scim_json(StatusCode::OK, &schema::list(all, 3, 1)))
}

async fn schema_by_id(State(scim): State<ScimState>, headers: HeaderMap, ScimPath(urn): ScimPath) -> Answer {
    scim.authorize(&headers)?;
    let found = match urn.as_str() {
        schema::CORE_USER => schema::core_user_schema(&scim.base),
        ENTERPRISE_USER => schema::enterprise_user_schema(&scim.base),
        schema::PASSKEYS => schema::passkeys_schema(&scim.base),
        _ => return Err(ScimError::NotFound(format!("there is no schema {urn}"))),
    };
    Ok(scim_json(StatusCode::OK, &found))
}

/// A list's parameters: the query of `GET /Users` (read by the one reader,
/// `portico_model::form`: each at most once, none unknown), or the body of
/// `POST /Users/.search`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
struct ListRequest {
    filter: Option<String>,
    start_index: Option<i64>,
    count: Option<i64>,
    attributes: Option<String>,
    #[serde(rename = "excludedAttributes")]
    excluded: Option<String>,
    /// Sorting is not supported (ServiceProviderConfig): login order.
    #[serde(rename = "sortBy")]
    _sort_by: Option<serde::de::IgnoredAny>,
    #[serde(rename = "sortOrder")]
    _sort_order: Option<serde::de::IgnoredAny>,
}

async fn list(State(scim): State<ScimState>, headers: HeaderMap, RawQuery(query): RawQuery) -> Answer {
    scim.authorize(&headers)?;
    let request: ListRequest = read_query(query.as_deref())?;
    answer_list(&scim, request).await
}

/// A query read by the one reader (`portico_model::form`), its refusals
/// in SCIM's words: a repeated or unknown parameter is `invalidSyntax`, a
/// value not of its parameter's kind `invalidValue`.
fn read_query<T: serde::de::DeserializeOwned>(query: Option<&str>) -> Result<T, ScimError> {
    portico_model::form::Form::parse(query.unwrap_or_default().as_bytes()).read_given().map_err(|e| {
        let name = portico_model::text::echo(&e.field);
        match e.problem {
            Problem::Repeated => {
                ScimError::BadRequest("invalidSyntax", format!("the parameter {name} is given more than once"))
            }
            Problem::Unknown => ScimError::BadRequest("invalidSyntax", format!("unknown parameter {name}")),
            Problem::Invalid(_) if matches!(e.field.as_str(), "startIndex" | "count") => {
                ScimError::BadRequest("invalidValue", format!("{}: a number", e.field))
            }
            Problem::Missing | Problem::Invalid(_) => ScimError::BadRequest("invalidValue", e.to_string()),
        }
    })
}

/// The query of a read: which attributes the response shows.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct Showing {
    attributes: Option<String>,
    #[serde(rename = "excludedAttributes")]
    excluded: Option<String>,
}

async fn search(State(scim): State<ScimState>, headers: HeaderMap, body: Result<Bytes, BytesRejection>) -> Answer {
    scim.authorize(&headers)?;
    let body = body_json(&headers, body)?;
    let text = |name: &str| -> Result<Option<String>, ScimError> {
        match body.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Array(items)) => Ok(Some(items.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(","))),
            Some(_) => Err(ScimError::BadRequest("invalidValue", format!("{name}: text"))),
        }
    };
    let request = ListRequest {
        filter: text("filter")?,
        start_index: body.get("startIndex").and_then(Value::as_i64),
        count: body.get("count").and_then(Value::as_i64),
        attributes: text("attributes")?,
        excluded: text("excludedAttributes")?,
        ..ListRequest::default()
    };
    answer_list(&scim, request).await
}

async fn answer_list(scim: &Scim, request: ListRequest) -> Answer {
    let mut query = match &request.filter {
        Some(filter) => filter::parse(filter)?,
        None => UserQuery::default(),
    };
    // RFC 7644 §3.4.2.4: a startIndex below 1 is 1; a negative count is 0.
    let start_index = u32::try_from(request.start_index.unwrap_or(1).max(1)).unwrap_or(u32::MAX);
    let count = u32::try_from(request.count.unwrap_or(100).clamp(0, i64::from(MAX_RESULTS))).unwrap_or(MAX_RESULTS);
    query.offset = start_index - 1;
    query.limit = count;
    let total = scim.service.store.count_users(&query).await.map_err(ServiceError::from)?;
    let users = if count == 0 { Vec::new() } else { scim.service.search_users(&query).await? };
    let shown = Shown::new(request.attributes.as_deref(), request.excluded.as_deref())?;
    let resources = scim.rendered_page(&users, &shown).await?;
    Ok(scim_json(StatusCode::OK, &schema::list(resources, total, start_index)))
}

/// `attributes` / `excludedAttributes` (RFC 7644 §3.4.2.5): which
/// attributes a response shows; `id` and `schemas` always.
struct Shown {
    only: Option<Vec<String>>,
    excluded: Vec<String>,
}

/// The names of an `attributes` or `excludedAttributes` list: at most
/// [`schema::MAX_ATTRIBUTE_NAMES`].
fn names(parameter: &str, list: Option<&str>) -> Result<Vec<String>, ScimError> {
    let core = format!("{}:", schema::CORE_USER);
    let mut names = Vec::new();
    for name in list.unwrap_or_default().split(',').map(str::trim).filter(|name| !name.is_empty()) {
        if names.len() == schema::MAX_ATTRIBUTE_NAMES {
            let detail = format!("{parameter}: at most {} names", schema::MAX_ATTRIBUTE_NAMES);
            return Err(ScimError::BadRequest("invalidValue", detail));
        }
        names.push(name.strip_prefix(&core).unwrap_or(name).to_ascii_lowercase());
    }
    Ok(names)
}

impl Shown {
    fn new(attributes: Option<&str>, excluded: Option<&str>) -> Result<Self, ScimError> {
        let only = match attributes {
            Some(list) => Some(names("attributes", Some(list))?).filter(|names| !names.is_empty()),
            None => None,
        };
        Ok(Self { only, excluded: names("excludedAttributes", excluded)? })
    }

    /// Whether the response shows the passkeys extension (`returned:
    /// default`): unless `attributes` leaves it out or
    /// `excludedAttributes` names it.
    fn asks_for_passkeys(&self) -> bool {
        let urn = schema::PASSKEYS.to_ascii_lowercase();
        self.only.as_ref().is_none_or(|only| only.iter().any(|name| name.starts_with(&urn)))
            && !self.excluded.iter().any(|name| name.starts_with(&urn))
    }

    fn apply(&self, resource: Value) -> Value {
        let Value::Object(mut fields) = resource else { return resource };
        let enterprise = ENTERPRISE_USER.to_ascii_lowercase();
        let passkeys = schema::PASSKEYS.to_ascii_lowercase();
        let named = |list: &[String], key: &str| {
            let key = key.to_ascii_lowercase();
            list.iter().any(|name| {
                name == &key || name.starts_with(&format!("{key}.")) || name.starts_with(&format!("{key}:"))
            }) || (key == enterprise && list.iter().any(|name| name.starts_with(&enterprise)))
                || (key == passkeys && list.iter().any(|name| name.starts_with(&passkeys)))
        };
        fields.retain(|key, _| {
            if key == "id" || key == "schemas" {
                return true;
            }
            let shown = self.only.as_ref().is_none_or(|only| named(only, key));
            let lower = key.to_ascii_lowercase();
            shown && !self.excluded.iter().any(|name| name == &lower)
        });
        Value::Object(fields)
    }
}

async fn read(
    State(scim): State<ScimState>,
    headers: HeaderMap,
    ScimPath(id): ScimPath,
    RawQuery(query): RawQuery,
) -> Answer {
    scim.authorize(&headers)?;
    let user = scim.user(&id).await?;
    let showing: Showing = read_query(query.as_deref())?;
    let shown = Shown::new(showing.attributes.as_deref(), showing.excluded.as_deref())?;
    // RFC 7644 §3.14: a version the client holds already is not sent again.
    let none_match =
        revision::named(&headers, &header::IF_NONE_MATCH).map_err(|Malformed| malformed(&header::IF_NONE_MATCH))?;
    if none_match.is_some_and(|named| named.names(user.revision)) {
        return Ok(versioned(StatusCode::NOT_MODIFIED.into_response(), &user));
    }
    Ok(versioned(scim_json(StatusCode::OK, &shown.apply(scim.rendered(&user, &shown).await?)), &user))
}

/// A conditional header that is no list of entity tags (RFC 7644 §3.14).
fn malformed(name: &header::HeaderName) -> ScimError {
    let detail = format!(
        "{name}: give the meta.version a read answered (as \"3\", quotes included), several separated by commas, \
         or *"
    );
    ScimError::BadRequest("invalidSyntax", detail)
}

/// The revisions a change's `If-Match` names: `None` without it or with
/// `*`.
fn if_match(headers: &HeaderMap) -> Result<Option<Vec<u64>>, ScimError> {
    revision::if_match(headers).map_err(|Malformed| malformed(&header::IF_MATCH))
}

/// `response` with the user's version as its `ETag`.
fn versioned(mut response: Response, user: &User) -> Response {
    response.headers_mut().insert(header::ETAG, etag(user.revision));
    response
}

fn created(scim: &Scim, user: &User) -> Response {
    // A new user keeps no passkeys: the answer to its creation leaves the
    // extension out.
    let mut response = versioned(scim_json(StatusCode::CREATED, &scim.render(user)), user);
    if let Ok(location) = HeaderValue::from_str(&scim.location(user)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

async fn create(State(scim): State<ScimState>, headers: HeaderMap, body: Result<Bytes, BytesRejection>) -> Answer {
    scim.authorize(&headers)?;
    let provisioned = resource::parse(&body_json(&headers, body)?)?;
    let user = scim.service.provision_user(&Actor::Scim, provisioned).await?;
    Ok(created(&scim, &user))
}

async fn replace(
    State(scim): State<ScimState>,
    headers: HeaderMap,
    ScimPath(id): ScimPath,
    body: Result<Bytes, BytesRejection>,
) -> Answer {
    scim.authorize(&headers)?;
    let user = scim.user(&id).await?;
    let provisioned = resource::parse(&body_json(&headers, body)?)?;
    let if_match = if_match(&headers)?;
    let user = scim.service.replace_provisioned_user(&Actor::Scim, user.id, if_match.as_deref(), provisioned).await?;
    answer_user(&scim, &user).await
}

/// `user` as a SCIM resource with their passkeys, `200 OK`.
async fn answer_user(scim: &Scim, user: &User) -> Answer {
    let passkeys = scim.service.store.passkeys_of(user.id).await.map_err(ServiceError::from)?;
    Ok(versioned(scim_json(StatusCode::OK, &scim.with_passkeys(user, &passkeys)), user))
}

async fn modify(
    State(scim): State<ScimState>,
    headers: HeaderMap,
    ScimPath(id): ScimPath,
    body: Result<Bytes, BytesRejection>,
) -> Answer {
    scim.authorize(&headers)?;
    let user = scim.user(&id).await?;
    let mut body = body_json(&headers, body)?;
    if sets_passkeys(&body) {
        let detail = format!("{} is read only: remove a passkey through the admin API", schema::PASSKEYS);
        return Err(ScimError::BadRequest("mutability", detail));
    }
    drop_passkey_noops(&mut body);
    let if_match = if_match(&headers)?;
    // The operations apply to the user as stored when the change is
    // written: made again should another change come in between, so that
    // neither undoes the other.
    let user = scim
        .service
        .replace_provisioned_user_with(&Actor::Scim, user.id, if_match.as_deref(), |stored| {
            Ok::<_, ScimError>(resource::parse(&patch::apply(scim.render(stored), &body)?)?)
        })
        .await?;
    answer_user(&scim, &user).await
}

/// Whether `name` (a path or a value's key) is the passkeys extension or
/// within it.
fn in_passkeys(name: &str) -> bool {
    name.to_ascii_lowercase().starts_with(&schema::PASSKEYS.to_ascii_lowercase())
}

/// Whether an operation's value says anything of the extension's one
/// attribute (`passkeys`).
fn names_passkeys(value: Option<&Value>) -> bool {
    value.and_then(Value::as_object).is_some_and(|object| {
        object.iter().any(|(key, inner)| {
            key.eq_ignore_ascii_case("passkeys")
                || (in_passkeys(key) && inner.as_object().is_some_and(|inner| !inner.is_empty()))
        })
    })
}

/// Whether a PATCH would change the read-only passkeys: a path into the
/// extension's attribute, or a value for it (RFC 7644 §3.5.2: `mutability`).
fn sets_passkeys(body: &Value) -> bool {
    let operations = body.get("Operations").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    operations.iter().any(|operation| match operation.get("path").and_then(Value::as_str) {
        Some(path) if in_passkeys(path) => {
            path.len() > schema::PASSKEYS.len() || names_passkeys(operation.get("value"))
        }
        Some(_) => false,
        None => names_passkeys(operation.get("value")),
    })
}

/// Operations on the extension that change nothing (an empty value) are
/// dropped, as a PUT's copy of a read-only attribute is ignored.
fn drop_passkey_noops(body: &mut Value) {
    let Some(operations) = body.get_mut("Operations").and_then(Value::as_array_mut) else { return };
    operations.retain(|operation| !operation.get("path").and_then(Value::as_str).is_some_and(in_passkeys));
    for operation in operations.iter_mut() {
        if let Some(value) = operation.get_mut("value").and_then(Value::as_object_mut) {
            value.retain(|key, _| !in_passkeys(key));
        }
    }
}

async fn remove(
    State(scim): State<ScimState>,
    headers: HeaderMap,
    ScimPath(id): ScimPath,
) -> Result<StatusCode, ScimError> {
    scim.authorize(&headers)?;
    let user = scim.user(&id).await?;
    scim.service.deprovision_user(&Actor::Scim, user.id, if_match(&headers)?.as_deref()).await?;
    Ok(StatusCode::NO_CONTENT)
}
