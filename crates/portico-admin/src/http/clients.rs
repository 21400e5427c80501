//! `/admin/v1/clients`: client applications.

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use portico_api::error::ErrorBody;
use portico_api::openapi::AdminErrors;
use portico_api::{Admin, ApiError, IfMatch, PageParams, Params, PathParams, etag, pagination};
use portico_crypto::jwt::Algorithm;
use portico_model::client::{AssertionAlgorithm, AuthMethod, Client, ClientSecurity, SecurityProfile};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};

use super::{AdminState, nullable};
use crate::service::{ClientChanges, NewClient, SecurityChanges};
use portico_api::Body;

/// A client application as the admin API shows it (never its secret).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientView {
    #[schema(example = "web-app")]
    pub client_id: String,
    pub name_ru: String,
    pub name_en: String,
    pub redirect_uris: Vec<String>,
    /// Allowed scopes, space-separated.
    #[schema(example = "openid profile email phone")]
    pub scope: String,
    pub require_consent: bool,
    pub post_logout_redirect_uris: Vec<String>,
    pub logout_revokes_grants: bool,
    pub backchannel_logout_uri: Option<String>,
    #[serde(flatten)]
    pub security: SecurityView,
    /// A registration held for an operator's approval
    /// (`registration.require_approval`): the client cannot authenticate
    /// or start a login until approved.
    pub awaiting_approval: bool,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
}

/// How a client authenticates, and the algorithms its tokens are signed
/// with (`null`: the server's default, `tokens.signing_algorithm`).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecurityView {
    pub token_endpoint_auth_method: AuthMethod,
    /// The client's public keys by value (a JWK Set), for `private_key_jwt`.
    #[schema(value_type = Option<Object>)]
    pub jwks: Option<serde_json::Value>,
    /// Where the client publishes its public keys, for `private_key_jwt`.
    pub jwks_uri: Option<String>,
    /// The one algorithm the client's assertions may be signed with
    /// (`null`: any its method takes).
    pub token_endpoint_auth_signing_alg: Option<AssertionAlgorithm>,
    pub id_token_signed_response_alg: Option<Algorithm>,
    /// When set, userinfo answers a JWT signed with it.
    pub userinfo_signed_response_alg: Option<Algorithm>,
    pub access_token_signed_response_alg: Option<Algorithm>,
    /// The algorithm of signed introspection answers (RFC 9701) to this client.
    pub introspection_signed_response_alg: Option<Algorithm>,
    /// The algorithm of signed authorization responses (JARM) to this client.
    pub authorization_signed_response_alg: Option<Algorithm>,
    /// Authorization requests only pushed to `/oauth2/par` (RFC 9126).
    pub require_pushed_authorization_requests: bool,
    /// Authorization requests only as signed request objects (RFC 9101).
    pub require_signed_request_object: bool,
    /// The one algorithm of the client's request objects (`null`: any
    /// asymmetric one Portico verifies).
    pub request_object_signing_alg: Option<Algorithm>,
    /// Every token request must carry a DPoP proof (RFC 9449).
    pub dpop_bound_access_tokens: bool,
    /// Every token request over mutual TLS; access tokens bound to the
    /// client's certificate (RFC 8705).
    pub tls_client_certificate_bound_access_tokens: bool,
    /// `tls_client_auth` (RFC 8705 §2.1.2): the subject DN (RFC 4514) or
    /// one alternative name the client's certificate must carry.
    pub tls_client_auth_subject_dn: Option<String>,
    pub tls_client_auth_san_dns: Option<String>,
    pub tls_client_auth_san_uri: Option<String>,
    pub tls_client_auth_san_ip: Option<String>,
    pub tls_client_auth_san_email: Option<String>,
    /// The rules the client is held to beyond its own settings.
    pub security_profile: SecurityProfile,
    /// Whether each refresh hands out a new refresh token (the client's
    /// setting, else its profile's default).
    pub refresh_token_rotation: bool,
    /// The client's logo, as its registration (RFC 7591) named it; kept,
    /// not shown to users. Set by registration only.
    pub logo_uri: Option<String>,
    /// The client's home page, privacy policy and terms of service, as its
    /// registration named them: the consent page links to each. Set by
    /// registration only.
    pub client_uri: Option<String>,
    pub policy_uri: Option<String>,
    pub tos_uri: Option<String>,
}

