//! Codes, grants, refresh tokens and signing keys: one redemption, one
//! rotation, and their races.

use super::*;

#[tokio::test]
async fn a_code_is_redeemed_once_and_a_replay_names_its_grant() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (u, g) = granted(store.as_ref()).await;
        let stored = store.find_code(&code_hash("h")).await.unwrap().unwrap();
        assert!(stored.spent, "{backend:?}");
        assert_eq!(stored.code.grant_id, Some(g.id));
        assert_eq!(stored.user.as_ref(), Some(&u), "read with its user");
        assert_eq!(store.find_grant(g.id).await.unwrap().unwrap().scope, "openid");
        assert_eq!(store.recent_audit(5).await.unwrap()[0].kind, "token.issued", "audited in the same transaction");

        let again = grant("app", u.id);
        let replay =
            store.redeem_code(&code_hash("h"), t0(), &again, &refresh("rx", again.id, 30), &audit()).await.unwrap();
        assert_eq!(replay, Redemption::Replay { grant_id: Some(g.id) });
        assert_eq!(store.find_grant(again.id).await.unwrap(), None, "a replay stores nothing");
        assert!(store.find_refresh_token(&refresh_hash("rx")).await.unwrap().is_none());

        // A code spent by a failed presentation cannot be redeemed.
        store.insert_code(&code("h2", "app", u.id)).await.unwrap();
        assert!(!store.find_code(&code_hash("h2")).await.unwrap().unwrap().spent);
        assert_eq!(store.spend_code(&code_hash("h2"), t0()).await.unwrap().unwrap().grant_id, None);
        let g2 = grant("app", u.id);
        let replay = store.redeem_code(&code_hash("h2"), t0(), &g2, &refresh("r2", g2.id, 30), &audit()).await.unwrap();
        assert_eq!(replay, Redemption::Replay { grant_id: None });
        assert_eq!(store.find_grant(g2.id).await.unwrap(), None);
        assert_eq!(store.find_code(&code_hash("nope")).await.unwrap(), None);
        assert_eq!(store.spend_code(&code_hash("nope"), t0()).await.unwrap(), None);

        // The user as stored now: a block shows at the next read.
        store.insert_code(&code("h-blocked", "app", u.id)).await.unwrap();
        store.set_user_blocked("anna", true, t0()).await.unwrap().expect("anna exists");
        let stored = store.find_code(&code_hash("h-blocked")).await.unwrap().unwrap();
        assert!(stored.user.is_some_and(|user| user.blocked), "{backend:?}: the code's user, blocked");
        let stored = store.find_refresh_token(&refresh_hash("r1")).await.unwrap().unwrap();
        assert!(stored.user.is_some_and(|user| user.blocked), "{backend:?}: the grant's user, blocked");
    }
}

