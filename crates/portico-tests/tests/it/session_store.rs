//! The storage contract of single sign-on sessions, on both backends:
//! found by cookie hash and by id, listed per user, and ended once, with the
//! grants of clients that asked for it revoked in the same transaction.

use std::sync::Arc;

use portico_model::audit::AuditKind;
use portico_model::oauth::Redemption;
use portico_model::session::{EndedSession, NoticeOutcome};
use portico_tests::{TempDir, backends};
use time::Duration;

use crate::storage_contract::{
    audit, client, client_id, code, code_hash, grant, granted, refresh, session, session_hash, sid, store, t0,
};

#[tokio::test]
async fn sessions_are_found_by_cookie_and_by_id_and_listed_newest_first_while_unexpired() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (u, _) = granted(store.as_ref()).await;
        let older = session("s1", u.id);
        let newer =
            portico_model::session::SsoSession { created_at: t0() + Duration::minutes(5), ..session("s2", u.id) };
        let short =
            portico_model::session::SsoSession { expires_at: t0() + Duration::minutes(1), ..session("s3", u.id) };
        for s in [&older, &newer, &short] {
            store.create_session(s).await.unwrap();
        }
        assert_eq!(store.find_session(&session_hash("s1"), t0()).await.unwrap(), Some(older.clone()), "{backend:?}");
        assert_eq!(store.find_session_by_id(sid("s2"), t0()).await.unwrap(), Some(newer.clone()), "{backend:?}");
        assert_eq!(
            store.list_sessions(u.id, t0()).await.unwrap(),
            vec![newer.clone(), older.clone(), short.clone()],
            "{backend:?}: newest first"
        );
        let later = t0() + Duration::minutes(2);
        assert_eq!(store.find_session_by_id(sid("s3"), later).await.unwrap(), None, "{backend:?}: expired");
        assert_eq!(store.list_sessions(u.id, later).await.unwrap(), vec![newer, older], "{backend:?}: unexpired only");
        assert_eq!(store.find_session_by_id(sid("nobody"), t0()).await.unwrap(), None);
    }
}

#[tokio::test]
async fn ending_a_session_revokes_the_grants_of_clients_that_asked_and_keeps_the_others() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        // `app` keeps its grants; `strict` asked for them to end with the session.
        let (u, kept) = granted(store.as_ref()).await;
        store
            .create_client(&portico_model::client::Client { logout_revokes_grants: true, ..client("strict") })
            .await
            .unwrap();
        store.insert_code(&code("h2", "strict", u.id)).await.unwrap();
        let ended_with = grant("strict", u.id);
        let (h2, r2, event) = (code_hash("h2"), refresh("r2", ended_with.id, 30), audit());
        let redeemed = store.redeem_code(&h2, t0(), &ended_with, &r2, &event).await.unwrap();
        assert_eq!(redeemed, Redemption::Redeemed);
        // A grant of another session is not touched.
        store.insert_code(&code("h3", "strict", u.id)).await.unwrap();
        let elsewhere = portico_model::oauth::Grant { session_id: Some(sid("s2")), ..grant("strict", u.id) };
        store
            .redeem_code(&code_hash("h3"), t0(), &elsewhere, &refresh("r3", elsewhere.id, 30), &audit())
            .await
            .unwrap();
        store.create_session(&session("s1", u.id)).await.unwrap();
        store.create_session(&session("s2", u.id)).await.unwrap();

        assert_eq!(
            store.list_session_grants(sid("s1")).await.unwrap().iter().map(|g| g.id).collect::<Vec<_>>(),
            vec![kept.id, ended_with.id],
            "{backend:?}: the live grants of the session, oldest first"
        );
        let now = t0() + Duration::minutes(3);
        let event = portico_model::audit::AuditEvent::new(now, AuditKind::SessionEnded).user(u.id);
        let ended = store.end_session(sid("s1"), now, &event).await.unwrap().expect("the session ended");
        assert_eq!(ended.session, session("s1", u.id), "{backend:?}");
        let revoked: Vec<_> = ended.grants.iter().map(|g| (g.client_id.as_str().to_owned(), g.revoked_at)).collect();
        assert_eq!(revoked, vec![("app".to_owned(), None), ("strict".to_owned(), Some(now))], "{backend:?}");

        assert_eq!(store.find_session(&session_hash("s1"), t0()).await.unwrap(), None, "{backend:?}: gone");
        assert!(store.find_session_by_id(sid("s2"), t0()).await.unwrap().is_some(), "{backend:?}: only the one named");
        assert_eq!(store.find_grant(kept.id).await.unwrap().unwrap().revoked_at, None, "{backend:?}");
        assert_eq!(store.find_grant(ended_with.id).await.unwrap().unwrap().revoked_at, Some(now), "{backend:?}");
        assert!(store.access_token_state(ended_with.id, "jti").await.unwrap().grant_revoked, "{backend:?}");
        assert_eq!(store.find_grant(elsewhere.id).await.unwrap().unwrap().revoked_at, None, "{backend:?}");
        assert_eq!(
            store.list_session_grants(sid("s1")).await.unwrap().iter().map(|g| g.id).collect::<Vec<_>>(),
            vec![kept.id],
            "{backend:?}: a revoked grant is no longer listed"
        );
        let recorded = store.recent_audit(1).await.unwrap();
        assert_eq!(recorded[0].kind, "session.ended", "{backend:?}: recorded with the change");
        assert_eq!(store.end_session(sid("s1"), now, &event).await.unwrap(), None, "{backend:?}: ending twice");
        assert!(store.find_client(&client_id("strict")).await.unwrap().unwrap().logout_revokes_grants);
    }
}

