//! End users and their credentials.

use crate::{Result, Update};
use async_trait::async_trait;
use portico_model::ids::UserId;
use portico_model::user::{OperatorRole, User};
use time::OffsetDateTime;

#[async_trait]
pub trait UserRepository: Send + Sync {
    /// # Errors
    /// [`StorageError::Conflict`] when the login is taken.
    async fn create_user(&self, user: &User) -> Result<()>;
    /// # Errors
    /// Only when the store fails.
    async fn find_user(&self, id: UserId) -> Result<Option<User>>;
    /// # Errors
    /// Only when the store fails.
    async fn find_user_by_login(&self, login: &str) -> Result<Option<User>>;
    /// Every user with this (normalized, E.164) phone number, in login order.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_users_by_phone(&self, phone: &str) -> Result<Vec<User>>;
    /// # Errors
    /// Only when the store fails.
    async fn list_users(&self) -> Result<Vec<User>>;
    /// Blocks or unblocks a user. Blocking also revokes every grant of the
    /// user and ends the user's SSO sessions, in one transaction. Returns the
    /// user, or `None` when the login is unknown.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn set_user_blocked(&self, login: &str, blocked: bool, now: OffsetDateTime) -> Result<Option<User>>;
    /// Deactivates or activates a user on the provisioning system's word,
    /// apart from an operator's block. Deactivating also revokes every
    /// grant of the user and ends the user's SSO sessions, in one
    /// transaction, as blocking does. Returns the user, or `None` when
    /// there is no such user.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn set_user_deactivated(&self, id: UserId, deactivated: bool, now: OffsetDateTime) -> Result<Option<User>>;
    /// Replaces what an operator may change of a user: login, password
    /// hash, phone, e-mail, name, whether phone login is on and the
    /// provisioning system's attributes (never the id, the block, the
    /// deactivation or the creation time), if the stored user is still at
    /// `user.revision`; the stored revision then goes one up.
    ///
    /// # Errors
    /// [`StorageError::Conflict`] when the new login is another user's.
    async fn update_user(&self, user: &User) -> Result<Update>;
    /// Removes a user with everything of theirs: grants (and so their
    /// tokens), sessions, consents, remembered devices, employee records.
    /// The audit log keeps their events. Returns whether the user existed.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn delete_user(&self, id: UserId) -> Result<bool>;
    /// The users matching every condition of `query`, in login order, from
    /// after `query.after`, at most `query.limit`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn search_users(&self, query: &UserQuery) -> Result<Vec<User>>;
    /// How many users match the conditions of `query` (its `after`,
    /// `offset` and `limit` aside).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn count_users(&self, query: &UserQuery) -> Result<u64>;
    /// The user's operator role, if they are an operator.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn operator_role(&self, id: UserId) -> Result<Option<OperatorRole>>;
    /// Makes the user an operator with `role`, or (`None`) no operator.
    /// Returns whether the user exists.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn set_operator_role(&self, id: UserId, role: Option<OperatorRole>, now: OffsetDateTime) -> Result<bool>;
}

/// How a text field is matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextMatch {
    /// Exactly this value.
    Is(String),
    /// Values that start with this.
    StartsWith(String),
}

/// Which users to find, a page at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserQuery {
    /// Matched against the login, or against its key
    /// ([`portico_model::login_name::key`]): `IVAN` finds `ivan`, as SCIM's
    /// `userName` (not case-exact, RFC 7643 §4.1.1) and people expect.
    pub login: Option<TextMatch>,
    /// Matched against the normalized (E.164) phone.
    pub phone: Option<TextMatch>,
    /// Matched with ASCII letters in either case (`Anna@Example.COM` finds
    /// `anna@example.com`, as SCIM's `emails.value`, not case-exact, and
    /// people expect); other letters as they are, alike on both backends.
    pub email: Option<TextMatch>,
    /// Only blocked (`true`) or only unblocked (`false`) users.
    pub blocked: Option<bool>,
    /// Only users the provisioning system deactivated (`true`) or not.
    pub deactivated: Option<bool>,
    /// The last login of the previous page.
    pub after: Option<String>,
    /// Matches to skip first (for clients that page by index).
    pub offset: u32,
    pub limit: u32,
}

/// One text condition of a [`UserQuery`]: the value in any of these
/// columns (each with the value to compare it with).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextCondition {
    pub tests: Vec<(&'static str, String)>,
    /// Whether the column starts with the value, rather than equals it.
    pub prefix: bool,
    /// Whether the column is compared with its ASCII letters in lower case
    /// (the value is given so already).
    pub ascii_lowercase: bool,
}

