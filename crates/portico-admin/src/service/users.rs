//! Users: creation, changes, passwords, blocking, removal, search, and
//! their sessions.
//!
//! Rules: a login of 1 to 64 characters without spaces or control
//! characters; a phone in E.164 form (typed forms such as `8 900 …` are
//! normalized, as on the login page); an e-mail `local@domain` of at most
//! 254 characters; a name of at most 200 characters; a password of
//! [`PASSWORD_MIN`] to [`PASSWORD_MAX`] characters that is not the login.

use portico_api::Problem;
use portico_model::audit::{Actor, AuditEvent, AuditKind};
use portico_model::ids::{GrantId, SessionId, UserId};
use portico_model::oauth::Grant;
use portico_model::otp::normalize_phone;
use portico_model::session::SsoSession;
use portico_model::user::{OperatorRole, User};
use portico_storage::{StorageError, Update, UserQuery};

use super::{AdminService, Result, ServiceError, UPDATE_ATTEMPTS, check_revision};

/// Shortest password accepted.
pub const PASSWORD_MIN: usize = 10;
/// Longest password accepted (Argon2 work grows with it).
pub const PASSWORD_MAX: usize = 256;
const MAX_NAME_LEN: usize = 200;
const MAX_REASON_LEN: usize = 500;

/// A user to create.
#[derive(Debug, Clone, Default)]
pub struct NewUser {
    pub login: String,
    pub password: String,
    pub phone: Option<String>,
    pub email: Option<String>,
    pub name: Option<String>,
    /// Whether the user may start a login with the phone (default yes).
    pub phone_login_enabled: Option<bool>,
}

/// A user as a provisioning system (SCIM) states them whole: every field
/// replaces the stored one, absent ones clear it.
#[derive(Debug, Clone, Default)]
pub struct ProvisionedUser {
    pub login: String,
    /// `None` keeps the password (a new user gets one nobody knows).
    pub password: Option<String>,
    pub phone: Option<String>,
    pub email: Option<String>,
    pub name: Option<String>,
    pub active: bool,
    /// The provisioning system's own attributes, returned to it as sent.
    pub attributes: serde_json::Value,
}

/// Changes to a user; `None` leaves a field as it is, `Some(None)` clears it.
#[derive(Debug, Clone, Default)]
pub struct UserChanges {
    pub login: Option<String>,
    pub phone: Option<Option<String>>,
    pub email: Option<Option<String>>,
    pub name: Option<Option<String>>,
    pub phone_login_enabled: Option<bool>,
    /// Make the changes only if the stored user is at one of these
    /// revisions (`If-Match`, the revision a console form was read at);
    /// `None`: on whatever is stored.
    pub if_match: Option<Vec<u64>>,
}

/// The password policy.
///
/// # Errors
/// What is wrong with the password.
pub fn check_password(password: &str, login: &str) -> Result<(), String> {
    let length = password.chars().count();
    if !(PASSWORD_MIN..=PASSWORD_MAX).contains(&length) {
        return Err(format!("{PASSWORD_MIN} to {PASSWORD_MAX} characters"));
    }
    if password.eq_ignore_ascii_case(login) {
        return Err("must not be the login".into());
    }
    if password.chars().all(|c| password.starts_with(c)) {
        return Err("must not be one character repeated".into());
    }
    Ok(())
}

/// A new login: as [`portico_model::login_name::key`] says (1 to 64
/// characters, no space, control or invisible character, one script). Its
/// being another user's under the comparison rules is found by the store
/// (`login_taken`).
fn check_login(login: &str, problems: &mut Vec<Problem>) {
    if let Err(problem) = portico_model::login_name::key(login) {
        problems.push(Problem::new("login", problem));
    }
}

fn check_phone(phone: Option<&str>, problems: &mut Vec<Problem>) -> Option<String> {
    let phone = phone?;
    let normalized = normalize_phone(phone);
    if normalized.is_none() {
        problems.push(Problem::new("phone", format!("{phone:?}: use E.164 form, e.g. +79001234567")));
    }
    normalized
}

