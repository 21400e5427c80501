//! `GET /.well-known/openid-configuration` (OIDC Discovery 1.0) and the
//! same document at `GET /.well-known/oauth-authorization-server` (RFC
//! 8414), where OAuth clients, FAPI 2.0's among them, look for it.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use portico_model::client::AuthMethod;

use crate::IdentityState;

use portico_crypto::jose::{ASSERTION_ALGORITHMS, REQUEST_OBJECT_ALGORITHMS};

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
    metadata(&identity)
}

#[utoipa::path(
    get,
    path = "/.well-known/oauth-authorization-server",
    operation_id = "getAuthorizationServerMetadata",
    tag = "oauth2",
    description = "RFC 8414 §3: the same document as `/.well-known/openid-configuration` (its OpenID Connect \
                   members are registered authorization server metadata too). For an issuer with a path, RFC 8414 \
                   §3.1 puts this address before the path: the proxy in front maps it here.",
    responses((status = 200, description = "RFC 8414 authorization server metadata.", body = Object,
               headers(("Cache-Control" = String, description = "`public, max-age=3600`"),
                       ("Access-Control-Allow-Origin" = String, description = "`*`: public, for browser clients"))))
)]
pub async fn authorization_server_metadata(State(identity): State<IdentityState>) -> Response {
    metadata(&identity)
}

/// The one metadata document, under both names.
fn metadata(identity: &IdentityState) -> Response {
    let issuer = &identity.settings.issuer;
    // Certificate authentication and binding only when certificates can
    // reach Portico.
    let certificates = identity.settings.certificates();
    let methods: Vec<&str> =
        AuthMethod::ALL.into_iter().filter(|method| certificates.takes(*method)).map(AuthMethod::as_str).collect();
    let signing: Vec<&str> = identity.tokens.keys.algorithms().iter().map(|alg| alg.as_str()).collect();
    let mut document = json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/oauth2/authorize"),
        "token_endpoint": format!("{issuer}/oauth2/token"),
        "jwks_uri": format!("{issuer}/oauth2/jwks"),
        "userinfo_endpoint": format!("{issuer}/oauth2/userinfo"),
        "revocation_endpoint": format!("{issuer}/oauth2/revoke"),
        "introspection_endpoint": format!("{issuer}/oauth2/introspect"),
        "end_session_endpoint": format!("{issuer}/oauth2/logout"),
        "pushed_authorization_request_endpoint": format!("{issuer}/oauth2/par"),
        "require_pushed_authorization_requests": identity.settings.require_pushed_requests,
        "request_parameter_supported": true,
        "request_uri_parameter_supported": false,
        "request_object_signing_alg_values_supported": REQUEST_OBJECT_ALGORITHMS,
        "scopes_supported": portico_model::scope::OIDC_SCOPES,
        "response_types_supported": ["code"],
        "response_modes_supported": ["query", "form_post", "jwt", "query.jwt", "form_post.jwt"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": signing,
        "userinfo_signing_alg_values_supported": signing,
        "token_endpoint_auth_methods_supported": methods,
        "token_endpoint_auth_signing_alg_values_supported": ASSERTION_ALGORITHMS,
        "revocation_endpoint_auth_methods_supported": methods,
        "revocation_endpoint_auth_signing_alg_values_supported": ASSERTION_ALGORITHMS,
        "introspection_endpoint_auth_methods_supported": methods,
        "introspection_endpoint_auth_signing_alg_values_supported": ASSERTION_ALGORITHMS,
        "introspection_signing_alg_values_supported": signing,
        "code_challenge_methods_supported": ["S256"],
        "dpop_signing_alg_values_supported": portico_crypto::dpop::ALGORITHMS,
        "prompt_values_supported": ["none", "login", "consent", "select_account"],
        "ui_locales_supported": ["ru", "en"],
        "authorization_response_iss_parameter_supported": true,
        "backchannel_logout_supported": true,
        "backchannel_logout_session_supported": true,
        "claims_supported": [
            "sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", "amr", "sid",
            "name", "preferred_username", "email", "email_verified", "phone_number", "phone_number_verified"
        ],
    });
    // Beside the literal above, which is at the macro's limit: JARM, and
    // certificate-bound tokens (RFC 8705).
    document["authorization_signing_alg_values_supported"] = json!(signing);
    document["tls_client_certificate_bound_access_tokens"] = json!(certificates.presented);
    if let Some(base) = &identity.settings.mtls_aliases {
        // RFC 8705 §5: where clients reach the endpoints over mutual TLS.
        document["mtls_endpoint_aliases"] = json!({
            "token_endpoint": format!("{base}/oauth2/token"),
            "revocation_endpoint": format!("{base}/oauth2/revoke"),
            "introspection_endpoint": format!("{base}/oauth2/introspect"),
            "pushed_authorization_request_endpoint": format!("{base}/oauth2/par"),
            "userinfo_endpoint": format!("{base}/oauth2/userinfo"),
        });
    }
    if identity.settings.registration {
        document["registration_endpoint"] = json!(format!("{issuer}/oauth2/register"));
    }
    let response = Json(document);
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
