//! The filters `/scim/v2/Users` answers (RFC 7644 §3.4.2.2), a subset:
//! `eq` and `sw` on `userName`, `emails[.value]` and `phoneNumbers[.value]`,
//! `eq` on `active`, joined by `and`. Attribute names and operators are
//! case-insensitive and may carry the core schema's URN. Anything else is
//! refused with `invalidFilter`, saying what is supported.

use portico_model::otp::normalize_phone;
use portico_storage::{TextMatch, UserQuery};

use super::resource::Refusal;
use super::schema::{CORE_USER, MAX_FILTER_CHARS, MAX_FILTER_CLAUSES};

const SUPPORTED: &str = "supported: userName, emails, phoneNumbers with eq or sw, active with eq, joined by and";

fn refuse(detail: impl std::fmt::Display) -> Refusal {
    Refusal::new("invalidFilter", format!("{detail}; {SUPPORTED}"))
}

/// Splits a filter into its tokens: names, operators, quoted strings
/// (JSON escapes), `true` / `false`.
fn tokens(filter: &str) -> Result<Vec<String>, Refusal> {
    let mut out = Vec::new();
    let mut chars = filter.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if c.is_whitespace() {
            continue;
        }
        if c == '"' {
            let mut end = None;
            let mut escaped = false;
            for (i, c) in chars.by_ref() {
                match (escaped, c) {
                    (true, _) => escaped = false,
                    (false, '\\') => escaped = true,
                    (false, '"') => {
                        end = Some(i);
                        break;
                    }
                    _ => {}
                }
            }
            let end = end.ok_or_else(|| refuse("a string is not closed"))?;
            out.push(filter[start..=end].to_owned());
            continue;
        }
        if matches!(c, '(' | ')' | '[' | ']') {
            return Err(refuse(format!("{c:?} is not supported")));
        }
        let mut end = start + c.len_utf8();
        while let Some(&(i, c)) = chars.peek() {
            if c.is_whitespace() || c == '"' {
                break;
            }
            end = i + c.len_utf8();
            chars.next();
        }
        out.push(filter[start..end].to_owned());
    }
    Ok(out)
}

/// The query a filter states.
///
/// # Errors
/// `invalidFilter` naming what is not understood.
pub fn parse(filter: &str) -> Result<UserQuery, Refusal> {
    if filter.chars().count() > MAX_FILTER_CHARS {
        return Err(refuse(format!("a filter has at most {MAX_FILTER_CHARS} characters")));
    }
    let tokens = tokens(filter)?;
    let mut query = UserQuery::default();
    let mut rest = tokens.as_slice();
    let mut clauses = 0;
    loop {
        clauses += 1;
        if clauses > MAX_FILTER_CLAUSES {
            return Err(refuse(format!("a filter joins at most {MAX_FILTER_CLAUSES} clauses")));
        }
        let [attribute, operator, value, tail @ ..] = rest else {
            return Err(refuse(format!("{filter:?} is not `attribute operator value`")));
        };
        apply(&mut query, attribute, operator, value)?;
        match tail {
            [] => return Ok(query),
            [and, more @ ..] if and.eq_ignore_ascii_case("and") => rest = more,
            [other, ..] => return Err(refuse(format!("{other:?} where `and` or the end was expected"))),
        }
    }
}

fn apply(query: &mut UserQuery, attribute: &str, operator: &str, value: &str) -> Result<(), Refusal> {
    let lower = attribute.to_ascii_lowercase();
    let prefix = format!("{}:", CORE_USER.to_ascii_lowercase());
    let name = lower.strip_prefix(&prefix).unwrap_or(&lower);
    let operator = operator.to_ascii_lowercase();
    if name == "active" {
        let active = match value {
            "true" => true,
            "false" => false,
            _ => return Err(refuse("active takes true or false")),
        };
        if operator != "eq" {
            return Err(refuse(format!("active {operator}")));
        }
        query.deactivated = Some(!active);
        return Ok(());
    }
    let text: String = serde_json::from_str(value).map_err(|_| refuse(format!("{value} is not a quoted string")))?;
    let matched = match operator.as_str() {
        "eq" => TextMatch::Is(text),
        "sw" => TextMatch::StartsWith(text),
        other => return Err(refuse(format!("the operator {other}"))),
    };
    let slot = match name {
        "username" => &mut query.login,
        "emails" | "emails.value" => &mut query.email,
        "phonenumbers" | "phonenumbers.value" => {
            let TextMatch::Is(phone) = &matched else {
                return Err(refuse("phoneNumbers takes eq"));
            };
            let phone = normalize_phone(phone).ok_or_else(|| refuse(format!("{phone:?} is not a phone number")))?;
            query.phone = Some(TextMatch::Is(phone));
            return Ok(());
        }
        other => return Err(refuse(format!("the attribute {other}"))),
    };
    if slot.is_some() {
        return Err(refuse(format!("{attribute} twice")));
    }
    *slot = Some(matched);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq_sw_and_and_become_one_query() {
        let query = parse(r#"userName sw "an" and emails.value eq "anna@example.com" AND active eq true"#).unwrap();
        assert_eq!(query.login, Some(TextMatch::StartsWith("an".into())));
        assert_eq!(query.email, Some(TextMatch::Is("anna@example.com".into())));
        assert_eq!(query.deactivated, Some(false));
        let urn = parse(&format!(r#"{CORE_USER}:userName Eq "a \"b\"""#)).unwrap();
        assert_eq!(urn.login, Some(TextMatch::Is("a \"b\"".into())));
        let phone = parse(r#"phoneNumbers eq "8 900 111-22-33""#).unwrap();
        assert_eq!(phone.phone, Some(TextMatch::Is("+79001112233".into())));
    }

    #[test]
    fn what_is_outside_the_subset_is_an_invalid_filter() {
        for bad in [
            r#"userName co "an""#,
            r#"userName eq "a" or userName eq "b""#,
            r#"emails[type eq "work"]"#,
            r#"title eq "x""#,
            r#"userName eq "open"#,
            "userName eq",
            r#"userName eq "a" and userName eq "b""#,
            "active eq yes",
        ] {
            let refusal = parse(bad).unwrap_err();
            assert_eq!(refusal.scim_type, "invalidFilter", "{bad}");
            assert!(refusal.detail.contains("supported:"), "{bad}: {}", refusal.detail);
        }
    }
}
