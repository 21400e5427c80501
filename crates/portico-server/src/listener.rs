//! The HTTP listener: HTTP/1.1 on hyper, with the limits a public server
//! needs against slow and idle clients (`[http]` in docs/configuration.md):
//!
//! - the head of a request (request line and headers) must arrive in full
//!   within `header_read_timeout`; hyper starts that clock when a connection
//!   opens and again after each response, so it also closes a kept-alive
//!   connection that sends no next request (slowloris, idle keep-alive);
//! - a connection on which no byte moves either way for `idle_timeout` is
//!   closed (a stalled request body, a client that stops reading);
//! - a request's body must arrive in full within `body_timeout` of its head,
//!   and, past its first [`RATE_GRACE`], at `body_min_rate` bytes a second on
//!   average (a body trickled a byte at a time): otherwise the request is
//!   answered `408 Request Timeout` and the connection closed. Only time
//!   spent waiting on the client counts: a handler that reads late does not
//!   make its client slow;
//! - at most `max_connections` are open at once; past that, new ones wait in
//!   the kernel's accept queue until one closes;
//! - on shutdown, idle connections close at once and requests in flight
//!   may finish within `shutdown_grace`; whatever is still open then (a
//!   slow download, a head never finished) is closed, so that a node stops
//!   in a bounded time.
//!
//! Each request carries its peer address as [`ConnectInfo`].
//!
//! Given a TLS configuration (Portico's own mutual-TLS listener,
//! `mtls.listen`), each connection's handshake must finish within
//! `header_read_timeout`, off the accept loop; every request on it carries
//! the certificate the client presented as a [`Presented`] extension (or
//! none), and [`DirectTls`], which tells the certificate edge not to read
//! a terminator's header there.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tower::ServiceExt as _;

use portico_crypto::certificate::{ClientCertificate, Presented};
use portico_identity::mtls::DirectTls;

/// The listener's limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
    pub body_timeout: Duration,
    /// Bytes a second, on average past [`RATE_GRACE`].
    pub body_min_rate: u64,
    /// How long requests in flight may take to finish once shutdown begins.
    pub shutdown_grace: Duration,
}

/// How long a request body may take before its average rate is judged.
pub const RATE_GRACE: Duration = Duration::from_secs(5);

