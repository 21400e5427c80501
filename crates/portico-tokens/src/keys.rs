//! The signing key ring: keys of each JWS algorithm kept in storage
//! (private halves sealed), cached here parsed and ready.
//!
//! - Each algorithm has its own active key, rotation and overlap; the ring
//!   holds keys for the algorithms it was loaded with, and signs with the
//!   server's default algorithm unless asked for another.
//! - Signing asks storage for the algorithm's active `kid` first (one
//!   indexed read, answered by the node's memory), so a `portico keys
//!   rotate` from another process takes effect within the staleness bound.
//! - Verification looks the `kid` up in the cache and reloads from storage on
//!   a miss, at most once a second, so forged `kid`s cannot flood the database.
//! - The JWKS lists the active key and every retired key that may still have
//!   live tokens (the identity service's `key_retention`).
//! - With an HSM ([`HsmKeys`]), new keys of the algorithms it is named for
//!   are generated inside it; storage then keeps only the key's label
//!   (sealed, `PKCS11:<label>`) and the public half is read back from the
//!   module. Keys made before stay where they are until rotated.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration as StdDuration, Instant};

use portico_crypto::jwt::{Algorithm, Jwk, SigningKey};
use portico_crypto::seal::Sealer;
use portico_model::key::SigningKeyRecord;
use portico_storage::{Storage, StorageError};
use time::{Duration, OffsetDateTime};

/// Label binding sealed private keys to their use.
const SEAL_LABEL: &str = "portico signing key v1";
/// What a sealed key of an HSM holds before its label; a PKCS#8 key
/// starts with a DER `SEQUENCE` (0x30), never with this.
const HSM_PREFIX: &[u8] = b"PKCS11:";

/// An HSM and the algorithms whose new keys are made inside it.
#[derive(Clone, Debug)]
pub struct HsmKeys {
    pub hsm: Arc<portico_hsm::Hsm>,
    pub algorithms: Vec<Algorithm>,
}

/// Where a stored key's private half is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyLocation {
    /// Sealed PKCS#8 in storage.
    Sealed,
    /// Inside the HSM, under this label.
    Hsm(String),
}

/// Where `record`'s private half is (opening its sealed part).
///
/// # Errors
/// When the sealed part does not open with `sealer`.
pub fn key_location(sealer: &Sealer, record: &SigningKeyRecord) -> Result<KeyLocation, StorageError> {
    let opened = sealer
        .open(SEAL_LABEL, &record.private_sealed)
        .map_err(|e| StorageError::Other(format!("signing key {}: {e}", record.kid)))?;
    Ok(match opened.strip_prefix(HSM_PREFIX) {
        Some(label) => KeyLocation::Hsm(String::from_utf8_lossy(label).into_owned()),
        None => KeyLocation::Sealed,
    })
}
const MISS_RELOAD_INTERVAL: StdDuration = StdDuration::from_secs(1);

#[derive(Default)]
struct KeySet {
    active: HashMap<Algorithm, Arc<SigningKey>>,
    by_kid: HashMap<String, Arc<SigningKey>>,
    records: Vec<(String, Option<OffsetDateTime>)>,
}

pub struct KeyRing {
    store: Arc<dyn Storage>,
    /// The algorithm tokens are signed with unless a client asks for another.
    default: Algorithm,
    /// Every algorithm the ring keeps a key of: the default, then the
    /// others in [`Algorithm::ALL`] order.
    algorithms: Vec<Algorithm>,
    sealer: Sealer,
    hsm: Option<HsmKeys>,
    set: RwLock<Arc<KeySet>>,
    last_miss_reload: Mutex<Option<Instant>>,
}

impl KeyRing {
    /// Loads the keys, generating and storing the first key of each of
    /// `algorithms` that has none; `default` (one of them) signs unless a
    /// client asks for another.
    ///
    /// # Errors
    /// When storage fails or a stored key cannot be opened with this sealer
    /// (a different instance secret).
    pub async fn load(
        store: Arc<dyn Storage>,
        sealer: Sealer,
        now: OffsetDateTime,
        default: Algorithm,
        algorithms: &[Algorithm],
    ) -> Result<Self, StorageError> {
        Self::load_with(store, sealer, None, now, default, algorithms).await
    }

