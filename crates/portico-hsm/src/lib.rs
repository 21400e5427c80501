//! Token signing keys inside a PKCS#11 module: a bank's HSM in production,
//! SoftHSM2 in the tests.
//!
//! - A key is generated inside the token (`CKA_SENSITIVE`, not
//!   `CKA_EXTRACTABLE`): its private half never leaves it, and Portico
//!   stores only the key's label (sealed) and reads its public half back.
//! - A module is loaded and initialized once per process, whatever number
//!   of [`Hsm`]s use it (PKCS#11 allows one `C_Initialize` per process).
//! - Sessions are pooled; a session the module no longer knows (the token
//!   was reset, logged out, unplugged) is dropped and the next call opens
//!   and logs in a new one, so the service recovers without a restart.
//!   While the module cannot sign, signing answers
//!   [`SignError::Unavailable`] and the caller answers 503.
//! - A key is generated while nothing else in the process uses a token:
//!   SoftHSM2's file object store fails a creation that meets another
//!   session's reads (`CKR_GENERAL_ERROR`, now and then). Everything else
//!   (signing above all) runs concurrently; a generation waits for the
//!   calls in flight and holds new ones for its own duration, which is
//!   rare (a key's rotation) and short. A call held so on a worker of a
//!   multi-threaded runtime leaves the worker's other tasks to another
//!   thread, so requests that do not sign are not held with it.
//! - RS256 (`CKM_SHA256_RSA_PKCS`), PS256 (`CKM_SHA256_RSA_PKCS_PSS`,
//!   MGF1-SHA-256, salt 32) and ES256 (`CKM_ECDSA` over the SHA-256 digest,
//!   answered as `r || s`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{
    Arc, LockResult, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError, TryLockResult,
};

use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::error::{Error as CkError, RvError};
use cryptoki::mechanism::rsa::{PkcsMgfType, PkcsPssParams};
use cryptoki::mechanism::{Mechanism, MechanismType};
use cryptoki::object::{Attribute, AttributeType, ObjectClass, ObjectHandle};
use cryptoki::session::{Session, UserType};
use cryptoki::slot::Slot;
use cryptoki::types::AuthPin;
use portico_crypto::jwt::{Algorithm, RemotePublic, RemoteSigner, SignError};

/// DER of the OID of P-256 (prime256v1), the `CKA_EC_PARAMS` of ES256 keys.
const P256_PARAMS: &[u8] = &[0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07];
/// Sessions kept open for reuse.
const MAX_IDLE_SESSIONS: usize = 8;

/// Why the module could not be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HsmError {
    /// Configuration: a module that does not load, no such token, a wrong
    /// PIN, a key that is not there or of another kind.
    #[error("{0}")]
    Setup(String),
    /// The module cannot serve now (device error, token removed, session
    /// lost); another attempt may succeed.
    #[error("the HSM cannot serve now: {0}")]
    Unavailable(String),
}

impl From<HsmError> for SignError {
    fn from(error: HsmError) -> Self {
        Self::Unavailable(error.to_string())
    }
}

/// Taken shared by every call on a token, exclusively by a key's
/// generation (see the module's notes).
static TOKENS: RwLock<()> = RwLock::new(());

/// A call's share of [`TOKENS`].
fn shared() -> RwLockReadGuard<'static, ()> {
    held(TOKENS.try_read(), || TOKENS.read())
}

/// [`TOKENS`] alone, for a generation.
fn alone() -> RwLockWriteGuard<'static, ()> {
    held(TOKENS.try_write(), || TOKENS.write())
}

/// The guard `tried` got, or else the one `lock` waits for, with the
/// worker's other tasks moved to another thread while it waits when called
/// on a worker of a multi-threaded runtime.
fn held<G>(tried: TryLockResult<G>, lock: impl FnOnce() -> LockResult<G>) -> G {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let wait = || lock().unwrap_or_else(PoisonError::into_inner);
    match tried {
        Ok(guard) => guard,
        Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(TryLockError::WouldBlock) => match Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(wait),
            _ => wait(),
        },
    }
}

