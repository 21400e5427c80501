//! Merchants, the events other bank systems submit, and their deliveries.
//!
//! Every write is one transaction on the writer thread, so a batch is a
//! loop over one prepared statement per kind of row. A claim of due
//! deliveries is one statement: SQLite's single writer already keeps two
//! claims from taking the same row. Look-ups by many keys bind one JSON
//! array (`json_each`), so each statement has one text whatever the count.

use async_trait::async_trait;
use portico_model::ids::DeliveryId;
use portico_model::notify::{
    Attempt, Delivery, DeliveryStatus, EventKind, Merchant, MerchantIds, NotificationSettings, Outcome, StoredEvent,
};
use portico_storage::{
    DeliveryClaim, FinishedAttempt, Intake, KeyPage, MAX_REMOVED_DELIVERIES, MerchantRepository,
    NotificationRepository, RemovedDeliveries,
};
use rusqlite::{Connection, Row, params};
use time::OffsetDateTime;

use crate::db::{Columns, Res, all, damaged, one, run, secs, secs_opt, to_json};
use crate::{Result, SqliteStore};

fn merchant_from(row: &Row<'_>) -> Res<Merchant> {
    Ok(Merchant {
        ids: MerchantIds {
            merchant_id: row.get("merchant_id")?,
            public_id: row.get("public_id")?,
            sbp_merchant_id: row.get("sbp_merchant_id")?,
        },
        key_hash: row.get("key_hash")?,
        key_sealed: row.get("key_sealed")?,
        settings: row.json_opt("settings")?,
        created_at: row.time("created_at")?,
    })
}

fn event_from(row: &Row<'_>) -> Res<StoredEvent> {
    let kind: String = row.get("kind")?;
    Ok(StoredEvent {
        event_id: row.get("event_id")?,
        merchant_id: row.get("merchant_id")?,
        kind: EventKind::parse(&kind).ok_or_else(|| damaged(&format!("event kind {kind:?}")))?,
        payload: row.json("payload")?,
        received_at: row.time("received_at")?,
        trace_parent: row.get("trace_parent")?,
    })
}

fn delivery_from(row: &Row<'_>) -> Res<Delivery> {
    let status: String = row.get("status")?;
    Ok(Delivery {
        id: row.uuid("id")?.into(),
        event_id: row.get("event_id")?,
        merchant_id: row.get("merchant_id")?,
        status: DeliveryStatus::parse(&status).ok_or_else(|| damaged(&format!("delivery status {status:?}")))?,
        attempts: u32::try_from(row.get::<_, i64>("attempts")?).unwrap_or(0),
        next_attempt_at: row.time("next_attempt_at")?,
        lease_until: row.time_opt("lease_until")?,
        created_at: row.time("created_at")?,
        finished_at: row.time_opt("finished_at")?,
    })
}

fn attempt_from(row: &Row<'_>) -> Res<Attempt> {
    let status: Option<i64> = row.get("status_code")?;
    Ok(Attempt {
        delivery_id: row.uuid("delivery_id")?.into(),
        attempt: u32::try_from(row.get::<_, i64>("attempt")?).unwrap_or(0),
        at: row.time("at")?,
        status_code: status.and_then(|s| u16::try_from(s).ok()),
        error: row.get("error")?,
        response_excerpt: row.get("response")?,
        duration_ms: row.get("duration_ms")?,
    })
}

fn insert_delivery(conn: &Connection, d: &Delivery) -> Res<()> {
    run(
        conn,
        "INSERT INTO notification_deliveries (id, event_id, merchant_id, status, attempts, next_attempt_at, \
         lease_until, created_at, finished_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            d.id.to_string(),
            d.event_id,
            d.merchant_id,
            d.status.as_str(),
            d.attempts,
            secs(d.next_attempt_at),
            secs_opt(d.lease_until),
            secs(d.created_at),
            secs_opt(d.finished_at),
        ],
    )?;
    Ok(())
}

/// A finished attempt's delivery: its status, when it is due next, and
/// when it finished.
fn finished_columns(done: &FinishedAttempt) -> (DeliveryStatus, OffsetDateTime, Option<OffsetDateTime>) {
    let at = done.attempt.at;
    match done.outcome {
        Outcome::Delivered => (DeliveryStatus::Delivered, at, Some(at)),
        Outcome::RetryAt(next) => (DeliveryStatus::Pending, next, None),
        Outcome::Failed => (DeliveryStatus::Failed, at, Some(at)),
    }
}

