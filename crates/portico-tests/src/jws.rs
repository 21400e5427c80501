//! Signed JWTs as a client makes them: any header (DPoP proofs carry their
//! key in it), signed by a [`SigningKey`] of any algorithm Portico takes.

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, RSA_PKCS1_SHA256, RSA_PSS_SHA256, RsaKeyPair,
};
use portico_crypto::jwt::{Algorithm, SigningKey};
use portico_model::clock::Clock as _;
use serde_json::{Value, json};

use crate::TestApp;

/// A compact JWS of `claims` under `header` (taken as given, `alg`
/// included), signed by `key` under the key's own algorithm.
///
/// # Panics
/// When `key` is held remotely or the library fails.
pub fn sign(key: &SigningKey, header: &Value, claims: &Value) -> String {
    let der = key.to_pkcs8().expect("a key of this process");
    let mut token = portico_crypto::b64url(header.to_string());
    token.push('.');
    token.push_str(&portico_crypto::b64url(claims.to_string()));
    let rng = SystemRandom::new();
    let signature = match key.algorithm() {
        Algorithm::Rs256 | Algorithm::Ps256 => {
            let pair = RsaKeyPair::from_pkcs8(&der).expect("an RSA key");
            let padding = if key.algorithm() == Algorithm::Ps256 { &RSA_PSS_SHA256 } else { &RSA_PKCS1_SHA256 };
            let mut signature = vec![0; pair.public_modulus_len()];
            pair.sign(padding, &rng, token.as_bytes(), &mut signature).expect("RSA signing");
            signature
        }
        Algorithm::Es256 => EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der)
            .expect("a P-256 key")
            .sign(&rng, token.as_bytes())
            .expect("ECDSA signing")
            .as_ref()
            .to_vec(),
        Algorithm::EdDsa => {
            Ed25519KeyPair::from_pkcs8(&der).expect("an Ed25519 key").sign(token.as_bytes()).as_ref().to_vec()
        }
    };
    token.push('.');
    token.push_str(&portico_crypto::b64url(signature));
    token
}

/// A DPoP proof (RFC 9449) by `key` for `method` on `url`, bound to
/// `access_token` when given, made at `app`'s now, its header's `alg`
/// named `alg` (the key's own algorithm, or `Ed25519` for an Ed25519 key).
pub fn dpop_proof(
    key: &SigningKey,
    alg: &str,
    app: &TestApp,
    method: &str,
    url: &str,
    access_token: Option<&str>,
) -> String {
    let header = json!({ "typ": "dpop+jwt", "alg": alg, "jwk": key.jwk() });
    let mut claims = json!({
        "jti": uuid::Uuid::new_v4().to_string(), "htm": method, "htu": url,
        "iat": app.clock.now().unix_timestamp(),
    });
    if let Some(token) = access_token {
        claims["ath"] = portico_crypto::b64url(portico_crypto::hash::sha256(token.as_bytes())).into();
    }
    sign(key, &header, &claims)
}
