//! Client authentication at the token, revocation, introspection and PAR
//! endpoints: `client_secret_basic` and `client_secret_post` (RFC 6749
//! §2.3.1), `private_key_jwt` (RFC 7523), `client_secret_jwt` (OIDC Core
//! §9), and by the request's TLS client certificate as [`crate::mtls`]
//! read it (RFC 8705, the request naming the client by `client_id`):
//! `tls_client_auth` (a certificate of an authority of
//! `mtls.client_ca_file` that names the client's registered subject) and
//! `self_signed_tls_client_auth` (a certificate the client registered in
//! its JWK Set's `x5c`).
//!
//! A client authenticates the way it is registered for: a client with a
//! secret method by its secret (in the header or the body, both as ever),
//! a key or JWT method only by an assertion. An assertion is checked with
//! the client's keys or secret ([`crate::client_keys`] and
//! [`portico_crypto::jose`]), and its `jti` is remembered in storage until
//! it expires, so that it is accepted once on any node. The token endpoint
//! remembers it in the write that redeems the code or rotates the refresh
//! token (the same statement and commit); nothing is spent or issued for a
//! replayed assertion.
//!
//! The Basic credentials may be standard Base64 (RFC 7617) or Base64URL (as
//! the client guide shows), padded or not; each half is form-urlencoded as
//! RFC 6749 §2.3.1 asks and is decoded accordingly.

use axum::http::{HeaderMap, header};
use base64::Engine as _;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use portico_crypto::certificate::{ClientCertificate, Presented, SubjectRule};
use portico_crypto::jose::{self, AssertionError};
use portico_model::client::{AuthMethod, Client};
use portico_model::ids::ClientId;
use portico_model::oauth::AssertionJti;
use time::OffsetDateTime;

use super::error::OAuthError;
use super::forms::ClientCredentials;
use crate::Identity;

const LENIENT: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
const STANDARD: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, LENIENT);
const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, LENIENT);

/// The one `client_assertion_type` (RFC 7523 §2.2).
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// Authenticates the calling client at the endpoint `path` (which an
/// assertion's `aud` may name beside the issuer).
///
/// # Errors
/// 401 `invalid_client` for missing, malformed or wrong credentials, or
/// credentials of another method than the client's; 400 `invalid_request`
/// when two methods are used at once.
pub async fn authenticate(
    identity: &Identity,
    headers: &HeaderMap,
    certificate: Option<&Presented>,
    credentials: &ClientCredentials,
    path: &str,
) -> Result<Client, OAuthError> {
    let (client, pending) = authenticate_deferred(identity, headers, certificate, credentials, path).await?;
    remember(identity, pending).await?;
    Ok(client)
}

/// An accepted assertion's `jti`, still to be remembered (see
/// [`authenticate_deferred`]); or, for a client without an assertion, its
/// DPoP proof's, remembered the same way (one write less per token
/// request).
#[derive(Debug)]
pub struct PendingJti {
    jti: AssertionJti,
    now: OffsetDateTime,
    /// It is a DPoP proof's.
    proof: bool,
}

impl PendingJti {
    /// A checked DPoP proof's `jti`, still to be remembered.
    pub fn proof(proof: &portico_crypto::dpop::Proof, now: OffsetDateTime) -> Self {
        Self { jti: portico_tokens::proof_jti(proof, now), now, proof: true }
    }

    /// Whether it is a DPoP proof's.
    pub fn is_proof(&self) -> bool {
        self.proof
    }

    /// The `jti` for the write that remembers it with the grant's own.
    pub fn into_jti(self) -> AssertionJti {
        self.jti
    }
}

/// The answer to a `jti` found used before: the assertion's or the proof's.
pub fn replayed_as(proof: bool) -> OAuthError {
    if proof { crate::dpop::proof_replayed() } else { replayed() }
}

/// A replayed assertion's answer (and its count).
pub fn replayed() -> OAuthError {
    metrics::counter!("portico_client_assertion_replays_total").increment(1);
    OAuthError::invalid_client("the client assertion was used before (jti)")
}

/// Remembers an accepted assertion's `jti` on its own (nothing without
/// one).
///
/// # Errors
/// 401 `invalid_client` when the assertion was used before; a storage
/// failure.
pub async fn remember(identity: &Identity, pending: Option<PendingJti>) -> Result<(), OAuthError> {
    let Some(PendingJti { jti, now, proof }) = pending else { return Ok(()) };
    if identity.store.remember_client_assertion(&jti.client_id, &jti.jti, jti.expires_at, now).await? {
        return Ok(());
    }
    Err(replayed_as(proof))
}

