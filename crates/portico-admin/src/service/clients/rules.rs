//! The rules a client's settings meet, wherever they are set (the admin
//! API, the console, the CLI, registration): addresses, names, scopes,
//! secrets, and the authentication and signing choices with the client's
//! security profile.

use portico_api::Problem;
use portico_crypto::jwt::Algorithm;
use portico_model::client::{AuthMethod, ClientSecurity};
use portico_model::scope::{OIDC_SCOPES, ScopeSet};

/// Shortest client secret accepted.
const MIN_SECRET_LEN: usize = 16;
const MAX_SECRET_LEN: usize = 256;
const MAX_NAME_LEN: usize = 200;
const MAX_URIS: usize = 50;

/// Longest client address stored.
use portico_model::address::MAX_URL_LEN as MAX_URI_LEN;

/// An address the browser is sent back to (a redirect or post-logout
/// redirect URI; RFC 6749 §3.1.2, RFC 8252, RFC 9700 §4.1): at most
/// [`MAX_URI_LEN`] bytes, absolute, without user information or fragment,
/// and `https`; plain `http` only on a loopback host (a native app's
/// local listener, RFC 8252 §7.3); or a native app's private-use scheme,
/// which is a reversed domain name with a dot in it (`com.example.app:`,
/// RFC 8252 §7.1), so never `javascript:`, `data:`, `file:` and the like.
///
/// # Errors
/// What is wrong with it.
pub fn check_uri(uri: &str) -> Result<(), String> {
    if uri.is_empty() {
        return Err("an empty address: give an absolute URL".into());
    }
    let shown = shown(uri);
    if uri.len() > MAX_URI_LEN {
        return Err(format!("{shown}: longer than {MAX_URI_LEN} bytes"));
    }
    let url = url::Url::parse(uri).map_err(|e| format!("{shown}: not an absolute URL ({e})"))?;
    if url.fragment().is_some() {
        return Err(format!("{shown}: the address must not have a fragment"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!("{shown}: the address must not carry user information"));
    }
    match url.scheme() {
        "https" if url.host().is_some() => Ok(()),
        "http" if is_loopback(&url) => Ok(()),
        "http" => Err(format!("{shown}: plain http only to a loopback address (127.0.0.1, [::1]); use https")),
        scheme if scheme.contains('.') => Ok(()),
        scheme => Err(format!(
            "{shown}: the scheme {scheme:?} is not allowed; use https, or a native app's reversed domain \
             name such as com.example.app:"
        )),
    }
}

/// Whether the address's host is a loopback address or `localhost`.
pub fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// A back-channel logout address: Portico posts logout tokens to it, so
/// it is held to the rule of every address Portico sends to on someone
/// else's word (as merchant callbacks are): `https`, globally reachable.
pub(super) fn check_backchannel_uri(uri: &str, allow_insecure: bool) -> Result<(), String> {
    portico_model::address::check_public_url(uri, allow_insecure)
        .map_err(|problem| format!("{}: {problem}", shown(uri)))
}

/// An address as a problem names it: as it is when short and printable,
/// else quoted and cut ([`portico_model::text::echo`]).
fn shown(uri: &str) -> String {
    if uri.chars().count() <= portico_model::text::ECHO_CHARS && !uri.chars().any(char::is_control) {
        uri.to_owned()
    } else {
        portico_model::text::echo(uri)
    }
}

pub(super) fn check_uris(place: &str, uris: &[String], problems: &mut Vec<Problem>) {
    if uris.len() > MAX_URIS {
        problems.push(Problem::new(place, format!("at most {MAX_URIS} addresses")));
    }
    for (i, uri) in uris.iter().enumerate() {
        if let Err(message) = check_uri(uri) {
            problems.push(Problem::new(format!("{place}[{i}]"), message));
        }
    }
}

/// The redirect URIs a client's profile forbids: any but `https` under
/// `fapi-ru` (FAPI 1.0 Baseline §5.2.2-20), unless insecure addresses are
/// allowed (the demo and local development).
pub(super) fn check_profile_redirects(
    security: &ClientSecurity,
    uris: &[String],
    allow_insecure: bool,
    problems: &mut Vec<Problem>,
) {
    let profile = security.security_profile;
    if allow_insecure || !profile.takes_exact_https_redirects() {
        return;
    }
    for (i, uri) in uris.iter().enumerate().filter(|(_, uri)| !portico_model::client::is_https(uri)) {
        problems.push(Problem::new(
            format!("redirectUris[{i}]"),
            format!("{}: the {profile} profile takes https redirect URIs only (FAPI 1.0 Baseline §5.2.2)", shown(uri)),
        ));
    }
}

/// A client's name: shown on the login and consent pages, so held to
/// [`portico_model::text::check_shown_name`] besides its length.
pub(super) fn check_name(place: &str, name: Option<&String>, problems: &mut Vec<Problem>) {
    let Some(name) = name else { return };
    if name.trim().is_empty() || name.chars().count() > MAX_NAME_LEN {
        problems.push(Problem::new(place, format!("1 to {MAX_NAME_LEN} characters")));
    } else if let Err(problem) = portico_model::text::check_shown_name(name) {
        problems.push(Problem::new(place, problem));
    }
}

pub(super) fn parse_scope(scope: &str, problems: &mut Vec<Problem>) -> Vec<String> {
    match ScopeSet::parse(scope) {
        Ok(scopes) => {
            let unknown: Vec<&str> = scopes.iter().filter(|s| !OIDC_SCOPES.contains(s)).collect();
            if !unknown.is_empty() {
                let known = OIDC_SCOPES.join(" ");
                problems
                    .push(Problem::new("scope", format!("unknown: {}; Portico's scopes: {known}", unknown.join(" "))));
            }
            scopes.iter().map(str::to_owned).collect()
        }
        Err(e) => {
            problems.push(Problem::new("scope", e.to_string()));
            Vec::new()
        }
    }
}

pub(super) fn check_secret(secret: &str, problems: &mut Vec<Problem>) {
    if !(MIN_SECRET_LEN..=MAX_SECRET_LEN).contains(&secret.len()) {
        problems.push(Problem::new(
            "secret",
            format!("at least {MIN_SECRET_LEN} characters and at most {MAX_SECRET_LEN} (or leave it out to have one generated)"),
        ));
    }
}

/// The field name of an RFC 7591 metadata name, as the admin API spells it.
fn camel(name: &str) -> String {
    let mut words = name.split('_');
    let mut out = words.next().unwrap_or_default().to_owned();
    for word in words {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        }
    }
    out
}