/// Keys as the JSON array `json_each` reads.
fn key_list(keys: &[&str]) -> Res<String> {
    to_json(&keys)
}

impl SqliteStore {
    async fn merchant_where(&self, condition: &'static str, value: &str) -> Result<Option<Merchant>> {
        let value = value.to_owned();
        self.db
            .read(move |c| one(c, &format!("SELECT * FROM merchants WHERE {condition}"), [value], merchant_from))
            .await
    }
}

#[async_trait]
impl MerchantRepository for SqliteStore {
    async fn create_merchant(&self, merchant: &Merchant) -> Result<()> {
        let m = merchant.clone();
        self.db
            .write("merchant id, public id or key", move |tx| {
                let settings = m.settings.as_ref().map(to_json).transpose()?;
                run(
                    tx,
                    "INSERT INTO merchants (merchant_id, public_id, sbp_merchant_id, key_hash, key_sealed, settings, \
                     created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![
                        m.ids.merchant_id,
                        m.ids.public_id,
                        m.ids.sbp_merchant_id,
                        m.key_hash,
                        m.key_sealed,
                        settings,
                        secs(m.created_at)
                    ],
                )?;
                Ok(())
            })
            .await
    }

    async fn find_merchant(&self, merchant_id: &str) -> Result<Option<Merchant>> {
        self.merchant_where("merchant_id = ?1", merchant_id).await
    }

    async fn find_merchants(&self, merchant_ids: &[&str]) -> Result<Vec<Merchant>> {
        let keys = key_list(merchant_ids).map_err(|e| e.storage("merchant"))?;
        self.db
            .read(move |c| {
                let sql = "SELECT * FROM merchants WHERE merchant_id IN (SELECT value FROM json_each(?1))";
                all(c, sql, [keys], merchant_from)
            })
            .await
    }

    async fn find_merchant_by_key(&self, key_hash: &str) -> Result<Option<Merchant>> {
        self.merchant_where("key_hash = ?1", key_hash).await
    }

    async fn list_merchants(&self, page: KeyPage<'_>) -> Result<Vec<Merchant>> {
        let (after, limit) = (page.after.map(str::to_owned), page.sql_limit());
        let sql = "SELECT * FROM merchants WHERE ?1 IS NULL OR merchant_id > ?1 ORDER BY merchant_id LIMIT ?2";
        self.db.read(move |c| all(c, sql, params![after, limit], merchant_from)).await
    }

    async fn set_merchant_key(&self, merchant_id: &str, key_hash: &str, key_sealed: &[u8]) -> Result<bool> {
        let (merchant_id, key_hash, key_sealed) = (merchant_id.to_owned(), key_hash.to_owned(), key_sealed.to_vec());
        self.db
            .write("merchant key", move |tx| {
                let sql = "UPDATE merchants SET key_hash = ?2, key_sealed = ?3 WHERE merchant_id = ?1";
                Ok(run(tx, sql, params![merchant_id, key_hash, key_sealed])? == 1)
            })
            .await
    }

    async fn save_notification_settings(&self, merchant_id: &str, settings: &NotificationSettings) -> Result<bool> {
        let (merchant_id, settings) = (merchant_id.to_owned(), settings.clone());
        self.db
            .write("merchant", move |tx| {
                let sql = "UPDATE merchants SET settings = ?2 WHERE merchant_id = ?1";
                Ok(run(tx, sql, params![merchant_id, to_json(&settings)?])? == 1)
            })
            .await
    }
}

#[async_trait]
impl NotificationRepository for SqliteStore {
    async fn record_events(&self, batch: &[(StoredEvent, Delivery)]) -> Result<Vec<Intake>> {
        let batch = batch.to_vec();
        self.db
            .write("delivery", move |tx| {
                // An event already there (before, or earlier in the batch)
                // is compared with the one submitted again.
                let mut results = Vec::with_capacity(batch.len());
                for (event, delivery) in &batch {
                    let inserted = run(
                        tx,
                        "INSERT INTO notification_events (event_id, merchant_id, kind, payload, received_at, \
                         trace_parent) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (event_id) DO NOTHING",
                        params![
                            event.event_id,
                            event.merchant_id,
                            event.kind.as_str(),
                            to_json(&event.payload)?,
                            secs(event.received_at),
                            event.trace_parent
                        ],
                    )?;
                    if inserted == 1 {
                        insert_delivery(tx, delivery)?;
                        results.push(Intake::Accepted);
                        continue;
                    }
                    let sql = "SELECT * FROM notification_events WHERE event_id = ?1";
                    let existing = one(tx, sql, [&event.event_id], event_from)?
                        .ok_or_else(|| damaged(&format!("event {:?} vanished", event.event_id)))?;
                    let same = existing.merchant_id == event.merchant_id
                        && existing.kind == event.kind
                        && existing.payload == event.payload;
                    results.push(if same { Intake::Duplicate } else { Intake::Reused });
                }
                Ok(results)
            })
            .await
    }

