//! JSON Web Tokens (RFC 7519 / 7515) signed with RS256, PS256, ES256 or
//! EdDSA (Ed25519), and their public keys as JWKs (RFC 7517, RFC 8037).
//!
//! A [`SigningKey`] is the key pair of one [`Algorithm`], parsed once, so
//! that signing costs one private-key operation and nothing else; a
//! [`VerifyingKey`] holds a parsed public key for the same reason. A key
//! signs and verifies with its own algorithm only: RS256 and PS256 keys are
//! separate RSA keys, each published with its `alg`, so that no verifier
//! is misled about which padding a signature uses.

use aws_lc_rs::encoding::AsDer as _;
use aws_lc_rs::rsa::{KeyPair as RsaKeyPair, KeySize};
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, ED25519, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _,
    ParsedPublicKey, RSA_PKCS1_2048_8192_SHA256, RSA_PKCS1_SHA256, RSA_PSS_2048_8192_SHA256, RSA_PSS_SHA256,
    RsaPublicKeyComponents,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The algorithm Portico signs with unless told otherwise.
pub const ALG: &str = "RS256";
/// `typ` of access tokens (RFC 9068).
pub const TYP_ACCESS_TOKEN: &str = "at+jwt";
/// `typ` of id_tokens.
pub const TYP_ID_TOKEN: &str = "JWT";
/// Longest token accepted for verification, against resource exhaustion.
pub const MAX_TOKEN_LEN: usize = 16 * 1024;

pub use portico_model::key::Algorithm;

/// The `at_hash` (or `c_hash`) of `token` in an id_token signed with `alg`:
/// the left half of the token's hash under the algorithm's hash function,
/// Base64url (OIDC Core §3.1.3.6): SHA-256 for RS256, PS256 and ES256,
/// SHA-512 for Ed25519.
pub fn token_hash(alg: Algorithm, token: &str) -> String {
    let hash = match alg {
        Algorithm::Rs256 | Algorithm::Ps256 | Algorithm::Es256 => &aws_lc_rs::digest::SHA256,
        Algorithm::EdDsa => &aws_lc_rs::digest::SHA512,
    };
    let full = aws_lc_rs::digest::digest(hash, token.as_bytes());
    let full = full.as_ref();
    crate::b64url(&full[..full.len() / 2])
}

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{0} key generation failed")]
    Generate(Algorithm),
    #[error("the stored key is not a valid {0} PKCS#8 key: {1}")]
    Parse(Algorithm, String),
    #[error("{0:?} is not an algorithm Portico signs with")]
    Algorithm(String),
}

/// Why a token did not verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("not a compact JWS")]
    Malformed,
    #[error("unsupported algorithm")]
    Algorithm,
    #[error("unknown key id")]
    UnknownKey,
    #[error("bad signature")]
    Signature,
    #[error("claims do not parse")]
    Claims,
}

/// The protected header Portico writes and reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    pub alg: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typ: Option<String>,
}

/// A public key as published in the key set: `n` and `e` for RSA, `crv`,
/// `x` and `y` for EC (P-256), `crv` and `x` for OKP (Ed25519).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jwk {
    pub kty: String,
    pub kid: String,
    #[serde(rename = "use")]
    pub use_: String,
    pub alg: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crv: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y: Option<String>,
}

/// The private half of a key, by its type.
enum Pair {
    Rsa(RsaKeyPair),
    Ec(EcdsaKeyPair),
    Ed(Ed25519KeyPair),
    /// Held elsewhere (an HSM): signs through the holder.
    Remote(std::sync::Arc<dyn RemoteSigner>),
}

/// A private key that never leaves its holder (a PKCS#11 module): it
/// signs the JWS signing input and answers the signature in JWS form
/// (RSA: the raw signature; ES256: `r || s`, 64 bytes).
pub trait RemoteSigner: Send + Sync {
    /// # Errors
    /// [`SignError::Unavailable`] when the holder cannot sign now.
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, SignError>;
}

