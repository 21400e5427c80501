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

use base64::Engine as _;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk};
use jsonwebtoken::{Algorithm as JwsAlgorithm, DecodingKey};
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
    /// The DER of the key's certificate (`x5c`'s first), when it has one:
    /// what `self_signed_tls_client_auth` compares (RFC 8705 §2.2).
    certificate: Option<Vec<u8>>,
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

    /// Checks and parses one JWK (a DPoP proof's header carries one): a set
    /// of that key alone, under the same rules as [`KeySet::parse`].
    ///
    /// # Errors
    /// What is wrong with the key, in words for the client's developer.
    pub fn one(jwk: &Value) -> Result<Self, String> {
        Ok(Self { keys: vec![public_key(jwk)?] })
    }

    /// Whether a key's certificate (`x5c`'s first) is `der`, byte for byte.
    pub fn holds_certificate(&self, der: &[u8]) -> bool {
        self.keys.iter().filter_map(|k| k.certificate.as_deref()).any(|c| crate::constant_time_eq(c, der))
    }

    /// Whether any key carries a certificate.
    pub fn has_certificates(&self) -> bool {
        self.keys.iter().any(|k| k.certificate.is_some())
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
                .and_then(key_algorithm)
                .ok_or_else(|| format!("\"alg\" {alg} is not one of PS256, ES256, EdDSA, Ed25519, RS256"))?;
            if !allowed.contains(&alg) {
                return Err(format!("\"alg\" {alg} does not fit a {kty} key"));
            }
            vec![alg]
        }
    };
    let parsed = Jwk::deserialize(key).map_err(|e| format!("not a valid {kty} JWK: {e}"))?;
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
    let certificate = match parsed.common.x509_chain.as_deref() {
        None | Some([]) => None,
        Some([first, ..]) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(first)
                .map_err(|_| "\"x5c\" holds standard Base64 DER certificates")?,
        ),
    };
    Ok(PublicKey { kid: parsed.common.key_id, algorithms, decoding, certificate })
}

/// What an assertion must say.
#[derive(Debug, Clone)]
pub struct Expected<'a> {
    /// The client it authenticates (`iss` and `sub`).
    pub client_id: &'a str,
    /// Acceptable audiences: the issuer and the endpoint's address.
    pub audiences: &'a [String],
    /// Only a single string is an acceptable `aud`, not an array (FAPI 2.0
    /// §5.3.2.1: the issuer alone, as a string); `audiences` then names the
    /// issuer only.
    pub single_audience: bool,
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
    #[error("the client assertion must have the issuer alone as aud, a string and not an array")]
    SingleAudience,
}

/// The names an assertion's `alg` may carry under `private_key_jwt`, and
/// the algorithm each is verified with: RFC 9864's fully specified
/// `Ed25519` is the `EdDSA` of an Ed25519 key.
const KEY_ALGORITHMS: [(&str, Algorithm); 5] = [
    ("PS256", Algorithm::Ps256),
    ("ES256", Algorithm::Es256),
    ("EdDSA", Algorithm::EdDsa),
    ("Ed25519", Algorithm::EdDsa),
    ("RS256", Algorithm::Rs256),
];

/// Every `alg` a client assertion may carry, as discovery lists them:
/// `private_key_jwt`'s, then `client_secret_jwt`'s.
pub const ASSERTION_ALGORITHMS: [&str; 6] = ["PS256", "ES256", "EdDSA", "Ed25519", "RS256", "HS256"];

/// Every `alg` a request object may carry, as discovery lists them.
pub const REQUEST_OBJECT_ALGORITHMS: [&str; 5] = ["PS256", "ES256", "EdDSA", "Ed25519", "RS256"];

/// The algorithm a key-signed assertion's `alg` names.
fn key_algorithm(name: &str) -> Option<Algorithm> {
    KEY_ALGORITHMS.iter().find(|(known, _)| *known == name).map(|(_, alg)| *alg)
}

/// A client assertion split and decoded once: its header's `alg` and
/// `kid`, its claims (not yet trusted), and the parts the signature covers.
#[derive(Debug)]
pub struct Assertion<'a> {
    signed: &'a str,
    signature: &'a str,
    alg: String,
    kid: Option<String>,
    typ: Option<String>,
    /// The header's `jwk` (a DPoP proof carries its public key there).
    jwk: Option<Value>,
    claims: Value,
}

