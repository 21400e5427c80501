//! Merchants, notification events and their deliveries: claims, leases
//! and batches.

use super::*;
use portico_model::ids::DeliveryId;

#[tokio::test]
async fn merchants_and_events_are_stored_once_with_their_delivery() {
    use portico_model::notify::{
        Delivery, DeliveryStatus, EventKind, Merchant, MerchantIds, NotificationSettings, StoredEvent,
    };
    use portico_storage::Intake;
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let merchant = Merchant {
            ids: MerchantIds { merchant_id: "m-1".into(), public_id: "pub-1".into(), sbp_merchant_id: "MA01".into() },
            key_hash: "hash-1".into(),
            key_sealed: vec![1, 2, 3],
            settings: None,
            created_at: t0(),
        };
        store.create_merchant(&merchant).await.unwrap();
        assert!(matches!(store.create_merchant(&merchant).await, Err(StorageError::Conflict(_))), "{backend:?}");
        assert_eq!(store.find_merchant_by_key("hash-1").await.unwrap(), Some(merchant.clone()));
        let settings = NotificationSettings {
            callback_url: "https://shop.example/cb".into(),
            operation_types: Default::default(),
        };
        assert!(store.save_notification_settings("m-1", &settings).await.unwrap());
        assert!(!store.save_notification_settings("nobody", &settings).await.unwrap());
        assert!(store.set_merchant_key("m-1", "hash-2", &[9]).await.unwrap());
        let found = store.find_merchant("m-1").await.unwrap().unwrap();
        assert_eq!((found.settings, found.key_hash.as_str(), found.key_sealed), (Some(settings), "hash-2", vec![9]));
        assert_eq!(store.find_merchant_by_key("hash-1").await.unwrap(), None);
        let found: Vec<String> = store
            .find_merchants(&["nobody", "m-1", "m-1"])
            .await
            .unwrap()
            .into_iter()
            .map(|m| m.ids.merchant_id)
            .collect();
        assert_eq!(found, ["m-1"], "those that exist, each once");
        assert!(store.find_merchants(&[]).await.unwrap().is_empty());

        let event = StoredEvent {
            event_id: "ev-1".into(),
            merchant_id: "m-1".into(),
            kind: EventKind::Payment,
            payload: serde_json::json!({"amount": 100}),
            received_at: t0(),
            trace_parent: None,
        };
        let delivery = |id: u128| Delivery {
            id: delivery_id(id),
            event_id: "ev-1".into(),
            merchant_id: "m-1".into(),
            status: DeliveryStatus::Pending,
            attempts: 0,
            next_attempt_at: t0(),
            lease_until: None,
            created_at: t0(),
            finished_at: None,
        };
        assert_eq!(store.record_event(&event, &delivery(1)).await.unwrap(), Intake::Accepted);
        assert_eq!(store.record_event(&event, &delivery(2)).await.unwrap(), Intake::Duplicate);
        let other = StoredEvent { payload: serde_json::json!({"amount": 200}), ..event.clone() };
        assert!(matches!(store.record_event(&other, &delivery(3)).await, Err(StorageError::Conflict(_))));
        assert_eq!(store.find_event("ev-1").await.unwrap(), Some(event));
        assert_eq!(store.deliveries_of("ev-1").await.unwrap(), vec![delivery(1)], "one delivery, the first");
    }
}

/// A store holding merchant `m` and `count` events (`ev-1`, ...), each with
/// a pending delivery (ids 1, 2, ...) due at `due`, leased until `lease`.
async fn with_deliveries(
    backend: Backend,
    dir: &TempDir,
    count: u128,
    due: OffsetDateTime,
    lease: Option<OffsetDateTime>,
) -> Arc<dyn Storage> {
    use portico_model::notify::{Delivery, DeliveryStatus, EventKind, Merchant, MerchantIds, StoredEvent};
    let store = store(backend, dir).await;
    let ids = MerchantIds { merchant_id: "m".into(), public_id: "p".into(), sbp_merchant_id: "s".into() };
    let merchant = Merchant { ids, key_hash: "h".into(), key_sealed: vec![0], settings: None, created_at: t0() };
    store.create_merchant(&merchant).await.unwrap();
    for i in 1..=count {
        let event = StoredEvent {
            event_id: format!("ev-{i}"),
            merchant_id: "m".into(),
            kind: EventKind::Payment,
            payload: serde_json::json!({}),
            received_at: t0(),
            trace_parent: None,
        };
        let delivery = Delivery {
            id: delivery_id(i),
            event_id: event.event_id.clone(),
            merchant_id: "m".into(),
            status: DeliveryStatus::Pending,
            attempts: 0,
            next_attempt_at: due,
            lease_until: lease,
            created_at: t0(),
            finished_at: None,
        };
        store.record_event(&event, &delivery).await.unwrap();
    }
    store
}