/// The public half of a remotely held key, as its holder reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemotePublic {
    /// RSA: modulus and public exponent, big-endian.
    Rsa { n: Vec<u8>, e: Vec<u8> },
    /// P-256: the point's coordinates, 32 bytes each.
    P256 { x: Vec<u8>, y: Vec<u8> },
}

impl RemotePublic {
    /// The key of a PEM `PUBLIC KEY` block (a SubjectPublicKeyInfo, as
    /// `openssl pkey -pubout` writes it), and its DER.
    ///
    /// # Errors
    /// When it is not one PEM public key of RSA or P-256.
    pub fn from_spki_pem(pem: &[u8]) -> Result<(Self, Vec<u8>), String> {
        let (_, block) = x509_parser::pem::parse_x509_pem(pem)
            .map_err(|e| format!("not a PEM block ({e}): give the key as `openssl pkey -pubout` writes it"))?;
        if block.label != "PUBLIC KEY" {
            return Err(format!("a PEM {:?} block, not a PUBLIC KEY one", block.label));
        }
        let key = Self::from_spki_der(&block.contents)?;
        Ok((key, block.contents))
    }

    /// The key of a DER SubjectPublicKeyInfo (RFC 5280 §4.1).
    ///
    /// # Errors
    /// When it is not a SubjectPublicKeyInfo of RSA or of P-256 (an
    /// uncompressed point).
    pub fn from_spki_der(der: &[u8]) -> Result<Self, String> {
        use x509_parser::prelude::FromDer as _;
        use x509_parser::public_key::PublicKey;
        let (rest, spki) = x509_parser::x509::SubjectPublicKeyInfo::from_der(der)
            .map_err(|e| format!("not a public key (SubjectPublicKeyInfo): {e}"))?;
        if !rest.is_empty() {
            return Err("bytes after the public key".to_owned());
        }
        let unsigned = |bytes: &[u8]| {
            let start = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
            bytes[start..].to_vec()
        };
        match spki.parsed().map_err(|e| format!("the public key does not parse: {e}"))? {
            PublicKey::RSA(rsa) => Ok(Self::Rsa { n: unsigned(rsa.modulus), e: unsigned(rsa.exponent) }),
            PublicKey::EC(point) => {
                let curve = spki.algorithm.parameters.as_ref().and_then(|p| p.as_oid().ok());
                if curve != Some(x509_parser::oid_registry::OID_EC_P256) {
                    return Err("an elliptic-curve key of another curve than P-256".to_owned());
                }
                match point.data() {
                    [4, coordinates @ ..] if coordinates.len() == 64 => {
                        Ok(Self::P256 { x: coordinates[..32].to_vec(), y: coordinates[32..].to_vec() })
                    }
                    _ => Err("a P-256 point that is not in uncompressed form".to_owned()),
                }
            }
            _ => Err("neither an RSA nor a P-256 key".to_owned()),
        }
    }

    /// The RSA modulus' size in bits; 0 for other keys.
    pub fn rsa_bits(&self) -> usize {
        match self {
            Self::Rsa { n, .. } => n.len() * 8 - n.first().map_or(8, |b| b.leading_zeros() as usize),
            Self::P256 { .. } => 0,
        }
    }
}

/// Why a key could not sign.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignError {
    /// The key's holder cannot sign now (an HSM down, logged out, busy):
    /// answer 503 and try again later.
    #[error("the signing key's module cannot sign now: {0}")]
    Unavailable(String),
    /// The holder answered a signature the public key does not verify.
    #[error("the signing key's module answered a signature that does not verify: {0}")]
    Mismatch(String),
}

/// A key pair of one algorithm, parsed once, with its `kid`.
pub struct SigningKey {
    alg: Algorithm,
    pair: Pair,
    jwk: Jwk,
    verifying: VerifyingKey,
}

