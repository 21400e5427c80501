//! A software WebAuthn authenticator for tests and benchmarks: one
//! discoverable P-256 credential, attestation `none`, user present and
//! verified, its signature counter advanced as a test asks.

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair};
use portico_crypto::b64url;
use portico_model::ids::UserId;
use serde_json::{Value, json};

/// An authenticator holding one discoverable P-256 credential.
pub struct Authenticator {
    rp_id: String,
    /// The private key, PKCS#8 (what a virtual authenticator is given).
    pub pkcs8: Vec<u8>,
    key: EcdsaKeyPair,
    pub credential_id: Vec<u8>,
    pub user_handle: Vec<u8>,
    counter: u32,
}

/// CBOR of a byte string.
fn cbor_bytes(bytes: &[u8]) -> Vec<u8> {
    let mut out = match bytes.len() {
        n @ 0..=23 => vec![0x40 | n as u8],
        n @ 24..=255 => vec![0x58, n as u8],
        n => vec![0x59, (n >> 8) as u8, n as u8],
    };
    out.extend(bytes);
    out
}

/// CBOR of a short text string.
fn cbor_text(text: &str) -> Vec<u8> {
    let mut out = vec![0x60 | text.len() as u8];
    out.extend(text.as_bytes());
    out
}

fn sha256(bytes: &[u8]) -> Vec<u8> {
    portico_crypto::hash::sha256(bytes).to_vec()
}

impl Authenticator {
    pub fn for_rp(user: UserId, rp_id: &str) -> Self {
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &SystemRandom::new()).unwrap();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref()).unwrap();
        let credential_id = uuid::Uuid::new_v4().as_bytes().to_vec();
        let user_handle = uuid::Uuid::from(user).as_bytes().to_vec();
        let pkcs8 = pkcs8.as_ref().to_vec();
        Self { rp_id: rp_id.to_owned(), pkcs8, key, credential_id, user_handle, counter: 0 }
    }

    /// Authenticator data: RP ID hash, flags (user present and verified),
    /// counter, and what follows.
    fn auth_data(&self, flags: u8, rest: &[u8]) -> Vec<u8> {
        let mut data = sha256(self.rp_id.as_bytes());
        data.push(flags);
        data.extend(self.counter.to_be_bytes());
        data.extend(rest);
        data
    }

    fn client_data(kind: &str, options: &Value, origin: &str) -> Vec<u8> {
        let challenge = options["publicKey"]["challenge"].as_str().unwrap();
        json!({ "type": kind, "challenge": challenge, "origin": origin, "crossOrigin": false }).to_string().into_bytes()
    }

    /// The browser's answer to an enrolment's options (attestation `none`).
    pub fn create(&self, options: &Value, origin: &str) -> String {
        self.answer(options, origin, None)
    }

    /// The answer of an authenticator of the model `model`: its AAGUID in
    /// the credential data and a `packed` attestation signed by the
    /// model's certificate.
    pub fn create_attested(&self, options: &Value, origin: &str, model: &Model) -> String {
        self.answer(options, origin, Some(model))
    }

    fn answer(&self, options: &Value, origin: &str, model: Option<&Model>) -> String {
        let point = self.key.public_key().as_ref();
        let mut cose = vec![0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21];
        cose.extend(cbor_bytes(&point[1..33]));
        cose.push(0x22);
        cose.extend(cbor_bytes(&point[33..65]));
        let mut attested = model.map_or([0; 16], |m| *m.aaguid.as_bytes()).to_vec();
        attested.extend((self.credential_id.len() as u16).to_be_bytes());
        attested.extend(&self.credential_id);
        attested.extend(cose);
        let auth_data = self.auth_data(0x45, &attested);
        let client_data = Self::client_data("webauthn.create", options, origin);
        let mut object = vec![0xa3];
        object.extend(cbor_text("fmt"));
        match model {
            None => {
                object.extend(cbor_text("none"));
                object.extend(cbor_text("attStmt"));
                object.push(0xa0);
            }
            Some(model) => {
                let signed = [auth_data.clone(), sha256(&client_data)].concat();
                let signature = model.key.sign(&SystemRandom::new(), &signed).unwrap();
                object.extend(cbor_text("packed"));
                object.extend(cbor_text("attStmt"));
                object.push(0xa3);
                object.extend(cbor_text("alg"));
                object.push(0x26);
                object.extend(cbor_text("sig"));
                object.extend(cbor_bytes(signature.as_ref()));
                object.extend(cbor_text("x5c"));
                object.push(0x81);
                object.extend(cbor_bytes(&model.certificate));
            }
        }
        object.extend(cbor_text("authData"));
        object.extend(cbor_bytes(&auth_data));
        let id = b64url(&self.credential_id);
        json!({
            "id": id, "rawId": id, "type": "public-key", "extensions": {},
            "response": {
                "attestationObject": b64url(object),
                "clientDataJSON": b64url(client_data),
            },
        })
        .to_string()
    }

    /// The browser's answer to a sign-in's options, the counter advanced by `step`.
    pub fn get(&mut self, options: &Value, origin: &str, step: u32) -> String {
        self.counter += step;
        let auth_data = self.auth_data(0x05, &[]);
        let client_data = Self::client_data("webauthn.get", options, origin);
        let signed = [auth_data.clone(), sha256(&client_data)].concat();
        let signature = self.key.sign(&SystemRandom::new(), &signed).unwrap();
        let id = b64url(&self.credential_id);
        json!({
            "id": id, "rawId": id, "type": "public-key", "extensions": {},
            "response": {
                "authenticatorData": b64url(auth_data),
                "clientDataJSON": b64url(client_data),
                "signature": b64url(signature.as_ref()),
                "userHandle": b64url(&self.user_handle),
            },
        })
        .to_string()
    }
}

