//! The registration body: client metadata as RFC 7591 §2 and OpenID
//! Connect Registration name it, read (with what a software statement
//! asserts put over it) and checked into what the admin service takes.

use axum::body::Body;
use axum::http::{HeaderMap, header};
use portico_crypto::jwt::Algorithm;
use portico_identity::settings::CertificateSupport;
use portico_model::address::MAX_URL_LEN;
use portico_model::client::{AssertionAlgorithm, AuthMethod, ClientSecurity, SecurityProfile};
use serde::Deserialize;
use serde_json::Value;

use super::{GRANT_TYPES, MAX_BODY, Registration, RegistrationError};

/// Client metadata as RFC 7591 §2 (and OpenID Connect Dynamic Client
/// Registration 1.0) name it. Unknown members are ignored.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(default)]
pub struct ClientMetadata {
    /// `https`, or `http` on a loopback address; no fragment. At least one.
    pub redirect_uris: Vec<String>,
    pub client_name: Option<String>,
    /// The name in Russian (OpenID Connect Registration §2.1: `client_name`
    /// with a language tag; `client_name#ru-RU` is taken as this too), for
    /// pages shown in Russian; left out, `client_name`.
    #[serde(rename = "client_name#ru")]
    pub client_name_ru: Option<String>,
    /// The name in English (`client_name#en`, `#en-GB`, …); left out,
    /// `client_name`.
    #[serde(rename = "client_name#en")]
    pub client_name_en: Option<String>,
    /// An `https` address of the client's logo: kept and answered, not
    /// shown (the login pages load nothing from another origin).
    pub logo_uri: Option<String>,
    /// An `https` address of the client's home page, linked from the
    /// consent page (OpenID Connect Registration §2).
    pub client_uri: Option<String>,
    /// An `https` address of how the client treats the user's data, linked
    /// from the consent page.
    pub policy_uri: Option<String>,
    /// An `https` address of the client's terms of service, linked from
    /// the consent page.
    pub tos_uri: Option<String>,
    /// Space-separated, among `openid profile email phone`; default all four.
    pub scope: Option<String>,
    /// Among `authorization_code` and `refresh_token`; default both.
    pub grant_types: Option<Vec<String>>,
    /// `["code"]`, the only one.
    pub response_types: Option<Vec<String>>,
    /// `client_secret_basic` (default), `client_secret_post`, `client_secret_jwt`, `private_key_jwt`.
    pub token_endpoint_auth_method: Option<String>,
    /// The client's public keys (a JWK Set), for `private_key_jwt`.
    #[schema(value_type = Option<Object>)]
    pub jwks: Option<Value>,
    /// Where the client publishes its public keys, for `private_key_jwt`.
    pub jwks_uri: Option<String>,
    /// The one algorithm the client's assertions may be signed with (OpenID
    /// Connect Registration §2): PS256, ES256, EdDSA (or Ed25519) or RS256
    /// under `private_key_jwt`, HS256 under `client_secret_jwt`. With a
    /// method that sends no assertion it has no use and is not kept.
    pub token_endpoint_auth_signing_alg: Option<String>,
    pub id_token_signed_response_alg: Option<String>,
    pub userinfo_signed_response_alg: Option<String>,
    pub access_token_signed_response_alg: Option<String>,
    pub introspection_signed_response_alg: Option<String>,
    /// JARM: the algorithm of the client's signed authorization responses.
    pub authorization_signed_response_alg: Option<String>,
    /// RFC 9126: authorization requests only pushed to `/oauth2/par`.
    pub require_pushed_authorization_requests: bool,
    /// RFC 9101: authorization requests only as signed request objects
    /// (needs `jwks` or `jwks_uri`).
    pub require_signed_request_object: bool,
    /// RFC 9101: the one algorithm of the client's request objects.
    pub request_object_signing_alg: Option<String>,
    /// RFC 9449: every token request must carry a DPoP proof.
    pub dpop_bound_access_tokens: bool,
    /// RFC 8705: every token request over mutual TLS, the access tokens
    /// bound to the client's certificate.
    pub tls_client_certificate_bound_access_tokens: bool,
    /// RFC 8705 §2.1.2, for `tls_client_auth`: exactly one of the subject
    /// DN (RFC 4514) and the four alternative names.
    pub tls_client_auth_subject_dn: Option<String>,
    pub tls_client_auth_san_dns: Option<String>,
    pub tls_client_auth_san_uri: Option<String>,
    pub tls_client_auth_san_ip: Option<String>,
    pub tls_client_auth_san_email: Option<String>,
    /// Portico's own: the rules the client is held to, `standard`, `fapi2`
    /// or `fapi-ru`; left out, the bank's default
    /// (`registration.default_security_profile`) on registration, the
    /// current one on a `PUT`. Never `standard` when that default, or the
    /// client's current profile, is stricter.
    pub security_profile: Option<String>,
    /// Portico's own: whether each refresh hands out a new refresh token;
    /// left out, the profile's default (on, except under `fapi2`).
    pub refresh_token_rotation: Option<bool>,
    pub post_logout_redirect_uris: Vec<String>,
    pub backchannel_logout_uri: Option<String>,
    /// A JWT of an issuer the bank trusts, asserting metadata that takes
    /// precedence over the body's (RFC 7591 §2.3).
    pub software_statement: Option<String>,
    /// On `PUT` (RFC 7592): the client's id, which must match.
    pub client_id: Option<String>,
    /// On `PUT`: ignored unless given, and then it must be the current one.
    pub client_secret: Option<String>,
}

