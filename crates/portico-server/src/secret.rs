//! The instance secret: 32 random bytes from which the cookie-signing key and
//! the key that seals private signing keys are derived.
//!
//! Configured as `secret_key` (`PORTICO_SECRET_KEY`, Base64) in production,
//! where every node needs the same one; otherwise generated once into
//! `<data_dir>/secret.key` (mode 0600).

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use portico_crypto::cookie::{CookieSigner, derive_key};
use portico_crypto::seal::Sealer;

use crate::config::{Config, ConfigError};

pub struct InstanceSecret([u8; 32]);

impl InstanceSecret {
    /// The configured secret, or the one in the data folder (created if absent).
    ///
    /// # Errors
    /// For a configured value that is not Base64 of 32 bytes, or a data
    /// folder that cannot be written.
    pub fn load(config: &Config) -> Result<Self, ConfigError> {
        if let Some(text) = &config.secret_key {
            return Self::decode(text).ok_or_else(|| {
                ConfigError("secret_key (PORTICO_SECRET_KEY) must be Base64 of exactly 32 bytes".into())
            });
        }
        let path = config.data_dir.join("secret.key");
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::decode(&text)
                .ok_or_else(|| ConfigError(format!("{} is damaged: it must hold Base64 of 32 bytes", path.display()))),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Self::create(&path),
            Err(error) => Err(ConfigError(format!("cannot read {}: {error}", path.display()))),
        }
    }

    fn decode(text: &str) -> Option<Self> {
        let bytes = STANDARD.decode(text.trim()).ok()?;
        Some(Self(bytes.try_into().ok()?))
    }

    fn create(path: &Path) -> Result<Self, ConfigError> {
        let bytes = portico_crypto::random::bytes::<32>();
        let fail = |e: std::io::Error| ConfigError(format!("cannot write {}: {e}", path.display()));
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        write_private(path, STANDARD.encode(bytes).as_bytes()).map_err(fail)?;
        tracing::info!(path = %path.display(), "generated the instance secret");
        Ok(Self(bytes))
    }

    pub fn cookie_signer(&self) -> CookieSigner {
        CookieSigner::new(&derive_key(&self.0, "portico cookies v1"))
    }

    /// Seals the operator console's cookies.
    pub fn console_sealer(&self) -> Sealer {
        Sealer::new(&derive_key(&self.0, "portico console cookies v1"))
    }

    /// Seals the account page's cookies: a key of its own, so that no
    /// console cookie opens there or the other way round.
    pub fn account_sealer(&self) -> Sealer {
        Sealer::new(&derive_key(&self.0, "portico account cookies v1"))
    }

    pub fn sealer(&self) -> Sealer {
        Sealer::new(&derive_key(&self.0, "portico sealed secrets v1"))
    }
}

#[cfg(unix)]
pub(crate) fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.write_all(data)
}

#[cfg(not(unix))]
pub(crate) fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, data)
}
