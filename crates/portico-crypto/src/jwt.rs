//! RS256 JSON Web Tokens (RFC 7519 / 7515) and the JWKS (RFC 7517).
//!
//! A [`SigningKey`] holds its parsed RSA key pair, so that signing costs one
//! RSA private operation and nothing else; a [`VerifyingKey`] holds a parsed
//! public key for the same reason.

use aws_lc_rs::encoding::AsDer as _;
use aws_lc_rs::rsa::{KeyPair, KeySize};
use aws_lc_rs::signature::{
    KeyPair as _, ParsedPublicKey, RSA_PKCS1_2048_8192_SHA256, RSA_PKCS1_SHA256, RsaPublicKeyComponents,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The only algorithm Portico signs with and accepts.
pub const ALG: &str = "RS256";
/// `typ` of access tokens (RFC 9068).
pub const TYP_ACCESS_TOKEN: &str = "at+jwt";
/// `typ` of id_tokens.
pub const TYP_ID_TOKEN: &str = "JWT";
/// Longest token accepted for verification, against resource exhaustion.
pub const MAX_TOKEN_LEN: usize = 16 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("RSA key generation failed")]
    Generate,
    #[error("the stored RSA key is not valid PKCS#8: {0}")]
    Parse(String),
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

/// One entry of `PublicJwksResponseDTO.keys`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jwk {
    pub kty: String,
    pub kid: String,
    #[serde(rename = "use")]
    pub use_: String,
    pub alg: String,
    pub n: String,
    pub e: String,
}

/// An RSA-2048 private key, parsed once, with its `kid`.
pub struct SigningKey {
    pair: KeyPair,
    jwk: Jwk,
    verifying: VerifyingKey,
}

impl SigningKey {
    /// A new random RSA-2048 key.
    ///
    /// # Errors
    /// [`KeyError::Generate`] if the library fails.
    pub fn generate() -> Result<Self, KeyError> {
        let pair = KeyPair::generate(KeySize::Rsa2048).map_err(|_| KeyError::Generate)?;
        Self::from_pair(pair)
    }

    /// A key from its PKCS#8 DER form.
    ///
    /// # Errors
    /// [`KeyError::Parse`] for anything that is not an RSA PKCS#8 key.
    pub fn from_pkcs8(der: &[u8]) -> Result<Self, KeyError> {
        let pair = KeyPair::from_pkcs8(der).map_err(|e| KeyError::Parse(e.to_string()))?;
        Self::from_pair(pair)
    }

    fn from_pair(pair: KeyPair) -> Result<Self, KeyError> {
        let public = pair.public_key();
        let n = public.modulus().big_endian_without_leading_zero().to_vec();
        let e = public.exponent().big_endian_without_leading_zero().to_vec();
        let jwk = Jwk::rsa(&n, &e);
        let verifying = VerifyingKey::from_components(&jwk.kid, &n, &e)?;
        Ok(Self { pair, jwk, verifying })
    }

    /// PKCS#8 DER of the private key, for sealing and storage.
    ///
    /// # Errors
    /// [`KeyError::Parse`] if the library cannot encode the key.
    pub fn to_pkcs8(&self) -> Result<Vec<u8>, KeyError> {
        let der = self.pair.as_der().map_err(|e| KeyError::Parse(e.to_string()))?;
        Ok(der.as_ref().to_vec())
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

    /// A compact JWS of `claims` with header `{alg: RS256, kid, typ}`.
    ///
    /// # Panics
    /// Only if the claims do not serialize or RSA signing fails, both of
    /// which are programming errors for Portico's claim types.
    pub fn sign<C: Serialize>(&self, typ: &str, claims: &C) -> String {
        let header = Header { alg: ALG.to_owned(), kid: Some(self.jwk.kid.clone()), typ: Some(typ.to_owned()) };
        let header = serde_json::to_vec(&header).expect("header serializes");
        let payload = serde_json::to_vec(claims).expect("claims serialize");
        let mut token = crate::b64url(header);
        token.push('.');
        token.push_str(&crate::b64url(payload));
        let mut signature = vec![0; self.pair.public_modulus_len()];
        let rng = aws_lc_rs::rand::SystemRandom::new();
        self.pair.sign(&RSA_PKCS1_SHA256, &rng, token.as_bytes(), &mut signature).expect("RSA signing");
        token.push('.');
        token.push_str(&crate::b64url(signature));
        token
    }
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey").field("kid", &self.jwk.kid).finish_non_exhaustive()
    }
}

