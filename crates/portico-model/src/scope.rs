//! OAuth scopes (RFC 6749 §3.3).

use std::fmt;

/// The scopes that OpenID Connect defines and Portico understands.
pub const OIDC_SCOPES: [&str; 4] = ["openid", "profile", "email", "phone"];

/// A non-empty set of scope tokens, in the order first given, without repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeSet(Vec<String>);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidScope {
    #[error("scope is empty")]
    Empty,
    #[error("scope token {0:?} has characters RFC 6749 does not allow")]
    BadToken(String),
}

impl ScopeSet {
    /// Parses a space-separated scope string.
    ///
    /// # Errors
    /// [`InvalidScope`] for an empty string or a token with a character outside
    /// `%x21 / %x23-5B / %x5D-7E`.
    pub fn parse(text: &str) -> Result<Self, InvalidScope> {
        let mut tokens: Vec<String> = Vec::new();
        for token in text.split(' ').filter(|t| !t.is_empty()) {
            let valid = token.bytes().all(|b| b == 0x21 || (0x23..=0x5B).contains(&b) || (0x5D..=0x7E).contains(&b));
            if !valid {
                return Err(InvalidScope::BadToken(token.to_owned()));
            }
            if !tokens.iter().any(|t| t == token) {
                tokens.push(token.to_owned());
            }
        }
        if tokens.is_empty() {
            return Err(InvalidScope::Empty);
        }
        Ok(Self(tokens))
    }

    pub fn contains(&self, scope: &str) -> bool {
        self.0.iter().any(|s| s == scope)
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }

    /// Whether every scope of `self` is also in `other`.
    pub fn is_subset_of(&self, other: &ScopeSet) -> bool {
        self.iter().all(|s| other.contains(s))
    }
}

impl fmt::Display for ScopeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_deduplicates_and_keeps_order() {
        let set = ScopeSet::parse("openid  email openid profile").unwrap();
        assert_eq!(set.to_string(), "openid email profile");
    }

    #[test]
    fn rejects_empty_and_bad_characters() {
        assert_eq!(ScopeSet::parse("   "), Err(InvalidScope::Empty));
        assert_eq!(ScopeSet::parse("open\"id"), Err(InvalidScope::BadToken("open\"id".into())));
        assert!(ScopeSet::parse("a\\b").is_err());
    }

    #[test]
    fn subset() {
        let all = ScopeSet::parse("openid profile email").unwrap();
        assert!(ScopeSet::parse("email openid").unwrap().is_subset_of(&all));
        assert!(!ScopeSet::parse("phone").unwrap().is_subset_of(&all));
    }
}
