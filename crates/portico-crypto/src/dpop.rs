//! DPoP proofs (RFC 9449): a JWT a client signs with a key of its own,
//! per request, proving it holds the key an access token is bound to.
//!
//! A proof is taken when: `typ` is `dpop+jwt`; the header's `jwk` is a
//! public signing key Portico verifies (RSA of 2,048 bits or more, P-256,
//! Ed25519; no private member) and the signature verifies with it under an
//! asymmetric `alg` (never `none` or HS256); `jti` is given (at most
//! [`crate::jose::MAX_JTI_LEN`] characters); `htm` is the request's method
//! and `htu` its address (compared without query and fragment, scheme and
//! host case-insensitively, default ports dropped, percent-encodings
//! normalized as RFC 3986 §6.2.2 says); `iat` is within
//! [`MAX_AGE`] before now (and at most the leeway ahead); and, where an
//! access token is presented, `ath` is its SHA-256 hash. The key's RFC 7638
//! thumbprint (`jkt`) is what a token is bound to. Replay (the same `jti`
//! twice) is the caller's to refuse, in storage shared by every node.

use serde_json::{Map, Value};

use crate::jose::{Assertion, KeySet, LEEWAY, MAX_JTI_LEN};

/// The `typ` of a proof.
pub const TYP: &str = "dpop+jwt";
/// Oldest `iat` taken, in seconds before now.
pub const MAX_AGE: i64 = 120;
/// The algorithms a proof may be signed with, as discovery lists them.
pub const ALGORITHMS: [&str; 5] = ["PS256", "ES256", "EdDSA", "Ed25519", "RS256"];

/// What a proof must match.
#[derive(Debug, Clone)]
pub struct Expected<'a> {
    /// The request's method (`POST`, `GET`).
    pub method: &'a str,
    /// The request's address, as Portico's public URL names it.
    pub url: &'a str,
    /// The same address under the mutual-TLS endpoints' base
    /// (`mtls_endpoint_aliases`), which a proof may name instead.
    pub alias_url: Option<&'a str>,
    /// Now, Unix seconds.
    pub now: i64,
    /// The access token presented with the proof, whose hash `ath` must be.
    pub access_token: Option<&'a str>,
}

/// A proof that passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proof {
    /// The RFC 7638 thumbprint of the proof's key.
    pub jkt: String,
    pub jti: String,
    pub iat: i64,
    /// The server nonce it carries, if any.
    pub nonce: Option<String>,
    /// The algorithm it is signed with.
    pub alg: crate::jwt::Algorithm,
}

impl Proof {
    /// Until when its `jti` must be remembered (a later one is too old anyway).
    pub fn remember_until(&self) -> i64 {
        self.iat + MAX_AGE + LEEWAY
    }
}

/// Checks a DPoP proof (the module's rules).
///
/// # Errors
/// Why it is refused, in words for the client's developer.
pub fn verify(proof: &str, expected: &Expected<'_>) -> Result<Proof, String> {
    let parsed = Assertion::parse(proof).map_err(|_| "the DPoP proof is not a signed JWT".to_owned())?;
    if parsed.typ() != Some(TYP) {
        return Err(format!("the DPoP proof's typ must be {TYP}"));
    }
    let jwk = parsed.header_jwk().ok_or("the DPoP proof's header has no jwk")?;
    let keys = KeySet::one(jwk).map_err(|e| format!("the DPoP proof's jwk: {e}"))?;
    parsed.verify_signature(&keys).map_err(|e| match e {
        crate::jose::AssertionError::Algorithm(alg, _) => {
            format!("the DPoP proof is signed with {alg}; Portico takes PS256, ES256, EdDSA (or Ed25519) or RS256")
        }
        _ => "the DPoP proof's signature does not verify with its jwk".to_owned(),
    })?;
    let claims = parsed.claims();
    let text = |name: &str| claims.get(name).and_then(Value::as_str);
    let jti = text("jti").filter(|j| !j.is_empty()).ok_or("the DPoP proof has no jti")?;
    if jti.len() > MAX_JTI_LEN {
        return Err(format!("the DPoP proof's jti is longer than {MAX_JTI_LEN} characters"));
    }
    if text("htm") != Some(expected.method) {
        return Err(format!("the DPoP proof's htm must be {}", expected.method));
    }
    let htu = text("htu").map(normalize);
    if htu != Some(normalize(expected.url))
        && (expected.alias_url.is_none() || htu != expected.alias_url.map(normalize))
    {
        return Err(format!("the DPoP proof's htu must be {}", expected.url));
    }
    let iat = claims.get("iat").and_then(Value::as_i64).ok_or("the DPoP proof has no iat")?;
    if iat > expected.now + LEEWAY || iat < expected.now - MAX_AGE {
        return Err(format!("the DPoP proof's iat must be within {MAX_AGE} seconds before now"));
    }
    if let Some(token) = expected.access_token {
        let ath = crate::b64url(crate::hash::sha256(token.as_bytes()));
        if text("ath") != Some(ath.as_str()) {
            return Err("the DPoP proof's ath is not the hash of the access token".into());
        }
    }
    // A verified signature's algorithm is one Portico knows.
    let alg = parsed.algorithm().ok_or("the DPoP proof's alg is unknown")?;
    Ok(Proof { jkt: thumbprint(jwk)?, jti: jti.to_owned(), iat, nonce: text("nonce").map(str::to_owned), alg })
}

