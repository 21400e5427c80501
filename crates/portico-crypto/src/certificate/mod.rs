//! Client certificates of mutual TLS (RFC 8705), as they reach Portico:
//! from the TLS terminator in front, in a header as nginx's
//! `$ssl_client_escaped_cert` writes it (the PEM, percent-encoded), or
//! from Portico's own TLS listener (DER).
//!
//! A certificate is read as X.509 (by rustls' `webpki`, which reads what
//! rustls accepts in a handshake) before anything uses it; its SHA-256
//! thumbprint (`x5t#S256`, RFC 8705 §3.1) is what a bound access token's
//! `cnf` names.

pub mod subject;

use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, TrustAnchor, UnixTime};

pub use subject::{DistinguishedName, SubjectRule};

/// The longest header value taken: a leaf certificate's PEM is 1–3 KB,
/// percent-encoded at most three times that.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// The client certificate a request came with, as the edge read it: the
/// request extension that token endpoint and resources consult. Absent
/// when the request came without one (or through an untrusted address).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presented(pub Result<ClientCertificate, CertificateError>);

/// A client certificate that reads as X.509.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCertificate {
    der: Vec<u8>,
    thumbprint: String,
}

/// Why a presented certificate was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CertificateError {
    #[error("the client certificate is larger than {MAX_HEADER_BYTES} bytes")]
    TooLarge,
    #[error("the client certificate is not one percent-encoded PEM certificate")]
    NotPem,
    #[error("the client certificate is not an X.509 certificate")]
    NotX509,
}

impl ClientCertificate {
    /// A certificate in DER.
    ///
    /// # Errors
    /// [`CertificateError::NotX509`] when it does not read as X.509.
    pub fn from_der(der: Vec<u8>) -> Result<Self, CertificateError> {
        let cert = CertificateDer::from(der.as_slice());
        webpki::EndEntityCert::try_from(&cert).map_err(|_| CertificateError::NotX509)?;
        let thumbprint = crate::b64url(crate::hash::sha256(&der));
        Ok(Self { der, thumbprint })
    }

    /// A certificate as a TLS terminator's header carries it: one PEM
    /// `CERTIFICATE`, percent-encoded (a plain PEM folded onto one line
    /// reads too).
    ///
    /// # Errors
    /// When it is too large, not one PEM certificate, or not X.509.
    pub fn from_header(value: &[u8]) -> Result<Self, CertificateError> {
        if value.len() > MAX_HEADER_BYTES {
            return Err(CertificateError::TooLarge);
        }
        let pem: Vec<u8> = percent_encoding::percent_decode(value).collect();
        let mut certificates = CertificateDer::pem_slice_iter(&pem);
        let (Some(Ok(first)), None) = (certificates.next(), certificates.next()) else {
            return Err(CertificateError::NotPem);
        };
        Self::from_der(first.to_vec())
    }

    pub fn der(&self) -> &[u8] {
        &self.der
    }

    /// The certificate's SHA-256 thumbprint, Base64url: `x5t#S256`.
    pub fn thumbprint(&self) -> &str {
        &self.thumbprint
    }
}

/// The certificate authorities whose client certificates `tls_client_auth`
/// accepts (`mtls.client_ca_file`).
#[derive(Debug, Clone)]
pub struct ClientAuthorities {
    anchors: Vec<TrustAnchor<'static>>,
}

impl ClientAuthorities {
    /// Every `CERTIFICATE` of a PEM bundle, each a trust anchor (an
    /// issuing CA may be listed directly: certificates come alone, without
    /// their chain).
    ///
    /// # Errors
    /// A bundle without certificates, or one that is not a CA certificate
    /// webpki can anchor to.
    pub fn from_pem(pem: &[u8]) -> Result<Self, String> {
        let mut anchors = Vec::new();
        for (i, cert) in CertificateDer::pem_slice_iter(pem).enumerate() {
            let cert = cert.map_err(|e| format!("certificate {}: not PEM ({e})", i + 1))?;
            let anchor = webpki::anchor_from_trusted_cert(&cert)
                .map_err(|e| format!("certificate {}: not a certificate to trust ({e})", i + 1))?;
            anchors.push(anchor.to_owned());
        }
        if anchors.is_empty() {
            return Err("no CERTIFICATE in the bundle".into());
        }
        Ok(Self { anchors })
    }