impl From<ClientSecurity> for SecurityView {
    fn from(security: ClientSecurity) -> Self {
        let refresh_token_rotation = security.rotates_refresh_tokens();
        Self {
            token_endpoint_auth_method: security.token_endpoint_auth_method,
            jwks: security.jwks,
            jwks_uri: security.jwks_uri,
            token_endpoint_auth_signing_alg: security.token_endpoint_auth_signing_alg,
            id_token_signed_response_alg: security.id_token_signed_response_alg,
            userinfo_signed_response_alg: security.userinfo_signed_response_alg,
            access_token_signed_response_alg: security.access_token_signed_response_alg,
            introspection_signed_response_alg: security.introspection_signed_response_alg,
            authorization_signed_response_alg: security.authorization_signed_response_alg,
            require_pushed_authorization_requests: security.require_pushed_authorization_requests,
            require_signed_request_object: security.require_signed_request_object,
            request_object_signing_alg: security.request_object_signing_alg,
            dpop_bound_access_tokens: security.dpop_bound_access_tokens,
            tls_client_certificate_bound_access_tokens: security.tls_client_certificate_bound_access_tokens,
            tls_client_auth_subject_dn: security.tls_client_auth_subject_dn,
            tls_client_auth_san_dns: security.tls_client_auth_san_dns,
            tls_client_auth_san_uri: security.tls_client_auth_san_uri,
            tls_client_auth_san_ip: security.tls_client_auth_san_ip,
            refresh_token_rotation,
            security_profile: security.security_profile,
            tls_client_auth_san_email: security.tls_client_auth_san_email,
            logo_uri: security.logo_uri,
            client_uri: security.client_uri,
            policy_uri: security.policy_uri,
            tos_uri: security.tos_uri,
        }
    }
}

impl From<Client> for ClientView {
    fn from(client: Client) -> Self {
        Self {
            client_id: client.client_id.to_string(),
            name_ru: client.name.ru,
            name_en: client.name.en,
            redirect_uris: client.redirect_uris,
            scope: client.scopes.join(" "),
            require_consent: client.require_consent,
            post_logout_redirect_uris: client.post_logout_redirect_uris,
            logout_revokes_grants: client.logout_revokes_grants,
            backchannel_logout_uri: client.backchannel_logout_uri,
            security: client.security.into(),
            awaiting_approval: client.awaiting_approval,
            created_at: client.created_at,
        }
    }
}

