//! Checking a token: signature by one of Portico's keys, type, issuer,
//! expiry against the injected clock, and revocation in storage.

use std::sync::Arc;

use portico_crypto::certificate::Presented;
use portico_crypto::dpop::Proof;
use portico_crypto::jwt::{self, TYP_ACCESS_TOKEN, TYP_ID_TOKEN};
use portico_model::clock::Clock;
use portico_model::ids::{ClientId, GrantId, UserId};
use portico_storage::{Storage, StorageError};
use uuid::Uuid;

use crate::claims::{AccessClaims, Expiring, IdClaims};
use crate::keys::KeyRing;
use crate::verified::{self, VerifiedCache};

/// The verified-signature caches of both token types.
#[derive(Default)]
pub struct VerifiedTokens {
    pub access: VerifiedCache<AccessClaims>,
    pub id: VerifiedCache<IdClaims>,
}

/// Checks the tokens this Portico issued. One per process, shared by the
/// identity service and every API.
pub struct TokenVerifier {
    pub store: Arc<dyn Storage>,
    pub clock: Arc<dyn Clock>,
    /// The `iss` every token must carry.
    pub issuer: String,
    pub keys: KeyRing,
    /// Signatures already verified, per token type.
    pub verified: VerifiedTokens,
    /// The base of the mutual-TLS endpoint aliases (`mtls.public_url`),
    /// under which a DPoP proof may also name a resource.
    pub mtls_alias: Option<String>,
}

/// Why an access token was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum AccessTokenError {
    /// Not ours, malformed, expired or revoked.
    #[error("the access token is not valid")]
    Invalid,
    /// A DPoP-bound token came without one good proof (missing, doubled,
    /// malformed, for another request, or used before): RFC 9449 §7.1's
    /// `invalid_dpop_proof`.
    #[error("the DPoP proof is not valid")]
    InvalidProof,
    /// The revocation state could not be read.
    #[error("the token store is unavailable: {0}")]
    Unavailable(#[from] StorageError),
}

