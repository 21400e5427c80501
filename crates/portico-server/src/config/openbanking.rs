//! The open-banking settings: client registration, pushed requests, DPoP
//! and mutual TLS.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// Dynamic client registration (RFC 7591, 7592).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RegistrationConfig {
    /// The bearer token a third party registers with at
    /// `/oauth2/register` (at least 24 characters); unset, registration is off.
    pub initial_access_token: Option<String>,
    /// Issuers whose software statements (RFC 7591 §2.3) are trusted, each
    /// with the file of its public keys (a JWK Set).
    pub software_statement_issuers: Vec<StatementIssuerConfig>,
    /// Whether a registration must carry a software statement of one of
    /// them.
    pub require_software_statement: bool,
    /// Whether a new registration waits for an operator's approval (in the
    /// console or the admin API) before the client can authenticate or
    /// start a login.
    pub require_approval: bool,
    /// The security profile of a client registered without naming one, by
    /// a third party or an operator: `standard`, `fapi2` or `fapi-ru`. A
    /// third party may name a stricter profile, never `standard` when
    /// this is stricter.
    pub default_security_profile: portico_model::client::SecurityProfile,
}

/// Pushed authorization requests (RFC 9126).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ParConfig {
    /// Seconds a pushed request's `request_uri` may be used (1 to 599).
    pub request_uri_ttl_secs: u32,
    /// Every client must push its authorization requests.
    pub required: bool,
}

impl Default for ParConfig {
    fn default() -> Self {
        Self { request_uri_ttl_secs: 60, required: false }
    }
}

/// DPoP (RFC 9449).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DpopConfig {
    /// Proofs at the token and PAR endpoints must carry a server nonce.
    pub require_nonce: bool,
}

/// Mutual TLS (RFC 8705): where client certificates are believed from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MtlsConfig {
    /// The header in which the TLS terminator in front passes the client
    /// certificate (URL-encoded PEM, as nginx's `$ssl_client_escaped_cert`);
    /// unset: no header is read.
    pub certificate_header: Option<String>,
    /// Addresses or blocks of the terminators whose header is believed (one
    /// value, or a list); from anywhere else the header is dropped unread.
    #[serde(deserialize_with = "one_or_many")]
    pub trusted_proxies: Vec<portico_identity::client_address::Cidr>,
    /// A PEM bundle of the certificate authorities whose client
    /// certificates `tls_client_auth` accepts; unset: that method is not
    /// offered.
    pub client_ca_file: Option<PathBuf>,
    /// Portico's own TLS listener, which asks every client for a
    /// certificate (and takes connections without one); unset: none. Needs
    /// `server_certificate_file` and `server_key_file`.
    pub listen: Option<SocketAddr>,
    /// The listener's certificate chain, PEM, the server's certificate first.
    pub server_certificate_file: Option<PathBuf>,
    /// The listener's private key, PEM (PKCS#8, PKCS#1 or SEC1).
    pub server_key_file: Option<PathBuf>,
    /// Where clients reach the mutual-TLS endpoints (`https://…`, no
    /// path): published in discovery as `mtls_endpoint_aliases` (RFC 8705
    /// §5). Portico's own listener's public address, or a terminator's
    /// host name that asks for client certificates; unset: no aliases.
    pub public_url: Option<String>,
}

impl MtlsConfig {
    /// Whether client certificates can reach Portico at all: through a
    /// terminator's header or Portico's own listener.
    pub fn presents_certificates(&self) -> bool {
        self.certificate_header.is_some() || self.listen.is_some()
    }

    /// The edge that reads the header.
    ///
    /// # Errors
    /// A header name that is not one, or a header without a proxy to
    /// believe it from.
    pub fn edge(&self) -> Result<portico_identity::mtls::CertificateEdge, String> {
        let Some(name) = &self.certificate_header else {
            return Ok(portico_identity::mtls::CertificateEdge::default());
        };
        let header = axum::http::HeaderName::from_bytes(name.trim().to_ascii_lowercase().as_bytes())
            .map_err(|_| format!("mtls.certificate_header: `{name}` is not an HTTP header name"))?;
        if self.trusted_proxies.is_empty() {
            return Err(format!(
                "mtls.certificate_header is `{name}` but mtls.trusted_proxies is empty: name the address (or block) \
                 of the TLS terminator whose header Portico may believe, e.g. PORTICO_MTLS__TRUSTED_PROXIES=10.0.0.5/32"
            ));
        }
        Ok(portico_identity::mtls::CertificateEdge {
            header: Some(header),
            trusted_proxies: self.trusted_proxies.clone(),
        })
    }