/// The metadata read and checked: what the admin service takes.
pub(super) struct Checked {
    /// The name for Russian pages and for English ones.
    pub(super) name_ru: Option<String>,
    pub(super) name_en: Option<String>,
    pub(super) security: ClientSecurity,
    /// The profile the metadata names, if any.
    pub(super) profile: Option<SecurityProfile>,
}

impl Checked {
    /// The profile named, unless it is `standard` under a stricter `floor`
    /// (the bank's default, or the client's current profile).
    pub(super) fn profile_over(&self, floor: SecurityProfile) -> Result<Option<SecurityProfile>, RegistrationError> {
        if self.profile == Some(SecurityProfile::Standard) && floor != SecurityProfile::Standard {
            return Err(RegistrationError::metadata(format!(
                "security_profile: standard is below this client's {floor} profile; only an operator can lower it"
            )));
        }
        Ok(self.profile)
    }
}

fn algorithm(name: &str, value: Option<&str>) -> Result<Option<Algorithm>, RegistrationError> {
    value
        .map(|v| {
            Algorithm::parse(v).ok_or_else(|| {
                RegistrationError::metadata(format!("{name}: {v:?} is not one of RS256, PS256, ES256, EdDSA"))
            })
        })
        .transpose()
}

/// A request object's algorithm: one Portico verifies, never `none` or a
/// symmetric one.
fn request_object_algorithm(value: Option<&str>) -> Result<Option<Algorithm>, RegistrationError> {
    value
        .map(|v| {
            Algorithm::parse(v).ok_or_else(|| {
                RegistrationError::metadata(format!(
                    "request_object_signing_alg: {v:?} is not one of PS256, ES256, EdDSA, RS256"
                ))
            })
        })
        .transpose()
}

