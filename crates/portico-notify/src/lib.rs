//! Merchant notifications (`spec/2-notifications-and-reports.md`, part A).
//!
//! - the canonical events and settings are plain data in
//!   [`portico_model::notify`];
//! - [`render`]: one renderer per payload version, producing the body that
//!   is sent and the check string that is signed, from the same values, so
//!   that a number or date is written in the check string exactly as it
//!   stands in the body;
//! - [`sign`]: the `X-Api-Signature-SHA256` header value.

pub mod render;

/// The signature of a check string: lowercase hex HMAC-SHA-256 under the
/// merchant's key.
pub fn sign(key: &[u8], check: &str) -> String {
    portico_crypto::hash::hmac_sha256_hex(key, check.as_bytes())
}
