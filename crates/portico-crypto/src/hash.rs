//! Hashes of secrets that are stored for look-up: codes, refresh tokens,
//! session tokens, client secrets, and the PKCE transform.

use aws_lc_rs::digest::{SHA256, digest};

/// Lowercase hex SHA-256 of `value`; how high-entropy tokens are stored.
pub fn token_hash(value: &str) -> String {
    hex(digest(&SHA256, value.as_bytes()).as_ref())
}

/// The S256 PKCE transform: `BASE64URL(SHA256(ASCII(code_verifier)))`.
pub fn pkce_s256(verifier: &str) -> String {
    crate::b64url(digest(&SHA256, verifier.as_bytes()))
}

/// Whether `verifier` matches an S256 `challenge`, in constant time.
pub fn pkce_matches(challenge: &str, verifier: &str) -> bool {
    crate::constant_time_eq(pkce_s256(verifier).as_bytes(), challenge.as_bytes())
}

/// Stored form of a client secret: `sha256:<hex>`.
///
/// Client secrets are high-entropy values (at least 16 characters, generated
/// by `portico clients add` when not given), so a fast hash is as strong as a
/// slow one here and keeps the token endpoint fast.
pub fn client_secret_hash(secret: &str) -> String {
    format!("sha256:{}", token_hash(secret))
}

/// Whether `secret` matches a stored [`client_secret_hash`], in constant time.
pub fn client_secret_matches(stored: &str, secret: &str) -> bool {
    crate::constant_time_eq(client_secret_hash(secret).as_bytes(), stored.as_bytes())
}

/// Left half of SHA-256 of `token`, Base64URL: the id_token `at_hash` claim.
pub fn at_hash(access_token: &str) -> String {
    let full = digest(&SHA256, access_token.as_bytes());
    crate::b64url(&full.as_ref()[..16])
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_secret_authorizes_only_bearer_and_itself() {
        let secret = BearerSecret::new("internal-token-0123456789");
        assert!(secret.authorizes(Some("Bearer internal-token-0123456789")));
        assert!(secret.authorizes(Some("bearer  internal-token-0123456789 ")));
        assert!(!secret.authorizes(Some("internal-token-0123456789")), "no scheme");
        assert!(!secret.authorizes(Some("Basic internal-token-0123456789")));
        assert!(!secret.authorizes(Some("Bearer internal-token-012345678")));
        assert!(!secret.authorizes(None));
    }

    #[test]
    fn pkce_matches_rfc7636_appendix_b() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert_eq!(pkce_s256(verifier), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        assert!(pkce_matches("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", verifier));
        assert!(!pkce_matches("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cN", verifier));
    }

    #[test]
    fn token_hash_is_sha256_hex() {
        assert_eq!(token_hash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn client_secrets_verify() {
        let stored = client_secret_hash("a-long-client-secret");
        assert!(client_secret_matches(&stored, "a-long-client-secret"));
        assert!(!client_secret_matches(&stored, "a-long-client-secreT"));
    }
}

/// A shared bearer secret (an admin or internal API token), kept only as its
/// SHA-256 digest and compared in constant time.
#[derive(Clone)]
pub struct BearerSecret([u8; 32]);

impl BearerSecret {
    pub fn new(secret: &str) -> Self {
        let mut digest_bytes = [0u8; 32];
        digest_bytes.copy_from_slice(digest(&SHA256, secret.as_bytes()).as_ref());
        Self(digest_bytes)
    }

    /// Whether `presented` is the secret.
    pub fn matches(&self, presented: &str) -> bool {
        crate::constant_time_eq(digest(&SHA256, presented.as_bytes()).as_ref(), &self.0)
    }

    /// Whether an `Authorization` header value is `Bearer <the secret>`
    /// (the scheme in any case).
    pub fn authorizes(&self, authorization: Option<&str>) -> bool {
        authorization
            .and_then(|value| value.trim().split_once(' '))
            .is_some_and(|(scheme, token)| scheme.eq_ignore_ascii_case("bearer") && self.matches(token.trim()))
    }
}

impl std::fmt::Debug for BearerSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerSecret(..)")
    }
}

/// SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(digest(&SHA256, bytes).as_ref());
    out
}

/// Lowercase hex HMAC-SHA-256 of `message` under `key`: the signature of
/// merchant notifications (`X-Api-Signature-SHA256`).
pub fn hmac_sha256_hex(key: &[u8], message: &[u8]) -> String {
    let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, key);
    hex(aws_lc_rs::hmac::sign(&key, message).as_ref())
}