/// A client to register.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewClientBody {
    /// 1 to 64 of `A-Z a-z 0-9 - _ . :`.
    #[schema(example = "web-app", pattern = "^[A-Za-z0-9._:-]{1,64}$")]
    pub client_id: String,
    /// 16 to 256 characters; left out, one is generated and answered once.
    #[schema(min_length = 16, max_length = 256)]
    pub secret: Option<String>,
    /// Absolute, without a fragment; compared by exact match. At least one.
    #[schema(min_items = 1, max_items = 50, example = json!(["https://app.example/callback"]))]
    pub redirect_uris: Vec<String>,
    /// Space-separated, among `openid profile email phone`; default all four.
    #[schema(pattern = "^(openid|profile|email|phone)( (openid|profile|email|phone))*$")]
    pub scope: Option<String>,
    /// Default: the client id.
    #[schema(min_length = 1, max_length = 200)]
    pub name_ru: Option<String>,
    /// Default: the Russian name.
    #[schema(min_length = 1, max_length = 200)]
    pub name_en: Option<String>,
    #[serde(default)]
    pub require_consent: bool,
    #[serde(default)]
    #[schema(max_items = 50)]
    pub post_logout_redirect_uris: Vec<String>,
    #[serde(default)]
    pub logout_revokes_grants: bool,
    #[schema(format = "uri")]
    pub backchannel_logout_uri: Option<String>,
    #[serde(default)]
    pub token_endpoint_auth_method: AuthMethod,
    /// A JWK Set of the client's public signing keys (RSA of 2,048 to
    /// 8,192 bits, EC P-256, Ed25519), without private members.
    #[schema(value_type = Option<Object>)]
    pub jwks: Option<serde_json::Value>,
    /// A public `https` address of the client's JWK Set.
    #[schema(format = "uri")]
    pub jwks_uri: Option<String>,
    /// The one algorithm the client's assertions may be signed with: a key
    /// algorithm under `private_key_jwt`, `HS256` under `client_secret_jwt`
    /// (OpenID Connect Registration §2). Left out: any its method takes.
    pub token_endpoint_auth_signing_alg: Option<AssertionAlgorithm>,
    pub id_token_signed_response_alg: Option<Algorithm>,
    pub userinfo_signed_response_alg: Option<Algorithm>,
    pub access_token_signed_response_alg: Option<Algorithm>,
    pub introspection_signed_response_alg: Option<Algorithm>,
    /// The algorithm of signed authorization responses (JARM).
    pub authorization_signed_response_alg: Option<Algorithm>,
    /// Authorization requests only pushed to `/oauth2/par` (RFC 9126).
    #[serde(default)]
    pub require_pushed_authorization_requests: bool,
    /// Authorization requests only as signed request objects (RFC 9101);
    /// needs `jwks` or `jwksUri`.
    #[serde(default)]
    pub require_signed_request_object: bool,
    /// The one algorithm of the client's request objects.
    pub request_object_signing_alg: Option<Algorithm>,
    /// Every token request must carry a DPoP proof (RFC 9449).
    #[serde(default)]
    pub dpop_bound_access_tokens: bool,
    /// Every token request over mutual TLS; access tokens bound to the
    /// client's certificate (RFC 8705).
    #[serde(default)]
    pub tls_client_certificate_bound_access_tokens: bool,
    /// `tls_client_auth` (RFC 8705 §2.1.2): exactly one of the subject DN
    /// (RFC 4514) and the four alternative names.
    pub tls_client_auth_subject_dn: Option<String>,
    pub tls_client_auth_san_dns: Option<String>,
    pub tls_client_auth_san_uri: Option<String>,
    pub tls_client_auth_san_ip: Option<String>,
    pub tls_client_auth_san_email: Option<String>,
    /// Default: `registration.default_security_profile`.
    pub security_profile: Option<SecurityProfile>,
    /// Default: the profile's (on, except under `fapi2`).
    pub refresh_token_rotation: Option<bool>,
}

/// Changes to a client: the fields given replace the stored ones.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientPatch {
    #[schema(min_items = 1, max_items = 50)]
    pub redirect_uris: Option<Vec<String>>,
    #[schema(pattern = "^(openid|profile|email|phone)( (openid|profile|email|phone))*$")]
    pub scope: Option<String>,
    #[schema(min_length = 1, max_length = 200)]
    pub name_ru: Option<String>,
    #[schema(min_length = 1, max_length = 200)]
    pub name_en: Option<String>,
    pub require_consent: Option<bool>,
    #[schema(max_items = 50)]
    pub post_logout_redirect_uris: Option<Vec<String>>,
    pub logout_revokes_grants: Option<bool>,
    /// `null` removes it.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(nullable, format = "uri")]
    pub backchannel_logout_uri: Option<Option<String>>,
    pub token_endpoint_auth_method: Option<AuthMethod>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<Object>, nullable)]
    pub jwks: Option<Option<serde_json::Value>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(nullable, format = "uri")]
    pub jwks_uri: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(nullable)]
    pub token_endpoint_auth_signing_alg: Option<Option<AssertionAlgorithm>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(nullable)]
    pub id_token_signed_response_alg: Option<Option<Algorithm>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(nullable)]
    pub userinfo_signed_response_alg: Option<Option<Algorithm>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(nullable)]
    pub access_token_signed_response_alg: Option<Option<Algorithm>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(nullable)]
    pub introspection_signed_response_alg: Option<Option<Algorithm>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(nullable)]
    pub authorization_signed_response_alg: Option<Option<Algorithm>>,
    pub require_pushed_authorization_requests: Option<bool>,
    pub require_signed_request_object: Option<bool>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(nullable)]
    pub request_object_signing_alg: Option<Option<Algorithm>>,
    pub dpop_bound_access_tokens: Option<bool>,
    pub tls_client_certificate_bound_access_tokens: Option<bool>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(nullable)]
    pub tls_client_auth_subject_dn: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(nullable)]
    pub tls_client_auth_san_dns: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(nullable)]
    pub tls_client_auth_san_uri: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(nullable)]
    pub tls_client_auth_san_ip: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(nullable)]
    pub tls_client_auth_san_email: Option<Option<String>>,
    pub security_profile: Option<SecurityProfile>,
    /// `null`: the profile's default.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(nullable)]
    pub refresh_token_rotation: Option<Option<bool>>,
}

