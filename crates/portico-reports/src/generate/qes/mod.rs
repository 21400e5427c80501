//! The `QES` form's signature: a detached CMS `SignedData` (RFC 5652) in
//! DER over the printed form, in the CAdES-BES shape (ETSI EN 319 122-1):
//! the signed attributes content type, signing time, message digest and
//! signing-certificate-v2 (RFC 5035), the broker's certificate and its
//! chain included, so that `openssl cms -verify -binary -inform DER
//! -content form.pdf` (with `-engine gost` for GOST) accepts it.
//!
//! Two algorithms:
//! - **ECDSA P-256 with SHA-256** (the default), signed by a built-in key
//!   or by an external command;
//! - **GOST R 34.10-2012 (256-bit) with Streebog-256** (RFC 4490 / RFC 9215
//!   identifiers, as CryptoPro and OpenSSL's GOST engine write them),
//!   signed only by an external command — a certified tool such as
//!   CryptoPro CSP in production. Portico does no GOST arithmetic itself.
//!
//! The external command either signs the DER signed attributes Portico
//! assembled (`output = "signature"`) or makes the whole detached CMS over
//! the form (`output = "cms"`). Whatever made the signature, it is checked
//! before the report may be `DONE`: the structure, the digest algorithm,
//! the message digest over the form (computed here), the signer being the
//! configured certificate, and the signature value — with the
//! certificate's public key for ECDSA, with the configured verification
//! command for GOST.

pub use portico_command as command;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_ASN1, ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair as _};
use cms::cert::{CertificateChoices, IssuerAndSerialNumber};
use cms::content_info::{CmsVersion, ContentInfo};
use cms::signed_data::{
    CertificateSet, EncapsulatedContentInfo, SignedAttributes, SignedData, SignerIdentifier, SignerInfo, SignerInfos,
};
use der::asn1::{ObjectIdentifier, OctetString, SetOfVec, UtcTime};
use der::{Any, Decode as _, Encode as _, Sequence};
use spki::AlgorithmIdentifierOwned;
use time::OffsetDateTime;
use x509_cert::Certificate;
use x509_cert::attr::Attribute;
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::serial_number::SerialNumber;

use super::GenerateError;

const SIGNED_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.2");
const DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.1");
const CONTENT_TYPE: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.3");
const MESSAGE_DIGEST: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.4");
const SIGNING_TIME: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.5");
const SIGNING_CERTIFICATE_V2: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.2.47");
const SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.1");
const ECDSA_WITH_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.2");
const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const P256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
/// id-tc26-gost3411-12-256 (Streebog-256).
pub const STREEBOG_256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.643.7.1.1.2.2");
/// id-tc26-gost3410-12-256: the key's algorithm, and the signature
/// algorithm of a CMS signer (RFC 4490 §3.2, as CryptoPro writes it).
pub const GOST_3410_12_256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.643.7.1.1.1.1");
/// id-tc26-signwithdigest-gost3410-12-256, accepted from a command's CMS.
const GOST_SIGN_WITH_DIGEST_256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.643.7.1.1.3.2");

/// The report signature's algorithm (`reports.signature.algorithm`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Algorithm {
    /// ECDSA on P-256 with SHA-256.
    #[default]
    #[serde(rename = "ecdsa-p256")]
    EcdsaP256,
    /// GOST R 34.10-2012 with a 256-bit key and Streebog-256.
    #[serde(rename = "gost2012-256")]
    Gost2012_256,
}

impl Algorithm {
    fn digest_oid(self) -> ObjectIdentifier {
        match self {
            Self::EcdsaP256 => SHA256,
            Self::Gost2012_256 => STREEBOG_256,
        }
    }

    fn signature_oid(self) -> ObjectIdentifier {
        match self {
            Self::EcdsaP256 => ECDSA_WITH_SHA256,
            Self::Gost2012_256 => GOST_3410_12_256,
        }
    }

