//! The error body of the admin and internal APIs:
//! `{"code": "...", "message": "...", "problems": [{"place", "message"}]}`.
//!
//! `code` is a lowercase identifier a program can match on; `message` says
//! in words what was wrong and what to do; `problems` lists the invalid
//! fields of a refused document with their places (the first 100, then one
//! entry saying how many more). The codes:
//!
//! | status | code | when |
//! |---|---|---|
//! | 400 | `bad_request` | the request cannot be read (not JSON, wrong shape) |
//! | 400 | `invalid_document` | the content breaks a rule; `problems` says where |
//! | 401 | `unauthorized` | the token is missing or wrong |
//! | 403 | `forbidden` | the caller's role does not allow the operation |
//! | 404 | `admin_api_disabled`, `internal_api_disabled` | the API's token is not configured |
//! | 404 | `not_found`, `<thing>_not_found` | what the path names does not exist, or no operation is at the path |
//! | 405 | `method_not_allowed` | the path's operations take other methods; `Allow` names them |
//! | 409 | `<thing>_exists`, `conflict`, `<thing>_changed` | it exists already, or others kept changing it meanwhile |
//! | 412 | `precondition_failed` | `If-Match` names a revision that is no longer the stored one |
//! | 413 | `too_large` | the body is over the route's size limit |
//! | 503 | `temporarily_unavailable` | the database is unreachable; `Retry-After` says when to try again |
//! | 500 | `internal_error` | anything else; details only in the log |
//!
//! A refused request changes nothing.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use portico_storage::StorageError;

/// Characters an error message holds at most.
pub const MAX_MESSAGE: usize = 512;

/// Problems an answer lists at most: a document wrong in thousands of
/// places is answered with the first of them and how many more there are.
pub const MAX_PROBLEMS: usize = 100;

/// Characters a problem's place holds at most.
const MAX_PLACE: usize = 200;

/// Seconds a client is told to wait after an outage answer.
const RETRY_AFTER_SECS: &str = "5";

/// One problem of a refused document, and where it is (`redirectUris[1]`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct Problem {
    #[schema(example = "redirectUris[1]")]
    pub place: String,
    #[schema(example = "a redirect URI has no fragment")]
    pub message: String,
}

impl Problem {
    pub fn new(place: impl Into<String>, message: impl Into<String>) -> Self {
        Self { place: place.into(), message: message.into() }
    }

    /// `problems` as an answer lists them: the first [`MAX_PROBLEMS`], each
    /// cut to a readable length (a place or message may repeat what was
    /// sent), then, when there were more, one more saying how many.
    pub fn listed(mut problems: Vec<Self>) -> Vec<Self> {
        let more = problems.len().saturating_sub(MAX_PROBLEMS);
        problems.truncate(MAX_PROBLEMS);
        for problem in &mut problems {
            problem.place = portico_model::text::capped(std::mem::take(&mut problem.place), MAX_PLACE);
            problem.message = portico_model::text::capped(std::mem::take(&mut problem.message), MAX_MESSAGE);
        }
        if more > 0 {
            let noun = if more == 1 { "problem" } else { "problems" };
            problems.push(Self::new("", format!("and {more} more {noun}: mend these and send it again")));
        }
        problems
    }

    /// A problem written as `place: message` (the form the data checks of
    /// brokerage documents give); the whole text is the message when it
    /// names no place.
    pub fn from_line(line: &str) -> Self {
        match line.split_once(": ") {
            Some((place, message)) => Self::new(place, message),
            None => Self::new("", line),
        }
    }
}

/// The body of every admin and internal API error.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(as = AdminError)]
pub struct ErrorBody {
    /// See the table of codes in the API description.
    #[schema(example = "invalid_document")]
    pub code: &'static str,
    pub message: String,
    /// With `invalid_document`: each problem and its place (the first
    /// 100, then one saying how many more).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<Problem>,
}

