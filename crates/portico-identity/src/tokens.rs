//! Issuing tokens: the token response, refresh tokens, and the signing of
//! access tokens and id_tokens (whose claims, and whose checking, live in
//! `portico-tokens`).

use std::sync::Arc;

use portico_crypto::jwt::{Algorithm, SignError, SigningKey, TYP_ACCESS_TOKEN, TYP_ID_TOKEN};
use portico_model::client::Client;
use portico_model::ids::{GrantId, RefreshTokenHash};
use portico_model::oauth::{Grant, RefreshToken};
use portico_model::user::User;
use portico_storage::StorageError;
use portico_tokens::{AccessClaims, IdClaims, UserClaims};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::Identity;

/// `TokenResponseDTO`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = TokenResponseDTO)]
pub struct TokenResponse {
    /// The access token, a JWT signed with the server's algorithm (RS256 by default).
    pub access_token: String,
    /// `Bearer`, or `DPoP` for a token bound to the key of the request's DPoP proof.
    #[schema(pattern = "^(Bearer|DPoP)$", example = "Bearer")]
    pub token_type: String,
    /// Lifetime of the access token in seconds.
    #[schema(minimum = 0)]
    pub expires_in: i64,
    /// Granted scopes, separated by a space.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(example = "openid profile email phone")]
    pub scope: Option<String>,
    /// Opaque; a new one on every refresh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// A JWT signed with the server's algorithm (RS256 by default); present when the scope has `openid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_token: Option<String>,
    /// End of the refresh token's validity, a Unix timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_expires_at: Option<i64>,
}

/// What the tokens of one response say beyond their grant and user.
#[derive(Debug, Clone, Copy)]
pub struct Issue<'a> {
    /// The scope: the grant's or a narrower one.
    pub scope: &'a str,
    /// The authorization request's `nonce`, for the id_token.
    pub nonce: Option<&'a str>,
    /// What the access token is bound to.
    pub bound: Binding<'a>,
}

/// What an access token is bound to (RFC 7800 `cnf`): a DPoP key (RFC
/// 9449), a TLS client certificate (RFC 8705), or nothing (a bearer
/// token).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Binding<'a> {
    /// The RFC 7638 thumbprint of the DPoP key.
    pub jkt: Option<&'a str>,
    /// The SHA-256 thumbprint of the client certificate (`x5t#S256`).
    pub x5t: Option<&'a str>,
}

impl Binding<'_> {
    /// The token's `cnf`, when it is bound.
    pub fn confirmation(self) -> Option<portico_tokens::Confirmation> {
        (self.jkt.is_some() || self.x5t.is_some()).then(|| portico_tokens::Confirmation {
            jkt: self.jkt.map(str::to_owned),
            x5t_s256: self.x5t.map(str::to_owned),
        })
    }
}

/// A new refresh token: the value for the client and the row for storage.
pub struct NewRefreshToken {
    pub value: String,
    pub row: RefreshToken,
}

impl NewRefreshToken {
    pub fn generate(grant_id: GrantId, now: OffsetDateTime, ttl: time::Duration) -> Self {
        let value = portico_crypto::random::token();
        let row = RefreshToken {
            token_hash: RefreshTokenHash::new(portico_crypto::hash::token_hash(&value)),
            grant_id,
            created_at: now,
            expires_at: now + ttl,
        };
        Self { value, row }
    }
}

/// The keys a client's tokens are signed with: its access token's and its
/// id_token's (the same key when the algorithms are).
pub struct IssueKeys {
    pub access: Arc<SigningKey>,
    pub id: Arc<SigningKey>,
}

impl Identity {
    /// The algorithm `chosen` by a client, or the server's default.
    pub fn algorithm_for(&self, chosen: Option<Algorithm>) -> Algorithm {
        chosen.unwrap_or_else(|| self.tokens.keys.default_algorithm())
    }

    /// The key that signs with the algorithm `chosen` by a client (or the
    /// server's default) now.
    ///
    /// # Errors
    /// When storage fails or holds no active key of it.
    pub async fn signing_key_for(&self, chosen: Option<Algorithm>) -> Result<Arc<SigningKey>, StorageError> {
        self.tokens.keys.signing_key_for(self.algorithm_for(chosen)).await
    }

    /// The keys `client`'s tokens are signed with now.
    ///
    /// # Errors
    /// When storage fails or holds no active key of an algorithm.
    pub async fn issue_keys(&self, client: &Client) -> Result<IssueKeys, StorageError> {
        let security = &client.security;
        let access = self.signing_key_for(security.access_token_signed_response_alg).await?;
        let id_alg = self.algorithm_for(security.id_token_signed_response_alg);
        let id = if id_alg == access.algorithm() {
            Arc::clone(&access)
        } else {
            self.tokens.keys.signing_key_for(id_alg).await?
        };
        Ok(IssueKeys { access, id })
    }

