//! Authorization codes, grants and refresh tokens.

use crate::ids::{ClientId, CodeHash, GrantId, RefreshTokenHash, SessionId, UserId};
use crate::user::User;
use time::OffsetDateTime;

/// An issued authorization code, stored by the hash of its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationCode {
    pub code_hash: CodeHash,
    pub client_id: ClientId,
    pub user_id: UserId,
    pub redirect_uri: String,
    pub scope: String,
    /// PKCE S256 challenge from the authorize request.
    pub code_challenge: String,
    pub nonce: Option<String>,
    pub auth_time: OffsetDateTime,
    pub created_at: OffsetDateTime,
    pub expires_at: OffsetDateTime,
    /// The grant issued by the first exchange of this code.
    pub grant_id: Option<GrantId>,
    /// How the user authenticated (RFC 8176).
    pub amr: Vec<String>,
    /// The single sign-on session the code was issued under.
    pub session_id: Option<SessionId>,
    /// The thumbprint of the DPoP key the code is bound to (RFC 9449 §10):
    /// only a token request with a proof of that key redeems it.
    pub dpop_jkt: Option<String>,
}

/// A stored authorization code, whether it was already presented, and its
/// user: what the token endpoint reads of a presented code, in one read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCode {
    pub code: AuthorizationCode,
    /// Presented before (successfully or not): any further use is a replay.
    pub spent: bool,
    /// The code's user as stored now, read with it; `None` once removed.
    pub user: Option<User>,
}

/// How redeeming an authorization code ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redemption {
    /// The code is spent and the grant with its refresh token is stored.
    Redeemed,
    /// Another request spent the code first: a replay. Names the grant that
    /// the other request created, if any.
    Replay { grant_id: Option<GrantId> },
    /// The client assertion that authenticated the request was used
    /// before; nothing changed.
    AssertionReplayed,
}

/// A pushed authorization request (RFC 9126), stored by the hash of its
/// `request_uri` until it is used once or expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushedRequest {
    /// The hash of the `request_uri` (`portico_crypto::hash::token_hash`).
    pub request_hash: String,
    /// The client that pushed it: only it may use it.
    pub client_id: ClientId,
    /// The request as checked when it was pushed.
    pub request: crate::login::PendingAuthorization,
    pub created_at: OffsetDateTime,
    pub expires_at: OffsetDateTime,
}

/// An accepted client assertion's `jti`, remembered by the write that acts
/// on the request it authenticated (RFC 7523 §3: a `jti` is accepted once
/// while the assertion could be valid).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssertionJti {
    pub client_id: ClientId,
    pub jti: String,
    /// When the assertion stops being valid (its `exp` with the leeway).
    pub expires_at: OffsetDateTime,
}

/// One authorization of a client by a user: the root of a refresh token chain
/// and of every access token issued along it. Revoking it kills them all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub id: GrantId,
    pub client_id: ClientId,
    pub user_id: UserId,
    pub scope: String,
    pub auth_time: OffsetDateTime,
    pub created_at: OffsetDateTime,
    pub revoked_at: Option<OffsetDateTime>,
    /// How the user authenticated for this grant (RFC 8176).
    pub amr: Vec<String>,
    /// The single sign-on session the grant was issued under (none for
    /// grants issued before sessions had ids).
    pub session_id: Option<SessionId>,
}

/// An opaque refresh token, stored by the hash of its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefreshToken {
    pub token_hash: RefreshTokenHash,
    pub grant_id: GrantId,
    pub created_at: OffsetDateTime,
    pub expires_at: OffsetDateTime,
}

/// A stored refresh token, its grant, whether it was already presented, and
/// the grant's user: what the token endpoint reads of a presented refresh
/// token, in one read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRefreshToken {
    pub token: RefreshToken,
    pub grant: Grant,
    /// Rotated (or burnt) already: any further use is a replay.
    pub spent: bool,
    /// The grant's user as stored now, read with it; `None` once removed.
    pub user: Option<User>,
}

/// How rotating a refresh token ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rotation {
    /// The old token is spent and its successor stored.
    Rotated,
    /// Another request spent the token first: a replay.
    Replay,
    /// The grant was revoked meanwhile; nothing changed.
    GrantRevoked,
    /// The client assertion that authenticated the request was used
    /// before; nothing changed.
    AssertionReplayed,
}

/// Revocation state of one access token, for the liveness check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessTokenState {
    /// The grant is gone (cleaned up) or revoked.
    pub grant_revoked: bool,
    /// This very token (by `jti`) was revoked.
    pub token_revoked: bool,
}

impl AccessTokenState {
    pub fn is_live(self) -> bool {
        !self.grant_revoked && !self.token_revoked
    }
}

/// How the authorization response reaches the client: in the query of a
/// redirect (the default for `code`), or posted by the browser as a form
/// (OAuth 2.0 Form Post Response Mode); either of them as one signed JWT,
/// `response` (JARM: `query.jwt`, `form_post.jwt`, and `jwt`, which is
/// `query.jwt` for `code`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseMode {
    #[default]
    Query,
    FormPost,
    #[serde(rename = "query.jwt", alias = "jwt")]
    QueryJwt,
    #[serde(rename = "form_post.jwt")]
    FormPostJwt,
}

impl ResponseMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ResponseMode::Query => "query",
            ResponseMode::FormPost => "form_post",
            ResponseMode::QueryJwt => "query.jwt",
            ResponseMode::FormPostJwt => "form_post.jwt",
        }
    }

    /// Whether the parameters travel as one signed JWT (JARM).
    pub fn is_jwt(self) -> bool {
        matches!(self, ResponseMode::QueryJwt | ResponseMode::FormPostJwt)
    }

    /// Whether the browser posts the response (rather than following a
    /// redirect).
    pub fn is_posted(self) -> bool {
        matches!(self, ResponseMode::FormPost | ResponseMode::FormPostJwt)
    }
}

/// The `prompt` parameter of an authorization request (OIDC Core §3.1.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Prompt {
    None,
    /// Portico has one account per browser session: choosing an account
    /// (`select_account`) is logging in again.
    #[serde(alias = "select_account")]
    Login,
    Consent,
}

impl Prompt {
    /// The parameter's value (`select_account` was read as `login`).
    pub fn as_str(self) -> &'static str {
        match self {
            Prompt::None => "none",
            Prompt::Login => "login",
            Prompt::Consent => "consent",
        }
    }
}

/// Whether `challenge` has the shape of an S256 PKCE challenge: 43 characters
/// of unpadded Base64URL (a SHA-256 digest).
pub fn is_s256_challenge(challenge: &str) -> bool {
    challenge.len() == 43 && challenge.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Whether `verifier` is a PKCE code verifier as RFC 7636 §4.1 defines it.
pub fn is_code_verifier(verifier: &str) -> bool {
    (43..=128).contains(&verifier.len())
        && verifier.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_shapes() {
        assert!(is_s256_challenge("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"));
        assert!(!is_s256_challenge("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-c"));
        assert!(!is_s256_challenge("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw+cM"));
        assert!(is_code_verifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"));
        assert!(!is_code_verifier("short"));
        assert!(!is_code_verifier(&"a".repeat(129)));
        assert!(!is_code_verifier(&format!("{}!", "a".repeat(50))));
    }
}
