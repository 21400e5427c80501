//! Client applications (OAuth relying parties).

use crate::ids::ClientId;
use crate::key::Algorithm;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// A registered client system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    pub client_id: ClientId,
    /// Hash of the client secret (see `portico_crypto::secret`), never the secret.
    pub secret_hash: String,
    pub name: LocalizedText,
    /// Redirect URIs, compared by exact string match.
    pub redirect_uris: Vec<String>,
    /// Scopes this client may request.
    pub scopes: Vec<String>,
    /// Whether the user must consent before this client gets a code.
    pub require_consent: bool,
    /// Where RP-initiated logout may return the browser, compared by exact
    /// string match.
    pub post_logout_redirect_uris: Vec<String>,
    /// Ending a single sign-on session revokes the grants this client got
    /// under it (its refresh tokens and access tokens die with them).
    pub logout_revokes_grants: bool,
    /// Where back-channel logout tokens are posted when a session the client
    /// has a grant under ends (OpenID Connect Back-Channel Logout 1.0).
    pub backchannel_logout_uri: Option<String>,
    /// How the client authenticates and which algorithms sign for it.
    pub security: ClientSecurity,
    /// The secret sealed with the instance secret, kept only for a
    /// `client_secret_jwt` client, whose assertions are checked with the
    /// secret itself (HS256); every other client has only the hash.
    pub secret_sealed: Option<String>,
    /// For a client that registered itself (RFC 7591): the hash of the
    /// registration access token it manages its registration with (RFC 7592).
    pub registration_token_hash: Option<String>,
    /// A registration held for an operator's approval
    /// (`registration.require_approval`): the client cannot authenticate
    /// or start a login until an operator approves it.
    pub awaiting_approval: bool,
    pub created_at: OffsetDateTime,
    /// The stored row's revision: each update adds one, and an update made
    /// from an older read is refused, so two changes at once never undo
    /// each other. `0` for a client not stored yet.
    pub revision: u64,
}

impl Client {
    /// Whether `uri` is one of the client's redirect URIs: the same string
    /// (RFC 9700 §4.1.1), except that a registered `http` address on a
    /// loopback IP literal matches at any port (RFC 8252 §7.3: a native
    /// app listens on whatever port its system gives it) unless the
    /// client's profile asks for exact matching.
    pub fn has_redirect_uri(&self, uri: &str) -> bool {
        let any_port = !self.security.security_profile.takes_exact_https_redirects();
        self.redirect_uris
            .iter()
            .any(|registered| registered == uri || (any_port && same_but_loopback_port(registered, uri)))
    }

    pub fn has_post_logout_redirect_uri(&self, uri: &str) -> bool {
        self.post_logout_redirect_uris.iter().any(|u| u == uri)
    }

    pub fn allows_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

/// Whether `uri` is an `https` address (its scheme in any case).
pub fn is_https(uri: &str) -> bool {
    uri.get(..8).is_some_and(|start| start.eq_ignore_ascii_case("https://"))
}

/// Whether two addresses are the same `http` address on the same loopback
/// IP literal (`127.0.0.1`, `[::1]`; not `localhost`, which a name server
/// may answer, RFC 8252 §8.3) but for the port: the rest is compared as
/// written, never normalized.
fn same_but_loopback_port(registered: &str, requested: &str) -> bool {
    /// The host and what follows the port.
    fn split(uri: &str) -> Option<(&str, &str)> {
        let rest = uri.strip_prefix("http://")?;
        let host = ["127.0.0.1", "[::1]"].into_iter().find(|host| rest.starts_with(host))?;
        let rest = &rest[host.len()..];
        let rest = match rest.strip_prefix(':') {
            Some(port) => {
                let digits = port.bytes().take_while(u8::is_ascii_digit).count();
                port[..digits].parse::<u16>().ok().filter(|port| *port > 0)?;
                &port[digits..]
            }
            None => rest,
        };
        (rest.is_empty() || rest.starts_with(['/', '?'])).then_some((host, rest))
    }
    matches!((split(registered), split(requested)), (Some(a), Some(b)) if a == b)
}

/// How a client authenticates at the token, revocation and introspection
/// endpoints (RFC 7591 `token_endpoint_auth_method`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuthMethod {
    /// The secret in a `Basic` header (RFC 6749 §2.3.1); such a client may
    /// also send it in the body, as Portico's clients always could.
    #[default]
    ClientSecretBasic,
    /// The secret in the body; such a client may also use `Basic`.
    ClientSecretPost,
    /// An assertion signed with HS256 under the secret (OIDC Core §9).
    ClientSecretJwt,
    /// An assertion signed with one of the client's own keys (RFC 7523).
    PrivateKeyJwt,
    /// Mutual TLS with a certificate of a trusted authority that names the
    /// client's registered subject (RFC 8705 §2.1).
    TlsClientAuth,
    /// Mutual TLS with a certificate the client registered in its JWK
    /// Set (`x5c`), self-signed or not (RFC 8705 §2.2).
    SelfSignedTlsClientAuth,
}

