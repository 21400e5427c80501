//! Text from a request, as an error message may repeat it.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Characters of a caller's value an error message repeats at most.
pub const ECHO_CHARS: usize = 64;

/// `value` quoted as Rust's `{:?}` quotes it (control characters escaped),
/// cut after [`ECHO_CHARS`] characters with `…` and the full length, so
/// that an error never repeats a caller's megabyte back.
pub fn echo(value: &str) -> String {
    let mut chars = value.char_indices();
    match chars.nth(ECHO_CHARS) {
        None => format!("{value:?}"),
        Some((cut, _)) => format!("{:?}… ({} characters)", &value[..cut], value.chars().count()),
    }
}

/// `message` cut after `max` characters with `…`: the last guard of an
/// error body against whatever a message came to hold.
pub fn capped(mut message: String, max: usize) -> String {
    if let Some((cut, _)) = message.char_indices().nth(max) {
        message.truncate(cut);
        message.push('…');
    }
    message
}

/// What is wrong with `name` as a name shown to people who act on what it
/// says (a client's name on the login and consent pages, which a third
/// party registers itself): no control character, no invisible format
/// character — direction changes (U+202E, U+2066, …), zero-width spaces,
/// byte-order marks; the two joiners, which emoji sequences and some
/// scripts need, aside —, no separator of lines or paragraphs, nothing
/// unassigned or private. Letters of any script, digits, punctuation,
/// symbols (emoji too) and spaces are fine.
///
/// # Errors
/// The first character not allowed, by code point and position.
pub fn check_shown_name(name: &str) -> Result<(), String> {
    use unicode_properties::{GeneralCategory, UnicodeGeneralCategory as _};
    for (position, c) in name.chars().enumerate() {
        let refused = match c.general_category() {
            GeneralCategory::Control
            | GeneralCategory::Unassigned
            | GeneralCategory::PrivateUse
            | GeneralCategory::Surrogate
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator => true,
            GeneralCategory::Format => !matches!(c, '\u{200c}' | '\u{200d}'),
            _ => false,
        };
        if refused {
            return Err(format!(
                "character U+{:04X} at {position} is not allowed in a name people read (control, invisible and \
                 direction-changing characters are not)",
                u32::from(c)
            ));
        }
    }
    Ok(())
}

/// Characters an OAuth error description holds at most.
pub const MAX_DESCRIPTION_CHARS: usize = 512;

/// Whether `c` may stand in an OAuth `error_description`: RFC 6749 §5.2
/// (and §4.1.2.1, RFC 6750 §3) allow `%x20-21 / %x23-5B / %x5D-7E`, printable
/// ASCII without `"` and `\`.
pub fn is_description_char(c: char) -> bool {
    matches!(c, '\x20'..='\x21' | '\x23'..='\x5b' | '\x5d'..='\x7e')
}

/// `text` as an OAuth `error_description` may carry it (see
/// [`is_description_char`]), whatever a message came to hold — a client's
/// `alg`, an address it registered, a section sign: `"` and typographic
/// quotes become `'`, `§` "section ", `…` "...", dashes `-`, and every other
/// character outside the set is percent-encoded byte by byte (UTF-8), so a
/// Cyrillic address stays readable as a browser would send it. Cut after
/// [`MAX_DESCRIPTION_CHARS`] with "...". Text already within the rule comes
/// back as it is.
pub fn oauth_description(text: &str) -> Cow<'_, str> {
    if text.len() <= MAX_DESCRIPTION_CHARS && text.chars().all(is_description_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len().min(MAX_DESCRIPTION_CHARS + 3));
    for c in text.chars() {
        match c {
            c if is_description_char(c) => out.push(c),
            '"' | '«' | '»' | '“' | '”' | '„' | '‘' | '’' => out.push('\''),
            '§' => out.push_str("section "),
            '…' => out.push_str("..."),
            '–' | '—' => out.push('-'),
            c => {
                let mut buf = [0; 4];
                for byte in c.encode_utf8(&mut buf).bytes() {
                    let _ = write!(out, "%{byte:02X}");
                }
            }
        }
        if out.len() > MAX_DESCRIPTION_CHARS {
            // ASCII only by now: any byte is a character boundary.
            out.truncate(MAX_DESCRIPTION_CHARS);
            out.push_str("...");
            break;
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut_and_short_ones_quoted_whole() {
        assert_eq!(echo("abc"), "\"abc\"");
        assert_eq!(echo("a\0b"), "\"a\\0b\"");
        let long = "я".repeat(1_000_000);
        let echoed = echo(&long);
        assert!(echoed.starts_with(&format!("\"{}\"…", "я".repeat(ECHO_CHARS))), "{echoed}");
        assert!(echoed.ends_with("(1000000 characters)"), "{echoed}");
        assert_eq!(echo(&"x".repeat(ECHO_CHARS)), format!("\"{}\"", "x".repeat(ECHO_CHARS)));
        assert_eq!(capped("abcdef".into(), 3), "abc…");
        assert_eq!(capped("abc".into(), 3), "abc");
    }

    #[test]
    fn shown_names_hold_no_control_invisible_or_direction_changing_character() {
        for name in ["Fintech", "Финтех Pay", "ООО «Ромашка» — онлайн", "Shop 🛒", "Café"]
        {
            assert_eq!(check_shown_name(name), Ok(()), "{name}");
        }
        for name in [
            "Bank\u{202e}lave",
            "Bank\u{200b}",
            "Bank\u{7}",
            "Ba\u{2066}nk",
            "Bank\u{feff}",
            "Bank\u{2028}",
            "Bank\u{e000}",
        ] {
            let problem = check_shown_name(name).unwrap_err();
            assert!(problem.starts_with("character U+"), "{name:?}: {problem}");
        }
    }

    #[test]
    fn oauth_descriptions_keep_to_rfc_6749s_characters() {
        assert!(matches!(oauth_description("OAuth 2.0 Parameter: scope"), Cow::Borrowed(_)));
        assert_eq!(
            oauth_description("\"ftp\": not allowed (FAPI 1.0 Baseline §5.2.2) — use https…"),
            "'ftp': not allowed (FAPI 1.0 Baseline section 5.2.2) - use https..."
        );
        assert_eq!(oauth_description("https://пр.рф/a\\b\n"), "https://%D0%BF%D1%80.%D1%80%D1%84/a%5Cb%0A");
        let long = oauth_description(&"\u{202e}".repeat(10_000)).into_owned();
        assert_eq!(long.len(), MAX_DESCRIPTION_CHARS + 3, "cut: {long}");
        assert!(long.ends_with("...") && long.chars().all(is_description_char), "{long}");
        let exact = "x".repeat(MAX_DESCRIPTION_CHARS);
        assert_eq!(oauth_description(&exact), exact.as_str());
    }
}
