//! What Portico's access tokens and id_tokens carry.
//!
//! Access tokens are RS256 JWTs with `typ: at+jwt` (RFC 9068). Besides the
//! registered claims they carry `client_id`, `scope` and `gid`, the grant
//! they belong to, so that revoking the grant (through its refresh token, a
//! replayed code or a blocked user) kills them without a per-token lookup.

use portico_model::ids::{GrantId, SessionId};
use portico_model::user::User;
use serde::{Deserialize, Serialize};

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
    /// What the token is bound to: a DPoP key (RFC 9449), whose proof must
    /// come with it, or a TLS client certificate (RFC 8705), over which it
    /// must come.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cnf: Option<Confirmation>,
}

/// An access token's confirmation (RFC 7800 `cnf`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confirmation {
    /// The RFC 7638 thumbprint of the DPoP key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jkt: Option<String>,
    /// The SHA-256 thumbprint of the client certificate (RFC 8705 §3.1).
    #[serde(rename = "x5t#S256", default, skip_serializing_if = "Option::is_none")]
    pub x5t_s256: Option<String>,
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
