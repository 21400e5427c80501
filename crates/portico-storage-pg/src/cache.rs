//! Node-local answers to the two questions asked on every API call: is this
//! access token's grant live and the token itself not revoked, and which
//! revision of the permission model is current.
//!
//! The database announces every change to them on the `portico_cache`
//! channel (triggers of migration 0009), and each node listens. A node
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

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use portico_model::ids::GrantId;
use portico_model::oauth::AccessTokenState;
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

/// Entries of one set before the memory starts over (and refills).
const MOST_ENTRIES: usize = 1_000_000;

/// The node-local memory and its proof of freshness.
pub(crate) struct NodeCache {
    staleness: Duration,
    node: String,
    state: Mutex<State>,
    /// Ticks sent and not yet received: number and when it was sent.
    sent: Mutex<VecDeque<(u64, Instant)>>,
}

#[derive(Default)]
struct State {
    /// Answers are trusted until then.
    trusted_until: Option<Instant>,
    /// Ticks sent before this do not count (the memory was reset after).
    loaded_at: Option<Instant>,
    /// Bumped by every reset: an answer read from the database before a
    /// reset is not remembered after it.
    generation: u64,
    revoked_jtis: HashSet<String>,
    revoked_grants: HashSet<GrantId>,
    live_grants: HashSet<GrantId>,
    revision: Option<i64>,
}

impl State {
    fn trusted(&self, now: Instant) -> bool {
        self.trusted_until.is_some_and(|until| now < until)
    }

    fn revoke_grant(&mut self, id: GrantId) {
        self.live_grants.remove(&id);
        self.revoked_grants.insert(id);
    }

    /// Revisions only move forward, whichever way they are learnt.
    fn see_revision(&mut self, revision: i64) {
        self.revision = Some(self.revision.map_or(revision, |known| known.max(revision)));
    }

    /// Forgets everything and trusts nothing; answers asked before are not
    /// remembered after.
    fn reset(&mut self) {
        let generation = self.generation.wrapping_add(1);
        *self = Self { generation, ..Self::default() };
    }
}

/// What the memory knows about an access token.
pub(crate) enum Known {
    State(AccessTokenState),
    /// Ask the database; remember its answer under this generation.
    Ask(u64),
}

