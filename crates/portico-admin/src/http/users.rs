//! `/admin/v1/users`: users, their passwords, blocks and sessions.

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use portico_api::auth::Role;
use portico_api::error::ErrorBody;
use portico_api::openapi::AdminErrors;
use portico_api::{Admin, ApiError, IfMatch, PathParams, Support, etag};
use portico_model::ids::{GrantId, SessionId, UserId};
use portico_model::user::User;
use portico_storage::{TextMatch, UserQuery};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::{AdminState, nullable};
use crate::service::{NewUser, ServiceError, UserChanges};
use portico_api::{Body, Params, page_size, pagination};

/// A user as the admin API shows it (never the password hash).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserView {
    pub id: Uuid,
    #[schema(example = "anna")]
    pub login: String,
    #[schema(example = "+79001112233")]
    pub phone: Option<String>,
    pub email: Option<String>,
    pub name: Option<String>,
    pub phone_login_enabled: bool,
    /// Blocked by an operator (lifted only by an operator).
    pub blocked: bool,
    /// Deactivated by the provisioning system (SCIM `active: false`;
    /// lifted only by it). The user signs in when neither is set.
    pub deactivated: bool,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
}

impl From<User> for UserView {
    fn from(user: User) -> Self {
        Self {
            id: user.id.as_uuid(),
            login: user.login,
            phone: user.phone,
            email: user.email,
            name: user.name,
            phone_login_enabled: user.phone_login_enabled,
            blocked: user.blocked,
            deactivated: user.deactivated,
            created_at: user.created_at,
        }
    }
}

/// A page of users, in login order.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserPage {
    pub users: Vec<UserView>,
    /// Pass as `after` for the next page; absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// Which users to find; every condition given must hold.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct UserSearch {
    /// Exactly this login.
    pub login: Option<String>,
    /// Logins that start with this.
    pub login_starts_with: Option<String>,
    /// This phone, in any form the login page accepts (`8 900 111-22-33`); what is no phone number finds nobody.
    pub phone: Option<String>,
    /// This e-mail address, its ASCII letters in either case (`Anna@Example.com` finds `anna@example.com`).
    pub email: Option<String>,
    /// Only blocked (`true`) or only active (`false`) users.
    pub blocked: Option<bool>,
    /// The `next` of the previous page.
    #[param(pattern = "^[^\\x00]*$")]
    pub after: Option<String>,
    /// 1 to 200; default 50.
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
}

/// A user to create.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewUserBody {
    /// 1 to 64 characters, without spaces; unique.
    #[schema(pattern = "^[^\\s\\x00-\\x1f\\x7f-\\x9f]{1,64}$", example = "anna")]
    pub login: String,
    /// 10 to 256 characters, not the login, not one character repeated.
    #[schema(min_length = 10, max_length = 256)]
    pub password: String,
    /// E.164, or a form the login page accepts; stored normalized.
    #[schema(example = "+79001112233")]
    pub phone: Option<String>,
    #[schema(format = Email, max_length = 254)]
    pub email: Option<String>,
    #[schema(min_length = 1, max_length = 200)]
    pub name: Option<String>,
    /// Default `true`.
    pub phone_login_enabled: Option<bool>,
}

/// Changes to a user: the fields given replace the stored ones; `null` clears one.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UserPatch {
    #[schema(pattern = "^[^\\s\\x00-\\x1f\\x7f-\\x9f]{1,64}$")]
    pub login: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(nullable)]
    pub phone: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(nullable, format = Email, max_length = 254)]
    pub email: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(nullable, min_length = 1, max_length = 200)]
    pub name: Option<Option<String>>,
    pub phone_login_enabled: Option<bool>,
}

/// A new password.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PasswordBody {
    /// 10 to 256 characters, not the login, not one character repeated.
    #[schema(min_length = 10, max_length = 256)]
    pub password: String,
}

/// Why an operator blocks or unblocks; kept in the audit log.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReasonBody {
    /// At most 500 characters.
    #[schema(max_length = 500)]
    pub reason: Option<String>,
}

/// A live single sign-on session.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    /// The session's id, the `sid` of its id_tokens.
    pub sid: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub auth_time: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: OffsetDateTime,
    /// How the user authenticated (RFC 8176).
    pub amr: Vec<String>,
    /// The clients signed in under it.
    pub clients: Vec<String>,
}

/// A path's user id; one that is not a UUID names no user.
fn user_id(raw: &str) -> Result<UserId, ApiError> {
    Uuid::parse_str(raw)
        .map(UserId::from)
        .map_err(|_| ApiError::not_found("user_not_found", format!("there is no user {raw:?}")))
}