/// The loaded modules of this process, by path.
static MODULES: Mutex<Vec<(PathBuf, Pkcs11)>> = Mutex::new(Vec::new());

/// The module at `path`, loaded and initialized on first use.
///
/// # Errors
/// When the library does not load or initialize.
pub fn module(path: &Path) -> Result<Pkcs11, HsmError> {
    let mut modules = MODULES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, context)) = modules.iter().find(|(p, _)| p == path) {
        return Ok(context.clone());
    }
    let context = Pkcs11::new(path)
        .map_err(|e| HsmError::Setup(format!("the PKCS#11 module {} does not load: {e}", path.display())))?;
    match context.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK)) {
        Ok(()) | Err(CkError::Pkcs11(RvError::CryptokiAlreadyInitialized, _)) => {}
        Err(e) => return Err(HsmError::Setup(format!("the PKCS#11 module {} does not start: {e}", path.display()))),
    }
    modules.push((path.to_owned(), context.clone()));
    Ok(context)
}

/// One token of a module, logged in with its user PIN.
pub struct Hsm {
    context: Pkcs11,
    slot: Slot,
    token: String,
    pin: AuthPin,
    idle: Mutex<Vec<Session>>,
    handles: Mutex<HashMap<String, ObjectHandle>>,
}

impl std::fmt::Debug for Hsm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hsm").field("token", &self.token).finish_non_exhaustive()
    }
}

impl Hsm {
    /// The token labelled `token` in the module at `module_path`, checked
    /// by logging in with `pin`.
    ///
    /// # Errors
    /// [`HsmError::Setup`] for a module that does not load, no token of
    /// that label, or a PIN the token refuses.
    pub fn open(module_path: &Path, token: &str, pin: &str) -> Result<Arc<Self>, HsmError> {
        let context = module(module_path)?;
        let slots = context
            .get_slots_with_token()
            .map_err(|e| HsmError::Setup(format!("the PKCS#11 module lists no slots: {e}")))?;
        let slot = slots
            .into_iter()
            .find(|slot| context.get_token_info(*slot).is_ok_and(|info| info.label().trim_end() == token))
            .ok_or_else(|| HsmError::Setup(format!("the PKCS#11 module has no token labelled {token:?}")))?;
        let hsm = Arc::new(Self {
            context,
            slot,
            token: token.to_owned(),
            pin: AuthPin::from(pin.to_owned()),
            idle: Mutex::new(Vec::new()),
            handles: Mutex::new(HashMap::new()),
        });
        let opened = {
            let _shared = shared();
            hsm.open_session()
        };
        let session = opened.map_err(|e| match e {
            HsmError::Unavailable(why) => HsmError::Setup(why),
            setup @ HsmError::Setup(_) => setup,
        })?;
        hsm.put_back(session);
        Ok(hsm)
    }

    fn open_session(&self) -> Result<Session, HsmError> {
        let session = self.context.open_rw_session(self.slot).map_err(|e| unavailable("open a session", &e))?;
        match session.login(UserType::User, Some(&self.pin)) {
            Ok(()) | Err(CkError::Pkcs11(RvError::UserAlreadyLoggedIn, _)) => Ok(session),
            Err(CkError::Pkcs11(RvError::PinIncorrect | RvError::PinInvalid | RvError::PinLenRange, _)) => {
                Err(HsmError::Unavailable(format!("the token {:?} refuses the PIN", self.token)))
            }
            Err(CkError::Pkcs11(RvError::PinLocked, _)) => {
                Err(HsmError::Unavailable(format!("the token {:?} has locked its user PIN", self.token)))
            }
            Err(e) => Err(unavailable("log in", &e)),
        }
    }