/// An admin or internal API error: one variant per kind of refusal in
/// the table above, answered as [`ErrorBody`].
#[derive(Debug)]
pub enum ApiError {
    /// 400 `bad_request`: the request cannot be read.
    BadRequest(String),
    /// 400 `invalid_document`: the content breaks a rule; every problem and its place.
    Invalid { message: String, problems: Vec<Problem> },
    /// 401 `unauthorized`, with RFC 6750 §3's challenge (`Bearer` alone
    /// when no token came).
    Unauthorized(String, portico_tokens::Challenge),
    /// 403 `forbidden`.
    Forbidden(String),
    /// 404 with its code: `not_found`, `<thing>_not_found`, `admin_api_disabled`, `internal_api_disabled`.
    NotFound(&'static str, String),
    /// 405 `method_not_allowed`: the path takes other methods (the
    /// router's `Allow` header names them).
    MethodNotAllowed(String),
    /// 409 with its code: `<thing>_exists`, `conflict`.
    Conflict(&'static str, String),
    /// 412 `precondition_failed`: `If-Match` names another revision than
    /// the stored one.
    PreconditionFailed(String),
    /// 413 `too_large`.
    TooLarge(String),
    /// 415 `bad_request`: the body is not of a type the route reads.
    UnsupportedMediaType(String),
    /// 503 `temporarily_unavailable`, with `Retry-After`: the database is
    /// unreachable; the cause is only logged.
    Unavailable,
    /// 500 `internal_error`; the cause is only logged.
    Internal,
}

impl ApiError {
    /// 400 `bad_request`: the request cannot be read.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::BadRequest(message.into())
    }

    /// A body that could not be read: 413 `too_large` over the route's
    /// size limit, else 400 `bad_request`, on every route alike.
    pub fn unread(rejection: &axum::extract::rejection::BytesRejection) -> Self {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Self::TooLarge(format!("{}: send a smaller body", rejection.body_text()))
        } else {
            Self::bad_request(rejection.body_text())
        }
    }

    /// 400 `invalid_document` with every problem.
    pub fn invalid(message: impl Into<String>, problems: Vec<Problem>) -> Self {
        Self::Invalid { message: message.into(), problems }
    }

    /// 404 with `code` (`not_found`, `user_not_found`, ...).
    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self::NotFound(code, message.into())
    }

    /// 409 with `code` (`client_exists`, ...).
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::Conflict(code, message.into())
    }

    /// 403 `forbidden`.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::Forbidden(message.into())
    }

    /// The answer to a failed storage call during `what` (logged with the
    /// cause): 503 `unavailable` with `Retry-After` when the database is
    /// unreachable, else 500 `internal_error`. The caller decides what a
    /// [`StorageError::Conflict`] means before reaching here.
    pub fn storage(what: &str, error: &StorageError) -> Self {
        match error {
            StorageError::Unavailable(_) => {
                tracing::warn!(%error, "{what}: the database is unavailable");
                Self::Unavailable
            }
            _ => {
                tracing::error!(%error, "{what} failed");
                Self::Internal
            }
        }
    }

    /// The status of the answer.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) | Self::Invalid { .. } => StatusCode::BAD_REQUEST,
            Self::Unauthorized(..) => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(..) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            Self::Conflict(..) => StatusCode::CONFLICT,
            Self::PreconditionFailed(_) => StatusCode::PRECONDITION_FAILED,
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The body of the answer; the message cut after [`MAX_MESSAGE`]
    /// characters, whatever it repeats.
    pub fn body(self) -> ErrorBody {
        let (code, message, problems) = match self {
            Self::BadRequest(message) | Self::UnsupportedMediaType(message) => ("bad_request", message, Vec::new()),
            Self::Invalid { message, problems } => ("invalid_document", message, problems),
            Self::Unauthorized(message, _) => ("unauthorized", message, Vec::new()),
            Self::Forbidden(message) => ("forbidden", message, Vec::new()),
            Self::MethodNotAllowed(message) => ("method_not_allowed", message, Vec::new()),
            Self::NotFound(code, message) | Self::Conflict(code, message) => (code, message, Vec::new()),
            Self::PreconditionFailed(message) => ("precondition_failed", message, Vec::new()),
            Self::TooLarge(message) => ("too_large", message, Vec::new()),
            Self::Unavailable => (
                "temporarily_unavailable",
                "the database is unavailable; nothing was changed: try again".to_owned(),
                Vec::new(),
            ),
            Self::Internal => ("internal_error", "internal error; nothing was changed".to_owned(), Vec::new()),
        };
        ErrorBody {
            code,
            message: portico_model::text::capped(message, MAX_MESSAGE),
            problems: Problem::listed(problems),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let retry = matches!(self, Self::Unavailable);
        let challenge = match &self {
            Self::Unauthorized(_, challenge) => Some(challenge.header()),
            _ => None,
        };
        let mut response = (status, Json(self.body())).into_response();
        if retry {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECS));
        }
        // RFC 9110 §15.5.2: a 401 names how to authenticate.
        if let Some(challenge) = challenge {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
        }
        response
    }
}