impl SigningKey {
    /// A new random key for `alg`: RSA-2048, P-256 or Ed25519.
    ///
    /// # Errors
    /// [`KeyError::Generate`] if the library fails.
    pub fn generate(alg: Algorithm) -> Result<Self, KeyError> {
        let failed = |_| KeyError::Generate(alg);
        let pair = match alg {
            Algorithm::Rs256 | Algorithm::Ps256 => Pair::Rsa(RsaKeyPair::generate(KeySize::Rsa2048).map_err(failed)?),
            Algorithm::Es256 => Pair::Ec(EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).map_err(failed)?),
            Algorithm::EdDsa => Pair::Ed(Ed25519KeyPair::generate().map_err(failed)?),
        };
        Self::from_pair(alg, pair)
    }

    /// A key for `alg` from its PKCS#8 DER form.
    ///
    /// # Errors
    /// [`KeyError::Parse`] for anything that is not a PKCS#8 key of `alg`'s type.
    pub fn from_pkcs8(alg: Algorithm, der: &[u8]) -> Result<Self, KeyError> {
        let rejected = |e: aws_lc_rs::error::KeyRejected| KeyError::Parse(alg, e.to_string());
        let pair = match alg {
            Algorithm::Rs256 | Algorithm::Ps256 => Pair::Rsa(RsaKeyPair::from_pkcs8(der).map_err(rejected)?),
            Algorithm::Es256 => {
                Pair::Ec(EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der).map_err(rejected)?)
            }
            Algorithm::EdDsa => Pair::Ed(Ed25519KeyPair::from_pkcs8(der).map_err(rejected)?),
        };
        Self::from_pair(alg, pair)
    }

    /// A key whose private half is held by `signer` (an HSM), with the
    /// public half it reported. RS256, PS256 and ES256 only.
    ///
    /// # Errors
    /// [`KeyError::Parse`] when the public half is not a key of `alg`.
    pub fn from_remote(
        alg: Algorithm,
        public: &RemotePublic,
        signer: std::sync::Arc<dyn RemoteSigner>,
    ) -> Result<Self, KeyError> {
        let jwk = match (alg, public) {
            (Algorithm::Rs256 | Algorithm::Ps256, RemotePublic::Rsa { n, e }) => Jwk::rsa(alg, n, e),
            (Algorithm::Es256, RemotePublic::P256 { x, y }) if x.len() == 32 && y.len() == 32 => Jwk::ec_p256(x, y),
            _ => return Err(KeyError::Parse(alg, "the module's public key is not a key of this algorithm".to_owned())),
        };
        let verifying = VerifyingKey::from_jwk(&jwk)?;
        Ok(Self { alg, pair: Pair::Remote(signer), jwk, verifying })
    }

    /// Whether the private half is held elsewhere (an HSM).
    pub fn is_remote(&self) -> bool {
        matches!(self.pair, Pair::Remote(_))
    }

    fn from_pair(alg: Algorithm, pair: Pair) -> Result<Self, KeyError> {
        let jwk = match &pair {
            Pair::Remote(_) => unreachable!("remote keys are made by from_remote"),
            Pair::Rsa(pair) => {
                let public = pair.public_key();
                Jwk::rsa(
                    alg,
                    public.modulus().big_endian_without_leading_zero(),
                    public.exponent().big_endian_without_leading_zero(),
                )
            }
            Pair::Ec(pair) => {
                // An uncompressed point: 0x04, then x and y of 32 bytes each.
                let point = pair.public_key().as_ref();
                let (x, y) = point.get(1..).filter(|xy| xy.len() == 64).map(|xy| xy.split_at(32)).ok_or_else(|| {
                    KeyError::Parse(alg, "the public key is not an uncompressed P-256 point".to_owned())
                })?;
                Jwk::ec_p256(x, y)
            }
            Pair::Ed(pair) => Jwk::ed25519(pair.public_key().as_ref()),
        };
        let verifying = VerifyingKey::from_jwk(&jwk)?;
        Ok(Self { alg, pair, jwk, verifying })
    }

    /// PKCS#8 DER of the private key, for sealing and storage.
    ///
    /// # Errors
    /// [`KeyError::Parse`] if the library cannot encode the key.
    pub fn to_pkcs8(&self) -> Result<Vec<u8>, KeyError> {
        let failed = |e: aws_lc_rs::error::Unspecified| KeyError::Parse(self.alg, e.to_string());
        Ok(match &self.pair {
            Pair::Rsa(pair) => pair.as_der().map_err(failed)?.as_ref().to_vec(),
            Pair::Ec(pair) => pair.to_pkcs8v1().map_err(failed)?.as_ref().to_vec(),
            Pair::Ed(pair) => pair.to_pkcs8().map_err(failed)?.as_ref().to_vec(),
            Pair::Remote(_) => return Err(KeyError::Parse(self.alg, "the key is held by its module".to_owned())),
        })
    }

    pub fn algorithm(&self) -> Algorithm {
        self.alg
    }

    pub fn kid(&self) -> &str {
        &self.jwk.kid
    }

    /// The public half, as published in the JWKS.
    pub fn jwk(&self) -> &Jwk {
        &self.jwk
    }

    pub fn verifying_key(&self) -> &VerifyingKey {
        &self.verifying
    }

    /// A compact JWS of `claims` with header `{alg, kid, typ}`, by a key
    /// Portico holds itself.
    ///
    /// # Panics
    /// Only if the claims do not serialize, signing fails, or the key is
    /// held remotely: programming errors for Portico's claim types and its
    /// own keys. Keys that may be remote sign with [`SigningKey::try_sign`].
    pub fn sign<C: Serialize>(&self, typ: &str, claims: &C) -> String {
        self.try_sign(typ, claims).expect("a key Portico holds signs")
    }

    /// A compact JWS of `claims` with header `{alg, kid, typ}`. A remotely
    /// held key's signature is verified with the public key before it is
    /// used.
    ///
    /// # Errors
    /// [`SignError`] when a remote holder cannot sign, or signs wrongly.
    ///
    /// # Panics
    /// Only if the claims do not serialize or a local key fails to sign.
    pub fn try_sign<C: Serialize>(&self, typ: &str, claims: &C) -> Result<String, SignError> {
        let header =
            Header { alg: self.alg.as_str().to_owned(), kid: Some(self.jwk.kid.clone()), typ: Some(typ.to_owned()) };
        self.try_sign_with_header(&header, claims)
    }

    /// A compact JWS of `claims` under `header` taken as given, signed
    /// with this key's algorithm: for JWTs whose header carries more than
    /// `{alg, kid, typ}` (a DPoP proof's `jwk`, say). The caller answers
    /// for the header's `alg` naming this key's algorithm.
    ///
    /// # Errors
    /// As [`SigningKey::try_sign`].
    ///
    /// # Panics
    /// Only if the header or claims do not serialize or a local key fails
    /// to sign.
    pub fn try_sign_with_header<H: Serialize, C: Serialize>(
        &self,
        header: &H,
        claims: &C,
    ) -> Result<String, SignError> {
        let header = serde_json::to_vec(header).expect("header serializes");
        let payload = serde_json::to_vec(claims).expect("claims serialize");
        let mut token = crate::b64url(header);
        token.push('.');
        token.push_str(&crate::b64url(payload));
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let signature = match &self.pair {
            Pair::Rsa(pair) => {
                let padding = if self.alg == Algorithm::Ps256 { &RSA_PSS_SHA256 } else { &RSA_PKCS1_SHA256 };
                let mut signature = vec![0; pair.public_modulus_len()];
                pair.sign(padding, &rng, token.as_bytes(), &mut signature).expect("RSA signing");
                signature
            }
            Pair::Ec(pair) => pair.sign(&rng, token.as_bytes()).expect("ECDSA signing").as_ref().to_vec(),
            Pair::Ed(pair) => pair.sign(token.as_bytes()).as_ref().to_vec(),
            Pair::Remote(signer) => {
                let failed = |reason: &'static str| {
                    metrics::counter!("portico_token_signing_failures_total", "reason" => reason).increment(1);
                };
                let signature = signer.sign(token.as_bytes()).inspect_err(|_| failed("unavailable"))?;
                if !self.verifying.verify_signature(token.as_bytes(), &signature) {
                    failed("mismatch");
                    return Err(SignError::Mismatch(format!("key {}", self.jwk.kid)));
                }
                signature
            }
        };
        token.push('.');
        token.push_str(&crate::b64url(signature));
        Ok(token)
    }
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey").field("alg", &self.alg).field("kid", &self.jwk.kid).finish_non_exhaustive()
    }
}