    fn put_back(&self, session: Session) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < MAX_IDLE_SESSIONS {
            idle.push(session);
        }
    }

    /// Runs `work` (`what` it does, for errors) on a pooled session, with
    /// the process's other calls on tokens (see [`TOKENS`]); a session the
    /// module lost is dropped and `work` tried once more on a new one.
    fn with_session<T>(&self, what: &str, work: impl Fn(&Session) -> Result<T, CkError>) -> Result<T, HsmError> {
        let _shared = shared();
        self.with_session_unlocked(what, work)
    }

    /// [`Hsm::with_session`] for a call that creates objects: alone.
    fn with_session_alone<T>(&self, what: &str, work: impl Fn(&Session) -> Result<T, CkError>) -> Result<T, HsmError> {
        let _alone = alone();
        self.with_session_unlocked(what, work)
    }

    fn with_session_unlocked<T>(
        &self,
        what: &str,
        work: impl Fn(&Session) -> Result<T, CkError>,
    ) -> Result<T, HsmError> {
        for attempt in 0..2 {
            let pooled = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            let session = match pooled {
                Some(session) => session,
                None => self.open_session()?,
            };
            match work(&session) {
                Ok(value) => {
                    self.put_back(session);
                    return Ok(value);
                }
                Err(error) if attempt == 0 && session_lost(&error) => {
                    // Every pooled session went with it; start afresh.
                    self.idle.lock().unwrap_or_else(|e| e.into_inner()).clear();
                    self.handles.lock().unwrap_or_else(|e| e.into_inner()).clear();
                }
                Err(error) if session_lost(&error) => return Err(unavailable(what, &error)),
                Err(error) => {
                    self.put_back(session);
                    return Err(unavailable(what, &error));
                }
            }
        }
        Err(HsmError::Unavailable("the module lost the session twice".to_owned()))
    }

    /// Generates a key pair of `alg` inside the token under `label`: the
    /// private half sensitive and not extractable. Returns its public half.
    ///
    /// # Errors
    /// [`HsmError`] when the module refuses.
    pub fn generate(&self, alg: Algorithm, label: &str) -> Result<RemotePublic, HsmError> {
        let common = |private: bool| {
            let mut attributes = vec![
                Attribute::Token(true),
                Attribute::Label(label.as_bytes().to_vec()),
                Attribute::Id(label.as_bytes().to_vec()),
            ];
            if private {
                attributes.extend([
                    Attribute::Private(true),
                    Attribute::Sensitive(true),
                    Attribute::Extractable(false),
                    Attribute::Sign(true),
                ]);
            } else {
                attributes.push(Attribute::Verify(true));
            }
            attributes
        };
        let (mechanism, mut public) = match alg {
            Algorithm::Rs256 | Algorithm::Ps256 => (
                Mechanism::RsaPkcsKeyPairGen,
                vec![Attribute::ModulusBits(2048.into()), Attribute::PublicExponent(vec![1, 0, 1])],
            ),
            Algorithm::Es256 => (Mechanism::EccKeyPairGen, vec![Attribute::EcParams(P256_PARAMS.to_vec())]),
            Algorithm::EdDsa => {
                return Err(HsmError::Setup(
                    "EdDSA keys are not kept in the HSM: use RS256, PS256 or ES256".to_owned(),
                ));
            }
        };
        public.extend(common(false));
        let private = common(true);
        self.with_session_alone("generate a key", |session| session.generate_key_pair(&mechanism, &public, &private))?;
        tracing::info!(token = %self.token, %label, %alg, "generated a signing key inside the HSM");
        self.public_key(alg, label)
    }

    /// The public half of the key labelled `label`, checked to be of `alg`.
    ///
    /// # Errors
    /// [`HsmError::Setup`] when there is no such key or it is of another kind.
    pub fn public_key(&self, alg: Algorithm, label: &str) -> Result<RemotePublic, HsmError> {
        let missing = || HsmError::Setup(format!("the token {:?} has no public key labelled {label:?}", self.token));
        let wanted = match alg {
            Algorithm::Rs256 | Algorithm::Ps256 => vec![AttributeType::Modulus, AttributeType::PublicExponent],
            Algorithm::Es256 => vec![AttributeType::EcParams, AttributeType::EcPoint],
            Algorithm::EdDsa => return Err(missing()),
        };
        let attributes = self.with_session("read a public key", |session| {
            let found = session.find_objects(&[
                Attribute::Class(ObjectClass::PUBLIC_KEY),
                Attribute::Label(label.as_bytes().to_vec()),
            ])?;
            match found.first() {
                Some(handle) => session.get_attributes(*handle, &wanted).map(Some),
                None => Ok(None),
            }
        })?;
        let attributes = attributes.ok_or_else(missing)?;
        let wrong = || HsmError::Setup(format!("the key {label:?} in the HSM is not a {alg} key"));
        match alg {
            Algorithm::Es256 => {
                let (mut params, mut point) = (None, None);
                for attribute in attributes {
                    match attribute {
                        Attribute::EcParams(value) => params = Some(value),
                        Attribute::EcPoint(value) => point = Some(value),
                        _ => {}
                    }
                }
                if params.as_deref() != Some(P256_PARAMS) {
                    return Err(wrong());
                }
                // CKA_EC_POINT is a DER OCTET STRING of the uncompressed point.
                let point = point.ok_or_else(wrong)?;
                let raw = point.strip_prefix(&[0x04, 0x41][..]).unwrap_or(&point);
                let xy = raw.strip_prefix(&[0x04][..]).filter(|xy| xy.len() == 64).ok_or_else(wrong)?;
                Ok(RemotePublic::P256 { x: xy[..32].to_vec(), y: xy[32..].to_vec() })
            }
            _ => {
                let (mut n, mut e) = (None, None);
                for attribute in attributes {
                    match attribute {
                        Attribute::Modulus(value) => n = Some(value),
                        Attribute::PublicExponent(value) => e = Some(value),
                        _ => {}
                    }
                }
                let (n, e) = n.zip(e).ok_or_else(wrong)?;
                if n.len() < 256 {
                    return Err(HsmError::Setup(format!("the key {label:?} in the HSM is shorter than 2048 bits")));
                }
                Ok(RemotePublic::Rsa { n, e })
            }
        }
    }

    /// Whether the private key labelled `label` is marked sensitive and not
    /// extractable, and refuses to show its private value.
    ///
    /// # Errors
    /// [`HsmError`] when the key is not there.
    pub fn private_key_is_protected(&self, label: &str) -> Result<bool, HsmError> {
        self.with_session("read a private key's flags", |session| {
            let found = session.find_objects(&[
                Attribute::Class(ObjectClass::PRIVATE_KEY),
                Attribute::Label(label.as_bytes().to_vec()),
            ])?;
            let Some(handle) = found.first().copied() else { return Ok(false) };
            let flags = session.get_attributes(handle, &[AttributeType::Sensitive, AttributeType::Extractable])?;
            let sensitive = flags.contains(&Attribute::Sensitive(true));
            let extractable = flags.contains(&Attribute::Extractable(true));
            let secret = session.get_attributes(
                handle,
                &[AttributeType::PrivateExponent, AttributeType::Value, AttributeType::Prime1],
            );
            let shown = secret.is_ok_and(|values| {
                values.iter().any(|value| {
                    matches!(value, Attribute::PrivateExponent(v) | Attribute::Value(v) | Attribute::Prime1(v) if !v.is_empty())
                })
            });
            Ok(sensitive && !extractable && !shown)
        })
    }

    /// A signer for the private key labelled `label`, of `alg`.
    pub fn signer(self: &Arc<Self>, alg: Algorithm, label: &str) -> Arc<dyn RemoteSigner> {
        Arc::new(HsmKey { hsm: Arc::clone(self), alg, label: label.to_owned() })
    }

    fn private_handle(&self, session: &Session, label: &str) -> Result<Option<ObjectHandle>, CkError> {
        if let Some(handle) = self.handles.lock().unwrap_or_else(|e| e.into_inner()).get(label) {
            return Ok(Some(*handle));
        }
        let found = session
            .find_objects(&[Attribute::Class(ObjectClass::PRIVATE_KEY), Attribute::Label(label.as_bytes().to_vec())])?;
        let handle = found.first().copied();
        if let Some(handle) = handle {
            self.handles.lock().unwrap_or_else(|e| e.into_inner()).insert(label.to_owned(), handle);
        }
        Ok(handle)
    }

    fn sign(&self, alg: Algorithm, label: &str, message: &[u8]) -> Result<Vec<u8>, HsmError> {
        let (mechanism, input) = match alg {
            Algorithm::Rs256 => (Mechanism::Sha256RsaPkcs, message.to_vec()),
            Algorithm::Ps256 => (
                Mechanism::Sha256RsaPkcsPss(PkcsPssParams {
                    hash_alg: MechanismType::SHA256,
                    mgf: PkcsMgfType::MGF1_SHA256,
                    s_len: 32.into(),
                }),
                message.to_vec(),
            ),
            Algorithm::Es256 => {
                (Mechanism::Ecdsa, aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, message).as_ref().to_vec())
            }
            Algorithm::EdDsa => return Err(HsmError::Setup("EdDSA keys are not kept in the HSM".to_owned())),
        };
        let signed = self.with_session("sign", |session| match self.private_handle(session, label)? {
            Some(handle) => session.sign(&mechanism, handle, &input).map(Some),
            None => Ok(None),
        });
        match signed {
            Ok(Some(signature)) => Ok(signature),
            Ok(None) => {
                Err(HsmError::Unavailable(format!("the token {:?} has no private key labelled {label:?}", self.token)))
            }
            Err(error) => {
                // A handle may be stale after the token changed.
                self.handles.lock().unwrap_or_else(|e| e.into_inner()).remove(label);
                Err(error)
            }
        }
    }
}

