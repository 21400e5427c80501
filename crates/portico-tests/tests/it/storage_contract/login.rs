//! Login processes, trusted devices, consents and throttles.

use super::*;
use portico_model::ids::SessionHash;
use portico_storage::{CompletedLogin, LoginCompletion};

/// A fresh login process of client `app` at its first step.
fn login_process() -> LoginProcess {
    LoginProcess {
        id: Uuid::new_v4().into(),
        version: 0,
        created_at: t0(),
        expires_at: t0() + Duration::minutes(15),
        state: LoginState::start("app".into(), pending_request(), "csrf".into(), AuthMethod::Password),
    }
}

/// The authorization request a login process serves, with every field set.
fn pending_request() -> PendingAuthorization {
    PendingAuthorization {
        redirect_uri: "https://app.example/cb".into(),
        scope: vec!["openid".into(), "profile".into()],
        state: Some("st".into()),
        code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM".into(),
        nonce: Some("n".into()),
        prompt: Some(portico_model::oauth::Prompt::Login),
        max_age: Some(300),
        ui_locale: Some(portico_model::login::Locale::En),
        login_hint: Some("alice".into()),
        response_mode: portico_model::oauth::ResponseMode::FormPost,
        request_uri: None,
        dpop_jkt: None,
        id_token_hint: None,
    }
}

/// `attempt` counted on `key` at [`t0`], to be reported within two minutes
/// and far from any hold.
fn count_at_t0(key: &str, attempt: Uuid) -> portico_storage::CountAttempt<'_> {
    portico_storage::CountAttempt {
        key,
        attempt,
        report_by: t0() + Duration::minutes(2),
        now: t0(),
        forget_before: t0() - Duration::hours(24),
        hold_from: 1000,
        hold_until: t0() + Duration::seconds(30),
    }
}

#[tokio::test]
async fn login_processes_update_optimistically_and_expire() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let mut process = login_process();
        store.create_login_process(&process).await.unwrap();
        let stale = process.clone();
        process.state.principal = Some("anna".into());
        assert!(store.update_login_process(&process).await.unwrap());
        assert!(!store.update_login_process(&stale).await.unwrap(), "{backend:?}: a stale version loses");
        let stored = store.find_login_process(process.id, t0()).await.unwrap().unwrap();
        assert_eq!(stored.version, 1);
        assert_eq!(stored.state.principal.as_deref(), Some("anna"));
        assert_eq!(store.find_login_process(process.id, t0() + Duration::minutes(15)).await.unwrap(), None, "expired");
    }
}

/// A login process or a code that serves a pushed request takes the
/// request in the same write: of 30 at once exactly one is stored, and the
/// request is gone; reading it leaves it; another client's or an expired
/// request is neither taken nor served.
#[tokio::test]
async fn a_pushed_request_is_taken_by_the_write_that_serves_it() {
    use portico_model::oauth::PushedRequest;
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        store.create_client(&client("app")).await.unwrap();
        let anna = user("anna");
        store.create_user(&anna).await.unwrap();
        let push = |hash: &str, client: &str| PushedRequest {
            request_hash: hash.into(),
            client_id: client.into(),
            request: pending_request(),
            created_at: t0(),
            expires_at: t0() + Duration::seconds(60),
        };
        let find = |hash: &'static str, client: &'static str, at: OffsetDateTime| {
            let store = Arc::clone(&store);
            async move { store.find_pushed_request(hash, &client_id(client), at).await.unwrap() }
        };
        store.insert_pushed_request(&push("p-process", "app")).await.unwrap();
        store.insert_pushed_request(&push("p-code", "app")).await.unwrap();
        assert_eq!(find("p-process", "app", t0()).await, Some(pending_request()), "{backend:?}");
        assert_eq!(find("p-process", "app", t0()).await, Some(pending_request()), "{backend:?}: reading leaves it");
        assert_eq!(find("p-process", "other", t0()).await, None, "{backend:?}: only its client's");
        assert_eq!(find("p-process", "app", t0() + Duration::seconds(60)).await, None, "{backend:?}: expired");

        let mut racing = tokio::task::JoinSet::new();
        for i in 0..30 {
            let store = Arc::clone(&store);
            let process = login_process();
            let code = code(&format!("h-pushed-{i}"), "app", anna.id);
            racing.spawn(async move {
                let stored_process = store.create_login_process_taking(&process, "p-process").await.unwrap();
                let stored_code = store.insert_code_taking(&code, "p-code").await.unwrap();
                (process.id, stored_process, code.code_hash, stored_code)
            });
        }
        let raced = racing.join_all().await;
        assert_eq!(raced.iter().filter(|r| r.1).count(), 1, "{backend:?}: one process takes the request");
        assert_eq!(raced.iter().filter(|r| r.3).count(), 1, "{backend:?}: one code takes the request");
        for (process, stored_process, code, stored_code) in &raced {
            assert_eq!(
                store.find_login_process(*process, t0()).await.unwrap().is_some(),
                *stored_process,
                "{backend:?}"
            );
            assert_eq!(store.find_code(code).await.unwrap().is_some(), *stored_code, "{backend:?}");
        }
        assert_eq!(find("p-process", "app", t0()).await, None, "{backend:?}: taken");
        assert_eq!(find("p-code", "app", t0()).await, None, "{backend:?}: taken");

        // Another client's request, and an expired one: nothing stored,
        // the requests left as they were.
        store.insert_pushed_request(&push("p-other", "other")).await.unwrap();
        store.insert_pushed_request(&push("p-late", "app")).await.unwrap();
        let process = login_process();
        assert!(!store.create_login_process_taking(&process, "p-other").await.unwrap(), "{backend:?}");
        let late = LoginProcess { created_at: t0() + Duration::seconds(60), ..login_process() };
        assert!(!store.create_login_process_taking(&late, "p-late").await.unwrap(), "{backend:?}");
        let late_code =
            AuthorizationCode { created_at: t0() + Duration::seconds(60), ..code("h-late", "app", anna.id) };
        assert!(!store.insert_code_taking(&late_code, "p-late").await.unwrap(), "{backend:?}");
        assert_eq!(store.find_login_process(process.id, t0()).await.unwrap(), None, "{backend:?}");
        assert_eq!(store.find_login_process(late.id, t0()).await.unwrap(), None, "{backend:?}");
        assert!(store.find_code(&late_code.code_hash).await.unwrap().is_none(), "{backend:?}");
        assert_eq!(find("p-other", "other", t0()).await, Some(pending_request()), "{backend:?}");
        assert_eq!(find("p-late", "app", t0()).await, Some(pending_request()), "{backend:?}");
    }
}