/// A new secret: the given one, or left out to have one generated.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretBody {
    #[schema(min_length = 16, max_length = 256)]
    pub secret: Option<String>,
}

/// A registered client, with its secret when Portico generated it for a
/// method that uses one (shown this once; a key or certificate client has none).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedClient {
    pub client: ClientView,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
}

/// A client's new secret, shown this once.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientSecret {
    pub client_secret: String,
}

#[utoipa::path(
    get,
    path = "/admin/v1/clients",
    operation_id = "listClients",
    tag = "clients",
    security(("adminToken" = [])),
    params(ClientList),
    responses(
        (status = 200, description = "A page of clients, by id.", body = ClientPage),
        (status = 400, description = "`bad_request`: a parameter is unknown or malformed (`limit` 1 to 200).", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn list(
    State(api): State<AdminState>,
    _: Admin,
    Params(list): Params<ClientList>,
) -> Result<Json<ClientPage>, ApiError> {
    let params = PageParams { after: list.after, limit: list.limit };
    let (page, limit) = params.read()?;
    let clients =
        api.service.list_clients(page, list.awaiting_approval).await.map_err(|e| e.into_api("listing clients"))?;
    let (clients, next) = pagination::split(clients, limit, |c| c.client_id.as_str());
    Ok(Json(ClientPage { clients: clients.into_iter().map(ClientView::from).collect(), next }))
}

/// Which clients to list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ClientList {
    /// Only the registrations held for an operator's approval (`true`), or
    /// only the others (`false`); absent: every client.
    pub awaiting_approval: Option<bool>,
    /// The `next` of the previous page.
    #[param(pattern = "^[^\\x00]*$")]
    pub after: Option<String>,
    /// 1 to 200; default 50.
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
}

/// A page of clients, by id.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientPage {
    pub clients: Vec<ClientView>,
    /// Pass as `after` for the next page; absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

#[utoipa::path(
    post,
    path = "/admin/v1/clients",
    operation_id = "createClient",
    tag = "clients",
    request_body = NewClientBody,
    security(("adminToken" = [])),
    responses(
        (status = 201, description = "Registered.", body = CreatedClient),
        (status = 400, description = "`bad_request`, or `invalid_document` naming every problem.", body = ErrorBody),
        (status = 415, description = "`bad_request`: the body is not `application/json`.", body = ErrorBody),
        (status = 409, description = "`client_exists`.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn create(
    State(api): State<AdminState>,
    admin: Admin,
    Body(body): Body<NewClientBody>,
) -> Result<Response, ApiError> {
    let new = NewClient {
        client_id: body.client_id,
        secret: body.secret,
        redirect_uris: body.redirect_uris,
        scope: body.scope,
        name_ru: body.name_ru,
        name_en: body.name_en,
        require_consent: body.require_consent,
        post_logout_redirect_uris: body.post_logout_redirect_uris,
        logout_revokes_grants: body.logout_revokes_grants,
        backchannel_logout_uri: body.backchannel_logout_uri,
        security: ClientSecurity {
            token_endpoint_auth_method: body.token_endpoint_auth_method,
            jwks: body.jwks,
            jwks_uri: body.jwks_uri,
            token_endpoint_auth_signing_alg: body.token_endpoint_auth_signing_alg,
            id_token_signed_response_alg: body.id_token_signed_response_alg,
            userinfo_signed_response_alg: body.userinfo_signed_response_alg,
            access_token_signed_response_alg: body.access_token_signed_response_alg,
            introspection_signed_response_alg: body.introspection_signed_response_alg,
            authorization_signed_response_alg: body.authorization_signed_response_alg,
            logo_uri: None,
            client_uri: None,
            policy_uri: None,
            tos_uri: None,
            require_pushed_authorization_requests: body.require_pushed_authorization_requests,
            require_signed_request_object: body.require_signed_request_object,
            request_object_signing_alg: body.request_object_signing_alg,
            dpop_bound_access_tokens: body.dpop_bound_access_tokens,
            tls_client_certificate_bound_access_tokens: body.tls_client_certificate_bound_access_tokens,
            tls_client_auth_subject_dn: body.tls_client_auth_subject_dn,
            tls_client_auth_san_dns: body.tls_client_auth_san_dns,
            tls_client_auth_san_uri: body.tls_client_auth_san_uri,
            tls_client_auth_san_ip: body.tls_client_auth_san_ip,
            tls_client_auth_san_email: body.tls_client_auth_san_email,
            security_profile: SecurityProfile::Standard,
            refresh_token_rotation: body.refresh_token_rotation,
        },
        security_profile: body.security_profile,
        registration_token_hash: None,
        awaiting_approval: false,
        spends_initial_access_token: None,
    };
    let (client, client_secret) =
        api.service.create_client(&admin.actor, new).await.map_err(|e| e.into_api("registering a client"))?;
    Ok((StatusCode::CREATED, Json(CreatedClient { client: client.into(), client_secret })).into_response())
}

#[utoipa::path(
    get,
    path = "/admin/v1/clients/{clientId}",
    operation_id = "getClient",
    tag = "clients",
    params(("clientId" = String, Path, description = "The client.")),
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "The client.", body = ClientView, headers(("ETag" = String, description = "The client's revision, for `If-Match`."))),
        (status = 404, description = "`client_not_found`.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn read(
    State(api): State<AdminState>,
    _: Admin,
    PathParams(client_id): PathParams<String>,
) -> Result<Response, ApiError> {
    let client = api.service.client(&client_id).await.map_err(|e| e.into_api("reading a client"))?;
    Ok(with_etag(client))
}

/// The client as the admin API shows it, with its revision as the `ETag`.
fn with_etag(client: Client) -> Response {
    ([(header::ETAG, etag(client.revision))], Json(ClientView::from(client))).into_response()
}

#[utoipa::path(
    patch,
    path = "/admin/v1/clients/{clientId}",
    operation_id = "updateClient",
    tag = "clients",
    params(
        ("clientId" = String, Path, description = "The client."),
        ("If-Match" = Option<String>, Header, description = "Make the change only if the stored client is still at this revision: the `ETag` a read answered (`\"3\"`); else 412 `precondition_failed`, and nothing is changed. Without it the change is made on the client as stored now.", pattern = r#"^[ \t]*(\*|(W/)?"[!#-~]*"([ \t]*,[ \t]*(W/)?"[!#-~]*")*)[ \t]*$"#)
    ),
    request_body = ClientPatch,
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "Changed; the client as it is now.", body = ClientView, headers(("ETag" = String, description = "The client's revision, for `If-Match`."))),
        (status = 400, description = "`bad_request`, or `invalid_document` naming every problem.", body = ErrorBody),
        (status = 415, description = "`bad_request`: the body is not `application/json`.", body = ErrorBody),
        (status = 404, description = "`client_not_found`.", body = ErrorBody),
        (status = 409, description = "`client_changed`: others kept changing the client meanwhile; read it again and retry.", body = ErrorBody),
        (status = 412, description = "`precondition_failed`: the client is no longer at the revision `If-Match` names.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn update(
    State(api): State<AdminState>,
    admin: Admin,
    PathParams(client_id): PathParams<String>,
    IfMatch(if_match): IfMatch,
    Body(patch): Body<ClientPatch>,
) -> Result<Response, ApiError> {
    let changes = ClientChanges {
        redirect_uris: patch.redirect_uris,
        scope: patch.scope,
        name_ru: patch.name_ru,
        name_en: patch.name_en,
        require_consent: patch.require_consent,
        post_logout_redirect_uris: patch.post_logout_redirect_uris,
        logout_revokes_grants: patch.logout_revokes_grants,
        backchannel_logout_uri: patch.backchannel_logout_uri,
        security: SecurityChanges {
            token_endpoint_auth_method: patch.token_endpoint_auth_method,
            jwks: patch.jwks,
            jwks_uri: patch.jwks_uri,
            token_endpoint_auth_signing_alg: patch.token_endpoint_auth_signing_alg,
            id_token_signed_response_alg: patch.id_token_signed_response_alg,
            userinfo_signed_response_alg: patch.userinfo_signed_response_alg,
            access_token_signed_response_alg: patch.access_token_signed_response_alg,
            introspection_signed_response_alg: patch.introspection_signed_response_alg,
            authorization_signed_response_alg: patch.authorization_signed_response_alg,
            logo_uri: None,
            client_uri: None,
            policy_uri: None,
            tos_uri: None,
            require_pushed_authorization_requests: patch.require_pushed_authorization_requests,
            require_signed_request_object: patch.require_signed_request_object,
            request_object_signing_alg: patch.request_object_signing_alg,
            dpop_bound_access_tokens: patch.dpop_bound_access_tokens,
            tls_client_certificate_bound_access_tokens: patch.tls_client_certificate_bound_access_tokens,
            tls_client_auth_subject_dn: patch.tls_client_auth_subject_dn,
            tls_client_auth_san_dns: patch.tls_client_auth_san_dns,
            tls_client_auth_san_uri: patch.tls_client_auth_san_uri,
            tls_client_auth_san_ip: patch.tls_client_auth_san_ip,
            tls_client_auth_san_email: patch.tls_client_auth_san_email,
            security_profile: patch.security_profile,
            refresh_token_rotation: patch.refresh_token_rotation,
        },
        if_match,
    };
    let client = api
        .service
        .update_client(&admin.actor, &client_id, changes)
        .await
        .map_err(|e| e.into_api("changing a client"))?;
    Ok(with_etag(client))
}

#[utoipa::path(
    post,
    path = "/admin/v1/clients/{clientId}/secret",
    operation_id = "rotateClientSecret",
    tag = "clients",
    params(("clientId" = String, Path, description = "The client.")),
    request_body = SecretBody,
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "The new secret, shown this once; the old one no longer works.", body = ClientSecret),
        (status = 400, description = "`bad_request`, or `invalid_document`: the given secret is too short or too long.", body = ErrorBody),
        (status = 415, description = "`bad_request`: the body is not `application/json`.", body = ErrorBody),
        (status = 404, description = "`client_not_found`.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn rotate_secret(
    State(api): State<AdminState>,
    admin: Admin,
    PathParams(client_id): PathParams<String>,
    Body(body): Body<SecretBody>,
) -> Result<Json<ClientSecret>, ApiError> {
    let client_secret = api
        .service
        .rotate_client_secret(&admin.actor, &client_id, body.secret)
        .await
        .map_err(|e| e.into_api("rotating a client secret"))?;
    Ok(Json(ClientSecret { client_secret }))
}