#[tokio::test]
async fn refresh_tokens_rotate_once_and_revocation_reaches_access_tokens() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (u, g) = granted(store.as_ref()).await;

        let stored = store.find_refresh_token(&refresh_hash("r1")).await.unwrap().unwrap();
        assert!(!stored.spent, "{backend:?}");
        assert_eq!((stored.token.grant_id, stored.grant.id), (g.id, g.id));
        assert_eq!(stored.user.as_ref(), Some(&u), "read with the grant's user");
        assert_eq!(stored.token.expires_at, t0() + Duration::days(30));
        let rotated =
            store.rotate_refresh_token(&refresh_hash("r1"), t0(), &refresh("r2", g.id, 30), &audit()).await.unwrap();
        assert_eq!(rotated, Rotation::Rotated);
        let replay =
            store.rotate_refresh_token(&refresh_hash("r1"), t0(), &refresh("r3", g.id, 30), &audit()).await.unwrap();
        assert_eq!(replay, Rotation::Replay);
        assert!(store.find_refresh_token(&refresh_hash("r3")).await.unwrap().is_none(), "a replay stores nothing");
        assert!(store.find_refresh_token(&refresh_hash("r1")).await.unwrap().unwrap().spent);
        assert_eq!(store.find_refresh_token(&refresh_hash("unknown")).await.unwrap(), None);

        assert!(store.access_token_state(g.id, "jti-1").await.unwrap().is_live());
        store.revoke_access_token("jti-1", t0() + Duration::minutes(15), t0()).await.unwrap();
        store.revoke_access_token("jti-1", t0() + Duration::minutes(15), t0()).await.unwrap();
        let state = store.access_token_state(g.id, "jti-1").await.unwrap();
        assert!(state.token_revoked && !state.grant_revoked);
        assert!(store.access_token_state(g.id, "jti-2").await.unwrap().is_live());

        assert!(store.revoke_grant(g.id, t0()).await.unwrap());
        assert!(!store.revoke_grant(g.id, t0()).await.unwrap(), "already revoked");
        assert!(store.access_token_state(g.id, "jti-2").await.unwrap().grant_revoked);
        let revoked =
            store.rotate_refresh_token(&refresh_hash("r2"), t0(), &refresh("r4", g.id, 30), &audit()).await.unwrap();
        assert_eq!(revoked, Rotation::GrantRevoked);
        assert!(!store.find_refresh_token(&refresh_hash("r2")).await.unwrap().unwrap().spent, "nothing changed");
        store.spend_refresh_token(&refresh_hash("r2"), t0()).await.unwrap();
        assert!(store.find_refresh_token(&refresh_hash("r2")).await.unwrap().unwrap().spent);
        assert!(
            store.access_token_state(GrantId::from(Uuid::new_v4()), "x").await.unwrap().grant_revoked,
            "unknown grant"
        );
    }
}

#[tokio::test]
async fn parallel_redemptions_and_rotations_have_one_winner() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (u, g) = granted(store.as_ref()).await;

        // Eight rotations of `r1` at once: one successor, seven replays.
        let mut rotations = tokio::task::JoinSet::new();
        for i in 0..8 {
            let store = Arc::clone(&store);
            rotations.spawn(async move {
                let successor = refresh(&format!("next-{i}"), g.id, 30);
                (i, store.rotate_refresh_token(&refresh_hash("r1"), t0(), &successor, &audit()).await.unwrap())
            });
        }
        let results = rotations.join_all().await;
        let winners: Vec<usize> = results.iter().filter(|(_, r)| *r == Rotation::Rotated).map(|(i, _)| *i).collect();
        assert_eq!(winners.len(), 1, "{backend:?}: {results:?}");
        assert!(results.iter().all(|(_, r)| matches!(r, Rotation::Rotated | Rotation::Replay)), "{results:?}");
        for i in 0..8 {
            let stored = store.find_refresh_token(&refresh_hash(&format!("next-{i}"))).await.unwrap();
            assert_eq!(stored.is_some(), i == winners[0], "{backend:?}: only the winner's successor is stored");
        }

        // Eight redemptions of one code at once: one grant, seven replays naming it.
        store.insert_code(&code("h-par", "app", u.id)).await.unwrap();
        let mut redemptions = tokio::task::JoinSet::new();
        for i in 0..8 {
            let store = Arc::clone(&store);
            redemptions.spawn(async move {
                let g = grant("app", u.id);
                let token = refresh(&format!("first-{i}"), g.id, 30);
                (g.id, store.redeem_code(&code_hash("h-par"), t0(), &g, &token, &audit()).await.unwrap())
            });
        }
        let results = redemptions.join_all().await;
        let won: Vec<GrantId> = results.iter().filter(|(_, r)| *r == Redemption::Redeemed).map(|(id, _)| *id).collect();
        assert_eq!(won.len(), 1, "{backend:?}: {results:?}");
        for (id, result) in &results {
            if *result != Redemption::Redeemed {
                assert_eq!(*result, Redemption::Replay { grant_id: Some(won[0]) }, "{backend:?}");
                assert_eq!(store.find_grant(*id).await.unwrap(), None, "a replay stores nothing");
            }
        }
        assert_eq!(store.find_code(&code_hash("h-par")).await.unwrap().unwrap().code.grant_id, Some(won[0]));
    }
}