    /// [`KeyRing::load`] with an HSM for the keys it is named for.
    ///
    /// # Errors
    /// As [`KeyRing::load`], and when the HSM cannot make or show a key.
    pub async fn load_with(
        store: Arc<dyn Storage>,
        sealer: Sealer,
        hsm: Option<HsmKeys>,
        now: OffsetDateTime,
        default: Algorithm,
        algorithms: &[Algorithm],
    ) -> Result<Self, StorageError> {
        let missing_default = (!algorithms.contains(&default)).then_some(&default);
        for alg in algorithms.iter().chain(missing_default) {
            if store.active_signing_kid(alg.as_str()).await?.is_none() {
                let record = new_key_record(&sealer, hsm.as_ref(), *alg, now)?;
                if store.insert_first_signing_key(&record).await? {
                    tracing::info!(kid = %record.kid, alg = %alg, "generated the first token signing key");
                }
            }
        }
        let others = Algorithm::ALL.into_iter().filter(|alg| *alg != default && algorithms.contains(alg));
        let algorithms = std::iter::once(default).chain(others).collect();
        let ring = Self {
            store,
            default,
            algorithms,
            sealer,
            hsm,
            set: RwLock::new(Arc::default()),
            last_miss_reload: Mutex::new(None),
        };
        ring.reload().await?;
        Ok(ring)
    }

    /// Generates a new key of `alg`, makes it that algorithm's active one
    /// and retires the old one. Returns the new `kid`.
    ///
    /// # Errors
    /// When storage fails.
    pub async fn rotate(
        store: &dyn Storage,
        sealer: &Sealer,
        alg: Algorithm,
        now: OffsetDateTime,
    ) -> Result<String, StorageError> {
        Self::rotate_with(store, sealer, None, alg, now).await
    }

    /// [`KeyRing::rotate`], the new key made inside `hsm` when it is named
    /// for `alg`.
    ///
    /// # Errors
    /// When storage fails or the HSM cannot make the key.
    pub async fn rotate_with(
        store: &dyn Storage,
        sealer: &Sealer,
        hsm: Option<&HsmKeys>,
        alg: Algorithm,
        now: OffsetDateTime,
    ) -> Result<String, StorageError> {
        let record = new_key_record(sealer, hsm, alg, now)?;
        store.rotate_signing_key(&record, now).await?;
        Ok(record.kid)
    }

    async fn reload(&self) -> Result<Arc<KeySet>, StorageError> {
        let records = self.store.list_signing_keys().await?;
        let current = self.snapshot();
        let mut set = KeySet::default();
        for record in &records {
            let key = match current.by_kid.get(&record.kid) {
                Some(key) => Arc::clone(key),
                None => Arc::new(self.open(record)?),
            };
            if record.retired_at.is_none() {
                set.active.insert(key.algorithm(), Arc::clone(&key));
            }
            set.by_kid.insert(record.kid.clone(), key);
            set.records.push((record.kid.clone(), record.retired_at));
        }
        let set = Arc::new(set);
        *self.set.write().unwrap_or_else(|e| e.into_inner()) = Arc::clone(&set);
        Ok(set)
    }

    /// The HSM this ring makes keys in, if any.
    pub fn hsm(&self) -> Option<&HsmKeys> {
        self.hsm.as_ref()
    }

    fn open(&self, record: &SigningKeyRecord) -> Result<SigningKey, StorageError> {
        let der = self.sealer.open(SEAL_LABEL, &record.private_sealed).map_err(|e| {
            StorageError::Other(format!(
                "signing key {}: {e}; is PORTICO_SECRET_KEY the one it was made with?",
                record.kid
            ))
        })?;
        let alg = Algorithm::parse(&record.alg).ok_or_else(|| {
            StorageError::Other(format!(
                "signing key {}: the algorithm {:?} is not one Portico knows",
                record.kid, record.alg
            ))
        })?;
        let failed = |e: &dyn std::fmt::Display| StorageError::Other(format!("signing key {}: {e}", record.kid));
        let Some(label) = der.strip_prefix(HSM_PREFIX) else {
            return SigningKey::from_pkcs8(alg, &der).map_err(|e| failed(&e));
        };
        let label = String::from_utf8_lossy(label);
        let hsm = self.hsm.as_ref().ok_or_else(|| {
            failed(&format!("it is kept in an HSM (label {label:?}): configure tokens.hsm on this node"))
        })?;
        let public = hsm.hsm.public_key(alg, &label).map_err(|e| failed(&e))?;
        let key = SigningKey::from_remote(alg, &public, hsm.hsm.signer(alg, &label)).map_err(|e| failed(&e))?;
        if key.kid() != record.kid {
            return Err(failed(&format!("the HSM's key labelled {label:?} is another key")));
        }
        Ok(key)
    }