/// An e-mail address the one-time codes can be sent to: the mailer's own
/// rule ([`portico_identity::delivery::smtp::address`]).
fn check_email(email: Option<&str>, problems: &mut Vec<Problem>) {
    let Some(email) = email else { return };
    if let Err(problem) = portico_identity::delivery::smtp::address(email) {
        let shown = portico_model::text::capped(format!("{email:?}"), 80);
        problems.push(Problem::new("email", format!("{shown} {problem}")));
    }
}

/// A user's name: 1 to [`MAX_NAME_LEN`] characters, held to the rule for
/// names people read ([`portico_model::text::check_shown_name`]): it is
/// the `name` claim third parties show, and what the console shows
/// support operators who act on it.
fn check_name(name: Option<&str>, problems: &mut Vec<Problem>) {
    let Some(name) = name else { return };
    if name.trim().is_empty() || name.chars().count() > MAX_NAME_LEN {
        problems.push(Problem::new("name", format!("1 to {MAX_NAME_LEN} characters")));
    } else if let Err(problem) = portico_model::text::check_shown_name(name) {
        problems.push(Problem::new("name", problem));
    }
}

fn not_found(id: UserId) -> ServiceError {
    ServiceError::NotFound("user_not_found", format!("there is no user {id}"))
}

fn changed_meanwhile(id: UserId) -> ServiceError {
    ServiceError::Conflict(
        "user_changed",
        format!("the user {id} kept being changed by others meanwhile: read it again and retry"),
    )
}

/// Makes an operator's `changes` on `user`; answers the names of the
/// fields changed.
fn apply_changes(user: &mut User, changes: UserChanges) -> Result<Vec<&'static str>> {
    let mut problems = Vec::new();
    let mut changed: Vec<&'static str> = Vec::new();
    if let Some(login) = changes.login {
        check_login(&login, &mut problems);
        user.login = login;
        changed.push("login");
    }
    if let Some(phone) = changes.phone {
        user.phone = match phone {
            Some(phone) => check_phone(Some(&phone), &mut problems),
            None => None,
        };
        changed.push("phone");
    }
    if let Some(email) = changes.email {
        check_email(email.as_deref(), &mut problems);
        user.email = email;
        changed.push("email");
    }
    if let Some(name) = changes.name {
        check_name(name.as_deref(), &mut problems);
        user.name = name;
        changed.push("name");
    }
    if let Some(enabled) = changes.phone_login_enabled {
        user.phone_login_enabled = enabled;
        changed.push("phoneLoginEnabled");
    }
    if !problems.is_empty() {
        return Err(ServiceError::Invalid(problems));
    }
    Ok(changed)
}

fn login_taken(login: &str) -> ServiceError {
    ServiceError::Conflict("login_taken", format!("a user with the login {login} already exists"))
}

impl AdminService {
    /// A new password's hash, under the server's cap on Argon2id runs.
    async fn hash_password(&self, password: String) -> Result<String> {
        self.passwords.hash(password).await.map_err(|e| ServiceError::Storage(StorageError::Other(e)))
    }

    /// # Errors
    /// `user_not_found`, or the store failed.
    pub async fn user(&self, id: UserId) -> Result<User> {
        self.store.find_user(id).await?.ok_or_else(|| not_found(id))
    }

    /// # Errors
    /// `user_not_found`, or the store failed.
    pub async fn user_by_login(&self, login: &str) -> Result<User> {
        self.store
            .find_user_by_login(login)
            .await?
            .ok_or_else(|| ServiceError::NotFound("user_not_found", format!("there is no user {login}")))
    }

    /// A page of users matching `query`.
    ///
    /// # Errors
    /// When the store fails.
    pub async fn search_users(&self, query: &UserQuery) -> Result<Vec<User>> {
        Ok(self.store.search_users(query).await?)
    }

    /// Creates a user.
    ///
    /// # Errors
    /// `Invalid` naming every problem; `login_taken`; the store failed.
    pub async fn create_user(&self, actor: &Actor, new: NewUser) -> Result<User> {
        self.create_user_with(actor, new, None).await
    }

