//! JWTs that others sign and Portico checks: client assertions
//! (`private_key_jwt`, RFC 7523; `client_secret_jwt`, OIDC Core §9), and
//! the clients' public keys (JWK Sets, RFC 7517). Parsing and signature
//! checks are `jsonwebtoken`'s; this module holds Portico's rules around
//! them:
//!
//! - a client's key set holds 1 to [`MAX_KEYS`] public keys of the kinds
//!   Portico verifies (RSA of 2,048 to 8,192 bits, EC on P-256, OKP on
//!   Ed25519), none with a private member, each for signing;
//! - an assertion is signed with an asymmetric algorithm Portico accepts
//!   (PS256, ES256, EdDSA, and RS256 for compatibility) under
//!   `private_key_jwt`, with HS256 under `client_secret_jwt`; never `none`;
//! - `iss` and `sub` are the client, `aud` names Portico (the issuer or the
//!   endpoint's address), `exp` is required and at most
//!   [`MAX_ASSERTION_LIFETIME`] ahead, `jti` is required; times are judged
//!   against the caller's clock (an injected one in tests), with
//!   [`LEEWAY`] of skew.

use std::collections::HashSet;

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk};
use jsonwebtoken::{Algorithm as JwsAlgorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::Value;

use crate::jwt::{Algorithm, MAX_TOKEN_LEN};

/// Most keys a client's key set may hold.
pub const MAX_KEYS: usize = 20;
/// Longest time an assertion may still be valid for, in seconds (RFC 7523
/// leaves it to the server; FAPI asks for short-lived assertions).
pub const MAX_ASSERTION_LIFETIME: i64 = 300;
/// Clock skew forgiven on `exp`, `nbf` and `iat`, in seconds.
pub const LEEWAY: i64 = 10;
/// Longest `jti` remembered.
pub const MAX_JTI_LEN: usize = 256;
/// The members of a JWK that only a private (or symmetric) key has.
const PRIVATE_MEMBERS: [&str; 9] = ["d", "p", "q", "dp", "dq", "qi", "oth", "k", "priv"];
const MIN_RSA_BITS: usize = 2048;
const MAX_RSA_BITS: usize = 8192;

/// A client's public keys, checked and parsed once.
pub struct KeySet {
    keys: Vec<PublicKey>,
}

struct PublicKey {
    kid: Option<String>,
    /// The algorithms this key may verify: its `alg`, or every one its type allows.
    algorithms: Vec<Algorithm>,
    decoding: DecodingKey,
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kids: Vec<_> = self.keys.iter().map(|k| k.kid.as_deref().unwrap_or("-")).collect();
        f.debug_struct("KeySet").field("kids", &kids).finish()
    }
}