#[tokio::test]
async fn thirty_parallel_ends_of_one_session_end_it_exactly_once() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        store
            .create_client(&portico_model::client::Client { logout_revokes_grants: true, ..client("app") })
            .await
            .unwrap();
        let u = crate::storage_contract::user("anna");
        store.create_user(&u).await.unwrap();
        store.insert_code(&code("h", "app", u.id)).await.unwrap();
        let g = grant("app", u.id);
        store.redeem_code(&code_hash("h"), t0(), &g, &refresh("r1", g.id, 30), &audit()).await.unwrap();
        store.create_session(&session("s1", u.id)).await.unwrap();
        let before = store.recent_audit(100).await.unwrap().len();

        let now = t0() + Duration::minutes(1);
        let event = portico_model::audit::AuditEvent::new(now, AuditKind::SessionEnded).user(u.id);
        let mut ends = tokio::task::JoinSet::new();
        for _ in 0..30 {
            let (store, event) = (Arc::clone(&store), event.clone());
            ends.spawn(async move { store.end_session(sid("s1"), now, &event).await.unwrap() });
        }
        let results: Vec<Option<EndedSession>> = ends.join_all().await;
        let ended: Vec<_> = results.into_iter().flatten().collect();
        assert_eq!(ended.len(), 1, "{backend:?}: exactly one call ends the session");
        assert_eq!(ended[0].grants.len(), 1, "{backend:?}: and reports its grant");
        assert_eq!(store.recent_audit(100).await.unwrap().len(), before + 1, "{backend:?}: one audit event");
        assert_eq!(store.find_grant(g.id).await.unwrap().unwrap().revoked_at, Some(now), "{backend:?}");
    }
}

/// Client `bc` (back-channel endpoint registered) and the demo-less `app`,
/// each with a grant of anna's under session `s1`, which has ended: the
/// store and how it ended.
async fn ended_with_notice(store: &dyn portico_storage::Storage) -> EndedSession {
    let (u, _) = granted(store).await;
    let bc = portico_model::client::Client {
        backchannel_logout_uri: Some("https://bc.example/logout".into()),
        ..client("bc")
    };
    store.create_client(&bc).await.unwrap();
    store
        .create_client(&portico_model::client::Client { backchannel_logout_uri: None, ..client("quiet") })
        .await
        .unwrap();
    for (hash, client_id) in [("h2", "bc"), ("h3", "quiet")] {
        store.insert_code(&code(hash, client_id, u.id)).await.unwrap();
        let g = grant(client_id, u.id);
        let (h, r, a) = (code_hash(hash), refresh(&format!("r-{hash}"), g.id, 30), audit());
        assert_eq!(store.redeem_code(&h, t0(), &g, &r, &a).await.unwrap(), Redemption::Redeemed);
    }
    store.create_session(&session("s1", u.id)).await.unwrap();
    let event = portico_model::audit::AuditEvent::new(t0(), AuditKind::SessionEnded).user(u.id);
    store.end_session(sid("s1"), t0(), &event).await.unwrap().expect("ended")
}