    /// The hash of `data` with the algorithm's digest.
    pub fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            Self::EcdsaP256 => aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, data).as_ref().to_vec(),
            Self::Gost2012_256 => {
                use streebog::Digest as _;
                streebog::Streebog256::digest(data).to_vec()
            }
        }
    }

    /// Whether the certificate's key is one of this algorithm.
    fn fits(self, certificate: &Certificate) -> bool {
        let spki = certificate.tbs_certificate().subject_public_key_info();
        match self {
            Self::EcdsaP256 => {
                spki.algorithm.oid == EC_PUBLIC_KEY
                    && spki.algorithm.parameters.as_ref().and_then(|p| p.decode_as::<ObjectIdentifier>().ok())
                        == Some(P256)
            }
            Self::Gost2012_256 => spki.algorithm.oid == GOST_3410_12_256,
        }
    }
}

impl std::fmt::Display for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::EcdsaP256 => "ECDSA P-256",
            Self::Gost2012_256 => "GOST R 34.10-2012 (256)",
        })
    }
}

/// What the external command writes (`reports.signature.output`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Output {
    /// The signature value over the DER signed attributes on standard input.
    #[default]
    Signature,
    /// A detached CMS `SignedData` over the form on standard input.
    Cms,
}

/// `reports.signature`: the algorithm, the chain and the external command.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// `ecdsa-p256` (default) or `gost2012-256` (needs `command` and
    /// `verify_command`).
    pub algorithm: Algorithm,
    /// The CA certificates (PEM) included with every signature after the
    /// broker's own: intermediates, then the root.
    pub chain: Option<std::path::PathBuf>,
    /// The signing program and its arguments; empty: the built-in key
    /// (`reports.signing_key`).
    pub command: Vec<String>,
    /// What `command` writes: `signature` or `cms`.
    pub output: Output,
    /// Seconds a run of `command` or `verify_command` may take, waiting
    /// for a free run included.
    pub timeout_secs: u64,
    /// Runs of `command` at once (per process).
    pub concurrency: u32,
    /// A program that checks each finished signature: `{signature}` and
    /// `{content}` in its arguments become the paths of the CMS and the
    /// form; exit status 0 accepts. Required for GOST.
    pub verify_command: Vec<String>,
    /// The label of an ECDSA P-256 private key in the HSM of `tokens.hsm`
    /// that signs instead of `reports.signing_key`.
    pub hsm_key_label: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            algorithm: Algorithm::EcdsaP256,
            chain: None,
            command: Vec::new(),
            output: Output::Signature,
            timeout_secs: 30,
            concurrency: 2,
            verify_command: Vec::new(),
            hsm_key_label: None,
        }
    }
}

/// Where the private key is.
enum Key {
    /// A PKCS#8 ECDSA P-256 key read from a file.
    Builtin(EcdsaKeyPair),
    /// An ECDSA P-256 key in an HSM (`r || s` signatures of the data).
    Hsm(std::sync::Arc<dyn portico_crypto::jwt::RemoteSigner>),
    /// An external command.
    Command { command: command::Command, output: Output },
}

/// The broker's signing certificate, its chain, and what signs.
pub struct Signer {
    algorithm: Algorithm,
    key: Key,
    certificate: Certificate,
    certificate_der: Vec<u8>,
    chain: Vec<Certificate>,
    /// Checks a finished signature: `{signature}` and `{content}` are the
    /// paths of the CMS and the form.
    verify: Option<command::Command>,
    demonstration: bool,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("algorithm", &self.algorithm)
            .field("chain", &self.chain.len())
            .field("demonstration", &self.demonstration)
            .finish_non_exhaustive()
    }
}

/// The certificates of a PEM text, in order.
///
/// # Errors
/// When the text holds none, or one does not parse.
pub fn certificates_from_pem(pem: &str) -> Result<Vec<Certificate>, String> {
    let found = Certificate::load_pem_chain(pem.as_bytes()).map_err(|e| format!("not PEM certificates: {e}"))?;
    if found.is_empty() {
        return Err("no certificate in it (-----BEGIN CERTIFICATE-----)".to_owned());
    }
    Ok(found)
}