impl ClientMetadata {
    pub(super) fn check(&self, certificates: CertificateSupport) -> Result<Checked, RegistrationError> {
        if self.redirect_uris.is_empty() {
            return Err(RegistrationError::redirect("redirect_uris: at least one redirect URI"));
        }
        for uri in self.redirect_uris.iter().chain(&self.post_logout_redirect_uris) {
            check_redirect(uri).map_err(RegistrationError::redirect)?;
        }
        if let Some(types) = &self.grant_types
            && (types.iter().any(|t| !GRANT_TYPES.contains(&t.as_str()))
                || !types.iter().any(|t| t == "authorization_code"))
        {
            return Err(RegistrationError::metadata(
                "grant_types: authorization_code, and refresh_token if wanted; no other grant is served",
            ));
        }
        if self.response_types.as_ref().is_some_and(|types| types.iter().any(|t| t != "code")) {
            return Err(RegistrationError::metadata("response_types: only code is served"));
        }
        let sites = web_hosts(&self.redirect_uris);
        for (name, uri) in [
            ("logo_uri", &self.logo_uri),
            ("client_uri", &self.client_uri),
            ("policy_uri", &self.policy_uri),
            ("tos_uri", &self.tos_uri),
        ] {
            if let Some(uri) = uri {
                check_page(uri, &sites).map_err(|problem| RegistrationError::metadata(format!("{name}: {problem}")))?;
            }
        }
        let method = match self.token_endpoint_auth_method.as_deref() {
            None => AuthMethod::ClientSecretBasic,
            Some(name) => AuthMethod::parse(name).ok_or_else(|| {
                // The methods this server offers (discovery's list), not
                // every one Portico knows.
                let offered: Vec<&str> =
                    AuthMethod::ALL.into_iter().filter(|m| certificates.takes(*m)).map(AuthMethod::as_str).collect();
                RegistrationError::metadata(format!(
                    "token_endpoint_auth_method: {name:?} is not one of {}",
                    offered.join(", ")
                ))
            })?,
        };
        let assertion_alg = self
            .token_endpoint_auth_signing_alg
            .as_deref()
            .map(|name| {
                name.parse::<AssertionAlgorithm>()
                    .map_err(|e| RegistrationError::metadata(format!("token_endpoint_auth_signing_alg: {e}")))
            })
            .transpose()?
            // Only the assertion methods read it (a method's own mismatch
            // is the admin service's to refuse).
            .filter(|_| method.sends_assertion());
        let security = ClientSecurity {
            token_endpoint_auth_method: method,
            jwks: self.jwks.clone(),
            jwks_uri: self.jwks_uri.clone(),
            token_endpoint_auth_signing_alg: assertion_alg,
            id_token_signed_response_alg: algorithm(
                "id_token_signed_response_alg",
                self.id_token_signed_response_alg.as_deref(),
            )?,
            userinfo_signed_response_alg: algorithm(
                "userinfo_signed_response_alg",
                self.userinfo_signed_response_alg.as_deref(),
            )?,
            access_token_signed_response_alg: algorithm(
                "access_token_signed_response_alg",
                self.access_token_signed_response_alg.as_deref(),
            )?,
            introspection_signed_response_alg: algorithm(
                "introspection_signed_response_alg",
                self.introspection_signed_response_alg.as_deref(),
            )?,
            authorization_signed_response_alg: algorithm(
                "authorization_signed_response_alg",
                self.authorization_signed_response_alg.as_deref(),
            )?,
            logo_uri: self.logo_uri.clone(),
            client_uri: self.client_uri.clone(),
            policy_uri: self.policy_uri.clone(),
            tos_uri: self.tos_uri.clone(),
            require_pushed_authorization_requests: self.require_pushed_authorization_requests,
            require_signed_request_object: self.require_signed_request_object,
            request_object_signing_alg: request_object_algorithm(self.request_object_signing_alg.as_deref())?,
            dpop_bound_access_tokens: self.dpop_bound_access_tokens,
            tls_client_certificate_bound_access_tokens: self.tls_client_certificate_bound_access_tokens,
            tls_client_auth_subject_dn: self.tls_client_auth_subject_dn.clone(),
            tls_client_auth_san_dns: self.tls_client_auth_san_dns.clone(),
            tls_client_auth_san_uri: self.tls_client_auth_san_uri.clone(),
            tls_client_auth_san_ip: self.tls_client_auth_san_ip.clone(),
            tls_client_auth_san_email: self.tls_client_auth_san_email.clone(),
            security_profile: SecurityProfile::Standard,
            refresh_token_rotation: self.refresh_token_rotation,
        };
        let profile = self
            .security_profile
            .as_deref()
            .map(|name| {
                SecurityProfile::parse(name).ok_or_else(|| {
                    RegistrationError::metadata(format!(
                        "security_profile: {name:?} is not one of standard, fapi2, fapi-ru"
                    ))
                })
            })
            .transpose()?;
        // A name in one language only serves the other too.
        let plain = self.client_name.as_ref();
        let name_ru = self.client_name_ru.as_ref().or(plain).or(self.client_name_en.as_ref()).cloned();
        let name_en = self.client_name_en.as_ref().or(plain).or(self.client_name_ru.as_ref()).cloned();
        Ok(Checked { name_ru, name_en, security, profile })
    }
}