#[tokio::test]
async fn parallel_claims_never_take_the_same_delivery_and_leases_run_out() {
    for backend in backends() {
        let dir = TempDir::new();
        let store = with_deliveries(backend, &dir, 40, t0(), None).await;
        let mut claims = tokio::task::JoinSet::new();
        for _ in 0..6 {
            let store = Arc::clone(&store);
            claims.spawn(async move { store.claim_due_deliveries(&claim(t0(), 10, 10, &[])).await });
        }
        let mut taken: Vec<DeliveryId> =
            claims.join_all().await.into_iter().flat_map(|c| c.unwrap()).map(|d| d.id).collect();
        let total = taken.len();
        taken.sort();
        taken.dedup();
        assert_eq!(taken.len(), total, "{backend:?}: a delivery was claimed twice");
        assert_eq!(total, 40, "every due delivery was claimed once");
        assert!(store.claim_due_deliveries(&claim(t0(), 10, 10, &[])).await.unwrap().is_empty());
        // A worker that died: its lease runs out and the delivery is claimed again.
        let later = t0() + Duration::seconds(61);
        assert_eq!(store.claim_due_deliveries(&claim(later, 100, 100, &[])).await.unwrap().len(), 40);
    }
}

#[tokio::test]
async fn released_deliveries_are_due_at_once_and_only_under_their_own_lease() {
    for backend in backends() {
        let dir = TempDir::new();
        // Stored already leased, as the intake hands deliveries to its worker.
        let lease = t0() + Duration::seconds(60);
        let store = with_deliveries(backend, &dir, 3, lease, Some(lease)).await;
        assert!(store.claim_due_deliveries(&claim(t0(), 10, 10, &[])).await.unwrap().is_empty(), "{backend:?}");
        let stale = t0() + Duration::seconds(30);
        let released = [(delivery_id(1), lease), (delivery_id(2), stale), (delivery_id(3), lease)];
        store.release_deliveries(&released, t0()).await.unwrap();
        let claimed = store.claim_due_deliveries(&claim(t0(), 10, 10, &[])).await.unwrap();
        let mut claimed: Vec<DeliveryId> = claimed.iter().map(|d| d.id).collect();
        claimed.sort();
        assert_eq!(claimed, [delivery_id(1), delivery_id(3)], "only those released under their own lease");
        store.release_deliveries(&[], t0()).await.unwrap();
    }
}

