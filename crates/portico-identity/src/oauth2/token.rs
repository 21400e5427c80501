//! `POST /oauth2/token` (operation `token`): `authorization_code` and
//! `refresh_token` grants.
//!
//! A presented code or refresh token is read, checked, and then redeemed in
//! one storage transaction (spend it, store what it yields, record the audit
//! event), so the success path commits once.
//! - Of parallel presentations of one value at most one succeeds.
//! - A failed presentation (wrong verifier, client, `redirect_uri`, scope…)
//!   spends the value all the same.
//! - A code presented a second time revokes the grant its first use created.
//! - A refresh token presented after its rotation revokes its whole grant.
//! - A client that does not rotate (`refresh_token_rotation` off, or the
//!   `fapi2` profile) keeps its refresh token: each refresh answers it again.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::IntoResponse;
use axum::{Extension, Json};
use portico_model::audit::{AuditEvent, AuditKind};
use portico_model::client::Client;
use portico_model::ids::{ClientId, CodeHash, GrantId, RefreshTokenHash, UserId};
use portico_model::oauth::{Grant, Redemption, Rotation, is_code_verifier};
use portico_model::scope::ScopeSet;
use portico_model::user::User;
use serde_json::json;

use super::MAX_FORM_BODY;
use super::client_auth::{PendingJti, authenticate_deferred, remember, replayed_as};
use super::error::OAuthError;
use super::forms::{RefreshGrant, TokenRequest};
use super::params::read_form;
use crate::tokens::{Binding, Issue, NewRefreshToken, TokenResponse};
use crate::{Identity, IdentityState};
use portico_crypto::certificate::Presented as Certificate;

/// The endpoint's path (a DPoP proof's `htu`).
const PATH: &str = "/oauth2/token";

#[utoipa::path(
    post,
    path = "/oauth2/token",
    operation_id = "token",
    tag = "oauth2",
    request_body(content = crate::edge::TokenRequestDto, content_type = "application/x-www-form-urlencoded"),
    security(("clientBasic" = []), ()),
    responses(
        (status = 200, description = "The tokens.", body = TokenResponse,
         headers(("Cache-Control" = String, description = "`no-store`"))),
        crate::edge::ClientErrors
    )
)]
pub async fn token(
    State(identity): State<IdentityState>,
    certificate: Option<Extension<Certificate>>,
    headers: HeaderMap,
    body: Body,
) -> Result<impl IntoResponse, OAuthError> {
    let certificate = certificate.as_ref().map(|Extension(presented)| presented);
    let (grant_type, result) = handle(&identity, &headers, certificate, body).await;
    let outcome = match &result {
        Ok(_) => "issued",
        Err(error) => error.parts().1,
    };
    metrics::counter!("portico_token_requests_total", "grant_type" => grant_type, "outcome" => outcome).increment(1);
    let tokens = result?;
    let mut response =
        ([(header::CACHE_CONTROL, "no-store"), (header::PRAGMA, "no-cache")], Json(tokens)).into_response();
    crate::dpop::offer_nonce(&identity, &mut response);
    Ok(response)
}

