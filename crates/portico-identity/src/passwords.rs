//! Argon2id runs, capped: each takes 19 MiB and tens of milliseconds, so at
//! most a few run at once, off the executor, whoever asks: the login's
//! checks and the new passwords the admin API, SCIM, the console and the
//! CLI hash share one cap (`login.password_hash_concurrency`).

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

    /// A new hash of `password` (PHC string), made under the same cap as
    /// the checks: many users given passwords at once (a provisioning
    /// system's bulk run) wait their turn instead of each taking 19 MiB
    /// and a core.
    ///
    /// # Errors
    /// When the hashing task stopped (the runtime is shutting down).
    pub async fn hash(&self, password: String) -> Result<String, String> {
        let _permit = self.permits.acquire().await.map_err(|e| format!("password hashing stopped: {e}"))?;
        tokio::task::spawn_blocking(move || portico_crypto::password::hash(&password))
            .await
            .map_err(|e| format!("password hashing stopped: {e}"))
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

#[cfg(test)]
mod tests {
    use std::pin::pin;
    use std::task::{Context, Waker};

    use super::*;

    /// Whether `future` finishes within a few polls, yielding to the
    /// runtime in between (a blocking task needs its thread's turn).
    async fn pending_while_polled<F: std::future::Future>(future: std::pin::Pin<&mut F>) -> bool {
        let mut future = future;
        for _ in 0..20 {
            if future.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_ready() {
                return false;
            }
            tokio::task::yield_now().await;
        }
        true
    }

    #[tokio::test]
    async fn new_passwords_are_hashed_under_the_checks_cap() {
        let checker = PasswordChecker::new(1);
        let held = checker.permits.acquire().await.unwrap();
        let mut hashing = pin!(checker.hash("new-password".to_owned()));
        assert!(pending_while_polled(hashing.as_mut()).await, "waits while a check holds the one permit");
        drop(held);
        let hash = hashing.await.unwrap();
        assert!(portico_crypto::password::verify(&hash, "new-password"));
        assert_eq!(checker.permits.available_permits(), 1, "the permit is given back");
        assert!(checker.verify(Some(hash), "new-password".to_owned()).await);
    }
}
