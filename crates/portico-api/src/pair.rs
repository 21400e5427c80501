//! The caller of a business API: a user with an access token and the
//! Id-Token of the same sign-in (`Authorization: Bearer …` + `Id-Token`),
//! checked completely by [`TokenVerifier::check_token_pair`].
//!
//! Each API answers a refusal in its own contract's words (the permission
//! API's `{"error": …}`, with the deprecation headers on its v1 reads), so
//! the extractor takes the API's [`PairRefusal`] as a type parameter.

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

impl<S, R> FromRequestParts<S> for TokenPair<R>
where
    S: HasTokenVerifier + Send + Sync,
    R: PairRefusal,
{
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Response> {
        let certificate = parts.extensions.get::<portico_crypto::certificate::Presented>();
        let verifier = state.token_verifier();
        match verifier.check_token_pair(&parts.headers, certificate, parts.method.as_str(), parts.uri.path()).await {
            Ok(caller) => Ok(TokenPair(caller, PhantomData)),
            Err(error) => Err(R::refusal(error)),
        }
    }
}
