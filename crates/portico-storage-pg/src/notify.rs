//! Merchants, the events other bank systems submitted, and their
//! deliveries. Many-row statements take one array parameter per column
//! (`UNNEST`): one statement text whatever the batch size, so it stays
//! prepared and settles on a generic plan; claims lock their rows with
//! `FOR UPDATE SKIP LOCKED`, so that concurrent claims pass each other by.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use portico_model::ids::DeliveryId;
use portico_model::notify::{
    Attempt, Delivery, DeliveryStatus, EventKind, Merchant, MerchantIds, NotificationSettings, Outcome, StoredEvent,
};
use portico_storage::{
    DeliveryClaim, FinishedAttempt, Intake, KeyPage, MAX_REMOVED_DELIVERIES, MerchantRepository,
    NotificationRepository, RemovedDeliveries,
};
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::error::{damaged, storage_error};
use crate::{PgStore, Result, at, at_opt, count, get, int};

const WHAT: &str = "notification";

fn merchant_from(row: &PgRow) -> Result<Merchant> {
    Ok(Merchant {
        ids: MerchantIds {
            merchant_id: get(row, "merchant_id")?,
            public_id: get(row, "public_id")?,
            sbp_merchant_id: get(row, "sbp_merchant_id")?,
        },
        key_hash: get(row, "key_hash")?,
        key_sealed: get(row, "key_sealed")?,
        settings: get::<Option<Json<NotificationSettings>>>(row, "settings")?.map(|json| json.0),
        created_at: get(row, "created_at")?,
    })
}

fn event_from(row: &PgRow) -> Result<StoredEvent> {
    let kind: String = get(row, "kind")?;
    Ok(StoredEvent {
        event_id: get(row, "event_id")?,
        merchant_id: get(row, "merchant_id")?,
        kind: EventKind::parse(&kind).ok_or_else(|| damaged("event kind", &kind))?,
        payload: get::<Json<serde_json::Value>>(row, "payload")?.0,
        received_at: get(row, "received_at")?,
        trace_parent: get(row, "trace_parent")?,
    })
}

fn delivery_from(row: &PgRow) -> Result<Delivery> {
    let status: String = get(row, "status")?;
    Ok(Delivery {
        id: get::<Uuid>(row, "id")?.into(),
        event_id: get(row, "event_id")?,
        merchant_id: get(row, "merchant_id")?,
        status: DeliveryStatus::parse(&status).ok_or_else(|| damaged("delivery status", &status))?,
        attempts: count(row, "attempts")?,
        next_attempt_at: get(row, "next_attempt_at")?,
        lease_until: get(row, "lease_until")?,
        created_at: get(row, "created_at")?,
        finished_at: get(row, "finished_at")?,
    })
}

fn attempt_from(row: &PgRow) -> Result<Attempt> {
    let status: Option<i32> = get(row, "status_code")?;
    Ok(Attempt {
        delivery_id: get::<Uuid>(row, "delivery_id")?.into(),
        attempt: count(row, "attempt")?,
        at: get(row, "at")?,
        status_code: status.and_then(|s| u16::try_from(s).ok()),
        error: get(row, "error")?,
        response_excerpt: get(row, "response")?,
        duration_ms: get(row, "duration_ms")?,
    })
}

/// A finished attempt's delivery: its status, when it is due next, and when
/// it finished.
fn finished_columns(done: &FinishedAttempt) -> (DeliveryStatus, OffsetDateTime, Option<OffsetDateTime>) {
    let at = done.attempt.at;
    match done.outcome {
        Outcome::Delivered => (DeliveryStatus::Delivered, at, Some(at)),
        Outcome::RetryAt(next) => (DeliveryStatus::Pending, next, None),
        Outcome::Failed => (DeliveryStatus::Failed, at, Some(at)),
    }
}

/// One array parameter: `value` of each row.
fn column<'r, R, T>(rows: &'r [R], value: impl Fn(&'r R) -> T) -> Vec<T> {
    rows.iter().map(value).collect()
}

impl PgStore {
    async fn merchant_where(&self, condition: &'static str, value: &str) -> Result<Option<Merchant>> {
        sqlx::query(&format!("SELECT * FROM merchants WHERE {condition}"))
            .bind(value)
            .fetch_optional(&mut *self.conn().await?)
            .await
            .map_err(storage_error(WHAT))?
            .as_ref()
            .map(merchant_from)
            .transpose()
    }