#[utoipa::path(
    post,
    path = "/admin/v1/clients/{clientId}/approve",
    operation_id = "approveClient",
    tag = "clients",
    params(("clientId" = String, Path, description = "The client.")),
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "Approved: the client authenticates and starts logins from now on.", body = ClientView),
        (status = 404, description = "`client_not_found`.", body = ErrorBody),
        (status = 409, description = "`not_awaiting_approval`: the client is not held for approval.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn approve(
    State(api): State<AdminState>,
    admin: Admin,
    PathParams(client_id): PathParams<String>,
) -> Result<Json<ClientView>, ApiError> {
    let client =
        api.service.approve_client(&admin.actor, &client_id).await.map_err(|e| e.into_api("approving a client"))?;
    Ok(Json(client.into()))
}

#[utoipa::path(
    delete,
    path = "/admin/v1/clients/{clientId}",
    operation_id = "deleteClient",
    tag = "clients",
    params(("clientId" = String, Path, description = "The client.")),
    security(("adminToken" = [])),
    responses(
        (status = 204, description = "Removed, with every grant and token issued to it."),
        (status = 404, description = "`client_not_found`.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn remove(
    State(api): State<AdminState>,
    admin: Admin,
    PathParams(client_id): PathParams<String>,
) -> Result<StatusCode, ApiError> {
    api.service.delete_client(&admin.actor, &client_id).await.map_err(|e| e.into_api("removing a client"))?;
    Ok(StatusCode::NO_CONTENT)
}

/// How long a one-time initial access token lives.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InitialAccessTokenBody {
    /// 60 to 2,592,000 (30 days); default 86,400 (a day).
    #[serde(default, deserialize_with = "optional_integral")]
    #[schema(minimum = 60, maximum = 2592000, nullable = false)]
    pub expires_in_secs: Option<i64>,
}