impl Jwk {
    /// The JWK of an RSA public key for `alg` (RS256 or PS256).
    pub fn rsa(alg: Algorithm, n: &[u8], e: &[u8]) -> Self {
        let (n, e) = (crate::b64url(n), crate::b64url(e));
        // RFC 7638 §3.2: the required members in lexicographic order, no white space.
        let kid = thumbprint(&format!(r#"{{"e":"{e}","kty":"RSA","n":"{n}"}}"#));
        Self { n: Some(n), e: Some(e), ..Self::new("RSA", kid, alg) }
    }

    /// The JWK of a P-256 public key (ES256) from its coordinates.
    pub fn ec_p256(x: &[u8], y: &[u8]) -> Self {
        let (x, y) = (crate::b64url(x), crate::b64url(y));
        let kid = thumbprint(&format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#));
        Self { crv: Some("P-256".to_owned()), x: Some(x), y: Some(y), ..Self::new("EC", kid, Algorithm::Es256) }
    }

    /// The JWK of an Ed25519 public key (EdDSA, RFC 8037).
    pub fn ed25519(public: &[u8]) -> Self {
        let x = crate::b64url(public);
        let kid = thumbprint(&format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#));
        Self { crv: Some("Ed25519".to_owned()), x: Some(x), ..Self::new("OKP", kid, Algorithm::EdDsa) }
    }

    fn new(kty: &str, kid: String, alg: Algorithm) -> Self {
        Self {
            kty: kty.to_owned(),
            kid,
            use_: "sig".to_owned(),
            alg: alg.as_str().to_owned(),
            n: None,
            e: None,
            crv: None,
            x: None,
            y: None,
        }
    }
}

/// RFC 7638: the Base64url SHA-256 of the key's canonical JSON.
fn thumbprint(canonical: &str) -> String {
    crate::b64url(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, canonical.as_bytes()))
}

/// A public key of one algorithm, parsed once, with its `kid`.
pub struct VerifyingKey {
    kid: String,
    alg: Algorithm,
    key: ParsedPublicKey,
}

impl VerifyingKey {
    /// The key a JWK of Portico's own describes (its `alg` says which).
    ///
    /// # Errors
    /// [`KeyError::Parse`] when the members do not form a key of its `alg`.
    pub fn from_jwk(jwk: &Jwk) -> Result<Self, KeyError> {
        let alg = Algorithm::parse(&jwk.alg).ok_or_else(|| KeyError::Algorithm(jwk.alg.clone()))?;
        let member = |value: &Option<String>, name: &str| {
            let text = value.as_deref().ok_or_else(|| KeyError::Parse(alg, format!("no {name}")))?;
            crate::b64url_decode(text).map_err(|_| KeyError::Parse(alg, format!("{name} is not Base64url")))
        };
        let invalid = |e: aws_lc_rs::error::KeyRejected| KeyError::Parse(alg, e.to_string());
        let key = match alg {
            Algorithm::Rs256 | Algorithm::Ps256 => {
                let (n, e) = (member(&jwk.n, "n")?, member(&jwk.e, "e")?);
                let verification =
                    if alg == Algorithm::Ps256 { &RSA_PSS_2048_8192_SHA256 } else { &RSA_PKCS1_2048_8192_SHA256 };
                RsaPublicKeyComponents { n: &n, e: &e }.to_parsed_public_key(verification).map_err(invalid)?
            }
            Algorithm::Es256 => {
                let mut point = vec![0x04];
                point.extend(member(&jwk.x, "x")?);
                point.extend(member(&jwk.y, "y")?);
                ParsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point).map_err(invalid)?
            }
            Algorithm::EdDsa => ParsedPublicKey::new(&ED25519, member(&jwk.x, "x")?).map_err(invalid)?,
        };
        Ok(Self { kid: jwk.kid.clone(), alg, key })
    }

    pub fn kid(&self) -> &str {
        &self.kid
    }

    pub fn algorithm(&self) -> Algorithm {
        self.alg
    }

    fn verify_signature(&self, message: &[u8], signature: &[u8]) -> bool {
        self.key.verify_sig(message, signature).is_ok()
    }
}

impl std::fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifyingKey").field("alg", &self.alg).field("kid", &self.kid).finish_non_exhaustive()
    }
}