    /// Inserts the events of `rows` (distinct ids) that are new, with their
    /// deliveries, in one statement; the ids of those inserted.
    async fn insert_fresh(&self, rows: &[&(StoredEvent, Delivery)]) -> Result<HashSet<String>> {
        let inserted = sqlx::query(
            "WITH v AS (SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::timestamptz[], \
             $6::uuid[], $7::text[], $8::int4[], $9::timestamptz[], $10::timestamptz[], $11::timestamptz[], \
             $12::timestamptz[], $13::text[]) AS v (event_id, merchant_id, kind, payload, received_at, id, status, \
             attempts, next_attempt_at, lease_until, created_at, finished_at, trace_parent)), \
             ins AS (INSERT INTO notification_events (event_id, merchant_id, kind, payload, received_at, trace_parent) \
             SELECT event_id, merchant_id, kind, payload, received_at, trace_parent FROM v \
             ON CONFLICT (event_id) DO NOTHING RETURNING event_id), \
             del AS (INSERT INTO notification_deliveries (id, event_id, merchant_id, status, attempts, \
             next_attempt_at, lease_until, created_at, finished_at) \
             SELECT v.id, v.event_id, v.merchant_id, v.status, v.attempts, v.next_attempt_at, v.lease_until, \
             v.created_at, v.finished_at FROM v JOIN ins ON ins.event_id = v.event_id) \
             SELECT event_id FROM ins",
        )
        .bind(column(rows, |(e, _)| e.event_id.as_str()))
        .bind(column(rows, |(e, _)| e.merchant_id.as_str()))
        .bind(column(rows, |(e, _)| e.kind.as_str()))
        .bind(column(rows, |(e, _)| Json(&e.payload)))
        .bind(column(rows, |(e, _)| at(e.received_at)))
        .bind(column(rows, |(_, d)| d.id.as_uuid()))
        .bind(column(rows, |(_, d)| d.status.as_str()))
        .bind(column(rows, |(_, d)| int(d.attempts)))
        .bind(column(rows, |(_, d)| at(d.next_attempt_at)))
        .bind(column(rows, |(_, d)| at_opt(d.lease_until)))
        .bind(column(rows, |(_, d)| at(d.created_at)))
        .bind(column(rows, |(_, d)| at_opt(d.finished_at)))
        .bind(column(rows, |(e, _)| e.trace_parent.as_deref()))
        .fetch_all(&mut *self.conn().await?)
        .await
        .map_err(storage_error(WHAT))?;
        inserted.iter().map(|row| get(row, "event_id")).collect()
    }
}

