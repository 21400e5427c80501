//! User passwords: Argon2id with OWASP's parameters (19 MiB, t=2, p=1).
//!
//! Each hash costs tens of milliseconds and 19 MiB: callers cap how many run
//! at once and run them off the async executor.

use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier as _, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

fn argon2() -> Argon2<'static> {
    let params = Params::new(19 * 1024, 2, 1, None).expect("valid Argon2 parameters");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// Hashes a password into a PHC string.
///
/// # Panics
/// Never for the fixed parameters used here.
pub fn hash(password: &str) -> String {
    let salt_bytes = crate::random::bytes::<16>();
    let salt = SaltString::encode_b64(&salt_bytes).expect("16 bytes make a valid salt");
    argon2().hash_password(password.as_bytes(), &salt).expect("Argon2 hashing cannot fail here").to_string()
}

/// Whether `password` matches the PHC string `stored`. A damaged hash never matches.
pub fn verify(stored: &str, password: &str) -> bool {
    match PasswordHash::new(stored) {
        Ok(parsed) => argon2().verify_password(password.as_bytes(), &parsed).is_ok(),
        Err(_) => false,
    }
}

/// A hash of a password nobody has, for equal timing when a login is unknown.
pub fn decoy() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| hash(&crate::random::token()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn hashes_verify_and_differ() {
        let a = super::hash("correct horse");
        let b = super::hash("correct horse");
        assert_ne!(a, b, "salted");
        assert!(a.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"));
        assert!(super::verify(&a, "correct horse"));
        assert!(!super::verify(&a, "correct hors"));
        assert!(!super::verify("not a hash", "x"));
    }
}
