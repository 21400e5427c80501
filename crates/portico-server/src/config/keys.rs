//! The token settings: lifetimes, signing algorithms, and the keys held
//! outside storage (an HSM, a signing program).

use portico_crypto::jwt::Algorithm;
use serde::{Deserialize, Serialize};

use super::ConfigError;

/// `tokens`: lifetimes, and the keys tokens are signed with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TokenConfig {
    pub authorization_code_ttl_secs: u32,
    pub access_token_ttl_secs: u32,
    pub refresh_token_ttl_secs: u32,
    /// The JWS algorithm tokens are signed with: `RS256` (what every client
    /// reads), `PS256`, `ES256` or `EdDSA`.
    pub signing_algorithm: String,
    /// Further algorithms Portico keeps a signing key of (each with its own
    /// rotation, all in the JWKS); the signing algorithm always has one.
    pub signing_algorithms: Vec<String>,
    /// A PKCS#11 module (an HSM) new keys of some algorithms are made in.
    pub hsm: HsmConfig,
    /// A program that signs with keys it holds (registered with `portico
    /// keys import --command-key`).
    pub command: TokenCommandConfig,
}

/// `tokens.command`: the signing program of keys Portico does not hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TokenCommandConfig {
    /// The program and its arguments; `{key}` becomes the key's label and
    /// `{alg}` the JWS algorithm. Empty: no key is held by a program.
    pub program: Vec<String>,
    /// Seconds a signature may take, waiting for a free run included.
    pub timeout_secs: u64,
    /// Runs of the program at once (per process).
    pub concurrency: u32,
}

impl Default for TokenCommandConfig {
    fn default() -> Self {
        Self { program: Vec::new(), timeout_secs: 5, concurrency: 8 }
    }
}

impl TokenCommandConfig {
    /// The signing program; `None` when none is named.
    ///
    /// # Errors
    /// A program that is not found, a zero timeout or concurrency.
    pub fn open(&self) -> Result<Option<portico_tokens::CommandKeys>, ConfigError> {
        if self.program.is_empty() {
            return Ok(None);
        }
        let timeout = std::time::Duration::from_secs(self.timeout_secs);
        let command = portico_command::Command::new(self.program.clone(), timeout, self.concurrency)
            .map_err(|e| ConfigError(format!("tokens.command: {e}")))?;
        Ok(Some(portico_tokens::CommandKeys { command: std::sync::Arc::new(command) }))
    }
}

/// `tokens.hsm`: the PKCS#11 module, token and PIN, and the algorithms
/// whose new keys are generated inside it.
#[derive(Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HsmConfig {
    /// The module's shared library (`/usr/lib/softhsm/libsofthsm2.so`).
    pub module: Option<std::path::PathBuf>,
    /// The label of the token (slot) keys are kept in.
    pub token_label: String,
    /// The user PIN; prefer `pin_file` or the environment.
    pub pin: Option<String>,
    /// A file whose first line is the user PIN.
    pub pin_file: Option<std::path::PathBuf>,
    /// The algorithms (`RS256`, `PS256`, `ES256`) whose new keys are made
    /// inside the module; empty: the module is opened only for keys
    /// already kept there.
    pub algorithms: Vec<String>,
}

impl std::fmt::Debug for HsmConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HsmConfig")
            .field("module", &self.module)
            .field("token_label", &self.token_label)
            .field("pin", &self.pin.as_ref().map(|_| "…"))
            .field("pin_file", &self.pin_file)
            .field("algorithms", &self.algorithms)
            .finish()
    }
}

impl TokenConfig {
    /// What holds keys outside storage on this node: the HSM and the
    /// signing program.
    ///
    /// # Errors
    /// As [`HsmConfig::open`] and [`TokenCommandConfig::open`].
    pub fn key_holders(&self) -> Result<portico_tokens::KeyHolders, ConfigError> {
        Ok(portico_tokens::KeyHolders { hsm: self.hsm.open()?, command: self.command.open()? })
    }
}

impl HsmConfig {
    /// The opened token and its algorithms; `None` without a module.
    ///
    /// # Errors
    /// A PIN missing or unreadable, an algorithm the HSM does not keep, a
    /// module, token or PIN the module refuses.
    pub fn open(&self) -> Result<Option<portico_tokens::HsmKeys>, ConfigError> {
        let Some(module) = &self.module else {
            if !self.algorithms.is_empty() {
                return Err(ConfigError("tokens.hsm.algorithms needs tokens.hsm.module".into()));
            }
            return Ok(None);
        };
        let pin = match (&self.pin, &self.pin_file) {
            (Some(pin), None) => pin.clone(),
            (None, Some(path)) => std::fs::read_to_string(path)
                .map_err(|e| ConfigError(format!("tokens.hsm.pin_file: cannot read {}: {e}", path.display())))?
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
            _ => {
                return Err(ConfigError(
                    "tokens.hsm: set exactly one of pin (PORTICO_TOKENS__HSM__PIN) and pin_file".into(),
                ));
            }
        };
        let mut algorithms = Vec::new();
        for name in &self.algorithms {
            match Algorithm::parse(name) {
                Some(alg @ (Algorithm::Rs256 | Algorithm::Ps256 | Algorithm::Es256)) => algorithms.push(alg),
                _ => {
                    return Err(ConfigError(format!(
                        "tokens.hsm.algorithms: {name:?} is not one of RS256, PS256, ES256 (the algorithms kept in an HSM)"
                    )));
                }
            }
        }
        let hsm = portico_hsm::Hsm::open(module, &self.token_label, &pin)
            .map_err(|e| ConfigError(format!("tokens.hsm: {e}")))?;
        Ok(Some(portico_tokens::HsmKeys { hsm, algorithms }))
    }
}

impl TokenConfig {
    /// The signing algorithm, and every algorithm to keep a key of.
    ///
    /// # Errors
    /// A name that is no algorithm Portico signs with.
    pub fn algorithms(&self) -> Result<(Algorithm, Vec<Algorithm>), ConfigError> {
        let parse = |setting: &str, name: &str| {
            Algorithm::parse(name).ok_or_else(|| {
                ConfigError(format!(
                    "{setting}: {name:?} is not one of RS256, PS256, ES256, EdDSA (JWA names, as written)"
                ))
            })
        };
        let default = parse("tokens.signing_algorithm (PORTICO_TOKENS__SIGNING_ALGORITHM)", &self.signing_algorithm)?;
        let mut all = vec![default];
        for name in &self.signing_algorithms {
            let alg = parse("tokens.signing_algorithms (PORTICO_TOKENS__SIGNING_ALGORITHMS)", name)?;
            if !all.contains(&alg) {
                all.push(alg);
            }
        }
        Ok((default, all))
    }
}

impl Default for TokenConfig {
    fn default() -> Self {
        Self {
            authorization_code_ttl_secs: 300,
            access_token_ttl_secs: 900,
            refresh_token_ttl_secs: 30 * 24 * 3600,
            signing_algorithm: Algorithm::Rs256.as_str().to_owned(),
            signing_algorithms: Vec::new(),
            hsm: HsmConfig::default(),
            command: TokenCommandConfig::default(),
        }
    }
}
