//! Logins as people type them, and the form two logins are compared in.
//!
//! Two logins are the same login when their PRECIS `UsernameCaseMapped`
//! forms are equal (RFC 8265 §3.3: full-width characters mapped to their
//! usual width, lower case, Unicode NFC, and no control, invisible or
//! space characters at all). That form, the login's *key*, is unique among
//! users and is what a typed login is looked up by, so `IVAN` beside `ivan`
//! and `ivan` followed by a zero-width space cannot be created. A login
//! must also keep to one script (digits and punctuation aside): `оperator`
//! with a Cyrillic «о» among Latin letters is refused, as Unicode's
//! security mechanisms (UTS #39) advise for identifiers.

use precis_core::profile::PrecisFastInvocation as _;
use precis_profiles::UsernameCaseMapped;
use unicode_script::{Script, UnicodeScript as _};

/// Characters of a login at most.
pub const MAX_CHARS: usize = 64;

/// The form `login` is compared in (its key), or what is wrong with it, in
/// words for the person who typed it.
///
/// # Errors
/// A login that is empty, too long, holds a character PRECIS does not
/// allow in identifiers, or mixes scripts.
pub fn key(login: &str) -> Result<String, String> {
    if login.is_empty() || login.chars().count() > MAX_CHARS {
        return Err(format!("1 to {MAX_CHARS} characters"));
    }
    let key = UsernameCaseMapped::enforce(login).map_err(|error| match error {
        precis_core::Error::BadCodepoint(info) => {
            let shown = char::from_u32(info.cp).map_or_else(String::new, |c| format!(" {c:?}"));
            format!(
                "character U+{:04X}{shown} at {} is not allowed in a login (spaces, control and invisible \
                 characters, symbols are not)",
                info.cp, info.position
            )
        }
        _ => "not a valid login: use letters, digits and . - _".to_owned(),
    })?;
    let scripts = scripts(&key);
    if scripts.len() > 1 {
        let names: Vec<&str> = scripts.iter().map(|s| s.full_name()).collect();
        return Err(format!("letters of one script only; this login mixes {}", names.join(" and ")));
    }
    Ok(key.into_owned())
}

/// The scripts of `text`'s letters, each once, in order of appearance
/// (characters common to all scripts, such as digits, not counted).
fn scripts(text: &str) -> Vec<Script> {
    let mut found = Vec::new();
    for c in text.chars() {
        let script = c.script();
        if !matches!(script, Script::Common | Script::Inherited | Script::Unknown) && !found.contains(&script) {
            found.push(script);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::key;

    #[test]
    fn logins_that_look_alike_have_one_key() {
        assert_eq!(key("ivan").unwrap(), "ivan");
        assert_eq!(key("IVAN").unwrap(), "ivan");
        assert_eq!(key("Ivan.Petrov-2").unwrap(), "ivan.petrov-2");
        assert_eq!(key("ｉｖａｎ").unwrap(), "ivan", "full-width letters are the usual ones");
        assert_eq!(key("Иван").unwrap(), "иван", "one script, Cyrillic");
        assert_eq!(key("e\u{301}lise").unwrap(), key("\u{e9}lise").unwrap(), "NFC");
    }

    #[test]
    fn invisible_characters_spaces_and_mixed_scripts_are_refused() {
        for bad in [
            "ivan\u{200b}",
            "\u{200d}ivan",
            "iv an",
            "ivan\u{0}",
            "ivan\u{202e}",
            "\u{43e}perator",
            "pаypal",
            "",
            &"a".repeat(65),
        ] {
            assert!(key(bad).is_err(), "{bad:?}");
        }
        assert!(key("\u{43e}perator").unwrap_err().contains("Cyrillic and Latin"));
        assert!(key("ivan\u{200b}").unwrap_err().contains("U+200B"));
    }
}