impl AuthMethod {
    pub const ALL: [Self; 6] = [
        Self::ClientSecretBasic,
        Self::ClientSecretPost,
        Self::ClientSecretJwt,
        Self::PrivateKeyJwt,
        Self::TlsClientAuth,
        Self::SelfSignedTlsClientAuth,
    ];

    /// The RFC 7591 name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ClientSecretBasic => "client_secret_basic",
            Self::ClientSecretPost => "client_secret_post",
            Self::ClientSecretJwt => "client_secret_jwt",
            Self::PrivateKeyJwt => "private_key_jwt",
            Self::TlsClientAuth => "tls_client_auth",
            Self::SelfSignedTlsClientAuth => "self_signed_tls_client_auth",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|method| method.as_str() == name)
    }

    /// Whether the client proves itself with a shared secret sent as it is.
    pub const fn sends_secret(self) -> bool {
        matches!(self, Self::ClientSecretBasic | Self::ClientSecretPost)
    }

    /// Whether the client proves itself with its secret, as it is or as
    /// the key of its assertions: only such a client is given one.
    pub const fn uses_secret(self) -> bool {
        self.sends_secret() || matches!(self, Self::ClientSecretJwt)
    }

    /// Whether the client proves itself with a signed assertion (RFC 7523).
    pub const fn sends_assertion(self) -> bool {
        matches!(self, Self::ClientSecretJwt | Self::PrivateKeyJwt)
    }

    /// Whether the client proves itself by its TLS client certificate.
    pub const fn uses_certificate(self) -> bool {
        matches!(self, Self::TlsClientAuth | Self::SelfSignedTlsClientAuth)
    }
}

impl std::fmt::Display for AuthMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `token_endpoint_auth_signing_alg` (OpenID Connect Dynamic Client
/// Registration 1.0 §2): the one algorithm the client's assertions may be
/// signed with — a key algorithm under `private_key_jwt`, HS256 under
/// `client_secret_jwt`. Serialized as its JWA name; `Ed25519` (RFC 9864's
/// name for the same signatures) is read as `EdDSA`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub enum AssertionAlgorithm {
    #[serde(rename = "RS256")]
    Rs256,
    #[serde(rename = "PS256")]
    Ps256,
    #[serde(rename = "ES256")]
    Es256,
    #[serde(rename = "EdDSA", alias = "Ed25519")]
    EdDsa,
    /// HMAC with SHA-256 under the client's secret (`client_secret_jwt`).
    #[serde(rename = "HS256")]
    Hs256,
}

impl AssertionAlgorithm {
    pub const ALL: [Self; 5] = [Self::Ps256, Self::Es256, Self::EdDsa, Self::Rs256, Self::Hs256];

    /// The JWA name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Rs256 => "RS256",
            Self::Ps256 => "PS256",
            Self::Es256 => "ES256",
            Self::EdDsa => "EdDSA",
            Self::Hs256 => "HS256",
        }
    }

    /// The algorithm named exactly `name` (`Ed25519` included).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "Ed25519" => Some(Self::EdDsa),
            name => Self::ALL.into_iter().find(|alg| alg.as_str() == name),
        }
    }

    /// The key algorithm it is; `None` for HS256.
    pub const fn key(self) -> Option<Algorithm> {
        match self {
            Self::Rs256 => Some(Algorithm::Rs256),
            Self::Ps256 => Some(Algorithm::Ps256),
            Self::Es256 => Some(Algorithm::Es256),
            Self::EdDsa => Some(Algorithm::EdDsa),
            Self::Hs256 => None,
        }
    }

    /// Whether assertions of `method` can be signed with it: a key
    /// algorithm for `private_key_jwt`, HS256 for `client_secret_jwt`,
    /// nothing for a method without assertions.
    pub const fn fits(self, method: AuthMethod) -> bool {
        match method {
            AuthMethod::PrivateKeyJwt => self.key().is_some(),
            AuthMethod::ClientSecretJwt => matches!(self, Self::Hs256),
            _ => false,
        }
    }
}

