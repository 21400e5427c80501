//! What the published documents share: the token pair (`Authorization` +
//! `Id-Token`) that the permission and report APIs take on every
//! operation, and the admin and internal APIs' security schemes and the
//! errors every one of their operations can answer.

use utoipa::openapi::security::{ApiKey, ApiKeyValue, Http, HttpAuthScheme, SecurityScheme};
use utoipa::{IntoResponses, Modify};

use crate::error::ErrorBody;

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

/// Adds the schemes `adminToken` and `internalToken` (bearer tokens).
pub fn add_security(document: &mut utoipa::openapi::OpenApi) {
    let components = document.components.get_or_insert_with(Default::default);
    for (name, description) in [
        ("internalToken", "The internal token (`internal_token`, `PORTICO_INTERNAL_TOKEN`)."),
        (
            "adminToken",
            "An admin token (`admin_tokens`, or `admin_token` / `PORTICO_ADMIN_TOKEN`); the audit log names it. \
             Or an operator's access token of the operators' client (`operator_client_id`); one bound to a DPoP \
             key comes as `Authorization: DPoP` with a proof for the call (RFC 9449), one bound to a client \
             certificate over that certificate (RFC 8705).",
        ),
    ] {
        let mut scheme = Http::new(HttpAuthScheme::Bearer);
        scheme.description = Some(description.to_owned());
        components.add_security_scheme(name, SecurityScheme::Http(scheme));
    }
}

/// The errors every admin operation can answer with.
#[derive(IntoResponses)]
#[allow(dead_code)]
pub enum AdminErrors {
    /// `unauthorized`: the admin token is missing or wrong.
    #[response(status = 401, headers(("WWW-Authenticate" = String, description = "`Bearer` when no token came; `Bearer error=\"invalid_token\"` for a wrong one (RFC 6750 §3); for an operator's token in the `DPoP` scheme, `DPoP error=\"invalid_dpop_proof\"` (its proof missing or bad) or `DPoP error=\"invalid_token\"` (RFC 9449 §7.1)")))]
    Unauthorized(ErrorBody),
    /// `admin_api_disabled`: no admin token is configured.
    #[response(status = 404)]
    Disabled(ErrorBody),
    /// `temporarily_unavailable`: the database is unreachable; nothing was changed.
    /// `Retry-After` says when to try again.
    #[response(status = 503)]
    Unavailable(ErrorBody),
    /// `internal_error`: nothing was changed; details only in the log.
    #[response(status = 500)]
    Internal(ErrorBody),
}

/// The errors every internal operation can answer with.
#[derive(IntoResponses)]
#[allow(dead_code)]
pub enum InternalErrors {
    /// `unauthorized`: the internal token is missing or wrong.
    #[response(status = 401, headers(("WWW-Authenticate" = String, description = "`Bearer` when no token came; `Bearer error=\"invalid_token\"` for a wrong one (RFC 6750 §3)")))]
    Unauthorized(ErrorBody),
    /// `internal_api_disabled`: no internal token is configured.
    #[response(status = 404)]
    Disabled(ErrorBody),
    /// `temporarily_unavailable`: the database is unreachable; nothing was stored.
    /// `Retry-After` says when to try again.
    #[response(status = 503)]
    Unavailable(ErrorBody),
    /// `internal_error`: nothing was stored; details only in the log.
    #[response(status = 500)]
    Internal(ErrorBody),
}
