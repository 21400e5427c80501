//! Access tokens, id_tokens and refresh tokens: what they carry, how they are
//! issued, and how an access token is checked.
//!
//! Access tokens are RS256 JWTs with `typ: at+jwt` (RFC 9068). Besides the
//! registered claims they carry `client_id`, `scope` and `gid`, the grant
//! they belong to, so that revoking the grant (through its refresh token, a
//! replayed code or a blocked user) kills them without a per-token lookup.

use portico_crypto::jwt::{self, TYP_ACCESS_TOKEN, TYP_ID_TOKEN};
use portico_model::oauth::{Grant, RefreshToken};
use portico_model::user::User;
use portico_storage::StorageError;
use std::sync::Arc;

use crate::verified::VerifiedCache;
use portico_model::ids::{ClientId, GrantId, RefreshTokenHash, SessionId, UserId};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::Identity;

/// Claims of a Portico access token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessClaims {
    pub iss: String,
    pub sub: String,
    pub aud: String,
    pub exp: i64,
    pub iat: i64,
    pub jti: String,
    pub client_id: String,
    pub scope: String,
    /// The grant this token was issued along.
    pub gid: GrantId,
}

/// Claims of a Portico id_token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdClaims {
    pub iss: String,
    pub sub: String,
    pub aud: String,
    pub exp: i64,
    pub iat: i64,
    pub auth_time: i64,
    pub jti: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
    pub at_hash: String,
    /// The single sign-on session the grant was issued under (OpenID
    /// Connect Back-Channel Logout 1.0 §2.1): the same for every client the
    /// user signed in to from one login, and named again by the logout
    /// token when the session ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sid: Option<SessionId>,
    /// The grant the token was issued along: it ties the id_token to the
    /// access tokens of the same grant and lets revocation reach it.
    /// (Absent from id_tokens issued before sessions had ids, whose `sid`
    /// named the grant.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gid: Option<GrantId>,
    /// How the user authenticated (RFC 8176: `pwd`, `sms`, `otp`, `mfa`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub amr: Vec<String>,
    #[serde(flatten)]
    pub profile: UserClaims,
}

/// The user claims that the granted scopes allow (OIDC Core §5.4).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct UserClaims {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email_verified: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phone_number: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phone_number_verified: Option<bool>,
}

impl UserClaims {
    pub fn for_scope(user: &User, scope: &str) -> Self {
        let has = |s: &str| scope.split(' ').any(|x| x == s);
        let mut claims = Self::default();
        if has("profile") {
            claims.name = user.name.clone();
            claims.preferred_username = Some(user.login.clone());
        }
        if has("email") && user.email.is_some() {
            claims.email = user.email.clone();
            claims.email_verified = Some(true);
        }
        if has("phone") && user.phone.is_some() {
            claims.phone_number = user.phone.clone();
            claims.phone_number_verified = Some(true);
        }
        claims
    }
}