impl NodeCache {
    /// Starts listening and ticking on `pool`; both stop when the returned
    /// cache is dropped.
    pub(crate) fn start(pool: PgPool, staleness: Duration) -> Arc<Self> {
        let cache = Arc::new(Self {
            staleness,
            node: Uuid::new_v4().simple().to_string(),
            state: Mutex::new(State::default()),
            sent: Mutex::new(VecDeque::new()),
        });
        tokio::spawn(listen(Arc::downgrade(&cache), pool.clone()));
        tokio::spawn(tick(Arc::downgrade(&cache), pool));
        cache
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state of an access token, when the memory may answer.
    pub(crate) fn access_token_state(&self, grant_id: GrantId, jti: &str) -> Known {
        let state = self.state();
        if !state.trusted(Instant::now()) {
            return Known::Ask(u64::MAX);
        }
        let token_revoked = state.revoked_jtis.contains(jti);
        if state.revoked_grants.contains(&grant_id) {
            return Known::State(AccessTokenState { grant_revoked: true, token_revoked });
        }
        if state.live_grants.contains(&grant_id) {
            return Known::State(AccessTokenState { grant_revoked: false, token_revoked });
        }
        Known::Ask(state.generation)
    }

    /// Remembers a grant the database found live, unless the memory was
    /// reset since the question was asked.
    pub(crate) fn grant_live(&self, grant_id: GrantId, generation: u64) {
        let mut state = self.state();
        if state.generation == generation && state.live_grants.len() < MOST_ENTRIES {
            state.live_grants.insert(grant_id);
        }
    }

    /// The current permission revision, when the memory may answer.
    pub(crate) fn permission_revision(&self) -> Option<i64> {
        let state = self.state();
        if state.trusted(Instant::now()) { state.revision } else { None }
    }

    /// This node revoked `grants`: its own answers reflect that at once,
    /// before the notification comes back.
    pub(crate) fn grants_revoked(&self, grants: impl IntoIterator<Item = GrantId>) {
        let mut state = self.state();
        for id in grants {
            state.revoke_grant(id);
        }
    }

    /// This node revoked the access token `jti`.
    pub(crate) fn token_revoked(&self, jti: &str) {
        self.state().revoked_jtis.insert(jti.to_owned());
    }

    /// This node saved the permission model as `revision`.
    pub(crate) fn revision_saved(&self, revision: i64) {
        self.state().see_revision(revision);
    }

    /// Forgets everything and trusts nothing until reloaded and ticked.
    fn reset(&self) {
        self.state().reset();
    }

    fn apply(&self, payload: &str) {
        let Some((kind, value)) = payload.split_once(':') else { return };
        let mut state = self.state();
        match kind {
            "g" => {
                if let Ok(id) = Uuid::parse_str(value) {
                    state.revoke_grant(id.into());
                }
            }
            "j" => {
                state.revoked_jtis.insert(value.to_owned());
            }
            "p" => {
                if let Ok(revision) = value.parse::<i64>() {
                    state.see_revision(revision);
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
                if state.loaded_at.is_some_and(|loaded| at >= loaded) {
                    let until = at + self.staleness;
                    state.trusted_until = Some(state.trusted_until.map_or(until, |known| known.max(until)));
                }
            }
            _ => {}
        }
        if state.revoked_grants.len() > MOST_ENTRIES || state.revoked_jtis.len() > MOST_ENTRIES {
            state.reset();
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
        let mut state = self.state();
        state.revoked_jtis.extend(jtis);
        state.see_revision(revision);
        state.loaded_at = Some(started);
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
        strong.reset();
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
    use super::*;

    fn cache(staleness: Duration) -> NodeCache {
        NodeCache {
            staleness,
            node: "n1".into(),
            state: Mutex::new(State::default()),
            sent: Mutex::new(VecDeque::new()),
        }
    }

    fn sent(cache: &NodeCache, number: u64, at: Instant) {
        cache.sent.lock().unwrap().push_back((number, at));
    }

    #[test]
    fn only_a_tick_sent_after_the_reload_brings_trust_for_the_bound() {
        let cache = cache(Duration::from_secs(1));
        let grant = GrantId::from(Uuid::new_v4());
        let start = Instant::now();
        sent(&cache, 1, start);
        cache.state().loaded_at = Some(start + Duration::from_millis(10));
        cache.apply("t:n1:1");
        assert!(matches!(cache.access_token_state(grant, "j"), Known::Ask(u64::MAX)), "a tick from before the reload");
        sent(&cache, 2, start + Duration::from_millis(20));
        cache.apply("t:other-node:2");
        assert!(matches!(cache.access_token_state(grant, "j"), Known::Ask(u64::MAX)), "another node's tick");
        cache.apply("t:n1:2");
        let generation = match cache.access_token_state(grant, "j") {
            Known::Ask(generation) => generation,
            Known::State(_) => panic!("an unknown grant is asked for"),
        };
        assert_ne!(generation, u64::MAX, "trusted");
        cache.grant_live(grant, generation);
        assert!(matches!(cache.access_token_state(grant, "j"), Known::State(s) if s.is_live()));
        assert!(!cache.state().trusted(start + Duration::from_millis(1020)), "no longer than the bound");
    }

    #[test]
    fn announcements_revoke_and_a_reset_forgets_answers_asked_before_it() {
        let cache = cache(Duration::from_secs(60));
        let (grant, other) = (GrantId::from(Uuid::new_v4()), GrantId::from(Uuid::new_v4()));
        let now = Instant::now();
        cache.state().loaded_at = Some(now);
        sent(&cache, 1, now);
        cache.apply("t:n1:1");
        let Known::Ask(generation) = cache.access_token_state(grant, "j") else { panic!("unknown grant") };
        cache.grant_live(grant, generation);
        cache.apply(&format!("g:{grant}"));
        cache.apply("j:jti-1");
        cache.apply("p:7");
        cache.apply("p:5");
        assert!(matches!(cache.access_token_state(grant, "x"), Known::State(s) if s.grant_revoked && !s.token_revoked));
        assert_eq!(cache.permission_revision(), Some(7), "revisions only move forward");

        let Known::Ask(asked_before) = cache.access_token_state(other, "jti-1") else { panic!("unknown grant") };
        cache.reset();
        cache.grant_live(other, asked_before);
        assert!(cache.state().live_grants.is_empty(), "an answer from before the reset is not kept");
        assert!(matches!(cache.access_token_state(grant, "j"), Known::Ask(u64::MAX)), "untrusted after a reset");
    }
}