/// A maker's attestation CA.
pub struct AttestationCa {
    /// Its certificate, PEM (what the bank lists).
    pub pem: String,
    params: rcgen::CertificateParams,
    key: rcgen::KeyPair,
}

impl AttestationCa {
    /// A new CA named `name`.
    ///
    /// # Panics
    /// When rcgen cannot make it.
    pub fn new(name: &str) -> Self {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("a P-256 key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("parameters");
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        params.distinguished_name.push(rcgen::DnType::OrganizationName, "Test Authenticators");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::CrlSign];
        let pem = params.self_signed(&key).expect("a CA certificate").pem();
        Self { pem, params, key }
    }
}

/// An authenticator model: its AAGUID and the attestation certificate and
/// key its maker's CA gave it (WebAuthn §8.2.1's requirements met).
pub struct Model {
    pub aaguid: uuid::Uuid,
    certificate: Vec<u8>,
    key: EcdsaKeyPair,
}

impl Model {
    /// The model `aaguid`, attested by `ca`.
    ///
    /// # Panics
    /// When rcgen cannot make its certificate.
    pub fn new(ca: &AttestationCa, aaguid: uuid::Uuid) -> Self {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("a P-256 key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("parameters");
        params.distinguished_name.push(rcgen::DnType::CountryName, "RU");
        params.distinguished_name.push(rcgen::DnType::OrganizationName, "Test Authenticators");
        params.distinguished_name.push(rcgen::DnType::OrganizationalUnitName, "Authenticator Attestation");
        params.distinguished_name.push(rcgen::DnType::CommonName, "Test Authenticator");
        params.is_ca = rcgen::IsCa::ExplicitNoCa;
        // id-fido-gen-ce-aaguid: an OCTET STRING holding the AAGUID.
        let mut aaguid_der = vec![0x04, 0x10];
        aaguid_der.extend(aaguid.as_bytes());
        params
            .custom_extensions
            .push(rcgen::CustomExtension::from_oid_content(&[1, 3, 6, 1, 4, 1, 45724, 1, 1, 4], aaguid_der));
        let issuer = rcgen::Issuer::from_params(&ca.params, &ca.key);
        let certificate = params.signed_by(&key, &issuer).expect("an attestation certificate").der().to_vec();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &key.serialize_der()).expect("the key");
        Self { aaguid, certificate, key }
    }
}
