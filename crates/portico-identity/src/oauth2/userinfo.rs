//! `GET|POST /oauth2/userinfo` (OIDC Core §5.3): the claims the access
//! token's scopes allow; a JWT signed with the client's
//! `userinfo_signed_response_alg`, with `iss` and `aud`, when the client
//! has one (§5.3.2).

use axum::Extension;
use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use portico_api::no_store;
use portico_crypto::certificate::Presented;
use serde::Serialize;

use crate::IdentityState;
use crate::tokens::invalid_token_for;
use portico_tokens::{AccessTokenError, UserClaims};

/// The userinfo answer: `sub` and the claims the token's scopes allow.
#[derive(Serialize, utoipa::ToSchema)]
pub struct UserInfo {
    sub: String,
    #[serde(flatten)]
    claims: UserClaims,
}

/// The signed userinfo answer's claims.
#[derive(Serialize)]
struct SignedUserInfo<'a> {
    iss: &'a str,
    aud: &'a str,
    iat: i64,
    #[serde(flatten)]
    info: &'a UserInfo,
}

/// The media type of a signed userinfo answer.
const JWT_MEDIA_TYPE: &str = "application/jwt";

#[utoipa::path(
    get,
    path = "/oauth2/userinfo",
    operation_id = "getUserInfo",
    tag = "oauth2",
    description = "OIDC Core §5.3.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The user's claims; a JWT (`application/jwt`) signed with the client's \
                                      `userinfo_signed_response_alg` when it has one.",
         headers(("Cache-Control" = String, description = "`no-store`: personal data is never cached.")),
         content((UserInfo = "application/json"), (String = "application/jwt"))),
        crate::edge::UserinfoRefusals
    )
)]
pub async fn userinfo(
    State(identity): State<IdentityState>,
    certificate: Option<Extension<Presented>>,
    headers: HeaderMap,
) -> Response {
    respond(&identity, &headers, certificate.as_deref(), "GET").await
}

async fn respond(
    identity: &IdentityState,
    headers: &HeaderMap,
    certificate: Option<&Presented>,
    method: &str,
) -> Response {
    no_store(answer(identity, headers, certificate, method).await)
}

#[utoipa::path(
    post,
    path = "/oauth2/userinfo",
    operation_id = "postUserInfo",
    tag = "oauth2",
    description = "OIDC Core §5.3, the POST form: the same answer as GET. The access token travels in the \
                   `Authorization` header, or as a bearer token in the form body (`access_token`, RFC 6750 \
                   §2.2); never both.",
    security(("bearerAuth" = []), ()),
    request_body(content = UserInfoRequestDto, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The user's claims; a JWT (`application/jwt`) signed with the client's \
                                      `userinfo_signed_response_alg` when it has one.",
         headers(("Cache-Control" = String, description = "`no-store`: personal data is never cached.")),
         content((UserInfo = "application/json"), (String = "application/jwt"))),
        (status = 400, description = "The token came twice (in the body and in the `Authorization` header, \
                                      or twice in the body), or the form could not be read.",
         headers(("WWW-Authenticate" = String, description = "`Bearer error=\"invalid_request\"` and a description"))),
        crate::edge::UserinfoRefusals
    )
)]
pub async fn userinfo_post(
    State(identity): State<IdentityState>,
    certificate: Option<Extension<Presented>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match body_token(&headers, body).await {
        Ok(None) => respond(&identity, &headers, certificate.as_deref(), "POST").await,
        Ok(Some(token)) => {
            // As if it came in the header: one check for every way in.
            let mut headers = headers;
            match HeaderValue::try_from(format!("Bearer {token}")) {
                Ok(value) => {
                    headers.insert(header::AUTHORIZATION, value);
                    respond(&identity, &headers, certificate.as_deref(), "POST").await
                }
                Err(_) => no_store(crate::tokens::invalid_token()),
            }
        }
        Err(why) => no_store(invalid_request(&why)),
    }
}

/// `UserInfoRequestDTO`: the form `POST /oauth2/userinfo` may carry.
#[derive(utoipa::ToSchema)]
#[schema(as = UserInfoRequestDTO)]
#[allow(dead_code)]
pub struct UserInfoRequestDto {
    /// A bearer access token (RFC 6750 §2.2), when the `Authorization`
    /// header does not carry one.
    #[schema(nullable = false)]
    access_token: Option<String>,
}

