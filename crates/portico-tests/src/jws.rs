//! Signed JWTs as a client makes them: any header (DPoP proofs carry their
//! key in it), signed by a [`SigningKey`] of any algorithm Portico takes.

use portico_crypto::jwt::SigningKey;
use portico_model::clock::Clock as _;
use serde_json::{Value, json};

use crate::TestApp;

/// A compact JWS of `claims` under `header` (taken as given, `alg`
/// included), signed by `key` under the key's own algorithm.
///
/// # Panics
/// When the key's holder cannot sign.
pub fn sign(key: &SigningKey, header: &Value, claims: &Value) -> String {
    key.try_sign_with_header(header, claims).expect("a key of this process signs")
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
