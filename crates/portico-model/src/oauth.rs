//! Authorization codes, grants and refresh tokens.

use time::OffsetDateTime;
use uuid::Uuid;

/// An issued authorization code, stored by the hash of its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationCode {
    pub code_hash: String,
    pub client_id: String,
    pub user_id: Uuid,
    pub redirect_uri: String,
    pub scope: String,
    /// PKCE S256 challenge from the authorize request.
    pub code_challenge: String,
    pub nonce: Option<String>,
    pub auth_time: OffsetDateTime,
    pub created_at: OffsetDateTime,
    pub expires_at: OffsetDateTime,
    /// The grant issued by the first exchange of this code.
    pub grant_id: Option<Uuid>,
}

/// What presenting an authorization code at the token endpoint turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeUse {
    /// The first presentation: the code is now consumed.
    First(AuthorizationCode),
    /// The code had been presented before; whatever it issued must be revoked.
    Replay(AuthorizationCode),
}

/// One authorization of a client by a user: the root of a refresh token chain
/// and of every access token issued along it. Revoking it kills them all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub id: Uuid,
    pub client_id: String,
    pub user_id: Uuid,
    pub scope: String,
    pub auth_time: OffsetDateTime,
    pub created_at: OffsetDateTime,
    pub revoked_at: Option<OffsetDateTime>,
}

/// An opaque refresh token, stored by the hash of its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefreshToken {
    pub token_hash: String,
    pub grant_id: Uuid,
    pub created_at: OffsetDateTime,
    pub expires_at: OffsetDateTime,
}

/// What presenting a refresh token turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefreshUse {
    /// The token was current; it is now rotated (spent).
    Current { token: RefreshToken, grant: Grant },
    /// The token had already been rotated: a replay.
    Replay { grant_id: Uuid },
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

/// The `prompt` parameter of an authorization request (OIDC Core §3.1.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prompt {
    None,
    Login,
    Consent,
}

impl Prompt {
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "none" => Some(Prompt::None),
            "login" => Some(Prompt::Login),
            "consent" => Some(Prompt::Consent),
            _ => None,
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