/// Many different codes and refresh tokens at once, each presented twice,
/// and pairs of redemptions whose refresh tokens collide: every one is
/// answered as it would have been alone (PostgreSQL combines concurrent
/// writes into shared statements; one that fails must fail alone and change
/// nothing).
#[tokio::test]
async fn many_redemptions_and_rotations_at_once_are_each_answered_as_alone() {
    const CODES: usize = 24;
    const COLLIDING: usize = 4;
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (u, _) = granted(store.as_ref()).await;
        let audited = store.recent_audit(1_000).await.unwrap().len();
        for i in 0..CODES {
            store.insert_code(&code(&format!("h-many-{i}"), "app", u.id)).await.unwrap();
        }
        for i in 0..2 * COLLIDING {
            store.insert_code(&code(&format!("h-collide-{i}"), "app", u.id)).await.unwrap();
        }

        // Each code twice, and pairs of codes whose refresh tokens have the
        // same hash, all at once.
        let mut redemptions = tokio::task::JoinSet::new();
        for (i, attempt) in (0..CODES).flat_map(|i| [(i, 0), (i, 1)]) {
            let store = Arc::clone(&store);
            redemptions.spawn(async move {
                let g = grant("app", u.id);
                let token = refresh(&format!("many-{i}-{attempt}"), g.id, 30);
                let result = store.redeem_code(&code_hash(&format!("h-many-{i}")), t0(), &g, &token, &audit()).await;
                (format!("h-many-{i}"), g.id, result.map(|r| (r, format!("many-{i}-{attempt}"))))
            });
        }
        for i in 0..2 * COLLIDING {
            let store = Arc::clone(&store);
            redemptions.spawn(async move {
                let g = grant("app", u.id);
                let token = refresh(&format!("collide-{}", i / 2), g.id, 30);
                let result = store.redeem_code(&code_hash(&format!("h-collide-{i}")), t0(), &g, &token, &audit()).await;
                (format!("h-collide-{i}"), g.id, result.map(|r| (r, format!("collide-{}", i / 2))))
            });
        }
        let results = redemptions.join_all().await;

        let mut winners = std::collections::HashMap::new();
        for i in 0..CODES {
            let hash = format!("h-many-{i}");
            let of_code: Vec<_> = results.iter().filter(|(h, ..)| *h == hash).collect();
            let won: Vec<(GrantId, String)> = of_code
                .iter()
                .filter_map(|(_, id, r)| match r {
                    Ok((Redemption::Redeemed, token)) => Some((*id, token.clone())),
                    _ => None,
                })
                .collect();
            assert_eq!(won.len(), 1, "{backend:?}: {hash}: {of_code:?}");
            for (_, id, result) in &of_code {
                if *id != won[0].0 {
                    assert_eq!(
                        result.as_ref().unwrap().0,
                        Redemption::Replay { grant_id: Some(won[0].0) },
                        "{backend:?}"
                    );
                    assert_eq!(store.find_grant(*id).await.unwrap(), None, "{backend:?}: a replay stores nothing");
                }
            }
            let stored = store.find_code(&code_hash(&hash)).await.unwrap().unwrap();
            assert_eq!(stored.code.grant_id, Some(won[0].0), "{backend:?}");
            assert!(store.find_grant(won[0].0).await.unwrap().is_some(), "{backend:?}");
            winners.insert(i, won[0].clone());
        }
        for pair in 0..COLLIDING {
            let pair_hashes = [format!("h-collide-{}", 2 * pair), format!("h-collide-{}", 2 * pair + 1)];
            let of_pair: Vec<_> = results.iter().filter(|(h, ..)| pair_hashes.contains(h)).collect();
            assert_eq!(of_pair.len(), 2);
            let redeemed = of_pair.iter().filter(|(.., r)| matches!(r, Ok((Redemption::Redeemed, _)))).count();
            assert_eq!(redeemed, 1, "{backend:?}: one of two colliding redemptions: {of_pair:?}");
            let (hash, id, failed) =
                of_pair.iter().find(|(.., r)| !matches!(r, Ok((Redemption::Redeemed, _)))).unwrap();
            assert!(matches!(failed, Err(StorageError::Conflict(_))), "{backend:?}: {failed:?}");
            let code = store.find_code(&code_hash(hash)).await.unwrap().unwrap();
            assert!(!code.spent && code.code.grant_id.is_none(), "{backend:?}: the failed one changed nothing");
            assert_eq!(store.find_grant(*id).await.unwrap(), None, "{backend:?}");
        }
        let redeemed = CODES + COLLIDING;
        assert_eq!(store.recent_audit(1_000).await.unwrap().len(), audited + redeemed, "{backend:?}: one event each");

        // Each winner's refresh token rotated twice at once, and one of a
        // revoked grant: one successor each, the other a replay.
        store.revoke_grant(winners[&0].0, t0()).await.unwrap();
        let mut rotations = tokio::task::JoinSet::new();
        for (i, attempt) in (0..CODES).flat_map(|i| [(i, 0), (i, 1)]) {
            let (store, (grant_id, token)) = (Arc::clone(&store), winners[&i].clone());
            rotations.spawn(async move {
                let successor = refresh(&format!("next-{i}-{attempt}"), grant_id, 30);
                let result = store.rotate_refresh_token(&refresh_hash(&token), t0(), &successor, &audit()).await;
                (i, attempt, result.unwrap())
            });
        }
        let rotated = rotations.join_all().await;
        for i in 0..CODES {
            let of_token: Vec<_> = rotated.iter().filter(|(n, ..)| *n == i).map(|(_, a, r)| (*a, *r)).collect();
            let wins: Vec<usize> = of_token.iter().filter(|(_, r)| *r == Rotation::Rotated).map(|(a, _)| *a).collect();
            if i == 0 {
                assert!(wins.is_empty(), "{backend:?}: a revoked grant's token does not rotate: {of_token:?}");
                assert!(of_token.iter().all(|(_, r)| *r == Rotation::GrantRevoked), "{backend:?}: {of_token:?}");
                continue;
            }
            assert_eq!(wins.len(), 1, "{backend:?}: token {i}: {of_token:?}");
            assert!(of_token.iter().all(|(_, r)| matches!(r, Rotation::Rotated | Rotation::Replay)), "{of_token:?}");
            for attempt in 0..2 {
                let successor = store.find_refresh_token(&refresh_hash(&format!("next-{i}-{attempt}"))).await.unwrap();
                assert_eq!(successor.is_some(), attempt == wins[0], "{backend:?}: only the winner's successor");
            }
        }
        assert_eq!(
            store.recent_audit(1_000).await.unwrap().len(),
            audited + redeemed + CODES - 1,
            "{backend:?}: one event per rotation"
        );
    }
}

