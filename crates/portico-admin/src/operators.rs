//! Operators on the admin API: a Portico user with an operator role calls
//! it with an access token issued to the operators' client (the console's,
//! `operator_client_id`). The token is checked completely (signature,
//! expiry, revocation), its user must exist, not be blocked and hold a
//! role — read on every call, so taking a role away takes effect at once.
//! Tokens issued to any other client never act for their user here: a
//! relying party holding an operator's token cannot operate Portico.
//! A call of the admin API presents the token as every protected resource
//! takes one, so a token bound to a DPoP key or a client certificate acts
//! with its proof or certificate (RFC 9449, RFC 8705); the console, which
//! holds the token itself, takes bearer tokens only.

use std::sync::Arc;

use axum::http::request::Parts;
use portico_api::auth::OperatorAuthority;
use portico_api::{Admin, ApiError, Challenge};
use portico_model::audit::Actor;
use portico_model::ids::{ClientId, UserId};
use portico_model::user::User;
use portico_storage::Storage;
use portico_tokens::{AccessClaims, AccessTokenError, TokenVerifier};
use uuid::Uuid;

pub struct Operators {
    pub tokens: Arc<TokenVerifier>,
    pub store: Arc<dyn Storage>,
    /// The client whose access tokens act for operators.
    pub client_id: ClientId,
}

#[async_trait::async_trait]
impl OperatorAuthority for Operators {
    async fn operator(&self, access_token: &str) -> Result<Option<Admin>, ApiError> {
        let claims = match self.tokens.check_access_token(access_token).await {
            Ok(claims) => claims,
            Err(AccessTokenError::Invalid | AccessTokenError::InvalidProof) => return Ok(None),
            Err(AccessTokenError::Unavailable(e)) => return Err(ApiError::storage("checking an operator", &e)),
        };
        // A bound token needs its proof or certificate, which only a call
        // of the admin API carries.
        if claims.cnf.is_some() {
            return Ok(None);
        }
        self.admin_for(&claims).await
    }

    async fn operator_of(&self, request: &Parts) -> Result<Result<Admin, Challenge>, ApiError> {
        let certificate = request.extensions.get::<portico_crypto::certificate::Presented>();
        let (method, path) = (request.method.as_str(), portico_api::called_path(request));
        let claims = match self.tokens.check_request(&request.headers, certificate, method, path).await {
            Ok(claims) => claims,
            Err(AccessTokenError::Unavailable(e)) => return Err(ApiError::storage("checking an operator", &e)),
            Err(error) => return Ok(Err(Challenge::for_access(&request.headers, &error))),
        };
        let refused = Challenge::for_request(&request.headers, false);
        Ok(self.admin_for(&claims).await?.ok_or(refused))
    }
}

impl Operators {
    /// The operator a checked access token acts for: one issued to the
    /// operators' client, of a user who may sign in and holds a role.
    async fn admin_for(&self, claims: &AccessClaims) -> Result<Option<Admin>, ApiError> {
        if claims.client_id != self.client_id.as_str() {
            return Ok(None);
        }
        let Ok(id) = Uuid::parse_str(&claims.sub).map(UserId::from) else {
            return Ok(None);
        };
        let storage = |e| ApiError::storage("checking an operator", &e);
        let Some(user) = self.store.find_user(id).await.map_err(storage)?.filter(User::may_sign_in) else {
            return Ok(None);
        };
        let role = self.store.operator_role(id).await.map_err(storage)?;
        Ok(role.map(|role| Admin { actor: Actor::Operator(user.login), role }))
    }
}
