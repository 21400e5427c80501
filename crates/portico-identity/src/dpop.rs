//! DPoP (RFC 9449) at the endpoints where a client asks for tokens: a
//! `DPoP` header with a proof of the client's key binds the access tokens
//! issued (`cnf.jkt`, `token_type` `DPoP`). The proof is checked by
//! [`portico_crypto::dpop`], its `jti` remembered on every node (the table
//! of client assertion ids, under `dpop:<jkt>`), and a refusal is `400
//! invalid_dpop_proof`. A client registered with `dpop_bound_access_tokens`
//! gets no token without a proof. Protected resources check the binding in
//! [`portico_tokens::TokenVerifier::check_request`].

use axum::http::HeaderMap;
use portico_crypto::dpop::{self, Proof};
use portico_model::client::Client;

use crate::Identity;
use crate::oauth2::error::OAuthError;

/// Seconds a server nonce's window lasts; a nonce is taken in its window
/// and the next.
pub const NONCE_WINDOW: i64 = 300;

/// The server nonce of now: an HMAC of the instance secret over the
/// current window, the same on every node, written nowhere.
pub fn nonce(identity: &Identity) -> String {
    nonce_of(identity, identity.clock.now().unix_timestamp().div_euclid(NONCE_WINDOW))
}

/// Adds the nonce of now to a successful answer, when nonces are required
/// (RFC 9449 §8.2), so that a client can move on before its nonce ages out.
pub fn offer_nonce(identity: &Identity, response: &mut axum::response::Response) {
    if identity.settings.dpop_require_nonce
        && let Ok(value) = axum::http::HeaderValue::from_str(&nonce(identity))
    {
        response.headers_mut().insert("dpop-nonce", value);
    }
}

fn nonce_of(identity: &Identity, window: i64) -> String {
    identity.cookies.tag("dpop-nonce", &window.to_string())
}

/// Whether `nonce` is the nonce of this window or the one before.
fn nonce_accepted(identity: &Identity, nonce: &str) -> bool {
    let window = identity.clock.now().unix_timestamp().div_euclid(NONCE_WINDOW);
    [window, window - 1]
        .iter()
        .any(|w| portico_crypto::constant_time_eq(nonce_of(identity, *w).as_bytes(), nonce.as_bytes()))
}

/// The request's DPoP proof for `POST <path>`, checked and its `jti`
/// remembered; `None` without one.
///
/// # Errors
/// `400 invalid_dpop_proof`: two proofs, a bad or replayed one, or none
/// from a client whose tokens must be bound; `400 use_dpop_nonce` when
/// nonces are required and the proof has no good one.
pub async fn proof_for(
    identity: &Identity,
    headers: &HeaderMap,
    client: &Client,
    path: &str,
) -> Result<Option<Proof>, OAuthError> {
    remembered(identity, proof_for_deferred(identity, headers, client, path)?).await
}

/// [`proof_for`] without remembering the proof's `jti`: the caller
/// remembers it with its own write ([`crate::oauth2::client_auth::PendingJti::proof`])
/// before it acts on the proof.
///
/// # Errors
/// As [`proof_for`], but a replayed proof is found only when its `jti` is
/// remembered.
pub fn proof_for_deferred(
    identity: &Identity,
    headers: &HeaderMap,
    client: &Client,
    path: &str,
) -> Result<Option<Proof>, OAuthError> {
    let proof = checked(identity, headers, client, path)?;
    required(client, proof.as_ref())?;
    Ok(proof)
}

/// A client whose tokens must be DPoP-bound needs a proof.
fn required(client: &Client, proof: Option<&Proof>) -> Result<(), OAuthError> {
    if proof.is_none() && client.security.dpop_bound_access_tokens {
        let why = "the client's access tokens are DPoP-bound: send a DPoP proof";
        return Err(OAuthError::refused("invalid_dpop_proof", why));
    }
    Ok(())
}

/// `proof`, if any, once its `jti` is remembered on its own.
async fn remembered(identity: &Identity, proof: Option<Proof>) -> Result<Option<Proof>, OAuthError> {
    if let Some(proof) = &proof
        && !identity.tokens.remember_proof(proof, identity.clock.now()).await?
    {
        return Err(proof_replayed());
    }
    Ok(proof)
}

/// A replayed DPoP proof's answer.
pub fn proof_replayed() -> OAuthError {
    OAuthError::refused("invalid_dpop_proof", "the DPoP proof was used before (jti)")
}

/// The request's DPoP proof for `POST <path>` by `client`, checked (its
/// algorithm among those of the client's profile) and its `jti`
/// remembered; `None` without one.
///
/// # Errors
/// `400 invalid_dpop_proof`: two proofs, or a bad or replayed one.
pub async fn proof_at(
    identity: &Identity,
    headers: &HeaderMap,
    client: &Client,
    path: &str,
) -> Result<Option<Proof>, OAuthError> {
    remembered(identity, checked(identity, headers, client, path)?).await
}

/// The request's DPoP proof for `POST <path>` by `client`, checked but
/// not remembered; `None` without one.
fn checked(identity: &Identity, headers: &HeaderMap, client: &Client, path: &str) -> Result<Option<Proof>, OAuthError> {
    let refused = |why: String| OAuthError::refused("invalid_dpop_proof", why);
    let mut values = headers.get_all("dpop").iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(refused("one DPoP proof, not several".into()));
    }
    let url = format!("{}{path}", identity.settings.issuer);
    let alias_url = identity.settings.mtls_aliases.as_ref().map(|base| format!("{base}{path}"));
    let now = identity.clock.now();
    let alias_url = alias_url.as_deref();
    let expected =
        dpop::Expected { method: "POST", url: &url, alias_url, now: now.unix_timestamp(), access_token: None };
    let proof = dpop::verify(value.to_str().unwrap_or_default(), &expected).map_err(refused)?;
    let profile = client.security.security_profile;
    if !profile.allows_algorithm(proof.alg) {
        return Err(refused(format!(
            "the client's security profile {profile} takes DPoP proofs signed with {}, not {}",
            profile.algorithms_text(),
            proof.alg
        )));
    }
    // Before the jti is remembered: the client retries this proof's request
    // with the nonce.
    if identity.settings.dpop_require_nonce && !proof.nonce.as_deref().is_some_and(|n| nonce_accepted(identity, n)) {
        return Err(OAuthError::UseDpopNonce(nonce(identity)));
    }
    Ok(Some(proof))
}