    async fn create_user_with(
        &self,
        actor: &Actor,
        new: NewUser,
        provisioned: Option<serde_json::Value>,
    ) -> Result<User> {
        let mut problems = Vec::new();
        check_login(&new.login, &mut problems);
        if let Err(message) = check_password(&new.password, &new.login) {
            problems.push(Problem::new("password", message));
        }
        let phone = check_phone(new.phone.as_deref(), &mut problems);
        check_email(new.email.as_deref(), &mut problems);
        check_name(new.name.as_deref(), &mut problems);
        if !problems.is_empty() {
            return Err(ServiceError::Invalid(problems));
        }
        let now = self.clock.now();
        let user = User {
            id: UserId::random(),
            login: new.login,
            password_hash: self.hash_password(new.password).await?,
            phone,
            email: new.email,
            name: new.name,
            phone_login_enabled: new.phone_login_enabled.unwrap_or(true),
            blocked: false,
            deactivated: false,
            created_at: now,
            provisioned,
            revision: 0,
        };
        match self.store.create_user(&user).await {
            Ok(()) => {}
            Err(StorageError::Conflict(_)) => return Err(login_taken(&user.login)),
            Err(e) => return Err(e.into()),
        }
        self.audit(actor, AuditEvent::new(now, AuditKind::UserCreated).user(user.id)).await;
        Ok(user)
    }

    /// Creates a user as a provisioning system states them; an inactive
    /// one is created blocked.
    ///
    /// # Errors
    /// As [`AdminService::create_user`].
    pub async fn provision_user(&self, actor: &Actor, p: ProvisionedUser) -> Result<User> {
        let password = match &p.password {
            Some(password) => password.clone(),
            // Nobody knows it: the user signs in another way until one is set.
            None => format!("{}{}", portico_crypto::random::token(), portico_crypto::random::token()),
        };
        let new = NewUser {
            login: p.login,
            password,
            phone: p.phone,
            email: p.email,
            name: p.name,
            phone_login_enabled: None,
        };
        let mut user = self.create_user_with(actor, new, Some(p.attributes)).await?;
        if !p.active {
            user = self.set_deactivated(actor, user.id, true).await?;
        }
        Ok(user)
    }

    /// Replaces a user whole as a provisioning system states them;
    /// deactivation blocks them (their sessions end, their grants are
    /// revoked), activation unblocks them.
    ///
    /// With `if_match`, only when the user is still at a revision it names.
    ///
    /// # Errors
    /// `Invalid` naming every problem; `user_not_found`; `login_taken`;
    /// `user_changed`; `Stale` when the user is at a revision `if_match`
    /// does not name; the store failed.
    pub async fn replace_provisioned_user(
        &self,
        actor: &Actor,
        id: UserId,
        if_match: Option<&[u64]>,
        p: ProvisionedUser,
    ) -> Result<User> {
        self.replace_provisioned_user_with(actor, id, if_match, |_| Ok(p.clone())).await
    }

