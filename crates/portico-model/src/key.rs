//! Token signing keys as stored.

use time::OffsetDateTime;

/// One signing key. The private half is sealed (encrypted) before storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SigningKeyRecord {
    /// RFC 7638 thumbprint of the public key: stable for the key's lifetime.
    pub kid: String,
    /// The JWS algorithm the key signs with (`RS256`, `PS256`, `ES256`,
    /// `EdDSA`); each algorithm has at most one active key.
    pub alg: String,
    /// PKCS#8 DER of the private key, sealed with the instance secret.
    pub private_sealed: Vec<u8>,
    pub created_at: OffsetDateTime,
    /// When a newer key took over signing; `None` for the active key.
    pub retired_at: Option<OffsetDateTime>,
}