/// One private key in the token.
struct HsmKey {
    hsm: Arc<Hsm>,
    alg: Algorithm,
    label: String,
}

impl RemoteSigner for HsmKey {
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, SignError> {
        let started = std::time::Instant::now();
        let signed = self.hsm.sign(self.alg, &self.label, message);
        if let Err(error) = &signed {
            tracing::warn!(token = %self.hsm.token, label = %self.label, %error, "the HSM did not sign");
        }
        tracing::trace!(elapsed_us = started.elapsed().as_micros() as u64, "HSM signature");
        Ok(signed?)
    }
}

/// Errors after which the session (and the login) are gone.
fn session_lost(error: &CkError) -> bool {
    matches!(
        error,
        CkError::Pkcs11(
            RvError::SessionHandleInvalid
                | RvError::SessionClosed
                | RvError::UserNotLoggedIn
                | RvError::DeviceRemoved
                | RvError::TokenNotPresent
                | RvError::ObjectHandleInvalid
                | RvError::KeyHandleInvalid,
            _
        )
    )
}

fn unavailable(what: &str, error: &CkError) -> HsmError {
    HsmError::Unavailable(format!("could not {what}: {error}"))
}

/// The label of a new key of `alg`: `portico-<alg>-<random>`.
pub fn new_label(alg: Algorithm) -> String {
    let mut random = [0u8; 8];
    aws_lc_rs::rand::fill(&mut random).expect("randomness");
    let random: String = random.iter().map(|b| format!("{b:02x}")).collect();
    format!("portico-{}-{random}", alg.as_str().to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// The bound on a wait that only a failure makes long.
    const BOUND: Duration = Duration::from_secs(10);

    #[test]
    fn calls_held_by_a_generation_leave_their_workers_to_other_tasks() {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
        let generation = TOKENS.write().unwrap();
        // Both workers run a call that waits for the generation.
        let (started, calls_started) = mpsc::channel();
        let calls: Vec<_> = (0..2)
            .map(|_| {
                let started = started.clone();
                runtime.spawn(async move {
                    started.send(()).unwrap();
                    drop(shared());
                })
            })
            .collect();
        for _ in 0..2 {
            calls_started.recv_timeout(BOUND).expect("the calls start");
        }
        // A task that does not sign is still served meanwhile.
        let (served, answer) = mpsc::channel();
        runtime.spawn(async move { served.send(()).unwrap() });
        let other_task_served = answer.recv_timeout(BOUND).is_ok();
        drop(generation);
        for call in calls {
            runtime.block_on(call).expect("the held call ends once the generation does");
        }
        assert!(other_task_served, "both workers were held by calls waiting for the generation");
    }
}