    /// Signs the access token (and the id_token when the scope has
    /// `openid`) for `grant`, as `what` says, with the client's `keys`.
    ///
    /// Called before the code is redeemed or the refresh token rotated:
    /// the keys are read from storage and the tokens signed (by an HSM,
    /// which may be down) first, so that a response that cannot be made
    /// spends nothing. [`count_issued`] counts the response once it is
    /// final.
    ///
    /// # Errors
    /// [`SignError`] when a key held by an HSM cannot sign now.
    pub fn issue_tokens(
        &self,
        keys: &IssueKeys,
        grant: &Grant,
        user: &User,
        what: Issue<'_>,
        refresh: &NewRefreshToken,
    ) -> Result<TokenResponse, SignError> {
        let Issue { scope, nonce, bound } = what;
        let now = self.clock.now();
        let ttl = self.settings.access_token_ttl;
        let access = AccessClaims {
            iss: self.settings.issuer.clone(),
            sub: user.id.to_string(),
            aud: grant.client_id.to_string(),
            exp: (now + ttl).unix_timestamp(),
            iat: now.unix_timestamp(),
            jti: Uuid::new_v4().to_string(),
            client_id: grant.client_id.to_string(),
            scope: scope.to_owned(),
            gid: grant.id,
            cnf: bound.confirmation(),
        };
        let access_token = keys.access.try_sign(TYP_ACCESS_TOKEN, &access)?;
        let id_token = scope.split(' ').any(|s| s == "openid").then(|| {
            let claims = IdClaims {
                iss: access.iss.clone(),
                sub: access.sub.clone(),
                aud: access.aud.clone(),
                exp: access.exp,
                iat: access.iat,
                auth_time: grant.auth_time.unix_timestamp(),
                jti: Uuid::new_v4().to_string(),
                nonce: nonce.map(str::to_owned),
                at_hash: portico_crypto::jwt::token_hash(keys.id.algorithm(), &access_token),
                sid: grant.session_id,
                gid: Some(grant.id),
                amr: grant.amr.clone(),
                profile: UserClaims::for_scope(user, scope),
            };
            keys.id.try_sign(TYP_ID_TOKEN, &claims)
        });
        let id_token = id_token.transpose()?;
        Ok(TokenResponse {
            access_token,
            token_type: if bound.jkt.is_some() { "DPoP" } else { "Bearer" }.to_owned(),
            expires_in: ttl.whole_seconds(),
            scope: Some(scope.to_owned()),
            refresh_token: Some(refresh.value.clone()),
            id_token,
            refresh_expires_at: Some(refresh.row.expires_at.unix_timestamp()),
        })
    }
}

/// Counts a token response that was answered.
pub fn count_issued() {
    metrics::counter!("portico_tokens_issued_total").increment(1);
}

/// 401 without a body, with the RFC 6750 `invalid_token` challenge.
pub fn invalid_token() -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let mut response = axum::http::StatusCode::UNAUTHORIZED.into_response();
    response.headers_mut().insert(
        axum::http::header::WWW_AUTHENTICATE,
        axum::http::HeaderValue::from_static("Bearer error=\"invalid_token\""),
    );
    response
}

/// [`invalid_token`], or the challenge of how the request presented its
/// token ([`portico_tokens::Challenge`]).
pub fn invalid_token_for(headers: &axum::http::HeaderMap) -> axum::response::Response {
    refused_for(headers, &portico_tokens::AccessTokenError::Invalid)
}

/// 401 without a body, with the challenge of how the request presented
/// its token and why it was refused ([`portico_tokens::Challenge`]):
/// `Bearer` alone without a token, `invalid_dpop_proof` for a bad proof.
pub fn refused_for(
    headers: &axum::http::HeaderMap,
    error: &portico_tokens::AccessTokenError,
) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let mut response = axum::http::StatusCode::UNAUTHORIZED.into_response();
    let challenge = portico_tokens::Challenge::for_access(headers, error);
    response.headers_mut().insert(axum::http::header::WWW_AUTHENTICATE, challenge.header());
    response
}

/// Counts `count` revocations of `what` (`grant`, `access_token`) for
/// `reason` (`revocation_endpoint`, `code_replay`, `refresh_replay`,
/// `session_end`): `portico_revocations_total`.
pub fn count_revocation(what: &'static str, reason: &'static str, count: u64) {
    if count > 0 {
        metrics::counter!("portico_revocations_total", "what" => what, "reason" => reason).increment(count);
    }
}
