use std::time::Duration;

use super::command::{Command, Scratch};
use super::*;

fn now() -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_780_000_000).unwrap()
}

fn pair() -> (String, String) {
    Signer::generate_self_signed("Брокер", now()).unwrap()
}

fn sh(script: &str) -> Command {
    Command::new(vec!["/bin/sh".into(), "-c".into(), script.into()], Duration::from_secs(10), 1).unwrap()
}

fn reason(signer: &Signer, content: &[u8]) -> String {
    signer.sign_detached(content, now()).unwrap_err().to_string()
}

#[test]
fn the_builtin_key_makes_a_detached_cades_bes_signature_with_the_chain() {
    let (cert, key) = pair();
    let (ca, _) = pair();
    let signer = Signer::builtin(&cert, &key, Some(&ca)).unwrap();
    let cms = signer.sign_detached(b"the printed form", now()).unwrap();
    let summary = summarize(&cms).unwrap();
    assert_eq!(summary.digest_algorithm, "2.16.840.1.101.3.4.2.1", "SHA-256");
    assert_eq!(summary.signature_algorithm, "1.2.840.10045.4.3.2", "ecdsa-with-SHA256");
    let mut attributes = summary.signed_attributes.clone();
    attributes.sort();
    assert_eq!(
        attributes,
        ["1.2.840.113549.1.9.16.2.47", "1.2.840.113549.1.9.3", "1.2.840.113549.1.9.4", "1.2.840.113549.1.9.5"],
        "signing certificate v2, content type, message digest, signing time"
    );
    assert_eq!(summary.certificates, 2, "the signer's certificate and the chain");
    assert!(summary.detached);
}

#[test]
fn a_key_that_is_not_the_certificates_or_not_p256_is_refused() {
    let (cert, _) = pair();
    let (_, other_key) = pair();
    assert_eq!(Signer::builtin(&cert, &other_key, None).unwrap_err(), "the key is not the certificate's");
    assert!(Signer::builtin("not a certificate", &other_key, None).is_err());
    assert!(Signer::builtin(&cert, "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----", None).is_err());
}

#[test]
fn gost_needs_a_verification_command_and_a_gost_certificate() {
    let (cert, _) = pair();
    let made = Signer::external(Algorithm::Gost2012_256, sh("cat"), Output::Cms, &cert, None, None).unwrap_err();
    assert!(made.contains("not a GOST R 34.10-2012 (256) key"), "{made}");
}

#[test]
fn a_command_that_prints_garbage_or_signs_other_data_fails_the_signature() {
    let (cert, key) = pair();
    let content = b"the printed form";
    let garbage = Signer::external(
        Algorithm::EcdsaP256,
        sh("cat > /dev/null; printf garbage"),
        Output::Signature,
        &cert,
        None,
        None,
    )
    .unwrap();
    let said = reason(&garbage, content);
    assert!(said.contains("does not verify with the certificate's key"), "{said}");
    let not_cms =
        Signer::external(Algorithm::EcdsaP256, sh("cat > /dev/null; printf garbage"), Output::Cms, &cert, None, None)
            .unwrap();
    let said = reason(&not_cms, content);
    assert!(said.contains("the command's CMS is not DER CMS"), "{said}");

    // A true signature by the same certificate, of another document.
    let other = Signer::builtin(&cert, &key, None).unwrap().sign_detached(b"another form", now()).unwrap();
    let scratch = Scratch::new().unwrap();
    let path = scratch.write("other.p7s", &other).unwrap();
    let replay = sh(&format!("cat > /dev/null; cat {}", path.display()));
    let replaying = Signer::external(Algorithm::EcdsaP256, replay, Output::Cms, &cert, None, None).unwrap();
    let said = reason(&replaying, content);
    assert!(said.contains("over other data"), "{said}");
    // By another certificate.
    let (stranger_cert, stranger_key) = pair();
    let stranger = Signer::builtin(&stranger_cert, &stranger_key, None).unwrap().sign_detached(content, now()).unwrap();
    let path = scratch.write("stranger.p7s", &stranger).unwrap();
    let impostor = sh(&format!("cat > /dev/null; cat {}", path.display()));
    let impostor = Signer::external(Algorithm::EcdsaP256, impostor, Output::Cms, &cert, None, None).unwrap();
    let said = reason(&impostor, content);
    assert!(said.contains("not made by the configured certificate"), "{said}");
}