impl Signer {
    fn with_key(
        algorithm: Algorithm,
        key: Key,
        certificate_pem: &str,
        chain_pem: Option<&str>,
        verify: Option<command::Command>,
    ) -> Result<Self, String> {
        let certificate = certificates_from_pem(certificate_pem)?.remove(0);
        if !algorithm.fits(&certificate) {
            return Err(format!("the certificate's key is not a {algorithm} key"));
        }
        let chain = chain_pem.map(certificates_from_pem).transpose()?.unwrap_or_default();
        if algorithm == Algorithm::Gost2012_256 && verify.is_none() {
            return Err("GOST signatures need a verification command (reports.signature.verify_command): \
                        Portico checks every signature before a report is done and does no GOST arithmetic itself"
                .to_owned());
        }
        let certificate_der = certificate.to_der().map_err(|e| e.to_string())?;
        Ok(Self { algorithm, key, certificate, certificate_der, chain, verify, demonstration: false })
    }

    /// ECDSA P-256 with a key held by Portico: a certificate and its
    /// PKCS#8 key (both PEM), and optionally the chain (PEM).
    ///
    /// # Errors
    /// When either cannot be read or the key is not the certificate's.
    pub fn builtin(certificate_pem: &str, key_pem: &str, chain_pem: Option<&str>) -> Result<Self, String> {
        let der = pem_der(key_pem, "PRIVATE KEY").ok_or("the key is not a PKCS#8 PEM (BEGIN PRIVATE KEY)")?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &der)
            .map_err(|_| "the signing key is not a PKCS#8 ECDSA P-256 key".to_owned())?;
        let public = pair.public_key().as_ref().to_vec();
        let signer = Self::with_key(Algorithm::EcdsaP256, Key::Builtin(pair), certificate_pem, chain_pem, None)?;
        if signer.public_key() != public.as_slice() {
            return Err("the key is not the certificate's".to_owned());
        }
        Ok(signer)
    }

    /// ECDSA P-256 with the key in an HSM: `signer` signs with SHA-256
    /// and answers `r || s`, as PKCS#11's `CKM_ECDSA` over a digest does.
    ///
    /// # Errors
    /// When the certificate cannot be read or is not a P-256 one.
    pub fn hsm(
        signer: std::sync::Arc<dyn portico_crypto::jwt::RemoteSigner>,
        certificate_pem: &str,
        chain_pem: Option<&str>,
    ) -> Result<Self, String> {
        Self::with_key(Algorithm::EcdsaP256, Key::Hsm(signer), certificate_pem, chain_pem, None)
    }

    /// The certificate's P-256 public key as its coordinates (for the
    /// operator's check that an HSM key is the certificate's).
    pub fn p256_coordinates(&self) -> Option<(&[u8], &[u8])> {
        let point = self.public_key();
        point.strip_prefix(&[0x04][..]).filter(|xy| xy.len() == 64).map(|xy| xy.split_at(32))
    }

    /// A key behind an external command.
    ///
    /// # Errors
    /// When the certificate cannot be read or does not fit `algorithm`, or
    /// GOST comes without `verify`.
    pub fn external(
        algorithm: Algorithm,
        command: command::Command,
        output: Output,
        certificate_pem: &str,
        chain_pem: Option<&str>,
        verify: Option<command::Command>,
    ) -> Result<Self, String> {
        Self::with_key(algorithm, Key::Command { command, output }, certificate_pem, chain_pem, verify)
    }

    /// Marks the signer as the demo's self-signed one: the form's title
    /// block says that the signature has no legal force.
    #[must_use]
    pub fn demonstration(mut self) -> Self {
        self.demonstration = true;
        self
    }

    pub fn is_demonstration(&self) -> bool {
        self.demonstration
    }

    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// A new self-signed certificate and key (the demo's, and the default
    /// until one is configured), valid from `now` for ten years:
    /// `(certificate PEM, key PEM)`.
    ///
    /// # Errors
    /// When generation fails.
    pub fn generate_self_signed(organization: &str, now: OffsetDateTime) -> Result<(String, String), String> {
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

    fn public_key(&self) -> &[u8] {
        self.certificate.tbs_certificate().subject_public_key_info().subject_public_key.raw_bytes()
    }

    fn issuer_and_serial(&self) -> IssuerAndSerialNumber {
        let tbs = self.certificate.tbs_certificate();
        IssuerAndSerialNumber { issuer: tbs.issuer().clone(), serial_number: tbs.serial_number().clone() }
    }

    /// The detached signature of `content`, signed at `at`, checked before
    /// it is returned. Runs an external command on the current Tokio
    /// runtime (call it from a blocking thread) or on a runtime of its own.
    ///
    /// # Errors
    /// When signing fails or the signature does not check out; counted in
    /// `portico_report_signing_failures_total`.
    pub fn sign_detached(&self, content: &[u8], at: OffsetDateTime) -> Result<Vec<u8>, GenerateError> {
        let started = std::time::Instant::now();
        let key = match self.key {
            Key::Builtin(_) => "builtin",
            Key::Hsm(_) => "hsm",
            Key::Command { .. } => "command",
        };
        let signed = match tokio::runtime::Handle::try_current() {
            Ok(runtime) => runtime.block_on(self.sign(content, at)),
            Err(_) => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| Failure::new("failed", format!("no runtime for the signing command: {e}")))
                .and_then(|runtime| runtime.block_on(self.sign(content, at))),
        };
        match signed {
            Ok(cms) => {
                metrics::histogram!("portico_report_signing_seconds", "key" => key)
                    .record(started.elapsed().as_secs_f64());
                Ok(cms)
            }
            Err(failure) => {
                metrics::counter!("portico_report_signing_failures_total", "reason" => failure.reason).increment(1);
                Err(GenerateError::Data(format!("the report could not be signed: {}", failure.message)))
            }
        }
    }

    async fn sign(&self, content: &[u8], at: OffsetDateTime) -> Result<Vec<u8>, Failure> {
        let digest = self.algorithm.digest(content);
        let cms = match &self.key {
            Key::Command { command, output: Output::Cms } => {
                let made = command.run(content, &[]).await?;
                self.rebuild(&made)?
            }
            Key::Command { command, output: Output::Signature } => {
                let attributes = self.signed_attributes(&digest, at)?;
                let to_sign = attributes.to_der().map_err(Failure::encoding)?;
                let signature = command.run(&to_sign, &[]).await?;
                self.assemble(attributes, signature)?
            }
            Key::Hsm(signer) => {
                let attributes = self.signed_attributes(&digest, at)?;
                let to_sign = attributes.to_der().map_err(Failure::encoding)?;
                let raw = signer.sign(&to_sign).map_err(|e| Failure::new("failed", e.to_string()))?;
                self.assemble(attributes, ecdsa_der(&raw)?)?
            }
            Key::Builtin(pair) => {
                let attributes = self.signed_attributes(&digest, at)?;
                let to_sign = attributes.to_der().map_err(Failure::encoding)?;
                let signature = pair
                    .sign(&SystemRandom::new(), &to_sign)
                    .map_err(|_| Failure::new("failed", "the built-in key could not sign".to_owned()))?;
                self.assemble(attributes, signature.as_ref().to_vec())?
            }
        };
        self.check(&cms, content, &digest).await?;
        Ok(cms)
    }

    /// Content type, signing time, message digest, signing certificate v2.
    fn signed_attributes(&self, digest: &[u8], at: OffsetDateTime) -> Result<SignedAttributes, Failure> {
        let at = at.to_offset(time::UtcOffset::UTC);
        let since_epoch = std::time::Duration::from_secs(u64::try_from(at.unix_timestamp()).unwrap_or(0));
        let signing_time = UtcTime::from_unix_duration(since_epoch).map_err(Failure::encoding)?;
        let tbs = self.certificate.tbs_certificate();
        let certificate_id = EssCertIdV2 {
            // DEFAULT sha256 is left out, as DER requires.
            hash_algorithm: (self.algorithm != Algorithm::EcdsaP256).then(|| algorithm(self.algorithm.digest_oid())),
            cert_hash: OctetString::new(self.algorithm.digest(&self.certificate_der)).map_err(Failure::encoding)?,
            issuer_serial: Some(IssuerSerial {
                issuer: vec![GeneralName::DirectoryName(tbs.issuer().clone())],
                serial_number: tbs.serial_number().clone(),
            }),
        };
        let signing_certificate = SigningCertificateV2 { certs: vec![certificate_id] };
        let attribute = |oid, value: Result<Any, der::Error>| -> Result<Attribute, Failure> {
            let values = SetOfVec::try_from(vec![value.map_err(Failure::encoding)?]).map_err(Failure::encoding)?;
            Ok(Attribute { oid, values })
        };
        let attributes = vec![
            attribute(CONTENT_TYPE, Any::encode_from(&DATA))?,
            attribute(SIGNING_TIME, Any::encode_from(&signing_time))?,
            attribute(MESSAGE_DIGEST, Any::encode_from(&OctetString::new(digest).map_err(Failure::encoding)?))?,
            attribute(SIGNING_CERTIFICATE_V2, Any::encode_from(&signing_certificate))?,
        ];
        SetOfVec::try_from(attributes).map_err(Failure::encoding)
    }

    /// The certificates a signature carries: the signer's, then the chain.
    fn certificate_set(&self) -> Result<CertificateSet, Failure> {
        let all = std::iter::once(&self.certificate).chain(&self.chain);
        CertificateSet::try_from(all.cloned().map(CertificateChoices::Certificate).collect::<Vec<_>>())
            .map_err(Failure::encoding)
    }

    fn assemble(&self, attributes: SignedAttributes, signature: Vec<u8>) -> Result<Vec<u8>, Failure> {
        let signer = SignerInfo {
            version: CmsVersion::V1,
            sid: SignerIdentifier::IssuerAndSerialNumber(self.issuer_and_serial()),
            digest_alg: algorithm(self.algorithm.digest_oid()),
            signed_attrs: Some(attributes),
            signature_algorithm: algorithm(self.algorithm.signature_oid()),
            signature: OctetString::new(signature).map_err(Failure::encoding)?,
            unsigned_attrs: None,
        };
        self.envelope(signer)
    }

    fn envelope(&self, signer: SignerInfo) -> Result<Vec<u8>, Failure> {
        let signed_data = SignedData {
            version: CmsVersion::V1,
            digest_algorithms: SetOfVec::try_from(vec![algorithm(self.algorithm.digest_oid())])
                .map_err(Failure::encoding)?,
            encap_content_info: EncapsulatedContentInfo { econtent_type: DATA, econtent: None },
            certificates: Some(self.certificate_set()?),
            crls: None,
            signer_infos: SignerInfos::try_from(vec![signer]).map_err(Failure::encoding)?,
        };
        let info = ContentInfo {
            content_type: SIGNED_DATA,
            content: Any::encode_from(&signed_data).map_err(Failure::encoding)?,
        };
        info.to_der().map_err(Failure::encoding)
    }

    /// A command's CMS with its one signer kept as made and the
    /// certificates replaced by the configured certificate and chain.
    fn rebuild(&self, made: &[u8]) -> Result<Vec<u8>, Failure> {
        let (_, signer) = parse(made).map_err(|e| Failure::new("output", format!("the command's CMS {e}")))?;
        self.envelope(signer)
    }

    /// Everything a verifier would look at, before the signature is used.
    async fn check(&self, cms: &[u8], content: &[u8], digest: &[u8]) -> Result<(), Failure> {
        let mismatch = |what: String| Failure::new("mismatch", what);
        let (signed_data, signer) = parse(cms).map_err(|e| mismatch(format!("the signature {e}")))?;
        if signed_data.encap_content_info.econtent.is_some() || signed_data.encap_content_info.econtent_type != DATA {
            return Err(mismatch("the signature is not a detached signature of data".to_owned()));
        }
        if signer.sid != SignerIdentifier::IssuerAndSerialNumber(self.issuer_and_serial()) {
            return Err(mismatch("the signature is not made by the configured certificate".to_owned()));
        }
        if signer.digest_alg.oid != self.algorithm.digest_oid() {
            return Err(mismatch(format!(
                "the signature's digest is {}, not {}'s",
                signer.digest_alg.oid, self.algorithm
            )));
        }
        let expected = match self.algorithm {
            Algorithm::EcdsaP256 => [ECDSA_WITH_SHA256, EC_PUBLIC_KEY].as_slice(),
            Algorithm::Gost2012_256 => [GOST_3410_12_256, GOST_SIGN_WITH_DIGEST_256].as_slice(),
        };
        if !expected.contains(&signer.signature_algorithm.oid) {
            return Err(mismatch(format!(
                "the signature algorithm {} is not {}",
                signer.signature_algorithm.oid, self.algorithm
            )));
        }
        let attributes = signer
            .signed_attrs
            .as_ref()
            .ok_or_else(|| mismatch("the signature has no signed attributes".to_owned()))?;
        let value_of = |oid: ObjectIdentifier| attributes.iter().find(|a| a.oid == oid).and_then(|a| a.values.get(0));
        let signed_digest = value_of(MESSAGE_DIGEST).and_then(|v| v.decode_as::<OctetString>().ok());
        if signed_digest.as_ref().map(OctetString::as_bytes) != Some(digest) {
            return Err(mismatch("the signature is over other data (the message digest differs)".to_owned()));
        }
        if value_of(CONTENT_TYPE).and_then(|v| v.decode_as::<ObjectIdentifier>().ok()) != Some(DATA) {
            return Err(mismatch("the signed content type is not data".to_owned()));
        }
        match self.algorithm {
            Algorithm::EcdsaP256 => {
                let signed = attributes.to_der().map_err(Failure::encoding)?;
                aws_lc_rs::signature::UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, self.public_key())
                    .verify(&signed, signer.signature.as_bytes())
                    .map_err(|_| {
                        mismatch("the signature value does not verify with the certificate's key".to_owned())
                    })?;
            }
            Algorithm::Gost2012_256 => {}
        }
        if let Some(verify) = &self.verify {
            let failed = |e: std::io::Error| Failure::new("failed", format!("the signature could not be checked: {e}"));
            let scratch = command::Scratch::new().map_err(failed)?;
            let signature = scratch.write("signature.p7s", cms).map_err(failed)?;
            let form = scratch.write("content", content).map_err(failed)?;
            let (signature, form) = (signature.to_string_lossy(), form.to_string_lossy());
            verify.check(&[("signature", &signature), ("content", &form)]).await.map_err(|e| match e {
                command::CommandError::Failed { said, .. } => {
                    mismatch(format!("the verification command refused the signature{said}"))
                }
                other => Failure::from(other),
            })?;
        }
        Ok(())
    }
}

