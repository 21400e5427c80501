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
        crate::http::users::role,
        crate::http::users::set_role,
        crate::http::users::grants,
        crate::http::users::revoke_grant,
        crate::http::system::keys,
        crate::http::system::rotate_key,
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