impl<'a> Assertion<'a> {
    /// Splits and decodes a compact JWS.
    ///
    /// # Errors
    /// [`AssertionError::Malformed`] when it is not one (or longer than
    /// any token Portico reads).
    pub fn parse(token: &'a str) -> Result<Self, AssertionError> {
        if token.len() > MAX_TOKEN_LEN {
            return Err(AssertionError::Malformed);
        }
        let (signed, signature) = token.rsplit_once('.').ok_or(AssertionError::Malformed)?;
        let (header, claims) = signed.split_once('.').ok_or(AssertionError::Malformed)?;
        let json = |part: &str| -> Result<Value, AssertionError> {
            let bytes = crate::b64url_decode(part).map_err(|_| AssertionError::Malformed)?;
            serde_json::from_slice::<Value>(&bytes).ok().filter(Value::is_object).ok_or(AssertionError::Malformed)
        };
        let mut header = json(header)?;
        let alg = header.get("alg").and_then(Value::as_str).ok_or(AssertionError::Malformed)?.to_owned();
        let kid = header.get("kid").and_then(Value::as_str).map(str::to_owned);
        let typ = header.get("typ").and_then(Value::as_str).map(str::to_owned);
        let jwk = header.as_object_mut().and_then(|header| header.remove("jwk"));
        Ok(Self { signed, signature, alg, kid, typ, jwk, claims: json(claims)? })
    }

    /// Its `iss`, unverified: which client to look up.
    pub fn issuer(&self) -> Option<&str> {
        self.claims.get("iss")?.as_str()
    }

    /// Its claims, as signed (trust them only after a signature check).
    pub fn claims(&self) -> &Value {
        &self.claims
    }

    /// Its header's `alg`, as written.
    pub fn alg(&self) -> &str {
        &self.alg
    }

    /// Its header's `alg`, when it is one Portico verifies.
    pub fn algorithm(&self) -> Option<Algorithm> {
        key_algorithm(&self.alg)
    }

    /// Its header's `typ`.
    pub fn typ(&self) -> Option<&str> {
        self.typ.as_deref()
    }

    /// Its header's `jwk`.
    pub fn header_jwk(&self) -> Option<&Value> {
        self.jwk.as_ref()
    }

    /// Checks the signature with one of `keys` that fits its `alg` and
    /// `kid` (a key-signed JWT: PS256, ES256, EdDSA or Ed25519, RS256).
    ///
    /// # Errors
    /// [`AssertionError::UnknownKey`] when no key fits, otherwise why the
    /// signature is refused.
    pub fn verify_signature(&self, keys: &KeySet) -> Result<(), AssertionError> {
        const TAKES: &str = "PS256, ES256, EdDSA (or Ed25519) or RS256";
        let algorithm = key_algorithm(&self.alg).ok_or_else(|| AssertionError::Algorithm(self.alg.clone(), TAKES))?;
        let jws = match algorithm {
            Algorithm::Rs256 => JwsAlgorithm::RS256,
            Algorithm::Ps256 => JwsAlgorithm::PS256,
            Algorithm::Es256 => JwsAlgorithm::ES256,
            Algorithm::EdDsa => JwsAlgorithm::EdDSA,
        };
        let mut outcome = Err(AssertionError::UnknownKey);
        for key in keys.candidates(algorithm, self.kid.as_deref()) {
            outcome = self.check_signature(&key.decoding, jws);
            if outcome.is_ok() {
                break;
            }
        }
        outcome
    }

    /// Checks the signature with `key` under `alg`.
    fn check_signature(&self, key: &DecodingKey, alg: JwsAlgorithm) -> Result<(), AssertionError> {
        match jsonwebtoken::crypto::verify(self.signature, self.signed.as_bytes(), key, alg) {
            Ok(true) => Ok(()),
            Ok(false) => Err(AssertionError::Signature),
            Err(error) => {
                use jsonwebtoken::errors::ErrorKind;
                Err(match error.kind() {
                    ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName | ErrorKind::InvalidKeyFormat => {
                        AssertionError::Algorithm(self.alg.clone(), "a key of its type")
                    }
                    // A signature that is not Base64url.
                    _ => AssertionError::Signature,
                })
            }
        }
    }