#[tokio::test]
async fn devices_and_consents_are_remembered_per_user() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (ivan, maria) = two_users(&*store).await;
        store.create_client(&client("crm")).await.unwrap();

        assert_eq!(store.find_users_by_phone("+79000000000").await.unwrap().len(), 2, "{backend:?}");
        assert!(store.find_users_by_phone("+79000000001").await.unwrap().is_empty());

        assert!(!store.is_device_trusted(ivan.id, "d1", t0()).await.unwrap());
        store.trust_device(ivan.id, "d1", t0()).await.unwrap();
        assert!(store.is_device_trusted(ivan.id, "d1", t0()).await.unwrap());
        assert!(!store.is_device_trusted(ivan.id, "d1", t0() + Duration::seconds(1)).await.unwrap(), "too old");
        assert!(!store.is_device_trusted(maria.id, "d1", t0()).await.unwrap(), "per user");

        // Listed newest first while trusted; forgotten once, audited once.
        store.trust_device(ivan.id, "d2", t0() + Duration::minutes(1)).await.unwrap();
        let listed = store.trusted_devices(ivan.id, t0()).await.unwrap();
        assert_eq!(listed.iter().map(|d| d.device_id.as_str()).collect::<Vec<_>>(), ["d2", "d1"], "{backend:?}");
        assert_eq!((listed[1].trusted_at, listed[1].user_agent.as_deref()), (t0(), None));
        assert_eq!(store.trusted_devices(ivan.id, t0() + Duration::seconds(1)).await.unwrap().len(), 1, "too old");
        assert!(store.trusted_devices(maria.id, t0()).await.unwrap().is_empty());
        let forgotten = AuditEvent::new(t0(), AuditKind::DeviceForgotten).user(ivan.id);
        assert!(!store.forget_device(maria.id, "d2", &forgotten).await.unwrap(), "{backend:?}: not hers");
        assert!(store.forget_device(ivan.id, "d2", &forgotten).await.unwrap(), "{backend:?}");
        assert!(!store.forget_device(ivan.id, "d2", &forgotten).await.unwrap(), "once");
        assert!(!store.is_device_trusted(ivan.id, "d2", t0()).await.unwrap());
        assert!(store.is_device_trusted(ivan.id, "d1", t0()).await.unwrap(), "the other stays");
        let kinds: Vec<String> = store.recent_audit(10).await.unwrap().into_iter().map(|e| e.kind).collect();
        assert_eq!(kinds, ["device.forgotten"], "{backend:?}");

        assert_eq!(store.find_consent(ivan.id, &client_id("crm")).await.unwrap(), None);
        store.grant_consent(ivan.id, &client_id("crm"), &["profile".into(), "email".into()], t0()).await.unwrap();
        store.grant_consent(ivan.id, &client_id("crm"), &["profile".into(), "phone".into()], t0()).await.unwrap();
        assert_eq!(
            store.find_consent(ivan.id, &client_id("crm")).await.unwrap(),
            Some(vec!["profile".into(), "phone".into()])
        );
    }
}