/// An address of a page for people (a logo, home page, policy or terms):
/// absolute `https` with a host, without user information, at most
/// [`MAX_URL_LEN`] bytes (a fragment may name a part of the page); and,
/// when the client's redirect URIs name web hosts (`sites`), on one of them,
/// a domain above or below one, or beside one under its parent domain
/// ([`site_parent`]) (RFC 7591 §5: the consent page shows it
/// as the client's, so a third party cannot have it show the bank's pages
/// or another site's as its own). A client redirected to loopback only
/// (a native app) has no site to compare with.
fn check_page(uri: &str, sites: &[String]) -> Result<(), String> {
    if uri.len() > MAX_URL_LEN {
        return Err(format!("longer than {MAX_URL_LEN} bytes"));
    }
    let url = url::Url::parse(uri).map_err(|_| "an absolute https address".to_owned())?;
    let host = match url.host_str() {
        Some(host) if url.scheme() == "https" => host,
        _ => return Err("an absolute https address".into()),
    };
    if !url.username().is_empty() || url.password().is_some() {
        return Err("an https address without user information".into());
    }
    let related = |site: &String| {
        let site = site.as_str();
        host == site
            || under(host, site)
            || under(site, host)
            || site_parent(site).is_some_and(|parent| under(host, parent))
    };
    if !sites.is_empty() && !sites.iter().any(related) {
        return Err(format!(
            "{host} is not a host of the client's redirect URIs ({}), nor a domain above, below or beside \
             one: the consent page shows it as the client's own page",
            sites.join(", ")
        ));
    }
    Ok(())
}

/// Whether `host` is a subdomain of `domain`.
fn under(host: &str, domain: &str) -> bool {
    host.strip_suffix(domain).is_some_and(|sub| sub.len() > 1 && sub.ends_with('.'))
}

/// The domain a redirect host belongs to, whose other subdomains count as
/// the client's too (`www.fintech.example` beside `app.fintech.example`):
/// the host without its first label, when that still has two labels (so
/// `fintech.example` lends nothing to the rest of `.example`). Not for an
/// IP address.
fn site_parent(site: &str) -> Option<&str> {
    if site.starts_with('[') || site.parse::<std::net::Ipv4Addr>().is_ok() {
        return None;
    }
    site.split_once('.').map(|(_, parent)| parent).filter(|parent| parent.contains('.'))
}

/// The hosts of the `https` redirect URIs that are not loopback addresses,
/// lowercase, each once.
fn web_hosts(redirect_uris: &[String]) -> Vec<String> {
    let mut hosts: Vec<String> = redirect_uris
        .iter()
        .filter_map(|uri| url::Url::parse(uri).ok())
        .filter(|url| url.scheme() == "https" && !crate::service::is_loopback(url))
        .filter_map(|url| url.host_str().map(str::to_owned))
        .collect();
    hosts.sort();
    hosts.dedup();
    hosts
}

/// A redirect address a third party may register: absolute, without a
/// fragment or user information, `https`, or `http` on a loopback address.
fn check_redirect(uri: &str) -> Result<(), String> {
    crate::service::check_uri(uri)?;
    let scheme = uri.split(':').next().unwrap_or_default().to_ascii_lowercase();
    if scheme == "https" || scheme == "http" {
        Ok(())
    } else {
        Err(format!("{uri}: a registered client's addresses are https (or http on a loopback address)"))
    }
}