/// A JSON Schema `integer` (`1101.0` too) that may be left out.
fn optional_integral<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
    portico_model::notify::integral(deserializer).map(Some)
}

/// A one-time initial access token, shown this once.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitialAccessToken {
    /// The bearer token for one `POST /oauth2/register`.
    pub token: String,
    /// Names the token in the list of unspent ones, and to withdraw it.
    #[schema(pattern = "^[0-9a-f]{16}$", example = "3f9a0c2b7d41e865")]
    pub id: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: OffsetDateTime,
}

/// An unspent one-time initial access token (never the token itself).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IssuedTokenView {
    #[schema(pattern = "^[0-9a-f]{16}$", example = "3f9a0c2b7d41e865")]
    pub id: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: OffsetDateTime,
}

/// The unspent one-time initial access tokens, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct IssuedTokens {
    pub tokens: Vec<IssuedTokenView>,
}

#[utoipa::path(
    get,
    path = "/admin/v1/registration-tokens",
    operation_id = "listInitialAccessTokens",
    tag = "clients",
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "The one-time initial access tokens neither spent nor expired, oldest first.",
         body = IssuedTokens),
        AdminErrors
    )
)]
pub async fn initial_access_tokens(State(api): State<AdminState>, _: Admin) -> Result<Json<IssuedTokens>, ApiError> {
    let tokens = api.service.registration_tokens().await.map_err(|e| e.into_api("listing initial access tokens"))?;
    let tokens = tokens
        .into_iter()
        .map(|t| IssuedTokenView { id: t.id, created_at: t.created_at, expires_at: t.expires_at })
        .collect();
    Ok(Json(IssuedTokens { tokens }))
}