/// On PostgreSQL, redemptions that arrive together are written by shared
/// statements: the grants they store carry fewer transaction ids (`xmin`:
/// one per statement) than there were redemptions — at least two to a
/// statement on average — and every redemption is answered and stored.
#[tokio::test]
async fn postgres_redemptions_that_arrive_together_share_statements() {
    const AT_ONCE: usize = 32;
    if !backends().contains(&Backend::Postgres) {
        portico_tests::skipped("PORTICO_TEST_POSTGRES_URL is not set; shared statements are PostgreSQL's");
        return;
    }
    let dir = TempDir::new();
    let url = fresh_database(Backend::Postgres, &dir).await;
    // Eight connections: one statement of each kind at a time.
    let store = PgStore::connect(&url, 8, std::time::Duration::from_secs(5)).await.unwrap();
    store.migrate().await.unwrap();
    let store: Arc<dyn Storage> = Arc::new(store);
    let (u, _) = granted(store.as_ref()).await;
    for i in 0..AT_ONCE {
        store.insert_code(&code(&format!("h-shared-{i}"), "app", u.id)).await.unwrap();
    }
    let mut redemptions = tokio::task::JoinSet::new();
    for i in 0..AT_ONCE {
        let store = Arc::clone(&store);
        redemptions.spawn(async move {
            let g = grant("app", u.id);
            let token = refresh(&format!("shared-{i}"), g.id, 30);
            store.redeem_code(&code_hash(&format!("h-shared-{i}")), t0(), &g, &token, &audit()).await.unwrap()
        });
    }
    let results = redemptions.join_all().await;
    assert!(results.iter().all(|r| *r == Redemption::Redeemed), "{results:?}");

    let mut db = <sqlx::PgConnection as sqlx::Connection>::connect(&url).await.unwrap();
    let (grants, statements): (i64, i64) = sqlx::query_as(
        "SELECT count(*), count(DISTINCT xmin::text) FROM grants WHERE id IN \
         (SELECT grant_id FROM authorization_codes WHERE code_hash LIKE 'h-shared-%')",
    )
    .fetch_one(&mut db)
    .await
    .unwrap();
    assert_eq!(grants, i64::try_from(AT_ONCE).unwrap());
    assert!(statements * 2 <= grants, "{grants} grants written by {statements} statements");
}

