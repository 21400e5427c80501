//! What a serving node remembers of the two questions asked on every API
//! call: is this access token's grant live and the token itself not
//! revoked, and which revision of the permission model is current.
//!
//! Both backends keep one [`NodeMemory`] and differ only in how they prove
//! it fresh (PostgreSQL: its own ticks heard back on the notification
//! channel; SQLite: the file unchanged by any other process). The memory
//! answers only while such a proof, taken after it was loaded, is younger
//! than the staleness bound; otherwise every question goes to the
//! database. A grant is remembered as live once the database said so; the
//! revoked access tokens and the revision are loaded whole.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use portico_model::ids::GrantId;
use portico_model::oauth::AccessTokenState;

/// Entries of one set before the memory starts over (and refills).
const MOST_ENTRIES: usize = 1_000_000;

/// What the memory knows about an access token.
#[derive(Debug)]
pub enum Known {
    State(AccessTokenState),
    /// Ask the database; remember a live grant under this generation
    /// (see [`NodeMemory::grant_live`]).
    Ask(u64),
}

/// The memory of one node; see the module's documentation.
#[derive(Default)]
pub struct NodeMemory {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Answers are trusted until then.
    trusted_until: Option<Instant>,
    /// Proofs of freshness taken before this do not count (the memory was
    /// reset after them); `None` until loaded.
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

    /// Forgets everything and trusts nothing until loaded again; answers
    /// asked before are not remembered after.
    fn reset(&mut self) {
        let generation = self.generation.wrapping_add(1);
        *self = Self { generation, ..Self::default() };
    }

    fn see_revision(&mut self, revision: i64) {
        self.revision = Some(self.revision.map_or(revision, |known| known.max(revision)));
    }

    fn bound_size(&mut self) {
        if self.revoked_grants.len() > MOST_ENTRIES || self.revoked_jtis.len() > MOST_ENTRIES {
            self.reset();
        }
    }
}

