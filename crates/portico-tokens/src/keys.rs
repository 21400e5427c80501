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
//!   a miss, at most once a second, so forged `kid`s cannot flood the database;
//!   misses that arrive while one reloads wait for it (the first tokens of a
//!   key rotated on another node all verify).
//! - The JWKS lists the active key and every retired key that may still have
//!   live tokens (the identity service's `key_retention`).
//! - With an HSM ([`HsmKeys`]), new keys of the algorithms it is named for
//!   are generated inside it; storage then keeps only the key's label
//!   (sealed, `PKCS11:<label>`) and the public half is read back from the
//!   module. Keys made before stay where they are until rotated.
//! - A key made elsewhere — by the HSM vendor's tools, or held by a signing
//!   program ([`crate::command`]) — is registered with [`KeyRing::import`]:
//!   storage keeps its label (and, for a program's key, its public half),
//!   and it becomes its algorithm's active key as a rotation would make it.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration as StdDuration, Instant};

use portico_crypto::jwt::{Algorithm, Jwk, RemotePublic, RemoteSigner, SigningKey};
use portico_crypto::seal::Sealer;
use portico_model::key::SigningKeyRecord;
use portico_storage::{Storage, StorageError};
use time::{Duration, OffsetDateTime};

/// Label binding sealed private keys to their use.
const SEAL_LABEL: &str = "portico signing key v1";
/// What a sealed key of an HSM holds before its label; a PKCS#8 key
/// starts with a DER `SEQUENCE` (0x30), never with this.
const HSM_PREFIX: &[u8] = b"PKCS11:";
/// What a sealed key of a signing program holds: the prefix, its label, a
/// NUL, and its public half (a DER SubjectPublicKeyInfo).
const COMMAND_PREFIX: &[u8] = b"COMMAND:";

/// An HSM and the algorithms whose new keys are made inside it.
#[derive(Clone, Debug)]
pub struct HsmKeys {
    pub hsm: Arc<portico_hsm::Hsm>,
    pub algorithms: Vec<Algorithm>,
}

/// Whatever holds keys outside storage: an HSM, a signing program.
#[derive(Clone, Debug, Default)]
pub struct KeyHolders {
    pub hsm: Option<HsmKeys>,
    pub command: Option<crate::CommandKeys>,
}

impl KeyHolders {
    /// The public half of a key held outside storage, and what signs with
    /// it; says which setting is missing when this node has no such holder.
    fn remote(&self, alg: Algorithm, held: &Held<'_>) -> Result<(RemotePublic, Arc<dyn RemoteSigner>), String> {
        match held {
            Held::Sealed(_) => Err("the key is sealed in storage, not held outside".to_owned()),
            Held::Hsm(label) => {
                let hsm = self.hsm.as_ref().ok_or_else(|| {
                    format!("it is kept in an HSM (label {label:?}): configure tokens.hsm on this node")
                })?;
                let public = hsm.hsm.public_key(alg, label).map_err(|e| e.to_string())?;
                Ok((public, hsm.hsm.signer(alg, label)))
            }
            Held::Command(label, spki) => {
                let command = self.command.as_ref().ok_or_else(|| {
                    format!("a signing program holds it (label {label:?}): configure tokens.command on this node")
                })?;
                let public = RemotePublic::from_spki_der(spki)?;
                Ok((public, command.signer(alg, label)))
            }
        }
    }
}

/// Where a stored key's private half is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyLocation {
    /// Sealed PKCS#8 in storage.
    Sealed,
    /// Inside the HSM, under this label.
    Hsm(String),
    /// Held by the signing program, under this label.
    Command(String),
}

/// A key made outside Portico, to register with [`KeyRing::import`].
#[derive(Debug, Clone)]
pub enum ImportedKey {
    /// A key pair in the HSM of `tokens.hsm` with this label.
    Hsm { label: String },
    /// A key the signing program of `tokens.command` signs with under this
    /// label, and its public half (PEM `PUBLIC KEY`).
    Command { label: String, public_key_pem: Vec<u8> },
}