    /// Replaces a user whole with what `state` makes of the stored user (a
    /// SCIM `PATCH` applied to it); made again on what is stored when
    /// another change was written in between, so that neither undoes the
    /// other.
    ///
    /// # Errors
    /// As [`AdminService::replace_provisioned_user`], and what `state`
    /// answers.
    pub async fn replace_provisioned_user_with<E: From<ServiceError>>(
        &self,
        actor: &Actor,
        id: UserId,
        if_match: Option<&[u64]>,
        mut state: impl FnMut(&User) -> std::result::Result<ProvisionedUser, E>,
    ) -> std::result::Result<User, E> {
        let stored = self.user(id).await?;
        check_revision(&format!("the user {id}"), if_match, stored.revision)?;
        let stated = state(&stored)?;
        self.refuse_operator(id).await?;
        // A new password is hashed once, before the change is made (hashing
        // takes a while); a provisioning system states no password from
        // what is stored, so the change made again states the same one.
        let mut hashed = None;
        if let Some(password) = stated.password
            && check_password(&password, &stated.login).is_ok()
        {
            hashed = Some((password.clone(), self.hash_password(password).await?));
        }
        let (mut user, (changed, active, password_set)) = self
            .modify_user::<_, E>(id, if_match, |user| {
                let p = state(user)?;
                let mut problems = Vec::new();
                // A login kept as it is stays valid, whatever today's rules say of it.
                if p.login != user.login {
                    check_login(&p.login, &mut problems);
                }
                if let Some(Err(message)) = p.password.as_deref().map(|password| check_password(password, &p.login)) {
                    problems.push(Problem::new("password", message));
                }
                let phone = check_phone(p.phone.as_deref(), &mut problems);
                // So do an e-mail address and a name kept as they are.
                if p.email != user.email {
                    check_email(p.email.as_deref(), &mut problems);
                }
                if p.name != user.name {
                    check_name(p.name.as_deref(), &mut problems);
                }
                if !problems.is_empty() {
                    return Err(ServiceError::Invalid(problems).into());
                }
                // What changed, named as the admin API names it in the audit log.
                let mut changed: Vec<&'static str> = Vec::new();
                for (name, differs) in [
                    ("login", user.login != p.login),
                    ("phone", user.phone != phone),
                    ("email", user.email != p.email),
                    ("name", user.name != p.name),
                    ("attributes", user.provisioned.as_ref() != Some(&p.attributes)),
                ] {
                    if differs {
                        changed.push(name);
                    }
                }
                let password_set = match (&p.password, &hashed) {
                    (None, _) => false,
                    (Some(password), Some((from, hash))) if password == from => {
                        user.password_hash.clone_from(hash);
                        true
                    }
                    (Some(_), _) => return Err(changed_meanwhile(id).into()),
                };
                user.login = p.login;
                user.phone = phone;
                user.email = p.email;
                user.name = p.name;
                user.provisioned = Some(p.attributes);
                Ok((changed, p.active, password_set))
            })
            .await?;
        let now = self.clock.now();
        let event = AuditEvent::new(now, AuditKind::UserUpdated).user(id);
        self.audit(actor, event.detail(serde_json::json!({ "changed": changed }))).await;
        if password_set {
            self.audit(actor, AuditEvent::new(now, AuditKind::UserPasswordSet).user(id)).await;
        }
        // `active` moves only the provisioning system's own state: an
        // operator's block stands until an operator lifts it.
        if user.deactivated == active {
            user = self.set_deactivated(actor, id, !active).await?;
        }
        Ok(user)
    }

    /// Changes a user.
    ///
    /// # Errors
    /// `Invalid` naming every problem; `user_not_found`; `login_taken`;
    /// the store failed.
    pub async fn update_user(&self, actor: &Actor, id: UserId, changes: UserChanges) -> Result<User> {
        let if_match = changes.if_match.clone();
        let (user, changed) =
            self.modify_user(id, if_match.as_deref(), |user| apply_changes(user, changes.clone())).await?;
        let event = AuditEvent::new(self.clock.now(), AuditKind::UserUpdated)
            .user(id)
            .detail(serde_json::json!({ "changed": changed }));
        self.audit(actor, event).await;
        Ok(user)
    }

    /// Reads the user, makes `change` on it and writes it back if nobody
    /// wrote it in between (its revision); a change that lost that race (to
    /// another node: this node's changes wait for each other) is made again
    /// on what is stored now, up to [`UPDATE_ATTEMPTS`] times. Two changes
    /// at once (an operator's, the provisioning system's, a new password)
    /// thus never undo each other.
    ///
    /// With `if_match`, a change is made only on one of those revisions,
    /// never again on another.
    async fn modify_user<T, E: From<ServiceError>>(
        &self,
        id: UserId,
        if_match: Option<&[u64]>,
        mut change: impl FnMut(&mut User) -> std::result::Result<T, E>,
    ) -> std::result::Result<(User, T), E> {
        let _one_at_a_time = self.user_writes.lock().await;
        for _ in 0..UPDATE_ATTEMPTS {
            let mut user = self.user(id).await?;
            check_revision(&format!("the user {id}"), if_match, user.revision)?;
            let made = change(&mut user)?;
            match self.store.update_user(&user).await {
                Ok(Update::Updated) => {
                    user.revision += 1;
                    return Ok((user, made));
                }
                Ok(Update::Missing) => return Err(not_found(id).into()),
                Ok(Update::Outdated) => {}
                Err(StorageError::Conflict(_)) => return Err(login_taken(&user.login).into()),
                Err(e) => return Err(ServiceError::from(e).into()),
            }
        }
        Err(changed_meanwhile(id).into())
    }

