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

pub use app::App;
pub use config::Config;
