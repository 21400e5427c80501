//! Client certificates of mutual TLS (RFC 8705), as they reach Portico:
//! from the TLS terminator in front, in a header as nginx's
//! `$ssl_client_escaped_cert` writes it (the PEM, percent-encoded), or
//! from Portico's own TLS listener (DER).
//!
//! A certificate is read as X.509 (by rustls' `webpki`, which reads what
//! rustls accepts in a handshake) before anything uses it; its SHA-256
//! thumbprint (`x5t#S256`, RFC 8705 §3.1) is what a bound access token's
//! `cnf` names.

use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject as _;

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
