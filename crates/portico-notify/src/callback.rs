//! Which callback addresses are accepted: the rule Portico applies to every
//! address it sends to on someone else's word ([`portico_model::address`]).
//! The delivery client checks the resolved addresses again.

pub use portico_model::address::{check_public_url as check_callback_url, is_internal};