    /// Sets a user's password.
    ///
    /// # Errors
    /// `Invalid` for a password the policy refuses; `user_not_found`; the
    /// store failed.
    pub async fn set_password(&self, actor: &Actor, id: UserId, password: String) -> Result<()> {
        let user = self.user(id).await?;
        check_password(&password, &user.login).map_err(|message| ServiceError::invalid("password", message))?;
        let hash = self.hash_password(password.clone()).await?;
        self.modify_user(id, None, |user| {
            // The policy again, should the login have changed meanwhile.
            check_password(&password, &user.login).map_err(|message| ServiceError::invalid("password", message))?;
            user.password_hash.clone_from(&hash);
            Ok::<_, ServiceError>(())
        })
        .await?;
        self.audit(actor, AuditEvent::new(self.clock.now(), AuditKind::UserPasswordSet).user(id)).await;
        Ok(())
    }

    /// Blocks a user: every session ends as a logout would (back-channel
    /// logouts to the clients signed in under it), then every grant of the
    /// user is revoked, whatever the clients asked for, and no new login
    /// succeeds. `reason` goes into the audit log.
    ///
    /// # Errors
    /// `Invalid` for an over-long reason; `user_not_found`; the store failed.
    pub async fn block_user(&self, actor: &Actor, id: UserId, reason: Option<String>) -> Result<User> {
        self.set_blocked(actor, id, true, reason).await
    }

    /// Unblocks a user.
    ///
    /// # Errors
    /// As [`AdminService::block_user`].
    pub async fn unblock_user(&self, actor: &Actor, id: UserId, reason: Option<String>) -> Result<User> {
        self.set_blocked(actor, id, false, reason).await
    }

    async fn set_blocked(&self, actor: &Actor, id: UserId, blocked: bool, reason: Option<String>) -> Result<User> {
        if reason.as_ref().is_some_and(|r| r.chars().count() > MAX_REASON_LEN) {
            return Err(ServiceError::invalid("reason", format!("at most {MAX_REASON_LEN} characters")));
        }
        let user = self.user(id).await?;
        let now = self.clock.now();
        if blocked {
            self.end_sessions(actor, user.id, "user blocked", now).await?;
        }
        let user = self.store.set_user_blocked(&user.login, blocked, now).await?.ok_or_else(|| not_found(id))?;
        let kind = if blocked { AuditKind::UserBlocked } else { AuditKind::UserUnblocked };
        let mut event = AuditEvent::new(now, kind).user(user.id);
        if let Some(reason) = reason {
            event = event.detail(serde_json::json!({ "reason": reason }));
        }
        tracing::info!(user = %user.id, blocked, %actor, "user block changed");
        self.audit(actor, event).await;
        Ok(user)
    }

    /// Ends every live session of `user` as a logout would (back-channel
    /// logouts to the clients signed in under it), recorded with `by`.
    async fn end_sessions(&self, actor: &Actor, user: UserId, by: &str, now: time::OffsetDateTime) -> Result<()> {
        for session in self.store.list_sessions(user, now).await? {
            portico_identity::login::session::end(self.store.as_ref(), &session, by, Some(actor), now).await?;
        }
        Ok(())
    }

    /// Deactivates (or activates) a user on the provisioning system's word:
    /// deactivation ends every session as a logout would and revokes every
    /// grant, as a block does, but is a state of its own.
    async fn set_deactivated(&self, actor: &Actor, id: UserId, deactivated: bool) -> Result<User> {
        let user = self.user(id).await?;
        let now = self.clock.now();
        if deactivated {
            self.end_sessions(actor, user.id, "user deactivated", now).await?;
        }
        let user = self.store.set_user_deactivated(id, deactivated, now).await?.ok_or_else(|| not_found(id))?;
        let kind = if deactivated { AuditKind::UserDeactivated } else { AuditKind::UserActivated };
        tracing::info!(user = %user.id, deactivated, %actor, "user deactivation changed");
        self.audit(actor, AuditEvent::new(now, kind).user(user.id)).await;
        Ok(user)
    }