/// The bearer token a form body carries (RFC 6750 §2.2): `None` when the
/// body is no form or has no `access_token`.
///
/// # Errors
/// What is wrong: the token given twice (in the header too, or twice in
/// the form), or a form that cannot be read.
async fn body_token(headers: &HeaderMap, body: Body) -> Result<Option<String>, String> {
    if !super::params::is_form(headers) {
        return Ok(None);
    }
    let form = super::params::read_form(headers, body, super::MAX_FORM_BODY)
        .await
        .map_err(|error| error.parts().2.to_owned())?;
    let mut tokens = form.all("access_token");
    let Some(token) = tokens.next() else {
        return Ok(None);
    };
    if tokens.next().is_some() {
        return Err("access_token is given more than once".into());
    }
    if headers.contains_key(header::AUTHORIZATION) {
        return Err(
            "the access token is given both in the Authorization header and in the body; send it one way".into()
        );
    }
    Ok(Some(token.to_owned()))
}

/// 400 with RFC 6750 §3.1's `invalid_request` challenge.
fn invalid_request(why: &str) -> Response {
    let mut response = StatusCode::BAD_REQUEST.into_response();
    let quoted = portico_model::text::oauth_description(why);
    if let Ok(value) =
        HeaderValue::try_from(format!("Bearer error=\"invalid_request\", error_description=\"{quoted}\""))
    {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

async fn answer(
    identity: &IdentityState,
    headers: &HeaderMap,
    certificate: Option<&Presented>,
    method: &str,
) -> Response {
    let claims = match identity.tokens.check_request(headers, certificate, method, "/oauth2/userinfo").await {
        Ok(claims) => claims,
        Err(AccessTokenError::Unavailable(_)) => return StatusCode::SERVICE_UNAVAILABLE.into_response(),
        Err(error) => return crate::tokens::refused_for(headers, &error),
    };
    // OpenID Connect Core §5.3: userinfo answers tokens of OpenID Connect
    // requests; a token of a plain OAuth request (no `openid`) reads
    // nothing of the user here, whatever else its scope names.
    if !claims.scope.split(' ').any(|scope| scope == "openid") {
        let mut response = StatusCode::FORBIDDEN.into_response();
        let challenge = portico_tokens::Challenge::insufficient_scope(headers, "openid");
        response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
        return response;
    }
    let Ok(user_id) = uuid::Uuid::parse_str(&claims.sub) else {
        return invalid_token_for(headers);
    };
    let user = match identity.store.find_user(user_id.into()).await {
        Ok(Some(user)) if user.may_sign_in() => user,
        Ok(_) => return invalid_token_for(headers),
        Err(_) => return StatusCode::SERVICE_UNAVAILABLE.into_response(),
    };
    let info = UserInfo { sub: claims.sub.clone(), claims: UserClaims::for_scope(&user, &claims.scope) };
    let client = match identity.store.find_client(&portico_model::ids::ClientId::new(claims.client_id.as_str())).await {
        Ok(Some(client)) => client,
        Ok(None) => return invalid_token_for(headers),
        Err(_) => return StatusCode::SERVICE_UNAVAILABLE.into_response(),
    };
    let Some(alg) = client.security.userinfo_signed_response_alg else {
        return Json(info).into_response();
    };
    let Ok(key) = identity.tokens.keys.signing_key_for(alg).await else {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let signed = SignedUserInfo {
        iss: &identity.settings.issuer,
        aud: client.client_id.as_str(),
        iat: identity.clock.now().unix_timestamp(),
        info: &info,
    };
    match key.try_sign("JWT", &signed) {
        Ok(jwt) => ([(header::CONTENT_TYPE, JWT_MEDIA_TYPE)], jwt).into_response(),
        Err(error) => {
            tracing::warn!(%error, "a userinfo answer could not be signed");
            (StatusCode::SERVICE_UNAVAILABLE, [(header::RETRY_AFTER, "5")]).into_response()
        }
    }
}
