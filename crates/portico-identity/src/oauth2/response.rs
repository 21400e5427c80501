//! How an authorization response reaches the client's `redirect_uri`.
//!
//! `response_mode=query`, the default for `code`, is a 302 with the
//! parameters in the query. `response_mode=form_post` (OAuth 2.0 Form Post
//! Response Mode) is a page whose form the browser posts to `redirect_uri`,
//! the parameters as `application/x-www-form-urlencoded` fields: at once
//! with JavaScript, with one press of its button without. Either way the
//! response carries `iss` (RFC 9207), is `no-store`, and the page may not be
//! framed.
//!
//! JARM (JWT Secured Authorization Response Mode): `query.jwt` (and `jwt`,
//! its name for `code`) and `form_post.jwt` carry one parameter,
//! `response`, a JWT of type `JWT` signed with the client's
//! `authorization_signed_response_alg` (else the server's default) whose
//! claims are the parameters (`code` and `state`, or `error`,
//! `error_description` and `state`) beside `iss`, `aud` (the client) and
//! `exp` (the code's lifetime from now: the answer is worth nothing
//! longer).

use askama::Template;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use portico_model::client::SecurityProfile;
use portico_model::ids::ClientId;
use portico_model::key::Algorithm;
use portico_model::oauth::ResponseMode;
use portico_storage::StorageError;
use serde::Serialize;

use crate::Identity;
use crate::http::{redirect, with_query};
use crate::login::texts::{self, Texts};

#[derive(Template)]
#[template(path = "form_post.html")]
struct FormPostPage<'a> {
    t: &'a Texts,
    /// The bank's name, for the title.
    bank: &'a str,
    action: &'a str,
    fields: &'a [(&'a str, &'a str)],
}

/// Where an authorization response goes, and how.
#[derive(Debug, Clone)]
pub struct Recipient {
    pub client_id: ClientId,
    pub redirect_uri: String,
    pub mode: ResponseMode,
    /// The client's `authorization_signed_response_alg` (JARM modes).
    pub jwt_alg: Option<Algorithm>,
    /// The client's profile: a signed answer lives as long as its code.
    pub profile: SecurityProfile,
}

impl Recipient {
    /// The answer to `client`'s request at `redirect_uri`, in `mode`.
    pub fn new(client: &portico_model::client::Client, redirect_uri: &str, mode: ResponseMode) -> Self {
        Self {
            client_id: client.client_id.clone(),
            redirect_uri: redirect_uri.to_owned(),
            mode,
            jwt_alg: client.security.authorization_signed_response_alg,
            profile: client.security.security_profile,
        }
    }
}

/// The claims of a JARM response.
#[derive(Serialize)]
struct JwtResponse<'a> {
    iss: &'a str,
    aud: &'a str,
    exp: i64,
    #[serde(flatten)]
    pairs: std::collections::BTreeMap<&'a str, &'a str>,
}

/// The response that carries `pairs`, and the issuer, to the recipient's
/// `redirect_uri` as its mode says; a form_post page speaks the browser's
/// language.
pub async fn to_client(identity: &Identity, headers: &HeaderMap, to: &Recipient, pairs: &[(&str, &str)]) -> Response {
    let issuer = identity.settings.issuer.as_str();
    let jwt;
    let mut fields = pairs.to_vec();
    if to.mode.is_jwt() {
        let key = match identity.signing_key_for(to.jwt_alg).await {
            Ok(key) => key,
            Err(error) => return crate::login::error_page::server_error(error),
        };
        let exp = (identity.clock.now() + identity.settings.code_ttl(to.profile)).unix_timestamp();
        let claims =
            JwtResponse { iss: issuer, aud: to.client_id.as_str(), exp, pairs: pairs.iter().copied().collect() };
        jwt = match key.try_sign("JWT", &claims) {
            Ok(jwt) => jwt,
            Err(error) => return crate::login::error_page::server_error(StorageError::Unavailable(error.to_string())),
        };
        fields = vec![("response", jwt.as_str())];
    } else {
        fields.push(("iss", issuer));
    }
    if !to.mode.is_posted() {
        return redirect(StatusCode::FOUND, &with_query(&to.redirect_uri, &fields));
    }
    let t = texts::for_locale(texts::negotiate(headers, identity.settings.default_locale));
    let bank = identity.settings.branding.name(t.locale());
    let Ok(html) = (FormPostPage { t, bank, action: &to.redirect_uri, fields: &fields }).render() else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    crate::login::assets::secure_form_post(portico_api::no_store(Html(html)), &to.redirect_uri)
}

/// An OAuth error response to the client: `error`, `error_description`,
/// `state` when there is one, and `iss`.
pub async fn error_to_client(
    identity: &Identity,
    headers: &HeaderMap,
    to: &Recipient,
    error: &str,
    description: &str,
    state: Option<&str>,
) -> Response {
    let description = portico_model::text::oauth_description(description);
    let mut pairs = vec![("error", error), ("error_description", &*description)];
    if let Some(state) = state {
        pairs.push(("state", state));
    }
    to_client(identity, headers, to, &pairs).await
}
