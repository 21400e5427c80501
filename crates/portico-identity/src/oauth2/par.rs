//! `POST /oauth2/par` (operation `pushAuthorizationRequest`, RFC 9126):
//! a client pushes its authorization request straight to Portico and
//! gets a `request_uri` to send the browser to authorize with.
//!
//! The client authenticates as at the token endpoint (any of its methods;
//! an assertion's `aud` may name this endpoint). The body holds the
//! request's parameters as authorize takes them, or a signed request object
//! (`request`, RFC 9101) holding them; `request_uri` is refused. They are
//! checked by authorize's own rules ([`super::authorize::check`]), each
//! failure answered here as JSON (`invalid_request`, `invalid_scope`,
//! `unsupported_response_type`, `invalid_request_object`) instead of at
//! the client's address. A request that passes is stored by the hash of
//! its new `request_uri` for `par.request_uri_ttl_secs` (a minute by
//! default) and answered 201 `{request_uri, expires_in}`; authorize takes
//! it once, for this client only.

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use portico_crypto::certificate::Presented;
use portico_model::form::Param;
use portico_model::oauth::PushedRequest;
use serde::Serialize;
use utoipa::ToSchema;

use super::MAX_FORM_BODY;
use super::authorize::{Origin, Rejection, check};
use super::client_auth::authenticate;
use super::error::OAuthError;
use super::params::read_form;
use crate::edge::AuthorizeQuery;
use crate::{Identity, IdentityState};

/// The endpoint's path (an assertion's `aud` may name it).
pub const PATH: &str = "/oauth2/par";
/// What every `request_uri` Portico issues starts with (RFC 9126 §2.2).
pub const REQUEST_URI_PREFIX: &str = "urn:ietf:params:oauth:request_uri:";

/// The answer to a pushed request (RFC 9126 §2.2).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = PushedAuthorizationResponseDTO)]
pub struct PushedAuthorizationResponse {
    /// For `GET /oauth2/authorize?client_id=…&request_uri=…`, once.
    #[schema(example = "urn:ietf:params:oauth:request_uri:5ZbZ2dCJ3m0n0Q8yq3yGqZrC")]
    pub request_uri: String,
    /// Seconds it may be used for.
    #[schema(example = 60)]
    pub expires_in: i64,
}

/// A new `request_uri`: the prefix and 256 random bits.
pub(crate) fn new_request_uri() -> String {
    format!("{REQUEST_URI_PREFIX}{}", portico_crypto::random::token())
}

#[utoipa::path(
    post,
    path = "/oauth2/par",
    operation_id = "pushAuthorizationRequest",
    tag = "oauth2",
    request_body(content = crate::edge::PushedRequestDto, content_type = "application/x-www-form-urlencoded"),
    security(("clientBasic" = []), ()),
    responses(
        (status = 201, description = "Stored: the `request_uri` to authorize with, once, before it expires.",
         body = PushedAuthorizationResponse,
         headers(("Cache-Control" = String, description = "`no-store`"))),
        crate::edge::ClientErrors
    )
)]
pub async fn par(
    State(identity): State<IdentityState>,
    certificate: Option<axum::Extension<Presented>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match push(&identity, &headers, certificate.as_deref(), body).await {
        Ok(pushed) => {
            let mut response = portico_api::no_store((StatusCode::CREATED, Json(pushed)));
            crate::dpop::offer_nonce(&identity, &mut response);
            response
        }
        Err(error) => error.into_response(),
    }
}

async fn push(
    identity: &Identity,
    headers: &HeaderMap,
    certificate: Option<&Presented>,
    body: Body,
) -> Result<PushedAuthorizationResponse, OAuthError> {
    let form = read_form(headers, body, MAX_FORM_BODY).await?;
    let client = authenticate(identity, headers, certificate, &form.read()?, PATH).await?;
    // Every field is a `Param`, which holds any reading: this cannot fail.
    let mut query: AuthorizeQuery = form.read_each().unwrap_or_default();
    if !matches!(query.request_uri, Param::Absent) {
        return Err(OAuthError::bad_request("OAuth 2.0 Parameter: request_uri: not taken by a pushed request"));
    }
    let object = std::mem::take(&mut query.request).value().map_err(|_| OAuthError::invalid_request("request"))?;
    let signed = object.is_some();
    if let Some(object) = object {
        query = super::request_object::read(identity, &client, &object)
            .await
            .map_err(|why| OAuthError::refused("invalid_request_object", why))?;
    }
    // A DPoP proof binds the code to its key (RFC 9449 §10); a dpop_jkt
    // beside it must name the same key.
    let proof = crate::dpop::proof_at(identity, headers, &client, PATH).await?;
    if let (Some(proof), Some(named)) = (&proof, query.dpop_jkt.clone().ok())
        && proof.jkt != named
    {
        return Err(OAuthError::refused("invalid_dpop_proof", "dpop_jkt is not the thumbprint of the proof's key"));
    }
    let mut request =
        check(identity, client, query, Origin { pushed: true, signed }).map_err(|rejection| match rejection {
            Rejection::Plain(description) => OAuthError::bad_request(description),
            Rejection::Redirect { error, description, .. } => OAuthError::refused(error, description),
            Rejection::Storage(error) => error.into(),
        })?;
    if let Some(proof) = proof {
        request.dpop_jkt = Some(proof.jkt);
    }
    let request_uri = new_request_uri();
    let now = identity.clock.now();
    let ttl = identity.settings.pushed_request_ttl;
    let pushed = PushedRequest {
        request_hash: portico_crypto::hash::token_hash(&request_uri),
        client_id: request.client.client_id.clone(),
        request: request.pending(),
        created_at: now,
        expires_at: now + ttl,
    };
    identity.store.insert_pushed_request(&pushed).await?;
    Ok(PushedAuthorizationResponse { request_uri, expires_in: ttl.whole_seconds() })
}
