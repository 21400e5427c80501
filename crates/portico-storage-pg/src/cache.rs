//! Node-local answers to the questions asked on every API call and token
//! request (see [`portico_storage::memory`]): is this access token's grant
//! live and the token itself not revoked, which revision of the permission
//! model is current, what a client is registered with, which key signs.
//!
//! The database announces every change to them on the `portico_cache`
//! channel (triggers of migrations 0009 and 0016), and each node listens. A node
//! trusts its memory only while it can prove it has heard everything
//! committed up to `staleness` ago: several times within that bound it
//! sends a tick of its own through the same channel, and since PostgreSQL delivers the
//! notifications of all sessions in commit order, a tick received means
//! every change committed before it was sent has been applied. Without a
//! recent tick (the listening connection dropped, stalled or is
//! reconnecting) every question goes to the database, which during an
//! outage fails and answers 503. After a reconnection the memory starts
//! empty and is trusted again only from a tick sent after it was reloaded.
//! A revoked token is therefore accepted at most `staleness` after the
//! revocation committed.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use portico_model::ids::ClientId;
use portico_storage::memory::NodeMemory;
use sqlx::PgPool;
use sqlx::postgres::PgListener;
use uuid::Uuid;

/// The channel the triggers and the ticks use.
const CHANNEL: &str = "portico_cache";

/// How often a node ticks: a quarter of its staleness bound, and at least
/// every 250 ms, so that trust returns soon after a reconnection.
fn tick_every(staleness: Duration) -> Duration {
    (staleness / 4).clamp(Duration::from_millis(10), Duration::from_millis(250))
}

/// The node-local memory and its proof of freshness.
pub(crate) struct NodeCache {
    staleness: Duration,
    node: String,
    pub(crate) memory: NodeMemory,
    /// Ticks sent and not yet received: number and when it was sent.
    sent: Mutex<VecDeque<(u64, Instant)>>,
}

impl NodeCache {
    /// Starts listening and ticking on `pool`; both stop when the returned
    /// cache is dropped.
    pub(crate) fn start(pool: PgPool, staleness: Duration) -> Arc<Self> {
        let cache = Arc::new(Self {
            staleness,
            node: Uuid::new_v4().simple().to_string(),
            memory: NodeMemory::new(),
            sent: Mutex::new(VecDeque::new()),
        });
        tokio::spawn(listen(Arc::downgrade(&cache), pool.clone()));
        tokio::spawn(tick(Arc::downgrade(&cache), pool));
        cache
    }

    fn apply(&self, payload: &str) {
        let Some((kind, value)) = payload.split_once(':') else { return };
        match kind {
            "g" => {
                if let Ok(id) = Uuid::parse_str(value) {
                    self.memory.grants_revoked([id.into()]);
                }
            }
            "j" => self.memory.token_revoked(value),
            "c" => self.memory.client_changed(&ClientId::new(value)),
            "k" => self.memory.signing_keys_changed(),
            "p" => {
                if let Ok(revision) = value.parse::<i64>() {
                    self.memory.revision_seen(revision);
                }
            }
            "t" => {
                let Some((node, number)) = value.split_once(':') else { return };
                let Ok(number) = number.parse::<u64>() else { return };
                if node != self.node {
                    return;
                }
                let mut sent = self.sent.lock().unwrap_or_else(|e| e.into_inner());
                let Some(position) = sent.iter().position(|(n, _)| *n == number) else { return };
                let at = sent[position].1;
                sent.drain(..=position);
                self.memory.fresh_as_of(at, self.staleness);
            }
            _ => {}
        }
    }

    /// Reloads what cannot be asked for lazily: the revoked tokens and the
    /// revision. Called once the channel is listened to, so nothing
    /// committed after the reload starts can be missed.
    async fn reload(&self, pool: &PgPool) -> Result<(), sqlx::Error> {
        let started = Instant::now();
        let jtis: Vec<String> = sqlx::query_scalar("SELECT jti FROM revoked_access_tokens").fetch_all(pool).await?;
        let revision: i64 =
            sqlx::query_scalar("SELECT revision FROM permission_revision WHERE id = 1").fetch_one(pool).await?;
        self.memory.load(jtis, revision, started);
        Ok(())
    }
}

