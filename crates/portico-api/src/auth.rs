//! Who may call the admin and internal APIs.
//!
//! - **Admin tokens** (`admin_tokens`, and `admin_token` named `admin`):
//!   each a bearer token with a name; the name goes into the audit log as
//!   the actor of every change made with it. Without any, the admin API is
//!   off and answers 404 `admin_api_disabled`.
//! - **The internal token** (`internal_token`): the bank's own systems.
//!   Without it, the internal API answers 404 `internal_api_disabled`.
//!
//! - **Operators** (Portico users with an operator role) call the admin
//!   API with an access token Portico issued them for the console, while
//!   the admin API is on; the audit log names them `operator:<login>`.
//!
//! Tokens are kept only as SHA-256 digests and compared in constant time;
//! every configured token is compared, so the time taken does not say
//! which one nearly matched.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use portico_crypto::hash::BearerSecret;
use portico_model::audit::Actor;
use portico_tokens::Challenge;

use crate::error::ApiError;

/// An operator's role: what they may do through the admin API and the
/// console. Machines with an admin token are `Admin`.
pub use portico_model::user::OperatorRole as Role;

/// Who, besides the admin tokens, may call the admin API: operators, with
/// an access token Portico issued them.
#[async_trait::async_trait]
pub trait OperatorAuthority: Send + Sync {
    /// The operator a bearer access token belongs to (the console's own
    /// use); `None` when it is not an operator's (not valid, bound to a key
    /// or certificate, not issued for operating Portico, or its user holds
    /// no operator role).
    ///
    /// # Errors
    /// 503 when the store cannot say.
    async fn operator(&self, access_token: &str) -> Result<Option<Admin>, ApiError>;

    /// The operator behind a call of the admin API, whose access token is
    /// taken as every protected resource takes one: a bearer token, or a
    /// token bound to a DPoP key or a client certificate with its proof or
    /// certificate (RFC 9449, RFC 8705). Otherwise the challenge the call is
    /// refused with.
    ///
    /// # Errors
    /// 503 when the store cannot say.
    async fn operator_of(&self, request: &Parts) -> Result<Result<Admin, Challenge>, ApiError>;
}

/// A named admin token.
#[derive(Debug, Clone)]
struct NamedToken {
    name: String,
    secret: BearerSecret,
}

/// The bearer tokens of the admin and internal APIs.
#[derive(Default, Clone)]
pub struct ApiTokens {
    admin: Vec<NamedToken>,
    internal: Option<BearerSecret>,
    operators: Option<std::sync::Arc<dyn OperatorAuthority>>,
}

impl std::fmt::Debug for ApiTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiTokens")
            .field("admin", &self.admin)
            .field("internal", &self.internal)
            .field("operators", &self.operators.is_some())
            .finish()
    }
}

impl ApiTokens {
    /// `admin`: each admin token with its name; `internal`: the internal token.
    pub fn new<'a>(admin: impl IntoIterator<Item = (&'a str, &'a str)>, internal: Option<&str>) -> Self {
        let admin = admin
            .into_iter()
            .map(|(name, token)| NamedToken { name: name.to_owned(), secret: BearerSecret::new(token) })
            .collect();
        Self { admin, internal: internal.map(BearerSecret::new), operators: None }
    }

    /// Also accepts operators' access tokens, as `authority` says.
    #[must_use]
    pub fn with_operators(mut self, authority: std::sync::Arc<dyn OperatorAuthority>) -> Self {
        self.operators = Some(authority);
        self
    }

    /// The caller of an admin operation (`request`): an admin token, else
    /// an operator's access token, as [`OperatorAuthority::operator_of`]
    /// takes it.
    ///
    /// # Errors
    /// As [`ApiTokens::admin`], with the challenge of a refused operator's
    /// token; 503 when an operator cannot be looked up.
    pub async fn admin_or_operator(&self, request: &Parts) -> Result<Admin, ApiError> {
        let headers = &request.headers;
        let refused = match self.admin(headers) {
            Ok(admin) => return Ok(admin),
            Err(refused) => refused,
        };
        let (Some(operators), StatusCode::UNAUTHORIZED) = (&self.operators, refused.status()) else {
            return Err(refused);
        };
        // Only a JWT, in the Bearer or DPoP scheme, can be an operator's.
        let jwt = portico_tokens::presented(headers).is_some_and(|(_, token)| token.split('.').count() == 3)
            && authorization(headers).is_some_and(|value| value.trim().contains(' '));
        if !jwt {
            return Err(refused);
        }
        match operators.operator_of(request).await? {
            Ok(admin) => Ok(admin),
            Err(challenge) => Err(unauthorized_with("admin", challenge)),
        }
    }

    /// Whether any admin token is configured (the admin API is on).
    pub fn admin_enabled(&self) -> bool {
        !self.admin.is_empty()
    }

    /// The caller of an admin operation.
    ///
    /// # Errors
    /// 404 `admin_api_disabled` without admin tokens; 401 `unauthorized`
    /// when the request carries none of them.
    pub fn admin(&self, headers: &HeaderMap) -> Result<Admin, ApiError> {
        if self.admin.is_empty() {
            return Err(ApiError::not_found(
                "admin_api_disabled",
                "the admin API is off; set admin_token or admin_tokens (PORTICO_ADMIN_TOKEN) to turn it on",
            ));
        }
        let authorization = authorization(headers);
        let mut found = None;
        for token in &self.admin {
            if token.secret.authorizes(authorization) && found.is_none() {
                found = Some(token);
            }
        }
        match found {
            Some(token) => Ok(Admin { actor: Actor::AdminToken(token.name.clone()), role: Role::Admin }),
            None => Err(unauthorized("admin", headers)),
        }
    }

    /// Checks the internal token.
    ///
    /// # Errors
    /// 404 `internal_api_disabled` without an internal token; 401
    /// `unauthorized` when the request does not carry it.
    pub fn internal(&self, headers: &HeaderMap) -> Result<Internal, ApiError> {
        let Some(secret) = &self.internal else {
            return Err(ApiError::not_found(
                "internal_api_disabled",
                "the internal API is off; set internal_token (PORTICO_INTERNAL_TOKEN) to turn it on",
            ));
        };
        if secret.authorizes(authorization(headers)) { Ok(Internal) } else { Err(unauthorized("internal", headers)) }
    }

    /// Whether the request carries the internal token (for routes that
    /// answer a refusal in their own contract's words).
    pub fn is_internal(&self, headers: &HeaderMap) -> bool {
        self.internal.as_ref().is_some_and(|secret| secret.authorizes(authorization(headers)))
    }
}