fn answer(what: &str) -> impl FnOnce(ServiceError) -> ApiError + '_ {
    move |e| e.into_api(what)
}

#[utoipa::path(
    get,
    path = "/admin/v1/users",
    operation_id = "searchUsers",
    tag = "users",
    params(UserSearch),
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "A page of matching users, in login order.", body = UserPage),
        (status = 400, description = "`bad_request`: a parameter is unknown or malformed.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn search(
    State(api): State<AdminState>,
    _: Support,
    Params(search): Params<UserSearch>,
) -> Result<Json<UserPage>, ApiError> {
    let limit = page_size(search.limit)?;
    let phone = match search.phone.as_deref().map(portico_model::otp::normalize_phone) {
        // What is no phone number is nobody's.
        Some(None) => return Ok(Json(UserPage { users: Vec::new(), next: None })),
        Some(Some(phone)) => Some(TextMatch::Is(phone)),
        None => None,
    };
    let login = match (search.login, search.login_starts_with) {
        // Both must hold: the exact login, if it starts so; else nobody.
        (Some(login), Some(prefix)) if !login.starts_with(&prefix) => {
            return Ok(Json(UserPage { users: Vec::new(), next: None }));
        }
        (Some(login), _) => Some(TextMatch::Is(login)),
        (None, Some(prefix)) => Some(TextMatch::StartsWith(prefix)),
        (None, None) => None,
    };
    let query = UserQuery {
        login,
        phone,
        email: search.email.map(TextMatch::Is),
        blocked: search.blocked,
        deactivated: None,
        after: search.after,
        offset: 0,
        limit: limit + 1,
    };
    let users = api.service.search_users(&query).await.map_err(answer("searching users"))?;
    let (users, next) = pagination::split(users, limit, |u| u.login.as_str());
    Ok(Json(UserPage { users: users.into_iter().map(UserView::from).collect(), next }))
}

#[utoipa::path(
    post,
    path = "/admin/v1/users",
    operation_id = "createUser",
    tag = "users",
    request_body = NewUserBody,
    security(("adminToken" = [])),
    responses(
        (status = 201, description = "Created.", body = UserView),
        (status = 400, description = "`bad_request`, or `invalid_document` naming every problem.", body = ErrorBody),
        (status = 415, description = "`bad_request`: the body is not `application/json`.", body = ErrorBody),
        (status = 409, description = "`login_taken`.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn create(
    State(api): State<AdminState>,
    admin: Admin,
    Body(body): Body<NewUserBody>,
) -> Result<Response, ApiError> {
    let new = NewUser {
        login: body.login,
        password: body.password,
        phone: body.phone,
        email: body.email,
        name: body.name,
        phone_login_enabled: body.phone_login_enabled,
    };
    let user = api.service.create_user(&admin.actor, new).await.map_err(answer("creating a user"))?;
    Ok((StatusCode::CREATED, Json(UserView::from(user))).into_response())
}

#[utoipa::path(
    get,
    path = "/admin/v1/users/{userId}",
    operation_id = "getUser",
    tag = "users",
    params(("userId" = Uuid, Path, description = "The user.")),
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "The user.", body = UserView, headers(("ETag" = String, description = "The user's revision, for `If-Match`."))),
        (status = 404, description = "`user_not_found`.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn read(
    State(api): State<AdminState>,
    _: Support,
    PathParams(id): PathParams<String>,
) -> Result<Response, ApiError> {
    let user = api.service.user(user_id(&id)?).await.map_err(answer("reading a user"))?;
    Ok(with_etag(user))
}

/// The user as the admin API shows them, with their revision as the `ETag`.
fn with_etag(user: User) -> Response {
    ([(header::ETAG, etag(user.revision))], Json(UserView::from(user))).into_response()
}