/// A DER `SignedData` with exactly one signer.
fn parse(cms: &[u8]) -> Result<(SignedData, SignerInfo), String> {
    let info = ContentInfo::from_der(cms).map_err(|e| format!("is not DER CMS: {e}"))?;
    if info.content_type != SIGNED_DATA {
        return Err(format!("is a {} and not SignedData", info.content_type));
    }
    let signed_data: SignedData = info.content.decode_as().map_err(|e| format!("is not SignedData: {e}"))?;
    let mut signers = signed_data.signer_infos.0.iter();
    let (Some(signer), None) = (signers.next(), signers.next()) else {
        return Err("has not exactly one signer".to_owned());
    };
    let signer = signer.clone();
    Ok((signed_data, signer))
}

/// `Ecdsa-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }` (RFC 3279), the
/// CMS form of an ECDSA signature.
#[derive(Sequence)]
struct EcdsaSignature<'a> {
    r: der::asn1::UintRef<'a>,
    s: der::asn1::UintRef<'a>,
}

/// The DER form of a P-256 signature answered as `r || s`.
fn ecdsa_der(raw: &[u8]) -> Result<Vec<u8>, Failure> {
    if raw.len() != 64 {
        return Err(Failure::new("output", format!("the HSM answered a {}-byte ECDSA signature, not 64", raw.len())));
    }
    let (r, s) = raw.split_at(32);
    let signature = EcdsaSignature {
        r: der::asn1::UintRef::new(r).map_err(Failure::encoding)?,
        s: der::asn1::UintRef::new(s).map_err(Failure::encoding)?,
    };
    signature.to_der().map_err(Failure::encoding)
}

