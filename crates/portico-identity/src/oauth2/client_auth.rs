//! Client authentication at the token and revoke endpoints:
//! `client_secret_basic` and `client_secret_post` (RFC 6749 §2.3.1).
//!
//! The Basic credentials may be standard Base64 (RFC 7617) or Base64URL (as
//! the client guide shows), padded or not; each half is form-urlencoded as
//! RFC 6749 §2.3.1 asks and is decoded accordingly.

use axum::http::{HeaderMap, header};
use base64::Engine as _;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use portico_model::client::Client;
use portico_model::ids::ClientId;

use super::error::OAuthError;
use super::forms::ClientCredentials;
use crate::Identity;

const LENIENT: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
const STANDARD: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, LENIENT);
const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, LENIENT);

/// Authenticates the calling client.
///
/// # Errors
/// 401 `invalid_client` for missing, malformed or wrong credentials; 400
/// `invalid_request` when both methods are used at once.
pub async fn authenticate(
    identity: &Identity,
    headers: &HeaderMap,
    credentials: &ClientCredentials,
) -> Result<Client, OAuthError> {
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
            _ => return Err(OAuthError::invalid_client("client authentication is required")),
        },
    };
    let client = identity.store.find_client(&ClientId::new(client_id)).await?;
    // Hash even for an unknown client, so both answers take as long.
    let stored = client.as_ref().map_or("sha256:", |c| c.secret_hash.as_str());
    let matches = portico_crypto::hash::client_secret_matches(stored, &secret);
    match client {
        Some(client) if matches => Ok(client),
        _ => Err(OAuthError::invalid_client("unknown client or wrong secret")),
    }
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

fn form_decode(text: &str) -> Option<String> {
    let pair = format!("v={text}");
    form_urlencoded::parse(pair.as_bytes()).next().map(|(_, v)| v.into_owned())
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
}