#[tokio::test]
async fn finished_deliveries_go_in_batches_with_their_attempts_and_an_event_with_its_last_delivery() {
    use portico_model::notify::{Attempt, Delivery, DeliveryStatus, Outcome};
    use portico_storage::{FinishedAttempt, RemovedDeliveries};
    for backend in backends() {
        let dir = TempDir::new();
        let store = with_deliveries(backend, &dir, 4, t0(), None).await;
        let lease = t0() + Duration::seconds(60);
        assert_eq!(store.claim_due_deliveries(&claim(t0(), 10, 10, &[])).await.unwrap().len(), 4);
        let finish = |n: u128, outcome: Outcome, at: OffsetDateTime| FinishedAttempt {
            attempt: Attempt {
                delivery_id: delivery_id(n),
                attempt: 1,
                at,
                status_code: Some(200),
                error: None,
                response_excerpt: None,
                duration_ms: 1,
            },
            outcome,
            lease_until: lease,
        };
        let day = |n: i64| t0() + Duration::days(n);
        store
            .finish_attempts(&[
                finish(1, Outcome::Delivered, day(1)),
                finish(2, Outcome::Failed, day(1)),
                finish(3, Outcome::RetryAt(day(1)), day(1)),
                finish(4, Outcome::Delivered, day(10)),
            ])
            .await
            .unwrap();
        // A resend of ev-1 that finished later than its first delivery.
        let resend = Delivery {
            id: delivery_id(11),
            event_id: "ev-1".into(),
            merchant_id: "m".into(),
            status: DeliveryStatus::Delivered,
            attempts: 1,
            next_attempt_at: day(6),
            lease_until: None,
            created_at: day(5),
            finished_at: Some(day(6)),
        };
        store.create_delivery(&resend).await.unwrap();

        // Finished before day 5: deliveries 1 and 2, one per batch here.
        let first = store.remove_finished_deliveries(day(5), 1).await.unwrap();
        assert_eq!((first.deliveries, first.attempts), (1, 1), "{backend:?}");
        let second = store.remove_finished_deliveries(day(5), 500).await.unwrap();
        assert_eq!((second.deliveries, second.attempts), (1, 1));
        assert_eq!(first.events + second.events, 1, "ev-2 went; ev-1 keeps its resend");
        assert_eq!(store.remove_finished_deliveries(day(5), 500).await.unwrap(), RemovedDeliveries::default());
        for gone in [1, 2] {
            assert_eq!(store.find_delivery(delivery_id(gone)).await.unwrap(), None);
            assert!(store.attempts_of(delivery_id(gone)).await.unwrap().is_empty());
        }
        assert!(store.find_event("ev-2").await.unwrap().is_none());
        assert_eq!(store.deliveries_of("ev-1").await.unwrap(), vec![resend.clone()]);
        let pending = store.find_delivery(delivery_id(3)).await.unwrap().unwrap();
        assert_eq!(pending.status, DeliveryStatus::Pending, "a pending delivery stays, however old");

        // Later the resend goes, and its event with it; pending and recent stay.
        let removed = store.remove_finished_deliveries(day(30), 500).await.unwrap();
        assert_eq!((removed.deliveries, removed.attempts, removed.events), (2, 1, 2), "the resend and delivery 4");
        assert!(store.find_event("ev-1").await.unwrap().is_none());
        assert!(store.find_event("ev-3").await.unwrap().is_some());
        let (left, total) = store.list_deliveries("m", None, 0, 10).await.unwrap();
        assert_eq!((left.len(), total, left[0].id), (1, 1, delivery_id(3)));
    }
}

fn claim<'a>(
    now: time::OffsetDateTime,
    limit: u32,
    per_merchant: u32,
    skip_merchants: &'a [String],
) -> portico_storage::DeliveryClaim<'a> {
    portico_storage::DeliveryClaim {
        now,
        lease_until: now + Duration::seconds(60),
        limit,
        per_merchant,
        skip_merchants,
    }
}

/// `count` pending deliveries for merchant `m`, due at `due`.
async fn pending(store: &dyn Storage, m: &str, count: u128, due: time::OffsetDateTime) {
    use portico_model::notify::{Delivery, EventKind, Merchant, MerchantIds, StoredEvent};
    let ids = MerchantIds { merchant_id: m.into(), public_id: format!("p-{m}"), sbp_merchant_id: "s".into() };
    let merchant = Merchant { ids, key_hash: format!("h-{m}"), key_sealed: vec![0], settings: None, created_at: t0() };
    store.create_merchant(&merchant).await.unwrap();
    for i in 0..count {
        let event = StoredEvent {
            event_id: format!("{m}-ev-{i}"),
            merchant_id: m.into(),
            kind: EventKind::Payment,
            payload: serde_json::json!({}),
            received_at: t0(),
            trace_parent: None,
        };
        let delivery = Delivery::new(event.event_id.clone(), m.into(), due);
        store.record_event(&event, &delivery).await.unwrap();
    }
}