    /// Removes a user with their grants, tokens and sessions; the audit
    /// log keeps their events.
    ///
    /// # Errors
    /// `user_not_found`; the store failed.
    pub async fn delete_user(&self, actor: &Actor, id: UserId) -> Result<()> {
        let user = self.user(id).await?;
        let now = self.clock.now();
        self.end_sessions(actor, user.id, "user deleted", now).await?;
        if !self.store.delete_user(id).await? {
            return Err(not_found(id));
        }
        let event =
            AuditEvent::new(now, AuditKind::UserDeleted).user(id).detail(serde_json::json!({ "login": user.login }));
        self.audit(actor, event).await;
        Ok(())
    }

    /// A user's live sessions, newest first, each with the clients signed
    /// in under it (by id, once each).
    ///
    /// # Errors
    /// `user_not_found`; the store failed.
    pub async fn sessions(&self, id: UserId) -> Result<Vec<(SsoSession, Vec<String>)>> {
        let user = self.user(id).await?;
        let sessions = self.store.list_sessions(user.id, self.clock.now()).await?;
        let mut found = Vec::with_capacity(sessions.len());
        for session in sessions {
            let grants = self.store.list_session_grants(session.id).await?;
            let mut clients: Vec<String> = grants.iter().map(|g| g.client_id.to_string()).collect();
            clients.sort();
            clients.dedup();
            found.push((session, clients));
        }
        Ok(found)
    }

    /// Makes a user an operator with `role`, or (`None`) no operator.
    ///
    /// # Errors
    /// `user_not_found`; the store failed.
    pub async fn set_operator_role(&self, actor: &Actor, id: UserId, role: Option<OperatorRole>) -> Result<()> {
        let now = self.clock.now();
        if !self.store.set_operator_role(id, role, now).await? {
            return Err(not_found(id));
        }
        let detail = serde_json::json!({ "role": role.map(OperatorRole::as_str) });
        self.audit(actor, AuditEvent::new(now, AuditKind::OperatorRoleSet).user(id).detail(detail)).await;
        Ok(())
    }

    /// Removes a user on the provisioning system's word: never an operator;
    /// with `if_match`, only when the user is at a revision it names when
    /// the removal starts.
    ///
    /// # Errors
    /// `Forbidden` for an operator; `Stale` for a revision `if_match` does
    /// not name; as [`AdminService::delete_user`].
    pub async fn deprovision_user(&self, actor: &Actor, id: UserId, if_match: Option<&[u64]>) -> Result<()> {
        self.refuse_operator(id).await?;
        check_revision(&format!("the user {id}"), if_match, self.user(id).await?.revision)?;
        self.delete_user(actor, id).await
    }

    /// Operators are managed by operators only: the provisioning system
    /// (SCIM) neither changes nor removes a user who holds an operator role,
    /// or its token would take the console over (a new password and phone,
    /// then a sign-in).
    async fn refuse_operator(&self, id: UserId) -> Result<()> {
        match self.store.operator_role(id).await? {
            Some(role) => Err(ServiceError::Forbidden(format!(
                "the user is an operator of the console (role {}): operators are changed and removed by \
                 operators only, in the console or the admin API",
                role.as_str()
            ))),
            None => Ok(()),
        }
    }

    /// Whether an operator with the role `caller` may act on user `id`:
    /// not when `id` is an operator of a higher role (support does not
    /// block, unblock or sign out an admin).
    ///
    /// # Errors
    /// `Forbidden` naming both roles; the store failed.
    pub async fn may_act_on(&self, caller: OperatorRole, id: UserId) -> Result<()> {
        match self.store.operator_role(id).await? {
            Some(role) if role > caller => Err(ServiceError::Forbidden(format!(
                "the user is an operator with the {} role, above the caller's {} role: ask an operator with the {} role",
                role.as_str(),
                caller.as_str(),
                role.as_str()
            ))),
            _ => Ok(()),
        }
    }

    /// The user's operator role, if any.
    ///
    /// # Errors
    /// `user_not_found`; the store failed.
    pub async fn operator_role(&self, id: UserId) -> Result<Option<OperatorRole>> {
        let user = self.user(id).await?;
        Ok(self.store.operator_role(user.id).await?)
    }