/// [`authenticate`], leaving an assertion's `jti` to the caller: the token
/// endpoint remembers it in the same write that redeems the code or
/// rotates the refresh token (one statement, one commit), and on its own
/// ([`remember`]) on every path that refuses the request first. The caller
/// must remember it before it acts on the client's behalf.
///
/// # Errors
/// As [`authenticate`], but a replayed assertion is found only when the
/// `jti` is remembered.
pub async fn authenticate_deferred(
    identity: &Identity,
    headers: &HeaderMap,
    certificate: Option<&Presented>,
    credentials: &ClientCredentials,
    path: &str,
) -> Result<(Client, Option<PendingJti>), OAuthError> {
    let (client, pending) = identify(identity, headers, certificate, credentials, path).await?;
    if client.awaiting_approval {
        // Said only to the client itself, once it proved who it is.
        return Err(OAuthError::invalid_client("the client's registration awaits an operator's approval"));
    }
    Ok((client, pending))
}

/// The client the request's credentials prove, whatever its state.
async fn identify(
    identity: &Identity,
    headers: &HeaderMap,
    certificate: Option<&Presented>,
    credentials: &ClientCredentials,
    path: &str,
) -> Result<(Client, Option<PendingJti>), OAuthError> {
    if credentials.client_assertion.is_some() || credentials.client_assertion_type.is_some() {
        if headers.contains_key(header::AUTHORIZATION) || credentials.client_secret.is_some() {
            return Err(OAuthError::bad_request("use one client authentication method, not two"));
        }
        return by_assertion(identity, credentials, path).await.map(|(client, pending)| (client, Some(pending)));
    }
    let body_id = credentials.client_id.as_deref();
    let body_secret = credentials.client_secret.as_deref();
    let (client_id, secret) = match headers.get(header::AUTHORIZATION) {
        Some(value) => {
            if body_secret.is_some() {
                return Err(OAuthError::bad_request("use one client authentication method, not two"));
            }
            let (id, secret) = basic_credentials(value.to_str().unwrap_or_default())
                .ok_or_else(|| OAuthError::invalid_client("malformed Basic credentials"))?;
            if body_id.is_some_and(|body_id| body_id != id) {
                return Err(OAuthError::invalid_client("client_id differs from the Basic credentials"));
            }
            (id, secret)
        }
        None => match (body_id, body_secret) {
            (Some(id), Some(secret)) => (id.to_owned(), secret.to_owned()),
            (Some(id), None) => return by_certificate(identity, id, certificate).await.map(|client| (client, None)),
            _ => return Err(OAuthError::invalid_client("client authentication is required")),
        },
    };
    let client = identity
        .store
        .find_client(&ClientId::new(client_id))
        .await?
        .filter(|client| client.security.token_endpoint_auth_method.sends_secret());
    // Hash even for an unknown client, so both answers take as long.
    let stored = client.as_ref().map_or("sha256:", |c| c.secret_hash.as_str());
    let matches = portico_crypto::hash::client_secret_matches(stored, &secret);
    match client {
        Some(client) if matches => Ok((client, None)),
        _ => Err(OAuthError::invalid_client("unknown client or wrong secret")),
    }
}