    async fn find_event(&self, event_id: &str) -> Result<Option<StoredEvent>> {
        let event_id = event_id.to_owned();
        self.db
            .read(move |c| one(c, "SELECT * FROM notification_events WHERE event_id = ?1", [event_id], event_from))
            .await
    }

    async fn find_events(&self, event_ids: &[&str]) -> Result<Vec<StoredEvent>> {
        let keys = key_list(event_ids).map_err(|e| e.storage("event"))?;
        self.db
            .read(move |c| {
                let sql = "SELECT * FROM notification_events WHERE event_id IN (SELECT value FROM json_each(?1))";
                all(c, sql, [keys], event_from)
            })
            .await
    }

    async fn deliveries_of(&self, event_id: &str) -> Result<Vec<Delivery>> {
        let event_id = event_id.to_owned();
        self.db
            .read(move |c| {
                let sql = "SELECT * FROM notification_deliveries WHERE event_id = ?1 ORDER BY created_at, id";
                all(c, sql, [event_id], delivery_from)
            })
            .await
    }

    async fn claim_due_deliveries(&self, claim: &DeliveryClaim<'_>) -> Result<Vec<Delivery>> {
        let skipped: Vec<&str> = claim.skip_merchants.iter().map(String::as_str).collect();
        let skipped = key_list(&skipped).map_err(|e| e.storage("delivery"))?;
        let (now, lease_until, limit, per_merchant) = (claim.now, claim.lease_until, claim.limit, claim.per_merchant);
        self.db
            .write("delivery", move |tx| {
                // The oldest `limit` due rows (index order) are the
                // candidates; at most `per_merchant` of each merchant are
                // taken.
                let mut claimed = all(
                    tx,
                    "WITH candidates AS (SELECT id, merchant_id, next_attempt_at FROM notification_deliveries \
                     WHERE status = 'PENDING' AND next_attempt_at <= ?2 \
                     AND merchant_id NOT IN (SELECT value FROM json_each(?5)) ORDER BY next_attempt_at LIMIT ?3), \
                     ranked AS (SELECT id, next_attempt_at, ROW_NUMBER() OVER \
                     (PARTITION BY merchant_id ORDER BY next_attempt_at) AS n FROM candidates) \
                     UPDATE notification_deliveries SET lease_until = ?1, next_attempt_at = ?1 WHERE id IN \
                     (SELECT id FROM ranked WHERE n <= ?4 ORDER BY next_attempt_at LIMIT ?3) RETURNING *",
                    params![secs(lease_until), secs(now), limit, per_merchant.max(1), skipped],
                    delivery_from,
                )?;
                claimed.sort_by_key(|d| (d.created_at, d.id));
                Ok(claimed)
            })
            .await
    }

    async fn finish_attempts(&self, finished: &[FinishedAttempt]) -> Result<()> {
        if finished.is_empty() {
            return Ok(());
        }
        let finished = finished.to_vec();
        self.db
            .write("delivery attempt", move |tx| {
                // The attempts go in whatever the lease; the deliveries
                // change only under theirs.
                for done in &finished {
                    let a = &done.attempt;
                    let delivery_id = a.delivery_id.to_string();
                    run(
                        tx,
                        "INSERT INTO delivery_attempts (delivery_id, attempt, at, status_code, error, response, \
                         duration_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
                         ON CONFLICT (delivery_id, attempt) DO NOTHING",
                        params![
                            delivery_id,
                            a.attempt,
                            secs(a.at),
                            a.status_code,
                            a.error,
                            a.response_excerpt,
                            a.duration_ms
                        ],
                    )?;
                    let (status, next, finished_at) = finished_columns(done);
                    run(
                        tx,
                        "UPDATE notification_deliveries SET status = ?2, attempts = ?3, next_attempt_at = ?4, \
                         lease_until = NULL, finished_at = ?5 WHERE id = ?1 AND lease_until = ?6",
                        params![
                            delivery_id,
                            status.as_str(),
                            a.attempt,
                            secs(next),
                            secs_opt(finished_at),
                            secs(done.lease_until)
                        ],
                    )?;
                }
                Ok(())
            })
            .await
    }

