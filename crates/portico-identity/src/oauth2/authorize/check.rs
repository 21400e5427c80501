//! The parameters of an authorization request, checked in the contract's
//! order (the endpoint's docs, [`super`]); the first problem is the answer.

use portico_model::client::{Client, SecurityProfile};
use portico_model::form::Param;
use portico_model::login::Locale;
use portico_model::oauth::{ResponseMode, is_s256_challenge};
use portico_model::scope::ScopeSet;

use super::{AuthorizeRequest, Origin, Rejection};
use crate::Identity;
use crate::edge::AuthorizeQuery;
use crate::oauth2::response::Recipient;

const MAX_NONCE: usize = 512;
const MAX_STATE: usize = 2048;
/// The longest `login_hint` taken (a login or a phone number is far shorter).
const MAX_LOGIN_HINT: usize = 256;
/// The longest `id_token_hint` taken (Portico's ID tokens are far shorter).
const MAX_ID_TOKEN_HINT: usize = 8192;

/// Checks the parameters of a request of `client` in the contract's order
/// (the endpoint's docs) and answers the first problem.
pub(crate) fn check(
    identity: &Identity,
    client: Client,
    query: AuthorizeQuery,
    origin: Origin,
) -> Result<AuthorizeRequest, Rejection> {
    let redirect_uri = query
        .redirect_uri
        .ok()
        .filter(|uri| client.has_redirect_uri(uri))
        .ok_or_else(|| Rejection::plain("redirect_uri"))?;

    // The state to answer errors with: a good one, else none.
    let state = query.state.clone().ok().filter(|s| s.len() <= MAX_STATE);
    // The response mode first: every later error is answered in it.
    let response_mode = query.response_mode.value().map(Option::unwrap_or_default);
    let mode = response_mode.as_ref().copied().unwrap_or_default();
    let to = Recipient::new(&client, &redirect_uri, mode);
    let refuse = |error: &'static str, description: String| Rejection::Redirect {
        to: to.clone(),
        error,
        description,
        state: state.clone(),
    };
    let fail =
        |error: &'static str, parameter: &'static str| refuse(error, format!("OAuth 2.0 Parameter: {parameter}"));
    let response_mode = response_mode.map_err(|_| fail("invalid_request", "response_mode"))?;
    if let Some(alg) = to.jwt_alg.filter(|alg| response_mode.is_jwt() && !identity.tokens.keys.supports(*alg)) {
        // A signed answer cannot be made: say so in the plain query.
        let why = format!(
            "OAuth 2.0 Parameter: response_mode: Portico holds no {alg} key to sign the client's responses \
             (its authorization_signed_response_alg)"
        );
        let to = Recipient { mode: ResponseMode::Query, ..to.clone() };
        return Err(Rejection::Redirect { to, error: "invalid_request", description: why, state });
    }
    let security = &client.security;
    // A rule of the client's profile, not of its own settings, says so.
    let profile = security.security_profile;
    let by = |own: bool| if own { String::new() } else { format!(" (its security profile {profile})") };
    if !origin.pushed && (identity.settings.require_pushed_requests || security.requires_pushed_requests()) {
        let own = identity.settings.require_pushed_requests || security.require_pushed_authorization_requests;
        let why = format!(
            "OAuth 2.0 Parameter: request_uri: the client's authorization requests must be pushed to /oauth2/par{}",
            by(own)
        );
        return Err(refuse("invalid_request", why));
    }
    if !origin.signed && security.requires_signed_request_object() {
        let why = format!(
            "OAuth 2.0 Parameter: request: the client's authorization requests must be signed request objects{}",
            by(security.require_signed_request_object)
        );
        return Err(refuse("invalid_request", why));
    }
    if security.requires_signed_response() && !response_mode.is_jwt() {
        let why = format!(
            "OAuth 2.0 Parameter: response_mode: the client's authorization responses must be signed: jwt, \
             query.jwt or form_post.jwt{}",
            by(false)
        );
        return Err(refuse("invalid_request", why));
    }
    // A parameter given once (or not at all) and of its type; otherwise
    // `invalid_request` naming it.
    let get = |param: Param<_>, name: &'static str| param.value().map_err(|_| fail("invalid_request", name));

    match get(query.response_type, "response_type")?.as_deref() {
        None => return Err(fail("invalid_request", "response_type")),
        Some("code") => {}
        Some(_) => return Err(fail("unsupported_response_type", "response_type")),
    }
    let scope = get(query.scope, "scope")?.ok_or_else(|| fail("invalid_request", "scope"))?;
    let scope = ScopeSet::parse(&scope)
        .ok()
        .filter(|set| set.iter().all(|s| client.allows_scope(s)))
        .ok_or_else(|| fail("invalid_scope", "scope"))?;
    let given = get(query.state, "state")?;
    if given.is_some() && state.is_none() {
        return Err(fail("invalid_request", "state"));
    }
    if given.is_none() && profile.requires_state(scope.contains("openid")) {
        if profile == SecurityProfile::Standard {
            return Err(fail("invalid_request", "state"));
        }
        let why =
            format!("OAuth 2.0 Parameter: state: the client's requests without openid must carry a state{}", by(false));
        return Err(refuse("invalid_request", why));
    }
    let state = state.clone();
    let code_challenge = get(query.code_challenge, "code_challenge")?
        .filter(|c| is_s256_challenge(c))
        .ok_or_else(|| fail("invalid_request", "code_challenge"))?;
    get(query.code_challenge_method, "code_challenge_method")?
        .filter(|m| m == "S256")
        .ok_or_else(|| fail("invalid_request", "code_challenge_method"))?;
    let nonce = get(query.nonce, "nonce")?;
    if nonce.as_ref().is_some_and(|n| n.len() > MAX_NONCE) {
        return Err(fail("invalid_request", "nonce"));
    }
    if nonce.is_none() && scope.contains("openid") && profile.requires_nonce_with_openid() {
        let why =
            format!("OAuth 2.0 Parameter: nonce: the client's requests for openid must carry a nonce{}", by(false));
        return Err(refuse("invalid_request", why));
    }
    let prompt = query.prompt.value().map_err(|_| fail("invalid_request", "prompt"))?;
    let max_age = query.max_age.value().map_err(|_| fail("invalid_request", "max_age"))?;
    let ui_locale = get(query.ui_locales, "ui_locales")?.as_deref().and_then(Locale::from_ui_locales);
    let login_hint = get(query.login_hint, "login_hint")?;
    if login_hint.as_ref().is_some_and(|hint| hint.len() > MAX_LOGIN_HINT || hint.chars().any(char::is_control)) {
        return Err(fail("invalid_request", "login_hint"));
    }
    let dpop_jkt = get(query.dpop_jkt, "dpop_jkt")?;
    if dpop_jkt.as_ref().is_some_and(|jkt| !is_thumbprint(jkt)) {
        return Err(fail("invalid_request", "dpop_jkt"));
    }
    let id_token_hint = get(query.id_token_hint, "id_token_hint")?;
    if id_token_hint.as_ref().is_some_and(|hint| hint.len() > MAX_ID_TOKEN_HINT) {
        return Err(fail("invalid_request", "id_token_hint"));
    }
    // A self-issued provider's parameter (OpenID Connect Core §7.2.1):
    // ignored, it would leave the client believing itself registered.
    if get(query.registration, "registration")?.is_some() {
        return Err(fail("registration_not_supported", "registration"));
    }
    Ok(AuthorizeRequest {
        client,
        redirect_uri,
        scope,
        state,
        code_challenge,
        nonce,
        prompt,
        max_age,
        ui_locale,
        login_hint,
        response_mode,
        request_uri: None,
        dpop_jkt,
        id_token_hint,
        pushed_to_take: None,
    })
}

/// An RFC 7638 SHA-256 thumbprint: 43 Base64url characters.
fn is_thumbprint(text: &str) -> bool {
    text.len() == 43 && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}
