//! The request being answered, for answers built away from it: its id
//! (`x-request-id`, set by the server for every request that came without
//! one) is known to the task that answers, so an error body can name it
//! (the report API's `traceId`) without every handler passing it along.

use std::future::Future;

use axum::extract::Request;
use axum::http::HeaderName;
use axum::middleware::Next;
use axum::response::Response;

/// The header that carries the request id, both ways.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

tokio::task_local! {
    static ID: String;
}

/// Middleware: answers `request` with its id known to [`id`]. Runs inside
/// the layer that sets the id.
pub async fn remember_id(request: Request, next: Next) -> Response {
    let id = request.headers().get(&REQUEST_ID).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    ID.scope(id, next.run(request)).await
}

/// Runs `future` as if answering a request with the id `id`.
pub async fn with_id<F: Future>(id: String, future: F) -> F::Output {
    ID.scope(id, future).await
}

/// The id of the request being answered; empty outside of one (a
/// background task, a router served without [`remember_id`]).
pub fn id() -> String {
    ID.try_with(Clone::clone).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_id_is_known_while_answering_and_nowhere_else() {
        assert_eq!(id(), "");
        assert_eq!(with_id("abc".into(), async { id() }).await, "abc");
        assert_eq!(id(), "");
    }
}
