//! Portico's domain: plain types and the rules that need no I/O.
//!
//! Everything here is data that the storage crates persist and the handler
//! crates act on. Nothing in this crate talks to a database, the network or
//! the system clock: time arrives through [`clock::Clock`].

pub mod address;
pub mod audit;
pub mod client;
pub mod clock;
pub mod consent;
pub mod form;
pub mod ids;
pub mod key;
pub mod login;
pub mod login_name;
pub mod notify;
pub mod oauth;
pub mod otp;
pub mod passkey;
pub mod permissions;
pub mod reports;
pub mod scope;
pub mod session;
pub mod text;
pub mod user;
pub mod user_agent;

pub use time::{Duration, OffsetDateTime};
pub use uuid::Uuid;