/// The request's grant type as the metrics name it (`other` for any
/// Portico does not serve, `unknown` before it could be read), and the
/// answer.
async fn handle(
    identity: &Identity,
    headers: &HeaderMap,
    certificate: Option<&Certificate>,
    body: Body,
) -> (&'static str, Result<TokenResponse, OAuthError>) {
    let form = match read_form(headers, body, MAX_FORM_BODY).await {
        Ok(form) => form,
        Err(error) => return ("unknown", Err(error)),
    };
    let result = async {
        // The client is authenticated before the grant type is judged; an
        // assertion's jti is remembered with the grant's write.
        let (client, mut pending) =
            authenticate_deferred(identity, headers, certificate, &form.read()?, "/oauth2/token").await?;
        let read = TokenRequest::read(&form);
        let checked = match read {
            Ok(request) => match crate::mtls::binding_for(&client, certificate, headers.contains_key("dpop")) {
                // Without an assertion to remember, the proof's jti is
                // remembered in the grant's write instead (one write less).
                Ok(x5t) if pending.is_none() => {
                    let proof = crate::dpop::proof_for_deferred(identity, headers, &client, PATH);
                    if let Ok(Some(proof)) = &proof {
                        pending = Some(PendingJti::proof(proof, identity.clock.now()));
                    }
                    proof.map(|proof| (request, proof, x5t))
                }
                Ok(x5t) => {
                    let proof = crate::dpop::proof_for(identity, headers, &client, PATH).await;
                    proof.map(|proof| (request, proof, x5t))
                }
                Err(error) => Err(error),
            },
            Err(error) => Err(error),
        };
        let (request, proof, x5t) = match checked {
            Ok(checked) => checked,
            Err(error) => {
                remember(identity, pending).await?;
                return Err(error);
            }
        };
        let bound = Binding { jkt: proof.as_ref().map(|proof| proof.jkt.as_str()), x5t: x5t.as_deref() };
        match request {
            TokenRequest::AuthorizationCode(grant) => {
                let code = Presented { code: &grant.code, verifier: &grant.code_verifier };
                redeem_for(identity, &client, pending, code, grant.redirect_uri.as_deref(), bound).await
            }
            TokenRequest::RefreshToken(grant) => refresh(identity, &client, pending, &grant, bound).await,
        }
    }
    .await;
    (TokenRequest::label(&form), result)
}

/// The `authorization_code` grant for `client`, authenticated by the
/// caller: the token endpoint after client authentication, and clients
/// inside this process (the operator console), with the same checks,
/// the same single redemption and the same replay handling.
///
/// # Errors
/// `invalid_grant` for a code that is unknown, spent, expired, another
/// client's, or whose `redirect_uri` or PKCE verifier differs; a storage
/// failure as `server_error`.
pub async fn redeem(
    identity: &Identity,
    client: &Client,
    code: &str,
    verifier: &str,
    redirect_uri: Option<&str>,
) -> Result<TokenResponse, OAuthError> {
    redeem_for(identity, client, None, Presented { code, verifier }, redirect_uri, Binding::default()).await
}

/// A presented code and its PKCE verifier.
struct Presented<'a> {
    code: &'a str,
    verifier: &'a str,
}