/// SQLite's writes queue for the store's writer thread, never on the async
/// executor's threads: while another process holds the database's write
/// lock they wait for it there, and succeed once it is free.
#[tokio::test]
async fn sqlite_token_writes_wait_for_another_writer_and_succeed() {
    let dir = TempDir::new();
    let url = fresh_database(Backend::Sqlite, &dir).await;
    let store = store(Backend::Sqlite, &dir).await;
    let (u, g) = granted(store.as_ref()).await;
    store.insert_code(&code("h-locked", "app", u.id)).await.unwrap();

    let path = url.strip_prefix("sqlite://").unwrap().to_owned();
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let g2 = grant("app", u.id);
    let redeem = tokio::spawn({
        let (store, g2) = (Arc::clone(&store), g2.clone());
        async move { store.redeem_code(&code_hash("h-locked"), t0(), &g2, &refresh("r-locked", g2.id, 30), &audit()).await }
    });
    let rotate = tokio::spawn({
        let store = Arc::clone(&store);
        async move { store.rotate_refresh_token(&refresh_hash("r1"), t0(), &refresh("r2", g.id, 30), &audit()).await }
    });
    // Reads go on meanwhile: in WAL mode a reader never waits for a writer.
    assert!(store.find_code(&code_hash("h-locked")).await.unwrap().is_some_and(|c| !c.spent));
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!redeem.is_finished() && !rotate.is_finished(), "both wait while the lock is held");
    other.execute_batch("COMMIT").unwrap();

    assert_eq!(redeem.await.unwrap().unwrap(), Redemption::Redeemed);
    assert_eq!(rotate.await.unwrap().unwrap(), Rotation::Rotated);
    assert_eq!(store.find_code(&code_hash("h-locked")).await.unwrap().unwrap().code.grant_id, Some(g2.id));
    assert!(store.find_refresh_token(&refresh_hash("r-locked")).await.unwrap().is_some());
    assert!(store.find_refresh_token(&refresh_hash("r1")).await.unwrap().unwrap().spent);
    assert!(store.find_refresh_token(&refresh_hash("r2")).await.unwrap().is_some());
}