/// Serves `router` on `listener` until `shutdown` completes, then lets the
/// requests in flight finish within `limits.shutdown_grace` (idle
/// connections are closed at once) and closes what is still open.
///
/// # Errors
/// Never today; accept errors are logged and the loop goes on.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let tls = tls.map(tokio_rustls::TlsAcceptor::from);
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    // Told to every connection when the grace is over: it is closed.
    let (cut_tx, cut) = tokio::sync::watch::channel(false);
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout).keep_alive(true);
    let mut full_since: Option<Instant> = None;
    tokio::pin!(shutdown);
    loop {
        let permit = match Arc::clone(&permits).try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                if full_since.is_none_or(|since| since.elapsed() > Duration::from_secs(60)) {
                    tracing::warn!(
                        max_connections = limits.max_connections,
                        "every connection slot is taken (http.max_connections); new connections wait"
                    );
                    full_since = Some(Instant::now());
                }
                tokio::select! {
                    permit = Arc::clone(&permits).acquire_owned() => permit.map_err(io::Error::other)?,
                    () = &mut shutdown => break,
                }
            }
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: wait a little rather than spin.
                    tracing::warn!(%error, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let stream = Idle::new(stream, limits.idle_timeout);
        let (router, http, watcher, mut cut) = (router.clone(), http.clone(), graceful.watcher(), cut.clone());
        let acceptor = tls.clone();
        let connection = async move {
            let Some(acceptor) = acceptor else {
                let connection = http.serve_connection(TokioIo::new(stream), service(router, peer, limits, None));
                if let Err(error) = watcher.watch(connection).await {
                    tracing::debug!(%error, %peer, "connection closed with an error");
                }
                return;
            };
            let handshake = tokio::time::timeout(limits.header_read_timeout, acceptor.accept(stream)).await;
            let stream = match handshake {
                Ok(Ok(stream)) => stream,
                Ok(Err(error)) => return tracing::debug!(%error, %peer, "TLS handshake failed"),
                Err(_) => return tracing::debug!(%peer, "TLS handshake did not finish in time"),
            };
            let presented = stream
                .get_ref()
                .1
                .peer_certificates()
                .and_then(<[_]>::first)
                .map(|certificate| Presented(ClientCertificate::from_der(certificate.to_vec())));
            let service = service(router, peer, limits, Some(presented));
            if let Err(error) = watcher.watch(http.serve_connection(TokioIo::new(stream), service)).await {
                tracing::debug!(%error, %peer, "connection closed with an error");
            }
        };
        tokio::spawn(async move {
            tokio::select! {
                () = connection => {}
                _ = cut.wait_for(|cut| *cut) => {}
            }
            drop(permit);
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.shutdown_grace, graceful.shutdown()).await.is_err() {
        let open = limits.max_connections.max(1) - permits.available_permits();
        tracing::warn!(
            open,
            grace_secs = limits.shutdown_grace.as_secs(),
            "closing the connections still busy when the shutdown grace ran out (http.shutdown_grace_secs)"
        );
        let _ = cut_tx.send(true);
        // Each connection gives its slot back as it closes.
        let all = u32::try_from(limits.max_connections.max(1)).unwrap_or(u32::MAX);
        let _ = permits.acquire_many(all).await;
    }
    Ok(())
}

/// The service of one connection from `peer`: each request with its peer
/// address, its body under the limits, and on a TLS connection the
/// client's certificate (`tls`: the one presented, if any).
fn service(
    router: Router,
    peer: SocketAddr,
    limits: Limits,
    tls: Option<Option<Presented>>,
) -> impl hyper::service::Service<
    hyper::Request<Incoming>,
    Response = Response,
    Error = std::convert::Infallible,
    Future = impl Future<Output = Result<Response, std::convert::Infallible>> + Send,
> + Clone {
    hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
        if let Some(presented) = &tls {
            request.extensions_mut().insert(DirectTls);
            if let Some(presented) = presented {
                request.extensions_mut().insert(presented.clone());
            }
        }
        let refused = host_problem(&request).or_else(|| coding_problem(&request));
        let late = Arc::new(AtomicBool::new(false));
        let request = request.map(|body| axum::body::Body::new(BodyDeadline::new(body, &limits, Arc::clone(&late))));
        let answer = router.clone().oneshot(request);
        async move {
            if let Some((status, problem)) = refused {
                return Ok(refuse_head(peer, status, problem));
            }
            let response = answer.await?;
            Ok::<_, std::convert::Infallible>(if late.load(Ordering::Relaxed) { too_slow(peer) } else { response })
        }
    })
}

/// What is wrong with a request's `Host` (RFC 9112 §3.2): an HTTP/1.1
/// request must carry exactly one, and any request's must be a host with
/// an optional port (RFC 9110 §7.2; empty only where the target has no
/// authority). Portico never builds an address from it, but a request a
/// proxy in front may read differently (two hosts, no host) is refused
/// rather than served.
fn host_problem<B>(request: &hyper::Request<B>) -> Option<(StatusCode, &'static str)> {
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let problem = match (hosts.next(), hosts.next()) {
        (None, _) if request.version() == hyper::Version::HTTP_11 => {
            Some("The request has no Host header: an HTTP/1.1 request names its host (RFC 9112 §3.2).\n")
        }
        (None, _) => None,
        (Some(_), Some(_)) => Some("The request has more than one Host header: send one.\n"),
        (Some(host), None) if host.is_empty() || is_host_and_port(host.as_bytes()) => None,
        (Some(_), None) => Some("The Host header is not a host name or address with an optional port.\n"),
    };
    problem.map(|problem| (StatusCode::BAD_REQUEST, problem))
}

