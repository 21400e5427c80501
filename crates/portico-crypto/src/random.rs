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

/// `n` random decimal digits, each uniform (rejection sampling).
pub fn digits(n: usize) -> String {
    let mut out = String::with_capacity(n);
    while out.len() < n {
        for byte in bytes::<16>() {
            // 250 = 25 * 10: bytes above it would favour the low digits.
            if byte < 250 && out.len() < n {
                out.push(char::from(b'0' + byte % 10));
            }
        }
    }
    out
}