    /// Checks that `certificate` was issued, for client authentication, by
    /// one of the authorities and is valid at `now` (Unix seconds).
    ///
    /// # Errors
    /// Why not, in words for the client's developer.
    pub fn verify(&self, certificate: &ClientCertificate, now: u64) -> Result<(), String> {
        let der = CertificateDer::from(certificate.der());
        let cert = webpki::EndEntityCert::try_from(&der).map_err(|e| format!("not X.509 ({e})"))?;
        cert.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &self.anchors,
            &[],
            UnixTime::since_unix_epoch(std::time::Duration::from_secs(now)),
            webpki::KeyUsage::client_auth(),
            None,
            None,
        )
        .map(|_| ())
        .map_err(|e| format!("the TLS client certificate is not one of a trusted authority ({e})"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pem() -> String {
        let key = rcgen::KeyPair::generate().unwrap();
        rcgen::CertificateParams::new(vec!["fintech.example".into()]).unwrap().self_signed(&key).unwrap().pem()
    }

    /// As nginx's `$ssl_client_escaped_cert` writes it.
    fn escaped(pem: &str) -> String {
        percent_encoding::utf8_percent_encode(pem, percent_encoding::NON_ALPHANUMERIC).to_string()
    }

    #[test]
    fn an_escaped_pem_reads_and_its_thumbprint_is_the_der_hash() {
        let pem = pem();
        let cert = ClientCertificate::from_header(escaped(&pem).as_bytes()).unwrap();
        let der = CertificateDer::from_pem_slice(pem.as_bytes()).unwrap();
        assert_eq!(cert.der(), der.as_ref());
        assert_eq!(cert.thumbprint(), crate::b64url(crate::hash::sha256(&der)));
        assert_eq!(cert.thumbprint().len(), 43);
    }

    #[test]
    fn only_a_certificate_of_a_trusted_authority_for_client_auth_verifies() {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let issue = |usage: rcgen::ExtendedKeyUsagePurpose| {
            let key = rcgen::KeyPair::generate().unwrap();
            let mut params = rcgen::CertificateParams::new(vec!["fintech.example".into()]).unwrap();
            params.extended_key_usages = vec![usage];
            let cert = params.signed_by(&key, &issuer).unwrap();
            ClientCertificate::from_der(cert.der().to_vec()).unwrap()
        };
        let authorities = ClientAuthorities::from_pem(ca_cert.pem().as_bytes()).unwrap();
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        authorities.verify(&issue(rcgen::ExtendedKeyUsagePurpose::ClientAuth), now).unwrap();
        let server = authorities.verify(&issue(rcgen::ExtendedKeyUsagePurpose::ServerAuth), now);
        assert!(server.is_err(), "a server certificate is no client's");
        let stranger = ClientCertificate::from_header(escaped(&pem()).as_bytes()).unwrap();
        assert!(authorities.verify(&stranger, now).is_err(), "a self-signed certificate");
        // rcgen's certificates are valid from 1975: not yet at 1970.
        assert!(authorities.verify(&issue(rcgen::ExtendedKeyUsagePurpose::ClientAuth), 0).is_err(), "not yet valid");
        assert!(ClientAuthorities::from_pem(b"nothing").is_err());
    }

    #[test]
    fn garbage_and_oversized_values_are_refused() {
        assert_eq!(ClientCertificate::from_header(b"hello"), Err(CertificateError::NotPem));
        let not_x509 = "-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n";
        assert_eq!(ClientCertificate::from_header(escaped(not_x509).as_bytes()), Err(CertificateError::NotX509));
        let huge = vec![b'A'; MAX_HEADER_BYTES + 1];
        assert_eq!(ClientCertificate::from_header(&huge), Err(CertificateError::TooLarge));
        let two = format!("{}{}", pem(), pem());
        assert_eq!(ClientCertificate::from_header(escaped(&two).as_bytes()), Err(CertificateError::NotPem));
    }
}
