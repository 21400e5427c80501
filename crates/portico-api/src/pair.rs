//! The caller of a business API: a user with an access token and the
//! Id-Token of the same sign-in (`Authorization: Bearer …` + `Id-Token`),
//! checked completely by [`TokenVerifier::check_token_pair`].
//!
//! Each API answers a refusal in its own contract's words (the permission
//! API's `{"error": …}`, with the deprecation headers on its v1 reads), so
//! the extractor takes the API's [`PairRefusal`] as a type parameter; a
//! 401 carries the challenge of [`portico_tokens::Challenge`].

use std::marker::PhantomData;
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::response::Response;
use portico_tokens::{Caller, TokenPairError, TokenVerifier};

/// An API state that checks token pairs.
pub trait HasTokenVerifier {
    fn token_verifier(&self) -> &TokenVerifier;
}

impl<T: HasTokenVerifier> HasTokenVerifier for Arc<T> {
    fn token_verifier(&self) -> &TokenVerifier {
        (**self).token_verifier()
    }
}

/// How an API says that a request's token pair was refused.
pub trait PairRefusal {
    fn refusal(error: TokenPairError) -> Response;
}

/// The verified caller of a business API operation; `R` answers a
/// refusal (before anything else of the request is read).
pub struct TokenPair<R>(pub Caller, pub PhantomData<fn() -> R>);

impl<R> TokenPair<R> {
    pub fn caller(self) -> Caller {
        self.0
    }
}

/// The path the client called — what a DPoP proof's `htu` names — also
/// under a nested router, which sees only the rest of it.
pub fn called_path(parts: &Parts) -> &str {
    let original = parts.extensions.get::<axum::extract::OriginalUri>();
    original.map_or(parts.uri.path(), |uri| uri.0.path())
}

impl<S, R> FromRequestParts<S> for TokenPair<R>
where
    S: HasTokenVerifier + Send + Sync,
    R: PairRefusal,
{
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Response> {
        let certificate = parts.extensions.get::<portico_crypto::certificate::Presented>();
        let verifier = state.token_verifier();
        match verifier.check_token_pair(&parts.headers, certificate, parts.method.as_str(), called_path(parts)).await {
            Ok(caller) => Ok(TokenPair(caller, PhantomData)),
            Err(error) => {
                // The API's words, under the one challenge every protected
                // resource answers with.
                let challenge = portico_tokens::Challenge::for_pair(&parts.headers, &error);
                let mut response = R::refusal(error);
                if response.status() == axum::http::StatusCode::UNAUTHORIZED {
                    response.headers_mut().insert(axum::http::header::WWW_AUTHENTICATE, challenge.header());
                }
                Err(response)
            }
        }
    }
}
