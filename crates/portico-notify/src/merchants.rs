//! Merchants and their API keys: a new key is 256 random bits, shown once;
//! it is stored as a SHA-256 hash (to find the merchant by the key it
//! presents) and sealed under the instance secret (to sign notifications).

use portico_crypto::seal::Sealer;
use portico_model::notify::{Merchant, MerchantIds};
use portico_storage::{Storage, StorageError};
use time::OffsetDateTime;

/// The label keys are sealed under.
const SEAL_LABEL: &str = "merchant api key";

/// A new key: the value to hand to the merchant, and its stored forms.
pub struct NewKey {
    pub value: String,
    pub hash: String,
    pub sealed: Vec<u8>,
}

impl NewKey {
    pub fn generate(sealer: &Sealer) -> Self {
        let value = portico_crypto::random::token();
        Self { hash: key_hash(&value), sealed: sealer.seal(SEAL_LABEL, value.as_bytes()), value }
    }
}

/// How a presented key is looked up.
pub fn key_hash(key: &str) -> String {
    portico_crypto::hash::token_hash(key)
}

/// The merchant's key, for signing.
///
/// # Errors
/// When the sealed key does not open (another instance secret, a damaged row).
pub fn signing_key(sealer: &Sealer, merchant: &Merchant) -> Result<Vec<u8>, StorageError> {
    sealer
        .open(SEAL_LABEL, &merchant.key_sealed)
        .map_err(|_| StorageError::Other(format!("the key of merchant {} cannot be opened", merchant.ids.merchant_id)))
}

/// Why merchant ids were refused.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InvalidMerchant(pub String);

/// Checks the ids a merchant is created with.
///
/// # Errors
/// Names the id that is empty, too long or has other characters than
/// Latin letters, digits, `-`, `_`, `.`.
pub fn check_ids(ids: &MerchantIds) -> Result<(), InvalidMerchant> {
    for (name, value, max) in [
        ("merchant id", &ids.merchant_id, 64),
        ("public id", &ids.public_id, 64),
        ("SBP merchant id", &ids.sbp_merchant_id, 12),
    ] {
        let ok = !value.is_empty()
            && value.len() <= max
            && value.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !ok {
            return Err(InvalidMerchant(format!(
                "{name} {value:?}: 1 to {max} Latin letters, digits, '-', '_' or '.'"
            )));
        }
    }
    Ok(())
}

/// Creates a merchant and returns its key (shown once).
///
/// # Errors
/// [`StorageError::Conflict`] for a taken id.
pub async fn create(
    store: &dyn Storage,
    sealer: &Sealer,
    ids: MerchantIds,
    now: OffsetDateTime,
) -> Result<String, StorageError> {
    let key = NewKey::generate(sealer);
    store
        .create_merchant(&Merchant { ids, key_hash: key.hash, key_sealed: key.sealed, settings: None, created_at: now })
        .await?;
    Ok(key.value)
}

/// Gives a merchant a new key; the old one stops working at once. `None`
/// for an unknown merchant.
///
/// # Errors
/// When the store fails.
pub async fn rotate_key(
    store: &dyn Storage,
    sealer: &Sealer,
    merchant_id: &str,
) -> Result<Option<String>, StorageError> {
    let key = NewKey::generate(sealer);
    Ok(store.set_merchant_key(merchant_id, &key.hash, &key.sealed).await?.then_some(key.value))
}
