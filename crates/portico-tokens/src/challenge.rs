//! The `WWW-Authenticate` challenge of a protected resource's 401, one rule
//! for every resource Portico serves (userinfo, liveness, the permission
//! and report APIs), by how the request presented its token:
//!
//! - no token (no `Authorization` header, or a scheme Portico does not
//!   take): `Bearer` alone, since RFC 6750 §3.1 has a request without
//!   credentials answered without an error code;
//! - with the `DPoP` scheme: RFC 9449 §7.1's `DPoP` challenge, with
//!   `invalid_dpop_proof` for a proof that is missing or bad and
//!   `invalid_token` otherwise, and the proof algorithms Portico takes;
//! - otherwise `Bearer error="invalid_token"`.

use http::{HeaderMap, HeaderValue};

use crate::verifier::{AccessTokenError, Scheme, TokenPairError, presented};

/// What a refused request is challenged with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Challenge {
    /// No token came: `Bearer`.
    Credentials,
    /// A `Bearer` token that was not taken.
    InvalidToken,
    /// A `DPoP` token that was not taken (a good proof, or none needed).
    DpopInvalidToken,
    /// A `DPoP` token whose proof is missing or bad.
    DpopInvalidProof,
}

impl Challenge {
    /// The challenge for a request with `headers` refused for a token
    /// (`bad_proof`: for its DPoP proof).
    pub fn for_request(headers: &HeaderMap, bad_proof: bool) -> Self {
        match presented(headers) {
            None => Self::Credentials,
            Some((Scheme::Bearer, _)) => Self::InvalidToken,
            Some((Scheme::Dpop, _)) if bad_proof => Self::DpopInvalidProof,
            Some((Scheme::Dpop, _)) => Self::DpopInvalidToken,
        }
    }

    /// The challenge for a request refused with `error`.
    pub fn for_access(headers: &HeaderMap, error: &AccessTokenError) -> Self {
        Self::for_request(headers, matches!(error, AccessTokenError::InvalidProof))
    }

    /// The challenge for a token pair refused with `error`.
    pub fn for_pair(headers: &HeaderMap, error: &TokenPairError) -> Self {
        Self::for_request(headers, matches!(error, TokenPairError::InvalidProof))
    }

    /// RFC 6750 §3.1's `insufficient_scope` challenge (with a 403) for a
    /// token that was taken but lacks `scope`, under the scheme the token
    /// came with: `DPoP` (with `algs`, RFC 9449 §7.1), else `Bearer` (a
    /// token in a form body is a bearer token). `scope` is Portico's own
    /// word, never a caller's.
    pub fn insufficient_scope(headers: &HeaderMap, scope: &'static str) -> HeaderValue {
        let value = match presented(headers) {
            Some((Scheme::Dpop, _)) => format!(
                "DPoP error=\"insufficient_scope\", scope=\"{scope}\", algs=\"{}\"",
                portico_crypto::dpop::ALGORITHMS.join(" ")
            ),
            _ => format!("Bearer error=\"insufficient_scope\", scope=\"{scope}\""),
        };
        HeaderValue::try_from(value).expect("a challenge is ASCII")
    }

    /// The header's value.
    pub fn header(self) -> HeaderValue {
        let dpop = |code: &str| {
            let algs = portico_crypto::dpop::ALGORITHMS.join(" ");
            HeaderValue::try_from(format!("DPoP error=\"{code}\", algs=\"{algs}\"")).expect("a challenge is ASCII")
        };
        match self {
            Self::Credentials => HeaderValue::from_static("Bearer"),
            Self::InvalidToken => HeaderValue::from_static("Bearer error=\"invalid_token\""),
            Self::DpopInvalidToken => dpop("invalid_token"),
            Self::DpopInvalidProof => dpop("invalid_dpop_proof"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(authorization: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(value) = authorization {
            headers.insert(http::header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn insufficient_scope_is_answered_under_the_tokens_scheme() {
        let bearer = Challenge::insufficient_scope(&headers(Some("Bearer abc")), "openid");
        assert_eq!(bearer, "Bearer error=\"insufficient_scope\", scope=\"openid\"");
        let body = Challenge::insufficient_scope(&headers(None), "openid");
        assert_eq!(body, bearer, "a token from a form body is a bearer token");
        let dpop = Challenge::insufficient_scope(&headers(Some("DPoP abc")), "openid");
        assert!(dpop.to_str().unwrap().starts_with("DPoP error=\"insufficient_scope\", scope=\"openid\", algs=\""));
    }

    #[test]
    fn the_challenge_follows_how_the_token_came() {
        let challenge = |authorization, bad_proof| Challenge::for_request(&headers(authorization), bad_proof);
        assert_eq!(challenge(None, false), Challenge::Credentials);
        assert_eq!(challenge(Some("Basic dXNlcjpwdw=="), false), Challenge::Credentials, "a scheme not taken");
        assert_eq!(challenge(Some(""), false), Challenge::Credentials, "an empty header");
        assert_eq!(challenge(Some("Bearer abc"), true), Challenge::InvalidToken, "a bearer token has no proof");
        assert_eq!(challenge(Some("DPoP abc"), true), Challenge::DpopInvalidProof);
        assert_eq!(challenge(Some("dpop abc"), false), Challenge::DpopInvalidToken);
        assert_eq!(Challenge::Credentials.header(), "Bearer");
        assert_eq!(Challenge::InvalidToken.header(), "Bearer error=\"invalid_token\"");
        let dpop = Challenge::DpopInvalidProof.header();
        let dpop = dpop.to_str().unwrap();
        assert!(dpop.starts_with("DPoP error=\"invalid_dpop_proof\", algs=\""), "{dpop}");
        assert!(dpop.contains(" ES256"), "{dpop}");
    }
}