impl std::str::FromStr for AssertionAlgorithm {
    type Err = String;

    /// As [`AssertionAlgorithm::parse`]; the error names every algorithm.
    fn from_str(name: &str) -> Result<Self, String> {
        Self::parse(name).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.into_iter().map(Self::as_str).collect();
            format!("{name:?} is not one of {}", names.join(", "))
        })
    }
}

impl std::fmt::Display for AssertionAlgorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A client's authentication and signing choices, named as in RFC 7591 and
/// OpenID Connect Dynamic Client Registration 1.0. An algorithm left unset
/// is the server's default (`tokens.signing_algorithm`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClientSecurity {
    pub token_endpoint_auth_method: AuthMethod,
    /// The client's public keys by value: a JWK Set (`private_key_jwt`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jwks: Option<serde_json::Value>,
    /// Where the client publishes its public keys (`private_key_jwt`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    /// The one algorithm the client's assertions may be signed with; unset,
    /// any its method takes. A member nodes of releases before it cannot
    /// read: a client that sets it is served by the new release only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_signing_alg: Option<AssertionAlgorithm>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_token_signed_response_alg: Option<Algorithm>,
    /// When set, userinfo answers a JWT signed with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub userinfo_signed_response_alg: Option<Algorithm>,
    /// Portico's own: the algorithm of the client's access tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_token_signed_response_alg: Option<Algorithm>,
    /// RFC 9701: the algorithm of JWT introspection answers to this client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub introspection_signed_response_alg: Option<Algorithm>,
    /// The client's logo (RFC 7591 `logo_uri`), an `https` address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logo_uri: Option<String>,
    /// The client's home page (RFC 7591 `client_uri`), an `https` address
    /// the consent page links to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_uri: Option<String>,
    /// How the client treats the user's data (RFC 7591 `policy_uri`), an
    /// `https` address the consent page links to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_uri: Option<String>,
    /// The client's terms of service (RFC 7591 `tos_uri`), an `https`
    /// address the consent page links to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tos_uri: Option<String>,
    /// RFC 9126: authorization requests only by `request_uri` from a
    /// pushed request.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub require_pushed_authorization_requests: bool,
    /// RFC 9101: authorization requests only as a signed request object
    /// (by value, at authorize or pushed).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub require_signed_request_object: bool,
    /// The only algorithm the client's request objects may be signed with;
    /// unset, any asymmetric one Portico verifies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_object_signing_alg: Option<Algorithm>,
    /// JARM: the algorithm of the client's signed authorization responses
    /// (`response_mode` `jwt`, `query.jwt`, `form_post.jwt`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authorization_signed_response_alg: Option<Algorithm>,
    /// RFC 9449: every token request must carry a DPoP proof, so that every
    /// access token of the client is bound to its key.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dpop_bound_access_tokens: bool,
    /// RFC 8705 §2.1.2, `tls_client_auth`: the certificate's subject
    /// distinguished name (RFC 4514); exactly one of this and the four
    /// alternative names below.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_client_auth_subject_dn: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_client_auth_san_dns: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_client_auth_san_uri: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_client_auth_san_ip: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_client_auth_san_email: Option<String>,
    /// RFC 8705: every token request must come over mutual TLS, and the
    /// access tokens are bound to the client's certificate.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tls_client_certificate_bound_access_tokens: bool,
    /// The rules the client is held to beyond its own settings.
    #[serde(skip_serializing_if = "SecurityProfile::is_standard")]
    pub security_profile: SecurityProfile,
    /// Whether each refresh hands out a new refresh token and spends the
    /// old one; unset, the profile's default (on, except under `fapi2`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_token_rotation: Option<bool>,
}