/// `TokenResponseDTO`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = TokenResponseDTO)]
pub struct TokenResponse {
    /// The access token, an RS256 JWT.
    pub access_token: String,
    /// Always `Bearer`.
    #[schema(pattern = "^Bearer$", example = "Bearer")]
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
    /// An RS256 JWT; present when the scope has `openid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_token: Option<String>,
    /// End of the refresh token's validity, a Unix timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_expires_at: Option<i64>,
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

/// The verified-signature caches of both token types.
#[derive(Default)]
pub struct VerifiedTokens {
    pub access: VerifiedCache<AccessClaims>,
    pub id: VerifiedCache<IdClaims>,
}

/// Why an access token was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum AccessTokenError {
    /// Not ours, malformed, expired or revoked.
    #[error("the access token is not valid")]
    Invalid,
    /// The revocation state could not be read.
    #[error("the token store is unavailable: {0}")]
    Unavailable(#[from] StorageError),
}

impl Identity {
    /// Signs the access token (and the id_token when `scope` has `openid`)
    /// for `grant`, with `scope` (the grant's or a narrower one), with `key`.
    ///
    /// Nothing here can fail: the key is read (from storage, the one step
    /// that can) before the code is redeemed or the refresh token rotated,
    /// so that a response that cannot be made spends nothing.
    pub fn issue_tokens(
        &self,
        key: &portico_crypto::jwt::SigningKey,
        grant: &Grant,
        user: &User,
        scope: &str,
        nonce: Option<&str>,
        refresh: &NewRefreshToken,
    ) -> TokenResponse {
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
        };
        let access_token = key.sign(TYP_ACCESS_TOKEN, &access);
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
                at_hash: portico_crypto::hash::at_hash(&access_token),
                sid: grant.session_id,
                gid: Some(grant.id),
                amr: grant.amr.clone(),
                profile: UserClaims::for_scope(user, scope),
            };
            key.sign(TYP_ID_TOKEN, &claims)
        });
        metrics::counter!("portico_tokens_issued_total").increment(1);
        TokenResponse {
            access_token,
            token_type: "Bearer".to_owned(),
            expires_in: ttl.whole_seconds(),
            scope: Some(scope.to_owned()),
            refresh_token: Some(refresh.value.clone()),
            id_token,
            refresh_expires_at: Some(refresh.row.expires_at.unix_timestamp()),
        }
    }

    /// Verifies a JWT signed by one of Portico's keys: signature, `typ`, `iss`
    /// and `exp` (against the injected clock). Does not consult revocation.
    ///
    /// # Errors
    /// [`AccessTokenError::Invalid`] for anything wrong with the token;
    /// [`AccessTokenError::Unavailable`] when a key reload fails.
    pub async fn verify_jwt<C: serde::de::DeserializeOwned + Expiring>(
        &self,
        token: &str,
        typ: &str,
    ) -> Result<C, AccessTokenError> {
        let claims: C = self.verify_issued(token, typ).await?;
        if claims.expires_at() <= self.clock.now().unix_timestamp() {
            return Err(AccessTokenError::Invalid);
        }
        Ok(claims)
    }

    /// Verifies that a JWT was issued by Portico: signature by one of its
    /// keys, `typ` and `iss`, whatever its expiry (an expired id_token still
    /// names the session to end at logout).
    ///
    /// # Errors
    /// As [`Identity::verify_jwt`].
    pub async fn verify_issued<C: serde::de::DeserializeOwned + Expiring>(
        &self,
        token: &str,
        typ: &str,
    ) -> Result<C, AccessTokenError> {
        let header = jwt::peek_header(token).map_err(|_| AccessTokenError::Invalid)?;
        let kid = header.kid.ok_or(AccessTokenError::Invalid)?;
        let key = self.keys.key(&kid).await?.ok_or(AccessTokenError::Invalid)?;
        let (header, claims): (_, C) =
            jwt::verify(token, |_| Some(key.verifying_key())).map_err(|_| AccessTokenError::Invalid)?;
        if header.typ.as_deref() != Some(typ) || claims.issuer() != self.settings.issuer {
            return Err(AccessTokenError::Invalid);
        }
        Ok(claims)
    }

    /// [`Identity::verify_jwt`] with the signature check remembered
    /// ([`crate::verified`]): a token seen before is only checked for
    /// expiry.
    ///
    /// # Errors
    /// As [`Identity::verify_jwt`].
    pub async fn verify_cached<C>(
        &self,
        token: &str,
        typ: &str,
        cache: &VerifiedCache<C>,
    ) -> Result<Arc<C>, AccessTokenError>
    where
        C: serde::de::DeserializeOwned + Expiring,
    {
        let key = crate::verified::key(token);
        let now = self.clock.now().unix_timestamp();
        if let Some(claims) = cache.get(&key) {
            return if claims.expires_at() > now { Ok(claims) } else { Err(AccessTokenError::Invalid) };
        }
        let claims = Arc::new(self.verify_jwt::<C>(token, typ).await?);
        cache.insert(key, Arc::clone(&claims), now);
        Ok(claims)
    }

    /// Checks an access token completely: [`Identity::verify_jwt`], then
    /// that neither it nor its grant was revoked.
    ///
    /// # Errors
    /// As [`Identity::verify_jwt`], and [`AccessTokenError::Unavailable`] when
    /// the revocation state cannot be read.
    pub async fn check_access_token(&self, token: &str) -> Result<Arc<AccessClaims>, AccessTokenError> {
        let claims = self.verify_cached(token, TYP_ACCESS_TOKEN, &self.verified.access).await?;
        let state = self.store.access_token_state(claims.gid, &claims.jti).await?;
        if state.is_live() { Ok(claims) } else { Err(AccessTokenError::Invalid) }
    }
}