/// `private_key_jwt` and `client_secret_jwt`.
async fn by_assertion(
    identity: &Identity,
    credentials: &ClientCredentials,
    path: &str,
) -> Result<(Client, PendingJti), OAuthError> {
    if credentials.client_assertion_type.as_deref() != Some(JWT_BEARER) {
        return Err(OAuthError::invalid_client(format!("client_assertion_type must be {JWT_BEARER}")));
    }
    let Some(assertion) = credentials.client_assertion.as_deref() else {
        return Err(OAuthError::invalid_client("client_assertion is missing"));
    };
    let not_jwt = || OAuthError::invalid_client("the client assertion is not a JWT with an iss");
    let assertion = jose::Assertion::parse(assertion).map_err(|_| not_jwt())?;
    let issuer = assertion.issuer().ok_or_else(not_jwt)?;
    if credentials.client_id.as_deref().is_some_and(|id| id != issuer) {
        return Err(OAuthError::invalid_client("client_id differs from the client assertion's iss"));
    }
    let client = identity
        .store
        .find_client(&ClientId::new(issuer))
        .await?
        .ok_or_else(|| OAuthError::invalid_client("unknown client"))?;
    // OpenID Connect Registration §2: an assertion not signed with the
    // algorithm the client registered is refused, before any key is read.
    if let Some(pinned) = client.security.token_endpoint_auth_signing_alg {
        let signed_with = match pinned.key() {
            Some(alg) => assertion.algorithm() == Some(alg),
            None => assertion.alg() == pinned.as_str(),
        };
        if !signed_with {
            return Err(OAuthError::invalid_client(format!(
                "the client registered token_endpoint_auth_signing_alg {pinned}; the client assertion is signed with {}",
                portico_model::text::echo(assertion.alg())
            )));
        }
    }
    let issuer_url = &identity.settings.issuer;
    let profile = client.security.security_profile;
    let single_audience = profile.takes_issuer_alone_as_audience();
    let mut audiences = vec![issuer_url.clone()];
    if !single_audience {
        audiences.extend([format!("{issuer_url}/oauth2/token"), format!("{issuer_url}{path}")]);
        // The same endpoints under their mutual-TLS aliases (RFC 8705 §5).
        if let Some(base) = &identity.settings.mtls_aliases {
            audiences.extend([format!("{base}/oauth2/token"), format!("{base}{path}")]);
        }
    }
    let now = identity.clock.now();
    let expected = jose::Expected {
        client_id: client.client_id.as_str(),
        audiences: &audiences,
        single_audience,
        now: now.unix_timestamp(),
    };
    let accepted = match client.security.token_endpoint_auth_method {
        AuthMethod::PrivateKeyJwt => {
            let keys = identity.client_keys.keys(&client, false).await.map_err(OAuthError::invalid_client)?;
            match jose::verify_key_assertion(&assertion, &keys, &expected) {
                Err(AssertionError::UnknownKey) => {
                    // The client may have added a key since its set was fetched.
                    let keys = identity.client_keys.keys(&client, true).await.map_err(OAuthError::invalid_client)?;
                    jose::verify_key_assertion(&assertion, &keys, &expected)
                }
                outcome => outcome,
            }
        }
        AuthMethod::ClientSecretJwt => match identity.client_keys.secret(&client) {
            Some(secret) => jose::verify_secret_assertion(&assertion, &secret, &expected),
            None => return Err(OAuthError::invalid_client("the client has no secret for client_secret_jwt")),
        },
        method => {
            return Err(OAuthError::invalid_client(format!(
                "the client is registered for {method}, not for a client assertion"
            )));
        }
    };
    let accepted = accepted.map_err(|e| match e {
        AssertionError::SingleAudience => {
            OAuthError::invalid_client(format!("{e} (the client's security profile {profile})"))
        }
        e => OAuthError::invalid_client(e.to_string()),
    })?;
    if let Some(alg) = assertion.algorithm().filter(|alg| !profile.allows_algorithm(*alg)) {
        return Err(OAuthError::invalid_client(format!(
            "the client's security profile {profile} takes client assertions signed with {}, not {alg}",
            profile.algorithms_text()
        )));
    }
    let expires_at = OffsetDateTime::from_unix_timestamp(accepted.exp + jose::LEEWAY).unwrap_or(now);
    let jti = AssertionJti { client_id: client.client_id.clone(), jti: accepted.jti, expires_at };
    let pending = PendingJti { jti, now, proof: false };
    Ok((client, pending))
}

/// A client that authenticates by its certificate, named by `client_id`:
/// `tls_client_auth` ([`by_authority`]) or `self_signed_tls_client_auth`
/// (the request's certificate is one of its JWK Set's, refetched once from
/// its `jwks_uri` when it is not).
async fn by_certificate(
    identity: &Identity,
    client_id: &str,
    certificate: Option<&Presented>,
) -> Result<Client, OAuthError> {
    let client = identity
        .store
        .find_client(&ClientId::new(client_id))
        .await?
        .filter(|client| client.security.token_endpoint_auth_method.uses_certificate())
        .ok_or_else(|| OAuthError::invalid_client("client authentication is required"))?;
    let certificate = match certificate {
        Some(Presented(Ok(certificate))) => certificate,
        Some(Presented(Err(error))) => return Err(OAuthError::invalid_client(error.to_string())),
        None => {
            return Err(OAuthError::invalid_client(
                "the client authenticates with its TLS client certificate: send the request over mutual TLS",
            ));
        }
    };
    if client.security.token_endpoint_auth_method == AuthMethod::TlsClientAuth {
        return by_authority(identity, client, certificate);
    }
    let keys = identity.client_keys.keys(&client, false).await.map_err(OAuthError::invalid_client)?;
    if keys.holds_certificate(certificate.der()) {
        return Ok(client);
    }
    // The client may have published a new certificate since its set was fetched.
    let keys = identity.client_keys.keys(&client, true).await.map_err(OAuthError::invalid_client)?;
    if keys.holds_certificate(certificate.der()) {
        return Ok(client);
    }
    Err(OAuthError::invalid_client("the TLS client certificate is not one the client registered (x5c of its jwks)"))
}

