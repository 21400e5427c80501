//! Secrets at rest (private signing keys): AES-256-GCM under a key derived
//! from the instance secret.

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};

#[derive(Debug, thiserror::Error)]
#[error("a sealed secret could not be opened: wrong instance secret or damaged data")]
pub struct OpenError;

/// Encrypts and authenticates small secrets.
pub struct Sealer {
    key: LessSafeKey,
}

impl Sealer {
    /// A sealer under `key` (32 bytes, see [`crate::cookie::derive_key`]).
    ///
    /// # Panics
    /// Never: AES-256 takes any 32-byte key.
    pub fn new(key: &[u8; 32]) -> Self {
        let key = UnboundKey::new(&AES_256_GCM, key).expect("a 32-byte AES-256 key");
        Self { key: LessSafeKey::new(key) }
    }

    /// `nonce || ciphertext || tag`; `label` binds the ciphertext to its use.
    ///
    /// # Panics
    /// Never for inputs under 64 GiB.
    pub fn seal(&self, label: &str, plaintext: &[u8]) -> Vec<u8> {
        let nonce_bytes = crate::random::bytes::<NONCE_LEN>();
        let mut data = plaintext.to_vec();
        self.key
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce_bytes), Aad::from(label), &mut data)
            .expect("AES-GCM sealing of a small secret");
        let mut out = nonce_bytes.to_vec();
        out.extend_from_slice(&data);
        out
    }

    /// Opens what [`Sealer::seal`] produced under the same key and label.
    ///
    /// # Errors
    /// [`OpenError`] for another key, another label or damaged data.
    pub fn open(&self, label: &str, sealed: &[u8]) -> Result<Vec<u8>, OpenError> {
        if sealed.len() < NONCE_LEN {
            return Err(OpenError);
        }
        let (nonce, data) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| OpenError)?;
        let mut data = data.to_vec();
        let plain = self.key.open_in_place(nonce, Aad::from(label), &mut data).map_err(|_| OpenError)?;
        Ok(plain.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_tamper() {
        let sealer = Sealer::new(&[7; 32]);
        let sealed = sealer.seal("key", b"private");
        assert_eq!(sealer.open("key", &sealed).unwrap(), b"private");
        assert!(sealer.open("other", &sealed).is_err());
        assert!(Sealer::new(&[8; 32]).open("key", &sealed).is_err());
        let mut bad = sealed.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert!(sealer.open("key", &bad).is_err());
    }
}