/// Why an `Authorization` + `Id-Token` pair was not accepted; the text is
/// what the caller is told.
#[derive(Debug, thiserror::Error)]
pub enum TokenPairError {
    #[error("the {0} header is missing")]
    Missing(&'static str),
    #[error("the access token is not valid (malformed, not signed by this issuer, expired or revoked)")]
    InvalidAccessToken,
    /// The access token is DPoP-bound and its proof is missing or bad
    /// (RFC 9449 §7.1's `invalid_dpop_proof`).
    #[error("the DPoP proof is missing or not valid (one fresh proof of the token's key for this request)")]
    InvalidProof,
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

impl TokenVerifier {
    pub fn new(store: Arc<dyn Storage>, clock: Arc<dyn Clock>, issuer: String, keys: KeyRing) -> Self {
        Self { store, clock, issuer, keys, verified: VerifiedTokens::default(), mtls_alias: None }
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
    /// As [`TokenVerifier::verify_jwt`].
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
        if header.typ.as_deref() != Some(typ) || claims.issuer() != self.issuer {
            return Err(AccessTokenError::Invalid);
        }
        Ok(claims)
    }

    /// [`TokenVerifier::verify_jwt`] with the signature check remembered
    /// ([`crate::verified`]): a token seen before is only checked for
    /// expiry.
    ///
    /// # Errors
    /// As [`TokenVerifier::verify_jwt`].
    pub async fn verify_cached<C>(
        &self,
        token: &str,
        typ: &str,
        cache: &VerifiedCache<C>,
    ) -> Result<Arc<C>, AccessTokenError>
    where
        C: serde::de::DeserializeOwned + Expiring,
    {
        let key = verified::key(token);
        let now = self.clock.now().unix_timestamp();
        if let Some(claims) = cache.get(&key) {
            return if claims.expires_at() > now { Ok(claims) } else { Err(AccessTokenError::Invalid) };
        }
        let claims = Arc::new(self.verify_jwt::<C>(token, typ).await?);
        cache.insert(key, Arc::clone(&claims), now);
        Ok(claims)
    }

    /// Checks an access token completely: [`TokenVerifier::verify_jwt`],
    /// then that neither it nor its grant was revoked.
    ///
    /// # Errors
    /// As [`TokenVerifier::verify_jwt`], and [`AccessTokenError::Unavailable`]
    /// when the revocation state cannot be read.
    pub async fn check_access_token(&self, token: &str) -> Result<Arc<AccessClaims>, AccessTokenError> {
        let claims = self.verify_cached(token, TYP_ACCESS_TOKEN, &self.verified.access).await?;
        let state = self.store.access_token_state(claims.gid, &claims.jti).await?;
        if state.is_live() { Ok(claims) } else { Err(AccessTokenError::Invalid) }
    }

    /// Remembers a DPoP proof's `jti` until the proof is too old anyway, on
    /// every node (the table of client assertion ids, under `dpop:<jkt>`):
    /// whether it was new.
    ///
    /// # Errors
    /// When the store fails.
    pub async fn remember_proof(&self, proof: &Proof, now: time::OffsetDateTime) -> Result<bool, StorageError> {
        let jti = proof_jti(proof, now);
        self.store.remember_client_assertion(&jti.client_id, &jti.jti, jti.expires_at, now).await
    }

    /// Checks the access token of a request to a protected resource,
    /// `method` on `path`, and how it was presented: a bearer token as
    /// `Bearer` (or without a scheme); a DPoP-bound one (`cnf.jkt`) only as
    /// `DPoP`, with one `DPoP` proof of the bound key for this method and
    /// address whose `ath` is the token's hash, not used before; a
    /// certificate-bound one (`cnf.x5t#S256`) only with the very client
    /// certificate it is bound to (`certificate`, as the edge read it).
    ///
    /// # Errors
    /// [`AccessTokenError::Invalid`] for a bad token or presentation;
    /// [`AccessTokenError::InvalidProof`] for a DPoP-bound one without one
    /// good proof; [`AccessTokenError::Unavailable`] when storage cannot
    /// be read.
    pub async fn check_request(
        &self,
        headers: &http::HeaderMap,
        certificate: Option<&Presented>,
        method: &str,
        path: &str,
    ) -> Result<Arc<AccessClaims>, AccessTokenError> {
        let (scheme, token) = presented(headers).ok_or(AccessTokenError::Invalid)?;
        let claims = self.check_access_token(token).await?;
        let cnf = claims.cnf.as_ref();
        if let Some(x5t) = cnf.and_then(|cnf| cnf.x5t_s256.as_deref()) {
            let Some(Presented(Ok(certificate))) = certificate else {
                return Err(AccessTokenError::Invalid);
            };
            if !portico_crypto::constant_time_eq(certificate.thumbprint().as_bytes(), x5t.as_bytes()) {
                return Err(AccessTokenError::Invalid);
            }
        }
        match (cnf.and_then(|cnf| cnf.jkt.as_deref()), scheme) {
            (None, Scheme::Bearer) => Ok(claims),
            (Some(jkt), Scheme::Dpop) => {
                let mut proofs = headers.get_all("dpop").iter();
                let (Some(proof), None) = (proofs.next(), proofs.next()) else {
                    return Err(AccessTokenError::InvalidProof);
                };
                let url = format!("{}{path}", self.issuer);
                let alias_url = self.mtls_alias.as_ref().map(|base| format!("{base}{path}"));
                let now = self.clock.now();
                let expected = portico_crypto::dpop::Expected {
                    method,
                    url: &url,
                    alias_url: alias_url.as_deref(),
                    now: now.unix_timestamp(),
                    access_token: Some(token),
                };
                let proof = portico_crypto::dpop::verify(proof.to_str().unwrap_or_default(), &expected)
                    .map_err(|_| AccessTokenError::InvalidProof)?;
                // A good proof of another key: the token is not this key's.
                if proof.jkt != jkt {
                    return Err(AccessTokenError::Invalid);
                }
                if !self.remember_proof(&proof, now).await? {
                    return Err(AccessTokenError::InvalidProof);
                }
                Ok(claims)
            }
            _ => Err(AccessTokenError::Invalid),
        }
    }

    /// Checks the headers of a business API call: `Authorization` carries an
    /// access token (with or without `Bearer `; `DPoP` for a bound one,
    /// with its proof, as [`TokenVerifier::check_request`] checks it),
    /// `Id-Token` an id_token.
    /// Both must be Portico's, unexpired, and of the same live grant
    /// (the access token through [`TokenVerifier::check_access_token`], the
    /// id_token through its `gid`), hence of the same user and client.
    ///
    /// # Errors
    /// A [`TokenPairError`] saying what is wrong.
    pub async fn check_token_pair(
        &self,
        headers: &http::HeaderMap,
        certificate: Option<&Presented>,
        method: &str,
        path: &str,
    ) -> Result<Caller, TokenPairError> {
        if !headers.contains_key(http::header::AUTHORIZATION) {
            return Err(TokenPairError::Missing("Authorization"));
        }
        let id_token = headers.get("id-token").ok_or(TokenPairError::Missing("Id-Token"))?;
        let id_token = id_token.to_str().map_err(|_| TokenPairError::InvalidIdToken)?.trim();
        let id_token = id_token.strip_prefix("Bearer ").unwrap_or(id_token);
        let access = match self.check_request(headers, certificate, method, path).await {
            Ok(claims) => claims,
            Err(AccessTokenError::Invalid) => return Err(TokenPairError::InvalidAccessToken),
            Err(AccessTokenError::InvalidProof) => return Err(TokenPairError::InvalidProof),
            Err(AccessTokenError::Unavailable(e)) => return Err(TokenPairError::Unavailable(e)),
        };
        let id = match self.verify_cached(id_token, TYP_ID_TOKEN, &self.verified.id).await {
            Ok(claims) => claims,
            Err(AccessTokenError::Invalid | AccessTokenError::InvalidProof) => {
                return Err(TokenPairError::InvalidIdToken);
            }
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

/// How an access token was presented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `Bearer`, or no scheme.
    Bearer,
    /// `DPoP` (RFC 9449).
    Dpop,
}

/// The scheme and token of an `Authorization` header (schemes compared
/// case-insensitively).
pub fn presented(headers: &http::HeaderMap) -> Option<(Scheme, &str)> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = match value.split_once(' ') {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("bearer") => (Scheme::Bearer, rest.trim()),
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("dpop") => (Scheme::Dpop, rest.trim()),
        Some(_) => return None,
        None => (Scheme::Bearer, value),
    };
    (!token.is_empty()).then_some((scheme, token))
}

/// The token from an `Authorization` header, with or without `Bearer `
/// (scheme compared case-insensitively).
pub fn bearer(headers: &http::HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?.trim();
    let token = match value.split_once(' ') {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("bearer") => rest.trim(),
        Some(_) => return None,
        None => value,
    };
    (!token.is_empty()).then_some(token)
}

/// A DPoP proof's `jti` as the table of client assertion ids keeps it:
/// under `dpop:<jkt>`, until the proof is too old anyway.
pub fn proof_jti(proof: &Proof, now: time::OffsetDateTime) -> portico_model::oauth::AssertionJti {
    portico_model::oauth::AssertionJti {
        client_id: ClientId::new(format!("dpop:{}", proof.jkt)),
        jti: proof.jti.clone(),
        expires_at: time::OffsetDateTime::from_unix_timestamp(proof.remember_until()).unwrap_or(now),
    }
}