#[utoipa::path(
    patch,
    path = "/admin/v1/users/{userId}",
    operation_id = "updateUser",
    tag = "users",
    params(
        ("userId" = Uuid, Path, description = "The user."),
        ("If-Match" = Option<String>, Header, description = "Make the change only if the stored user is still at this revision: the `ETag` a read answered (`\"3\"`); else 412 `precondition_failed`, and nothing is changed. Without it the change is made on the user as stored now.", pattern = r#"^[ \t]*(\*|(W/)?"[!#-~]*"([ \t]*,[ \t]*(W/)?"[!#-~]*")*)[ \t]*$"#)
    ),
    request_body = UserPatch,
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "Changed; the user as they are now.", body = UserView, headers(("ETag" = String, description = "The user's revision, for `If-Match`."))),
        (status = 400, description = "`bad_request`, or `invalid_document` naming every problem.", body = ErrorBody),
        (status = 415, description = "`bad_request`: the body is not `application/json`.", body = ErrorBody),
        (status = 404, description = "`user_not_found`.", body = ErrorBody),
        (status = 409, description = "`login_taken`, or `user_changed`: others kept changing the user meanwhile; read it again and retry.", body = ErrorBody),
        (status = 412, description = "`precondition_failed`: the user is no longer at the revision `If-Match` names.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn update(
    State(api): State<AdminState>,
    admin: Admin,
    PathParams(id): PathParams<String>,
    IfMatch(if_match): IfMatch,
    Body(patch): Body<UserPatch>,
) -> Result<Response, ApiError> {
    let changes = UserChanges {
        login: patch.login,
        phone: patch.phone,
        email: patch.email,
        name: patch.name,
        phone_login_enabled: patch.phone_login_enabled,
        if_match,
    };
    let user =
        api.service.update_user(&admin.actor, user_id(&id)?, changes).await.map_err(answer("changing a user"))?;
    Ok(with_etag(user))
}

#[utoipa::path(
    put,
    path = "/admin/v1/users/{userId}/password",
    operation_id = "setUserPassword",
    tag = "users",
    params(("userId" = Uuid, Path, description = "The user.")),
    request_body = PasswordBody,
    security(("adminToken" = [])),
    responses(
        (status = 204, description = "Set; the old password no longer works."),
        (status = 400, description = "`bad_request`, or `invalid_document`: the password policy refuses it.", body = ErrorBody),
        (status = 415, description = "`bad_request`: the body is not `application/json`.", body = ErrorBody),
        (status = 404, description = "`user_not_found`.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn set_password(
    State(api): State<AdminState>,
    admin: Admin,
    PathParams(id): PathParams<String>,
    Body(body): Body<PasswordBody>,
) -> Result<StatusCode, ApiError> {
    api.service.set_password(&admin.actor, user_id(&id)?, body.password).await.map_err(answer("setting a password"))?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    post,
    path = "/admin/v1/users/{userId}/block",
    operation_id = "blockUser",
    tag = "users",
    params(("userId" = Uuid, Path, description = "The user.")),
    request_body = ReasonBody,
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "Blocked: every session ended, every grant revoked, no new login.", body = UserView),
        (status = 400, description = "`bad_request`, or `invalid_document`: the reason is too long.", body = ErrorBody),
        (status = 404, description = "`user_not_found`.", body = ErrorBody),
        (status = 415, description = "`bad_request`: the body is not `application/json`.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn block(
    State(api): State<AdminState>,
    Support(admin): Support,
    PathParams(id): PathParams<String>,
    Body(body): Body<ReasonBody>,
) -> Result<Json<UserView>, ApiError> {
    let id = user_id(&id)?;
    api.service.may_act_on(admin.role, id).await.map_err(answer("blocking a user"))?;
    let user = api.service.block_user(&admin.actor, id, body.reason).await.map_err(answer("blocking a user"))?;
    Ok(Json(user.into()))
}

#[utoipa::path(
    post,
    path = "/admin/v1/users/{userId}/unblock",
    operation_id = "unblockUser",
    tag = "users",
    params(("userId" = Uuid, Path, description = "The user.")),
    request_body = ReasonBody,
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "Unblocked.", body = UserView),
        (status = 400, description = "`bad_request`, or `invalid_document`: the reason is too long.", body = ErrorBody),
        (status = 404, description = "`user_not_found`.", body = ErrorBody),
        (status = 415, description = "`bad_request`: the body is not `application/json`.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn unblock(
    State(api): State<AdminState>,
    Support(admin): Support,
    PathParams(id): PathParams<String>,
    Body(body): Body<ReasonBody>,
) -> Result<Json<UserView>, ApiError> {
    let id = user_id(&id)?;
    api.service.may_act_on(admin.role, id).await.map_err(answer("unblocking a user"))?;
    let user = api.service.unblock_user(&admin.actor, id, body.reason).await.map_err(answer("unblocking a user"))?;
    Ok(Json(user.into()))
}