#[tokio::test]
async fn one_first_key_and_one_active_key() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let key = |kid: &str| portico_model::key::SigningKeyRecord {
            kid: kid.into(),
            alg: "RS256".into(),
            private_sealed: vec![1, 2, 3],
            created_at: t0(),
            retired_at: None,
        };
        assert!(store.insert_first_signing_key(&key("k1")).await.unwrap());
        assert!(!store.insert_first_signing_key(&key("k2")).await.unwrap(), "{backend:?}");
        assert_eq!(store.active_signing_kid("RS256").await.unwrap().as_deref(), Some("k1"));
        let mut k3 = key("k3");
        k3.created_at = t0() + Duration::seconds(1);
        store.rotate_signing_key(&k3, t0() + Duration::seconds(1)).await.unwrap();
        assert_eq!(store.active_signing_kid("RS256").await.unwrap().as_deref(), Some("k3"));
        let keys = store.list_signing_keys().await.unwrap();
        assert_eq!(keys.iter().map(|k| k.kid.as_str()).collect::<Vec<_>>(), ["k3", "k1"]);
        assert!(keys[1].retired_at.is_some());

        // Each algorithm has its own first key, active key and rotation.
        assert_eq!(store.active_signing_kid("ES256").await.unwrap(), None);
        let es = |kid: &str, at: i64| portico_model::key::SigningKeyRecord {
            alg: "ES256".into(),
            created_at: t0() + Duration::seconds(at),
            ..key(kid)
        };
        assert!(store.insert_first_signing_key(&es("e1", 2)).await.unwrap(), "{backend:?}: ES256 had none");
        assert!(!store.insert_first_signing_key(&es("e2", 2)).await.unwrap());
        store.rotate_signing_key(&es("e3", 3), t0() + Duration::seconds(3)).await.unwrap();
        assert_eq!(store.active_signing_kid("ES256").await.unwrap().as_deref(), Some("e3"));
        assert_eq!(store.active_signing_kid("RS256").await.unwrap().as_deref(), Some("k3"), "untouched");
        let keys = store.list_signing_keys().await.unwrap();
        let listed: Vec<(&str, &str, bool)> =
            keys.iter().map(|k| (k.kid.as_str(), k.alg.as_str(), k.retired_at.is_none())).collect();
        assert_eq!(
            listed,
            [("e3", "ES256", true), ("e1", "ES256", false), ("k3", "RS256", true), ("k1", "RS256", false)]
        );
    }
}

#[tokio::test]
async fn a_users_live_grants_are_listed_newest_first() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (u, first) = granted(store.as_ref()).await;
        let mut second = grant("app", u.id);
        second.created_at = first.created_at + Duration::minutes(1);
        store.insert_code(&code("h2", "app", u.id)).await.unwrap();
        let redeemed =
            store.redeem_code(&code_hash("h2"), t0(), &second, &refresh("r2", second.id, 30), &audit()).await;
        assert_eq!(redeemed.unwrap(), Redemption::Redeemed, "{backend:?}");
        let ids = |grants: Vec<Grant>| grants.into_iter().map(|g| g.id).collect::<Vec<_>>();
        assert_eq!(ids(store.list_user_grants(u.id).await.unwrap()), [second.id, first.id], "{backend:?}");
        assert!(store.revoke_grant(first.id, t0()).await.unwrap());
        assert_eq!(ids(store.list_user_grants(u.id).await.unwrap()), [second.id], "revoked ones are not live");
        assert!(store.list_user_grants(UserId::random()).await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn the_write_a_client_assertion_authenticated_remembers_its_jti() {
    use portico_model::oauth::AssertionJti;
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (u, g) = granted(store.as_ref()).await;
        let until = t0() + Duration::minutes(5);
        let jti = |name: &str| AssertionJti { client_id: "app".into(), jti: name.into(), expires_at: until };
        let rotate = |old: &'static str, new: &'static str, jti: AssertionJti, at: OffsetDateTime| {
            let store = Arc::clone(&store);
            async move {
                let successor = refresh(new, g.id, 30);
                store
                    .rotate_refresh_token_asserted(&refresh_hash(old), at, &successor, &audit(), Some(&jti))
                    .await
                    .unwrap()
            }
        };

        assert_eq!(rotate("r1", "r2", jti("a"), t0()).await, Rotation::Rotated, "{backend:?}");
        assert!(!store.remember_client_assertion(&"app".into(), "a", until, t0()).await.unwrap(), "remembered with it");
        // The same assertion again: nothing changes.
        assert_eq!(rotate("r2", "r3", jti("a"), t0()).await, Rotation::AssertionReplayed, "{backend:?}");
        assert!(!store.find_refresh_token(&refresh_hash("r2")).await.unwrap().unwrap().spent, "{backend:?}: untouched");
        assert!(store.find_refresh_token(&refresh_hash("r3")).await.unwrap().is_none());
        // A rotation that loses (its token was spent) still remembers its jti.
        assert_eq!(rotate("r1", "r4", jti("b"), t0()).await, Rotation::Replay, "{backend:?}");
        assert!(!store.remember_client_assertion(&"app".into(), "b", until, t0()).await.unwrap());
        // Once the assertion has expired, its jti may come again.
        let later = until + Duration::seconds(1);
        assert_eq!(rotate("r2", "r5", jti("a"), later).await, Rotation::Rotated, "{backend:?}");

        // A redemption likewise.
        store.insert_code(&code("h-a", "app", u.id)).await.unwrap();
        store.insert_code(&code("h-b", "app", u.id)).await.unwrap();
        let (g1, g2) = (grant("app", u.id), grant("app", u.id));
        let redeem = |hash: &'static str, g: &Grant, token: &'static str| {
            let (store, g, assertion) = (Arc::clone(&store), g.clone(), jti("c"));
            async move {
                let first = refresh(token, g.id, 30);
                store
                    .redeem_code_asserted(&code_hash(hash), t0(), &g, &first, &audit(), Some(&assertion))
                    .await
                    .unwrap()
            }
        };
        assert_eq!(redeem("h-a", &g1, "ra").await, Redemption::Redeemed, "{backend:?}");
        assert_eq!(redeem("h-b", &g2, "rb").await, Redemption::AssertionReplayed, "{backend:?}");
        assert!(!store.find_code(&code_hash("h-b")).await.unwrap().unwrap().spent, "{backend:?}: the code is unspent");
        assert_eq!(store.find_grant(g2.id).await.unwrap(), None, "{backend:?}: nothing stored");
    }
}

