//! Who a certificate names, for `tls_client_auth` (RFC 8705 §2.1.2): the
//! client registers exactly one of its subject's distinguished name
//! (`tls_client_auth_subject_dn`, in RFC 4514's string form) or one
//! subject alternative name (`tls_client_auth_san_dns`, `_san_uri`,
//! `_san_ip`, `_san_email`), and the certificate must carry it.
//!
//! Distinguished names are compared attribute by attribute, not as text:
//! the registered string is read as RFC 4514 says (RDNs separated by `,`
//! from the last to the first, `+` joining the attributes of one RDN,
//! `\` escapes, short names such as `CN` or dotted OIDs such as
//! `1.2.643.100.1` for ОГРН), and each attribute must have the same type
//! and, ignoring ASCII case and surrounding spaces, the same value as the
//! certificate's, in the same order.

use std::net::IpAddr;

use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer as _, X509Certificate};

/// What a `tls_client_auth` client registered its certificate by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubjectRule {
    /// `tls_client_auth_subject_dn`, read.
    Dn(DistinguishedName),
    /// `tls_client_auth_san_dns` (compared ignoring ASCII case).
    Dns(String),
    /// `tls_client_auth_san_uri`.
    Uri(String),
    /// `tls_client_auth_san_ip`.
    Ip(IpAddr),
    /// `tls_client_auth_san_email` (compared ignoring ASCII case).
    Email(String),
}

/// A distinguished name: its RDNs in the certificate's (DER) order, each a
/// set of (OID in dotted form, value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistinguishedName(Vec<Vec<(String, String)>>);

/// RFC 4514's short names (and `E`, which OpenSSL prints for e-mail).
const SHORT_NAMES: [(&str, &str); 12] = [
    ("CN", "2.5.4.3"),
    ("C", "2.5.4.6"),
    ("L", "2.5.4.7"),
    ("ST", "2.5.4.8"),
    ("STREET", "2.5.4.9"),
    ("O", "2.5.4.10"),
    ("OU", "2.5.4.11"),
    ("SERIALNUMBER", "2.5.4.5"),
    ("DC", "0.9.2342.19200300.100.1.25"),
    ("UID", "0.9.2342.19200300.100.1.1"),
    ("EMAILADDRESS", "1.2.840.113549.1.9.1"),
    ("E", "1.2.840.113549.1.9.1"),
];

impl DistinguishedName {
    /// Reads an RFC 4514 string.
    ///
    /// # Errors
    /// What is wrong with it, in words for the client's developer.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut rdns = Vec::new();
        for rdn in split_unescaped(text, ',') {
            let mut attributes = Vec::new();
            for attribute in split_unescaped(&rdn, '+') {
                let (kind, value) =
                    attribute.split_once('=').ok_or_else(|| format!("`{}` is not type=value", attribute.trim()))?;
                let kind = kind.trim();
                let oid = match SHORT_NAMES.iter().find(|(name, _)| name.eq_ignore_ascii_case(kind)) {
                    Some((_, oid)) => (*oid).to_owned(),
                    None if !kind.is_empty() && kind.split('.').all(|arc| arc.parse::<u64>().is_ok()) => {
                        kind.to_owned()
                    }
                    None => return Err(format!("`{kind}` is not a known attribute name or a dotted OID")),
                };
                attributes.push((oid, unescape(value.trim())?));
            }
            attributes.sort();
            rdns.push(attributes);
        }
        if rdns.is_empty() || rdns.iter().any(Vec::is_empty) {
            return Err("an empty distinguished name".into());
        }
        // RFC 4514 writes the last RDN first.
        rdns.reverse();
        Ok(Self(rdns))
    }

    fn same(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && self.0.iter().zip(&other.0).all(|(a, b)| {
                a.len() == b.len()
                    && a.iter().zip(b).all(|((ta, va), (tb, vb))| ta == tb && va.trim().eq_ignore_ascii_case(vb.trim()))
            })
    }
}

