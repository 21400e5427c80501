//! A cache of verified JWT signatures.
//!
//! An RS256 verification costs about 20 µs of CPU; the business APIs verify
//! two tokens per request, and the same tokens arrive again and again until
//! they expire. The cache maps the SHA-256 of a token's exact text to its
//! verified claims, so each token's signature is checked once. Everything
//! else is still checked on every use: expiry against the clock, and
//! revocation in storage. A token's text fixes its signature, so a hit is
//! exactly as good as a fresh verification; entries live no longer than the
//! token's `exp`.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// Entries kept per token type before expired ones are swept out.
const CAPACITY: usize = 50_000;

type Key = [u8; 32];

pub struct VerifiedCache<C> {
    entries: RwLock<HashMap<Key, Arc<C>>>,
}

impl<C> Default for VerifiedCache<C> {
    fn default() -> Self {
        Self { entries: RwLock::new(HashMap::new()) }
    }
}

/// The cache key of a token.
pub fn key(token: &str) -> Key {
    portico_crypto::hash::sha256(token.as_bytes())
}

impl<C: crate::claims::Expiring> VerifiedCache<C> {
    pub fn get(&self, key: &Key) -> Option<Arc<C>> {
        self.entries.read().unwrap_or_else(|e| e.into_inner()).get(key).cloned()
    }

    /// Remembers verified `claims`; when full, first drops what expired by
    /// `now` (Unix seconds), and everything if that frees nothing.
    pub fn insert(&self, key: Key, claims: Arc<C>, now: i64) {
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= CAPACITY {
            entries.retain(|_, c| c.expires_at() > now);
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        entries.insert(key, claims);
    }
}
