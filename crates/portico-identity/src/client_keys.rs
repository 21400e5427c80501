//! The keys client assertions are checked with: a `private_key_jwt`
//! client's public keys (given by value, or fetched from its `jwks_uri`),
//! and a `client_secret_jwt` client's secret (kept sealed).
//!
//! A `jwks_uri` is fetched under the rule of every address Portico sends
//! requests to on someone else's word ([`portico_model::address`]: public
//! `https` only, checked again where the host name leads), with a timeout
//! of [`FETCH_TIMEOUT`], no redirects and an answer of at most
//! [`MAX_JWKS_BYTES`]. The parsed set is cached per client for
//! [`CACHE_TTL`], and fetched again when an assertion names a key the set
//! lacks, at most once per [`REFRESH_INTERVAL`]; when a fetch fails, the
//! set fetched before serves until it is [`STALE_LIMIT`] old.

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
/// Least time between two fetches for one client.
pub const REFRESH_INTERVAL: time::Duration = time::Duration::minutes(1);
/// Oldest fetched set used when fetching again fails.
pub const STALE_LIMIT: time::Duration = time::Duration::days(1);

/// Where a cached set came from: the client's `jwks` or its `jwks_uri`.
enum Source {
    Value(Value),
    Uri(String),
}

/// Where a client's set comes from now, borrowed from the client (the
/// cache is compared with it before anything is copied).
#[derive(Clone, Copy)]
enum SourceOf<'a> {
    Value(&'a Value),
    Uri(&'a str),
}

impl Source {
    fn is(&self, now: SourceOf<'_>) -> bool {
        match (self, now) {
            (Self::Value(cached), SourceOf::Value(now)) => cached == now,
            (Self::Uri(cached), SourceOf::Uri(now)) => cached == now,
            _ => false,
        }
    }
}

impl SourceOf<'_> {
    fn to_source(self) -> Source {
        match self {
            Self::Value(jwks) => Source::Value(jwks.clone()),
            Self::Uri(uri) => Source::Uri(uri.to_owned()),
        }
    }
}

struct Cached {
    source: Source,
    keys: Arc<KeySet>,
    fetched: OffsetDateTime,
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
    cache: Mutex<HashMap<ClientId, Cached>>,
    /// When each `jwks_uri` was last fetched, successfully or not.
    attempts: Mutex<HashMap<String, OffsetDateTime>>,
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
            cache: Mutex::default(),
            attempts: Mutex::default(),
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
        let source = match (&client.security.jwks, &client.security.jwks_uri) {
            (Some(jwks), _) => SourceOf::Value(jwks),
            (None, Some(uri)) => SourceOf::Uri(uri),
            (None, None) => return Err("the client has no registered keys (jwks or jwks_uri)".into()),
        };
        let now = self.clock.now();
        let age = |fetched: OffsetDateTime| now - fetched;
        let cached = self
            .lock_cache()
            .get(&client.client_id)
            .filter(|c| c.source.is(source))
            .map(|c| (Arc::clone(&c.keys), c.fetched));
        let keys = match source {
            SourceOf::Value(jwks) => match cached {
                Some((keys, _)) => return Ok(keys),
                None => KeySet::parse(jwks).map_err(|e| format!("the client's jwks: {e}"))?,
            },
            SourceOf::Uri(uri) => {
                let due = cached.as_ref().is_none_or(|(_, fetched)| refresh || age(*fetched) >= CACHE_TTL);
                match (cached, due && self.may_fetch(uri, now)) {
                    (Some((keys, _)), false) => return Ok(keys),
                    (None, false) => {
                        return Err("the client's jwks_uri was fetched less than a minute ago and failed; \
                                    try again later"
                            .into());
                    }
                    (cached, true) => match self.fetch(uri).await {
                        Ok(keys) => keys,
                        Err(error) => match cached.filter(|(_, fetched)| age(*fetched) < STALE_LIMIT) {
                            Some((keys, _)) => {
                                tracing::warn!(client_id = %client.client_id, %error,
                                    "fetching the client's jwks_uri failed; the keys fetched before serve");
                                return Ok(keys);
                            }
                            None => return Err(error),
                        },
                    },
                }
            }
        };
        let keys = Arc::new(keys);
        let entry = Cached { source: source.to_source(), keys: Arc::clone(&keys), fetched: now };
        self.lock_cache().insert(client.client_id.clone(), entry);
        Ok(keys)
    }

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, HashMap<ClientId, Cached>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a fetch of `uri` may start now (and notes that it does): at
    /// most one per [`REFRESH_INTERVAL`], so that no client can make
    /// Portico a source of requests.
    fn may_fetch(&self, uri: &str, now: OffsetDateTime) -> bool {
        let mut attempts = self.attempts.lock().unwrap_or_else(|e| e.into_inner());
        if attempts.get(uri).is_some_and(|at| now - *at < REFRESH_INTERVAL) {
            return false;
        }
        attempts.retain(|_, at| now - *at < REFRESH_INTERVAL);
        attempts.insert(uri.to_owned(), now);
        true
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