impl SubjectRule {
    /// The rule of a client's `tls_client_auth_*` metadata (name, value):
    /// exactly one must be given.
    ///
    /// # Errors
    /// None or several given, or a value that does not read, in words for
    /// the client's developer.
    pub fn from_metadata<'a>(mut given: impl Iterator<Item = (&'static str, &'a str)>) -> Result<Self, String> {
        let (Some((name, value)), None) = (given.next(), given.next()) else {
            return Err("tls_client_auth needs exactly one of tls_client_auth_subject_dn, tls_client_auth_san_dns, \
                        tls_client_auth_san_uri, tls_client_auth_san_ip, tls_client_auth_san_email"
                .into());
        };
        let empty = || format!("{name}: empty");
        let value = value.trim();
        if value.is_empty() {
            return Err(empty());
        }
        Ok(match name {
            "tls_client_auth_subject_dn" => {
                Self::Dn(DistinguishedName::parse(value).map_err(|e| format!("{name}: {e}"))?)
            }
            "tls_client_auth_san_dns" => Self::Dns(value.to_owned()),
            "tls_client_auth_san_uri" => Self::Uri(value.to_owned()),
            "tls_client_auth_san_ip" => {
                Self::Ip(value.parse().map_err(|_| format!("{name}: `{value}` is not an IP address"))?)
            }
            _ => Self::Email(value.to_owned()),
        })
    }

    /// Whether the certificate (DER) names what the rule says; a
    /// certificate that does not parse names nothing.
    pub fn matches(&self, der: &[u8]) -> bool {
        let Ok((_, cert)) = X509Certificate::from_der(der) else { return false };
        match self {
            SubjectRule::Dn(expected) => subject(&cert).is_some_and(|name| name.same(expected)),
            _ => {
                let Ok(Some(san)) = cert.subject_alternative_name() else { return false };
                san.value.general_names.iter().any(|name| match (self, name) {
                    (SubjectRule::Dns(dns), GeneralName::DNSName(given)) => dns.eq_ignore_ascii_case(given),
                    (SubjectRule::Uri(uri), GeneralName::URI(given)) => uri == given,
                    (SubjectRule::Email(email), GeneralName::RFC822Name(given)) => email.eq_ignore_ascii_case(given),
                    (SubjectRule::Ip(ip), GeneralName::IPAddress(given)) => match ip {
                        IpAddr::V4(v4) => *given == v4.octets().as_slice(),
                        IpAddr::V6(v6) => *given == v6.octets().as_slice(),
                    },
                    _ => false,
                })
            }
        }
    }
}

/// The certificate's subject; `None` when an attribute is not a string.
fn subject(cert: &X509Certificate<'_>) -> Option<DistinguishedName> {
    let mut rdns = Vec::new();
    for rdn in cert.subject().iter_rdn() {
        let mut attributes = Vec::new();
        for attribute in rdn.iter() {
            attributes.push((attribute.attr_type().to_id_string(), attribute.as_str().ok()?.to_owned()));
        }
        attributes.sort();
        rdns.push(attributes);
    }
    Some(DistinguishedName(rdns))
}

/// `text` split at each `separator` not escaped by `\`.
fn split_unescaped(text: &str, separator: char) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut escaped = false;
    for c in text.chars() {
        let Some(last) = parts.last_mut() else { break };
        if escaped {
            last.extend(['\\', c]);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == separator {
            parts.push(String::new());
        } else {
            last.push(c);
        }
    }
    if escaped && let Some(last) = parts.last_mut() {
        // A lone backslash at the end: left for `unescape` to refuse.
        last.push('\\');
    }
    parts
}