/// What is wrong with a request's `Transfer-Encoding` (RFC 9112 §6.1):
/// Portico decodes `chunked` alone, so a body under another coding
/// (`gzip, chunked`) is answered `501`, and `chunked` applied twice
/// (which a sender must not do) `400`. The HTTP layer has already refused
/// a coding after `chunked` and any coding in HTTP/1.0.
fn coding_problem<B>(request: &hyper::Request<B>) -> Option<(StatusCode, &'static str)> {
    let mut chunked = 0_usize;
    for value in request.headers().get_all(header::TRANSFER_ENCODING) {
        let Ok(value) = value.to_str() else {
            return Some((StatusCode::NOT_IMPLEMENTED, UNKNOWN_CODING));
        };
        for coding in value.split(',').map(str::trim).filter(|coding| !coding.is_empty()) {
            if !coding.eq_ignore_ascii_case("chunked") {
                return Some((StatusCode::NOT_IMPLEMENTED, UNKNOWN_CODING));
            }
            chunked += 1;
        }
    }
    (chunked > 1).then_some((
        StatusCode::BAD_REQUEST,
        "The request's Transfer-Encoding names chunked more than once: apply it once (RFC 9112 §6.1).\n",
    ))
}

/// The answer to a body under a transfer coding Portico does not decode.
const UNKNOWN_CODING: &str = "The request's Transfer-Encoding names a coding other than chunked, which Portico does not \
                              decode: send the body uncoded, with Content-Length or chunked alone (RFC 9112 §6.1).\n";

/// `uri-host [ ":" port ]` (RFC 3986 §3.2.2–3): a registered name, an IPv4
/// address or a bracketed IP literal, with no user information; the port
/// digits only.
fn is_host_and_port(value: &[u8]) -> bool {
    let Some(authority) = std::str::from_utf8(value)
        .ok()
        .filter(|value| !value.contains('@'))
        .and_then(|value| value.parse::<axum::http::uri::Authority>().ok())
    else {
        return false;
    };
    let host = authority.host();
    let port = authority.as_str().get(host.len()..).unwrap_or_default();
    !host.is_empty()
        && (port.is_empty() || port.strip_prefix(':').is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit())))
}