/// Listens for as long as the cache lives, starting over (memory reset) on
/// any trouble, or when its own ticks stop arriving.
async fn listen(cache: Weak<NodeCache>, pool: PgPool) {
    let mut trouble_logged = false;
    loop {
        if pool.is_closed() {
            return;
        }
        let Some(staleness) = cache.upgrade().map(|c| c.staleness) else { return };
        // Its own ticks stopped arriving: the connection stalled.
        let stall = (tick_every(staleness) * 8).max(Duration::from_secs(2));
        let outcome = async {
            let mut listener = PgListener::connect_with(&pool).await?;
            listener.listen(CHANNEL).await?;
            {
                let Some(cache) = cache.upgrade() else { return Ok(()) };
                cache.reload(&pool).await?;
            }
            if trouble_logged {
                tracing::info!("the node cache listens to PostgreSQL again");
                trouble_logged = false;
            }
            loop {
                let next = tokio::time::timeout(stall, listener.try_recv()).await;
                let Some(cache) = cache.upgrade() else { return Ok(()) };
                match next {
                    Ok(Ok(Some(notification))) => cache.apply(notification.payload()),
                    Ok(Ok(None)) => return Err(sqlx::Error::PoolClosed),
                    Ok(Err(error)) => return Err(error),
                    Err(_) => return Err(sqlx::Error::PoolTimedOut),
                }
            }
        }
        .await;
        let Some(strong) = cache.upgrade() else { return };
        strong.memory.reset();
        drop(strong);
        if let Err(error) = outcome {
            if !trouble_logged {
                tracing::warn!(%error, "the node cache lost PostgreSQL; answering from the database until it is back");
                trouble_logged = true;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        } else {
            return;
        }
    }
}

/// Sends a tick every [`tick_every`].
async fn tick(cache: Weak<NodeCache>, pool: PgPool) {
    let mut number: u64 = 0;
    loop {
        let (node, every) = match cache.upgrade() {
            Some(cache) => (cache.node.clone(), tick_every(cache.staleness)),
            None => return,
        };
        tokio::time::sleep(every).await;
        if pool.is_closed() {
            return;
        }
        number += 1;
        {
            let Some(cache) = cache.upgrade() else { return };
            let mut sent = cache.sent.lock().unwrap_or_else(|e| e.into_inner());
            sent.push_back((number, Instant::now()));
            while sent.len() > 64 {
                sent.pop_front();
            }
        }
        // A failure is the listener's business: no tick, no trust.
        let _ = sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANNEL)
            .bind(format!("t:{node}:{number}"))
            .execute(&pool)
            .await;
    }
}

#[cfg(test)]
mod tests {
    use portico_model::ids::GrantId;
    use portico_storage::memory::Known;

    use super::*;

    fn cache(staleness: Duration) -> NodeCache {
        NodeCache { staleness, node: "n1".into(), memory: NodeMemory::new(), sent: Mutex::new(VecDeque::new()) }
    }

    fn sent(cache: &NodeCache, number: u64, at: Instant) {
        cache.sent.lock().unwrap().push_back((number, at));
    }

    #[test]
    fn only_its_own_tick_sent_after_the_reload_brings_trust_for_the_bound() {
        let cache = cache(Duration::from_secs(1));
        let start = Instant::now();
        sent(&cache, 1, start);
        cache.memory.load(Vec::new(), 1, start + Duration::from_millis(10));
        cache.apply("t:n1:1");
        assert!(!cache.memory.is_trusted(Instant::now()), "a tick from before the reload");
        sent(&cache, 2, start + Duration::from_millis(20));
        cache.apply("t:other-node:2");
        assert!(!cache.memory.is_trusted(Instant::now()), "another node's tick");
        cache.apply("t:n1:2");
        assert!(cache.memory.is_trusted(start + Duration::from_millis(1010)), "trusted");
        assert!(!cache.memory.is_trusted(start + Duration::from_millis(1020)), "no longer than the bound");
        assert!(cache.sent.lock().unwrap().is_empty(), "ticks heard back are forgotten");
    }

    #[test]
    fn announcements_revoke_grants_and_tokens_and_move_the_revision() {
        let cache = cache(Duration::from_secs(60));
        let grant = GrantId::from(Uuid::new_v4());
        let now = Instant::now();
        cache.memory.load(Vec::new(), 1, now);
        sent(&cache, 1, now);
        cache.apply("t:n1:1");
        let Known::Ask(generation) = cache.memory.access_token_state(grant, "j") else { panic!("unknown grant") };
        cache.memory.grant_live(grant, generation);
        cache.apply(&format!("g:{grant}"));
        cache.apply("j:jti-1");
        cache.apply("p:7");
        cache.apply("p:not-a-number");
        cache.apply("nonsense");
        assert!(matches!(
            cache.memory.access_token_state(grant, "jti-1"),
            Known::State(s) if s.grant_revoked && s.token_revoked
        ));
        assert_eq!(cache.memory.permission_revision(), Some(7));

        // A client or a signing key changed: forgotten, and an answer read
        // before the announcement is not kept after it.
        let asked = cache.memory.signing_kid("RS256").expect_err("unknown");
        cache.memory.signing_kid_found("RS256", "k1", asked);
        assert_eq!(cache.memory.signing_kid("RS256"), Ok("k1".to_owned()));
        cache.apply("k:");
        assert!(cache.memory.signing_kid("RS256").is_err(), "forgotten");
        let id = ClientId::new("app:1");
        let app = portico_model::client::Client {
            client_id: id.clone(),
            secret_hash: "sha256:00".into(),
            name: portico_model::client::LocalizedText::same("app"),
            redirect_uris: Vec::new(),
            scopes: Vec::new(),
            require_consent: false,
            post_logout_redirect_uris: Vec::new(),
            logout_revokes_grants: false,
            backchannel_logout_uri: None,
            security: Default::default(),
            secret_sealed: None,
            registration_token_hash: None,
            awaiting_approval: false,
            created_at: time::OffsetDateTime::UNIX_EPOCH,
            revision: 0,
        };
        let asked = cache.memory.client(&id).expect_err("unknown");
        cache.memory.client_found(&app, asked);
        assert_eq!(cache.memory.client(&id), Ok(app.clone()));
        cache.apply("c:app:1");
        assert!(cache.memory.client(&id).is_err(), "forgotten, though its id has a colon");
        let asked = cache.memory.client(&id).expect_err("unknown");
        cache.apply("c:other");
        cache.memory.client_found(&app, asked);
        assert!(cache.memory.client(&id).is_err(), "read before a change: not kept");
    }
}