#[tokio::test]
async fn ending_a_session_stores_one_notice_per_listening_client_which_is_leased_retried_and_done() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        // `app` (from `granted`) and `bc` listen; `quiet` does not.
        let ended = ended_with_notice(store.as_ref()).await;
        assert_eq!(ended.notices, 2, "{backend:?}");
        let lease = t0() + Duration::seconds(30);
        let claimed = store.claim_logout_notices(t0(), lease, 10).await.unwrap();
        let mut uris: Vec<(&str, &str)> = claimed.iter().map(|n| (n.client_id.as_str(), n.uri.as_str())).collect();
        uris.sort_unstable();
        assert_eq!(uris, vec![("app", "https://a.example/logout"), ("bc", "https://bc.example/logout")], "{backend:?}");
        let notice = claimed.iter().find(|n| n.client_id.as_str() == "bc").unwrap().clone();
        assert_eq!((notice.session_id, notice.attempts, notice.lease_until), (sid("s1"), 0, Some(lease)));
        assert_eq!(notice.user_id, ended.session.user_id);
        assert_eq!(store.claim_logout_notices(t0(), lease, 10).await.unwrap(), vec![], "{backend:?}: leased");

        // A failed attempt: due again later, unleased, counted.
        let retry = NoticeOutcome::Retry { at: t0() + Duration::seconds(5), error: "answered 503".into() };
        assert!(store.finish_logout_notice(notice.id, lease, &retry).await.unwrap(), "{backend:?}");
        assert!(!store.finish_logout_notice(notice.id, lease, &retry).await.unwrap(), "{backend:?}: lease spent");
        let soon = t0() + Duration::seconds(4);
        assert_eq!(store.claim_logout_notices(soon, soon + Duration::seconds(30), 10).await.unwrap(), vec![]);
        let due = t0() + Duration::seconds(5);
        let again = store.claim_logout_notices(due, due + Duration::seconds(30), 1).await.unwrap();
        assert_eq!(again.len(), 1, "{backend:?}: the limit holds");
        let again = again.into_iter().next().unwrap();
        assert_eq!((again.attempts, again.last_error.as_deref()), (1, Some("answered 503")), "{backend:?}");
        assert!(store.finish_logout_notice(again.id, again.lease_until.unwrap(), &NoticeOutcome::Done).await.unwrap());

        // An expired lease is claimed again (a worker died).
        let late = lease + Duration::seconds(1);
        let reclaimed = store.claim_logout_notices(late, late + Duration::seconds(30), 10).await.unwrap();
        assert_eq!(reclaimed.len(), 1, "{backend:?}: the notice another worker dropped");
        assert_ne!(reclaimed[0].id, again.id);
        assert!(!store.finish_logout_notice(reclaimed[0].id, lease, &NoticeOutcome::Done).await.unwrap(), "old lease");
    }
}

#[tokio::test]
async fn thirty_parallel_claims_lease_each_notice_exactly_once() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        // 40 sessions ended, each owing `app` a notice.
        let (u, _) = granted(store.as_ref()).await;
        for i in 0..40 {
            let name = format!("p{i}");
            let code_name = format!("c{i}");
            store.insert_code(&code(&code_name, "app", u.id)).await.unwrap();
            let g = portico_model::oauth::Grant { session_id: Some(sid(&name)), ..grant("app", u.id) };
            let (h, r, a) = (code_hash(&code_name), refresh(&format!("pr{i}"), g.id, 30), audit());
            store.redeem_code(&h, t0(), &g, &r, &a).await.unwrap();
            store.create_session(&session(&name, u.id)).await.unwrap();
            let event = portico_model::audit::AuditEvent::new(t0(), AuditKind::SessionEnded);
            assert_eq!(store.end_session(sid(&name), t0(), &event).await.unwrap().unwrap().notices, 1);
        }
        let mut claims = tokio::task::JoinSet::new();
        for _ in 0..30 {
            let store = Arc::clone(&store);
            claims
                .spawn(async move { store.claim_logout_notices(t0(), t0() + Duration::minutes(1), 2).await.unwrap() });
        }
        let mut ids: Vec<_> = claims.join_all().await.into_iter().flatten().map(|n| n.id).collect();
        let claimed = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), claimed, "{backend:?}: no notice leased twice");
        assert_eq!(claimed, 40, "{backend:?}: 30 claims of 2 take all 40");
    }
}
