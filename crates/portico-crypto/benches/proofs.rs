//! What a DPoP proof check costs beside its one ES256 verification.
//!
//! `cargo bench -p portico-crypto --bench proofs`: one thread, proofs made
//! before the clock starts. **Baseline**: the bare ES256 verification of
//! the same proofs with a key parsed once (the floor a proof check cannot
//! go under), in rounds alternating with the checks. Reported: the
//! medians of microseconds per proof for the baseline and for
//! [`portico_crypto::dpop::verify`] (parsing, key, signature, claims,
//! thumbprint), and the median of the rounds' differences.

use std::hint::black_box;
use std::time::Instant;

use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, ParsedPublicKey};
use portico_crypto::dpop::{self, Expected};
use portico_crypto::jwt::{Algorithm, SigningKey};

/// Proofs per measurement.
const PROOFS: usize = 20_000;
/// Measurements; the median is reported.
const ROUNDS: usize = 9;
const URL: &str = "https://id.bank.example/oauth2/token/liveness";
const TOKEN: &str = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJpdmFuIn0.c2lnbmF0dXJl";
const NOW: i64 = 1_800_000_000;

fn main() {
    let signing = SigningKey::generate(Algorithm::Es256).expect("a key");
    let jwk = serde_json::to_value(signing.jwk()).expect("its JWK");
    let encoding = jsonwebtoken::EncodingKey::from_ec_der(&signing.to_pkcs8().expect("PKCS#8"));
    let proofs: Vec<String> = (0..PROOFS)
        .map(|i| {
            let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
            header.typ = Some(dpop::TYP.into());
            header.jwk = Some(serde_json::from_value(jwk.clone()).expect("a JWK"));
            let claims = serde_json::json!({
                "jti": format!("proof-{i:08}-{}", "x".repeat(24)), "htm": "GET", "htu": URL, "iat": NOW,
                "ath": portico_crypto::b64url(portico_crypto::hash::sha256(TOKEN.as_bytes())),
            });
            jsonwebtoken::encode(&header, &claims, &encoding).expect("a proof")
        })
        .collect();
    let b64 = |part: &str| portico_crypto::b64url_decode(part).expect("Base64url");
    let x = b64(jwk["x"].as_str().expect("x"));
    let y = b64(jwk["y"].as_str().expect("y"));
    let point = [&[4][..], &x, &y].concat();
    let key = ParsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point).expect("the key");
    let split: Vec<(&str, Vec<u8>)> = proofs
        .iter()
        .map(|p| {
            let (signed, signature) = p.rsplit_once('.').expect("a JWS");
            (signed, b64(signature))
        })
        .collect();
    let expected = Expected { method: "GET", url: URL, alias_url: None, now: NOW, access_token: Some(TOKEN) };

    // Microseconds per proof of one pass of `run`.
    let time = |run: &dyn Fn()| {
        let start = Instant::now();
        run();
        start.elapsed().as_secs_f64() * 1e6 / PROOFS as f64
    };
    let floor = || {
        for (signed, signature) in &split {
            assert!(black_box(&key).verify_sig(signed.as_bytes(), signature).is_ok());
        }
    };
    let check = || {
        for proof in &proofs {
            assert!(dpop::verify(black_box(proof), &expected).is_ok());
        }
    };
    // The machine's speed drifts: the baseline and the check alternate,
    // and each round's check is compared with its own round's baseline.
    let (mut floors, mut checks, mut added) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let (f, c) = (time(&floor), time(&check));
        floors.push(f);
        checks.push(c);
        added.push(c - f);
    }
    let median = |values: &mut Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let (floor, check, added) = (median(&mut floors), median(&mut checks), median(&mut added));
    println!(
        "DPoP proof check: {check:.1} µs per proof; bare ES256 verification {floor:.1} µs (baseline); \
         the check adds {added:.1} µs (median of the rounds' differences; {:.2}× the baseline)",
        (floor + added) / floor
    );
}
