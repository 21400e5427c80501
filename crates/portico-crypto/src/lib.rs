//! Portico's cryptography, in one place: random tokens, hashes, PKCE,
//! password hashing, sealed secrets, signed cookies, Portico's own JWTs
//! ([`jwt`]) and the checking of JWTs others sign ([`jose`]).
//!
//! Everything rests on aws-lc-rs (and the `argon2` crate for passwords).
//! Portico's JWTs are signed here rather than through a JWT crate because
//! those parse the private key again for every signature, which halves the
//! token endpoint's throughput (see `docs/decisions.md`); JWTs and keys
//! from clients are checked with `jsonwebtoken` (on aws-lc-rs too).

pub mod certificate;
pub mod cookie;
pub mod dpop;
pub mod hash;
pub mod jose;
pub mod jwt;
pub mod password;
pub mod random;
pub mod seal;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Unpadded Base64URL, the encoding of JWTs, PKCE and opaque tokens.
pub fn b64url(bytes: impl AsRef<[u8]>) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Decodes unpadded Base64URL.
///
/// # Errors
/// For text that is not unpadded Base64URL.
pub fn b64url_decode(text: impl AsRef<[u8]>) -> Result<Vec<u8>, base64::DecodeError> {
    URL_SAFE_NO_PAD.decode(text)
}

/// Compares two byte strings in time that depends only on their lengths.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq as _;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}