#[async_trait]
impl MerchantRepository for PgStore {
    async fn create_merchant(&self, merchant: &Merchant) -> Result<()> {
        sqlx::query(
            "INSERT INTO merchants (merchant_id, public_id, sbp_merchant_id, key_hash, key_sealed, settings, \
             created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&merchant.ids.merchant_id)
        .bind(&merchant.ids.public_id)
        .bind(&merchant.ids.sbp_merchant_id)
        .bind(&merchant.key_hash)
        .bind(&merchant.key_sealed)
        .bind(merchant.settings.as_ref().map(Json))
        .bind(at(merchant.created_at))
        .execute(&mut *self.conn().await?)
        .await
        .map_err(storage_error("merchant id, public id or key"))?;
        Ok(())
    }

    async fn find_merchant(&self, merchant_id: &str) -> Result<Option<Merchant>> {
        self.merchant_where("merchant_id = $1", merchant_id).await
    }

    async fn find_merchants(&self, merchant_ids: &[&str]) -> Result<Vec<Merchant>> {
        sqlx::query("SELECT * FROM merchants WHERE merchant_id = ANY($1::text[])")
            .bind(merchant_ids)
            .fetch_all(&mut *self.conn().await?)
            .await
            .map_err(storage_error(WHAT))?
            .iter()
            .map(merchant_from)
            .collect()
    }

    async fn find_merchant_by_key(&self, key_hash: &str) -> Result<Option<Merchant>> {
        self.merchant_where("key_hash = $1", key_hash).await
    }

    async fn list_merchants(&self, page: KeyPage<'_>) -> Result<Vec<Merchant>> {
        sqlx::query(
            r#"SELECT * FROM merchants WHERE $1::text IS NULL OR merchant_id > $1 ORDER BY merchant_id LIMIT $2"#,
        )
        .bind(page.after)
        .bind(page.sql_limit())
        .fetch_all(&mut *self.conn().await?)
        .await
        .map_err(storage_error(WHAT))?
        .iter()
        .map(merchant_from)
        .collect()
    }

    async fn set_merchant_key(&self, merchant_id: &str, key_hash: &str, key_sealed: &[u8]) -> Result<bool> {
        let done = sqlx::query("UPDATE merchants SET key_hash = $2, key_sealed = $3 WHERE merchant_id = $1")
            .bind(merchant_id)
            .bind(key_hash)
            .bind(key_sealed)
            .execute(&mut *self.conn().await?)
            .await
            .map_err(storage_error("merchant key"))?;
        Ok(done.rows_affected() == 1)
    }

    async fn save_notification_settings(&self, merchant_id: &str, settings: &NotificationSettings) -> Result<bool> {
        let done = sqlx::query("UPDATE merchants SET settings = $2 WHERE merchant_id = $1")
            .bind(merchant_id)
            .bind(Json(settings))
            .execute(&mut *self.conn().await?)
            .await
            .map_err(storage_error(WHAT))?;
        Ok(done.rows_affected() == 1)
    }
}

#[async_trait]
impl NotificationRepository for PgStore {
    async fn record_events(&self, batch: &[(StoredEvent, Delivery)]) -> Result<Vec<Intake>> {
        // The first of each id in the batch goes in, with its delivery, in
        // one statement; what the insert passed over was there before (or
        // earlier in the batch) and is compared.
        let mut first_index: HashMap<&str, usize> = HashMap::new();
        let mut fresh: Vec<&(StoredEvent, Delivery)> = Vec::new();
        for (i, pair) in batch.iter().enumerate() {
            if !first_index.contains_key(pair.0.event_id.as_str()) {
                first_index.insert(&pair.0.event_id, i);
                fresh.push(pair);
            }
        }
        let inserted = if fresh.is_empty() { HashSet::new() } else { self.insert_fresh(&fresh).await? };
        let mut results = Vec::with_capacity(batch.len());
        for (i, (event, _)) in batch.iter().enumerate() {
            if first_index.get(event.event_id.as_str()) == Some(&i) && inserted.contains(&event.event_id) {
                results.push(Intake::Accepted);
                continue;
            }
            let existing = sqlx::query("SELECT * FROM notification_events WHERE event_id = $1")
                .bind(&event.event_id)
                .fetch_one(&mut *self.conn().await?)
                .await
                .map_err(storage_error(WHAT))?;
            let existing = event_from(&existing)?;
            let same = existing.merchant_id == event.merchant_id
                && existing.kind == event.kind
                && existing.payload == event.payload;
            results.push(if same { Intake::Duplicate } else { Intake::Reused });
        }
        Ok(results)
    }

    async fn find_event(&self, event_id: &str) -> Result<Option<StoredEvent>> {
        sqlx::query("SELECT * FROM notification_events WHERE event_id = $1")
            .bind(event_id)
            .fetch_optional(&mut *self.conn().await?)
            .await
            .map_err(storage_error(WHAT))?
            .as_ref()
            .map(event_from)
            .transpose()
    }

    async fn find_events(&self, event_ids: &[&str]) -> Result<Vec<StoredEvent>> {
        sqlx::query("SELECT * FROM notification_events WHERE event_id = ANY($1::text[])")
            .bind(event_ids)
            .fetch_all(&mut *self.conn().await?)
            .await
            .map_err(storage_error(WHAT))?
            .iter()
            .map(event_from)
            .collect()
    }

    async fn deliveries_of(&self, event_id: &str) -> Result<Vec<Delivery>> {
        sqlx::query("SELECT * FROM notification_deliveries WHERE event_id = $1 ORDER BY created_at, id")
            .bind(event_id)
            .fetch_all(&mut *self.conn().await?)
            .await
            .map_err(storage_error(WHAT))?
            .iter()
            .map(delivery_from)
            .collect()
    }

