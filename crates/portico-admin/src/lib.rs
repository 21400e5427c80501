//! Managing Portico without database access.
//!
//! - [`service`]: every administrative operation on clients, users, their
//!   sessions, the signing keys and the audit log, with its rules and its
//!   audit entry. The `portico` command line and the admin API both call
//!   it, so both enforce the same rules.
//! - [`http`]: the admin API over it (`/admin/v1/clients`, `/users`,
//!   `/keys`, `/audit`), for machines with an admin token and for
//!   operators ([`operators`]).
//! - [`scim`]: user provisioning over SCIM 2.0.

pub mod http;
pub mod openapi;
pub mod operators;
pub mod registration;
pub mod scim;
pub mod service;

pub use http::{AdminApi, AdminState, router};
pub use service::{AdminService, ServiceError};