    /// Judges the (signed) claims of a client assertion.
    fn judge(&self, expected: &Expected<'_>) -> Result<Accepted, AssertionError> {
        let claims = Claims::deserialize(&self.claims)
            .map_err(|_| AssertionError::Claims("has claims of the wrong type".into()))?;
        claims.judge(expected)
    }
}

/// An `aud`: one audience or several (RFC 7519 §4.1.3).
#[derive(Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
struct Claims {
    iss: Option<String>,
    sub: Option<String>,
    aud: Option<Audience>,
    exp: Option<i64>,
    iat: Option<i64>,
    nbf: Option<i64>,
    jti: Option<String>,
}

impl Claims {
    /// Portico's rules for a signed assertion's claims.
    fn judge(self, expected: &Expected<'_>) -> Result<Accepted, AssertionError> {
        let claim = |what: &str| AssertionError::Claims(what.to_owned());
        let (iss, sub) = (self.iss.ok_or_else(|| claim("has no iss"))?, self.sub.ok_or_else(|| claim("has no sub"))?);
        let aud = self.aud.ok_or_else(|| claim("has no aud"))?;
        if iss != expected.client_id {
            return Err(claim("must have the client id as iss"));
        }
        if sub != expected.client_id {
            return Err(claim("must have the client id as sub"));
        }
        let names_us = |aud: &String| expected.audiences.contains(aud);
        let aud_ok = match &aud {
            Audience::One(aud) => names_us(aud),
            Audience::Many(_) if expected.single_audience => false,
            Audience::Many(auds) => auds.iter().any(names_us),
        };
        if !aud_ok && expected.single_audience {
            return Err(AssertionError::SingleAudience);
        }
        if !aud_ok {
            return Err(claim("must have the issuer as aud"));
        }
        let now = expected.now;
        let exp = self.exp.ok_or_else(|| claim("has no exp"))?;
        if exp + LEEWAY <= now {
            return Err(claim("has expired"));
        }
        if exp > now + MAX_ASSERTION_LIFETIME + LEEWAY {
            return Err(AssertionError::Claims(format!(
                "expires too late: exp may be at most {MAX_ASSERTION_LIFETIME} seconds ahead"
            )));
        }
        if self.nbf.is_some_and(|nbf| nbf > now + LEEWAY) || self.iat.is_some_and(|iat| iat > now + LEEWAY) {
            return Err(claim("is not valid yet (nbf or iat in the future)"));
        }
        let jti = self.jti.filter(|j| !j.is_empty()).ok_or_else(|| claim("has no jti"))?;
        if jti.len() > MAX_JTI_LEN {
            return Err(AssertionError::Claims(format!("has a jti longer than {MAX_JTI_LEN} characters")));
        }
        Ok(Accepted { jti, exp })
    }
}

/// Checks a `private_key_jwt` assertion against the client's keys.
///
/// # Errors
/// Why it is refused; [`AssertionError::UnknownKey`] when no key fits (the
/// caller may fetch the client's keys again and retry once).
pub fn verify_key_assertion(
    assertion: &Assertion<'_>,
    keys: &KeySet,
    expected: &Expected<'_>,
) -> Result<Accepted, AssertionError> {
    assertion.verify_signature(keys)?;
    assertion.judge(expected)
}

/// Checks a `client_secret_jwt` assertion (HS256) against the client's secret.
///
/// # Errors
/// Why it is refused.
pub fn verify_secret_assertion(
    assertion: &Assertion<'_>,
    secret: &[u8],
    expected: &Expected<'_>,
) -> Result<Accepted, AssertionError> {
    if assertion.alg != "HS256" {
        return Err(AssertionError::Algorithm(assertion.alg.clone(), "HS256"));
    }
    assertion.check_signature(&DecodingKey::from_secret(secret), JwsAlgorithm::HS256)?;
    assertion.judge(expected)
}

