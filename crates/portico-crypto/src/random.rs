//! Random values from the operating system's CSPRNG.

use aws_lc_rs::rand::{SecureRandom as _, SystemRandom};

/// `N` random bytes.
///
/// # Panics
/// Only if the operating system's random source fails, which leaves no safe
/// way to continue.
pub fn bytes<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    SystemRandom::new().fill(&mut out).expect("the system random source failed");
    out
}

/// An opaque token with 256 bits of entropy, as unpadded Base64URL (43 characters).
pub fn token() -> String {
    crate::b64url(bytes::<32>())
}
