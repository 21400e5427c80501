//! User passwords: Argon2id with OWASP's parameters (19 MiB, t=2, p=1).
//!
//! Each hash costs tens of milliseconds and 19 MiB: callers cap how many run
//! at once and run them off the async executor.

use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier as _, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};

fn params() -> Params {
    Params::new(19 * 1024, 2, 1, None).expect("valid Argon2 parameters")
}

fn argon2() -> Argon2<'static> {
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params())
}

/// The 19 MiB one Argon2id run works in, kept for the next run: reusing it
/// spares the kernel faulting in (and zeroing) fresh pages every time,
/// about a fifth of a verification's CPU.
pub struct Memory(Vec<Block>);

impl Memory {
    pub fn new() -> Self {
        Self(vec![Block::default(); params().block_count()])
    }
}

impl Default for Memory {
    fn default() -> Self {
        Self::new()
    }
}

/// [`verify`] working in `memory`. A hash made with other parameters
/// (an older policy) is verified as [`verify`] does.
pub fn verify_in(memory: &mut Memory, stored: &str, password: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(stored) else { return false };
    let ours = params();
    let same_policy = parsed.algorithm == Algorithm::Argon2id.ident()
        && parsed.version == Some(Version::V0x13.into())
        && Params::try_from(&parsed)
            .is_ok_and(|p| (p.m_cost(), p.t_cost(), p.p_cost()) == (ours.m_cost(), ours.t_cost(), ours.p_cost()));
    let (Some(salt), Some(expected)) = (parsed.salt, parsed.hash) else { return false };
    if !same_policy || memory.0.len() != ours.block_count() {
        return argon2().verify_password(password.as_bytes(), &parsed).is_ok();
    }
    let mut salt_bytes = [0_u8; 64];
    let Ok(salt) = salt.decode_b64(&mut salt_bytes) else { return false };
    let mut computed = vec![0_u8; expected.len()];
    argon2().hash_password_into_with_memory(password.as_bytes(), salt, &mut computed, &mut memory.0[..]).is_ok()
        && crate::constant_time_eq(&computed, expected.as_bytes())
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

    #[test]
    fn verification_in_kept_memory_agrees_with_the_plain_one() {
        let mut memory = super::Memory::new();
        let stored = super::hash("correct horse");
        for _ in 0..2 {
            assert!(super::verify_in(&mut memory, &stored, "correct horse"), "memory reused");
            assert!(!super::verify_in(&mut memory, &stored, "correct hors"));
        }
        assert!(!super::verify_in(&mut memory, "not a hash", "x"));
        // A hash of an older policy (other costs) still verifies, the plain way.
        let older = argon2::Argon2::new(
            argon2::Algorithm::Argon2id,
            argon2::Version::V0x13,
            argon2::Params::new(8 * 1024, 1, 1, None).unwrap(),
        );
        let salt = argon2::password_hash::SaltString::encode_b64(b"0123456789abcdef").unwrap();
        let older = argon2::password_hash::PasswordHasher::hash_password(&older, b"old", &salt).unwrap().to_string();
        assert!(super::verify_in(&mut memory, &older, "old"));
        assert!(!super::verify_in(&mut memory, &older, "new"));
    }
}