/// Path parameters whose refusal is the shared error body: a segment that
/// is not UTF-8 (or not what the route takes) names nothing, so 404
/// `not_found`.
#[derive(Debug)]
pub struct PathParams<T>(pub T);

impl<S, T> axum::extract::FromRequestParts<S> for PathParams<T>
where
    S: Send + Sync,
    T: serde::de::DeserializeOwned + Send,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(value)) => Ok(Self(value)),
            Err(e) => Err(ApiError::not_found("not_found", format!("the path names nothing: {}", e.body_text()))),
        }
    }
}

/// A JSON body whose refusal is the shared error body (`bad_request`
/// saying what could not be read).
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> axum::extract::FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(request: axum::extract::Request, state: &S) -> Result<Self, Self::Rejection> {
        match <axum::Json<T> as axum::extract::FromRequest<S>>::from_request(request, state).await {
            Ok(axum::Json(value)) => Ok(Self(value)),
            Err(e) => Err(json_refusal(&e)),
        }
    }
}

/// 415 without a JSON content type, 413 over the size limit, else 400
/// (not JSON, or not the shape).
fn json_refusal(e: &axum::extract::rejection::JsonRejection) -> ApiError {
    match e {
        axum::extract::rejection::JsonRejection::MissingJsonContentType(_) => {
            ApiError::UnsupportedMediaType("send the body as application/json".into())
        }
        axum::extract::rejection::JsonRejection::BytesRejection(unread) => ApiError::unread(unread),
        _ => ApiError::bad_request(e.body_text()),
    }
}

/// Query parameters read by the one reader ([`portico_model::form`]:
/// each at most once, no NUL, an empty value a value of its parameter's
/// type or refused), whose refusal is the shared error body naming the
/// parameter.
pub struct Params<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> axum::extract::FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, _: &S) -> Result<Self, Self::Rejection> {
        let form = portico_model::form::Form::parse(parts.uri.query().unwrap_or_default().as_bytes());
        form.read_given().map(Self).map_err(|e| ApiError::bad_request(e.to_string()))
    }
}

/// A page size from the query: 1 to 200, default 50.
pub fn page_size(limit: Option<u32>) -> Result<u32, ApiError> {
    match limit {
        None => Ok(50),
        Some(limit @ 1..=200) => Ok(limit),
        Some(_) => Err(ApiError::bad_request("limit: 1 to 200")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_lists_the_first_hundred_problems_cut_to_length_and_counts_the_rest() {
        let many = |n: usize| (0..n).map(|i| Problem::new(format!("items[{i}]"), "wrong")).collect::<Vec<_>>();
        assert_eq!(Problem::listed(many(100)), many(100), "a hundred are all listed");
        let listed = Problem::listed(many(101));
        assert_eq!(listed[..100], many(100));
        assert_eq!(listed[100], Problem::new("", "and 1 more problem: mend these and send it again"));
        assert_eq!(Problem::listed(many(5000))[100].message, "and 4900 more problems: mend these and send it again");
        let long = Problem::listed(vec![Problem::new("p".repeat(10_000), "m".repeat(10_000))]);
        assert_eq!(long[0].place.chars().count(), MAX_PLACE + 1, "cut, with an ellipsis");
        assert_eq!(long[0].message.chars().count(), MAX_MESSAGE + 1);
    }

    #[test]
    fn a_line_with_a_place_splits_at_the_first_colon() {
        assert_eq!(
            Problem::from_line("agreements[0].trades[3].price: not a number: x"),
            Problem::new("agreements[0].trades[3].price", "not a number: x")
        );
        assert_eq!(Problem::from_line("nothing to say"), Problem::new("", "nothing to say"));
    }

    #[test]
    fn an_outage_says_when_to_try_again_and_a_fault_does_not() {
        let outage = ApiError::storage("test", &StorageError::Unavailable("down".into())).into_response();
        assert_eq!(outage.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(outage.headers()[header::RETRY_AFTER], "5");
        let fault = ApiError::storage("test", &StorageError::Other("bug".into())).into_response();
        assert_eq!(fault.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(fault.headers().get(header::RETRY_AFTER).is_none());
    }
}