/// An RFC 4514 value without its escapes (`\,`, `\"`, `\41`, …).
fn unescape(value: &str) -> Result<String, String> {
    let mut bytes = Vec::new();
    let mut rest = value.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b != b'\\' {
            bytes.push(b);
            rest = tail;
            continue;
        }
        match tail {
            [h, l, more @ ..] if h.is_ascii_hexdigit() && l.is_ascii_hexdigit() => {
                let hex = std::str::from_utf8(&[*h, *l]).unwrap_or("00").to_owned();
                bytes.push(u8::from_str_radix(&hex, 16).unwrap_or(0));
                rest = more;
            }
            [c, more @ ..] => {
                bytes.push(*c);
                rest = more;
            }
            [] => return Err(format!("`{value}` ends in a lone backslash")),
        }
    }
    String::from_utf8(bytes).map_err(|_| format!("`{value}` is not UTF-8 once unescaped"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certificate(dn: &[(rcgen::DnType, &str)], sans: Vec<rcgen::SanType>) -> Vec<u8> {
        let mut params = rcgen::CertificateParams::default();
        let mut name = rcgen::DistinguishedName::new();
        for (kind, value) in dn {
            name.push(kind.clone(), *value);
        }
        params.distinguished_name = name;
        params.subject_alt_names = sans;
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn a_subject_dn_matches_by_attribute_in_rfc_4514_order() {
        use rcgen::DnType::{CommonName, CountryName, CustomDnType, OrganizationName};
        let ogrn = CustomDnType(vec![1, 2, 643, 100, 1]);
        let der = certificate(
            &[
                (CountryName, "RU"),
                (OrganizationName, "Fintech, LLC"),
                (ogrn, "1027700132195"),
                (CommonName, "fintech"),
            ],
            Vec::new(),
        );
        let rule = |text: &str| SubjectRule::Dn(DistinguishedName::parse(text).unwrap());
        assert!(rule("CN=fintech,1.2.643.100.1=1027700132195,O=Fintech\\, LLC,C=RU").matches(&der));
        assert!(rule("cn = FINTECH , 1.2.643.100.1=1027700132195, o=fintech\\2C llc, c=ru").matches(&der));
        assert!(!rule("CN=fintech,O=Fintech\\, LLC,C=RU").matches(&der), "an attribute missing");
        assert!(!rule("C=RU,O=Fintech\\, LLC,1.2.643.100.1=1027700132195,CN=fintech").matches(&der), "reversed");
        assert!(!rule("CN=other,1.2.643.100.1=1027700132195,O=Fintech\\, LLC,C=RU").matches(&der));
        assert!(DistinguishedName::parse("CN").is_err());
        assert!(DistinguishedName::parse("XX=1").is_err());
        assert!(DistinguishedName::parse("CN=a\\").is_err());
    }

    #[test]
    fn alternative_names_match_their_own_kind_only() {
        let der = certificate(
            &[(rcgen::DnType::CommonName, "fintech")],
            vec![
                rcgen::SanType::DnsName("api.fintech.example".try_into().unwrap()),
                rcgen::SanType::URI("https://fintech.example/client".try_into().unwrap()),
                rcgen::SanType::IpAddress("192.0.2.7".parse().unwrap()),
                rcgen::SanType::Rfc822Name("ops@fintech.example".try_into().unwrap()),
            ],
        );
        assert!(SubjectRule::Dns("API.fintech.example".into()).matches(&der));
        assert!(SubjectRule::Uri("https://fintech.example/client".into()).matches(&der));
        assert!(SubjectRule::Ip("192.0.2.7".parse().unwrap()).matches(&der));
        assert!(SubjectRule::Email("ops@fintech.example".into()).matches(&der));
        assert!(!SubjectRule::Dns("fintech.example".into()).matches(&der));
        assert!(!SubjectRule::Uri("api.fintech.example".into()).matches(&der), "a DNS name is no URI");
        assert!(!SubjectRule::Ip("192.0.2.8".parse().unwrap()).matches(&der));
        assert!(!SubjectRule::Dns("x".into()).matches(b"not a certificate"));
    }
}
