//! Client certificates for the mutual-TLS tests (RFC 8705), made with
//! rcgen: as a TLS terminator passes them, and as a client registers them.

use base64::Engine as _;

/// A self-signed P-256 certificate.
pub struct TestCertificate {
    /// Its PEM, URL-encoded as nginx's `$ssl_client_escaped_cert`.
    pub escaped: String,
    /// Its `x5t#S256`: the Base64url SHA-256 of its DER.
    pub thumbprint: String,
    /// Its PEM, and its private key's (PKCS#8).
    pub pem: String,
    pub key_pem: String,
    der: Vec<u8>,
    point: Vec<u8>,
}

impl TestCertificate {
    /// A certificate for the DNS name `name`.
    ///
    /// # Panics
    /// When rcgen cannot make one.
    pub fn new(name: &str) -> Self {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("a P-256 key");
        let cert = rcgen::CertificateParams::new(vec![name.to_owned()])
            .expect("parameters")
            .self_signed(&key)
            .expect("a certificate");
        let escaped =
            percent_encoding::utf8_percent_encode(&cert.pem(), percent_encoding::NON_ALPHANUMERIC).to_string();
        let thumbprint = portico_crypto::b64url(portico_crypto::hash::sha256(cert.der()));
        Self {
            escaped,
            thumbprint,
            pem: cert.pem(),
            key_pem: key.serialize_pem(),
            der: cert.der().to_vec(),
            point: key.public_key_raw().to_vec(),
        }
    }

    /// It and its key as a TLS client presents them.
    ///
    /// # Panics
    /// When reqwest cannot read them.
    pub fn identity(&self) -> reqwest::Identity {
        reqwest::Identity::from_pem(format!("{}{}", self.pem, self.key_pem).as_bytes()).expect("a client identity")
    }

    /// The public JWK of its key, under `kid`, carrying it in `x5c`.
    pub fn jwk(&self, kid: &str) -> serde_json::Value {
        serde_json::json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "kid": kid,
            "x": portico_crypto::b64url(&self.point[1..33]),
            "y": portico_crypto::b64url(&self.point[33..65]),
            "x5c": [base64::engine::general_purpose::STANDARD.encode(&self.der)],
        })
    }
}