    async fn release_deliveries(&self, leases: &[(DeliveryId, OffsetDateTime)], now: OffsetDateTime) -> Result<()> {
        if leases.is_empty() {
            return Ok(());
        }
        let leases = leases.to_vec();
        self.db
            .write("delivery", move |tx| {
                for (id, lease_until) in &leases {
                    run(
                        tx,
                        "UPDATE notification_deliveries SET lease_until = NULL, next_attempt_at = ?3 \
                         WHERE id = ?1 AND lease_until = ?2 AND status = 'PENDING'",
                        params![id.to_string(), secs(*lease_until), secs(now)],
                    )?;
                }
                Ok(())
            })
            .await
    }

    async fn list_deliveries(
        &self,
        merchant_id: &str,
        status: Option<DeliveryStatus>,
        offset: u32,
        limit: u32,
    ) -> Result<(Vec<Delivery>, u64)> {
        let merchant_id = merchant_id.to_owned();
        let status = status.map(DeliveryStatus::as_str);
        self.db
            .read(move |c| {
                let snapshot = c.unchecked_transaction()?;
                let filter = "merchant_id = ?1 AND (?2 IS NULL OR status = ?2)";
                let total: i64 = one(
                    &snapshot,
                    &format!("SELECT COUNT(*) AS total FROM notification_deliveries WHERE {filter}"),
                    params![merchant_id, status],
                    |row| Ok(row.get("total")?),
                )?
                .unwrap_or(0);
                let page = all(
                    &snapshot,
                    &format!(
                        "SELECT * FROM notification_deliveries WHERE {filter} \
                         ORDER BY created_at DESC, id DESC LIMIT ?3 OFFSET ?4"
                    ),
                    params![merchant_id, status, limit, offset],
                    delivery_from,
                )?;
                snapshot.finish()?;
                Ok((page, u64::try_from(total).unwrap_or(0)))
            })
            .await
    }

    async fn find_delivery(&self, id: DeliveryId) -> Result<Option<Delivery>> {
        self.db
            .read(move |c| {
                one(c, "SELECT * FROM notification_deliveries WHERE id = ?1", [id.to_string()], delivery_from)
            })
            .await
    }

    async fn create_delivery(&self, delivery: &Delivery) -> Result<()> {
        let delivery = delivery.clone();
        self.db.write("delivery", move |tx| insert_delivery(tx, &delivery)).await
    }

    async fn attempts_of(&self, delivery_id: DeliveryId) -> Result<Vec<Attempt>> {
        self.db
            .read(move |c| {
                let sql = "SELECT * FROM delivery_attempts WHERE delivery_id = ?1 ORDER BY attempt";
                all(c, sql, [delivery_id.to_string()], attempt_from)
            })
            .await
    }

    async fn remove_finished_deliveries(&self, before: OffsetDateTime, limit: u32) -> Result<RemovedDeliveries> {
        let limit = limit.min(MAX_REMOVED_DELIVERIES);
        self.db
            .write("delivery", move |tx| {
                // A finished delivery's `next_attempt_at` is when it
                // finished, so the due index finds them.
                let found = all(
                    tx,
                    "SELECT id, event_id FROM notification_deliveries \
                     WHERE status IN ('DELIVERED', 'FAILED') AND next_attempt_at < ?1 AND finished_at < ?1 LIMIT ?2",
                    params![secs(before), limit],
                    |row| Ok((row.get::<_, String>("id")?, row.get::<_, String>("event_id")?)),
                )?;
                let mut removed = RemovedDeliveries::default();
                let mut events = Vec::new();
                for (id, event_id) in found {
                    removed.attempts += run(tx, "DELETE FROM delivery_attempts WHERE delivery_id = ?1", [&id])? as u64;
                    removed.deliveries += run(tx, "DELETE FROM notification_deliveries WHERE id = ?1", [&id])? as u64;
                    events.push(event_id);
                }
                events.sort_unstable();
                events.dedup();
                // An event goes with its last delivery (a resend may still
                // be pending, or finished later).
                for event_id in events {
                    removed.events += run(
                        tx,
                        "DELETE FROM notification_events WHERE event_id = ?1 AND NOT EXISTS \
                         (SELECT 1 FROM notification_deliveries d WHERE d.event_id = ?1)",
                        [event_id],
                    )? as u64;
                }
                Ok(removed)
            })
            .await
    }
}