    /// A user's live grants (what each client holds: its refresh token and
    /// access tokens), newest first.
    ///
    /// # Errors
    /// `user_not_found`; the store failed.
    pub async fn grants(&self, id: UserId) -> Result<Vec<Grant>> {
        let user = self.user(id).await?;
        Ok(self.store.list_user_grants(user.id).await?)
    }

    /// Revokes one grant of a user: the client's refresh token and access
    /// tokens stop working at once.
    ///
    /// # Errors
    /// `grant_not_found` (also when it is another user's or revoked
    /// already); the store failed.
    pub async fn revoke_grant(&self, actor: &Actor, id: UserId, grant: GrantId) -> Result<()> {
        let gone = || ServiceError::NotFound("grant_not_found", format!("the user has no live grant {grant}"));
        let found = self.store.find_grant(grant).await?.filter(|g| g.user_id == id && g.revoked_at.is_none());
        let found = found.ok_or_else(gone)?;
        let now = self.clock.now();
        if !self.store.revoke_grant(grant, now).await? {
            return Err(gone());
        }
        portico_identity::tokens::count_revocation("grant", "operator", 1);
        let event = AuditEvent::new(now, AuditKind::GrantRevoked)
            .user(id)
            .client(&found.client_id)
            .detail(serde_json::json!({ "grant": grant }));
        self.audit(actor, event).await;
        Ok(())
    }

    /// A user's passkeys, oldest first.
    ///
    /// # Errors
    /// `user_not_found`; the store failed.
    pub async fn passkeys(&self, id: UserId) -> Result<Vec<portico_model::passkey::Passkey>> {
        let user = self.user(id).await?;
        Ok(self.store.passkeys_of(user.id).await?)
    }

    /// Removes one of a user's passkeys (it signs nobody in from now on),
    /// audited as `passkey.removed` with `actor`.
    ///
    /// # Errors
    /// `user_not_found`, `passkey_not_found`; the store failed.
    pub async fn remove_passkey(&self, actor: &Actor, id: UserId, passkey: uuid::Uuid) -> Result<()> {
        let user = self.user(id).await?;
        let event = AuditEvent::new(self.clock.now(), AuditKind::PasskeyRemoved)
            .user(user.id)
            .detail(serde_json::json!({ "passkey": passkey }))
            .by(actor);
        if !self.store.delete_passkey(user.id, passkey, &event).await? {
            return Err(ServiceError::NotFound("passkey_not_found", format!("the user has no passkey {passkey}")));
        }
        Ok(())
    }

    /// Ends one session of a user, as a logout would.
    ///
    /// # Errors
    /// `session_not_found` (also when it is another user's); the store failed.
    pub async fn end_session(&self, actor: &Actor, id: UserId, sid: SessionId) -> Result<()> {
        let now = self.clock.now();
        let gone = || ServiceError::NotFound("session_not_found", format!("the user has no live session {sid}"));
        let session = self.store.find_session_by_id(sid, now).await?.filter(|s| s.user_id == id).ok_or_else(gone)?;
        portico_identity::login::session::end(self.store.as_ref(), &session, "operator", Some(actor), now)
            .await?
            .ok_or_else(gone)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_policy_refuses_short_repeated_and_login_passwords() {
        assert!(check_password("correct horse", "anna").is_ok());
        assert!(check_password("short", "anna").unwrap_err().contains("10 to 256"));
        assert!(check_password(&"x".repeat(257), "anna").is_err());
        assert!(check_password("aaaaaaaaaaaa", "anna").unwrap_err().contains("repeated"));
        assert!(check_password("Anna.Smith1", "anna.smith1").unwrap_err().contains("login"));
    }

    #[test]
    fn problems_name_every_bad_field() {
        let mut problems = Vec::new();
        check_login("has space", &mut problems);
        check_phone(Some("12"), &mut problems);
        check_email(Some("anna@"), &mut problems);
        check_name(Some(" "), &mut problems);
        let places: Vec<&str> = problems.iter().map(|p| p.place.as_str()).collect();
        assert_eq!(places, ["login", "phone", "email", "name"]);
        assert_eq!(check_phone(Some("8 (900) 111-22-33"), &mut Vec::new()).as_deref(), Some("+79001112233"));
    }
}
