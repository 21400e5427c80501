//! A browser's `User-Agent` in a few words ("Chrome, Android"): how a
//! passkey is named when it is created, so that a user with several tells
//! them apart. Deliberately coarse: a name, never a decision.

/// The longest `User-Agent` kept with a session or a device, in bytes.
pub const MAX_KEPT: usize = 256;

/// `user_agent` as kept: cut to [`MAX_KEPT`] bytes (at a character's
/// boundary), control characters dropped; `None` when nothing is left.
pub fn kept(user_agent: &str) -> Option<String> {
    let mut kept = String::with_capacity(user_agent.len().min(MAX_KEPT));
    for c in user_agent.trim().chars().filter(|c| !c.is_control()) {
        if kept.len() + c.len_utf8() > MAX_KEPT {
            break;
        }
        kept.push(c);
    }
    (!kept.is_empty()).then_some(kept)
}

/// The browser and the system of `user_agent`, as "Browser, System", or
/// whichever of the two is known; `None` when neither is.
pub fn describe(user_agent: &str) -> Option<String> {
    let has = |token: &str| user_agent.contains(token);
    // Order matters: Edge and Opera say "Chrome" too, Chrome says "Safari".
    let browser = if has("Edg/") || has("Edge/") {
        Some("Edge")
    } else if has("OPR/") || has("Opera") {
        Some("Opera")
    } else if has("YaBrowser/") {
        Some("Yandex Browser")
    } else if has("Firefox/") || has("FxiOS/") {
        Some("Firefox")
    } else if has("Chrome/") || has("CriOS/") || has("HeadlessChrome/") {
        Some("Chrome")
    } else if has("Safari/") {
        Some("Safari")
    } else {
        None
    };
    let system = if has("iPhone") {
        Some("iPhone")
    } else if has("iPad") {
        Some("iPad")
    } else if has("Android") {
        Some("Android")
    } else if has("Windows") {
        Some("Windows")
    } else if has("Mac OS X") || has("Macintosh") {
        Some("macOS")
    } else if has("CrOS") {
        Some("ChromeOS")
    } else if has("Linux") {
        Some("Linux")
    } else {
        None
    };
    match (browser, system) {
        (Some(browser), Some(system)) => Some(format!("{browser}, {system}")),
        (Some(one), None) | (None, Some(one)) => Some(one.to_owned()),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{MAX_KEPT, describe, kept};

    #[test]
    fn what_is_kept_is_bounded_and_printable() {
        assert_eq!(kept("  Mozilla/5.0 (X11)\r\n "), Some("Mozilla/5.0 (X11)".to_owned()));
        assert_eq!(kept("\u{7}\t"), None);
        // 2-byte letters: 128 of them fill the 256 bytes exactly.
        assert_eq!(kept(&"ж".repeat(200)).unwrap().len(), MAX_KEPT);
        assert_eq!(kept(&format!("a{}", "ж".repeat(200))).unwrap().len(), MAX_KEPT - 1, "never half a letter");
        assert_eq!(kept(&"a".repeat(300)).unwrap().len(), MAX_KEPT);
    }

    #[test]
    fn browsers_and_systems_are_named_the_way_users_know_them() {
        let cases = [
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 \
                 Safari/537.36 Edg/131.0.0.0",
                "Edge, Windows",
            ),
            (
                "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 \
                 Mobile Safari/537.36",
                "Chrome, Android",
            ),
            (
                "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) \
                 Version/18.1 Mobile/15E148 Safari/604.1",
                "Safari, iPhone",
            ),
            ("Mozilla/5.0 (Macintosh; Intel Mac OS X 14.7; rv:133.0) Gecko/20100101 Firefox/133.0", "Firefox, macOS"),
            (
                "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 HeadlessChrome/131.0.0.0 Safari/537.36",
                "Chrome, Linux",
            ),
            ("curl/8.5.0", ""),
        ];
        for (agent, named) in cases {
            assert_eq!(describe(agent).unwrap_or_default(), named, "{agent}");
        }
    }
}