#[tokio::test]
async fn throttle_counts_are_exact_under_parallel_attempts_and_holds_refuse_them() {
    use portico_storage::CountAttempt;
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let now = t0();
        let forget_before = now - Duration::hours(24);
        // Every attempt here reports its outcome in time (a day).
        let attempt = move |key: &'static str, hold_from: u32| CountAttempt {
            key,
            attempt: uuid::Uuid::new_v4(),
            report_by: now + Duration::days(2),
            now,
            forget_before,
            hold_from,
            hold_until: now + Duration::seconds(30),
        };

        // 32 attempts at once, no hold: each gets its own count, 1 to 32.
        let mut attempts = tokio::task::JoinSet::new();
        for _ in 0..32 {
            let store = Arc::clone(&store);
            let one = attempt("account:a", 1000);
            attempts.spawn(async move { (one.attempt, store.count_attempt(one).await.unwrap()) });
        }
        let counted_a = attempts.join_all().await;
        let mut counts: Vec<u32> = counted_a.iter().map(|(_, count)| count.unwrap()).collect();
        counts.sort_unstable();
        assert_eq!(counts, (1..=32).collect::<Vec<_>>(), "{backend:?}");
        assert_eq!(store.throttle("account:a", forget_before, now).await.unwrap().failures, 32);

        // From the hold count on, the attempt that reaches it holds the key:
        // of 32 parallel attempts on a key at 4 with hold_from 5, one is counted.
        for _ in 0..4 {
            store.count_attempt(attempt("account:b", 5)).await.unwrap().unwrap();
        }
        let mut attempts = tokio::task::JoinSet::new();
        for _ in 0..32 {
            let store = Arc::clone(&store);
            let one = attempt("account:b", 5);
            attempts.spawn(async move { (one.attempt, store.count_attempt(one).await.unwrap()) });
        }
        let results = attempts.join_all().await;
        assert_eq!(results.iter().filter(|(_, r)| r.is_some()).count(), 1, "{backend:?}: {results:?}");
        let (holder, count) = results.iter().find(|(_, r)| r.is_some()).unwrap();
        assert_eq!(*count, Some(5));
        let held = store.throttle("account:b", forget_before, now).await.unwrap();
        assert_eq!(held, portico_storage::Throttle { failures: 5, locked_until: Some(now + Duration::seconds(30)) });

        // Taking the holding attempt back releases its hold, not another lock.
        store.uncount_attempt("account:b", *holder, Some(now + Duration::seconds(30))).await.unwrap();
        assert_eq!(
            store.throttle("account:b", forget_before, now).await.unwrap(),
            portico_storage::Throttle { failures: 4, locked_until: None }
        );
        let again = attempt("account:b", 5);
        assert_eq!(store.count_attempt(again).await.unwrap(), Some(5), "held again");
        store.uncount_attempt("account:b", again.attempt, Some(now + Duration::seconds(1))).await.unwrap();
        let state = store.throttle("account:b", forget_before, now).await.unwrap();
        assert_eq!(state.locked_until, Some(now + Duration::seconds(30)), "another hold stays");
        store
            .count_attempt(CountAttempt { now: now + Duration::seconds(31), ..attempt("account:b", 5) })
            .await
            .unwrap();

        // A lock is never shortened; once over, counting goes on.
        store.lock_throttle("account:b", now + Duration::minutes(5)).await.unwrap();
        store.lock_throttle("account:b", now + Duration::minutes(1)).await.unwrap();
        let state = store.throttle("account:b", forget_before, now).await.unwrap();
        assert_eq!(state.locked_until, Some(now + Duration::minutes(5)));
        let later = CountAttempt { now: now + Duration::minutes(6), ..attempt("account:b", 5) };
        assert_eq!(store.count_attempt(later).await.unwrap(), Some(6));

        // An attempt taken back (once: twice changes nothing more); a
        // success clears; other keys untouched.
        store.uncount_attempt("account:a", counted_a[0].0, None).await.unwrap();
        store.uncount_attempt("account:a", counted_a[0].0, None).await.unwrap();
        assert_eq!(store.throttle("account:a", forget_before, now).await.unwrap().failures, 31);
        store.clear_throttle("account:a").await.unwrap();
        assert_eq!(store.throttle("account:a", forget_before, now).await.unwrap(), Default::default());
        assert_eq!(store.throttle("account:b", forget_before, now).await.unwrap().failures, 6);

        // A count that did not move within the memory starts again.
        let next_day = now + Duration::hours(25);
        assert_eq!(store.throttle("account:b", next_day - Duration::hours(24), next_day).await.unwrap().failures, 0);
        let fresh =
            CountAttempt { now: next_day, forget_before: next_day - Duration::hours(24), ..attempt("account:b", 5) };
        assert_eq!(store.count_attempt(fresh).await.unwrap(), Some(1));

        // Stale counters are removed; recent ones stay.
        store.count_attempt(attempt("address:192.0.2.1", 30)).await.unwrap();
        assert_eq!(store.remove_stale_throttles(now + Duration::hours(1)).await.unwrap(), 1, "{backend:?}");
        assert_eq!(store.throttle("account:b", forget_before, now).await.unwrap().failures, 1);
    }
}

/// An attempt whose outcome never comes (its node died between the count
/// and the check) counts only until its `report_by`: then reads leave it
/// out, and the next count takes it back. A reported failure stays.
#[tokio::test]
async fn unreported_attempts_stop_counting_and_reported_failures_stay() {
    use portico_storage::CountAttempt;
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let now = t0();
        let forget_before = now - Duration::hours(24);
        let attempt = move |at: time::OffsetDateTime| CountAttempt {
            key: "address:192.0.2.7",
            attempt: uuid::Uuid::new_v4(),
            report_by: at + Duration::minutes(2),
            now: at,
            forget_before,
            hold_from: 1000,
            hold_until: at + Duration::seconds(30),
        };
        // Two failures reported; twelve attempts whose node died.
        for _ in 0..2 {
            let failed = attempt(now);
            store.count_attempt(failed).await.unwrap();
            store.report_attempt(failed.key, failed.attempt).await.unwrap();
        }
        let mut attempts = tokio::task::JoinSet::new();
        for _ in 0..12 {
            let store = Arc::clone(&store);
            attempts.spawn(async move { store.count_attempt(attempt(now)).await.unwrap() });
        }
        assert!(attempts.join_all().await.iter().all(Option::is_some));
        let read = |at| {
            let store = Arc::clone(&store);
            async move { store.throttle("address:192.0.2.7", forget_before, at).await.unwrap().failures }
        };
        assert_eq!(read(now + Duration::minutes(1)).await, 14, "{backend:?}: in flight, they count");
        assert_eq!(read(now + Duration::minutes(3)).await, 2, "{backend:?}: unreported, they count no more");
        let next = attempt(now + Duration::minutes(3));
        assert_eq!(store.count_attempt(next).await.unwrap(), Some(3), "{backend:?}: taken back, then counted");
        // Taking back an attempt already taken back as unreported changes nothing.
        let (key, late) = ("address:192.0.2.7", uuid::Uuid::new_v4());
        store.uncount_attempt(key, late, None).await.unwrap();
        assert_eq!(read(now + Duration::minutes(3)).await, 3);
        store.report_attempt(next.key, next.attempt).await.unwrap();
        assert_eq!(read(now + Duration::minutes(10)).await, 3, "reported failures stay");
    }
}

#[tokio::test]
async fn a_deleted_login_process_is_gone_and_deleting_twice_is_harmless() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (process, other) = (login_process(), login_process());
        store.create_login_process(&process).await.unwrap();
        store.create_login_process(&other).await.unwrap();
        store.delete_login_process(process.id).await.unwrap();
        assert_eq!(store.find_login_process(process.id, t0()).await.unwrap(), None, "{backend:?}");
        assert!(store.find_login_process(other.id, t0()).await.unwrap().is_some(), "only the one named");
        store.delete_login_process(process.id).await.unwrap();
    }
}