impl KeySet {
    /// Checks and parses a JWK Set.
    ///
    /// # Errors
    /// What is wrong with the set or the first bad key, in words for the
    /// client's developer.
    pub fn parse(set: &Value) -> Result<Self, String> {
        let keys = set.get("keys").and_then(Value::as_array).ok_or("a JWK Set is an object with a \"keys\" array")?;
        if keys.is_empty() || keys.len() > MAX_KEYS {
            return Err(format!("a JWK Set here holds 1 to {MAX_KEYS} keys"));
        }
        let keys = keys
            .iter()
            .enumerate()
            .map(|(i, key)| public_key(key).map_err(|e| format!("keys[{i}]: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        let mut kids = HashSet::new();
        if keys.iter().filter_map(|k| k.kid.as_deref()).any(|kid| !kids.insert(kid)) {
            return Err("two keys share a kid".into());
        }
        Ok(Self { keys })
    }

    /// Whether a key has `kid`.
    pub fn has_kid(&self, kid: &str) -> bool {
        self.keys.iter().any(|k| k.kid.as_deref() == Some(kid))
    }

    /// The keys that may verify a signature of `alg` with `kid`.
    fn candidates(&self, alg: Algorithm, kid: Option<&str>) -> impl Iterator<Item = &PublicKey> {
        self.keys
            .iter()
            .filter(move |k| k.algorithms.contains(&alg) && kid.is_none_or(|kid| k.kid.as_deref() == Some(kid)))
    }
}

fn public_key(key: &Value) -> Result<PublicKey, String> {
    let object = key.as_object().ok_or("a JWK is a JSON object")?;
    if let Some(member) = PRIVATE_MEMBERS.iter().find(|m| object.contains_key(**m)) {
        return Err(format!("has the private member {member:?}: publish only the public key"));
    }
    let text = |name: &str| object.get(name).and_then(Value::as_str);
    if object.get("use").is_some_and(|u| u.as_str() != Some("sig")) {
        return Err("\"use\" must be \"sig\" when given".into());
    }
    let kty = text("kty").ok_or("has no \"kty\"")?;
    let allowed: &[Algorithm] = match kty {
        "RSA" => &[Algorithm::Ps256, Algorithm::Rs256],
        "EC" => &[Algorithm::Es256],
        "OKP" => &[Algorithm::EdDsa],
        other => return Err(format!("the key type {other:?} is not one of RSA, EC, OKP")),
    };
    let algorithms = match object.get("alg") {
        None => allowed.to_vec(),
        Some(alg) => {
            let alg = alg
                .as_str()
                .and_then(Algorithm::parse)
                .ok_or_else(|| format!("\"alg\" {alg} is not one of PS256, ES256, EdDSA, RS256"))?;
            if !allowed.contains(&alg) {
                return Err(format!("\"alg\" {alg} does not fit a {kty} key"));
            }
            vec![alg]
        }
    };
    let parsed: Jwk = serde_json::from_value(key.clone()).map_err(|e| format!("not a valid {kty} JWK: {e}"))?;
    match &parsed.algorithm {
        AlgorithmParameters::RSA(rsa) => {
            let bits = crate::b64url_decode(&rsa.n).map_err(|_| "\"n\" is not Base64url")?.len() * 8;
            if !(MIN_RSA_BITS..=MAX_RSA_BITS + 7).contains(&bits) {
                return Err(format!("an RSA key here has {MIN_RSA_BITS} to {MAX_RSA_BITS} bits"));
            }
        }
        AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P256 => {
            let coordinate = |c: &str| crate::b64url_decode(c).is_ok_and(|c| c.len() == 32);
            if !coordinate(&ec.x) || !coordinate(&ec.y) {
                return Err("\"x\" and \"y\" of a P-256 key are 32 bytes each, Base64url".into());
            }
        }
        AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => {
            if !crate::b64url_decode(&okp.x).is_ok_and(|x| x.len() == 32) {
                return Err("\"x\" of an Ed25519 key is 32 bytes, Base64url".into());
            }
        }
        AlgorithmParameters::EllipticCurve(_) | AlgorithmParameters::OctetKeyPair(_) => {
            return Err(format!("the curve {:?} is not P-256 (EC) or Ed25519 (OKP)", text("crv").unwrap_or("")));
        }
        AlgorithmParameters::OctetKey(_) => return Err("symmetric keys are not accepted".into()),
    }
    let decoding = DecodingKey::from_jwk(&parsed).map_err(|e| format!("the key does not parse: {e}"))?;
    Ok(PublicKey { kid: parsed.common.key_id, algorithms, decoding })
}

/// What an assertion must say.
#[derive(Debug, Clone)]
pub struct Expected<'a> {
    /// The client it authenticates (`iss` and `sub`).
    pub client_id: &'a str,
    /// Acceptable audiences: the issuer and the endpoint's address.
    pub audiences: &'a [String],
    /// Now, Unix seconds.
    pub now: i64,
}

/// An accepted assertion's `jti` and `exp`, to remember against replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    pub jti: String,
    pub exp: i64,
}

/// Why an assertion was refused (said to the client in the error
/// description).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssertionError {
    #[error("the client assertion is not a signed JWT")]
    Malformed,
    #[error("the client assertion is signed with {0}; this client's method takes {1}")]
    Algorithm(String, &'static str),
    #[error("no key of the client matches the client assertion's kid and alg")]
    UnknownKey,
    #[error("the client assertion's signature does not verify")]
    Signature,
    #[error("the client assertion {0}")]
    Claims(String),
}

#[derive(Deserialize)]
struct Claims {
    exp: Option<i64>,
    iat: Option<i64>,
    nbf: Option<i64>,
    jti: Option<String>,
}

/// The header's algorithm and `kid`, unverified: which keys to try.
///
/// # Errors
/// [`AssertionError::Malformed`] when it is not a compact JWS.
pub fn peek_header(token: &str) -> Result<(String, Option<String>), AssertionError> {
    if token.len() > MAX_TOKEN_LEN {
        return Err(AssertionError::Malformed);
    }
    let header = token.split('.').next().ok_or(AssertionError::Malformed)?;
    let header: Value = crate::b64url_decode(header)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or(AssertionError::Malformed)?;
    let alg = header.get("alg").and_then(Value::as_str).ok_or(AssertionError::Malformed)?.to_owned();
    let kid = header.get("kid").and_then(Value::as_str).map(str::to_owned);
    Ok((alg, kid))
}

/// The `iss` of an assertion, unverified: which client to look up.
pub fn peek_issuer(token: &str) -> Option<String> {
    let claims = token.split('.').nth(1)?;
    let claims: Value = serde_json::from_slice(&crate::b64url_decode(claims).ok()?).ok()?;
    claims.get("iss")?.as_str().map(str::to_owned)
}

/// Checks a `private_key_jwt` assertion against the client's keys.
///
/// # Errors
/// Why it is refused; [`AssertionError::UnknownKey`] when no key fits (the
/// caller may fetch the client's keys again and retry once).
pub fn verify_key_assertion(token: &str, keys: &KeySet, expected: &Expected<'_>) -> Result<Accepted, AssertionError> {
    const TAKES: &str = "PS256, ES256, EdDSA or RS256";
    let (alg, kid) = peek_header(token)?;
    let algorithm = Algorithm::parse(&alg).ok_or(AssertionError::Algorithm(alg, TAKES))?;
    let jws = match algorithm {
        Algorithm::Rs256 => JwsAlgorithm::RS256,
        Algorithm::Ps256 => JwsAlgorithm::PS256,
        Algorithm::Es256 => JwsAlgorithm::ES256,
        Algorithm::EdDsa => JwsAlgorithm::EdDSA,
    };
    let mut outcome = Err(AssertionError::UnknownKey);
    for key in keys.candidates(algorithm, kid.as_deref()) {
        outcome = verify(token, &key.decoding, jws, expected);
        if !matches!(outcome, Err(AssertionError::Signature)) {
            break;
        }
    }
    outcome
}

/// Checks a `client_secret_jwt` assertion (HS256) against the client's secret.
///
/// # Errors
/// Why it is refused.
pub fn verify_secret_assertion(
    token: &str,
    secret: &[u8],
    expected: &Expected<'_>,
) -> Result<Accepted, AssertionError> {
    let (alg, _) = peek_header(token)?;
    if alg != "HS256" {
        return Err(AssertionError::Algorithm(alg, "HS256"));
    }
    verify(token, &DecodingKey::from_secret(secret), JwsAlgorithm::HS256, expected)
}

fn verify(
    token: &str,
    key: &DecodingKey,
    alg: JwsAlgorithm,
    expected: &Expected<'_>,
) -> Result<Accepted, AssertionError> {
    use jsonwebtoken::errors::ErrorKind;
    let mut validation = Validation::new(alg);
    // Times are judged below against the caller's clock.
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.required_spec_claims = ["iss", "sub", "aud"].into_iter().map(str::to_owned).collect();
    validation.set_issuer(&[expected.client_id]);
    validation.sub = Some(expected.client_id.to_owned());
    validation.set_audience(expected.audiences);
    let claims = jsonwebtoken::decode::<Claims>(token, key, &validation).map_err(|e| match e.kind() {
        ErrorKind::InvalidSignature => AssertionError::Signature,
        ErrorKind::InvalidIssuer => AssertionError::Claims("must have the client id as iss".into()),
        ErrorKind::InvalidSubject => AssertionError::Claims("must have the client id as sub".into()),
        ErrorKind::InvalidAudience => AssertionError::Claims("must have the issuer as aud".into()),
        ErrorKind::MissingRequiredClaim(claim) => AssertionError::Claims(format!("has no {claim}")),
        ErrorKind::Json(_) => AssertionError::Claims("has claims of the wrong type".into()),
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName | ErrorKind::InvalidKeyFormat => {
            AssertionError::Algorithm(format!("{alg:?}"), "a key of its type")
        }
        _ => AssertionError::Malformed,
    })?;
    let Claims { exp, iat, nbf, jti } = claims.claims;
    let now = expected.now;
    let exp = exp.ok_or_else(|| AssertionError::Claims("has no exp".into()))?;
    if exp + LEEWAY <= now {
        return Err(AssertionError::Claims("has expired".into()));
    }
    if exp > now + MAX_ASSERTION_LIFETIME + LEEWAY {
        return Err(AssertionError::Claims(format!(
            "expires too late: exp may be at most {MAX_ASSERTION_LIFETIME} seconds ahead"
        )));
    }
    if nbf.is_some_and(|nbf| nbf > now + LEEWAY) || iat.is_some_and(|iat| iat > now + LEEWAY) {
        return Err(AssertionError::Claims("is not valid yet (nbf or iat in the future)".into()));
    }
    let jti = jti.filter(|j| !j.is_empty()).ok_or_else(|| AssertionError::Claims("has no jti".into()))?;
    if jti.len() > MAX_JTI_LEN {
        return Err(AssertionError::Claims(format!("has a jti longer than {MAX_JTI_LEN} characters")));
    }
    Ok(Accepted { jti, exp })
}

/// Label binding sealed client secrets to their use.
const CLIENT_SECRET_LABEL: &str = "portico client secret v1";

/// Seals a `client_secret_jwt` client's secret for storage (the one secret
/// Portico must be able to read back: HS256 is checked with the secret).
pub fn seal_client_secret(sealer: &crate::seal::Sealer, secret: &str) -> String {
    crate::b64url(sealer.seal(CLIENT_SECRET_LABEL, secret.as_bytes()))
}

/// The secret [`seal_client_secret`] sealed.
pub fn open_client_secret(sealer: &crate::seal::Sealer, sealed: &str) -> Option<Vec<u8>> {
    sealer.open(CLIENT_SECRET_LABEL, &crate::b64url_decode(sealed).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::jwt::SigningKey;

    fn set(key: &SigningKey) -> KeySet {
        KeySet::parse(&json!({ "keys": [key.jwk()] })).unwrap()
    }

    fn expected(audiences: &[String]) -> Expected<'_> {
        Expected { client_id: "rp", audiences, now: 1_000_000 }
    }

    fn claims(exp: i64) -> Value {
        json!({"iss": "rp", "sub": "rp", "aud": "https://id.bank.example", "exp": exp, "jti": "j1"})
    }

    #[test]
    fn an_assertion_of_each_key_type_verifies_with_its_public_key_only() {
        let audiences = ["https://id.bank.example".to_owned()];
        for alg in Algorithm::ALL {
            let key = SigningKey::generate(alg).unwrap();
            let token = key.sign("JWT", &claims(1_000_060));
            let accepted = verify_key_assertion(&token, &set(&key), &expected(&audiences));
            assert_eq!(accepted, Ok(Accepted { jti: "j1".into(), exp: 1_000_060 }), "{alg}");
            let other = SigningKey::generate(alg).unwrap();
            assert_eq!(
                verify_key_assertion(&token, &set(&other), &expected(&audiences)),
                Err(AssertionError::UnknownKey),
                "{alg}: another key's kid"
            );
        }
    }

    #[test]
    fn times_are_judged_against_the_given_clock() {
        let audiences = ["https://id.bank.example".to_owned()];
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        let keys = set(&key);
        let at = |exp| verify_key_assertion(&key.sign("JWT", &claims(exp)), &keys, &expected(&audiences));
        assert!(at(1_000_000 + MAX_ASSERTION_LIFETIME).is_ok(), "five minutes ahead");
        assert!(matches!(at(1_000_000 + MAX_ASSERTION_LIFETIME + LEEWAY + 1), Err(AssertionError::Claims(_))));
        assert!(at(1_000_000 - LEEWAY + 1).is_ok(), "within the leeway");
        assert!(matches!(at(1_000_000 - LEEWAY), Err(AssertionError::Claims(_))), "expired");
    }

    #[test]
    fn a_key_set_holds_public_signing_keys_of_known_kinds_only() {
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        let mut with_d = serde_json::to_value(key.jwk()).unwrap();
        with_d["d"] = json!("AAAA");
        assert!(KeySet::parse(&json!({ "keys": [with_d] })).unwrap_err().contains("private member \"d\""));
        let mut enc = serde_json::to_value(key.jwk()).unwrap();
        enc["use"] = json!("enc");
        assert!(KeySet::parse(&json!({ "keys": [enc] })).is_err());
        let mut wrong_alg = serde_json::to_value(key.jwk()).unwrap();
        wrong_alg["alg"] = json!("PS256");
        assert!(KeySet::parse(&json!({ "keys": [wrong_alg] })).unwrap_err().contains("does not fit"));
        let many: Vec<_> = (0..=MAX_KEYS).map(|_| key.jwk().clone()).collect();
        assert!(KeySet::parse(&json!({ "keys": many })).is_err());
        let twice = [key.jwk().clone(), key.jwk().clone()];
        assert!(KeySet::parse(&json!({ "keys": twice })).unwrap_err().contains("share a kid"));
        assert!(KeySet::parse(&json!({ "keys": [{"kty": "OKP", "crv": "X25519", "x": "AAAA"}] })).is_err());
    }

    #[test]
    fn a_secret_assertion_takes_hs256_only() {
        let audiences = ["https://id.bank.example".to_owned()];
        let token = |alg| {
            jsonwebtoken::encode(
                &jsonwebtoken::Header::new(alg),
                &claims(1_000_060),
                &jsonwebtoken::EncodingKey::from_secret(b"0123456789abcdef0123456789abcdef0123456789a"),
            )
            .unwrap()
        };
        let secret = b"0123456789abcdef0123456789abcdef0123456789a";
        assert!(verify_secret_assertion(&token(JwsAlgorithm::HS256), secret, &expected(&audiences)).is_ok());
        assert!(matches!(
            verify_secret_assertion(&token(JwsAlgorithm::HS512), secret, &expected(&audiences)),
            Err(AssertionError::Algorithm(..))
        ));
        assert_eq!(
            verify_secret_assertion(&token(JwsAlgorithm::HS256), b"another secret", &expected(&audiences)),
            Err(AssertionError::Signature)
        );
    }

    #[test]
    fn a_sealed_client_secret_opens_with_the_same_sealer_only() {
        let sealer = crate::seal::Sealer::new(&[7; 32]);
        let sealed = seal_client_secret(&sealer, "s3cr3t");
        assert!(!sealed.contains("s3cr3t"));
        assert_eq!(open_client_secret(&sealer, &sealed).as_deref(), Some(&b"s3cr3t"[..]));
        assert_eq!(open_client_secret(&crate::seal::Sealer::new(&[8; 32]), &sealed), None);
    }
}
