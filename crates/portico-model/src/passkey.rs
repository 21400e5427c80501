//! Passkeys: WebAuthn credentials a user signs in with (a possession and a
//! user verification at once, bound to Portico's host).

use time::OffsetDateTime;
use uuid::Uuid;

use crate::ids::UserId;

/// The most passkeys one user keeps.
pub const MAX_PER_USER: usize = 10;
/// The longest name of a passkey, in characters.
pub const MAX_NAME_CHARS: usize = 64;

/// A user's passkey as Portico stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passkey {
    /// Portico's id of it (what the account page and the admin API name).
    pub id: Uuid,
    pub user_id: UserId,
    /// The authenticator's credential id, Base64url: unique among all users.
    pub credential_id: String,
    /// What the user calls it ("Phone", "Work laptop").
    pub name: String,
    /// The credential as the WebAuthn library keeps it (public key, flags,
    /// signature counter), JSON; nothing secret.
    pub credential: String,
    /// The authenticator's signature counter at the last use (0: it keeps none).
    pub sign_count: u32,
    pub created_at: OffsetDateTime,
    pub last_used_at: Option<OffsetDateTime>,
    /// Set when a use showed a counter that did not increase (a possible
    /// clone): the passkey signs nobody in until an operator removes it.
    pub locked_at: Option<OffsetDateTime>,
}

impl Passkey {
    /// Whether an assertion's counter `presented` is acceptable after
    /// `stored` (WebAuthn Level 3 §7.2 step 22): it increases, or neither
    /// side keeps one.
    pub fn counter_advances(stored: u32, presented: u32) -> bool {
        presented > stored || (presented == 0 && stored == 0)
    }
}

/// A passkey's name as given, trimmed; `None` when it is empty, too long or
/// holds a character not shown as it is read
/// ([`crate::text::check_shown_name`]: a customer names it, and support
/// operators read it in the console before they remove it).
pub fn name(given: &str) -> Option<String> {
    let name = given.trim();
    let fits =
        !name.is_empty() && name.chars().count() <= MAX_NAME_CHARS && crate::text::check_shown_name(name).is_ok();
    fits.then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_must_increase_unless_neither_side_keeps_one() {
        assert!(Passkey::counter_advances(0, 0));
        assert!(Passkey::counter_advances(0, 1));
        assert!(Passkey::counter_advances(7, 8));
        assert!(!Passkey::counter_advances(7, 7));
        assert!(!Passkey::counter_advances(7, 3));
        assert!(!Passkey::counter_advances(7, 0));
    }

    #[test]
    fn names_are_trimmed_bounded_and_printable() {
        assert_eq!(name("  Phone "), Some("Phone".into()));
        assert_eq!(name("   "), None);
        assert_eq!(name("a\u{0007}b"), None);
        // Direction changes and invisible characters, as in a client's name.
        assert_eq!(name("Phone\u{202e}enohP"), None);
        assert_eq!(name("Pho\u{200b}ne"), None);
        assert_eq!(name("Телефон 📱"), Some("Телефон 📱".into()));
        assert_eq!(name(&"я".repeat(MAX_NAME_CHARS)).map(|n| n.chars().count()), Some(MAX_NAME_CHARS));
        assert_eq!(name(&"я".repeat(MAX_NAME_CHARS + 1)), None);
    }
}