/// A login's completion stores its process, session, trusted device and
/// audit entry together, and a stale version stores none of them.
#[tokio::test]
async fn a_login_completes_all_at_once_or_not_at_all() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let ivan = user("ivan");
        store.create_user(&ivan).await.unwrap();
        let mut process = login_process();
        store.create_login_process(&process).await.unwrap();
        let stale = process.clone();
        process.state.principal = Some("ivan".into());
        assert!(store.update_login_process(&process).await.unwrap());

        // A request that read the process before that update completes nothing.
        let late = session("late", ivan.id);
        let audit = AuditEvent::new(t0(), AuditKind::LoginSucceeded).user(ivan.id);
        let completion = |process, session| LoginCompletion {
            process,
            session,
            session_limit: 30,
            replaces: None,
            trusted_device: Some((ivan.id, "d1")),
            device_limit: 30,
            user_agent: Some("Mozilla/5.0 (Android 14) Chrome/131.0"),
            now: t0(),
            audit: &audit,
        };
        assert_eq!(store.complete_login_process(&completion(&stale, Some(&late))).await.unwrap(), None, "{backend:?}");
        assert_eq!(store.find_session_by_id(late.id, t0()).await.unwrap(), None, "{backend:?}: no session");
        assert!(!store.is_device_trusted(ivan.id, "d1", t0()).await.unwrap(), "{backend:?}: no device");
        assert!(store.recent_audit(10).await.unwrap().is_empty(), "{backend:?}: no audit entry");

        // The current version completes, with everything it brings.
        process.version += 1;
        let opened = session("opened", ivan.id);
        let ended = store.complete_login_process(&completion(&process, Some(&opened))).await.unwrap();
        assert_eq!(ended, Some(CompletedLogin::default()), "{backend:?}: saved, and no session ended");
        assert_eq!(store.find_login_process(process.id, t0()).await.unwrap().unwrap().version, 2);
        assert_eq!(store.find_session_by_id(opened.id, t0()).await.unwrap(), Some(opened.clone()), "{backend:?}");
        assert!(store.is_device_trusted(ivan.id, "d1", t0()).await.unwrap(), "{backend:?}");
        let devices = store.trusted_devices(ivan.id, t0()).await.unwrap();
        assert_eq!(devices.len(), 1, "{backend:?}");
        assert_eq!(
            devices[0].user_agent.as_deref(),
            Some("Mozilla/5.0 (Android 14) Chrome/131.0"),
            "named by its browser"
        );
        let recorded = store.recent_audit(10).await.unwrap();
        assert_eq!(recorded.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>(), ["login.succeeded"], "{backend:?}");

        // A completion that continues a session opens none, trusts no
        // device and replaces nothing.
        let mut continued = process.clone();
        continued.version += 1;
        let continued = LoginCompletion {
            process: &continued,
            session: None,
            session_limit: 30,
            replaces: Some(&opened.token_hash),
            trusted_device: None,
            device_limit: 30,
            user_agent: None,
            now: t0(),
            audit: &audit,
        };
        let completed = store.complete_login_process(&continued).await.unwrap();
        assert_eq!(completed, Some(CompletedLogin::default()), "{backend:?}");
        assert_eq!(store.recent_audit(10).await.unwrap().len(), 2);
        assert!(store.find_session_by_id(opened.id, t0()).await.unwrap().is_some(), "{backend:?}: still live");
    }
}

/// Throttles are read several keys at once, in the order asked; a success
/// clears some keys and takes the attempt back from the others in one write.
#[tokio::test]
async fn throttles_are_read_together_and_a_success_settles_every_key() {
    use portico_storage::Throttle;
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let now = t0();
        let forget_before = now - Duration::hours(24);
        let failed = Uuid::new_v4();
        for key in ["account:a", "address:192.0.2.7"] {
            store.count_attempt(count_at_t0(key, failed)).await.unwrap();
            store.report_attempt(key, failed).await.unwrap();
        }
        let attempt = Uuid::new_v4();
        for key in ["account:a", "address:192.0.2.7"] {
            assert_eq!(store.count_attempt(count_at_t0(key, attempt)).await.unwrap(), Some(2), "{backend:?}");
        }
        store.lock_throttle("account:z", now + Duration::minutes(1)).await.unwrap();
        let read = || store.throttles(&["address:192.0.2.7", "account:none", "account:a"], forget_before, now);
        let two = Throttle { failures: 2, locked_until: None };
        assert_eq!(read().await.unwrap(), [two, Throttle::default(), two], "{backend:?}: in the order asked");

        store.attempt_succeeded(attempt, &["account:a"], &["address:192.0.2.7"]).await.unwrap();
        let one = Throttle { failures: 1, locked_until: None };
        assert_eq!(read().await.unwrap(), [one, Throttle::default(), Throttle::default()], "{backend:?}");
        // Settling again takes nothing more back.
        store.attempt_succeeded(attempt, &[], &["address:192.0.2.7"]).await.unwrap();
        assert_eq!(read().await.unwrap()[0], one, "{backend:?}: the address's own failure stays");
    }
}