#[test]
fn a_verification_command_that_refuses_fails_the_signature() {
    let (cert, key) = pair();
    let builtin = Signer::builtin(&cert, &key, None).unwrap();
    let good = builtin.sign_detached(b"form", now()).unwrap();
    let scratch = Scratch::new().unwrap();
    let path = scratch.write("good.p7s", &good).unwrap();
    let replay = sh(&format!("cat > /dev/null; cat {}", path.display()));
    let refusing = sh("test -s {signature} && test -s {content} && echo 'bad chain' >&2; exit 1");
    let signer = Signer::external(Algorithm::EcdsaP256, replay, Output::Cms, &cert, None, Some(refusing)).unwrap();
    let said = reason(&signer, b"form");
    assert!(said.ends_with("the verification command refused the signature: bad chain"), "{said}");
}

/// The command contract with a real signer: `openssl dgst -sign` signs the
/// signed attributes Portico assembled.
#[test]
fn openssl_as_the_signing_command_makes_a_signature_portico_accepts() {
    let Ok(openssl) = std::env::var("PORTICO_TEST_OPENSSL") else {
        use std::io::Write as _;
        let why = "SKIPPED: PORTICO_TEST_OPENSSL is not set; this test runs openssl as the signing command\n";
        let _ = std::io::stderr().lock().write_all(why.as_bytes());
        return;
    };
    let (cert, key) = pair();
    let scratch = Scratch::new().unwrap();
    let key_path = scratch.write("key.pem", key.as_bytes()).unwrap();
    let argv = vec![openssl, "dgst".into(), "-sha256".into(), "-sign".into(), key_path.display().to_string()];
    let command = Command::new(argv, Duration::from_secs(10), 2).unwrap();
    let signer = Signer::external(Algorithm::EcdsaP256, command, Output::Signature, &cert, None, None).unwrap();
    let cms = signer.sign_detached(b"the printed form", now()).unwrap();
    assert_eq!(summarize(&cms).unwrap().certificates, 1);
}

#[test]
fn streebog_256_is_the_gost_digest() {
    // GOST R 34.11-2012 example 1 (M1), 256-bit hash, as RFC 6986 §10.1 prints it.
    let m1 = b"012345678901234567890123456789012345678901234567890123456789012";
    let hex: String = Algorithm::Gost2012_256.digest(m1).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, "9d151eefd8590b89daa6ba6cb74af9275dd051026bb149a452fd84e5e57b5500");
}

/// A key answering `r || s`, as an HSM's `CKM_ECDSA` does (the HSM itself
/// is in the integration tests, with SoftHSM2).
struct FixedForm(EcdsaKeyPair);

impl portico_crypto::jwt::RemoteSigner for FixedForm {
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, portico_crypto::jwt::SignError> {
        Ok(self.0.sign(&SystemRandom::new(), message).unwrap().as_ref().to_vec())
    }
}

#[test]
fn a_signature_answered_as_r_and_s_is_carried_in_der_and_checked() {
    let fixed = |key: &str| {
        let der = pem_der(key, "PRIVATE KEY").unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED_SIGNING, &der).unwrap();
        std::sync::Arc::new(FixedForm(pair))
    };
    let (cert, key) = pair();
    let signer = Signer::hsm(fixed(&key), &cert, None).unwrap();
    let cms = signer.sign_detached(b"the printed form", now()).unwrap();
    assert_eq!(summarize(&cms).unwrap().signature_algorithm, "1.2.840.10045.4.3.2");
    let (other_cert, _) = Signer::generate_self_signed("Другой", now()).unwrap();
    let wrong = Signer::hsm(fixed(&key), &other_cert, None).unwrap();
    let said = reason(&wrong, b"the printed form");
    assert!(said.contains("does not verify with the certificate's key"), "{said}");
}
