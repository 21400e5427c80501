//! `POST /oauth2/token` (operation `token`): `authorization_code` and
//! `refresh_token` grants.
//!
//! Codes and refresh tokens are spent first (atomically in storage) and
//! checked after, so a value presented twice in parallel is honoured at most
//! once, and a failed presentation burns it.
//! - A code presented a second time revokes the grant its first use created.
//! - A refresh token presented after its rotation revokes its whole grant.

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use portico_model::audit::{AuditEvent, AuditKind};
use portico_model::client::Client;
use portico_model::oauth::{CodeUse, Grant, RefreshUse, is_code_verifier};
use portico_model::scope::ScopeSet;
use portico_model::user::User;
use serde_json::json;
use uuid::Uuid;

use super::MAX_FORM_BODY;
use super::client_auth::authenticate;
use super::error::OAuthError;
use super::params::{Params, read_form};
use crate::tokens::{NewRefreshToken, TokenResponse};
use crate::{Identity, IdentityState};

pub async fn token(State(identity): State<IdentityState>, headers: HeaderMap, body: Body) -> Response {
    match handle(&identity, &headers, body).await {
        Ok(tokens) => {
            let mut response = Json(tokens).into_response();
            response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response.headers_mut().insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
            response
        }
        Err(error) => error.into_response(),
    }
}

async fn handle(identity: &Identity, headers: &HeaderMap, body: Body) -> Result<TokenResponse, OAuthError> {
    let params = read_form(headers, body, MAX_FORM_BODY).await?;
    let client = authenticate(identity, headers, &params).await?;
    match params.required("grant_type")? {
        "authorization_code" => exchange_code(identity, &client, &params).await,
        "refresh_token" => refresh(identity, &client, &params).await,
        _ => Err(OAuthError::unsupported_grant_type()),
    }
}

async fn exchange_code(identity: &Identity, client: &Client, params: &Params) -> Result<TokenResponse, OAuthError> {
    let code = params.required("code")?;
    let verifier = params.required("code_verifier")?;
    let redirect_uri = params.single("redirect_uri")?;
    let now = identity.clock.now();
    let code_hash = portico_crypto::hash::token_hash(code);

    let code = match identity.store.consume_code(&code_hash, now).await? {
        None => return Err(OAuthError::invalid_grant("the authorization code is not valid")),
        Some(CodeUse::Replay(code)) => {
            if let Some(grant_id) = code.grant_id {
                identity.store.revoke_grant(grant_id, now).await?;
            }
            let event = AuditEvent::new(now, AuditKind::CodeReplayed).user(code.user_id).client(&code.client_id);
            identity.audit(event.detail(json!({ "grant_id": code.grant_id }))).await;
            return Err(OAuthError::invalid_grant("the authorization code was already used"));
        }
        Some(CodeUse::First(code)) => code,
    };
    if code.client_id != client.client_id {
        return Err(OAuthError::invalid_grant("the authorization code was issued to another client"));
    }
    if code.expires_at <= now {
        return Err(OAuthError::invalid_grant("the authorization code has expired"));
    }
    if redirect_uri.is_some_and(|uri| uri != code.redirect_uri) {
        return Err(OAuthError::invalid_grant("redirect_uri differs from the authorization request"));
    }
    if !is_code_verifier(verifier) || !portico_crypto::hash::pkce_matches(&code.code_challenge, verifier) {
        return Err(OAuthError::invalid_grant("code_verifier does not match the code_challenge"));
    }
    let user = active_user(identity, code.user_id).await?;

    let grant = Grant {
        id: Uuid::now_v7(),
        client_id: client.client_id.clone(),
        user_id: user.id,
        scope: code.scope.clone(),
        auth_time: code.auth_time,
        created_at: now,
        revoked_at: None,
    };
    let refresh = NewRefreshToken::generate(grant.id, now, identity.settings.refresh_token_ttl);
    if !identity.store.create_grant_for_code(&code_hash, &grant, &refresh.row).await? {
        return Err(OAuthError::invalid_grant("the authorization code was already used"));
    }
    let tokens = identity.issue_tokens(&grant, &user, &grant.scope, code.nonce.as_deref(), &refresh).await?;
    let event = AuditEvent::new(now, AuditKind::TokenIssued).user(user.id).client(&client.client_id);
    identity.audit(event.detail(json!({ "grant_id": grant.id, "scope": grant.scope }))).await;
    Ok(tokens)
}

async fn refresh(identity: &Identity, client: &Client, params: &Params) -> Result<TokenResponse, OAuthError> {
    let presented = params.required("refresh_token")?;
    let requested_scope = params.single("scope")?;
    let now = identity.clock.now();

    let (token, grant) =
        match identity.store.use_refresh_token(&portico_crypto::hash::token_hash(presented), now).await? {
            None => return Err(OAuthError::invalid_grant("the refresh token is not valid")),
            Some(RefreshUse::Replay { grant_id }) => {
                let revoked = identity.store.revoke_grant(grant_id, now).await?;
                let event = AuditEvent::new(now, AuditKind::RefreshReplayed).client(&client.client_id);
                identity.audit(event.detail(json!({ "grant_id": grant_id, "revoked": revoked }))).await;
                return Err(OAuthError::invalid_grant("the refresh token was already used; the grant is revoked"));
            }
            Some(RefreshUse::Current { token, grant }) => (token, grant),
        };
    if grant.client_id != client.client_id {
        return Err(OAuthError::invalid_grant("the refresh token was issued to another client"));
    }
    if token.expires_at <= now {
        return Err(OAuthError::invalid_grant("the refresh token has expired"));
    }
    if grant.revoked_at.is_some() {
        return Err(OAuthError::invalid_grant("the grant was revoked"));
    }
    let scope = match requested_scope {
        None => grant.scope.clone(),
        Some(text) => {
            let granted = ScopeSet::parse(&grant.scope).map_err(|_| OAuthError::invalid_scope("scope"))?;
            let requested = ScopeSet::parse(text)
                .ok()
                .filter(|set| set.is_subset_of(&granted))
                .ok_or_else(|| OAuthError::invalid_scope("OAuth 2.0 Parameter: scope"))?;
            requested.to_string()
        }
    };
    let user = active_user(identity, grant.user_id).await?;

    let successor = NewRefreshToken::generate(grant.id, now, identity.settings.refresh_token_ttl);
    if !identity.store.insert_refresh_token(&successor.row).await? {
        return Err(OAuthError::invalid_grant("the grant was revoked"));
    }
    let tokens = identity.issue_tokens(&grant, &user, &scope, None, &successor).await?;
    let event = AuditEvent::new(now, AuditKind::TokenRefreshed).user(user.id).client(&client.client_id);
    identity.audit(event.detail(json!({ "grant_id": grant.id }))).await;
    Ok(tokens)
}

async fn active_user(identity: &Identity, id: Uuid) -> Result<User, OAuthError> {
    match identity.store.find_user(id).await? {
        Some(user) if !user.blocked => Ok(user),
        Some(_) => Err(OAuthError::invalid_grant("the user is blocked")),
        None => Err(OAuthError::invalid_grant("the user no longer exists")),
    }
}