/// However many keys are asked at once (more than one PostgreSQL statement
/// names), each is read in the order asked, and a success settles each:
/// the cleared ones forgotten, this attempt taken back from the others.
#[tokio::test]
async fn any_number_of_keys_are_read_and_settled() {
    use portico_storage::Throttle;
    const KEYS: [&str; 11] = ["k:0", "k:1", "k:2", "k:3", "k:4", "k:5", "k:6", "k:7", "k:8", "k:9", "k:10"];
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let now = t0();
        let forget_before = now - Duration::hours(24);
        // Key i has i + 1 failures, this attempt's the last of them.
        let attempt = Uuid::new_v4();
        for (i, key) in KEYS.into_iter().enumerate() {
            for _ in 0..i {
                let failed = Uuid::new_v4();
                store.count_attempt(count_at_t0(key, failed)).await.unwrap();
                store.report_attempt(key, failed).await.unwrap();
            }
            assert_eq!(
                store.count_attempt(count_at_t0(key, attempt)).await.unwrap(),
                Some(i as u32 + 1),
                "{backend:?}"
            );
        }
        let asked: Vec<&str> = KEYS.iter().rev().copied().chain(["k:none"]).collect();
        let failures = |throttles: Vec<Throttle>| throttles.iter().map(|t| t.failures).collect::<Vec<u32>>();
        let read = store.throttles(&asked, forget_before, now).await.unwrap();
        assert_eq!(failures(read), [11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0], "{backend:?}: in the order asked");

        // Even keys cleared, odd ones get this attempt back.
        let (cleared, taken_back): (Vec<&str>, Vec<&str>) =
            KEYS.iter().partition(|key| key[2..].parse::<u32>().unwrap() % 2 == 0);
        store.attempt_succeeded(attempt, &cleared, &taken_back).await.unwrap();
        let read = store.throttles(&KEYS, forget_before, now).await.unwrap();
        assert_eq!(failures(read), [0, 1, 0, 3, 0, 5, 0, 7, 0, 9, 0], "{backend:?}");
        // Settling again takes nothing more back.
        store.attempt_succeeded(attempt, &[], &taken_back).await.unwrap();
        let read = store.throttles(&KEYS, forget_before, now).await.unwrap();
        assert_eq!(failures(read), [0, 1, 0, 3, 0, 5, 0, 7, 0, 9, 0], "{backend:?}: once only");
    }
}

/// The code a completed login earns is stored as its process ends, in one write.
#[tokio::test]
async fn a_code_ending_a_login_replaces_its_process() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let ivan = user("ivan");
        store.create_user(&ivan).await.unwrap();
        store.create_client(&client("app")).await.unwrap();
        store.create_session(&session("s1", ivan.id)).await.unwrap();
        let (process, other) = (login_process(), login_process());
        store.create_login_process(&process).await.unwrap();
        store.create_login_process(&other).await.unwrap();
        let issued = code("ending", "app", ivan.id);
        store.insert_code_ending_login(&issued, process.id).await.unwrap();
        assert_eq!(store.find_login_process(process.id, t0()).await.unwrap(), None, "{backend:?}: the process ended");
        assert!(store.find_login_process(other.id, t0()).await.unwrap().is_some(), "{backend:?}: only that one");
        let stored = store.find_code(&issued.code_hash).await.unwrap().expect("the code is stored");
        assert_eq!(stored.code, issued, "{backend:?}");
    }
}

/// Completes a fresh login process of `user_id` that opens `session` at
/// `now`, with at most `limit` live sessions per user: the sessions that
/// ended for the limit.
async fn open_session(
    store: &dyn Storage,
    session: &SsoSession,
    limit: u32,
    now: OffsetDateTime,
) -> Vec<portico_model::session::EndedSession> {
    open_session_replacing(store, session, limit, None, now).await.beyond_limit
}

/// As [`open_session`], in a browser that presented the session
/// `replaces`: every session the completion ended.
async fn open_session_replacing(
    store: &dyn Storage,
    session: &SsoSession,
    limit: u32,
    replaces: Option<&SessionHash>,
    now: OffsetDateTime,
) -> CompletedLogin {
    let process = login_process();
    store.create_login_process(&process).await.unwrap();
    let audit = AuditEvent::new(now, AuditKind::LoginSucceeded).user(session.user_id);
    let completion = LoginCompletion {
        process: &process,
        session: Some(session),
        session_limit: limit,
        replaces,
        trusted_device: None,
        device_limit: 30,
        user_agent: None,
        now,
        audit: &audit,
    };
    store.complete_login_process(&completion).await.unwrap().expect("completed")
}

