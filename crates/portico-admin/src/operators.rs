//! Operators on the admin API: a Portico user with an operator role calls
//! it with an access token issued to the operators' client (the console's,
//! `operator_client_id`). The token is checked completely (signature,
//! expiry, revocation), its user must exist, not be blocked and hold a
//! role — read on every call, so taking a role away takes effect at once.
//! Tokens issued to any other client never act for their user here: a
//! relying party holding an operator's token cannot operate Portico.

use std::sync::Arc;

use portico_api::auth::OperatorAuthority;
use portico_api::{Admin, ApiError};
use portico_model::audit::Actor;
use portico_model::ids::{ClientId, UserId};
use portico_model::user::User;
use portico_storage::Storage;
use portico_tokens::{AccessTokenError, TokenVerifier};
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
        // A DPoP-bound token needs its proof, which an operator's bearer
        // header cannot carry.
        if claims.client_id != self.client_id.as_str() || claims.cnf.is_some() {
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
