//! Typed identifiers and hashes, so that two of them cannot be swapped by
//! mistake: a function that wants a [`GrantId`] does not take a [`UserId`],
//! and a code's hash is never looked up as a refresh token's.
//!
//! Each is a thin wrapper with the same serialized form as the value it
//! wraps (`serde(transparent)`), so stored JSON and API bodies are unchanged.
//! Storage crates bind the inner value and wrap what they read.

use std::fmt;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A newtype over `String` with `new`, `as_str`, `Display` and conversions
/// from string values.
macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub fn new(value: impl Into<String>) -> Self {
                Self(value.into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                Self(value)
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                Self(value.to_owned())
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

/// A newtype over `Uuid` with `Display` and conversions both ways.
macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(Uuid);

        impl $name {
            pub const fn from_uuid(value: Uuid) -> Self {
                Self(value)
            }

            pub const fn as_uuid(&self) -> Uuid {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        impl From<Uuid> for $name {
            fn from(value: Uuid) -> Self {
                Self(value)
            }
        }

        impl From<$name> for Uuid {
            fn from(value: $name) -> Self {
                value.0
            }
        }

        impl std::str::FromStr for $name {
            type Err = uuid::Error;

            fn from_str(value: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(value).map(Self)
            }
        }
    };
}

string_id! {
    /// A registered client's `client_id`.
    ClientId
}

string_id! {
    /// The stored hash of an authorization code (never the code).
    CodeHash
}

string_id! {
    /// The stored hash of a refresh token (never the token).
    RefreshTokenHash
}

string_id! {
    /// The stored hash of a single sign-on session's cookie value.
    SessionHash
}

uuid_id! {
    /// A user's id: the `sub` of their tokens.
    UserId
}

uuid_id! {
    /// A grant's id: one authorization, named by every token issued along it.
    GrantId
}

uuid_id! {
    /// A single sign-on session's public id: the `sid` of id_tokens and
    /// logout tokens. Unlike the cookie's value it is no secret.
    SessionId
}

uuid_id! {
    /// A browser login process's id: the value of its `authentication_flow`
    /// cookie. Random, so that it cannot be guessed.
    LoginProcessId
}

uuid_id! {
    /// A brokerage report task's id (`taskId`).
    ReportTaskId
}

uuid_id! {
    /// A produced report file's id (`fileId`).
    ReportFileId
}

uuid_id! {
    /// A merchant notification delivery's id.
    DeliveryId
}

/// How new ids of each kind are made: ordered by creation time (UUIDv7)
/// where a listing sorts by them, random (UUIDv4) where they must not be
/// guessed.
macro_rules! new_ids {
    ($($name:ident: $make:ident, $doc:literal);* $(;)?) => {
        $(impl $name {
            #[doc = $doc]
            pub fn $make() -> Self {
                new_ids!(@ $make)
            }
        })*
    };
    (@ now_v7) => { Self(Uuid::now_v7()) };
    (@ random) => { Self(Uuid::new_v4()) };
}

new_ids! {
    GrantId: now_v7, "A new id, ordered by creation time (UUIDv7).";
    ReportTaskId: now_v7, "A new id, ordered by creation time (UUIDv7).";
    ReportFileId: now_v7, "A new id, ordered by creation time (UUIDv7).";
    DeliveryId: now_v7, "A new id, ordered by creation time (UUIDv7).";
    LoginProcessId: random, "A new random id.";
    SessionId: random, "A new random id.";
    UserId: random, "A new random id.";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_serialize_as_the_value_they_wrap() {
        let client = ClientId::new("app");
        assert_eq!(serde_json::to_string(&client).unwrap(), "\"app\"");
        assert_eq!(serde_json::from_str::<ClientId>("\"app\"").unwrap(), client);
        let uuid = Uuid::from_u128(7);
        let user = UserId::from(uuid);
        assert_eq!(serde_json::to_string(&user).unwrap(), serde_json::to_string(&uuid).unwrap());
        assert_eq!(user.to_string(), uuid.to_string());
        assert_eq!(Uuid::from(user), uuid);
    }
}
