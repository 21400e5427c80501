//! Text from a request, as an error message may repeat it.

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
}