#[utoipa::path(
    delete,
    path = "/admin/v1/registration-tokens/{id}",
    operation_id = "withdrawInitialAccessToken",
    tag = "clients",
    params(("id" = String, Path, description = "The token's id, as issued and listed.")),
    security(("adminToken" = [])),
    responses(
        (status = 204, description = "Withdrawn: it registers nothing from now on."),
        (status = 404, description = "`registration_token_not_found`: no unspent token has this id.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn withdraw_initial_access_token(
    State(api): State<AdminState>,
    admin: Admin,
    PathParams(id): PathParams<String>,
) -> Result<StatusCode, ApiError> {
    api.service
        .withdraw_registration_token(&admin.actor, &id)
        .await
        .map_err(|e| e.into_api("withdrawing an initial access token"))?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    post,
    path = "/admin/v1/registration-tokens",
    operation_id = "issueInitialAccessToken",
    tag = "clients",
    request_body = InitialAccessTokenBody,
    security(("adminToken" = [])),
    responses(
        (status = 201, description = "A one-time initial access token for dynamic client registration (while \
                                      registration is on), shown this once; Portico keeps only its hash.",
         body = InitialAccessToken),
        (status = 400, description = "`bad_request`, or `invalid_document`: the lifetime is out of range.", body = ErrorBody),
        (status = 415, description = "`bad_request`: the body is not `application/json`.", body = ErrorBody),
        AdminErrors
    )
)]
pub async fn issue_initial_access_token(
    State(api): State<AdminState>,
    admin: Admin,
    Body(body): Body<InitialAccessTokenBody>,
) -> Result<Response, ApiError> {
    let ttl = time::Duration::seconds(body.expires_in_secs.unwrap_or(86_400));
    let (token, issued) = api
        .service
        .issue_initial_access_token(&admin.actor, ttl)
        .await
        .map_err(|e| e.into_api("issuing an initial access token"))?;
    let answer = InitialAccessToken { token, id: issued.id, expires_at: issued.expires_at };
    Ok((StatusCode::CREATED, Json(answer)).into_response())
}