/// The most a label may hold: it is passed to a program or a module.
const MAX_LABEL: usize = 128;

/// Where `record`'s private half is (opening its sealed part).
///
/// # Errors
/// When the sealed part does not open with `sealer`.
pub fn key_location(sealer: &Sealer, record: &SigningKeyRecord) -> Result<KeyLocation, StorageError> {
    let opened = sealer
        .open(SEAL_LABEL, &record.private_sealed)
        .map_err(|e| StorageError::Other(format!("signing key {}: {e}", record.kid)))?;
    Ok(match Held::of(&opened) {
        Held::Sealed(_) => KeyLocation::Sealed,
        Held::Hsm(label) => KeyLocation::Hsm(label),
        Held::Command(label, _) => KeyLocation::Command(label),
    })
}

/// A sealed key's content, by where the private half is.
enum Held<'a> {
    Sealed(&'a [u8]),
    Hsm(String),
    Command(String, &'a [u8]),
}

impl<'a> Held<'a> {
    fn of(opened: &'a [u8]) -> Self {
        if let Some(label) = opened.strip_prefix(HSM_PREFIX) {
            return Self::Hsm(String::from_utf8_lossy(label).into_owned());
        }
        if let Some(rest) = opened.strip_prefix(COMMAND_PREFIX) {
            let split = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
            let (label, public) = rest.split_at(split);
            return Self::Command(String::from_utf8_lossy(label).into_owned(), public.get(1..).unwrap_or_default());
        }
        Self::Sealed(opened)
    }
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
    holders: KeyHolders,
    set: RwLock<Arc<KeySet>>,
    /// When a miss last reloaded; held while it does, so that the misses
    /// meanwhile wait for its outcome rather than refuse.
    last_miss_reload: tokio::sync::Mutex<Option<Instant>>,
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
        Self::load_with(store, sealer, KeyHolders::default(), now, default, algorithms).await
    }

    /// [`KeyRing::load`] with the HSM (which makes the keys of the
    /// algorithms it is named for) and the signing program of this node.
    ///
    /// # Errors
    /// As [`KeyRing::load`], when the HSM cannot make or show a key, and
    /// when a stored key's holder is not configured on this node.
    pub async fn load_with(
        store: Arc<dyn Storage>,
        sealer: Sealer,
        holders: KeyHolders,
        now: OffsetDateTime,
        default: Algorithm,
        algorithms: &[Algorithm],
    ) -> Result<Self, StorageError> {
        let missing_default = (!algorithms.contains(&default)).then_some(&default);
        for alg in algorithms.iter().chain(missing_default) {
            if store.active_signing_kid(alg.as_str()).await?.is_none() {
                let record = new_key_record(&sealer, holders.hsm.as_ref(), *alg, now)?;
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
            holders,
            set: RwLock::new(Arc::default()),
            last_miss_reload: tokio::sync::Mutex::new(None),
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
        Self::rotate_with(store, sealer, &KeyHolders::default(), alg, now).await
    }

    /// [`KeyRing::rotate`], the new key made inside `hsm` when it is named
    /// for `alg`.
    ///
    /// # Errors
    /// When storage fails or the HSM cannot make the key.
    pub async fn rotate_with(
        store: &dyn Storage,
        sealer: &Sealer,
        holders: &KeyHolders,
        alg: Algorithm,
        now: OffsetDateTime,
    ) -> Result<String, StorageError> {
        let record = new_key_record(sealer, holders.hsm.as_ref(), alg, now)?;
        store.rotate_signing_key(&record, now).await?;
        Ok(record.kid)
    }

    /// Registers a key made outside Portico as `alg`'s active key (the
    /// old one retired and still published, as by a rotation), once a
    /// signature it makes verifies with its public half. Returns its `kid`.
    ///
    /// # Errors
    /// A refusal (`StorageError::Other`, saying why): the holder not configured, no such key, a key of another type or
    /// size, an HSM key that could be extracted, a signature that does not
    /// verify, a key already registered; and storage failures.
    pub async fn import(
        store: &dyn Storage,
        sealer: &Sealer,
        holders: &KeyHolders,
        alg: Algorithm,
        imported: &ImportedKey,
        now: OffsetDateTime,
    ) -> Result<String, StorageError> {
        let refused = |why: String| StorageError::Other(why);
        let label = match imported {
            ImportedKey::Hsm { label } | ImportedKey::Command { label, .. } => label,
        };
        if label.is_empty() || label.len() > MAX_LABEL || label.chars().any(char::is_control) {
            return Err(refused(format!("the label must be 1 to {MAX_LABEL} bytes without control characters")));
        }
        if alg == Algorithm::EdDsa {
            return Err(refused("EdDSA keys are kept by Portico only; import an RS256, PS256 or ES256 key".into()));
        }
        let private = match imported {
            ImportedKey::Hsm { label } => [HSM_PREFIX, label.as_bytes()].concat(),
            ImportedKey::Command { label, public_key_pem } => {
                let (_, spki) = RemotePublic::from_spki_pem(public_key_pem).map_err(refused)?;
                [COMMAND_PREFIX, label.as_bytes(), b"\0", &spki].concat()
            }
        };
        let held = Held::of(&private);
        let (public, signer) = holders.remote(alg, &held).map_err(refused)?;
        if let (Held::Hsm(label), Some(hsm)) = (&held, &holders.hsm)
            && !hsm.hsm.private_key_is_protected(label).map_err(|e| refused(e.to_string()))?
        {
            return Err(refused(format!(
                "the HSM holds no private key {label:?} that is sensitive and not extractable \
                 (CKA_SENSITIVE true, CKA_EXTRACTABLE false): Portico signs only with keys that cannot be read out"
            )));
        }
        if matches!(public, RemotePublic::Rsa { .. }) && public.rsa_bits() < 2048 {
            return Err(refused(format!(
                "an RSA key of {} bits: Portico signs with 2048 bits or more",
                public.rsa_bits()
            )));
        }
        let key = SigningKey::from_remote(alg, &public, signer).map_err(|e| refused(e.to_string()))?;
        key.try_sign("JWT", &serde_json::json!({ "probe": "portico keys import" })).map_err(|e| {
            refused(format!("the key {label:?} did not make a signature its public half verifies: {e}"))
        })?;
        if store.list_signing_keys().await?.iter().any(|record| record.kid == key.kid()) {
            return Err(refused(format!("the key {label:?} is registered already (kid {})", key.kid())));
        }
        let record = SigningKeyRecord {
            kid: key.kid().to_owned(),
            alg: alg.as_str().to_owned(),
            private_sealed: sealer.seal(SEAL_LABEL, &private),
            created_at: now,
            retired_at: None,
        };
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
        self.holders.hsm.as_ref()
    }

    /// What holds keys outside storage on this node.
    pub fn holders(&self) -> &KeyHolders {
        &self.holders
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
        let held = Held::of(&der);
        if let Held::Sealed(der) = held {
            return SigningKey::from_pkcs8(alg, der).map_err(|e| failed(&e));
        }
        let (public, signer) = self.holders.remote(alg, &held).map_err(|e| failed(&e))?;
        let key = SigningKey::from_remote(alg, &public, signer).map_err(|e| failed(&e))?;
        if key.kid() != record.kid {
            return Err(failed(&match held {
                Held::Hsm(label) => format!("the HSM's key labelled {label:?} is another key"),
                _ => "its stored public half is another key's".to_owned(),
            }));
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
        let mut last = self.last_miss_reload.lock().await;
        // A reload that ran while this request waited may have brought it.
        if let Some(key) = self.snapshot().by_kid.get(kid) {
            return Ok(Some(Arc::clone(key)));
        }
        if last.is_some_and(|at| at.elapsed() < MISS_RELOAD_INTERVAL) {
            return Ok(None);
        }
        *last = Some(Instant::now());
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
