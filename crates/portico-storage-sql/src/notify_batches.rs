//! The many-row statements of the notification queue, in two ways: `values`
//! (portable SQL: a `VALUES` list with one placeholder per column of each
//! row, in chunks of 500 rows, inside a transaction) and `arrays`
//! (PostgreSQL: one array parameter per column, `UNNEST`ed, one statement).
//!
//! A `VALUES` list's text changes with its row count, so PostgreSQL would
//! parse and plan nearly every batch afresh (and sqlx prepare it afresh on
//! each connection); an array statement has one text whatever the batch
//! size, stays prepared and settles on a generic plan.
//!
//! The same goes for a condition on many keys (`IN` a list of placeholders,
//! or `= ANY` of one array): look-ups by many keys, and the merchants a
//! claim passes over.
//!
//! [`sql_notify_repositories!`](crate::sql_notify_repositories) expands one of
//! the two inside its own scope: the functions below use its row helpers
//! (`bind_event`, `bind_delivery`, `finished_columns`, `get`, `ROW`).

#[doc(hidden)]
#[macro_export]
macro_rules! __notify_batches {
    (values, $db:ty) => {
        /// Inserts the events of `rows` (distinct ids) that are new, with
        /// their deliveries; the ids of those inserted.
        async fn insert_fresh(
            pool: &sqlx::Pool<$db>,
            rows: &[&(StoredEvent, Delivery)],
        ) -> Result<std::collections::HashSet<String>> {
            let mut inserted = std::collections::HashSet::new();
            let mut tx = pool.begin().await.map_err(storage_error(ROW))?;
            for chunk in rows.chunks(500) {
                let sql = format!(
                    "INSERT INTO notification_events (event_id, merchant_id, kind, payload, received_at) \
                     VALUES {} ON CONFLICT (event_id) DO NOTHING RETURNING event_id",
                    $crate::values(chunk.len(), 5)
                );
                let mut query = sqlx::query(&sql);
                for (event, _) in chunk {
                    query = bind_event(query, event)?;
                }
                for row in query.fetch_all(&mut *tx).await.map_err(storage_error(ROW))? {
                    inserted.insert(get(&row, "event_id")?);
                }
            }
            let accepted: Vec<&Delivery> =
                rows.iter().filter(|(event, _)| inserted.contains(&event.event_id)).map(|(_, d)| d).collect();
            for chunk in accepted.chunks(500) {
                let sql = format!(
                    "INSERT INTO notification_deliveries (id, event_id, merchant_id, status, attempts, \
                     next_attempt_at, lease_until, created_at, finished_at) VALUES {}",
                    $crate::values(chunk.len(), 9)
                );
                let mut query = sqlx::query(&sql);
                for delivery in chunk {
                    query = bind_delivery(query, delivery);
                }
                query.execute(&mut *tx).await.map_err(storage_error("delivery"))?;
            }
            tx.commit().await.map_err(storage_error(ROW))?;
            Ok(inserted)
        }

        /// Records the attempts and updates their deliveries, each only
        /// under the lease it was made under.
        async fn write_finished(pool: &sqlx::Pool<$db>, finished: &[FinishedAttempt]) -> Result<()> {
            let mut tx = pool.begin().await.map_err(storage_error(ROW))?;
            for chunk in finished.chunks(500) {
                let rows = |width: usize| $crate::values(chunk.len(), width);
                let sql = format!(
                    "INSERT INTO delivery_attempts (delivery_id, attempt, at, status_code, error, response, \
                     duration_ms) VALUES {} ON CONFLICT (delivery_id, attempt) DO NOTHING",
                    rows(7)
                );
                let mut insert = sqlx::query(&sql);
                for done in chunk {
                    let attempt = &done.attempt;
                    insert = insert
                        .bind(attempt.delivery_id.to_string())
                        .bind(i32::try_from(attempt.attempt).unwrap_or(i32::MAX))
                        .bind(attempt.at.unix_timestamp())
                        .bind(attempt.status_code.map(i32::from))
                        .bind(&attempt.error)
                        .bind(&attempt.response_excerpt)
                        .bind(attempt.duration_ms);
                }
                insert.execute(&mut *tx).await.map_err(storage_error("delivery attempt"))?;
                let sql = format!(
                    "UPDATE notification_deliveries SET status = v.column2, attempts = v.column3, \
                     next_attempt_at = v.column4, lease_until = NULL, finished_at = v.column5 \
                     FROM (VALUES {}) AS v \
                     WHERE notification_deliveries.id = v.column1 AND notification_deliveries.lease_until = v.column6",
                    rows(6)
                );
                let mut update = sqlx::query(&sql);
                for done in chunk {
                    let (status, next, finished) = finished_columns(done);
                    update = update
                        .bind(done.attempt.delivery_id.to_string())
                        .bind(status.as_str())
                        .bind(i32::try_from(done.attempt.attempt).unwrap_or(i32::MAX))
                        .bind(next.unix_timestamp())
                        .bind(finished.map(OffsetDateTime::unix_timestamp))
                        .bind(done.lease_until.unix_timestamp());
                }
                update.execute(&mut *tx).await.map_err(storage_error(ROW))?;
            }
            tx.commit().await.map_err(storage_error(ROW))?;
            Ok(())
        }

        /// Makes the leased deliveries due at `now`, each only under the
        /// lease it is named with.
        async fn write_released(
            pool: &sqlx::Pool<$db>,
            leases: &[(Uuid, OffsetDateTime)],
            now: OffsetDateTime,
        ) -> Result<()> {
            let mut tx = pool.begin().await.map_err(storage_error(ROW))?;
            for chunk in leases.chunks(500) {
                let sql = format!(
                    "UPDATE notification_deliveries SET lease_until = NULL, next_attempt_at = ${} \
                     FROM (VALUES {}) AS v \
                     WHERE notification_deliveries.id = v.column1 \
                     AND notification_deliveries.lease_until = v.column2 AND status = 'PENDING'",
                    chunk.len() * 2 + 1,
                    $crate::values(chunk.len(), 2)
                );
                let mut release = sqlx::query(&sql);
                for (id, lease_until) in chunk {
                    release = release.bind(id.to_string()).bind(lease_until.unix_timestamp());
                }
                release.bind(now.unix_timestamp()).execute(&mut *tx).await.map_err(storage_error(ROW))?;
            }
            tx.commit().await.map_err(storage_error(ROW))?;
            Ok(())
        }

        /// `column` is one of `n` values, bound from placeholder `first` on
        /// (by [`bind_all`]).
        fn one_of(column: &str, first: usize, n: usize) -> String {
            if n == 0 {
                return "FALSE".to_owned();
            }
            let places: Vec<String> = (first..first + n).map(|i| format!("${i}")).collect();
            format!("{column} IN ({})", places.join(", "))
        }

        /// Binds the values of [`one_of`].
        fn bind_all<'q>(mut query: Query<'q>, values: &[&'q str]) -> Query<'q> {
            for value in values {
                query = query.bind(*value);
            }
            query
        }
    };

    (arrays, $db:ty) => {
        /// One array parameter: `value` of each row.
        fn column<'r, R, T>(rows: &'r [R], value: impl Fn(&'r R) -> T) -> Vec<T> {
            rows.iter().map(value).collect()
        }

        /// Inserts the events of `rows` (distinct ids) that are new, with
        /// their deliveries, in one statement; the ids of those inserted.
        async fn insert_fresh(
            pool: &sqlx::Pool<$db>,
            rows: &[&(StoredEvent, Delivery)],
        ) -> Result<std::collections::HashSet<String>> {
            let rows = sqlx::query(
                "WITH v AS (SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::int8[], \
                 $6::text[], $7::text[], $8::int4[], $9::int8[], $10::int8[], $11::int8[], $12::int8[]) \
                 AS v (event_id, merchant_id, kind, payload, received_at, id, status, attempts, \
                 next_attempt_at, lease_until, created_at, finished_at)), \
                 ins AS (INSERT INTO notification_events (event_id, merchant_id, kind, payload, received_at) \
                 SELECT event_id, merchant_id, kind, payload, received_at FROM v \
                 ON CONFLICT (event_id) DO NOTHING RETURNING event_id), \
                 del AS (INSERT INTO notification_deliveries (id, event_id, merchant_id, status, attempts, \
                 next_attempt_at, lease_until, created_at, finished_at) \
                 SELECT v.id, v.event_id, v.merchant_id, v.status, v.attempts, v.next_attempt_at, \
                 v.lease_until, v.created_at, v.finished_at FROM v JOIN ins ON ins.event_id = v.event_id) \
                 SELECT event_id FROM ins",
            )
            .bind(column(rows, |(e, _)| e.event_id.as_str()))
            .bind(column(rows, |(e, _)| e.merchant_id.as_str()))
            .bind(column(rows, |(e, _)| e.kind.as_str()))
            .bind(rows.iter().map(|(e, _)| to_json(&e.payload)).collect::<Result<Vec<_>>>()?)
            .bind(column(rows, |(e, _)| e.received_at.unix_timestamp()))
            .bind(column(rows, |(_, d)| d.id.to_string()))
            .bind(column(rows, |(_, d)| d.status.as_str()))
            .bind(column(rows, |(_, d)| i32::try_from(d.attempts).unwrap_or(i32::MAX)))
            .bind(column(rows, |(_, d)| d.next_attempt_at.unix_timestamp()))
            .bind(column(rows, |(_, d)| d.lease_until.map(OffsetDateTime::unix_timestamp)))
            .bind(column(rows, |(_, d)| d.created_at.unix_timestamp()))
            .bind(column(rows, |(_, d)| d.finished_at.map(OffsetDateTime::unix_timestamp)))
            .fetch_all(pool)
            .await
            .map_err(storage_error(ROW))?;
            rows.iter().map(|row| get(row, "event_id")).collect()
        }

        /// Records the attempts and updates their deliveries, each only
        /// under the lease it was made under, in one statement.
        async fn write_finished(pool: &sqlx::Pool<$db>, finished: &[FinishedAttempt]) -> Result<()> {
            // The attempts go in whatever the lease; the deliveries change
            // only under theirs. One statement: one implicit transaction.
            sqlx::query(
                "WITH attempts AS (INSERT INTO delivery_attempts (delivery_id, attempt, at, status_code, error, \
                 response, duration_ms) \
                 SELECT * FROM UNNEST($1::text[], $2::int4[], $3::int8[], $4::int4[], $5::text[], $6::text[], \
                 $7::int8[]) ON CONFLICT (delivery_id, attempt) DO NOTHING) \
                 UPDATE notification_deliveries SET status = v.status, attempts = v.attempt, \
                 next_attempt_at = v.next_attempt_at, lease_until = NULL, finished_at = v.finished_at \
                 FROM UNNEST($1::text[], $8::text[], $2::int4[], $9::int8[], $10::int8[], $11::int8[]) \
                 AS v (id, status, attempt, next_attempt_at, finished_at, lease_until) \
                 WHERE notification_deliveries.id = v.id AND notification_deliveries.lease_until = v.lease_until",
            )
            .bind(column(finished, |done| done.attempt.delivery_id.to_string()))
            .bind(column(finished, |done| i32::try_from(done.attempt.attempt).unwrap_or(i32::MAX)))
            .bind(column(finished, |done| done.attempt.at.unix_timestamp()))
            .bind(column(finished, |done| done.attempt.status_code.map(i32::from)))
            .bind(column(finished, |done| done.attempt.error.as_deref()))
            .bind(column(finished, |done| done.attempt.response_excerpt.as_deref()))
            .bind(column(finished, |done| done.attempt.duration_ms))
            .bind(column(finished, |done| finished_columns(done).0.as_str()))
            .bind(column(finished, |done| finished_columns(done).1.unix_timestamp()))
            .bind(column(finished, |done| finished_columns(done).2.map(OffsetDateTime::unix_timestamp)))
            .bind(column(finished, |done| done.lease_until.unix_timestamp()))
            .execute(pool)
            .await
            .map_err(storage_error("delivery attempt"))?;
            Ok(())
        }

        /// Makes the leased deliveries due at `now`, each only under the
        /// lease it is named with, in one statement.
        async fn write_released(
            pool: &sqlx::Pool<$db>,
            leases: &[(Uuid, OffsetDateTime)],
            now: OffsetDateTime,
        ) -> Result<()> {
            sqlx::query(
                "UPDATE notification_deliveries SET lease_until = NULL, next_attempt_at = $3 \
                 FROM UNNEST($1::text[], $2::int8[]) AS v (id, lease_until) \
                 WHERE notification_deliveries.id = v.id \
                 AND notification_deliveries.lease_until = v.lease_until AND status = 'PENDING'",
            )
            .bind(column(leases, |(id, _)| id.to_string()))
            .bind(column(leases, |(_, lease)| lease.unix_timestamp()))
            .bind(now.unix_timestamp())
            .execute(pool)
            .await
            .map_err(storage_error(ROW))?;
            Ok(())
        }

        /// `column` is one of the values of the array at placeholder
        /// `first` (one text whatever their number).
        fn one_of(column: &str, first: usize, _: usize) -> String {
            format!("{column} = ANY(${first}::text[])")
        }

        /// Binds the values of [`one_of`].
        fn bind_all<'q>(query: Query<'q>, values: &[&'q str]) -> Query<'q> {
            query.bind(values.to_vec())
        }
    };
}
