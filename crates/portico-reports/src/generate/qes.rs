//! The `QES` form's signature: a detached CMS `SignedData` (RFC 5652) in
//! DER over the printed form, signed with the broker's certificate and key
//! (ECDSA P-256 with SHA-256), with the signed attributes content type,
//! message digest and signing time, and the certificate included, so that
//! `openssl cms -verify -binary -inform DER -content form.pdf` accepts it.
//!
//! The structure is small and fixed, so it is written here with a few DER
//! helpers; the signature itself is aws-lc-rs's.

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair};
use time::OffsetDateTime;

use super::GenerateError;

const OID_SIGNED_DATA: &[u8] = &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02];
const OID_DATA: &[u8] = &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01];
const OID_SHA256: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01];
const OID_ECDSA_SHA256: &[u8] = &[0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x02];
const OID_CONTENT_TYPE: &[u8] = &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x03];
const OID_MESSAGE_DIGEST: &[u8] = &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x04];
const OID_SIGNING_TIME: &[u8] = &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x05];

/// A DER element: `tag`, length, `content`.
fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len.to_be_bytes().iter().copied().skip_while(|b| *b == 0).collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

fn seq(parts: &[&[u8]]) -> Vec<u8> {
    tlv(0x30, &parts.concat())
}

/// A DER `SET OF`: elements sorted by their encoding.
fn set_of(mut parts: Vec<Vec<u8>>) -> Vec<u8> {
    parts.sort();
    tlv(0x31, &parts.concat())
}

fn oid(content: &[u8]) -> Vec<u8> {
    tlv(0x06, content)
}

fn algorithm(content: &[u8]) -> Vec<u8> {
    seq(&[&oid(content)])
}

/// One DER element at the start of `der`: `(tag, header length, content length)`.
fn element(der: &[u8]) -> Option<(u8, usize, usize)> {
    let tag = *der.first()?;
    let first = *der.get(1)?;
    if first < 0x80 {
        return Some((tag, 2, usize::from(first)));
    }
    let count = usize::from(first & 0x7F);
    let bytes = der.get(2..2 + count)?;
    let len = bytes.iter().fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
    Some((tag, 2 + count, len))
}

/// The issuer and serial number (both whole DER elements) of a certificate.
fn issuer_and_serial(cert: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let (_, header, _) = element(cert)?;
    let tbs = &cert[header..];
    let (_, header, _) = element(tbs)?;
    let mut rest = &tbs[header..];
    let take = |rest: &mut &[u8]| -> Option<Vec<u8>> {
        let (_, header, len) = element(rest)?;
        let whole = rest.get(..header + len)?.to_vec();
        *rest = &rest[header + len..];
        Some(whole)
    };
    if rest.first() == Some(&0xA0) {
        take(&mut rest)?; // version
    }
    let serial = take(&mut rest)?;
    take(&mut rest)?; // signature algorithm
    let issuer = take(&mut rest)?;
    Some((issuer, serial))
}

/// The broker's signing certificate and key.
pub struct Signer {
    cert_der: Vec<u8>,
    key: EcdsaKeyPair,
    issuer: Vec<u8>,
    serial: Vec<u8>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").field("certificate_bytes", &self.cert_der.len()).finish_non_exhaustive()
    }
}

impl Signer {
    /// From a DER certificate and its PKCS#8 DER key (ECDSA P-256).
    ///
    /// # Errors
    /// When either cannot be read.
    pub fn new(cert_der: Vec<u8>, key_pkcs8: &[u8]) -> Result<Self, String> {
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, key_pkcs8)
            .map_err(|_| "the signing key is not a PKCS#8 ECDSA P-256 key".to_owned())?;
        let (issuer, serial) =
            issuer_and_serial(&cert_der).ok_or_else(|| "the signing certificate is not DER X.509".to_owned())?;
        Ok(Self { cert_der, key, issuer, serial })
    }

    /// A new self-signed certificate and key (the demo's, and the default
    /// until one is configured), valid from `now` for ten years:
    /// `(certificate PEM, key PEM)`.
    ///
    /// # Errors
    /// When generation fails.
    pub fn generate_self_signed(organization: &str, now: time::OffsetDateTime) -> Result<(String, String), String> {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(|e| e.to_string())?;
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(|e| e.to_string())?;
        params.distinguished_name.push(rcgen::DnType::OrganizationName, organization);
        params.distinguished_name.push(rcgen::DnType::CommonName, format!("{organization}: подпись отчётов"));
        params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature, rcgen::KeyUsagePurpose::ContentCommitment];
        params.not_before = now;
        params.not_after = now + time::Duration::days(3653);
        let cert = params.self_signed(&key).map_err(|e| e.to_string())?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// From PEM texts (certificate, PKCS#8 key).
    ///
    /// # Errors
    /// When either cannot be read.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, String> {
        let cert = pem_der(cert_pem, "CERTIFICATE").ok_or("the certificate is not PEM")?;
        let key = pem_der(key_pem, "PRIVATE KEY").ok_or("the key is not a PKCS#8 PEM (BEGIN PRIVATE KEY)")?;
        Self::new(cert, &key)
    }

    /// The detached signature of `content`, signed at `at`.
    ///
    /// # Errors
    /// When signing fails.
    pub fn sign_detached(&self, content: &[u8], at: OffsetDateTime) -> Result<Vec<u8>, GenerateError> {
        let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, content);
        let at = at.to_offset(time::UtcOffset::UTC);
        let utc_time = format!(
            "{:02}{:02}{:02}{:02}{:02}{:02}Z",
            at.year() % 100,
            u8::from(at.month()),
            at.day(),
            at.hour(),
            at.minute(),
            at.second()
        );
        let attributes = vec![
            seq(&[&oid(OID_CONTENT_TYPE), &set_of(vec![oid(OID_DATA)])]),
            seq(&[&oid(OID_MESSAGE_DIGEST), &set_of(vec![tlv(0x04, digest.as_ref())])]),
            seq(&[&oid(OID_SIGNING_TIME), &set_of(vec![tlv(0x17, utc_time.as_bytes())])]),
        ];
        // Signed as a SET OF, carried as [0] IMPLICIT.
        let signed = set_of(attributes);
        let signature = self
            .key
            .sign(&SystemRandom::new(), &signed)
            .map_err(|_| GenerateError::Data("the report could not be signed".into()))?;
        let mut implicit = signed.clone();
        implicit[0] = 0xA0;
        let version = tlv(0x02, &[1]);
        let signer_info = seq(&[
            &version,
            &seq(&[&self.issuer, &self.serial]),
            &algorithm(OID_SHA256),
            &implicit,
            &algorithm(OID_ECDSA_SHA256),
            &tlv(0x04, signature.as_ref()),
        ]);
        let signed_data = seq(&[
            &version,
            &set_of(vec![algorithm(OID_SHA256)]),
            &seq(&[&oid(OID_DATA)]),
            &tlv(0xA0, &self.cert_der),
            &set_of(vec![signer_info]),
        ]);
        Ok(seq(&[&oid(OID_SIGNED_DATA), &tlv(0xA0, &signed_data)]))
    }
}

/// The DER inside the first PEM block labelled `label`.
fn pem_der(text: &str, label: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text.find(&begin)? + begin.len();
    let stop = text[start..].find(&end)? + start;
    let body: String = text[start..stop].chars().filter(|c| !c.is_whitespace()).collect();
    base64::engine::general_purpose::STANDARD.decode(body).ok()
}
