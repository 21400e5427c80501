//! The keys client assertions are checked with: a `private_key_jwt`
//! client's public keys (given by value, or fetched from its `jwks_uri`),
//! and a `client_secret_jwt` client's secret (kept sealed).
//!
//! A `jwks_uri` is fetched under the rule of every address Portico sends
//! requests to on someone else's word ([`portico_model::address`]: public
//! `https` only, checked again where the host name leads), with a timeout
//! of [`FETCH_TIMEOUT`], no redirects and an answer of at most
//! [`MAX_JWKS_BYTES`]. The parsed set is kept per address (clients that
//! share one share it) for [`CACHE_TTL`], and fetched again when an
//! assertion names a key the set lacks, at most once per
//! [`REFRESH_INTERVAL`]; when a fetch fails, the set fetched before serves
//! until it is [`STALE_LIMIT`] old. One fetch of an address runs at a
//! time: requests that need it meanwhile wait for its outcome (the burst
//! after a node starts makes one request, and none is refused for it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use portico_crypto::jose::KeySet;
use portico_crypto::seal::Sealer;
use portico_model::client::Client;
use portico_model::clock::Clock;
use portico_model::ids::ClientId;
use serde_json::Value;
use time::OffsetDateTime;

/// Longest a `jwks_uri` fetch may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest `jwks_uri` answer read.
pub const MAX_JWKS_BYTES: usize = 64 * 1024;
/// How long a fetched key set is used before it is fetched again.
pub const CACHE_TTL: time::Duration = time::Duration::minutes(10);
/// Least time between two fetches of one address.
pub const REFRESH_INTERVAL: time::Duration = time::Duration::minutes(1);
/// Oldest fetched set used when fetching again fails.
pub const STALE_LIMIT: time::Duration = time::Duration::days(1);

/// A client's `jwks`, as registered, and the set read from it.
struct ByValue {
    jwks: Value,
    keys: Arc<KeySet>,
}

/// What is known of one `jwks_uri`.
#[derive(Default)]
struct Fetched {
    /// The set last fetched, and when.
    keys: Option<(Arc<KeySet>, OffsetDateTime)>,
    /// The last fetch, and why it failed if it did.
    attempt: Option<(OffsetDateTime, Option<String>)>,
}

/// The clients' assertion keys, shared by the endpoints that authenticate
/// clients.
pub struct ClientKeys {
    http: reqwest::Client,
    /// Whether `jwks_uri` must be a public `https` address.
    public_only: bool,
    sealer: Sealer,
    /// Judges the cache's ages (an injected one in tests).
    clock: Arc<dyn Clock>,
    /// Sets given by value, read once per client and registration.
    by_value: Mutex<HashMap<ClientId, ByValue>>,
    /// Sets fetched, per address; each behind its own lock, held while it
    /// is fetched.
    fetched: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Fetched>>>>,
}

impl ClientKeys {
    /// `resolver`, when given, refuses host names that lead to internal
    /// addresses (outside the demo), and addresses are held to the public
    /// `https` rule.
    ///
    /// # Errors
    /// When the HTTP client cannot be built.
    pub fn new(
        sealer: Sealer,
        clock: Arc<dyn Clock>,
        resolver: Option<Arc<dyn reqwest::dns::Resolve>>,
    ) -> Result<Self, reqwest::Error> {
        let mut builder = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .connect_timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            // Directly: a proxy named in the environment would resolve the
            // host itself, out of the resolver's sight.
            .no_proxy()
            .user_agent(concat!("Portico/", env!("CARGO_PKG_VERSION")));
        let public_only = resolver.is_some();
        if let Some(resolver) = resolver {
            builder = builder.dns_resolver(resolver);
        }
        Ok(Self {
            http: builder.build()?,
            public_only,
            sealer,
            clock,
            by_value: Mutex::default(),
            fetched: Mutex::default(),
        })
    }

    /// The `client_secret_jwt` client's secret, opened.
    pub fn secret(&self, client: &Client) -> Option<Vec<u8>> {
        portico_crypto::jose::open_client_secret(&self.sealer, client.secret_sealed.as_deref()?)
    }

    /// The client's public keys. With `refresh`, a set fetched from its
    /// `jwks_uri` is fetched again unless that was tried less than
    /// [`REFRESH_INTERVAL`] ago (an assertion named a key it lacks).
    ///
    /// # Errors
    /// Why there are no keys, in words for the client's developer.
    pub async fn keys(&self, client: &Client, refresh: bool) -> Result<Arc<KeySet>, String> {
        match (&client.security.jwks, &client.security.jwks_uri) {
            (Some(jwks), _) => self.keys_by_value(&client.client_id, jwks),
            (None, Some(uri)) => self.keys_at(uri, refresh, &client.client_id).await,
            (None, None) => Err("the client has no registered keys (jwks or jwks_uri)".into()),
        }
    }