    async fn claim_due_deliveries(&self, claim: &DeliveryClaim<'_>) -> Result<Vec<Delivery>> {
        // The oldest `limit` due rows (index order) that no concurrent claim
        // holds are the candidates, locked; at most `per_merchant` of each
        // merchant are taken.
        let mut claimed = sqlx::query(
            "WITH candidates AS (SELECT id, merchant_id, next_attempt_at FROM notification_deliveries \
             WHERE status = 'PENDING' AND next_attempt_at <= $2 AND NOT (merchant_id = ANY($5::text[])) \
             ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED), \
             ranked AS (SELECT id, next_attempt_at, \
             ROW_NUMBER() OVER (PARTITION BY merchant_id ORDER BY next_attempt_at) AS n FROM candidates) \
             UPDATE notification_deliveries SET lease_until = $1, next_attempt_at = $1 \
             WHERE id IN (SELECT id FROM ranked WHERE n <= $4 ORDER BY next_attempt_at LIMIT $3) \
             AND status = 'PENDING' AND next_attempt_at <= $2 RETURNING *",
        )
        .bind(at(claim.lease_until))
        .bind(at(claim.now))
        .bind(i64::from(claim.limit))
        .bind(i64::from(claim.per_merchant.max(1)))
        .bind(claim.skip_merchants)
        .fetch_all(&mut *self.conn().await?)
        .await
        .map_err(storage_error(WHAT))?
        .iter()
        .map(delivery_from)
        .collect::<Result<Vec<_>>>()?;
        claimed.sort_by_key(|d| (d.created_at, d.id));
        Ok(claimed)
    }

    async fn finish_attempts(&self, finished: &[FinishedAttempt]) -> Result<()> {
        if finished.is_empty() {
            return Ok(());
        }
        // The attempts go in whatever the lease; the deliveries change only
        // under theirs. One statement: one implicit transaction.
        sqlx::query(
            "WITH attempts AS (INSERT INTO delivery_attempts (delivery_id, attempt, at, status_code, error, \
             response, duration_ms) \
             SELECT * FROM UNNEST($1::uuid[], $2::int4[], $3::timestamptz[], $4::int4[], $5::text[], $6::text[], \
             $7::int8[]) ON CONFLICT (delivery_id, attempt) DO NOTHING) \
             UPDATE notification_deliveries SET status = v.status, attempts = v.attempt, \
             next_attempt_at = v.next_attempt_at, lease_until = NULL, finished_at = v.finished_at \
             FROM UNNEST($1::uuid[], $8::text[], $2::int4[], $9::timestamptz[], $10::timestamptz[], \
             $11::timestamptz[]) AS v (id, status, attempt, next_attempt_at, finished_at, lease_until) \
             WHERE notification_deliveries.id = v.id AND notification_deliveries.lease_until = v.lease_until",
        )
        .bind(column(finished, |done| done.attempt.delivery_id.as_uuid()))
        .bind(column(finished, |done| int(done.attempt.attempt)))
        .bind(column(finished, |done| at(done.attempt.at)))
        .bind(column(finished, |done| done.attempt.status_code.map(i32::from)))
        .bind(column(finished, |done| done.attempt.error.as_deref()))
        .bind(column(finished, |done| done.attempt.response_excerpt.as_deref()))
        .bind(column(finished, |done| done.attempt.duration_ms))
        .bind(column(finished, |done| finished_columns(done).0.as_str()))
        .bind(column(finished, |done| at(finished_columns(done).1)))
        .bind(column(finished, |done| at_opt(finished_columns(done).2)))
        .bind(column(finished, |done| at(done.lease_until)))
        .execute(&mut *self.conn().await?)
        .await
        .map_err(storage_error("delivery attempt"))?;
        Ok(())
    }

    async fn release_deliveries(&self, leases: &[(DeliveryId, OffsetDateTime)], now: OffsetDateTime) -> Result<()> {
        if leases.is_empty() {
            return Ok(());
        }
        sqlx::query(
            "UPDATE notification_deliveries SET lease_until = NULL, next_attempt_at = $3 \
             FROM UNNEST($1::uuid[], $2::timestamptz[]) AS v (id, lease_until) \
             WHERE notification_deliveries.id = v.id AND notification_deliveries.lease_until = v.lease_until \
             AND status = 'PENDING'",
        )
        .bind(column(leases, |(id, _)| id.as_uuid()))
        .bind(column(leases, |(_, lease)| at(*lease)))
        .bind(at(now))
        .execute(&mut *self.conn().await?)
        .await
        .map_err(storage_error(WHAT))?;
        Ok(())
    }