/// Reads the protected header of a compact JWS without verifying anything.
///
/// # Errors
/// [`VerifyError::Malformed`] when the token is not three Base64URL parts
/// with a JSON header, or longer than [`MAX_TOKEN_LEN`].
pub fn peek_header(token: &str) -> Result<Header, VerifyError> {
    if token.len() > MAX_TOKEN_LEN {
        return Err(VerifyError::Malformed);
    }
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(VerifyError::Malformed);
    };
    let header = crate::b64url_decode(header).map_err(|_| VerifyError::Malformed)?;
    serde_json::from_slice(&header).map_err(|_| VerifyError::Malformed)
}

/// Verifies a compact JWS with the key its `kid` names, found by
/// `key_for`, and returns its header and claims. Time-based claims are the
/// caller's to check (with its clock).
///
/// # Errors
/// [`VerifyError`] for the first thing found wrong.
pub fn verify<'k, C: DeserializeOwned>(
    token: &str,
    key_for: impl FnOnce(&str) -> Option<&'k VerifyingKey>,
) -> Result<(Header, C), VerifyError> {
    let header = peek_header(token)?;
    let alg = Algorithm::parse(&header.alg).ok_or(VerifyError::Algorithm)?;
    let kid = header.kid.as_deref().ok_or(VerifyError::UnknownKey)?;
    let key = key_for(kid).ok_or(VerifyError::UnknownKey)?;
    // A key verifies its own algorithm only: no RS256 signature passes as
    // PS256, nor the reverse.
    if key.alg != alg {
        return Err(VerifyError::Algorithm);
    }
    let (signed, signature) = token.rsplit_once('.').ok_or(VerifyError::Malformed)?;
    let signature = crate::b64url_decode(signature).map_err(|_| VerifyError::Malformed)?;
    if !key.verify_signature(signed.as_bytes(), &signature) {
        return Err(VerifyError::Signature);
    }
    let payload = signed.split_once('.').map(|(_, p)| p).ok_or(VerifyError::Malformed)?;
    let payload = crate::b64url_decode(payload).map_err(|_| VerifyError::Malformed)?;
    let claims = serde_json::from_slice(&payload).map_err(|_| VerifyError::Claims)?;
    Ok((header, claims))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn keys() -> Vec<SigningKey> {
        Algorithm::ALL.into_iter().map(|alg| SigningKey::generate(alg).unwrap()).collect()
    }

    #[test]
    fn every_algorithm_signs_and_verifies_and_keeps_its_kid() {
        for key in keys() {
            let alg = key.algorithm();
            let again = SigningKey::from_pkcs8(alg, &key.to_pkcs8().unwrap()).unwrap();
            assert_eq!(key.kid(), again.kid(), "{alg}: kid is a function of the key");
            assert_eq!(key.jwk(), again.jwk());
            let token = key.sign(TYP_ACCESS_TOKEN, &json!({"sub": "u1"}));
            let (header, claims): (Header, Value) =
                verify(&token, |kid| (kid == again.kid()).then(|| again.verifying_key())).unwrap();
            assert_eq!((header.alg.as_str(), header.typ.as_deref()), (alg.as_str(), Some(TYP_ACCESS_TOKEN)));
            assert_eq!(claims["sub"], "u1");
            let published = VerifyingKey::from_jwk(key.jwk()).unwrap();
            assert!(verify::<Value>(&token, |_| Some(&published)).is_ok(), "{alg}: the published key verifies");
        }
    }

    #[test]
    fn a_key_is_of_its_own_type_and_published_with_its_members() {
        let [rs, ps, es, ed] = keys().try_into().unwrap();
        let members = |key: &SigningKey| {
            let jwk = serde_json::to_value(key.jwk()).unwrap();
            let mut names: Vec<String> = jwk.as_object().unwrap().keys().cloned().collect();
            names.sort();
            (jwk["kty"].as_str().unwrap().to_owned(), jwk["alg"].as_str().unwrap().to_owned(), names.join(","))
        };
        assert_eq!(members(&rs), ("RSA".into(), "RS256".into(), "alg,e,kid,kty,n,use".into()));
        assert_eq!(members(&ps), ("RSA".into(), "PS256".into(), "alg,e,kid,kty,n,use".into()));
        assert_eq!(members(&es), ("EC".into(), "ES256".into(), "alg,crv,kid,kty,use,x,y".into()));
        assert_eq!(members(&ed), ("OKP".into(), "EdDSA".into(), "alg,crv,kid,kty,use,x".into()));
        let mut unnamed = rs.jwk().clone();
        unnamed.alg = "RS512".to_owned();
        assert!(matches!(VerifyingKey::from_jwk(&unnamed), Err(KeyError::Algorithm(_))), "no algorithm is guessed");
        // The private key of one type is no key of another.
        let der = es.to_pkcs8().unwrap();
        assert!(SigningKey::from_pkcs8(Algorithm::EdDsa, &der).is_err());
        assert!(SigningKey::from_pkcs8(Algorithm::Rs256, &der).is_err());
        assert!(SigningKey::from_pkcs8(Algorithm::Es256, &ed.to_pkcs8().unwrap()).is_err());
    }

    #[test]
    fn a_header_given_whole_is_signed_as_given_under_the_keys_algorithm() {
        for key in keys() {
            let alg = key.algorithm();
            let header = json!({"typ": "dpop+jwt", "alg": alg.as_str(), "kid": key.kid(), "jwk": key.jwk()});
            let token = key.try_sign_with_header(&header, &json!({"htm": "POST"})).unwrap();
            let written: Value =
                serde_json::from_slice(&crate::b64url_decode(token.split('.').next().unwrap()).unwrap()).unwrap();
            assert_eq!(written, header, "{alg}: no member added, none dropped");
            let published = VerifyingKey::from_jwk(key.jwk()).unwrap();
            let (_, claims): (Header, Value) = verify(&token, |_| Some(&published)).unwrap();
            assert_eq!(claims["htm"], "POST", "{alg}: the published key verifies");
        }
    }

    #[test]
    fn an_independent_library_verifies_every_algorithm_with_the_published_key() {
        for key in keys() {
            let token = key.sign(TYP_ID_TOKEN, &json!({"sub": "u1"}));
            let jwk: jsonwebtoken::jwk::Jwk = serde_json::from_value(serde_json::to_value(key.jwk()).unwrap()).unwrap();
            let decoding = jsonwebtoken::DecodingKey::from_jwk(&jwk).unwrap();
            let alg: jsonwebtoken::Algorithm = key.algorithm().as_str().parse().unwrap();
            let mut validation = jsonwebtoken::Validation::new(alg);
            validation.required_spec_claims.clear();
            validation.validate_exp = false;
            let decoded = jsonwebtoken::decode::<Value>(&token, &decoding, &validation);
            assert_eq!(decoded.unwrap().claims["sub"], "u1", "{}", key.algorithm());
        }
    }

    #[test]
    fn rejects_tampering_other_keys_and_other_algorithms() {
        for key in keys() {
            let other = SigningKey::generate(key.algorithm()).unwrap();
            let token = key.sign(TYP_ID_TOKEN, &json!({"sub": "u1"}));
            let by_kid = |kid: &str| (kid == key.kid()).then(|| key.verifying_key());

            let (head, rest) = token.split_once('.').unwrap();
            let (_, sig) = rest.split_once('.').unwrap();
            let forged = format!("{head}.{}.{sig}", crate::b64url(br#"{"sub":"u2"}"#));
            assert_eq!(verify::<Value>(&forged, by_kid).unwrap_err(), VerifyError::Signature);

            let unknown = verify::<Value>(&token, |kid| (kid == other.kid()).then(|| other.verifying_key()));
            assert_eq!(unknown.unwrap_err(), VerifyError::UnknownKey);

            // The same key under another algorithm's name: refused before
            // any signature is checked.
            for alg in Algorithm::ALL.into_iter().filter(|alg| *alg != key.algorithm()) {
                let header = json!({"alg": alg.as_str(), "kid": key.kid(), "typ": TYP_ID_TOKEN});
                let renamed = format!("{}.{}", crate::b64url(header.to_string()), rest);
                assert_eq!(verify::<Value>(&renamed, by_kid).unwrap_err(), VerifyError::Algorithm, "{alg}");
            }
        }
        let key = SigningKey::generate(Algorithm::Es256).unwrap();
        let by_kid = |kid: &str| (kid == key.kid()).then(|| key.verifying_key());
        for alg in ["none", "HS256", "ES512", "es256", "RS512"] {
            let token = format!("{}.{}.", crate::b64url(format!(r#"{{"alg":"{alg}"}}"#)), crate::b64url(b"{}"));
            assert_eq!(verify::<Value>(&token, by_kid).unwrap_err(), VerifyError::Algorithm, "{alg}");
        }
        assert_eq!(verify::<Value>("a.b", by_kid).unwrap_err(), VerifyError::Malformed);
        assert_eq!(verify::<Value>("a.b.c.d", by_kid).unwrap_err(), VerifyError::Malformed);
    }

    #[test]
    fn kid_is_rfc7638_thumbprint() {
        // RFC 7638 §3.1 example key.
        let n = crate::b64url_decode("0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw").unwrap();
        let e = crate::b64url_decode("AQAB").unwrap();
        assert_eq!(Jwk::rsa(Algorithm::Rs256, &n, &e).kid, "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs");
        // RFC 8037 §A.3: the thumbprint of the Ed25519 example key.
        let x = crate::b64url_decode("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo").unwrap();
        assert_eq!(Jwk::ed25519(&x).kid, "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k");
    }

    #[test]
    fn token_hashes_use_the_algorithms_hash() {
        let token = "jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y";
        for alg in [Algorithm::Rs256, Algorithm::Ps256, Algorithm::Es256] {
            assert_eq!(token_hash(alg, token), crate::hash::at_hash(token), "{alg}: SHA-256");
        }
        let ed = token_hash(Algorithm::EdDsa, token);
        let sha512 = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA512, token.as_bytes());
        assert_eq!(ed, crate::b64url(&sha512.as_ref()[..32]), "EdDSA: the left half of SHA-512");
        assert_eq!(ed.len(), 43);
    }

    #[test]
    fn algorithms_are_named_as_jwa_names_them() {
        let names: Vec<&str> = Algorithm::ALL.iter().map(|alg| alg.as_str()).collect();
        assert_eq!(names, ["RS256", "PS256", "ES256", "EdDSA"]);
        assert!(Algorithm::ALL.iter().all(|alg| Algorithm::parse(alg.as_str()) == Some(*alg)));
        assert_eq!(Algorithm::parse("eddsa"), None);
        assert_eq!(Algorithm::parse("ES384"), None);
        assert_eq!(Algorithm::parse(ALG), Some(Algorithm::Rs256));
    }
}