#[utoipa::path(
    delete,
    path = "/admin/v1/users/{userId}",
    operation_id = "deleteUser",
    tag = "users",
    params(("userId" = Uuid, Path, description = "The user.")),
    security(("adminToken" = [])),
    responses(
        (status = 204, description = "Removed, with their sessions, grants and tokens; the audit log keeps their events."),
        (status = 404, description = "`user_not_found`.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn remove(
    State(api): State<AdminState>,
    admin: Admin,
    PathParams(id): PathParams<String>,
) -> Result<StatusCode, ApiError> {
    api.service.delete_user(&admin.actor, user_id(&id)?).await.map_err(answer("removing a user"))?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    get,
    path = "/admin/v1/users/{userId}/sessions",
    operation_id = "listUserSessions",
    tag = "users",
    params(("userId" = Uuid, Path, description = "The user.")),
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "The user's live sessions, newest first (at most `login.max_sessions_per_user`).", body = Vec<SessionView>),
        (status = 404, description = "`user_not_found`.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn sessions(
    State(api): State<AdminState>,
    _: Support,
    PathParams(id): PathParams<String>,
) -> Result<Json<Vec<SessionView>>, ApiError> {
    let sessions = api.service.sessions(user_id(&id)?).await.map_err(answer("listing sessions"))?;
    let views = sessions
        .into_iter()
        .map(|(session, clients)| SessionView {
            sid: session.id.as_uuid(),
            auth_time: session.auth_time,
            expires_at: session.expires_at,
            amr: session.amr,
            clients,
        })
        .collect();
    Ok(Json(views))
}

#[utoipa::path(
    delete,
    path = "/admin/v1/users/{userId}/sessions/{sid}",
    operation_id = "endUserSession",
    tag = "users",
    params(
        ("userId" = Uuid, Path, description = "The user."),
        ("sid" = Uuid, Path, description = "The session.")
    ),
    security(("adminToken" = [])),
    responses(
        (status = 204, description = "Ended, as a logout would end it (back-channel logouts sent)."),
        (status = 404, description = "`user_not_found`, `session_not_found`.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn end_session(
    State(api): State<AdminState>,
    Support(admin): Support,
    PathParams((id, sid)): PathParams<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let gone = || ApiError::not_found("session_not_found", format!("the user has no live session {sid:?}"));
    let sid = Uuid::parse_str(&sid).map(SessionId::from).map_err(|_| gone())?;
    let id = user_id(&id)?;
    api.service.may_act_on(admin.role, id).await.map_err(answer("ending a session"))?;
    api.service.end_session(&admin.actor, id, sid).await.map_err(answer("ending a session"))?;
    Ok(StatusCode::NO_CONTENT)
}

/// A user's passkey (its credential stays in Portico).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PasskeyView {
    pub id: Uuid,
    /// What the user calls it.
    pub name: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_used_at: Option<OffsetDateTime>,
    /// When a signature counter that did not advance (a possible copy)
    /// locked it: it signs nobody in; remove it.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub locked_at: Option<OffsetDateTime>,
}

#[utoipa::path(
    get,
    path = "/admin/v1/users/{userId}/passkeys",
    operation_id = "listUserPasskeys",
    tag = "users",
    params(("userId" = Uuid, Path, description = "The user.")),
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "The user's passkeys, oldest first.", body = Vec<PasskeyView>),
        (status = 404, description = "`user_not_found`.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn passkeys(
    State(api): State<AdminState>,
    _: Support,
    PathParams(id): PathParams<String>,
) -> Result<Json<Vec<PasskeyView>>, ApiError> {
    let passkeys = api.service.passkeys(user_id(&id)?).await.map_err(answer("listing passkeys"))?;
    let views = passkeys
        .into_iter()
        .map(|p| PasskeyView {
            id: p.id,
            name: p.name,
            created_at: p.created_at,
            last_used_at: p.last_used_at,
            locked_at: p.locked_at,
        })
        .collect();
    Ok(Json(views))
}

#[utoipa::path(
    delete,
    path = "/admin/v1/users/{userId}/passkeys/{passkeyId}",
    operation_id = "removeUserPasskey",
    tag = "users",
    params(
        ("userId" = Uuid, Path, description = "The user."),
        ("passkeyId" = Uuid, Path, description = "The passkey.")
    ),
    security(("adminToken" = [])),
    responses(
        (status = 204, description = "Removed: it signs nobody in any more (audited as `passkey.removed`)."),
        (status = 404, description = "`user_not_found`, `passkey_not_found`.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn remove_passkey(
    State(api): State<AdminState>,
    Support(admin): Support,
    PathParams((id, passkey)): PathParams<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let gone = || ApiError::not_found("passkey_not_found", format!("the user has no passkey {passkey:?}"));
    let passkey = Uuid::parse_str(&passkey).map_err(|_| gone())?;
    let id = user_id(&id)?;
    api.service.may_act_on(admin.role, id).await.map_err(answer("removing a passkey"))?;
    api.service.remove_passkey(&admin.actor, id, passkey).await.map_err(answer("removing a passkey"))?;
    Ok(StatusCode::NO_CONTENT)
}

/// A live grant: what a client holds for the user.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrantView {
    pub id: Uuid,
    pub client_id: String,
    /// The scopes granted, space-separated.
    pub scope: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    /// The session it was issued under.
    pub sid: Option<Uuid>,
}