/// A login that opens a session ends the live one the browser presented,
/// whoever its user, in its own write and before the limit is counted: at
/// the limit it makes the room, and no other session ends. The end is a
/// logout's (grants, notices) recorded `by: "replaced"`. An unknown or
/// expired session is nothing to end; a completion that came too late
/// ends nothing.
#[tokio::test]
async fn a_login_replaces_the_session_the_browser_presented_before_the_limit_is_counted() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (u, grant) = granted(store.as_ref()).await;
        let maria = user("maria");
        store.create_user(&maria).await.unwrap();
        let at = |minutes| t0() + Duration::minutes(minutes);
        let opened = |name: &str, user, minutes| SsoSession { created_at: at(minutes), ..session(name, user) };
        // s1 holds `app`'s grant (see `granted`); s2 is the newer.
        store.create_session(&opened("s1", u.id, 0)).await.unwrap();
        store.create_session(&opened("s2", u.id, 1)).await.unwrap();
        let before = store.recent_audit(100).await.unwrap().len();

        // At a limit of two, s3 opened in s1's browser ends s1 only.
        let completed =
            open_session_replacing(store.as_ref(), &opened("s3", u.id, 2), 2, Some(&"s1".into()), at(2)).await;
        let replaced = completed.replaced.expect("the presented session ended");
        assert_eq!((replaced.session.id, completed.beyond_limit.len()), (sid("s1"), 0), "{backend:?}");
        assert_eq!(replaced.grants.iter().map(|g| g.id).collect::<Vec<_>>(), [grant.id], "{backend:?}: as a logout");
        let live: Vec<_> = store.list_sessions(u.id, at(2)).await.unwrap().iter().map(|s| s.id).collect();
        assert_eq!(live, [sid("s3"), sid("s2")], "{backend:?}: the other browser's session lives on");
        let recorded = store.recent_audit(100).await.unwrap();
        let new: Vec<_> = recorded[..recorded.len() - before].iter().map(|e| (e.kind.as_str(), &e.detail)).collect();
        let by = serde_json::json!({ "sid": sid("s1"), "by": "replaced" });
        assert_eq!(new, [("session.ended", &by), ("login.succeeded", &serde_json::Value::Null)], "{backend:?}");

        // Another user's session in the browser ends too; the limit then
        // counts the new user's own.
        store.create_session(&opened("m1", maria.id, 3)).await.unwrap();
        let completed =
            open_session_replacing(store.as_ref(), &opened("s4", u.id, 4), 2, Some(&"m1".into()), at(4)).await;
        assert_eq!(completed.replaced.map(|e| e.session.id), Some(sid("m1")), "{backend:?}");
        let beyond: Vec<_> = completed.beyond_limit.iter().map(|e| e.session.id).collect();
        assert_eq!(beyond, [sid("s2")], "{backend:?}");
        assert!(store.list_sessions(maria.id, at(4)).await.unwrap().is_empty(), "{backend:?}");

        // Unknown and expired sessions: nothing replaced.
        let expired = SsoSession { expires_at: at(5), ..opened("gone", u.id, 0) };
        store.create_session(&expired).await.unwrap();
        for presented in ["unknown", "gone"] {
            let s = opened(&format!("s-{presented}"), u.id, 6);
            let completed = open_session_replacing(store.as_ref(), &s, 30, Some(&presented.into()), at(6)).await;
            assert_eq!(completed, CompletedLogin::default(), "{backend:?}: {presented}");
        }

        // A completion that lost the race to another request ends nothing.
        let mut process = login_process();
        store.create_login_process(&process).await.unwrap();
        let stale = process.clone();
        process.state.principal = Some("anna".into());
        assert!(store.update_login_process(&process).await.unwrap());
        let audit = AuditEvent::new(at(7), AuditKind::LoginSucceeded).user(u.id);
        let late = LoginCompletion {
            process: &stale,
            session: Some(&opened("late", u.id, 7)),
            session_limit: 30,
            replaces: Some(&"s3".into()),
            trusted_device: None,
            device_limit: 30,
            user_agent: None,
            now: at(7),
            audit: &audit,
        };
        assert_eq!(store.complete_login_process(&late).await.unwrap(), None, "{backend:?}");
        assert!(store.find_session_by_id(sid("s3"), at(7)).await.unwrap().is_some(), "{backend:?}: s3 lives on");
    }
}

/// A login completing for a user deleted while signing in stores nothing
/// and is told so as a lost race is (`None`): no session, no trusted
/// device, no audit entry, the process as it was.
#[tokio::test]
async fn a_login_of_a_user_deleted_meanwhile_completes_nothing() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (ivan, anna) = ivan_and_anna(store.as_ref()).await;
        store.create_session(&session("ivans", ivan.id)).await.unwrap();
        assert!(store.delete_user(anna.id).await.unwrap());
        let before = store.recent_audit(100).await.unwrap().len();
        let audit = AuditEvent::new(t0(), AuditKind::LoginSucceeded).user(anna.id);
        for (opens, trusts) in [(true, true), (true, false), (false, true)] {
            let process = login_process();
            store.create_login_process(&process).await.unwrap();
            let opened = session(&format!("annas-{opens}-{trusts}"), anna.id);
            let completion = LoginCompletion {
                process: &process,
                session: opens.then_some(&opened),
                session_limit: 30,
                replaces: Some(&"ivans".into()),
                trusted_device: trusts.then_some((anna.id, "d1")),
                device_limit: 30,
                user_agent: None,
                now: t0(),
                audit: &audit,
            };
            let completed = store.complete_login_process(&completion).await;
            assert_eq!(completed.unwrap(), None, "{backend:?}: opens {opens}, trusts {trusts}");
            assert_eq!(store.find_session_by_id(opened.id, t0()).await.unwrap(), None, "{backend:?}");
            let stored = store.find_login_process(process.id, t0()).await.unwrap().expect("kept");
            assert_eq!(stored.version, process.version, "{backend:?}: the process as it was");
        }
        assert!(store.find_session(&"ivans".into(), t0()).await.unwrap().is_some(), "{backend:?}: nothing replaced");
        assert!(!store.is_device_trusted(anna.id, "d1", t0()).await.unwrap(), "{backend:?}");
        assert_eq!(store.recent_audit(100).await.unwrap().len(), before, "{backend:?}: nothing recorded");
    }
}