/// The JSON body, as RFC 7591 asks: `application/json`, at most
/// [`MAX_BODY`], with what its software statement asserts put over it.
pub(super) async fn read_metadata(
    registration: &Registration,
    headers: &HeaderMap,
    body: Body,
) -> Result<ClientMetadata, RegistrationError> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json")));
    if !json {
        return Err(RegistrationError::metadata("the body must be application/json"));
    }
    let bytes = axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|_| RegistrationError::metadata(format!("the body is larger than {MAX_BODY} bytes")))?;
    let not_metadata = |e: serde_json::Error| RegistrationError::metadata(format!("not valid client metadata: {e}"));
    let mut metadata: serde_json::Map<String, Value> = serde_json::from_slice(&bytes).map_err(not_metadata)?;
    // `null` is no statement, as it is no value for every other member.
    if metadata.get("software_statement").is_some_and(Value::is_null) {
        metadata.remove("software_statement");
    }
    match metadata.get("software_statement") {
        Some(Value::String(statement)) => {
            let now = registration.service.clock.now().unix_timestamp();
            let asserted = registration.statements.verify(statement, now)?;
            metadata.extend(asserted);
        }
        Some(_) => return Err(RegistrationError::statement("invalid_software_statement", "a JWT, as a string")),
        None if registration.statements.required => {
            return Err(RegistrationError::statement(
                "invalid_software_statement",
                "this bank registers only clients with a software statement of an issuer it trusts",
            ));
        }
        None => {}
    }
    refuse_what_is_not_offered(&metadata)?;
    take_regional_names(&mut metadata);
    serde_json::from_value(Value::Object(metadata)).map_err(not_metadata)
}

/// `client_name` tagged with a regional variant of Russian or English
/// (`client_name#ru-RU`, `client_name#en-GB`; tags are case-insensitive,
/// BCP 47) as the language's own name, unless that is given too; names in
/// other languages are not kept (the pages speak Russian and English).
fn take_regional_names(metadata: &mut serde_json::Map<String, Value>) {
    for language in ["ru", "en"] {
        let exact = format!("client_name#{language}");
        if metadata.get(&exact).is_some_and(|value| !value.is_null()) {
            continue;
        }
        let regional = metadata.keys().find(|key| {
            key.strip_prefix("client_name#")
                .and_then(|tag| tag.split('-').next())
                .is_some_and(|primary| primary.eq_ignore_ascii_case(language))
        });
        if let Some(key) = regional.cloned()
            && let Some(value) = metadata.remove(&key)
        {
            metadata.insert(exact, value);
        }
    }
}

/// Members of OpenID Connect Dynamic Client Registration 1.0 (and of the
/// specifications beside it) that ask for what Portico does not do, with
/// what to do instead. Ignored, they would leave the client believing its
/// tokens encrypted, its logouts announced or its users re-authenticated;
/// RFC 7591 §2 lets a server refuse a value it does not support, so a
/// registration naming one is refused.
const NOT_OFFERED: [(&str, &str); 14] = [
    ("id_token_encrypted_response_alg", "Portico signs ID tokens and does not encrypt them"),
    ("id_token_encrypted_response_enc", "Portico signs ID tokens and does not encrypt them"),
    (
        "userinfo_encrypted_response_alg",
        "Portico signs userinfo answers (userinfo_signed_response_alg) and does not encrypt them",
    ),
    (
        "userinfo_encrypted_response_enc",
        "Portico signs userinfo answers (userinfo_signed_response_alg) and does not encrypt them",
    ),
    ("request_object_encryption_alg", "Portico takes signed request objects, not encrypted ones"),
    ("request_object_encryption_enc", "Portico takes signed request objects, not encrypted ones"),
    (
        "authorization_encrypted_response_alg",
        "Portico signs authorization responses (authorization_signed_response_alg) and does not encrypt them",
    ),
    (
        "authorization_encrypted_response_enc",
        "Portico signs authorization responses (authorization_signed_response_alg) and does not encrypt them",
    ),
    (
        "introspection_encrypted_response_alg",
        "Portico signs introspection answers (introspection_signed_response_alg) and does not encrypt them",
    ),
    (
        "introspection_encrypted_response_enc",
        "Portico signs introspection answers (introspection_signed_response_alg) and does not encrypt them",
    ),
    (
        "frontchannel_logout_uri",
        "Portico tells clients of a logout over the back channel; register backchannel_logout_uri",
    ),
    ("default_max_age", "send max_age with each authorization request that needs a recent login"),
    (
        "default_acr_values",
        "Portico names no authentication context classes (acr_values_supported); the ID token's amr says how \
         the user signed in",
    ),
    (
        "request_uris",
        "Portico fetches no request objects (request_uri_parameter_supported is false); push the request to \
         /oauth2/par, or send it by value as request",
    ),
];

