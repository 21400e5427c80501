//! The Portico server: configuration, assembly of every service's routes,
//! middleware, background tasks, and the demo.
//!
//! This is the only crate that knows every part; the domain crates know only
//! their own routes and the storage traits.

pub mod app;
pub mod config;
pub mod delivery;
pub mod demo;
mod http;
mod listener;
pub mod openapi;
pub mod secret;
mod tasks;
pub mod telemetry;
mod tls;
mod unrouted;

pub use app::App;
pub use config::Config;

/// Makes every file and folder the process creates from now on readable by
/// its own user only (umask `077`): the SQLite database with its `-wal` and
/// `-shm` (personal data, password hashes, the audit log), report files,
/// the report signing certificate, the data folder itself. Called first
/// thing by the binary.
#[cfg(unix)]
pub fn private_files() {
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
}

/// Elsewhere files keep the system's defaults.
#[cfg(not(unix))]
pub fn private_files() {}
