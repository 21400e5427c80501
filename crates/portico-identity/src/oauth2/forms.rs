//! The typed forms of the token and revoke endpoints, each read once by
//! the one strict deserializer ([`portico_model::form`]): a repeated
//! parameter, a NUL or a missing required value is `invalid_request`
//! naming the parameter, and a parameter the request does not use is
//! ignored. The same types make the published documents' request bodies.
//!
//! The order of the checks is the contract's: the client's credentials,
//! then the client's authentication (by the caller), then `grant_type`,
//! then the grant's own parameters.

use portico_model::form::{Form, FormError};
use serde::Deserialize;
use utoipa::ToSchema;

use super::error::OAuthError;

impl From<FormError> for OAuthError {
    fn from(error: FormError) -> Self {
        Self::invalid_request(&error.field)
    }
}

/// The client's credentials in the body: `client_secret_post`, a client
/// assertion (`private_key_jwt`, `client_secret_jwt`), or a `client_id`
/// naming the client beside its Basic credentials.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct ClientCredentials {
    /// With `client_secret_post`, or to name the client with Basic or an assertion.
    #[schema(nullable = false)]
    pub client_id: Option<String>,
    /// With `client_secret_post`.
    #[schema(nullable = false)]
    pub client_secret: Option<String>,
    /// With an assertion: `urn:ietf:params:oauth:client-assertion-type:jwt-bearer`
    /// (anything else is `invalid_client`; an empty value is no value, RFC 6749 §3.1).
    #[schema(nullable = false)]
    pub client_assertion_type: Option<String>,
    /// A JWT signed with the client's key (`private_key_jwt`, RFC 7523) or
    /// with HS256 under its secret (`client_secret_jwt`).
    #[schema(nullable = false)]
    pub client_assertion: Option<String>,
}

/// The parameters of the `authorization_code` grant.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CodeGrant {
    /// For `authorization_code`.
    #[schema(nullable = false, min_length = 1)]
    pub code: String,
    /// For `authorization_code`: 43 to 128 characters of `[A-Za-z0-9-._~]`.
    #[schema(nullable = false, pattern = "^[A-Za-z0-9._~-]{43,128}$")]
    pub code_verifier: String,
    /// For `authorization_code`: the address of the authorize request.
    #[schema(nullable = false)]
    pub redirect_uri: Option<String>,
}

/// The parameters of the `refresh_token` grant.
#[derive(Debug, Deserialize, ToSchema)]
pub struct RefreshGrant {
    /// For `refresh_token`.
    #[schema(nullable = false, min_length = 1)]
    pub refresh_token: String,
    /// For `refresh_token`: a narrower scope than the grant's.
    #[schema(nullable = false)]
    pub scope: Option<String>,
}

/// What a token request asks for, by its grant type.
#[derive(Debug)]
pub enum TokenRequest {
    AuthorizationCode(CodeGrant),
    RefreshToken(RefreshGrant),
}

/// `grant_type` alone, read before the grant's parameters.
#[derive(Deserialize)]
struct GrantType {
    grant_type: String,
}

impl TokenRequest {
    /// The request's grant type as the metrics name it: `other` for one
    /// Portico does not serve, `unknown` when it cannot be read.
    pub fn label(form: &Form) -> &'static str {
        match form.read::<GrantType>() {
            Ok(GrantType { grant_type }) => match grant_type.as_str() {
                "authorization_code" => "authorization_code",
                "refresh_token" => "refresh_token",
                _ => "other",
            },
            Err(_) => "unknown",
        }
    }

    /// The request of `form`.
    ///
    /// # Errors
    /// `invalid_request` naming a missing, repeated or malformed
    /// `grant_type` or parameter of the grant; `unsupported_grant_type`
    /// for a grant type Portico does not serve.
    pub fn read(form: &Form) -> Result<Self, OAuthError> {
        let GrantType { grant_type } = form.read()?;
        match grant_type.as_str() {
            "authorization_code" => Ok(Self::AuthorizationCode(form.read()?)),
            "refresh_token" => Ok(Self::RefreshToken(form.read()?)),
            _ => Err(OAuthError::unsupported_grant_type()),
        }
    }
}

/// The form of `POST /oauth2/revoke` (RFC 7009) and of `POST
/// /oauth2/introspect` (RFC 7662), besides the client's credentials: a
/// token and what kind it may be.
#[derive(Debug, Deserialize, ToSchema)]
pub struct RevokeRequest {
    /// An access token or refresh token.
    #[schema(min_length = 1)]
    pub token: String,
    /// `access_token` or `refresh_token`; both kinds are tried either way,
    /// and another value is ignored (RFC 7009 §2.1: the hint only speeds
    /// the look-up).
    #[schema(nullable = false, example = "refresh_token")]
    pub token_type_hint: Option<String>,
}

/// The form of `POST /oauth2/introspect`: the same as revocation's.
pub type IntrospectionRequest = RevokeRequest;

#[cfg(test)]
mod tests {
    use super::*;

    fn read(encoded: &str) -> Result<TokenRequest, (&'static str, String)> {
        TokenRequest::read(&Form::parse(encoded.as_bytes())).map_err(|e| {
            let (_, code, description) = e.parts();
            (code, description.to_owned())
        })
    }

    #[test]
    fn grant_type_first_then_the_grants_own_parameters() {
        let invalid = |name: &str| Err(("invalid_request", format!("OAuth 2.0 Parameter: {name}")));
        assert!(matches!(read("grant_type=refresh_token&refresh_token=r"), Ok(TokenRequest::RefreshToken(_))));
        assert_eq!(read("refresh_token=r").map(|_| ()), invalid("grant_type"));
        assert_eq!(read("grant_type=a&grant_type=b").map(|_| ()), invalid("grant_type"));
        assert_eq!(
            read("grant_type=password&code=a&code=b").map(|_| ()),
            Err(("unsupported_grant_type", "OAuth 2.0 Parameter: grant_type".into()))
        );
        assert_eq!(read("grant_type=authorization_code&code=c").map(|_| ()), invalid("code_verifier"));
        assert_eq!(
            read("grant_type=refresh_token&refresh_token=a&refresh_token=b").map(|_| ()),
            invalid("refresh_token")
        );
        // A parameter of the other grant is not this request's: ignored.
        assert!(read("grant_type=refresh_token&refresh_token=r&code=a&code=b").is_ok());
    }
}
