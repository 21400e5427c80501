//! Portico's own mutual-TLS listener (`mtls.listen`, RFC 8705): TLS 1.2
//! and 1.3 on rustls (under TLS 1.2 the suites FAPI 2.0 allows only),
//! asking every client for a certificate and taking connections without
//! one.
//!
//! The handshake proves only that the client holds the private key of the
//! certificate it sent (rustls checks the handshake signature with it);
//! who the certificate names, and whether a client may use it, is decided
//! per client after the handshake, as for a certificate a terminator
//! passes: `tls_client_auth` chains it to `mtls.client_ca_file` itself,
//! `self_signed_tls_client_auth` finds it in the client's key set, and a
//! bound token compares its thumbprint. So no certificate is refused at
//! the handshake for its issuer or its dates.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};

/// The cipher suites the listener negotiates: TLS 1.3's three, and under
/// TLS 1.2 only the four RFC 9325 §4.2 recommends (ECDHE with AES-GCM), as
/// FAPI 2.0 (§5.2) requires of an authorization server; rustls' default
/// would also take ChaCha20-Poly1305 under TLS 1.2. (FAPI 1's list adds
/// DHE suites, which rustls has none of, and names RSA ones only: a
/// deployment held to it serves an RSA certificate.)
const CIPHER_SUITES: [rustls::SupportedCipherSuite; 7] = {
    use rustls::crypto::aws_lc_rs::cipher_suite as suite;
    [
        suite::TLS13_AES_256_GCM_SHA384,
        suite::TLS13_AES_128_GCM_SHA256,
        suite::TLS13_CHACHA20_POLY1305_SHA256,
        suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ]
};

/// The listener's TLS configuration: the chain and key of `chain` and
/// `key` (PEM), HTTP/1.1, any client certificate whose key the client holds.
///
/// # Errors
/// A file that cannot be read, holds no certificate or key, or a key that
/// does not fit the certificate.
pub fn server_config(chain: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, String> {
    let named = |setting: &str, path: &Path, e: &dyn std::fmt::Display| format!("{setting} {}: {e}", path.display());
    let certificates = CertificateDer::pem_file_iter(chain)
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|e| named("mtls.server_certificate_file", chain, &e))?;
    if certificates.is_empty() {
        return Err(named("mtls.server_certificate_file", chain, &"no PEM certificate in it"));
    }
    let private = PrivateKeyDer::from_pem_file(key).map_err(|e| named("mtls.server_key_file", key, &e))?;
    let provider = Arc::new(rustls::crypto::CryptoProvider {
        cipher_suites: CIPHER_SUITES.to_vec(),
        ..rustls::crypto::aws_lc_rs::default_provider()
    });
    let verifier = Arc::new(AnyClientCertificate { algorithms: provider.signature_verification_algorithms });
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certificates, private)
        .map_err(|e| named("mtls.server_key_file", key, &format!("does not fit the certificate ({e})")))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Asks for a client certificate, takes any (or none), and checks the
/// handshake's signature with it: the client holds its key.
#[derive(Debug)]
struct AnyClientCertificate {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for AnyClientCertificate {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        // No hints: a client sends the certificate it has.
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