/// The rules a client is held to (`security_profile`): `standard` is the
/// client's own settings and nothing more; `fapi2` the OpenID FAPI 2.0
/// Security Profile; `fapi-ru` the advanced profile of the Bank of
/// Russia's СТО БР ФАПИ.СЕК-1.6-2024. A profile adds to the client's
/// settings, never takes from them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
pub enum SecurityProfile {
    #[default]
    #[serde(rename = "standard")]
    Standard,
    /// Pushed requests, PKCE S256, `private_key_jwt` or mutual TLS,
    /// DPoP- or certificate-bound tokens, PS256/ES256/EdDSA only, codes
    /// valid 60 s, no refresh-token rotation.
    #[serde(rename = "fapi2")]
    Fapi2,
    /// A signed request object, a signed (JARM) response,
    /// certificate-bound tokens, `tls_client_auth` or `private_key_jwt`,
    /// elliptic-curve signatures (ES256) only.
    #[serde(rename = "fapi-ru")]
    FapiRu,
}

impl SecurityProfile {
    pub const ALL: [Self; 3] = [Self::Standard, Self::Fapi2, Self::FapiRu];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Standard => "standard",
            Self::Fapi2 => "fapi2",
            Self::FapiRu => "fapi-ru",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|profile| profile.as_str() == name)
    }

    pub fn is_standard(&self) -> bool {
        *self == Self::Standard
    }

    /// The client authentication methods the profile allows (`None`: any).
    pub const fn auth_methods(self) -> Option<&'static [AuthMethod]> {
        match self {
            Self::Standard => None,
            Self::Fapi2 => {
                Some(&[AuthMethod::PrivateKeyJwt, AuthMethod::TlsClientAuth, AuthMethod::SelfSignedTlsClientAuth])
            }
            Self::FapiRu => Some(&[AuthMethod::TlsClientAuth, AuthMethod::PrivateKeyJwt]),
        }
    }

    /// The signature algorithms the profile allows, for what Portico signs
    /// for the client and for what the client signs (assertions, request
    /// objects, DPoP proofs), in Portico's order of preference (`None`: any).
    pub const fn algorithms(self) -> Option<&'static [Algorithm]> {
        match self {
            Self::Standard => None,
            Self::Fapi2 => Some(&[Algorithm::Es256, Algorithm::Ps256, Algorithm::EdDsa]),
            Self::FapiRu => Some(&[Algorithm::Es256]),
        }
    }

    pub fn allows_algorithm(self, alg: Algorithm) -> bool {
        self.algorithms().is_none_or(|allowed| allowed.contains(&alg))
    }

    pub fn allows_auth_method(self, method: AuthMethod) -> bool {
        self.auth_methods().is_none_or(|allowed| allowed.contains(&method))
    }

    /// Whether a client assertion's `aud` must be the issuer alone, as a
    /// string (FAPI 2.0 §5.3.2.1), where other clients may also name the
    /// endpoint's address or give a list (RFC 7523, RFC 9126 §2).
    pub const fn takes_issuer_alone_as_audience(self) -> bool {
        matches!(self, Self::Fapi2)
    }

    /// Whether a request object must carry `nbf` (FAPI 1.0 Advanced
    /// §5.2.2-17, which ФАПИ.СЕК's advanced profile builds on); other
    /// clients' objects may leave it out (RFC 9101).
    pub const fn requires_request_object_nbf(self) -> bool {
        matches!(self, Self::FapiRu)
    }

    /// Whether a request that asks for `openid` must carry a `nonce` (FAPI
    /// 1.0 Baseline §5.2.2.2, which FAPI 1.0 Advanced §5.2.2 and so
    /// ФАПИ.СЕК's advanced profile take); other clients' code-flow requests
    /// may leave it out (OpenID Connect Core §3.1.2.1), and FAPI 2.0 binds
    /// the code with PKCE instead.
    pub const fn requires_nonce_with_openid(self) -> bool {
        matches!(self, Self::FapiRu)
    }

    /// Whether the client's authorization requests must carry a `state`
    /// (`openid`: the request asks for it). The contract's clients always
    /// send one; RFC 6749 §4.1.1 makes it optional, and FAPI 2.0 binds the
    /// answer to its request with PKCE (its conformance tests expect a
    /// request without one to succeed); FAPI 1.0 Baseline §5.2.2.3, which
    /// ФАПИ.СЕК builds on, requires it of requests without `openid`, whose
    /// `nonce` is required instead (§5.2.2.2).
    pub const fn requires_state(self, openid: bool) -> bool {
        match self {
            Self::Standard => true,
            Self::Fapi2 => false,
            Self::FapiRu => !openid,
        }
    }

    /// Whether the client's redirect URIs are `https` only (FAPI 1.0
    /// Baseline §5.2.2-20, where the demo and local development do not
    /// allow insecure addresses) and a request's must match one exactly
    /// (§5.2.2-10: RFC 8252's loopback port rule does not apply).
    pub const fn takes_exact_https_redirects(self) -> bool {
        matches!(self, Self::FapiRu)
    }

    /// The longest an authorization code lives under the profile.
    pub const fn max_code_ttl(self) -> Option<time::Duration> {
        match self {
            Self::Fapi2 => Some(time::Duration::seconds(60)),
            Self::Standard | Self::FapiRu => None,
        }
    }

    /// The algorithms, as a reader lists them: `PS256, ES256 or EdDSA`.
    pub fn algorithms_text(self) -> String {
        let names: Vec<&str> = self.algorithms().unwrap_or(&Algorithm::ALL).iter().map(|a| a.as_str()).collect();
        join_or(&names)
    }

    /// The authentication methods, as a reader lists them.
    pub fn auth_methods_text(self) -> String {
        let names: Vec<&str> = self.auth_methods().unwrap_or(&AuthMethod::ALL).iter().map(|m| m.as_str()).collect();
        join_or(&names)
    }
}