impl NodeMemory {
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state of an access token, when the memory may answer.
    pub fn access_token_state(&self, grant_id: GrantId, jti: &str) -> Known {
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
    /// reset (or untrusted) when the question was asked.
    pub fn grant_live(&self, grant_id: GrantId, generation: u64) {
        let mut state = self.state();
        if state.generation == generation && state.live_grants.len() < MOST_ENTRIES {
            state.live_grants.insert(grant_id);
        }
    }

    /// The generation under which to remember a grant this node is about to
    /// make live ([`NodeMemory::grant_live`] once its write committed), so
    /// that the first look-up of its tokens needs no round trip; `None`
    /// while the memory does not answer. Taken before the write: a reset or
    /// a forgetting in between keeps it from being remembered. A revocation
    /// heard before or after still wins, revoked grants being kept apart.
    pub fn generation_for_new_grant(&self) -> Option<u64> {
        let state = self.state();
        state.trusted(Instant::now()).then_some(state.generation)
    }

    /// The current permission revision, when the memory may answer.
    pub fn permission_revision(&self) -> Option<i64> {
        let state = self.state();
        if state.trusted(Instant::now()) { state.revision } else { None }
    }

    /// `grants` were revoked (or removed).
    pub fn grants_revoked(&self, grants: impl IntoIterator<Item = GrantId>) {
        let mut state = self.state();
        for id in grants {
            state.live_grants.remove(&id);
            state.revoked_grants.insert(id);
        }
        state.bound_size();
    }

    /// The access token `jti` was revoked.
    pub fn token_revoked(&self, jti: &str) {
        let mut state = self.state();
        state.revoked_jtis.insert(jti.to_owned());
        state.bound_size();
    }

    /// The permission model is at `revision` or later. Revisions only move
    /// forward, whichever way they are learnt.
    pub fn revision_seen(&self, revision: i64) {
        self.state().see_revision(revision);
    }

    /// Forgets which grants were found live (grants changed in a way not
    /// told one by one); answers asked before are not remembered after.
    pub fn forget_live_grants(&self) {
        let mut state = self.state();
        state.generation = state.generation.wrapping_add(1);
        state.live_grants.clear();
    }

    /// Forgets everything and trusts nothing until [`NodeMemory::load`]ed
    /// and proven fresh again.
    pub fn reset(&self) {
        self.state().reset();
    }

    /// Loads what cannot be asked for lazily, read from the database after
    /// `started`: proofs of freshness taken from then on count.
    pub fn load(&self, revoked_jtis: impl IntoIterator<Item = String>, revision: i64, started: Instant) {
        let mut state = self.state();
        state.revoked_jtis.extend(revoked_jtis);
        state.see_revision(revision);
        state.loaded_at = Some(started);
        state.bound_size();
    }

    /// Everything committed before `at` is known here: the memory may
    /// answer until `at + staleness`, unless it was reset after `at`.
    pub fn fresh_as_of(&self, at: Instant, staleness: Duration) {
        let mut state = self.state();
        if state.loaded_at.is_some_and(|loaded| at >= loaded) {
            let until = at + staleness;
            state.trusted_until = Some(state.trusted_until.map_or(until, |known| known.max(until)));
        }
    }

    /// Whether the memory answers at `now`.
    pub fn is_trusted(&self, now: Instant) -> bool {
        self.state().trusted(now)
    }

    /// How many grants are remembered live (for tests).
    pub fn live_grants(&self) -> usize {
        self.state().live_grants.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn grant() -> GrantId {
        GrantId::from(Uuid::new_v4())
    }

    #[test]
    fn only_a_proof_taken_after_the_load_brings_trust_for_the_bound() {
        let memory = NodeMemory::new();
        let start = Instant::now();
        let g = grant();
        memory.fresh_as_of(start, Duration::from_secs(1));
        assert!(matches!(memory.access_token_state(g, "j"), Known::Ask(u64::MAX)), "not loaded");
        memory.load(Vec::new(), 1, start + Duration::from_millis(10));
        memory.fresh_as_of(start, Duration::from_secs(1));
        assert!(!memory.is_trusted(start + Duration::from_millis(20)), "a proof from before the load");
        memory.fresh_as_of(start + Duration::from_millis(20), Duration::from_secs(1));
        let Known::Ask(generation) = memory.access_token_state(g, "j") else { panic!("an unknown grant is asked for") };
        assert_ne!(generation, u64::MAX, "trusted");
        memory.grant_live(g, generation);
        assert!(matches!(memory.access_token_state(g, "j"), Known::State(s) if s.is_live()));
        assert!(!memory.is_trusted(start + Duration::from_millis(1020)), "no longer than the bound");
    }

    #[test]
    fn revocations_win_and_an_answer_asked_before_a_reset_or_forgetting_is_not_kept() {
        let memory = NodeMemory::new();
        let now = Instant::now();
        memory.load(vec!["old".to_owned()], 5, now);
        memory.fresh_as_of(now, Duration::from_secs(60));
        let (g, other) = (grant(), grant());
        let Known::Ask(generation) = memory.access_token_state(g, "j") else { panic!("unknown grant") };
        memory.grant_live(g, generation);
        memory.grants_revoked([g]);
        memory.token_revoked("jti-1");
        memory.revision_seen(7);
        memory.revision_seen(6);
        assert!(matches!(memory.access_token_state(g, "x"), Known::State(s) if s.grant_revoked && !s.token_revoked));
        let Known::Ask(asked) = memory.access_token_state(other, "old") else { panic!("unknown grant") };
        assert_eq!(memory.permission_revision(), Some(7), "revisions only move forward");

        memory.forget_live_grants();
        memory.grant_live(other, asked);
        assert_eq!(memory.live_grants(), 0, "an answer from before forgetting is not kept");
        let Known::Ask(asked) = memory.access_token_state(other, "old") else { panic!("unknown grant") };
        memory.grant_live(other, asked);
        assert!(matches!(memory.access_token_state(other, "old"), Known::State(s) if s.token_revoked));

        let Known::Ask(asked) = memory.access_token_state(grant(), "j") else { panic!("unknown grant") };
        memory.reset();
        memory.grant_live(other, asked);
        assert_eq!(memory.live_grants(), 0, "an answer from before the reset is not kept");
        assert!(matches!(memory.access_token_state(g, "j"), Known::Ask(u64::MAX)), "untrusted after a reset");
        assert_eq!(memory.permission_revision(), None);
    }

    #[test]
    fn a_grant_made_live_here_is_answered_from_memory_and_a_revocation_heard_either_side_wins() {
        let memory = NodeMemory::new();
        assert_eq!(memory.generation_for_new_grant(), None, "untrusted: nothing is remembered");
        let now = Instant::now();
        memory.load(Vec::new(), 1, now);
        memory.fresh_as_of(now, Duration::from_secs(60));

        let (issued, revoked_first, revoked_after, across_reset) = (grant(), grant(), grant(), grant());
        let generation = memory.generation_for_new_grant().expect("trusted");
        memory.grant_live(issued, generation);
        assert!(matches!(memory.access_token_state(issued, "j"), Known::State(s) if s.is_live()), "no round trip");

        // The revocation's announcement arrives before the issuing node
        // remembers the grant, or after: revoked either way.
        memory.grants_revoked([revoked_first]);
        memory.grant_live(revoked_first, generation);
        memory.grant_live(revoked_after, generation);
        memory.grants_revoked([revoked_after]);
        for grant in [revoked_first, revoked_after] {
            assert!(matches!(memory.access_token_state(grant, "j"), Known::State(s) if s.grant_revoked));
        }

        // Grants changed wholesale between taking the generation and the
        // commit: not remembered.
        let generation = memory.generation_for_new_grant().expect("trusted");
        memory.forget_live_grants();
        memory.grant_live(across_reset, generation);
        assert!(matches!(memory.access_token_state(across_reset, "j"), Known::Ask(_)), "asked again");
    }
}
