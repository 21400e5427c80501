//! Signed cookie values and key derivation from the instance secret.

use aws_lc_rs::hmac;

/// Derives a 32-byte key for one purpose from the instance secret
/// (HMAC-SHA-256 of the purpose label).
pub fn derive_key(instance_secret: &[u8], purpose: &str) -> [u8; 32] {
    let key = hmac::Key::new(hmac::HMAC_SHA256, instance_secret);
    let tag = hmac::sign(&key, purpose.as_bytes());
    let mut out = [0u8; 32];
    out.copy_from_slice(tag.as_ref());
    out
}

/// Signs and checks cookie values with HMAC-SHA-256.
pub struct CookieSigner {
    key: hmac::Key,
}

impl CookieSigner {
    pub fn new(key: &[u8; 32]) -> Self {
        Self { key: hmac::Key::new(hmac::HMAC_SHA256, key) }
    }

    /// `value` followed by `.` and the Base64URL signature over the cookie's
    /// `name` and `value` (so a value signed for one cookie does not verify
    /// as another).
    pub fn sign(&self, name: &str, value: &str) -> String {
        let tag = hmac::sign(&self.key, format!("{name}={value}").as_bytes());
        format!("{value}.{}", crate::b64url(tag))
    }

    /// Only the Base64URL tag over `name` and `value`: a keyed hash for
    /// values that must be stored without being readable or guessable
    /// offline (one-time codes).
    pub fn tag(&self, name: &str, value: &str) -> String {
        crate::b64url(hmac::sign(&self.key, format!("{name}={value}").as_bytes()))
    }

    /// The value of a signed cookie, if the signature is right.
    pub fn verify<'a>(&self, name: &str, signed: &'a str) -> Option<&'a str> {
        let (value, tag) = signed.rsplit_once('.')?;
        let tag = crate::b64url_decode(tag).ok()?;
        hmac::verify(&self.key, format!("{name}={value}").as_bytes(), &tag).ok()?;
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_and_verifies_per_cookie_name() {
        let signer = CookieSigner::new(&derive_key(b"secret", "cookies"));
        let signed = signer.sign("a", "hello.world");
        assert_eq!(signer.verify("a", &signed), Some("hello.world"));
        assert_eq!(signer.verify("b", &signed), None);
        assert_eq!(signer.verify("a", &signed.replace("hello", "hellO")), None);
        let other = CookieSigner::new(&derive_key(b"secret", "other"));
        assert_eq!(other.verify("a", &signed), None);
    }
}
