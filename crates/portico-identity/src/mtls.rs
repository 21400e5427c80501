//! Mutual TLS (RFC 8705): the client certificate a request came with, and
//! access tokens bound to it.
//!
//! The certificate reaches Portico from the TLS terminator in front
//! (nginx, HAProxy, an ingress) in the header `mtls.certificate_header`
//! (URL-encoded PEM, as nginx's `$ssl_client_escaped_cert`), believed only
//! from a peer in `mtls.trusted_proxies`; from any other address the
//! header is dropped unread. [`edge`] reads it once per request, removes
//! the header, and leaves a [`Presented`] extension for the token endpoint
//! and every protected resource: the certificate, or why it could not be
//! read (too large, not PEM, not X.509).
//!
//! A client registered with `tls_client_certificate_bound_access_tokens`
//! gets access tokens bound to the certificate of its token request
//! (`cnf.x5t#S256`, the certificate's SHA-256); a token request without a
//! certificate is refused, and a bound token is good only over a
//! connection with that very certificate.
//!
//! Portico's own TLS listener (`mtls.listen`) puts the connection's
//! certificate in the same extension, marked [`DirectTls`]; the header is
//! never read there.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::HeaderName;
use axum::middleware::Next;
use axum::response::Response;
use portico_crypto::certificate::{CertificateError, ClientCertificate, Presented};
use portico_model::client::Client;

use crate::client_address::Cidr;
use crate::oauth2::error::OAuthError;

/// Where client certificates are believed from.
#[derive(Debug, Clone, Default)]
pub struct CertificateEdge {
    /// The header a trusted proxy puts the certificate in; `None`: no
    /// header is read.
    pub header: Option<HeaderName>,
    /// The proxies whose header is believed.
    pub trusted_proxies: Vec<Cidr>,
}

/// Marks a request that came over Portico's own TLS listener
/// (`mtls.listen`): its certificate, if any, is the connection's, already
/// in a [`Presented`] extension, and no terminator's header is read.
#[derive(Debug, Clone, Copy)]
pub struct DirectTls;

/// Middleware: reads the certificate header of a trusted proxy into a
/// [`Presented`] extension; removes the header from every request, so
/// that nothing further on can read a client's own. On Portico's own TLS
/// listener ([`DirectTls`]) the connection's certificate stands.
pub async fn edge(State(edge): State<Arc<CertificateEdge>>, mut request: Request, next: Next) -> Response {
    if let Some(name) = edge.header.as_ref().filter(|_| request.extensions().get::<DirectTls>().is_some()) {
        request.headers_mut().remove(name);
    } else if let Some(name) = &edge.header {
        let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|info| info.0.ip());
        let trusted = peer.is_some_and(|peer| edge.trusted_proxies.iter().any(|cidr| cidr.contains(peer)));
        let headers = request.headers_mut();
        let presented = if trusted && headers.contains_key(name) {
            let mut values = headers.get_all(name).iter();
            let read = match (values.next(), values.next()) {
                (Some(value), None) => ClientCertificate::from_header(value.as_bytes()),
                // Two certificates for one connection: not something a
                // terminator does.
                _ => Err(CertificateError::NotPem),
            };
            Some(Presented(read))
        } else {
            if headers.contains_key(name) {
                tracing::debug!(?peer, header = %name, "a client certificate header from an untrusted address, ignored");
            }
            None
        };
        request.headers_mut().remove(name);
        if let Some(presented) = presented {
            request.extensions_mut().insert(presented);
        }
    }
    next.run(request).await
}

/// The certificate thumbprint `client`'s access tokens are to be bound to:
/// the presented certificate's for a client whose tokens are always bound
/// to it (`tls_client_certificate_bound_access_tokens`, or the `fapi-ru`
/// profile), and for a `fapi2` client whose request carries no DPoP proof
/// (`dpop_offered`: its tokens must be bound to one or the other); none
/// for another.
///
/// # Errors
/// `invalid_request` when such a client's token request came without a
/// readable certificate.
pub fn binding_for(
    client: &Client,
    presented: Option<&Presented>,
    dpop_offered: bool,
) -> Result<Option<String>, OAuthError> {
    let security = &client.security;
    let constrained = security.requires_sender_constraint() && !dpop_offered;
    if !security.binds_to_certificate() && !constrained {
        return Ok(None);
    }
    match presented {
        Some(Presented(Ok(certificate))) => Ok(Some(certificate.thumbprint().to_owned())),
        Some(Presented(Err(error))) => Err(OAuthError::bad_request(error.to_string())),
        None if security.binds_to_certificate() => {
            let why = if security.tls_client_certificate_bound_access_tokens {
                "(tls_client_certificate_bound_access_tokens)".to_owned()
            } else {
                format!("(its security profile {})", security.security_profile)
            };
            Err(OAuthError::bad_request(format!(
                "the client's access tokens are bound to its TLS client certificate {why}: send the token request \
                 over mutual TLS"
            )))
        }
        None => Err(OAuthError::bad_request(format!(
            "the client's access tokens must be sender-constrained (its security profile {}): send a DPoP proof, \
             or the token request over mutual TLS",
            security.security_profile
        ))),
    }
}