/// The RFC 7638 thumbprint of a public JWK: SHA-256 of its required
/// members in lexicographic order, Base64url.
///
/// # Errors
/// When a required member is missing.
pub fn thumbprint(jwk: &Value) -> Result<String, String> {
    let members: &[&str] = match jwk.get("kty").and_then(Value::as_str) {
        Some("EC") => &["crv", "kty", "x", "y"],
        Some("RSA") => &["e", "kty", "n"],
        Some("OKP") => &["crv", "kty", "x"],
        _ => return Err("the key type is not one of RSA, EC, OKP".into()),
    };
    let mut canonical = Map::new();
    for member in members {
        let value = jwk.get(*member).and_then(Value::as_str).ok_or_else(|| format!("the key has no {member}"))?;
        canonical.insert((*member).to_owned(), value.into());
    }
    let text = serde_json::to_string(&Value::Object(canonical)).map_err(|e| e.to_string())?;
    Ok(crate::b64url(crate::hash::sha256(text.as_bytes())))
}

/// An address without query and fragment, its scheme and host in lower
/// case and a default port dropped.
fn normalize(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let scheme = scheme.to_ascii_lowercase();
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut authority = authority.to_ascii_lowercase();
    for (s, port) in [("https", ":443"), ("http", ":80")] {
        if scheme == s && authority.ends_with(port) {
            authority.truncate(authority.len() - port.len());
        }
    }
    let path = if path.is_empty() { "/" } else { path };
    format!("{scheme}://{authority}{}", normalize_escapes(path))
}

/// `path` with its percent-encodings normalized (RFC 3986 §6.2.2.1 and
/// §6.2.2.2): an escaped unreserved character (`%7E`, `%61`) stands for
/// itself, and every other escape is written with upper-case digits, so
/// that `/a%2fb`, `/a%2Fb` compare equal and `/%61` equals `/a`.
fn normalize_escapes(path: &str) -> std::borrow::Cow<'_, str> {
    if !path.contains('%') {
        return path.into();
    }
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = bytes
            .get(i + 1..i + 3)
            .filter(|hex| bytes[i] == b'%' && hex.iter().all(u8::is_ascii_hexdigit))
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) => out.push(char::from(byte)),
            Some(byte) => out.push_str(&format!("%{byte:02X}")),
            None => {
                // A character of the path as it came (a `%` without two hex
                // digits after it stays as it is).
                let c = path[i..].chars().next().unwrap_or_default();
                out.push(c);
                i += c.len_utf8();
                continue;
            }
        }
        i += 3;
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn thumbprint_of_the_rfc_7638_example() {
        let jwk = json!({
            "kty": "RSA",
            "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
            "e": "AQAB",
            "alg": "RS256",
            "kid": "2011-04-29"
        });
        assert_eq!(thumbprint(&jwk).unwrap(), "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs");
    }

    #[test]
    fn addresses_compare_without_query_case_and_default_port() {
        assert_eq!(normalize("HTTPS://Id.Bank.Example:443/oauth2/token?x=1#f"), "https://id.bank.example/oauth2/token");
        assert_eq!(normalize("http://127.0.0.1:8080/a"), "http://127.0.0.1:8080/a");
        assert_ne!(normalize("https://id.bank.example/oauth2/token"), normalize("https://id.bank.example/oauth2/par"));
    }

    #[test]
    fn addresses_compare_with_their_escapes_normalized() {
        // RFC 9449 §4.3 compares htu after RFC 3986 §6.2.2 normalization:
        // escapes' hex digits in either case, unreserved characters escaped
        // or not.
        assert_eq!(normalize("https://b.example/api/caf%c3%a9/1"), normalize("https://b.example/api/caf%C3%A9/1"));
        assert_eq!(normalize("https://b.example/oauth2/%75serinfo"), "https://b.example/oauth2/userinfo");
        assert_eq!(normalize("https://b.example/%7Ea%2d%2E_"), "https://b.example/~a-._");
        // A reserved character escaped is another address than the
        // character itself, and a stray `%` stays as it is.
        assert_ne!(normalize("https://b.example/a%2Fb"), normalize("https://b.example/a/b"));
        assert_eq!(normalize("https://b.example/a%2fb"), "https://b.example/a%2Fb");
        assert_eq!(normalize("https://b.example/100%/é%4"), "https://b.example/100%/é%4");
        assert_eq!(normalize("https://b.example/%+1"), "https://b.example/%+1");
    }
}