/// A login that opens a session beyond the user's limit ends the oldest
/// others in its own write, each as a logout ends one: the grants of
/// clients that asked for it revoked, a back-channel notice stored, an
/// audit entry `by: "limit"`; never the session it opens.
#[tokio::test]
async fn a_login_beyond_the_session_limit_ends_the_oldest_sessions_as_a_logout_would() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        // anna holds `app`'s grant under s1; `strict` (revoked at logout)
        // holds another under s1; both are told by back channel.
        let (u, kept) = granted(store.as_ref()).await;
        let strict = Client {
            logout_revokes_grants: true,
            backchannel_logout_uri: Some("https://strict.example/logout".into()),
            ..client("strict")
        };
        store.create_client(&strict).await.unwrap();
        store.insert_code(&code("h2", "strict", u.id)).await.unwrap();
        let ended_with = grant("strict", u.id);
        let redeemed =
            store.redeem_code(&code_hash("h2"), t0(), &ended_with, &refresh("r2", ended_with.id, 30), &audit()).await;
        assert_eq!(redeemed.unwrap(), portico_model::oauth::Redemption::Redeemed);
        let at = |minutes| t0() + Duration::minutes(minutes);
        let opened = |name: &str, minutes| SsoSession { created_at: at(minutes), ..session(name, u.id) };
        for (name, minutes) in [("s1", 0), ("s2", 1), ("s3", 2)] {
            assert_eq!(open_session(store.as_ref(), &opened(name, minutes), 3, at(minutes)).await, vec![]);
        }
        let before = store.recent_audit(100).await.unwrap().len();

        // A fourth at the limit of three ends the oldest, s1.
        let ended = open_session(store.as_ref(), &opened("s4", 3), 3, at(3)).await;
        assert_eq!(ended.iter().map(|e| e.session.id).collect::<Vec<_>>(), [sid("s1")], "{backend:?}");
        let revoked: Vec<_> = ended[0].grants.iter().map(|g| (g.client_id.as_str(), g.revoked_at)).collect();
        assert_eq!(revoked, [("app", None), ("strict", Some(at(3)))], "{backend:?}: as a logout revokes");
        assert_eq!(ended[0].notices, 2, "{backend:?}: both are told (each has a back-channel address)");
        assert_eq!(store.find_grant(ended_with.id).await.unwrap().unwrap().revoked_at, Some(at(3)), "{backend:?}");
        assert_eq!(store.find_grant(kept.id).await.unwrap().unwrap().revoked_at, None, "{backend:?}");
        let notices = store.claim_logout_notices(at(3), at(4), 10).await.unwrap();
        let mut told: Vec<_> = notices.iter().map(|n| (n.client_id.as_str(), n.session_id)).collect();
        told.sort_unstable();
        assert_eq!(told, [("app", sid("s1")), ("strict", sid("s1"))], "{backend:?}");
        let live: Vec<_> = store.list_sessions(u.id, at(3)).await.unwrap().iter().map(|s| s.id).collect();
        assert_eq!(live, [sid("s4"), sid("s3"), sid("s2")], "{backend:?}: the newest three");
        let recorded = store.recent_audit(100).await.unwrap();
        let new: Vec<_> = recorded[..recorded.len() - before].iter().map(|e| (e.kind.as_str(), &e.detail)).collect();
        let by_limit = serde_json::json!({ "sid": sid("s1"), "by": "limit" });
        assert_eq!(new, [("session.ended", &by_limit), ("login.succeeded", &serde_json::Value::Null)], "{backend:?}");

        // A lower limit ends as many as it must, oldest first; an expired
        // session counts for nothing.
        let expired = SsoSession { expires_at: at(5), ..opened("s0", 0) };
        store.create_session(&expired).await.unwrap();
        let ended = open_session(store.as_ref(), &opened("s5", 6), 2, at(6)).await;
        assert_eq!(ended.iter().map(|e| e.session.id).collect::<Vec<_>>(), [sid("s2"), sid("s3")], "{backend:?}");
        let live: Vec<_> = store.list_sessions(u.id, at(6)).await.unwrap().iter().map(|s| s.id).collect();
        assert_eq!(live, [sid("s5"), sid("s4")], "{backend:?}");
        // At a limit of one, the login keeps only its own.
        let ended = open_session(store.as_ref(), &opened("s6", 7), 1, at(7)).await;
        assert_eq!(ended.len(), 2, "{backend:?}");
        let live: Vec<_> = store.list_sessions(u.id, at(7)).await.unwrap().iter().map(|s| s.id).collect();
        assert_eq!(live, [sid("s6")], "{backend:?}");
    }
}

/// Thirty-two logins of one user completing at once, at a limit of five:
/// exactly five sessions stay, exactly twenty-seven end (each once, with
/// one audit entry), and no login ends the session it opens.
#[tokio::test]
async fn thirty_two_parallel_logins_of_one_user_leave_exactly_the_session_limit() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let anna = user("anna");
        store.create_user(&anna).await.unwrap();
        let mut logins = tokio::task::JoinSet::new();
        for i in 0..32 {
            let (store, opened) = (Arc::clone(&store), session(&format!("s{i}"), anna.id));
            logins.spawn(async move {
                let ended = open_session(store.as_ref(), &opened, 5, t0()).await;
                assert!(ended.iter().all(|e| e.session.id != opened.id), "a login never ends its own session");
                ended
            });
        }
        let ended: Vec<_> = logins.join_all().await.into_iter().flatten().map(|e| e.session.id).collect();
        let distinct: std::collections::HashSet<_> = ended.iter().collect();
        assert_eq!((ended.len(), distinct.len()), (27, 27), "{backend:?}: each beyond the limit ended once");
        let live = store.list_sessions(anna.id, t0()).await.unwrap();
        assert_eq!(live.len(), 5, "{backend:?}");
        assert!(live.iter().all(|s| !distinct.contains(&s.id)), "{backend:?}");
        let audit = store.recent_audit(200).await.unwrap();
        let kinds = |kind: &str| audit.iter().filter(|e| e.kind == kind).count();
        assert_eq!((kinds("session.ended"), kinds("login.succeeded")), (27, 32), "{backend:?}");
    }
}