/// A user, or a client, deleted while its refresh tokens rotate, all at
/// once: four rounds of thirty-one rotations (each of another grant) and
/// the deletion of the user (rounds 0 and 1) or of the client (2 and 3).
/// Every write completes (none is refused for a conflict with another),
/// and nothing of the deleted one stays: no grant, no refresh token.
#[tokio::test]
async fn a_user_or_client_deleted_while_its_tokens_rotate_completes_every_write() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        for round in 0..4 {
            let (app, u) = (format!("app{round}"), user(&format!("user{round}")));
            store.create_client(&client(&app)).await.unwrap();
            store.create_user(&u).await.unwrap();
            let mut grants = Vec::new();
            for i in 0..31 {
                let name = format!("r{round}g{i}");
                store.insert_code(&code(&name, &app, u.id)).await.unwrap();
                let g = grant(&app, u.id);
                let (hash, token) = (code_hash(&name), refresh(&name, g.id, 30));
                let redeemed = store.redeem_code(&hash, t0(), &g, &token, &audit()).await.unwrap();
                assert_eq!(redeemed, Redemption::Redeemed);
                grants.push((g.id, name));
            }
            let mut rotations = tokio::task::JoinSet::new();
            for (id, name) in &grants {
                let (store, id, name) = (Arc::clone(&store), *id, name.clone());
                rotations.spawn(async move {
                    let successor = refresh(&format!("{name}-next"), id, 30);
                    store.rotate_refresh_token(&refresh_hash(&name), t0(), &successor, &audit()).await.unwrap();
                });
            }
            if round < 2 {
                assert!(store.delete_user(u.id).await.unwrap(), "{backend:?}");
            } else {
                assert!(store.delete_client(&client_id(&app)).await.unwrap(), "{backend:?}");
            }
            rotations.join_all().await;
            for (id, name) in grants {
                assert_eq!(store.find_grant(id).await.unwrap(), None, "{backend:?}: grant {name}");
                for token in [name.clone(), format!("{name}-next")] {
                    let found = store.find_refresh_token(&refresh_hash(&token)).await.unwrap();
                    assert!(found.is_none(), "{backend:?}: refresh token {token} stays");
                }
            }
        }
    }
}