/// The `typ` a request object should carry (RFC 9101 §10.8).
pub const REQUEST_OBJECT_TYP: &str = "oauth-authz-req+jwt";
/// Longest a request object may be valid for, in seconds: `exp` at most
/// this long after `nbf` (FAPI 2.0 Message Signing §5.3.1), or after now
/// when it has no `nbf`.
pub const MAX_REQUEST_OBJECT_LIFETIME: i64 = 3600;
/// Claims of a request object that are about the JWT, not parameters of
/// the authorization request.
pub const REQUEST_OBJECT_JWT_CLAIMS: [&str; 7] = ["iss", "aud", "exp", "nbf", "iat", "jti", "sub"];

/// What a request object must say (RFC 9101).
#[derive(Debug, Clone)]
pub struct RequestObjectRules<'a> {
    /// The client it comes from (`iss`, and `client_id` when present).
    pub client_id: &'a str,
    /// Portico's issuer: the `aud`.
    pub issuer: &'a str,
    /// The one algorithm the client registered for its request objects.
    pub alg: Option<Algorithm>,
    /// Now, Unix seconds.
    pub now: i64,
}

/// Why a request object was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestObjectError {
    /// No key of the client fits its `kid` and `alg` (the caller may
    /// fetch the client's keys again and retry once).
    #[error("no key of the client matches the request object's kid and alg")]
    UnknownKey,
    #[error("the request object {0}")]
    Refused(String),
}