/// `tls_client_auth`: the certificate is one of a trusted authority
/// (`mtls.client_ca_file`), valid now, for client authentication, and
/// names the subject the client registered.
fn by_authority(identity: &Identity, client: Client, certificate: &ClientCertificate) -> Result<Client, OAuthError> {
    let Some(authorities) = &identity.settings.client_authorities else {
        return Err(OAuthError::invalid_client(
            "the server trusts no certificate authority for tls_client_auth (mtls.client_ca_file is unset)",
        ));
    };
    let now = u64::try_from(identity.clock.now().unix_timestamp()).unwrap_or(0);
    authorities.verify(certificate, now).map_err(OAuthError::invalid_client)?;
    let rule =
        SubjectRule::from_metadata(client.security.tls_client_auth_subject()).map_err(OAuthError::invalid_client)?;
    if !rule.matches(certificate.der()) {
        return Err(OAuthError::invalid_client(
            "the TLS client certificate does not name the client's registered subject (tls_client_auth_*)",
        ));
    }
    Ok(client)
}

/// `(client_id, client_secret)` from a `Basic` authorization header.
fn basic_credentials(value: &str) -> Option<(String, String)> {
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let encoded = encoded.trim();
    let decoded = STANDARD.decode(encoded).or_else(|_| URL_SAFE.decode(encoded)).ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    let id = form_decode(id)?;
    let secret = form_decode(secret)?;
    let usable = |s: &str| !s.is_empty() && !s.contains('\0');
    (usable(&id) && usable(&secret)).then_some((id, secret))
}

/// One half of Basic credentials, form-urlencoded as RFC 6749 §2.3.1 asks
/// (`+` a space, `%XX` a byte), decoded whole: a `&` or `=` in it is part
/// of the value, and bytes that are not UTF-8 make it malformed.
fn form_decode(text: &str) -> Option<String> {
    let spaced = text.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced).decode_utf8().ok().map(std::borrow::Cow::into_owned)
}

#[cfg(test)]
mod tests {
    use base64::engine::general_purpose;

    use super::*;

    #[test]
    fn accepts_standard_and_url_safe_base64() {
        // "demo-app:s3cr3t/+?x" has bytes that differ between the alphabets.
        let raw = "demo-app:s3cr3t/>?x";
        let standard = general_purpose::STANDARD.encode(raw);
        let url = general_purpose::URL_SAFE_NO_PAD.encode(raw);
        assert_ne!(standard.trim_end_matches('='), url);
        let expected = Some(("demo-app".to_owned(), "s3cr3t/>?x".to_owned()));
        assert_eq!(basic_credentials(&format!("Basic {standard}")), expected);
        assert_eq!(basic_credentials(&format!("basic {url}")), expected);
    }

    #[test]
    fn decodes_form_encoding_and_rejects_garbage() {
        let encoded = general_purpose::STANDARD.encode("my%20app:a%3Ab");
        assert_eq!(basic_credentials(&format!("Basic {encoded}")), Some(("my app".into(), "a:b".into())));
        assert_eq!(basic_credentials("Basic !!!"), None);
        assert_eq!(basic_credentials("Bearer abc"), None);
        assert_eq!(basic_credentials(&format!("Basic {}", general_purpose::STANDARD.encode("nocolon"))), None);
        assert_eq!(basic_credentials(&format!("Basic {}", general_purpose::STANDARD.encode(":secret"))), None);
        assert_eq!(basic_credentials(&format!("Basic {}", general_purpose::STANDARD.encode("a\0b:secret"))), None);
    }

    #[test]
    fn each_half_is_decoded_whole_and_must_be_utf8() {
        let basic = |raw: &str| basic_credentials(&format!("Basic {}", general_purpose::STANDARD.encode(raw)));
        // A secret holding `&` or `=`, encoded or not, is the whole secret
        // (it was cut at a raw `&`, as if it ended a form field).
        assert_eq!(basic("app:a&b=c"), Some(("app".into(), "a&b=c".into())));
        assert_eq!(basic("app:a%26b%3Dc+d"), Some(("app".into(), "a&b=c d".into())));
        // Bytes that are not UTF-8 are malformed, never U+FFFD.
        assert_eq!(basic("app:secret%FF"), None);
        assert_eq!(basic("app%C3%28:secret"), None);
        assert_eq!(basic("app:%EF%BF%BD"), Some(("app".into(), "\u{FFFD}".into())));
    }
}