    fn keys_by_value(&self, client_id: &ClientId, jwks: &Value) -> Result<Arc<KeySet>, String> {
        let mut by_value = self.by_value.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(read) = by_value.get(client_id).filter(|read| read.jwks == *jwks) {
            return Ok(Arc::clone(&read.keys));
        }
        let keys = Arc::new(KeySet::parse(jwks).map_err(|e| format!("the client's jwks: {e}"))?);
        by_value.insert(client_id.clone(), ByValue { jwks: jwks.clone(), keys: Arc::clone(&keys) });
        Ok(keys)
    }

    /// The set at `uri`: the one kept while it is young enough (and, with
    /// `refresh`, while the last fetch is under a minute old), else fetched
    /// now, by this request or the one already fetching it.
    async fn keys_at(&self, uri: &str, refresh: bool, client_id: &ClientId) -> Result<Arc<KeySet>, String> {
        let slot = {
            let mut fetched = self.fetched.lock().unwrap_or_else(|e| e.into_inner());
            if !fetched.contains_key(uri) {
                // Addresses last fetched over a day ago are forgotten (their
                // clients moved or left); one being fetched stays.
                let now = self.clock.now();
                fetched.retain(|_, slot| {
                    slot.try_lock()
                        .map_or(true, |known| known.attempt.as_ref().is_none_or(|(at, _)| now - *at < STALE_LIMIT))
                });
            }
            Arc::clone(fetched.entry(uri.to_owned()).or_default())
        };
        let mut known = slot.lock().await;
        let now = self.clock.now();
        let may_fetch = known.attempt.as_ref().is_none_or(|(at, _)| now - *at >= REFRESH_INTERVAL);
        let young = known.keys.as_ref().filter(|(_, at)| now - *at < CACHE_TTL);
        if let Some((keys, _)) = young
            && !(refresh && may_fetch)
        {
            return Ok(Arc::clone(keys));
        }
        let usable = |known: &Fetched| {
            known.keys.as_ref().filter(|(_, at)| now - *at < STALE_LIMIT).map(|(keys, _)| Arc::clone(keys))
        };
        if !may_fetch {
            return match (usable(&known), &known.attempt) {
                (Some(keys), _) => Ok(keys),
                (None, Some((_, Some(error)))) => Err(format!("{error} (less than a minute ago; try again later)")),
                (None, _) => Err("the client's jwks_uri was fetched less than a minute ago; try again later".into()),
            };
        }
        let outcome = self.fetch(uri).await;
        known.attempt = Some((now, outcome.as_ref().err().cloned()));
        match outcome {
            Ok(keys) => {
                let keys = Arc::new(keys);
                known.keys = Some((Arc::clone(&keys), now));
                Ok(keys)
            }
            Err(error) => match usable(&known) {
                Some(keys) => {
                    tracing::warn!(%client_id, %error, "fetching the client's jwks_uri failed; the keys fetched before serve");
                    Ok(keys)
                }
                None => Err(error),
            },
        }
    }

    async fn fetch(&self, uri: &str) -> Result<KeySet, String> {
        portico_model::address::check_public_url(uri, !self.public_only)
            .map_err(|e| format!("the client's jwks_uri {e}"))?;
        let failed = |e: reqwest::Error| format!("the client's jwks_uri could not be fetched: {e}");
        let mut response = self
            .http
            .get(uri)
            .header(reqwest::header::ACCEPT, "application/jwk-set+json, application/json")
            .send()
            .await
            .map_err(failed)?;
        if response.status() != reqwest::StatusCode::OK {
            return Err(format!("the client's jwks_uri answered {}", response.status()));
        }
        if response.content_length().is_some_and(|length| length > MAX_JWKS_BYTES as u64) {
            return Err(format!("the client's jwks_uri answer is larger than {MAX_JWKS_BYTES} bytes"));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(failed)? {
            if body.len() + chunk.len() > MAX_JWKS_BYTES {
                return Err(format!("the client's jwks_uri answer is larger than {MAX_JWKS_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        let jwks: Value =
            serde_json::from_slice(&body).map_err(|e| format!("the client's jwks_uri answer is not JSON: {e}"))?;
        KeySet::parse(&jwks).map_err(|e| format!("the client's jwks_uri: {e}"))
    }
}