/// Checks a signed request object (RFC 9101) with the client's keys and
/// answers its claims: signed with an asymmetric algorithm Portico
/// verifies (the client's registered one when it has one), `typ` absent,
/// `JWT` or [`REQUEST_OBJECT_TYP`], `iss` the client, `aud` the issuer,
/// `exp` required and in the future, `nbf` (when given) past and at most
/// [`MAX_REQUEST_OBJECT_LIFETIME`] before `exp`, `client_id` (when given)
/// the client, and no nested `request` or `request_uri`.
///
/// # Errors
/// Why it is refused.
pub fn verify_request_object(
    object: &Assertion<'_>,
    keys: &KeySet,
    rules: &RequestObjectRules<'_>,
) -> Result<serde_json::Map<String, Value>, RequestObjectError> {
    let refused = |what: String| RequestObjectError::Refused(what);
    if let Some(alg) = rules.alg
        && key_algorithm(&object.alg) != Some(alg)
    {
        return Err(refused(format!("is signed with {}; this client registered {alg}", object.alg)));
    }
    if object
        .typ
        .as_deref()
        .is_some_and(|typ| !typ.eq_ignore_ascii_case(REQUEST_OBJECT_TYP) && !typ.eq_ignore_ascii_case("JWT"))
    {
        return Err(refused(format!(
            "has typ {}; a request object is {REQUEST_OBJECT_TYP}",
            object.typ.as_deref().unwrap_or_default()
        )));
    }
    match object.verify_signature(keys) {
        Ok(()) => {}
        Err(AssertionError::UnknownKey) => return Err(RequestObjectError::UnknownKey),
        Err(AssertionError::Algorithm(alg, _)) => {
            return Err(refused(format!(
                "is signed with {alg}; Portico takes PS256, ES256, EdDSA (or Ed25519) or RS256"
            )));
        }
        Err(_) => return Err(refused("has a signature that does not verify".into())),
    }
    let Value::Object(claims) = object.claims.clone() else { return Err(refused("is not a JSON object".into())) };
    let text = |name: &str| claims.get(name).and_then(Value::as_str);
    let number = |name: &str| {
        claims.get(name).map(|v| v.as_i64().ok_or_else(|| refused(format!("has a {name} that is not a number"))))
    };
    if text("iss") != Some(rules.client_id) {
        return Err(refused("must have the client id as iss".into()));
    }
    if claims.get("client_id").is_some_and(|id| id.as_str() != Some(rules.client_id)) {
        return Err(refused("has a client_id other than the client's".into()));
    }
    let aud_ok = match claims.get("aud") {
        Some(Value::String(aud)) => aud == rules.issuer,
        Some(Value::Array(auds)) => auds.iter().any(|aud| aud.as_str() == Some(rules.issuer)),
        _ => false,
    };
    if !aud_ok {
        return Err(refused(format!("must have the issuer ({}) as aud", rules.issuer)));
    }
    let now = rules.now;
    let exp = number("exp").transpose()?.ok_or_else(|| refused("has no exp".into()))?;
    if exp + LEEWAY <= now {
        return Err(refused("has expired".into()));
    }
    let nbf = number("nbf").transpose()?;
    if nbf.is_some_and(|nbf| nbf > now + LEEWAY) {
        return Err(refused("is not valid yet (nbf)".into()));
    }
    if exp - nbf.unwrap_or(now) > MAX_REQUEST_OBJECT_LIFETIME + LEEWAY {
        return Err(refused(format!(
            "is valid too long: exp may be at most {MAX_REQUEST_OBJECT_LIFETIME} seconds after nbf"
        )));
    }
    if claims.contains_key("request") || claims.contains_key("request_uri") {
        return Err(refused("must not hold request or request_uri".into()));
    }
    Ok(claims)
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
        Expected { client_id: "rp", audiences, single_audience: false, now: 1_000_000 }
    }

    fn parsed(token: &str) -> Assertion<'_> {
        Assertion::parse(token).unwrap()
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
            let accepted = verify_key_assertion(&parsed(&token), &set(&key), &expected(&audiences));
            assert_eq!(accepted, Ok(Accepted { jti: "j1".into(), exp: 1_000_060 }), "{alg}");
            let other = SigningKey::generate(alg).unwrap();
            assert_eq!(
                verify_key_assertion(&parsed(&token), &set(&other), &expected(&audiences)),
                Err(AssertionError::UnknownKey),
                "{alg}: another key's kid"
            );
        }
    }

    /// A compact JWS with exactly `header`, signed by `key` as `alg`.
    fn signed_with_header(
        key: &jsonwebtoken::EncodingKey,
        alg: JwsAlgorithm,
        header: &Value,
        claims: &Value,
    ) -> String {
        let message = format!(
            "{}.{}",
            crate::b64url(serde_json::to_vec(header).unwrap()),
            crate::b64url(serde_json::to_vec(claims).unwrap())
        );
        let signature = jsonwebtoken::crypto::sign(message.as_bytes(), key, alg).unwrap();
        format!("{message}.{signature}")
    }

    #[test]
    fn an_assertion_named_ed25519_rfc_9864_verifies_with_an_ed25519_key() {
        let audiences = ["https://id.bank.example".to_owned()];
        let key = SigningKey::generate(Algorithm::EdDsa).unwrap();
        let encoding = jsonwebtoken::EncodingKey::from_ed_der(&key.to_pkcs8().unwrap());
        let header = json!({"alg": "Ed25519", "typ": "JWT", "kid": key.kid()});
        let token = signed_with_header(&encoding, JwsAlgorithm::EdDSA, &header, &claims(1_000_060));
        let accepted = verify_key_assertion(&parsed(&token), &set(&key), &expected(&audiences));
        assert_eq!(accepted, Ok(Accepted { jti: "j1".into(), exp: 1_000_060 }));
        // A JWK may name the algorithm so too.
        let mut jwk = serde_json::to_value(key.jwk()).unwrap();
        jwk["alg"] = json!("Ed25519");
        let named = KeySet::parse(&json!({ "keys": [jwk] })).unwrap();
        assert!(verify_key_assertion(&parsed(&token), &named, &expected(&audiences)).is_ok());
        // The name does not fit any other key type.
        let es = SigningKey::generate(Algorithm::Es256).unwrap();
        let mut es_jwk = serde_json::to_value(es.jwk()).unwrap();
        es_jwk["alg"] = json!("Ed25519");
        assert!(KeySet::parse(&json!({ "keys": [es_jwk] })).unwrap_err().contains("does not fit"));
    }

    #[test]
    fn claims_are_judged_after_the_signature_and_aud_may_be_a_list() {
        let audiences = ["https://id.bank.example/oauth2/token".to_owned()];
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        let keys = set(&key);
        let with = |change: &dyn Fn(&mut Value)| {
            let mut claims = claims(1_000_060);
            claims["aud"] = json!("https://id.bank.example/oauth2/token");
            change(&mut claims);
            verify_key_assertion(&parsed(&key.sign("JWT", &claims)), &keys, &expected(&audiences))
        };
        let list = with(&|c| c["aud"] = json!(["https://other.example", "https://id.bank.example/oauth2/token"]));
        assert!(list.is_ok(), "{list:?}");
        let refused = |what: &str| Err(AssertionError::Claims(what.to_owned()));
        assert!(with(&|_| {}).is_ok());
        assert_eq!(with(&|c| c["aud"] = json!("https://id.bank.example")), refused("must have the issuer as aud"));
        assert_eq!(with(&|c| c["sub"] = json!("another")), refused("must have the client id as sub"));
        assert_eq!(with(&|c| c["iss"] = json!("another")), refused("must have the client id as iss"));
        assert_eq!(with(&|c| drop(c.as_object_mut().unwrap().remove("jti"))), refused("has no jti"));
        assert_eq!(with(&|c| c["exp"] = json!("soon")), refused("has claims of the wrong type"));
        // A forged signature is refused before any claim is read.
        let token = key.sign("JWT", &json!({"iss": "rp"}));
        let (signed, _) = token.rsplit_once('.').unwrap();
        let forged = format!("{signed}.{}", crate::b64url([7u8; 64]));
        assert_eq!(
            verify_key_assertion(&parsed(&forged), &keys, &expected(&audiences)),
            Err(AssertionError::Signature)
        );
        // Not a JWS at all, or unsigned.
        assert_eq!(Assertion::parse("a.b").map(|_| ()), Err(AssertionError::Malformed));
        assert_eq!(Assertion::parse("!!.!!.!!").map(|_| ()), Err(AssertionError::Malformed));
        let none = format!("{}.{}.", crate::b64url(br#"{"alg":"none"}"#), crate::b64url(br#"{"iss":"rp"}"#));
        assert!(matches!(
            verify_key_assertion(&parsed(&none), &keys, &expected(&audiences)),
            Err(AssertionError::Algorithm(..))
        ));
    }

    #[test]
    fn a_single_audience_is_the_issuer_as_a_string_and_nothing_else() {
        let audiences = ["https://id.bank.example".to_owned()];
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        let keys = set(&key);
        let single = Expected { single_audience: true, ..expected(&audiences) };
        let with = |aud: Value| {
            let mut claims = claims(1_000_060);
            claims["aud"] = aud;
            verify_key_assertion(&parsed(&key.sign("JWT", &claims)), &keys, &single)
        };
        assert!(with(json!("https://id.bank.example")).is_ok());
        let refused = Err(AssertionError::SingleAudience);
        assert_eq!(with(json!(["https://id.bank.example"])), refused, "the issuer in an array");
        assert_eq!(with(json!(["https://id.bank.example", "https://other.example"])), refused);
        assert_eq!(with(json!("https://id.bank.example/oauth2/token")), refused, "the token endpoint");
        // The same array is good where a list may name the issuer.
        let mut claims = claims(1_000_060);
        claims["aud"] = json!(["https://other.example", "https://id.bank.example"]);
        assert!(verify_key_assertion(&parsed(&key.sign("JWT", &claims)), &keys, &expected(&audiences)).is_ok());
    }

    #[test]
    fn times_are_judged_against_the_given_clock() {
        let audiences = ["https://id.bank.example".to_owned()];
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        let keys = set(&key);
        let at = |exp| verify_key_assertion(&parsed(&key.sign("JWT", &claims(exp))), &keys, &expected(&audiences));
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
        assert!(verify_secret_assertion(&parsed(&token(JwsAlgorithm::HS256)), secret, &expected(&audiences)).is_ok());
        assert!(matches!(
            verify_secret_assertion(&parsed(&token(JwsAlgorithm::HS512)), secret, &expected(&audiences)),
            Err(AssertionError::Algorithm(..))
        ));
        assert_eq!(
            verify_secret_assertion(&parsed(&token(JwsAlgorithm::HS256)), b"another secret", &expected(&audiences)),
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
