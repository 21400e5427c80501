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

/// The `prompt` parameter of an authorization request (OIDC Core §3.1.2.1):
/// a space-delimited set of `none`, `login`, `consent` and
/// `select_account`, in any order, where `none` stands alone. Portico has
/// one account per browser session: choosing an account
/// (`select_account`) is logging in again, so four sets remain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prompt {
    /// No page at all: a code from the single sign-on session, or an error.
    None,
    /// Log in again, whatever session the browser has.
    Login,
    /// Ask for consent again, whatever was granted.
    Consent,
    /// Both (`login consent`).
    LoginConsent,
}

impl Prompt {
    /// The set `value` names, or `None` when it names no set Portico takes:
    /// an unknown value, an empty item (two spaces, a leading or trailing
    /// one), or `none` beside another value.
    pub fn parse(value: &str) -> Option<Prompt> {
        let (mut none, mut login, mut consent) = (false, false, false);
        for item in value.split(' ') {
            match item {
                "none" => none = true,
                "login" | "select_account" => login = true,
                "consent" => consent = true,
                _ => return None,
            }
        }
        match (none, login, consent) {
            (true, false, false) => Some(Prompt::None),
            (false, true, false) => Some(Prompt::Login),
            (false, false, true) => Some(Prompt::Consent),
            (false, true, true) => Some(Prompt::LoginConsent),
            _ => None,
        }
    }

    /// The parameter's value (`select_account` was read as `login`).
    pub fn as_str(self) -> &'static str {
        match self {
            Prompt::None => "none",
            Prompt::Login => "login",
            Prompt::Consent => "consent",
            Prompt::LoginConsent => "login consent",
        }
    }

    /// Whether the single sign-on session is passed over: the user logs in.
    pub fn forces_login(self) -> bool {
        matches!(self, Prompt::Login | Prompt::LoginConsent)
    }

    /// Whether the consent step comes even for what was granted before.
    pub fn forces_consent(self) -> bool {
        matches!(self, Prompt::Consent | Prompt::LoginConsent)
    }
}

impl serde::Serialize for Prompt {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Prompt {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = std::borrow::Cow::<str>::deserialize(deserializer)?;
        Prompt::parse(&value).ok_or_else(|| {
            serde::de::Error::custom(
                "prompt is none alone, or login, consent and select_account separated by single spaces",
            )
        })
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

    #[test]
    fn prompt_is_a_set_where_none_stands_alone() {
        assert_eq!(Prompt::parse("none"), Some(Prompt::None));
        assert_eq!(Prompt::parse("select_account"), Some(Prompt::Login));
        assert_eq!(Prompt::parse("consent login"), Some(Prompt::LoginConsent));
        assert_eq!(Prompt::parse("select_account consent login"), Some(Prompt::LoginConsent));
        assert_eq!(Prompt::parse("consent consent"), Some(Prompt::Consent));
        for refused in ["", "none login", "consent none", "login  consent", " login", "login ", "Login", "always"] {
            assert_eq!(Prompt::parse(refused), None, "{refused:?}");
        }
        // Stored login processes keep the value as the request said it.
        for prompt in [Prompt::None, Prompt::Login, Prompt::Consent, Prompt::LoginConsent] {
            let json = serde_json::to_string(&prompt).unwrap();
            assert_eq!(serde_json::from_str::<Prompt>(&json).unwrap(), prompt);
        }
        assert_eq!(serde_json::to_string(&Prompt::LoginConsent).unwrap(), "\"login consent\"");
        assert!(!Prompt::None.forces_login() && !Prompt::None.forces_consent());
        assert!(Prompt::LoginConsent.forces_login() && Prompt::LoginConsent.forces_consent());
    }
}