/// Under a profile that restricts algorithms, each of the client's signing
/// algorithms left unset becomes one the profile allows and the server
/// keeps a key of: the server's default when it is one, else the first in
/// the profile's order (ES256 before PS256 before EdDSA). Unset,
/// `userinfo_signed_response_alg` stays unset (userinfo answers plain JSON).
/// When the server keeps no such key the algorithms stay unset and
/// [`check_security`] says what to add.
pub fn settle_profile(security: &mut ClientSecurity, default: Algorithm, supported: &[Algorithm]) {
    let Some(allowed) = security.security_profile.algorithms() else {
        return;
    };
    let chosen = if allowed.contains(&default) && supported.contains(&default) {
        Some(default)
    } else {
        allowed.iter().copied().find(|alg| supported.contains(alg))
    };
    for field in [
        &mut security.id_token_signed_response_alg,
        &mut security.access_token_signed_response_alg,
        &mut security.introspection_signed_response_alg,
        &mut security.authorization_signed_response_alg,
    ] {
        if field.is_none() {
            *field = chosen;
        }
    }
}

/// A client's authentication and signing choices: algorithms the server
/// keeps a key of (`supported`); keys by value or by address, not both;
/// a key set of public signing keys Portico can verify
/// ([`portico_crypto::jose::KeySet`]); a `jwks_uri` under the rule of
/// every address Portico sends requests to; and keys for a
/// `private_key_jwt` client and for one whose requests must be signed
/// request objects.
pub fn check_security(
    security: &ClientSecurity,
    supported: &[Algorithm],
    allow_insecure: bool,
    problems: &mut Vec<Problem>,
) {
    for (name, alg) in security.algorithms() {
        if !supported.contains(&alg) {
            problems.push(Problem::new(
                camel(name),
                format!(
                    "the server keeps no {alg} key: add {alg} to tokens.signing_algorithms, or choose one of {}",
                    supported.iter().map(|a| a.as_str()).collect::<Vec<_>>().join(", ")
                ),
            ));
        }
    }
    if let Some(alg) = security.token_endpoint_auth_signing_alg
        && !alg.fits(security.token_endpoint_auth_method)
    {
        let method = security.token_endpoint_auth_method;
        problems.push(Problem::new(
            "tokenEndpointAuthSigningAlg",
            match method {
                AuthMethod::PrivateKeyJwt => {
                    format!("{method} assertions are signed with a key: PS256, ES256, EdDSA or RS256, not {alg}")
                }
                AuthMethod::ClientSecretJwt => format!("{method} assertions are signed with HS256, not {alg}"),
                method => format!(
                    "{method} sends no assertion: leave it out, or authenticate by private_key_jwt or client_secret_jwt"
                ),
            },
        ));
    }
    if security.jwks.is_some() && security.jwks_uri.is_some() {
        problems.push(Problem::new("jwks", "give the keys by value (jwks) or by address (jwksUri), not both"));
    }
    if let Some(Err(message)) = security.jwks.as_ref().map(portico_crypto::jose::KeySet::parse) {
        problems.push(Problem::new("jwks", message));
    }
    if let Some(Err(message)) =
        security.jwks_uri.as_deref().map(|uri| portico_model::address::check_public_url(uri, allow_insecure))
    {
        problems.push(Problem::new(
            "jwksUri",
            format!("{}: {message}", shown(security.jwks_uri.as_deref().unwrap_or_default())),
        ));
    }
    if security.token_endpoint_auth_method == AuthMethod::PrivateKeyJwt
        && security.jwks.is_none()
        && security.jwks_uri.is_none()
    {
        problems.push(Problem::new(
            "tokenEndpointAuthMethod",
            "private_key_jwt needs the client's public keys: jwks or jwksUri",
        ));
    }
    if security.token_endpoint_auth_method == AuthMethod::TlsClientAuth
        && let Err(message) =
            portico_crypto::certificate::SubjectRule::from_metadata(security.tls_client_auth_subject())
    {
        problems.push(Problem::new("tokenEndpointAuthMethod", message));
    }
    if security.token_endpoint_auth_method == AuthMethod::SelfSignedTlsClientAuth {
        let by_value = security.jwks.as_ref().map(portico_crypto::jose::KeySet::parse);
        let holds = match &by_value {
            Some(Ok(keys)) => keys.has_certificates(),
            Some(Err(_)) => true, // said above
            None => security.jwks_uri.is_some(),
        };
        if !holds {
            problems.push(Problem::new(
                "tokenEndpointAuthMethod",
                "self_signed_tls_client_auth needs the client's certificates: jwks (with x5c) or jwksUri",
            ));
        }
    }
    if security.requires_signed_request_object() && security.jwks.is_none() && security.jwks_uri.is_none() {
        let place =
            if security.require_signed_request_object { "requireSignedRequestObject" } else { "securityProfile" };
        problems.push(Problem::new(
            place,
            "signed request objects are checked with the client's public keys: give jwks or jwksUri",
        ));
    }
    let profile = security.security_profile;
    for (name, conflict) in security.profile_conflicts() {
        problems.push(Problem::new(camel(name), conflict));
    }
    if let Some(allowed) = profile.algorithms()
        && !allowed.iter().any(|alg| supported.contains(alg))
    {
        problems.push(Problem::new(
            "securityProfile",
            format!(
                "the {profile} profile signs with {}, and the server keeps a key of none: add one to \
                 tokens.signing_algorithms",
                profile.algorithms_text()
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_absolute_and_without_a_fragment() {
        assert!(check_uri("https://app.example/cb").is_ok());
        assert!(check_uri("com.example.app:/cb").is_ok(), "a native app's private-use scheme");
        assert!(check_uri("https://app.example/cb#x").unwrap_err().contains("fragment"));
        assert!(check_uri("/cb").unwrap_err().contains("absolute"));
    }

    #[test]
    fn redirect_addresses_are_https_loopback_http_or_a_native_scheme() {
        for good in [
            "https://app.example/cb?x=1",
            "http://127.0.0.1:8080/cb",
            "http://[::1]:9000/cb",
            "http://localhost/cb",
            "ru.bank.app:/oauth2redirect",
        ] {
            assert!(check_uri(good).is_ok(), "{good}: {:?}", check_uri(good));
        }
        for bad in [
            "javascript:alert(1)",
            "JavaScript:alert(document.cookie)",
            "data:text/html,<script>alert(1)</script>",
            "vbscript:x",
            "file:///etc/passwd",
            "ftp://app.example/cb",
            "http://app.example/cb",
            "http://10.0.0.1/cb",
            "https://user:pw@app.example/cb",
            "https://user@app.example/cb",
            "myapp:/cb",
        ] {
            assert!(check_uri(bad).is_err(), "{bad}");
        }
        let long = format!("https://app.example/{}", "a".repeat(MAX_URI_LEN));
        let refusal = check_uri(&long).unwrap_err();
        assert!(refusal.contains("longer than 2048") && refusal.len() < 200, "{refusal}");
    }

    #[test]
    fn back_channel_addresses_are_public_https_unless_allowed() {
        assert!(check_backchannel_uri("https://app.example/backchannel", false).is_ok());
        for bad in [
            "file:///etc/passwd",
            "gopher://app.example/",
            "http://app.example/logout",
            "https://169.254.169.254/latest/meta-data",
            "https://[::ffff:127.0.0.1]/x",
            "https://localhost/x",
        ] {
            assert!(check_backchannel_uri(bad, false).is_err(), "{bad}");
        }
        assert!(check_backchannel_uri("http://127.0.0.1:9000/logout", true).is_ok(), "the demo's local receivers");
        assert!(check_backchannel_uri("file:///etc/passwd", true).is_err(), "never another scheme");
    }
}