/// Why an `Authorization` + `Id-Token` pair was not accepted; the text is
/// what the caller is told.
#[derive(Debug, thiserror::Error)]
pub enum TokenPairError {
    #[error("the {0} header is missing")]
    Missing(&'static str),
    #[error("the access token is not valid (malformed, not signed by this issuer, expired or revoked)")]
    InvalidAccessToken,
    #[error("the id_token is not valid (malformed, not signed by this issuer or expired)")]
    InvalidIdToken,
    #[error("the access token and the id_token do not belong to the same login")]
    Mismatch,
    #[error("the token store is unavailable: {0}")]
    Unavailable(StorageError),
}

/// The user behind a verified token pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub user_id: UserId,
    /// The client the access token was issued to.
    pub client_id: ClientId,
    pub access: Arc<AccessClaims>,
}

impl Identity {
    /// Checks the headers of a business API call: `Authorization` carries an
    /// access token (with or without `Bearer `), `Id-Token` an id_token.
    /// Both must be Portico's, unexpired, and of the same live grant
    /// (the access token through [`Identity::check_access_token`], the
    /// id_token through its `gid`), hence of the same user and client.
    ///
    /// # Errors
    /// A [`TokenPairError`] saying what is wrong.
    pub async fn check_token_pair(&self, headers: &axum::http::HeaderMap) -> Result<Caller, TokenPairError> {
        if !headers.contains_key(axum::http::header::AUTHORIZATION) {
            return Err(TokenPairError::Missing("Authorization"));
        }
        let access = bearer(headers).ok_or(TokenPairError::InvalidAccessToken)?;
        let id_token = headers.get("id-token").ok_or(TokenPairError::Missing("Id-Token"))?;
        let id_token = id_token.to_str().map_err(|_| TokenPairError::InvalidIdToken)?.trim();
        let id_token = id_token.strip_prefix("Bearer ").unwrap_or(id_token);
        let access = match self.check_access_token(access).await {
            Ok(claims) => claims,
            Err(AccessTokenError::Invalid) => return Err(TokenPairError::InvalidAccessToken),
            Err(AccessTokenError::Unavailable(e)) => return Err(TokenPairError::Unavailable(e)),
        };
        let id = match self.verify_cached(id_token, TYP_ID_TOKEN, &self.verified.id).await {
            Ok(claims) => claims,
            Err(AccessTokenError::Invalid) => return Err(TokenPairError::InvalidIdToken),
            Err(AccessTokenError::Unavailable(e)) => return Err(TokenPairError::Unavailable(e)),
        };
        let grant = id.gid.or_else(|| id.sid.map(|sid| GrantId::from(sid.as_uuid())));
        if id.sub != access.sub || id.aud != access.client_id || grant != Some(access.gid) {
            return Err(TokenPairError::Mismatch);
        }
        let user_id = Uuid::parse_str(&access.sub).map_err(|_| TokenPairError::InvalidAccessToken)?.into();
        Ok(Caller { user_id, client_id: access.client_id.as_str().into(), access })
    }
}

/// Claims with an issuer and an expiry.
pub trait Expiring {
    fn issuer(&self) -> &str;
    fn expires_at(&self) -> i64;
}

impl Expiring for AccessClaims {
    fn issuer(&self) -> &str {
        &self.iss
    }
    fn expires_at(&self) -> i64 {
        self.exp
    }
}

impl Expiring for IdClaims {
    fn issuer(&self) -> &str {
        &self.iss
    }
    fn expires_at(&self) -> i64 {
        self.exp
    }
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

/// The token from an `Authorization` header, with or without `Bearer `
/// (scheme compared case-insensitively).
pub fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?.trim();
    let token = match value.split_once(' ') {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("bearer") => rest.trim(),
        Some(_) => return None,
        None => value,
    };
    (!token.is_empty()).then_some(token)
}

/// Counts `count` revocations of `what` (`grant`, `access_token`) for
/// `reason` (`revocation_endpoint`, `code_replay`, `refresh_replay`,
/// `session_end`): `portico_revocations_total`.
pub fn count_revocation(what: &'static str, reason: &'static str, count: u64) {
    if count > 0 {
        metrics::counter!("portico_revocations_total", "what" => what, "reason" => reason).increment(count);
    }
}