/// The answer to a request whose head is refused before any route sees it
/// (its `Host` or its `Transfer-Encoding`): `status` with a line saying
/// what was wrong, and the connection is closed after it (its body, if
/// any, is never read).
fn refuse_head(peer: SocketAddr, status: StatusCode, problem: &'static str) -> Response {
    tracing::info!(%peer, status = status.as_u16(), problem = problem.trim_end(), "a request's head was refused");
    let mut response = (status, problem).into_response();
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// The answer to a request whose body came too slowly: `408`, and the
/// connection is closed after it (whatever the route made of the cut body).
fn too_slow(peer: SocketAddr) -> Response {
    tracing::info!(%peer, "a request body arrived too slowly (http.body_timeout_secs, http.body_min_bytes_per_sec)");
    let mut response =
        (StatusCode::REQUEST_TIMEOUT, "The request body did not arrive in time: send it in full without pauses.\n")
            .into_response();
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// A request body that fails once its client has been too slow: past
/// `deadline` from the request's head, or, after [`RATE_GRACE`], below
/// `min_rate` bytes a second on average. Judged only while waiting on the
/// client; `late` tells the connection's service to answer 408.
struct BodyDeadline<B> {
    inner: B,
    started: Instant,
    deadline: Duration,
    min_rate: u64,
    received: u64,
    timer: Option<Pin<Box<Sleep>>>,
    late: Arc<AtomicBool>,
}

impl<B> BodyDeadline<B> {
    fn new(inner: B, limits: &Limits, late: Arc<AtomicBool>) -> Self {
        Self {
            inner,
            started: Instant::now(),
            deadline: limits.body_timeout,
            min_rate: limits.body_min_rate,
            received: 0,
            timer: None,
            late,
        }
    }

    /// When the client, sending nothing more, becomes too slow.
    fn cut_off_at(&self) -> Instant {
        let by_rate = if self.min_rate == 0 {
            self.deadline
        } else {
            // The average stays above the minimum until received / min_rate seconds.
            Duration::from_secs_f64(self.received as f64 / self.min_rate as f64).max(RATE_GRACE)
        };
        self.started + self.deadline.min(by_rate)
    }
}

impl<B> HttpBody for BodyDeadline<B>
where
    B: HttpBody<Data = axum::body::Bytes> + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = axum::body::Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    self.received += data.len() as u64;
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(error))) => Poll::Ready(Some(Err(error.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                let cut_off_at = self.cut_off_at();
                let timer = self.timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(cut_off_at)));
                if timer.deadline() != cut_off_at {
                    timer.as_mut().reset(cut_off_at);
                }
                if timer.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.late.store(true, Ordering::Relaxed);
                Poll::Ready(Some(Err("the request body arrived too slowly".into())))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A stream that fails with [`io::ErrorKind::TimedOut`] once no byte has
/// moved either way for `timeout` while the server waits on it.
struct Idle<T> {
    inner: T,
    timeout: Duration,
    last_progress: Instant,
    timer: Pin<Box<Sleep>>,
}

impl<T> Idle<T> {
    fn new(inner: T, timeout: Duration) -> Self {
        let now = Instant::now();
        Self { inner, timeout, last_progress: now, timer: Box::pin(tokio::time::sleep_until(now + timeout)) }
    }

    /// After a write: bytes written are progress; not ready is waiting.
    fn written(&mut self, result: Poll<io::Result<usize>>, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        match result {
            Poll::Ready(result) => {
                if result.as_ref().is_ok_and(|n| *n > 0) {
                    self.last_progress = Instant::now();
                }
                Poll::Ready(result)
            }
            Poll::Pending => self.waiting(cx),
        }
    }

    /// Called when the stream is not ready: fails once the idle time is up.
    /// The timer is moved forward lazily, only when it fires early.
    fn waiting<R>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<R>> {
        loop {
            let deadline = self.last_progress + self.timeout;
            if self.timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            if Instant::now() >= deadline {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no byte moved within http.idle_timeout_secs",
                )));
            }
            self.timer.as_mut().reset(deadline);
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Idle<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(result) => {
                if buf.filled().len() > before {
                    self.last_progress = Instant::now();
                }
                Poll::Ready(result)
            }
            Poll::Pending => self.waiting(cx),
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Idle<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write(cx, data);
        self.written(written, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write_vectored(cx, data);
        self.written(written, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.inner).poll_flush(cx) {
            Poll::Ready(result) => Poll::Ready(result),
            Poll::Pending => self.waiting(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::{coding_problem, host_problem};
    use axum::http::StatusCode;

    fn request(version: hyper::Version, hosts: &[&str]) -> hyper::Request<()> {
        let mut request = hyper::Request::get("/healthz").version(version);
        for host in hosts {
            request = request.header("host", *host);
        }
        request.body(()).expect("a request")
    }

    #[test]
    fn a_request_names_one_valid_host() {
        let v11 = hyper::Version::HTTP_11;
        for good in ["id.bank.example", "id.bank.example:8443", "127.0.0.1:8080", "[::1]:8080", "localhost", ""] {
            assert_eq!(host_problem(&request(v11, &[good])), None, "{good:?}");
        }
        assert_eq!(host_problem(&request(hyper::Version::HTTP_10, &[])), None, "HTTP/1.0 may leave it out");
        assert!(host_problem(&request(v11, &[])).is_some_and(|(_, p)| p.contains("no Host header")));
        assert!(
            host_problem(&request(v11, &["a.example", "b.example"])).is_some_and(|(_, p)| p.contains("more than one"))
        );
        for bad in ["a b", "a/b", "user@id.bank.example", "id.bank.example:http", "[::1", ":8080"] {
            assert!(host_problem(&request(v11, &[bad])).is_some_and(|(_, p)| p.contains("not a host")), "{bad:?}");
        }
    }

    #[test]
    fn a_request_body_is_chunked_once_or_not_coded() {
        let with = |codings: &[&str]| {
            let mut request = hyper::Request::post("/oauth2/token").header("host", "id.bank.example");
            for coding in codings {
                request = request.header("transfer-encoding", *coding);
            }
            coding_problem(&request.body(()).expect("a request")).map(|(status, _)| status)
        };
        assert_eq!(with(&[]), None, "no coding");
        assert_eq!(with(&["chunked"]), None);
        assert_eq!(with(&["Chunked "]), None, "codings are case-insensitive");
        for unknown in [&["gzip, chunked"][..], &["gzip", "chunked"], &["x-chunked"], &["identity"], &["chunked;q=1"]] {
            assert_eq!(with(unknown), Some(StatusCode::NOT_IMPLEMENTED), "{unknown:?}");
        }
        for twice in [&["chunked, chunked"][..], &["chunked", "chunked"], &["chunked,,chunked"]] {
            assert_eq!(with(twice), Some(StatusCode::BAD_REQUEST), "{twice:?}");
        }
    }
}
