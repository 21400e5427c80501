//! Portico's tokens as every API that accepts them sees them: the signing
//! key ring, the claims of access tokens and id_tokens, and their checking
//! ([`TokenVerifier`]), including the `Authorization` + `Id-Token` pair that
//! the permission and report APIs take on every call.
//!
//! The identity service issues tokens with the same key ring; the APIs
//! that only check them depend on this crate alone, not on the login and
//! its delivery channels.

pub mod challenge;
pub mod claims;
mod command;
pub mod keys;
pub mod verified;
mod verifier;

pub use challenge::Challenge;
pub use claims::{AccessClaims, Confirmation, Expiring, IdClaims, UserClaims};
pub use command::CommandKeys;
pub use keys::{HsmKeys, ImportedKey, KeyHolders, KeyLocation, KeyRing, key_location};
pub use verifier::{
    AccessTokenError, Caller, Scheme, TokenPairError, TokenVerifier, VerifiedTokens, bearer, presented, proof_jti,
};
