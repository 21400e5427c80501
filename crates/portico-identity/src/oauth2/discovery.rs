//! `GET /.well-known/openid-configuration` (OIDC Discovery 1.0).

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use crate::IdentityState;

#[utoipa::path(
    get,
    path = "/.well-known/openid-configuration",
    operation_id = "getOpenIdConfiguration",
    tag = "oauth2",
    responses((status = 200, description = "OIDC Discovery 1.0 provider metadata.", body = Object))
)]
pub async fn openid_configuration(State(identity): State<IdentityState>) -> Json<Value> {
    let issuer = &identity.settings.issuer;
    Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/oauth2/authorize"),
        "token_endpoint": format!("{issuer}/oauth2/token"),
        "jwks_uri": format!("{issuer}/oauth2/jwks"),
        "userinfo_endpoint": format!("{issuer}/oauth2/userinfo"),
        "revocation_endpoint": format!("{issuer}/oauth2/revoke"),
        "scopes_supported": portico_model::scope::OIDC_SCOPES,
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "revocation_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "code_challenge_methods_supported": ["S256"],
        "prompt_values_supported": ["none", "login", "consent"],
        "claims_supported": [
            "sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "at_hash",
            "name", "preferred_username", "email", "email_verified", "phone_number", "phone_number_verified"
        ],
    }))
}
