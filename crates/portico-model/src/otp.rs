//! One-time codes sent by SMS or e-mail during a login, and the rules that
//! bound them: validity, wrong tries per code, codes per process, and the
//! wait before another code.
//!
//! A challenge lives inside the login process's state, so every change to it
//! goes through the process's optimistic version check: two parallel
//! submissions cannot both spend the same try.

use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

/// Where a code goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OtpChannel {
    Sms,
    Email,
}

impl OtpChannel {
    pub fn as_str(self) -> &'static str {
        match self {
            OtpChannel::Sms => "sms",
            OtpChannel::Email => "email",
        }
    }
}

/// The limits of one-time codes (PRODUCT.md defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OtpPolicy {
    pub length: usize,
    pub ttl: Duration,
    /// Wrong tries allowed per code; the code is spent after the last.
    pub max_failures: u32,
    /// Codes one login process may send.
    pub max_codes: u32,
    /// Wait before another code may be sent.
    pub resend_after: Duration,
}

impl Default for OtpPolicy {
    fn default() -> Self {
        Self {
            length: 6,
            ttl: Duration::minutes(5),
            max_failures: 3,
            max_codes: 5,
            resend_after: Duration::seconds(60),
        }
    }
}

/// A code that was sent, as the process keeps it (the code itself only as
/// a keyed hash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OtpChallenge {
    /// `smsOtpProcessId` / `emailOtpProcessId` of the step view.
    pub id: Uuid,
    pub channel: OtpChannel,
    /// The address it went to.
    pub to: String,
    pub code_hash: String,
    #[serde(with = "time::serde::timestamp")]
    pub sent_at: OffsetDateTime,
    #[serde(with = "time::serde::timestamp")]
    pub expires_at: OffsetDateTime,
    pub failures: u32,
}

/// What a submitted code amounts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtpCheck {
    Accepted,
    /// Wrong; `left` tries remain on this code (0: it is spent).
    Wrong {
        left: u32,
    },
    /// The code expired or was spent by wrong tries; a new one is needed.
    Spent,
}

impl OtpChallenge {
    /// Whether this code can still be entered at `now`.
    pub fn usable(&self, now: OffsetDateTime, policy: &OtpPolicy) -> bool {
        now < self.expires_at && self.failures < policy.max_failures
    }

    /// Checks a code whose keyed hash `matches` the stored one; counts a
    /// wrong try in `self`.
    pub fn check(&mut self, matches: bool, now: OffsetDateTime, policy: &OtpPolicy) -> OtpCheck {
        if !self.usable(now, policy) {
            return OtpCheck::Spent;
        }
        if matches {
            return OtpCheck::Accepted;
        }
        self.failures += 1;
        OtpCheck::Wrong { left: policy.max_failures - self.failures }
    }

    /// When another code may be sent.
    pub fn resend_at(&self, policy: &OtpPolicy) -> OffsetDateTime {
        self.sent_at + policy.resend_after
    }
}

/// A phone number as Portico stores and compares it: `+` and 10–15 digits
/// (E.164). Spaces, dashes, dots and brackets typed by the user are dropped;
/// a Russian number typed with a leading `8` becomes `+7`.
pub fn normalize_phone(input: &str) -> Option<String> {
    let kept: String = input.chars().filter(|c| !matches!(c, ' ' | '-' | '(' | ')' | '.' | '\u{a0}')).collect();
    let (plus, digits) = match kept.strip_prefix('+') {
        Some(rest) => (true, rest.to_owned()),
        None => (false, kept),
    };
    if !digits.bytes().all(|b| b.is_ascii_digit()) || !(10..=15).contains(&digits.len()) {
        return None;
    }
    let digits = if !plus && digits.len() == 11 && digits.starts_with('8') {
        format!("7{}", &digits[1..])
    } else if !plus && digits.len() == 10 {
        format!("7{digits}")
    } else {
        digits
    };
    Some(format!("+{digits}"))
}

/// A phone number shown on the page: `+7 *** ***-45-67`.
pub fn mask_phone(phone: &str) -> String {
    let digits: Vec<char> = phone.chars().filter(char::is_ascii_digit).collect();
    if digits.len() < 5 {
        return "***".to_owned();
    }
    let tail: String = digits[digits.len() - 4..].iter().collect();
    let country_len = digits.len().saturating_sub(10).max(1);
    let country: String = digits[..country_len].iter().collect();
    format!("+{country} *** ***-{}-{}", &tail[..2], &tail[2..])
}

/// An e-mail address shown on the page: `i***@example.com`.
pub fn mask_email(email: &str) -> String {
    match email.split_once('@') {
        Some((local, domain)) if !local.is_empty() => {
            let first: String = local.chars().take(1).collect();
            format!("{first}***@{domain}")
        }
        _ => "***".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn challenge(now: OffsetDateTime) -> OtpChallenge {
        OtpChallenge {
            id: Uuid::nil(),
            channel: OtpChannel::Sms,
            to: "+79001234567".into(),
            code_hash: "h".into(),
            sent_at: now,
            expires_at: now + Duration::minutes(5),
            failures: 0,
        }
    }

    #[test]
    fn three_wrong_tries_spend_a_code_and_expiry_spends_it_too() {
        let policy = OtpPolicy::default();
        let now = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        let mut c = challenge(now);
        assert_eq!(c.check(false, now, &policy), OtpCheck::Wrong { left: 2 });
        assert_eq!(c.check(false, now, &policy), OtpCheck::Wrong { left: 1 });
        assert_eq!(c.check(false, now, &policy), OtpCheck::Wrong { left: 0 });
        assert_eq!(c.check(true, now, &policy), OtpCheck::Spent, "the right code no longer helps");
        let mut c = challenge(now);
        assert_eq!(c.check(true, now + Duration::minutes(5), &policy), OtpCheck::Spent);
        assert_eq!(c.check(true, now + Duration::seconds(299), &policy), OtpCheck::Accepted);
    }

    #[test]
    fn phones_normalize_to_e164_and_mask() {
        assert_eq!(normalize_phone("+7 (900) 123-45-67").as_deref(), Some("+79001234567"));
        assert_eq!(normalize_phone("89001234567").as_deref(), Some("+79001234567"));
        assert_eq!(normalize_phone("9001234567").as_deref(), Some("+79001234567"));
        assert_eq!(normalize_phone("+44 20 7946 0958").as_deref(), Some("+442079460958"));
        for bad in ["", "+", "123", "+7900abc4567", "+1234567890123456", "7-900-12"] {
            assert_eq!(normalize_phone(bad), None, "{bad:?}");
        }
        assert_eq!(mask_phone("+79001234567"), "+7 *** ***-45-67");
        assert_eq!(mask_email("ivan@example.com"), "i***@example.com");
    }
}
