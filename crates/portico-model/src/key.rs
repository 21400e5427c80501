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

/// A JWS algorithm Portico signs its tokens with (RFC 7518 names; EdDSA is
/// Ed25519, RFC 8037). Serialized as its JWA name.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
pub enum Algorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256: the default, which every client reads.
    #[serde(rename = "RS256")]
    Rs256,
    /// RSASSA-PSS with SHA-256 (salt of 32 bytes).
    #[serde(rename = "PS256")]
    Ps256,
    /// ECDSA on P-256 with SHA-256.
    #[serde(rename = "ES256")]
    Es256,
    /// EdDSA on Ed25519.
    #[serde(rename = "EdDSA")]
    EdDsa,
}

impl Algorithm {
    /// Every algorithm, the default first.
    pub const ALL: [Self; 4] = [Self::Rs256, Self::Ps256, Self::Es256, Self::EdDsa];

    /// The algorithm's JWA name, as in `alg`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Rs256 => "RS256",
            Self::Ps256 => "PS256",
            Self::Es256 => "ES256",
            Self::EdDsa => "EdDSA",
        }
    }

    /// The algorithm named exactly `name` (JWA names are case-sensitive).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|alg| alg.as_str() == name)
    }
}

impl std::fmt::Display for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