fn algorithm(oid: ObjectIdentifier) -> AlgorithmIdentifierOwned {
    AlgorithmIdentifierOwned { oid, parameters: None }
}

/// Why signing failed: the metric's reason and the task's message.
#[derive(Debug)]
struct Failure {
    reason: &'static str,
    message: String,
}

impl Failure {
    fn new(reason: &'static str, message: String) -> Self {
        Self { reason, message }
    }

    #[allow(clippy::needless_pass_by_value)]
    fn encoding(error: der::Error) -> Self {
        Self::new("failed", format!("the signature could not be encoded: {error}"))
    }
}

impl From<command::CommandError> for Failure {
    fn from(error: command::CommandError) -> Self {
        Self::new(error.reason(), error.to_string())
    }
}

/// `SigningCertificateV2 ::= SEQUENCE { certs SEQUENCE OF ESSCertIDv2,
/// policies SEQUENCE OF PolicyInformation OPTIONAL }` (RFC 5035).
#[derive(Clone, Debug, Eq, PartialEq, Sequence)]
struct SigningCertificateV2 {
    certs: Vec<EssCertIdV2>,
}

/// `ESSCertIDv2 ::= SEQUENCE { hashAlgorithm AlgorithmIdentifier DEFAULT
/// {algorithm id-sha256}, certHash OCTET STRING, issuerSerial IssuerSerial
/// OPTIONAL }`.
#[derive(Clone, Debug, Eq, PartialEq, Sequence)]
struct EssCertIdV2 {
    #[asn1(optional = "true")]
    hash_algorithm: Option<AlgorithmIdentifierOwned>,
    cert_hash: OctetString,
    #[asn1(optional = "true")]
    issuer_serial: Option<IssuerSerial>,
}

