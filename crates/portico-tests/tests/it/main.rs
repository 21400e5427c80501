//! One integration-test binary: every module starts real servers on loopback
//! ports and talks HTTP to them, on SQLite and, when
//! `PORTICO_TEST_POSTGRES_URL` is set, PostgreSQL.

mod admin_api;
mod authorize;
mod backchannel;
mod bad_input;
mod brokerage_intake;
mod browser;
mod browser_console;
mod browser_login;
mod browser_logout;
mod client_assertions;
mod console;
mod delivery;
mod documented_rules;
mod dpop;
mod flow;
mod form_post;
mod introspect;
mod jarm;
mod keys;
mod login;
mod login_flows;
mod logout;
mod merchants_admin;
mod mtls;
mod node_cache;
pub(crate) mod notifications;
pub(crate) mod oidc_client;
mod openid_client;
mod ops;
mod outage;
mod permission_views;
mod permissions;
mod profiles;
mod pushed_requests;
mod registration;
mod report_bank;
mod report_store;
mod reports;
mod revoke;
mod scim;
mod security;
mod session_store;
pub(crate) mod storage_contract;
mod token;
mod upgrade;