#[utoipa::path(
    get,
    path = "/admin/v1/users/{userId}/grants",
    operation_id = "listUserGrants",
    tag = "users",
    params(("userId" = Uuid, Path, description = "The user.")),
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "The user's live grants, newest first.", body = Vec<GrantView>),
        (status = 404, description = "`user_not_found`.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn grants(
    State(api): State<AdminState>,
    _: Support,
    PathParams(id): PathParams<String>,
) -> Result<Json<Vec<GrantView>>, ApiError> {
    let grants = api.service.grants(user_id(&id)?).await.map_err(answer("listing grants"))?;
    Ok(Json(
        grants
            .into_iter()
            .map(|g| GrantView {
                id: g.id.as_uuid(),
                client_id: g.client_id.to_string(),
                scope: g.scope,
                created_at: g.created_at,
                sid: g.session_id.map(|s| s.as_uuid()),
            })
            .collect(),
    ))
}

#[utoipa::path(
    delete,
    path = "/admin/v1/users/{userId}/grants/{grantId}",
    operation_id = "revokeUserGrant",
    tag = "users",
    params(
        ("userId" = Uuid, Path, description = "The user."),
        ("grantId" = Uuid, Path, description = "The grant.")
    ),
    security(("adminToken" = [])),
    responses(
        (status = 204, description = "Revoked: the client's refresh token and access tokens stop working at once."),
        (status = 404, description = "`user_not_found`, `grant_not_found`.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn revoke_grant(
    State(api): State<AdminState>,
    Support(admin): Support,
    PathParams((id, grant)): PathParams<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let gone = || ApiError::not_found("grant_not_found", format!("the user has no live grant {grant:?}"));
    let grant = Uuid::parse_str(&grant).map(GrantId::from).map_err(|_| gone())?;
    let id = user_id(&id)?;
    api.service.may_act_on(admin.role, id).await.map_err(answer("revoking a grant"))?;
    api.service.revoke_grant(&admin.actor, id, grant).await.map_err(answer("revoking a grant"))?;
    Ok(StatusCode::NO_CONTENT)
}

/// An operator role: `support`, `admin`, or `null` (no operator).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleBody {
    #[schema(value_type = Option<String>, pattern = "^(support|admin)$")]
    pub role: Option<String>,
}

#[utoipa::path(
    get,
    path = "/admin/v1/users/{userId}/role",
    operation_id = "getOperatorRole",
    tag = "users",
    params(("userId" = Uuid, Path, description = "The user.")),
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "The user's operator role, `null` when they are no operator.", body = RoleBody),
        (status = 404, description = "`user_not_found`.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn role(
    State(api): State<AdminState>,
    _: Admin,
    PathParams(id): PathParams<String>,
) -> Result<Json<RoleBody>, ApiError> {
    let role = api.service.operator_role(user_id(&id)?).await.map_err(answer("reading an operator role"))?;
    Ok(Json(RoleBody { role: role.map(|r| r.as_str().to_owned()) }))
}

#[utoipa::path(
    put,
    path = "/admin/v1/users/{userId}/role",
    operation_id = "setOperatorRole",
    tag = "users",
    params(("userId" = Uuid, Path, description = "The user.")),
    request_body = RoleBody,
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "Set; it takes effect on the operator's next call.", body = RoleBody),
        (status = 400, description = "`bad_request`: not `support`, `admin` or `null`.", body = ErrorBody),
        (status = 404, description = "`user_not_found`.", body = ErrorBody),
        (status = 415, description = "`bad_request`: the body is not `application/json`.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn set_role(
    State(api): State<AdminState>,
    admin: Admin,
    PathParams(id): PathParams<String>,
    Body(body): Body<RoleBody>,
) -> Result<Json<RoleBody>, ApiError> {
    let role = match body.role.as_deref() {
        None => None,
        Some(text) => Some(Role::parse(text).ok_or_else(|| ApiError::bad_request("role: support, admin or null"))?),
    };
    api.service
        .set_operator_role(&admin.actor, user_id(&id)?, role)
        .await
        .map_err(answer("setting an operator role"))?;
    Ok(Json(RoleBody { role: role.map(|r| r.as_str().to_owned()) }))
}
