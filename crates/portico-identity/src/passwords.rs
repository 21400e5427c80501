//! Password checks, capped: each Argon2id run takes 19 MiB and tens of
//! milliseconds, so at most a few run at once and they run off the executor.

use std::sync::Mutex;

use portico_crypto::password::Memory;
use tokio::sync::Semaphore;

pub struct PasswordChecker {
    permits: Semaphore,
    /// The working memory of finished checks, for the next ones: at most
    /// one per permit, so the checker never holds more than `concurrency`
    /// times 19 MiB.
    memories: Mutex<Vec<Memory>>,
}

impl PasswordChecker {
    /// At most `concurrency` hashes at once (at least one).
    pub fn new(concurrency: usize) -> Self {
        Self { permits: Semaphore::new(concurrency.max(1)), memories: Mutex::new(Vec::new()) }
    }

    /// Whether `password` matches `stored`. With `stored = None` (unknown
    /// user) a decoy hash is checked so that the answer takes as long.
    pub async fn verify(&self, stored: Option<String>, password: String) -> bool {
        let Ok(_permit) = self.permits.acquire().await else {
            return false;
        };
        let kept = self.memories.lock().ok().and_then(|mut memories| memories.pop());
        let checked = tokio::task::spawn_blocking(move || {
            let mut memory = kept.unwrap_or_default();
            let hash: &str = stored.as_deref().unwrap_or_else(|| portico_crypto::password::decoy());
            let matches = portico_crypto::password::verify_in(&mut memory, hash, &password) && stored.is_some();
            (matches, memory)
        })
        .await;
        match checked {
            Ok((matches, memory)) => {
                if let Ok(mut memories) = self.memories.lock() {
                    memories.push(memory);
                }
                matches
            }
            Err(_) => false,
        }
    }
}
