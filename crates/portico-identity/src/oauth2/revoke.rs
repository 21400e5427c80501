//! `POST /oauth2/revoke` (operation `revokeToken`, RFC 7009).
//!
//! 200 without a body whenever the client authenticates, whatever the token:
//! - a refresh token of this client: its grant is revoked, and with it every
//!   access token issued along the grant;
//! - an access token of this client: that token is revoked;
//! - anything else (unknown, expired, another client's, an id_token): no
//!   effect, and nothing is revealed about it.
//!
//! `token_type_hint` is accepted and needs no trust: both kinds are tried.

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use portico_crypto::certificate::Presented;
use portico_crypto::jwt::TYP_ACCESS_TOKEN;
use portico_model::audit::{AuditEvent, AuditKind};
use portico_model::ids::RefreshTokenHash;
use serde_json::json;

use super::MAX_FORM_BODY;
use super::client_auth::authenticate;
use super::error::OAuthError;
use super::forms::RevokeRequest;
use super::params::read_form;
use crate::{Identity, IdentityState};
use portico_tokens::{AccessClaims, AccessTokenError};

#[utoipa::path(
    post,
    path = "/oauth2/revoke",
    operation_id = "revokeToken",
    tag = "oauth2",
    request_body(content = crate::edge::RevokeRequestDto, content_type = "application/x-www-form-urlencoded"),
    security(("clientBasic" = []), ()),
    responses(
        (status = 200, description = "Revoked, or nothing to revoke (unknown, expired or another client's token)."),
        crate::edge::ClientErrors
    )
)]
pub async fn revoke(
    State(identity): State<IdentityState>,
    certificate: Option<axum::Extension<Presented>>,
    headers: HeaderMap,
    body: Body,
) -> Result<(), OAuthError> {
    let identity: &Identity = &identity;
    let form = read_form(&headers, body, MAX_FORM_BODY).await?;
    let client = authenticate(identity, &headers, certificate.as_deref(), &form.read()?, "/oauth2/revoke").await?;
    let request: RevokeRequest = form.read()?;
    let token = request.token.as_str();
    let now = identity.clock.now();

    if token.matches('.').count() == 2 {
        match identity.tokens.verify_jwt::<AccessClaims>(token, TYP_ACCESS_TOKEN).await {
            Ok(claims) if client.client_id == claims.client_id.as_str() => {
                let expires_at = time::OffsetDateTime::from_unix_timestamp(claims.exp).unwrap_or(now);
                identity.store.revoke_access_token(&claims.jti, expires_at, now).await?;
                crate::tokens::count_revocation("access_token", "revocation_endpoint", 1);
                let event = AuditEvent::new(now, AuditKind::TokenRevoked).client(&client.client_id);
                identity.audit(event.detail(json!({ "kind": "access_token", "jti": claims.jti }))).await;
            }
            Ok(_) | Err(AccessTokenError::Invalid | AccessTokenError::InvalidProof) => {}
            Err(AccessTokenError::Unavailable(error)) => return Err(error.into()),
        }
        return Ok(());
    }

    let hash = RefreshTokenHash::new(portico_crypto::hash::token_hash(token));
    if let Some(grant) = identity.store.find_refresh_token(&hash).await?.map(|stored| stored.grant)
        && grant.client_id == client.client_id
        && identity.store.revoke_grant(grant.id, now).await?
    {
        crate::tokens::count_revocation("grant", "revocation_endpoint", 1);
        let event = AuditEvent::new(now, AuditKind::TokenRevoked).user(grant.user_id).client(&client.client_id);
        identity.audit(event.detail(json!({ "kind": "refresh_token", "grant_id": grant.id }))).await;
    }
    Ok(())
}
