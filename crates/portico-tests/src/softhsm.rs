//! SoftHSM2 tokens for the HSM tests: made with `softhsm2-util` once per
//! test process, before any test opens the module (a PKCS#11 module sees
//! the tokens it found when it was initialized). The module's path comes
//! from `PORTICO_TEST_SOFTHSM`; SoftHSM's own `SOFTHSM2_CONF` says where
//! the tokens live.

use std::path::PathBuf;
use std::sync::OnceLock;

/// The user PIN of every test token.
pub const PIN: &str = "271828";
const SO_PIN: &str = "314159";

/// The module and a token made for one purpose.
#[derive(Debug, Clone)]
pub struct Token {
    pub module: PathBuf,
    pub label: String,
}

/// Purposes a token is made for: each its own token, each test its own
/// purpose. A login is the process's, not the session's (PKCS#11), so a
/// test that needs a token nobody logged in to (a wrong PIN must be
/// refused) has its own; and SoftHSM2's file store fails, now and then, an
/// object made in a token while other sessions of the process read it
/// (Portico generates its keys alone among its own calls, but a test's
/// vendor tools are not held by that), so tests never share a token.
pub const PURPOSES: [&str; 8] = ["keys", "outage", "setup", "empty", "node", "reports", "vendor", "many"];

/// The token for `purpose` (one of [`PURPOSES`]), or `None` (and a skip
/// notice) when `PORTICO_TEST_SOFTHSM` is not set.
///
/// # Panics
/// When `softhsm2-util` cannot make the tokens.
pub fn token(purpose: &str) -> Option<Token> {
    static MADE: OnceLock<Option<PathBuf>> = OnceLock::new();
    let module = MADE.get_or_init(|| {
        let Ok(module) = std::env::var("PORTICO_TEST_SOFTHSM") else {
            crate::skipped("PORTICO_TEST_SOFTHSM is not set; the HSM tests need SoftHSM2's module (softhsm2)");
            return None;
        };
        for purpose in PURPOSES {
            let out = std::process::Command::new("softhsm2-util")
                .args(["--init-token", "--free", "--label", &label(purpose), "--pin", PIN, "--so-pin", SO_PIN])
                .output()
                .expect("run softhsm2-util");
            assert!(out.status.success(), "softhsm2-util: {}", String::from_utf8_lossy(&out.stderr));
        }
        Some(PathBuf::from(module))
    });
    assert!(PURPOSES.contains(&purpose), "no token is made for {purpose}");
    module.clone().map(|module| Token { module, label: label(purpose) })
}

fn label(purpose: &str) -> String {
    format!("portico-{}-{purpose}", std::process::id())
}