impl std::fmt::Display for SecurityProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `a, b or c`.
fn join_or(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

impl ClientSecurity {
    /// Authorization requests only pushed: the client's own setting, or
    /// its profile's (`fapi2`).
    pub fn requires_pushed_requests(&self) -> bool {
        self.require_pushed_authorization_requests || self.security_profile == SecurityProfile::Fapi2
    }

    /// Authorization requests only as signed request objects: the client's
    /// own setting, or its profile's (`fapi-ru`).
    pub fn requires_signed_request_object(&self) -> bool {
        self.require_signed_request_object || self.security_profile == SecurityProfile::FapiRu
    }

    /// Authorization responses only signed (JARM): the profile's (`fapi-ru`).
    pub fn requires_signed_response(&self) -> bool {
        self.security_profile == SecurityProfile::FapiRu
    }

    /// Access tokens always bound to the client's certificate: the
    /// client's own setting, or its profile's (`fapi-ru`).
    pub fn binds_to_certificate(&self) -> bool {
        self.tls_client_certificate_bound_access_tokens || self.security_profile == SecurityProfile::FapiRu
    }

    /// Access tokens always sender-constrained, by DPoP or by the client's
    /// certificate, whichever the request brings (`fapi2`).
    pub fn requires_sender_constraint(&self) -> bool {
        self.security_profile == SecurityProfile::Fapi2
    }

    /// Whether a refresh spends the presented refresh token and hands out
    /// a new one.
    pub fn rotates_refresh_tokens(&self) -> bool {
        self.refresh_token_rotation.unwrap_or(self.security_profile != SecurityProfile::Fapi2)
    }

    /// What of the client's own settings its profile forbids, by RFC 7591
    /// name: an authentication method or an algorithm outside the profile's.
    pub fn profile_conflicts(&self) -> Vec<(&'static str, String)> {
        let profile = self.security_profile;
        let mut conflicts = Vec::new();
        if !profile.allows_auth_method(self.token_endpoint_auth_method) {
            conflicts.push((
                "token_endpoint_auth_method",
                format!(
                    "the {profile} profile authenticates clients by {}, not {}",
                    profile.auth_methods_text(),
                    self.token_endpoint_auth_method
                ),
            ));
        }
        let named =
            self.algorithms().chain(self.request_object_signing_alg.map(|a| ("request_object_signing_alg", a))).chain(
                self.token_endpoint_auth_signing_alg
                    .and_then(AssertionAlgorithm::key)
                    .map(|a| ("token_endpoint_auth_signing_alg", a)),
            );
        for (name, alg) in named {
            if !profile.allows_algorithm(alg) {
                conflicts
                    .push((name, format!("the {profile} profile signs with {}, not {alg}", profile.algorithms_text())));
            }
        }
        conflicts
    }

    /// The `tls_client_auth` subject fields given, by name.
    pub fn tls_client_auth_subject(&self) -> impl Iterator<Item = (&'static str, &str)> + '_ {
        [
            ("tls_client_auth_subject_dn", &self.tls_client_auth_subject_dn),
            ("tls_client_auth_san_dns", &self.tls_client_auth_san_dns),
            ("tls_client_auth_san_uri", &self.tls_client_auth_san_uri),
            ("tls_client_auth_san_ip", &self.tls_client_auth_san_ip),
            ("tls_client_auth_san_email", &self.tls_client_auth_san_email),
        ]
        .into_iter()
        .filter_map(|(name, value)| value.as_deref().map(|value| (name, value)))
    }

    /// Each algorithm Portico signs with for the client, by RFC 7591 name,
    /// set or not (unset: the server's default, and for userinfo no
    /// signature at all).
    pub fn signing_choices(&self) -> [(&'static str, Option<Algorithm>); 5] {
        [
            ("id_token_signed_response_alg", self.id_token_signed_response_alg),
            ("userinfo_signed_response_alg", self.userinfo_signed_response_alg),
            ("access_token_signed_response_alg", self.access_token_signed_response_alg),
            ("introspection_signed_response_alg", self.introspection_signed_response_alg),
            ("authorization_signed_response_alg", self.authorization_signed_response_alg),
        ]
    }

    /// Every algorithm named here, for checking that the server has a key
    /// of each.
    pub fn algorithms(&self) -> impl Iterator<Item = (&'static str, Algorithm)> + '_ {
        self.signing_choices().into_iter().filter_map(|(name, alg)| alg.map(|alg| (name, alg)))
    }
}

/// A display text in the two languages of the login pages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalizedText {
    pub ru: String,
    pub en: String,
}

impl LocalizedText {
    pub fn same(text: impl Into<String>) -> Self {
        let text = text.into();
        Self { ru: text.clone(), en: text }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_redirect_uri_matches_at_any_port_and_nothing_else_varies() {
        let same = |registered, requested| same_but_loopback_port(registered, requested);
        assert!(same("http://127.0.0.1/cb", "http://127.0.0.1:53124/cb"));
        assert!(same("http://127.0.0.1:8080/cb?x=1", "http://127.0.0.1:9/cb?x=1"));
        assert!(same("http://[::1]:1/", "http://[::1]/"));
        assert!(same("http://127.0.0.1:7", "http://127.0.0.1:8"));
        for (registered, requested) in [
            ("http://127.0.0.1/cb", "http://127.0.0.1:53124/cb/"),
            ("http://127.0.0.1/cb", "http://127.0.0.1:53124/CB"),
            ("http://127.0.0.1/cb", "http://127.0.0.1:53124/./cb"),
            ("http://127.0.0.1/cb", "http://[::1]:53124/cb"),
            ("http://127.0.0.1/cb", "http://127.0.0.2:53124/cb"),
            ("http://127.0.0.1/cb", "http://127.0.0.1.evil.example/cb"),
            ("http://127.0.0.1/cb", "http://127.0.0.1:53124@evil.example/cb"),
            ("http://127.0.0.1/cb", "http://127.0.0.1:65536/cb"),
            ("http://127.0.0.1/cb", "http://127.0.0.1:/cb"),
            ("http://127.0.0.1/cb", "https://127.0.0.1:53124/cb"),
            ("http://localhost/cb", "http://localhost:53124/cb"),
            ("https://127.0.0.1/cb", "https://127.0.0.1:53124/cb"),
            ("https://bank.example/cb", "https://bank.example:8443/cb"),
        ] {
            assert!(!same(registered, requested), "{registered} {requested}");
        }
    }

    #[test]
    fn https_is_the_scheme_in_any_case() {
        assert!(is_https("https://bank.example/cb") && is_https("HTTPS://bank.example/cb"));
        for uri in ["http://127.0.0.1/cb", "https:/bank.example", "https", "com.bank.app:/cb", "httpsx://a", ""] {
            assert!(!is_https(uri), "{uri}");
        }
    }

    #[test]
    fn profiles_are_named_as_registration_names_them() {
        for profile in SecurityProfile::ALL {
            assert_eq!(SecurityProfile::parse(profile.as_str()), Some(profile));
            let json = serde_json::to_value(profile).unwrap();
            assert_eq!(json, profile.as_str());
        }
        assert_eq!(SecurityProfile::parse("FAPI2"), None, "names are exact");
    }

    #[test]
    fn a_profile_adds_rules_and_names_what_it_forbids() {
        let mut security = ClientSecurity {
            id_token_signed_response_alg: Some(Algorithm::Rs256),
            request_object_signing_alg: Some(Algorithm::Ps256),
            ..ClientSecurity::default()
        };
        assert!(security.profile_conflicts().is_empty(), "standard forbids nothing");
        assert!(security.rotates_refresh_tokens() && !security.requires_pushed_requests());

        security.security_profile = SecurityProfile::Fapi2;
        let named: Vec<&str> = security.profile_conflicts().iter().map(|(name, _)| *name).collect();
        assert_eq!(named, ["token_endpoint_auth_method", "id_token_signed_response_alg"]);
        assert!(security.requires_pushed_requests() && security.requires_sender_constraint());
        assert!(!security.rotates_refresh_tokens(), "FAPI 2.0 does not rotate");
        security.refresh_token_rotation = Some(true);
        assert!(security.rotates_refresh_tokens(), "the client's own setting wins");

        security.security_profile = SecurityProfile::FapiRu;
        let named: Vec<&str> = security.profile_conflicts().iter().map(|(name, _)| *name).collect();
        assert_eq!(named, ["token_endpoint_auth_method", "id_token_signed_response_alg", "request_object_signing_alg"]);
        assert!(security.requires_signed_request_object() && security.binds_to_certificate());
        assert!(security.requires_signed_response() && !security.requires_pushed_requests());
        assert_eq!(SecurityProfile::Fapi2.algorithms_text(), "ES256, PS256 or EdDSA");

        security.token_endpoint_auth_signing_alg = Some(AssertionAlgorithm::Rs256);
        let named: Vec<&str> = security.profile_conflicts().iter().map(|(name, _)| *name).collect();
        assert_eq!(named.last(), Some(&"token_endpoint_auth_signing_alg"), "{named:?}");
    }

    #[test]
    fn an_assertion_algorithm_fits_its_method_and_reads_ed25519_as_eddsa() {
        assert_eq!(AssertionAlgorithm::parse("Ed25519"), Some(AssertionAlgorithm::EdDsa));
        assert_eq!(serde_json::from_value::<AssertionAlgorithm>("Ed25519".into()).unwrap(), AssertionAlgorithm::EdDsa);
        for alg in AssertionAlgorithm::ALL {
            assert_eq!(AssertionAlgorithm::parse(alg.as_str()), Some(alg));
            assert_eq!(serde_json::to_value(alg).unwrap(), alg.as_str());
        }
        assert_eq!(AssertionAlgorithm::parse("none"), None);
        assert_eq!(
            "none".parse::<AssertionAlgorithm>(),
            Err("\"none\" is not one of PS256, ES256, EdDSA, RS256, HS256".into())
        );
        assert!(AuthMethod::PrivateKeyJwt.sends_assertion() && !AuthMethod::TlsClientAuth.sends_assertion());
        assert_eq!(AssertionAlgorithm::parse("es256"), None, "names are exact");
        assert!(AssertionAlgorithm::Es256.fits(AuthMethod::PrivateKeyJwt));
        assert!(!AssertionAlgorithm::Hs256.fits(AuthMethod::PrivateKeyJwt));
        assert!(AssertionAlgorithm::Hs256.fits(AuthMethod::ClientSecretJwt));
        assert!(!AssertionAlgorithm::Ps256.fits(AuthMethod::ClientSecretJwt));
        assert!(!AssertionAlgorithm::Ps256.fits(AuthMethod::TlsClientAuth));
    }
}
