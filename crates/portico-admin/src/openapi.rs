//! The admin API's part of the published `internal` document.

use utoipa::OpenApi;

#[derive(OpenApi)]
#[openapi(
    paths(
        crate::http::clients::list,
        crate::http::clients::create,
        crate::http::clients::read,
        crate::http::clients::update,
        crate::http::clients::remove,
        crate::http::clients::rotate_secret,
        crate::http::clients::approve,
        crate::http::clients::issue_initial_access_token,
        crate::http::clients::initial_access_tokens,
        crate::http::clients::withdraw_initial_access_token,
        crate::http::users::search,
        crate::http::users::create,
        crate::http::users::read,
        crate::http::users::update,
        crate::http::users::remove,
        crate::http::users::set_password,
        crate::http::users::block,
        crate::http::users::unblock,
        crate::http::users::sessions,
        crate::http::users::end_session,
        crate::http::users::passkeys,
        crate::http::users::remove_passkey,
        crate::http::users::role,
        crate::http::users::set_role,
        crate::http::users::grants,
        crate::http::users::revoke_grant,
        crate::http::system::keys,
        crate::http::system::rotate_key,
        crate::http::system::retire_key,
        crate::http::system::audit
    ),
    tags(
        (name = "clients", description = "Client applications (OAuth relying parties)"),
        (name = "users", description = "Users, their passwords, blocks and sessions"),
        (name = "signing keys", description = "The keys that sign tokens"),
        (name = "audit", description = "The audit log")
    )
)]
pub struct AdminApiDoc;

/// Dynamic client registration (RFC 7591, 7592): its part of the published
/// `identity` document, beside the other OAuth endpoints.
#[derive(OpenApi)]
#[openapi(
    paths(
        crate::registration::register,
        crate::registration::read,
        crate::registration::replace,
        crate::registration::remove,
    ),
    components(schemas(crate::registration::ClientMetadata)),
    modifiers(&RegistrationSecurity),
    tags((name = "registration", description = "Dynamic client registration (RFC 7591) and its management (RFC 7592)"))
)]
pub struct RegistrationApiDoc;

/// The registration endpoints' bearer tokens.
struct RegistrationSecurity;

impl utoipa::Modify for RegistrationSecurity {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        let mut initial = Http::new(HttpAuthScheme::Bearer);
        initial.description = Some("The bank's initial access token (`registration.initial_access_token`).".into());
        components.add_security_scheme("initialAccessToken", SecurityScheme::Http(initial));
        let mut managing = Http::new(HttpAuthScheme::Bearer);
        managing.description = Some("The registration access token answered at registration.".into());
        components.add_security_scheme("registrationAccessToken", SecurityScheme::Http(managing));
    }
}