/// Refuses metadata asking for what Portico does not do ([`NOT_OFFERED`],
/// and subject identifiers other than `public`), and an `application_type`
/// OpenID Connect Registration does not define; `null` and an empty list
/// ask for nothing.
fn refuse_what_is_not_offered(metadata: &serde_json::Map<String, Value>) -> Result<(), RegistrationError> {
    let given = |name: &str| {
        metadata.get(name).filter(|value| !value.is_null() && value.as_array().is_none_or(|list| !list.is_empty()))
    };
    if let Some((name, instead)) = NOT_OFFERED.iter().find(|(name, _)| given(name).is_some()) {
        return Err(RegistrationError::metadata(format!("{name}: not offered; {instead}")));
    }
    match given("subject_type") {
        None => {}
        Some(Value::String(kind)) if kind == "public" => {}
        Some(_) => {
            return Err(RegistrationError::metadata(
                "subject_type: Portico issues public subject identifiers only (subject_types_supported)",
            ));
        }
    }
    // Not kept: the redirect rules are the same for both kinds (`https`,
    // or `http` on a loopback address, which RFC 8252 gives native apps).
    match given("application_type") {
        None => Ok(()),
        Some(Value::String(kind)) if kind == "web" || kind == "native" => Ok(()),
        Some(_) => Err(RegistrationError::metadata(
            "application_type: web or native (OpenID Connect Registration §2); left out, web",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::{check_page, web_hosts};

    #[test]
    fn a_page_sits_on_a_redirect_host_or_a_domain_above_below_or_beside_it() {
        let sites = web_hosts(&[
            "https://App.Fintech.example/cb".into(),
            "https://app.fintech.example/other".into(),
            "http://127.0.0.1:8080/cb".into(),
            "com.fintech.app:/cb".into(),
        ]);
        assert_eq!(sites, ["app.fintech.example"], "web hosts only, lowercase, once");
        for page in [
            "https://app.fintech.example/privacy",
            "https://FINTECH.example/terms",
            "https://legal.app.fintech.example/",
            "https://www.fintech.example/privacy",
        ] {
            assert_eq!(check_page(page, &sites), Ok(()), "{page}");
        }
        for page in [
            "https://bank.example/privacy",
            "https://evilapp.example/",
            "https://www.fintech.example.evil/",
            "https://fintech.example.evil/",
        ] {
            assert!(check_page(page, &sites).is_err(), "{page}");
        }
        // A host of two labels lends nothing to its neighbours; an address
        // has none.
        let short = web_hosts(&["https://fintech.example/cb".into(), "https://10.1.2.3/cb".into()]);
        assert!(check_page("https://bank.example/", &short).is_err());
        assert!(check_page("https://10.1.2.4/", &short).is_err() && check_page("https://1.2.3/", &short).is_err());
        assert_eq!(check_page("https://10.1.2.3/privacy", &short), Ok(()));
        let loopback_only =
            web_hosts(&["http://127.0.0.1/cb".into(), "https://[::1]/cb".into(), "https://localhost/cb".into()]);
        assert!(loopback_only.is_empty());
        assert_eq!(check_page("https://fintech.example/privacy", &loopback_only), Ok(()), "no site to compare with");
        assert!(check_page("http://fintech.example/privacy", &loopback_only).is_err(), "https only");
    }
}