/// [`redeem`], remembering the client assertion's `jti` (if any) in the
/// redemption's write, or on its own when the code is refused.
async fn redeem_for(
    identity: &Identity,
    client: &Client,
    pending: Option<PendingJti>,
    presented: Presented<'_>,
    redirect_uri: Option<&str>,
    bound: Binding<'_>,
) -> Result<TokenResponse, OAuthError> {
    let Presented { code, verifier } = presented;
    let now = identity.clock.now();
    let code_hash = CodeHash::new(portico_crypto::hash::token_hash(code));

    let Some(stored) = identity.store.find_code(&code_hash).await? else {
        remember(identity, pending).await?;
        return Err(OAuthError::invalid_grant("the authorization code is not valid"));
    };
    let (code, user) = (stored.code, stored.user);
    if stored.spent {
        remember(identity, pending).await?;
        let grant_id = identity.store.spend_code(&code_hash, now).await?.and_then(|c| c.grant_id);
        return Err(replayed_code(identity, code.user_id, &code.client_id, grant_id, now).await);
    }
    let problem = if code.client_id != client.client_id {
        Some("the authorization code was issued to another client")
    } else if code.expires_at <= now {
        Some("the authorization code has expired")
    } else if redirect_uri.is_some_and(|uri| uri != code.redirect_uri) {
        Some("redirect_uri differs from the authorization request")
    } else if !is_code_verifier(verifier) || !portico_crypto::hash::pkce_matches(&code.code_challenge, verifier) {
        Some("code_verifier does not match the code_challenge")
    } else if code.dpop_jkt.is_some() && code.dpop_jkt.as_deref() != bound.jkt {
        Some("the authorization code is bound to a DPoP key: send a proof of that key")
    } else {
        None
    };
    let user = match problem {
        Some(problem) => Err(OAuthError::invalid_grant(problem)),
        None => active(user),
    };
    let user = match user {
        Ok(user) => user,
        Err(error) => {
            remember(identity, pending).await?;
            identity.store.spend_code(&code_hash, now).await?;
            return Err(error);
        }
    };

    let grant = Grant {
        id: GrantId::now_v7(),
        client_id: client.client_id.clone(),
        user_id: user.id,
        scope: code.scope.clone(),
        auth_time: code.auth_time,
        created_at: now,
        revoked_at: None,
        amr: code.amr.clone(),
        session_id: code.session_id,
    };
    // The key first: once the code is redeemed, nothing may fail.
    let keys = match identity.issue_keys(client).await {
        Ok(keys) => keys,
        Err(error) => {
            remember(identity, pending).await?;
            return Err(error.into());
        }
    };
    let refresh = NewRefreshToken::generate(grant.id, now, identity.settings.refresh_token_ttl);
    let event = AuditEvent::new(now, AuditKind::TokenIssued)
        .user(user.id)
        .client(&client.client_id)
        .detail(json!({ "grant_id": grant.id, "scope": grant.scope }));
    // Signed before the code is spent: a key that cannot sign (an HSM
    // down) leaves the code good for the client's retry.
    let issue = Issue { scope: &grant.scope, nonce: code.nonce.as_deref(), bound };
    let response = match identity.issue_tokens(&keys, &grant, &user, issue, &refresh) {
        Ok(response) => response,
        Err(error) => {
            remember(identity, pending).await?;
            return Err(error.into());
        }
    };
    let proof = pending.as_ref().is_some_and(PendingJti::is_proof);
    let assertion = pending.map(PendingJti::into_jti);
    match identity.store.redeem_code_asserted(&code_hash, now, &grant, &refresh.row, &event, assertion.as_ref()).await?
    {
        Redemption::Redeemed => {}
        Redemption::Replay { grant_id } => {
            return Err(replayed_code(identity, user.id, &client.client_id, grant_id, now).await);
        }
        Redemption::AssertionReplayed => return Err(replayed_as(proof)),
    }
    crate::tokens::count_issued();
    Ok(response)
}

/// A code presented again: revoke the grant its first use created.
async fn replayed_code(
    identity: &Identity,
    user_id: UserId,
    client_id: &ClientId,
    grant_id: Option<GrantId>,
    now: time::OffsetDateTime,
) -> OAuthError {
    if let Some(grant_id) = grant_id {
        match identity.store.revoke_grant(grant_id, now).await {
            Ok(revoked) => crate::tokens::count_revocation("grant", "code_replay", u64::from(revoked)),
            Err(error) => return error.into(),
        }
    }
    let event = AuditEvent::new(now, AuditKind::CodeReplayed).user(user_id).client(client_id);
    identity.audit(event.detail(json!({ "grant_id": grant_id }))).await;
    OAuthError::invalid_grant("the authorization code was already used")
}

