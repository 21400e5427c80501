//! Password checks, capped: each Argon2id run takes 19 MiB and tens of
//! milliseconds, so at most a few run at once and they run off the executor.

use tokio::sync::Semaphore;

pub struct PasswordChecker {
    permits: Semaphore,
}

impl PasswordChecker {
    /// At most `concurrency` hashes at once (at least one).
    pub fn new(concurrency: usize) -> Self {
        Self { permits: Semaphore::new(concurrency.max(1)) }
    }

    /// Whether `password` matches `stored`. With `stored = None` (unknown
    /// user) a decoy hash is checked so that the answer takes as long.
    pub async fn verify(&self, stored: Option<String>, password: String) -> bool {
        let Ok(_permit) = self.permits.acquire().await else {
            return false;
        };
        tokio::task::spawn_blocking(move || match stored {
            Some(stored) => portico_crypto::password::verify(&stored, &password),
            None => {
                let _ = portico_crypto::password::verify(portico_crypto::password::decoy(), &password);
                false
            }
        })
        .await
        .unwrap_or(false)
    }
}