impl UserQuery {
    /// The query's text conditions, every one of which a user matches. A
    /// login matches as it is or by its key (`IVAN` finds `ivan`).
    pub fn text_conditions(&self) -> Vec<TextCondition> {
        let mut conditions = Vec::new();
        for (column, matched) in [("login", &self.login), ("phone", &self.phone), ("email", &self.email)] {
            let Some(matched) = matched else { continue };
            let (TextMatch::Is(value) | TextMatch::StartsWith(value)) = matched;
            let ascii_lowercase = column == "email";
            let value = if ascii_lowercase { value.to_ascii_lowercase() } else { value.clone() };
            let key = if column == "login" { portico_model::login_name::key(&value).ok() } else { None };
            let mut tests = vec![(column, value)];
            if let Some(key) = key {
                tests.push(("login_key", key));
            }
            let prefix = matches!(matched, TextMatch::StartsWith(_));
            conditions.push(TextCondition { tests, prefix, ascii_lowercase });
        }
        conditions
    }
}

impl Default for UserQuery {
    fn default() -> Self {
        Self {
            login: None,
            phone: None,
            email: None,
            blocked: None,
            deactivated: None,
            after: None,
            offset: 0,
            limit: 50,
        }
    }
}

/// How users without a login key get theirs (users made before login
/// keys), worked out once for both backends.
#[derive(Debug, Default)]
pub struct LoginKeyPlan<Id> {
    /// The key to store for each user who gets one.
    pub keys: Vec<(Id, String)>,
    /// Each user left without a key, with why (the same login as an older
    /// user's, or no valid login): they keep signing in by their login
    /// exactly as stored, until an operator renames them.
    pub unkeyed: Vec<(String, String)>,
}

impl<Id> LoginKeyPlan<Id> {
    /// The plan for `users` (oldest first: of two with the same key, the
    /// older gets it), given the keys other users hold already (`held`:
    /// key → that user's login).
    pub fn new(users: Vec<(Id, String)>, held: &std::collections::HashMap<String, String>) -> Self {
        let mut plan = Self { keys: Vec::new(), unkeyed: Vec::new() };
        let mut given: std::collections::HashMap<String, String> = std::collections::HashMap::new();
        for (id, login) in users {
            match portico_model::login_name::key(&login) {
                Err(problem) => plan.unkeyed.push((login, problem)),
                Ok(key) => match held.get(&key).or_else(|| given.get(&key)) {
                    Some(older) => plan.unkeyed.push((login, format!("the same login as {older:?}"))),
                    None => {
                        given.insert(key.clone(), login);
                        plan.keys.push((id, key));
                    }
                },
            }
        }
        plan
    }

    /// The keys the users would get, to ask the store who holds them.
    pub fn candidates(users: &[(Id, String)]) -> Vec<String> {
        users.iter().filter_map(|(_, login)| portico_model::login_name::key(login).ok()).collect()
    }

    /// Says, at every start, which users are left without a key and why.
    pub fn report(&self) {
        for (login, why) in &self.unkeyed {
            tracing::warn!(
                login = login.as_str(),
                problem = why.as_str(),
                "this login is compared by its exact form only; rename the user (admin API, console or SCIM)"
            );
        }
    }
}

/// Progress of giving `of` users their login keys, every 10,000.
pub fn report_login_key_progress(done: usize, of: usize) {
    if done.is_multiple_of(10_000) {
        tracing::info!(done, of, "giving logins their comparison keys");
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::LoginKeyPlan;

    #[test]
    fn the_older_of_two_look_alikes_gets_the_key_and_held_keys_stay_held() {
        let users = vec![
            (1, "Olga".to_owned()),
            (2, "OLGA".to_owned()),
            (3, "IVAN".to_owned()),
            (4, "two words".to_owned()),
            (5, "anna".to_owned()),
        ];
        assert_eq!(LoginKeyPlan::candidates(&users), ["olga", "olga", "ivan", "anna"]);
        let held = HashMap::from([("ivan".to_owned(), "ivan".to_owned())]);
        let plan = LoginKeyPlan::new(users, &held);
        assert_eq!(plan.keys, [(1, "olga".to_owned()), (5, "anna".to_owned())]);
        let unkeyed: Vec<&str> = plan.unkeyed.iter().map(|(login, _)| login.as_str()).collect();
        assert_eq!(unkeyed, ["OLGA", "IVAN", "two words"]);
        assert_eq!(plan.unkeyed[0].1, r#"the same login as "Olga""#);
        assert_eq!(plan.unkeyed[1].1, r#"the same login as "ivan""#);
    }
}