    fn snapshot(&self) -> Arc<KeySet> {
        Arc::clone(&self.set.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// The server's default algorithm.
    pub fn default_algorithm(&self) -> Algorithm {
        self.default
    }

    /// Every algorithm the ring signs with: the ones it was loaded with.
    pub fn algorithms(&self) -> &[Algorithm] {
        &self.algorithms
    }

    /// Whether the ring keeps a key of `alg`.
    pub fn supports(&self, alg: Algorithm) -> bool {
        self.algorithms.contains(&alg)
    }

    /// The key that signs with the default algorithm now.
    ///
    /// # Errors
    /// When storage fails or holds no active key of it.
    pub async fn signing_key(&self) -> Result<Arc<SigningKey>, StorageError> {
        self.signing_key_for(self.default).await
    }

    /// The key that signs with `alg` now.
    ///
    /// # Errors
    /// When storage fails or holds no active key of `alg`.
    pub async fn signing_key_for(&self, alg: Algorithm) -> Result<Arc<SigningKey>, StorageError> {
        let active = self.store.active_signing_kid(alg.as_str()).await?;
        let set = self.snapshot();
        let set = match (set.active.get(&alg), &active) {
            (Some(key), Some(kid)) if key.kid() == kid => set,
            _ => self.reload().await?,
        };
        set.active.get(&alg).cloned().ok_or_else(|| {
            StorageError::Other(format!(
                "there is no active {alg} signing key: add {alg} to keys.algorithms, or run `portico keys rotate --alg {alg}`"
            ))
        })
    }

    /// The key with `kid`, reloading once on a miss.
    ///
    /// # Errors
    /// When the reload fails.
    pub async fn key(&self, kid: &str) -> Result<Option<Arc<SigningKey>>, StorageError> {
        if let Some(key) = self.snapshot().by_kid.get(kid) {
            return Ok(Some(Arc::clone(key)));
        }
        {
            let mut last = self.last_miss_reload.lock().unwrap_or_else(|e| e.into_inner());
            if last.is_some_and(|at| at.elapsed() < MISS_RELOAD_INTERVAL) {
                return Ok(None);
            }
            *last = Some(Instant::now());
        }
        Ok(self.reload().await?.by_kid.get(kid).cloned())
    }

    /// The published key set at `now`: the active key and retired keys
    /// retired less than `retention` ago.
    ///
    /// # Errors
    /// When storage fails.
    pub async fn jwks(&self, now: OffsetDateTime, retention: Duration) -> Result<Vec<Jwk>, StorageError> {
        let set = self.reload().await?;
        Ok(set
            .records
            .iter()
            .filter(|(_, retired)| retired.is_none_or(|at| at + retention > now))
            .filter_map(|(kid, _)| set.by_kid.get(kid).map(|key| key.jwk().clone()))
            .collect())
    }
}

fn new_key_record(
    sealer: &Sealer,
    hsm: Option<&HsmKeys>,
    alg: Algorithm,
    now: OffsetDateTime,
) -> Result<SigningKeyRecord, StorageError> {
    let (kid, private) = match hsm.filter(|hsm| hsm.algorithms.contains(&alg)) {
        Some(hsm) => {
            let label = portico_hsm::new_label(alg);
            let public = hsm.hsm.generate(alg, &label).map_err(|e| StorageError::Other(e.to_string()))?;
            let key = SigningKey::from_remote(alg, &public, hsm.hsm.signer(alg, &label))
                .map_err(|e| StorageError::Other(e.to_string()))?;
            (key.kid().to_owned(), [HSM_PREFIX, label.as_bytes()].concat())
        }
        None => {
            let key = SigningKey::generate(alg).map_err(|e| StorageError::Other(e.to_string()))?;
            (key.kid().to_owned(), key.to_pkcs8().map_err(|e| StorageError::Other(e.to_string()))?)
        }
    };
    Ok(SigningKeyRecord {
        kid,
        alg: alg.as_str().to_owned(),
        private_sealed: sealer.seal(SEAL_LABEL, &private),
        created_at: now,
        retired_at: None,
    })
}
