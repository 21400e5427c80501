//! What a serving node remembers of the questions asked on every API call
//! and every token request: is this access token's grant live and the
//! token itself not revoked, which revision of the permission model is
//! current, what a client is registered with, and which signing key signs.
//!
//! Both backends keep one [`NodeMemory`] and differ only in how they prove
//! it fresh (PostgreSQL: its own ticks heard back on the notification
//! channel; SQLite: the file unchanged by any other process). The memory
//! answers only while such a proof, taken after it was loaded, is younger
//! than the staleness bound; otherwise every question goes to the
//! database. A grant is remembered as live, a client as registered and the
//! active signing key as active once the database said so; the revoked
//! access tokens and the revision are loaded whole. A change of a client or
//! of the signing keys made by this node is forgotten here as soon as it
//! committed; one made elsewhere is heard within the bound, as a
//! revocation is.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use portico_model::client::Client;
use portico_model::ids::{ClientId, GrantId};
use portico_model::oauth::AccessTokenState;

/// Entries of one set before the memory starts over (and refills).
const MOST_ENTRIES: usize = 1_000_000;
/// Clients remembered before the memory forgets them all (and refills).
const MOST_CLIENTS: usize = 10_000;
/// The generation handed out while the memory does not answer: nothing
/// asked under it is remembered.
const UNTRUSTED: u64 = u64::MAX;

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
    clients: HashMap<ClientId, Client>,
    /// The active signing key's id of each algorithm.
    signing_kids: HashMap<String, String>,
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

    /// The generation to remember an answer under, read from the database
    /// from now on.
    fn asking(&self) -> u64 {
        if self.trusted(Instant::now()) { self.generation } else { UNTRUSTED }
    }

    /// Something remembered changed: forget it, and keep answers read
    /// before from being remembered after.
    fn changed(&mut self) {
        self.generation = self.generation.wrapping_add(1);
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
            return Known::Ask(UNTRUSTED);
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

    /// The state of the access token `jti` of `grant_id` from `memory`
    /// when it may answer, otherwise from `read` (the database; not run
    /// when the memory answers), its grant remembered live for the next
    /// time: what both backends' `access_token_state` do.
    ///
    /// # Errors
    /// `read`'s.
    pub async fn access_token_state_or<E>(
        memory: Option<&Self>,
        grant_id: GrantId,
        jti: &str,
        read: impl Future<Output = Result<AccessTokenState, E>>,
    ) -> Result<AccessTokenState, E> {
        let generation = match memory.map(|m| m.access_token_state(grant_id, jti)) {
            Some(Known::State(state)) => return Ok(state),
            Some(Known::Ask(generation)) => Some(generation),
            None => None,
        };
        let state = read.await?;
        if let (Some(memory), Some(generation)) = (memory, generation)
            && !state.grant_revoked
        {
            memory.grant_live(grant_id, generation);
        }
        Ok(state)
    }

    /// The current permission revision from `memory` when it may answer,
    /// otherwise from `read`: what both backends' `permission_revision` do
    /// (the memory learns revisions from the change feed, not from reads).
    ///
    /// # Errors
    /// `read`'s.
    pub async fn permission_revision_or<E>(
        memory: Option<&Self>,
        read: impl Future<Output = Result<i64, E>>,
    ) -> Result<i64, E> {
        match memory.and_then(Self::permission_revision) {
            Some(revision) => Ok(revision),
            None => read.await,
        }
    }

    /// The client `id` from `memory` when it may answer, otherwise from
    /// `read` (the database; not run when the memory answers), remembered
    /// for the next time: what both backends' `find_client` do.
    ///
    /// # Errors
    /// `read`'s.
    pub async fn client_or<E>(
        memory: Option<&Self>,
        id: &ClientId,
        read: impl Future<Output = Result<Option<Client>, E>>,
    ) -> Result<Option<Client>, E> {
        read_through(memory, |m| m.client(id), read, Self::client_found).await
    }

    /// The id of `alg`'s active signing key from `memory` when it may
    /// answer, otherwise from `read`, remembered for the next time: what
    /// both backends' `active_signing_kid` do.
    ///
    /// # Errors
    /// `read`'s.
    pub async fn signing_kid_or<E>(
        memory: Option<&Self>,
        alg: &str,
        read: impl Future<Output = Result<Option<String>, E>>,
    ) -> Result<Option<String>, E> {
        read_through(memory, |m| m.signing_kid(alg), read, |m, kid: &String, g| m.signing_kid_found(alg, kid, g)).await
    }

    /// The client `id` as the database last gave it, when the memory may
    /// answer; otherwise the generation under which to remember the
    /// database's answer ([`NodeMemory::client_found`]).
    pub fn client(&self, id: &ClientId) -> Result<Client, u64> {
        let state = self.state();
        match state.clients.get(id) {
            Some(client) if state.trusted(Instant::now()) => Ok(client.clone()),
            _ => Err(state.asking()),
        }
    }

    /// Remembers a client as the database gave it, unless the memory was
    /// reset, untrusted, or told of a change since the question was asked.
    pub fn client_found(&self, client: &Client, generation: u64) {
        let mut state = self.state();
        if state.generation == generation {
            if state.clients.len() >= MOST_CLIENTS {
                state.clients.clear();
            }
            state.clients.insert(client.client_id.clone(), client.clone());
        }
    }

    /// The client `id` was changed or removed.
    pub fn client_changed(&self, id: &ClientId) {
        let mut state = self.state();
        state.clients.remove(id);
        state.changed();
    }

    /// The id of `alg`'s active signing key, when the memory may answer;
    /// otherwise the generation under which to remember the database's
    /// answer ([`NodeMemory::signing_kid_found`]).
    pub fn signing_kid(&self, alg: &str) -> Result<String, u64> {
        let state = self.state();
        match state.signing_kids.get(alg) {
            Some(kid) if state.trusted(Instant::now()) => Ok(kid.clone()),
            _ => Err(state.asking()),
        }
    }

    /// Remembers the id of `alg`'s active signing key as the database gave
    /// it, on the terms of [`NodeMemory::client_found`].
    pub fn signing_kid_found(&self, alg: &str, kid: &str, generation: u64) {
        let mut state = self.state();
        if state.generation == generation {
            state.signing_kids.insert(alg.to_owned(), kid.to_owned());
        }
    }

    /// A signing key was added, retired or removed.
    pub fn signing_keys_changed(&self) {
        let mut state = self.state();
        state.signing_kids.clear();
        state.changed();
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
        state.changed();
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

/// Answers from `memory` through `recall` when it may; otherwise awaits
/// `read` and, when it found something, hands it to `remember` under the
/// generation `recall` gave.
async fn read_through<T, E>(
    memory: Option<&NodeMemory>,
    recall: impl FnOnce(&NodeMemory) -> Result<T, u64>,
    read: impl Future<Output = Result<Option<T>, E>>,
    remember: impl FnOnce(&NodeMemory, &T, u64),
) -> Result<Option<T>, E> {
    let generation = match memory.map(recall) {
        Some(Ok(known)) => return Ok(Some(known)),
        Some(Err(generation)) => Some(generation),
        None => None,
    };
    let found = read.await?;
    if let (Some(memory), Some(generation), Some(found)) = (memory, generation, &found) {
        remember(memory, found, generation);
    }
    Ok(found)
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

    fn client(id: &str, secret_hash: &str) -> Client {
        Client {
            client_id: ClientId::new(id),
            secret_hash: secret_hash.into(),
            name: portico_model::client::LocalizedText { ru: "Приложение".into(), en: "App".into() },
            redirect_uris: vec!["https://app.example/cb".into()],
            scopes: vec!["openid".into()],
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
        }
    }

    #[test]
    fn clients_and_the_signing_key_are_remembered_only_while_trusted_and_forgotten_when_changed() {
        let memory = NodeMemory::new();
        let (app, id) = (client("app", "sha256:old"), ClientId::new("app"));
        let untrusted = memory.client(&id).expect_err("nothing known");
        memory.client_found(&app, untrusted);
        memory.signing_kid_found("RS256", "k1", untrusted);
        let now = Instant::now();
        memory.load(Vec::new(), 1, now);
        memory.fresh_as_of(now, Duration::from_secs(60));
        assert!(memory.client(&id).is_err() && memory.signing_kid("RS256").is_err(), "asked while untrusted: not kept");

        let asked = memory.client(&id).expect_err("unknown");
        memory.client_found(&app, asked);
        assert_eq!(memory.client(&id), Ok(app.clone()), "answered from memory");
        let asked = memory.signing_kid("RS256").expect_err("unknown");
        memory.signing_kid_found("RS256", "k1", asked);
        assert_eq!(memory.signing_kid("RS256"), Ok("k1".to_owned()));
        assert!(memory.signing_kid("ES256").is_err(), "each algorithm's key is its own");

        // A change heard between the question and the database's answer:
        // the answer may predate it, so it is not kept.
        memory.client_changed(&id);
        let asked = memory.client(&id).expect_err("forgotten");
        memory.client_changed(&id);
        memory.client_found(&client("app", "sha256:stale"), asked);
        assert!(memory.client(&id).is_err(), "an answer from before the change is not kept");
        let asked = memory.client(&id).expect_err("forgotten");
        memory.client_found(&client("app", "sha256:new"), asked);
        assert_eq!(memory.client(&id).map(|c| c.secret_hash), Ok("sha256:new".to_owned()));

        memory.signing_keys_changed();
        let asked = memory.signing_kid("RS256").expect_err("forgotten");
        memory.signing_keys_changed();
        memory.signing_kid_found("RS256", "k1", asked);
        assert!(memory.signing_kid("RS256").is_err(), "an answer from before the rotation is not kept");

        memory.reset();
        assert!(memory.client(&id).is_err(), "forgotten on reset");
    }
}