impl Jwk {
    /// The JWK of an RSA public key; `kid` is its RFC 7638 thumbprint.
    pub fn rsa(n: &[u8], e: &[u8]) -> Self {
        let n = crate::b64url(n);
        let e = crate::b64url(e);
        // RFC 7638 §3.2: members in lexicographic order, no white space.
        let canonical = format!(r#"{{"e":"{e}","kty":"RSA","n":"{n}"}}"#);
        let kid = crate::b64url(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, canonical.as_bytes()));
        Self { kty: "RSA".to_owned(), kid, use_: "sig".to_owned(), alg: ALG.to_owned(), n, e }
    }
}

/// An RSA public key, parsed once, with its `kid`.
pub struct VerifyingKey {
    kid: String,
    key: ParsedPublicKey,
}

impl VerifyingKey {
    /// # Errors
    /// [`KeyError::Parse`] when `n` and `e` do not form an RSA key.
    pub fn from_components(kid: &str, n: &[u8], e: &[u8]) -> Result<Self, KeyError> {
        let key = RsaPublicKeyComponents { n, e }
            .to_parsed_public_key(&RSA_PKCS1_2048_8192_SHA256)
            .map_err(|e| KeyError::Parse(e.to_string()))?;
        Ok(Self { kid: kid.to_owned(), key })
    }

    pub fn kid(&self) -> &str {
        &self.kid
    }

    fn verify_signature(&self, message: &[u8], signature: &[u8]) -> bool {
        self.key.verify_sig(message, signature).is_ok()
    }
}

impl std::fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifyingKey").field("kid", &self.kid).finish_non_exhaustive()
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

/// Verifies a compact RS256 JWS with the key its `kid` names, found by
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
    if header.alg != ALG {
        return Err(VerifyError::Algorithm);
    }
    let kid = header.kid.as_deref().ok_or(VerifyError::UnknownKey)?;
    let key = key_for(kid).ok_or(VerifyError::UnknownKey)?;
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

    #[test]
    fn sign_verify_round_trip_and_stable_kid() {
        let key = SigningKey::generate().unwrap();
        let again = SigningKey::from_pkcs8(&key.to_pkcs8().unwrap()).unwrap();
        assert_eq!(key.kid(), again.kid(), "kid is a function of the key");
        let token = key.sign(TYP_ACCESS_TOKEN, &json!({"sub": "u1"}));
        let (header, claims): (Header, Value) =
            verify(&token, |kid| (kid == again.kid()).then(|| again.verifying_key())).unwrap();
        assert_eq!(header.typ.as_deref(), Some(TYP_ACCESS_TOKEN));
        assert_eq!(claims["sub"], "u1");
    }

    #[test]
    fn rejects_tampering_other_keys_and_other_algorithms() {
        let key = SigningKey::generate().unwrap();
        let other = SigningKey::generate().unwrap();
        let token = key.sign(TYP_ID_TOKEN, &json!({"sub": "u1"}));
        let by_kid = |kid: &str| (kid == key.kid()).then(|| key.verifying_key());

        let (head, rest) = token.split_once('.').unwrap();
        let (_, sig) = rest.split_once('.').unwrap();
        let forged = format!("{head}.{}.{sig}", crate::b64url(br#"{"sub":"u2"}"#));
        assert_eq!(verify::<Value>(&forged, by_kid).unwrap_err(), VerifyError::Signature);

        let unknown = verify::<Value>(&token, |kid| (kid == other.kid()).then(|| other.verifying_key()));
        assert_eq!(unknown.unwrap_err(), VerifyError::UnknownKey);

        let none_alg = format!("{}.{}.", crate::b64url(br#"{"alg":"none"}"#), crate::b64url(b"{}"));
        assert_eq!(verify::<Value>(&none_alg, by_kid).unwrap_err(), VerifyError::Algorithm);
        assert_eq!(verify::<Value>("a.b", by_kid).unwrap_err(), VerifyError::Malformed);
        assert_eq!(verify::<Value>("a.b.c.d", by_kid).unwrap_err(), VerifyError::Malformed);
    }

    #[test]
    fn kid_is_rfc7638_thumbprint() {
        // RFC 7638 §3.1 example key.
        let n = crate::b64url_decode("0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw").unwrap();
        let e = crate::b64url_decode("AQAB").unwrap();
        assert_eq!(Jwk::rsa(&n, &e).kid, "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs");
    }
}