    async fn list_deliveries(
        &self,
        merchant_id: &str,
        status: Option<DeliveryStatus>,
        offset: u32,
        limit: u32,
    ) -> Result<(Vec<Delivery>, u64)> {
        let status = status.map(DeliveryStatus::as_str);
        let total: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM notification_deliveries WHERE merchant_id = $1 AND ($2::text IS NULL OR status = $2)",
        )
        .bind(merchant_id)
        .bind(status)
        .fetch_one(&mut *self.conn().await?)
        .await
        .map_err(storage_error(WHAT))?;
        let page = sqlx::query(
            "SELECT * FROM notification_deliveries WHERE merchant_id = $1 AND ($2::text IS NULL OR status = $2) \
             ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4",
        )
        .bind(merchant_id)
        .bind(status)
        .bind(i64::from(limit))
        .bind(i64::from(offset))
        .fetch_all(&mut *self.conn().await?)
        .await
        .map_err(storage_error(WHAT))?
        .iter()
        .map(delivery_from)
        .collect::<Result<Vec<_>>>()?;
        Ok((page, u64::try_from(total).unwrap_or(0)))
    }

    async fn find_delivery(&self, id: DeliveryId) -> Result<Option<Delivery>> {
        sqlx::query("SELECT * FROM notification_deliveries WHERE id = $1")
            .bind(id.as_uuid())
            .fetch_optional(&mut *self.conn().await?)
            .await
            .map_err(storage_error(WHAT))?
            .as_ref()
            .map(delivery_from)
            .transpose()
    }

    async fn create_delivery(&self, delivery: &Delivery) -> Result<()> {
        sqlx::query(
            "INSERT INTO notification_deliveries (id, event_id, merchant_id, status, attempts, next_attempt_at, \
             lease_until, created_at, finished_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(delivery.id.as_uuid())
        .bind(&delivery.event_id)
        .bind(&delivery.merchant_id)
        .bind(delivery.status.as_str())
        .bind(int(delivery.attempts))
        .bind(at(delivery.next_attempt_at))
        .bind(at_opt(delivery.lease_until))
        .bind(at(delivery.created_at))
        .bind(at_opt(delivery.finished_at))
        .execute(&mut *self.conn().await?)
        .await
        .map_err(storage_error("delivery"))?;
        Ok(())
    }

    async fn attempts_of(&self, delivery_id: DeliveryId) -> Result<Vec<Attempt>> {
        sqlx::query("SELECT * FROM delivery_attempts WHERE delivery_id = $1 ORDER BY attempt")
            .bind(delivery_id.as_uuid())
            .fetch_all(&mut *self.conn().await?)
            .await
            .map_err(storage_error(WHAT))?
            .iter()
            .map(attempt_from)
            .collect()
    }

    async fn remove_finished_deliveries(&self, before: OffsetDateTime, limit: u32) -> Result<RemovedDeliveries> {
        // A finished delivery's `next_attempt_at` is when it finished, so the
        // due index finds them. Their attempts go with them (the foreign
        // key's cascade counts nothing, so they are deleted first); an event
        // goes with its last delivery (a resend may still be pending).
        let row = sqlx::query(
            "WITH gone AS (SELECT id, event_id FROM notification_deliveries \
             WHERE status IN ('DELIVERED', 'FAILED') AND next_attempt_at < $1 AND finished_at < $1 \
             LIMIT $2 FOR UPDATE SKIP LOCKED), \
             attempts AS (DELETE FROM delivery_attempts WHERE delivery_id IN (SELECT id FROM gone) RETURNING 1), \
             deliveries AS (DELETE FROM notification_deliveries WHERE id IN (SELECT id FROM gone) \
             RETURNING event_id), \
             events AS (DELETE FROM notification_events e WHERE e.event_id IN (SELECT event_id FROM deliveries) \
             AND NOT EXISTS (SELECT 1 FROM notification_deliveries d WHERE d.event_id = e.event_id \
             AND d.id NOT IN (SELECT id FROM gone)) RETURNING 1) \
             SELECT (SELECT count(*) FROM attempts) AS attempts, (SELECT count(*) FROM deliveries) AS deliveries, \
             (SELECT count(*) FROM events) AS events",
        )
        .bind(at(before))
        .bind(i64::from(limit.min(MAX_REMOVED_DELIVERIES)))
        .fetch_one(&mut *self.conn().await?)
        .await
        .map_err(storage_error(WHAT))?;
        let removed = |column: &str| -> Result<u64> { Ok(u64::try_from(get::<i64>(&row, column)?).unwrap_or(0)) };
        Ok(RemovedDeliveries {
            attempts: removed("attempts")?,
            deliveries: removed("deliveries")?,
            events: removed("events")?,
        })
    }
}
