//! What the published OpenAPI documents share about Portico's tokens: the
//! token pair (`Authorization` + `Id-Token`) that the permission and report
//! APIs take on every operation.

use utoipa::Modify;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};

/// Adds the security schemes `accessToken` (header `Authorization`) and
/// `idToken` (header `Id-Token`); documents name both in their `security`.
#[derive(Debug)]
pub struct TokenPairSecurity;

impl Modify for TokenPairSecurity {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "accessToken",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "Authorization",
                "The access token from POST /oauth2/token, with or without `Bearer `.",
            ))),
        );
        components.add_security_scheme(
            "idToken",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "Id-Token",
                "The id_token of the same login.",
            ))),
        );
    }
}