/// Sixteen pairs of browsers swap users at once, at a limit of one
/// session: in each pair one browser holds the first user's session and
/// signs in as the second, the other the reverse, so each completion ends
/// the session the other one keeps at the limit. All thirty-two complete
/// (none is refused for a conflict with its partner), each old session
/// ends exactly once, and only the thirty-two new sessions stay.
#[tokio::test]
async fn thirty_two_crossed_logins_replacing_each_others_sessions_all_complete() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let mut logins = tokio::task::JoinSet::new();
        for pair in 0..16 {
            let (first, second) = (user(&format!("first{pair}")), user(&format!("second{pair}")));
            store.create_user(&first).await.unwrap();
            store.create_user(&second).await.unwrap();
            let (old_first, old_second) = (format!("old-a{pair}"), format!("old-b{pair}"));
            store.create_session(&session(&old_first, first.id)).await.unwrap();
            store.create_session(&session(&old_second, second.id)).await.unwrap();
            for (presented, signs_in) in [(old_first, second.id), (old_second, first.id)] {
                let (store, opened) = (Arc::clone(&store), session(&format!("new-{presented}"), signs_in));
                logins.spawn(async move {
                    let presented = SessionHash::from(presented);
                    open_session_replacing(store.as_ref(), &opened, 1, Some(&presented), t0()).await
                });
            }
        }
        let ended: Vec<_> =
            logins.join_all().await.iter().flat_map(CompletedLogin::ended).map(|e| e.session.id).collect();
        let distinct: std::collections::HashSet<_> = ended.iter().collect();
        assert_eq!((ended.len(), distinct.len()), (32, 32), "{backend:?}: each old session ended once");
        let audit = store.recent_audit(200).await.unwrap();
        let kinds = |kind: &str| audit.iter().filter(|e| e.kind == kind).count();
        assert_eq!((kinds("session.ended"), kinds("login.succeeded")), (32, 32), "{backend:?}");
        for pair in 0..16 {
            for old in [format!("old-a{pair}"), format!("old-b{pair}")] {
                assert!(distinct.contains(&sid(&old)), "{backend:?}: {old} ended");
                let new = store.find_session_by_id(sid(&format!("new-{old}")), t0()).await.unwrap();
                assert!(new.is_some(), "{backend:?}: the login in {old}'s browser kept its session");
            }
        }
    }
}

/// Two users stored, `ivan` and `anna`, for the device tests.
async fn ivan_and_anna(store: &dyn Storage) -> (User, User) {
    let (ivan, anna) = (user("ivan"), user("anna"));
    store.create_user(&ivan).await.unwrap();
    store.create_user(&anna).await.unwrap();
    (ivan, anna)
}

/// A login that trusts a device beyond the user's device limit forgets
/// the user's least recently trusted others in the same write, never the
/// one it trusts nor another user's; one trusted again is the newest.
#[tokio::test]
async fn trusting_a_device_beyond_the_limit_forgets_the_least_recently_trusted() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (ivan, anna) = ivan_and_anna(store.as_ref()).await;
        store.trust_device(anna.id, "anna-1", t0()).await.unwrap();
        let at = |minutes| t0() + Duration::minutes(minutes);
        let trust = |device: &'static str, minutes: i64, limit: u32| {
            let store = Arc::clone(&store);
            async move {
                let process = login_process();
                store.create_login_process(&process).await.unwrap();
                let opened =
                    SsoSession { created_at: at(minutes), ..session(&format!("s-{device}-{minutes}"), ivan.id) };
                let audit = AuditEvent::new(at(minutes), AuditKind::LoginSucceeded).user(ivan.id);
                let completion = LoginCompletion {
                    process: &process,
                    session: Some(&opened),
                    session_limit: 30,
                    replaces: None,
                    trusted_device: Some((ivan.id, device)),
                    device_limit: limit,
                    user_agent: None,
                    now: at(minutes),
                    audit: &audit,
                };
                store.complete_login_process(&completion).await.unwrap().expect("completed");
            }
        };
        let trusted = || {
            let store = Arc::clone(&store);
            async move {
                let devices = store.trusted_devices(ivan.id, t0()).await.unwrap();
                devices.into_iter().map(|d| d.device_id).collect::<Vec<_>>()
            }
        };
        for (device, minutes) in [("d1", 0), ("d2", 1), ("d3", 2)] {
            trust(device, minutes, 3).await;
        }
        assert_eq!(trusted().await, ["d3", "d2", "d1"], "{backend:?}: at the limit, all kept");
        trust("d4", 3, 3).await;
        assert_eq!(trusted().await, ["d4", "d3", "d2"], "{backend:?}: d1 forgotten");
        trust("d2", 4, 3).await;
        assert_eq!(trusted().await, ["d2", "d4", "d3"], "{backend:?}: trusted again, nothing forgotten");
        trust("d5", 5, 2).await;
        assert_eq!(trusted().await, ["d5", "d2"], "{backend:?}: a lower limit forgets as many as it must");
        trust("d6", 6, 1).await;
        assert_eq!(trusted().await, ["d6"], "{backend:?}: at a limit of one, only the one trusted");
        assert!(store.is_device_trusted(anna.id, "anna-1", t0()).await.unwrap(), "{backend:?}: another user's kept");
    }
}

/// A device whose trust ran out is removed; one trusted since the cut-off,
/// or another user's trusted later, stays.
#[tokio::test]
async fn devices_whose_trust_ran_out_are_removed_and_the_others_kept() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let (ivan, anna) = ivan_and_anna(store.as_ref()).await;
        let days = |n| t0() + Duration::days(n);
        store.trust_device(ivan.id, "old", days(0)).await.unwrap();
        store.trust_device(ivan.id, "at-the-cut", days(10)).await.unwrap();
        store.trust_device(anna.id, "fresh", days(20)).await.unwrap();
        // "renewed" was trusted long ago and again since: its trust is the later one.
        store.trust_device(anna.id, "renewed", days(0)).await.unwrap();
        store.trust_device(anna.id, "renewed", days(15)).await.unwrap();

        assert_eq!(store.remove_expired_devices(days(10)).await.unwrap(), 1, "{backend:?}");
        let ids = |devices: Vec<portico_model::session::TrustedDevice>| {
            devices.into_iter().map(|d| d.device_id).collect::<Vec<_>>()
        };
        assert_eq!(ids(store.trusted_devices(ivan.id, t0()).await.unwrap()), ["at-the-cut"], "{backend:?}");
        assert_eq!(ids(store.trusted_devices(anna.id, t0()).await.unwrap()), ["fresh", "renewed"], "{backend:?}");
        assert_eq!(store.remove_expired_devices(days(10)).await.unwrap(), 0, "{backend:?}: nothing twice");
    }
}