    /// The TLS configuration of Portico's own listener, when `listen` is set.
    ///
    /// # Errors
    /// A listener without its certificate or key, files that cannot be
    /// read, or a key that does not fit.
    pub fn server_tls(&self) -> Result<Option<Arc<rustls::ServerConfig>>, String> {
        let Some(listen) = self.listen else { return Ok(None) };
        let (Some(chain), Some(key)) = (&self.server_certificate_file, &self.server_key_file) else {
            return Err(format!(
                "mtls.listen is {listen} but mtls.server_certificate_file or mtls.server_key_file is unset: name the \
                 PEM files of the listener's certificate chain and private key"
            ));
        };
        crate::tls::server_config(chain, key).map(Some)
    }

    /// The base of the mutual-TLS endpoint aliases, checked.
    ///
    /// # Errors
    /// One that is not an `https` URL without a path, query or fragment.
    pub fn alias_base(&self) -> Result<Option<String>, String> {
        let Some(text) = &self.public_url else { return Ok(None) };
        let url = url::Url::parse(text).map_err(|e| format!("mtls.public_url: {e}"))?;
        if url.scheme() != "https" || url.host().is_none() || url.path() != "/" || url.query().is_some() {
            return Err(format!("mtls.public_url: `{text}` must be https://host[:port], without a path"));
        }
        Ok(Some(text.trim_end_matches('/').to_owned()))
    }

    /// The authorities of `client_ca_file`, read.
    ///
    /// # Errors
    /// A file that cannot be read or holds no certificate to trust.
    pub fn authorities(&self) -> Result<Option<portico_crypto::certificate::ClientAuthorities>, String> {
        let Some(path) = &self.client_ca_file else { return Ok(None) };
        let pem = std::fs::read(path).map_err(|e| format!("mtls.client_ca_file {}: {e}", path.display()))?;
        portico_crypto::certificate::ClientAuthorities::from_pem(&pem)
            .map(Some)
            .map_err(|e| format!("mtls.client_ca_file {}: {e}", path.display()))
    }
}

/// A list that may also be given as one value (as an environment variable
/// most often is).
fn one_or_many<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany<T> {
        One(T),
        Many(Vec<T>),
    }
    Ok(match OneOrMany::deserialize(deserializer)? {
        OneOrMany::One(value) => vec![value],
        OneOrMany::Many(values) => values,
    })
}

/// One trusted issuer of software statements.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatementIssuerConfig {
    /// The statements' `iss`.
    pub issuer: String,
    /// A JWK Set file with the issuer's public signing keys.
    pub jwks_file: PathBuf,
}

impl RegistrationConfig {
    /// The software statement rules, with each issuer's keys read and
    /// checked.
    ///
    /// # Errors
    /// A key file that cannot be read or is not a set of public signing
    /// keys, an empty or repeated issuer, or a required statement without
    /// any trusted issuer.
    pub fn software_statements(&self) -> Result<portico_admin::registration::SoftwareStatements, ConfigError> {
        let mut issuers: Vec<portico_admin::registration::TrustedIssuer> = Vec::new();
        for configured in &self.software_statement_issuers {
            let name = &configured.issuer;
            if name.is_empty() || issuers.iter().any(|known| &known.issuer == name) {
                return Err(ConfigError(format!(
                    "registration.software_statement_issuers: the issuer {name:?} is empty or named twice"
                )));
            }
            let file = configured.jwks_file.display();
            let text = std::fs::read_to_string(&configured.jwks_file).map_err(|e| {
                ConfigError(format!("registration.software_statement_issuers: cannot read {file} ({name}): {e}"))
            })?;
            let keys = serde_json::from_str(&text)
                .map_err(|e| e.to_string())
                .and_then(|set| portico_crypto::jose::KeySet::parse(&set))
                .map_err(|e| {
                    ConfigError(format!("registration.software_statement_issuers: {file} ({name}) is not a JWK Set of public signing keys: {e}"))
                })?;
            issuers.push(portico_admin::registration::TrustedIssuer { issuer: name.clone(), keys });
        }
        if self.require_software_statement && issuers.is_empty() {
            return Err(ConfigError(
                "registration.require_software_statement needs at least one registration.software_statement_issuers entry"
                    .into(),
            ));
        }
        Ok(portico_admin::registration::SoftwareStatements { issuers, required: self.require_software_statement })
    }
}
