//! Token signing keys as stored.

use time::OffsetDateTime;

/// One RSA signing key. The private half is sealed (encrypted) before storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SigningKeyRecord {
    /// RFC 7638 thumbprint of the public key: stable for the key's lifetime.
    pub kid: String,
    /// PKCS#8 DER of the private key, sealed with the instance secret.
    pub private_sealed: Vec<u8>,
    pub created_at: OffsetDateTime,
    /// When a newer key took over signing; `None` for the active key.
    pub retired_at: Option<OffsetDateTime>,
}