fn authorization(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok())
}

fn unauthorized(which: &str, headers: &HeaderMap) -> ApiError {
    unauthorized_with(which, Challenge::for_request(headers, false))
}

fn unauthorized_with(which: &str, challenge: Challenge) -> ApiError {
    let message = match challenge {
        Challenge::DpopInvalidProof => "the access token is bound to a DPoP key: send it as Authorization: DPoP \
                                        <token> with one fresh DPoP proof of that key for this method and address"
            .to_owned(),
        _ => format!("the {which} token is missing or wrong; send it as Authorization: Bearer <token>"),
    };
    ApiError::Unauthorized(message, challenge)
}

/// An API state that holds the tokens.
pub trait HasApiTokens {
    fn api_tokens(&self) -> &ApiTokens;
}

impl<T: HasApiTokens> HasApiTokens for Arc<T> {
    fn api_tokens(&self) -> &ApiTokens {
        (**self).api_tokens()
    }
}

/// The caller of an admin operation: who they are (for the audit log) and
/// what they may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admin {
    pub actor: Actor,
    pub role: Role,
}

impl Admin {
    /// The caller, if their role allows `needed`.
    ///
    /// # Errors
    /// 403 `forbidden` naming the role needed.
    pub fn require(&self, needed: Role) -> Result<&Self, ApiError> {
        if self.role >= needed {
            Ok(self)
        } else {
            Err(ApiError::forbidden(format!(
                "this operation needs the {} role; the caller's role is {}",
                needed.as_str(),
                self.role.as_str()
            )))
        }
    }
}

/// As an extractor, `Admin` admits only callers with the admin role (an
/// admin token, or an operator with the role `admin`): 403 for `support`.
impl<S: HasApiTokens + Send + Sync> FromRequestParts<S> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let caller = state.api_tokens().admin_or_operator(parts).await?;
        caller.require(Role::Admin)?;
        Ok(caller)
    }
}

/// A caller with at least the support role: what support staff may do
/// (read users, sessions and the audit log; block and unblock).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support(pub Admin);

impl<S: HasApiTokens + Send + Sync> FromRequestParts<S> for Support {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(state.api_tokens().admin_or_operator(parts).await?))
    }
}

/// A caller with the internal token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Internal;

impl<S: HasApiTokens + Send + Sync> FromRequestParts<S> for Internal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        state.api_tokens().internal(&parts.headers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(authorization: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, authorization.parse().unwrap());
        headers
    }

    #[test]
    fn each_admin_token_names_its_actor() {
        let tokens = ApiTokens::new([("ci", "ci-token-0123456789abcdef"), ("ops", "ops-token-0123456789abcdef")], None);
        let admin = tokens.admin(&with("Bearer ops-token-0123456789abcdef")).unwrap();
        assert_eq!(admin.actor, Actor::AdminToken("ops".into()));
        assert_eq!(tokens.admin(&with("bearer ci-token-0123456789abcdef")).unwrap().actor.to_string(), "token:ci");
        let refused = tokens.admin(&with("Bearer ops-token-0123456789abcdeX")).unwrap_err();
        assert_eq!((refused.status(), refused.body().code), (StatusCode::UNAUTHORIZED, "unauthorized"));
        assert_eq!(tokens.admin(&HeaderMap::new()).unwrap_err().body().code, "unauthorized");
    }

    #[test]
    fn an_api_without_its_token_is_off() {
        let tokens = ApiTokens::default();
        assert_eq!(tokens.admin(&with("Bearer x")).unwrap_err().body().code, "admin_api_disabled");
        assert_eq!(tokens.internal(&with("Bearer x")).unwrap_err().body().code, "internal_api_disabled");
        assert!(!tokens.is_internal(&with("Bearer x")));
    }

    #[test]
    fn support_may_not_do_what_needs_admin() {
        let support = Admin { actor: Actor::Operator("alice".into()), role: Role::Support };
        assert_eq!(support.require(Role::Support).unwrap(), &support);
        assert_eq!(support.require(Role::Admin).unwrap_err().status(), StatusCode::FORBIDDEN);
    }
}