#[tokio::test]
async fn claims_take_a_bounded_share_of_each_merchant_and_pass_over_busy_ones() {
    use portico_model::notify::{Attempt, DeliveryStatus, Outcome};
    use portico_storage::FinishedAttempt;
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        // The slow merchant's backlog is older than the fast one's events.
        pending(store.as_ref(), "slow", 30, t0() - Duration::seconds(10)).await;
        pending(store.as_ref(), "fast", 3, t0()).await;
        let first = store.claim_due_deliveries(&claim(t0(), 20, 4, &[])).await.unwrap();
        assert_eq!(first.len(), 4, "{backend:?}: at most 4 of one merchant");
        assert!(first.iter().all(|d| d.merchant_id == "slow"));
        let lease = t0() + Duration::seconds(60);
        assert!(first.iter().all(|d| d.lease_until == Some(lease) && d.next_attempt_at == lease));

        // The worker is busy with "slow": passing it over reaches "fast".
        let busy = ["slow".to_owned()];
        let second = store.claim_due_deliveries(&claim(t0(), 20, 4, &busy)).await.unwrap();
        assert_eq!(second.iter().map(|d| d.merchant_id.as_str()).collect::<Vec<_>>(), ["fast"; 3], "{backend:?}");
        assert_eq!(store.claim_due_deliveries(&claim(t0(), 20, 4, &[])).await.unwrap().len(), 4, "slow's next four");

        // Finishing releases the lease; a finish under a lease that has since
        // moved on records the attempt but leaves the delivery alone.
        let attempt = |d: &portico_model::notify::Delivery| Attempt {
            delivery_id: d.id,
            attempt: 1,
            at: t0(),
            status_code: Some(200),
            error: None,
            response_excerpt: None,
            duration_ms: 3,
        };
        let finished = vec![
            FinishedAttempt { attempt: attempt(&first[0]), outcome: Outcome::Delivered, lease_until: lease },
            FinishedAttempt {
                attempt: attempt(&first[1]),
                outcome: Outcome::Delivered,
                lease_until: lease - Duration::seconds(1),
            },
        ];
        store.finish_attempts(&finished).await.unwrap();
        let done = store.find_delivery(first[0].id).await.unwrap().unwrap();
        assert_eq!((done.status, done.attempts, done.lease_until), (DeliveryStatus::Delivered, 1, None));
        let other = store.find_delivery(first[1].id).await.unwrap().unwrap();
        assert_eq!((other.status, other.lease_until), (DeliveryStatus::Pending, Some(lease)), "{backend:?}");
        assert_eq!(store.attempts_of(first[1].id).await.unwrap().len(), 1, "the attempt is still on record");
        store.finish_attempts(&finished).await.unwrap();
        assert_eq!(store.attempts_of(first[0].id).await.unwrap().len(), 1, "recording twice is harmless");
    }
}

#[tokio::test]
async fn a_batch_of_events_is_recorded_in_one_go_with_duplicates_told_apart() {
    use portico_model::notify::{Delivery, EventKind, StoredEvent};
    use portico_storage::Intake;
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        pending(store.as_ref(), "m", 0, t0()).await;
        let event = |id: &str, amount: i64| StoredEvent {
            event_id: id.into(),
            merchant_id: "m".into(),
            kind: EventKind::Payment,
            payload: serde_json::json!({ "amount": amount }),
            received_at: t0(),
            trace_parent: None,
        };
        let with_delivery = |e: StoredEvent| {
            let delivery = Delivery::new(e.event_id.clone(), "m".into(), t0());
            (e, delivery)
        };
        store.record_event(&event("old", 1), &Delivery::new("old".into(), "m".into(), t0())).await.unwrap();
        let batch = vec![
            with_delivery(event("a", 1)),
            with_delivery(event("b", 2)),
            with_delivery(event("a", 1)),
            with_delivery(event("b", 3)),
            with_delivery(event("old", 1)),
            with_delivery(event("old", 9)),
        ];
        let results = store.record_events(&batch).await.unwrap();
        use Intake::{Accepted, Duplicate, Reused};
        assert_eq!(results, [Accepted, Accepted, Duplicate, Reused, Duplicate, Reused], "{backend:?}");
        for id in ["a", "b", "old"] {
            assert_eq!(store.deliveries_of(id).await.unwrap().len(), 1, "{backend:?}: one delivery for {id}");
        }
        assert_eq!(store.find_event("b").await.unwrap().unwrap().payload["amount"], 2, "the first content stays");
        let mut found: Vec<String> =
            store.find_events(&["a", "old", "missing"]).await.unwrap().into_iter().map(|e| e.event_id).collect();
        found.sort();
        assert_eq!(found, ["a", "old"]);
    }
}

fn delivery_id(n: u128) -> DeliveryId {
    Uuid::from_u128(n).into()
}