/// `IssuerSerial ::= SEQUENCE { issuer GeneralNames, serialNumber
/// CertificateSerialNumber }`.
#[derive(Clone, Debug, Eq, PartialEq, Sequence)]
struct IssuerSerial {
    issuer: Vec<GeneralName>,
    serial_number: SerialNumber,
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

/// The parts of a detached CMS a test or a support engineer looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub digest_algorithm: String,
    pub signature_algorithm: String,
    /// The signed attributes' OIDs, in their DER order.
    pub signed_attributes: Vec<String>,
    pub certificates: usize,
    pub detached: bool,
}

/// Reads the structure of a detached CMS with one signer.
///
/// # Errors
/// When it is not one.
pub fn summarize(cms: &[u8]) -> Result<Summary, String> {
    let (signed_data, signer) = parse(cms)?;
    Ok(Summary {
        digest_algorithm: signer.digest_alg.oid.to_string(),
        signature_algorithm: signer.signature_algorithm.oid.to_string(),
        signed_attributes: signer.signed_attrs.iter().flat_map(|set| set.iter()).map(|a| a.oid.to_string()).collect(),
        certificates: signed_data.certificates.map_or(0, |set| set.0.len()),
        detached: signed_data.encap_content_info.econtent.is_none(),
    })
}

#[cfg(test)]
mod tests;
