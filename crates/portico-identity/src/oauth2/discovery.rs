//! `GET /.well-known/openid-configuration` (OIDC Discovery 1.0).

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::IdentityState;

#[utoipa::path(
    get,
    path = "/.well-known/openid-configuration",
    operation_id = "getOpenIdConfiguration",
    tag = "oauth2",
    responses((status = 200, description = "OIDC Discovery 1.0 provider metadata.", body = Object,
               headers(("Cache-Control" = String, description = "`public, max-age=3600`"),
                       ("Access-Control-Allow-Origin" = String, description = "`*`: public, for browser clients"))))
)]
pub async fn openid_configuration(State(identity): State<IdentityState>) -> Response {
    let issuer = &identity.settings.issuer;
    let response = Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/oauth2/authorize"),
        "token_endpoint": format!("{issuer}/oauth2/token"),
        "jwks_uri": format!("{issuer}/oauth2/jwks"),
        "userinfo_endpoint": format!("{issuer}/oauth2/userinfo"),
        "revocation_endpoint": format!("{issuer}/oauth2/revoke"),
        "introspection_endpoint": format!("{issuer}/oauth2/introspect"),
        "end_session_endpoint": format!("{issuer}/oauth2/logout"),
        "scopes_supported": portico_model::scope::OIDC_SCOPES,
        "response_types_supported": ["code"],
        "response_modes_supported": ["query", "form_post"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": [identity.tokens.keys.default_algorithm().as_str()],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "revocation_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "introspection_signing_alg_values_supported": [identity.tokens.keys.default_algorithm().as_str()],
        "code_challenge_methods_supported": ["S256"],
        "prompt_values_supported": ["none", "login", "consent", "select_account"],
        "ui_locales_supported": ["ru", "en"],
        "authorization_response_iss_parameter_supported": true,
        "backchannel_logout_supported": true,
        "backchannel_logout_session_supported": true,
        "claims_supported": [
            "sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", "amr", "sid",
            "name", "preferred_username", "email", "email_verified", "phone_number", "phone_number_verified"
        ],
    }));
    public_document(response.into_response(), "public, max-age=3600")
}

/// A document every relying party may read, from a browser too: cached for
/// `cache_control`, readable cross-origin.
pub(crate) fn public_document(mut response: Response, cache_control: &'static str) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache_control));
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    response
}