async fn refresh(
    identity: &Identity,
    client: &Client,
    pending: Option<PendingJti>,
    grant: &RefreshGrant,
    bound: Binding<'_>,
) -> Result<TokenResponse, OAuthError> {
    let presented = grant.refresh_token.as_str();
    let requested_scope = grant.scope.as_deref();
    let now = identity.clock.now();
    let hash = RefreshTokenHash::new(portico_crypto::hash::token_hash(presented));

    let Some(stored) = identity.store.find_refresh_token(&hash).await? else {
        remember(identity, pending).await?;
        return Err(OAuthError::invalid_grant("the refresh token is not valid"));
    };
    let (grant, user) = (stored.grant, stored.user);
    if stored.spent {
        remember(identity, pending).await?;
        return Err(replayed_refresh(identity, &grant, client, now).await);
    }
    let scope = match requested_scope {
        None => Ok(grant.scope.clone()),
        Some(text) => ScopeSet::parse(&grant.scope)
            .ok()
            .and_then(|granted| ScopeSet::parse(text).ok().filter(|set| set.is_subset_of(&granted)))
            .map(|set| set.to_string())
            .ok_or_else(|| OAuthError::invalid_scope("OAuth 2.0 Parameter: scope")),
    };
    let checked = if grant.client_id != client.client_id {
        Err(OAuthError::invalid_grant("the refresh token was issued to another client"))
    } else if stored.token.expires_at <= now {
        Err(OAuthError::invalid_grant("the refresh token has expired"))
    } else if grant.revoked_at.is_some() {
        Err(OAuthError::invalid_grant("the grant was revoked"))
    } else {
        match scope {
            Ok(scope) => active(user).map(|user| (user, scope)),
            Err(error) => Err(error),
        }
    };
    let (user, scope) = match checked {
        Ok(checked) => checked,
        Err(error) => {
            remember(identity, pending).await?;
            identity.store.spend_refresh_token(&hash, now).await?;
            return Err(error);
        }
    };

    // The key first: once the token is rotated, nothing may fail.
    let keys = match identity.issue_keys(client).await {
        Ok(keys) => keys,
        Err(error) => {
            remember(identity, pending).await?;
            return Err(error.into());
        }
    };
    let event = AuditEvent::new(now, AuditKind::TokenRefreshed).user(user.id).client(&client.client_id);
    let rotates = client.security.rotates_refresh_tokens();
    let successor = if rotates {
        NewRefreshToken::generate(grant.id, now, identity.settings.refresh_token_ttl)
    } else {
        // The refresh token stays good (the client's setting, or its
        // profile's: FAPI 2.0 §5.3.2.1): it is answered again as it is.
        NewRefreshToken { value: presented.to_owned(), row: stored.token }
    };
    // Signed before the token is rotated, as for codes.
    let response =
        match identity.issue_tokens(&keys, &grant, &user, Issue { scope: &scope, nonce: None, bound }, &successor) {
            Ok(response) => response,
            Err(error) => {
                remember(identity, pending).await?;
                return Err(error.into());
            }
        };
    if !rotates {
        remember(identity, pending).await?;
        identity.audit(event.detail(json!({ "grant_id": grant.id, "rotated": false }))).await;
        crate::tokens::count_issued();
        return Ok(response);
    }
    let event = event.detail(json!({ "grant_id": grant.id }));
    let proof = pending.as_ref().is_some_and(PendingJti::is_proof);
    let assertion = pending.map(PendingJti::into_jti);
    match identity.store.rotate_refresh_token_asserted(&hash, now, &successor.row, &event, assertion.as_ref()).await? {
        Rotation::Rotated => {}
        Rotation::Replay => return Err(replayed_refresh(identity, &grant, client, now).await),
        Rotation::GrantRevoked => return Err(OAuthError::invalid_grant("the grant was revoked")),
        Rotation::AssertionReplayed => return Err(replayed_as(proof)),
    }
    crate::tokens::count_issued();
    Ok(response)
}

/// A spent refresh token presented again: revoke its whole grant.
async fn replayed_refresh(
    identity: &Identity,
    grant: &Grant,
    client: &Client,
    now: time::OffsetDateTime,
) -> OAuthError {
    let revoked = match identity.store.revoke_grant(grant.id, now).await {
        Ok(revoked) => revoked,
        Err(error) => return error.into(),
    };
    crate::tokens::count_revocation("grant", "refresh_replay", u64::from(revoked));
    let event = AuditEvent::new(now, AuditKind::RefreshReplayed).user(grant.user_id).client(&client.client_id);
    identity.audit(event.detail(json!({ "grant_id": grant.id, "revoked": revoked }))).await;
    OAuthError::invalid_grant("the refresh token was already used; the grant is revoked")
}

/// The user a code or refresh token acts for (as read with it), unless
/// blocked or removed.
fn active(user: Option<User>) -> Result<User, OAuthError> {
    match user {
        Some(user) if user.may_sign_in() => Ok(user),
        Some(_) => Err(OAuthError::invalid_grant("the user is blocked")),
        None => Err(OAuthError::invalid_grant("the user no longer exists")),
    }
}
