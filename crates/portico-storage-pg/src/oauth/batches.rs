//! The token endpoint's statements, combined (see [`crate::batch`]): the
//! reads of presented codes and refresh tokens, each item a key of one
//! array; a code's redemption and a refresh token's rotation, each item a
//! row of one `jsonb` argument, with the same conditions per row as a
//! statement of its own.

use std::collections::HashMap;

use portico_model::audit::AuditEvent;
use portico_model::ids::{CodeHash, RefreshTokenHash};
use portico_model::oauth::{AssertionJti, Grant, RefreshToken, StoredCode, StoredRefreshToken};
use serde_json::{Value, json};
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use time::OffsetDateTime;

use super::{FIND_CODES, FIND_REFRESH_TOKENS, stored_code_from, stored_refresh_token_from};
use crate::PgStore;
use crate::batch::{Batch, Batcher};
use crate::error::connection_lost;

/// The batchers of one store.
pub(crate) struct Batches {
    find_code: Batcher<FindCode>,
    find_refresh_token: Batcher<FindRefreshToken>,
    redeem: Batcher<Redeem>,
    rotate: Batcher<Rotate>,
    pub(crate) remember_assertion: Batcher<crate::clients::RememberAssertion>,
}

impl Batches {
    pub(crate) fn new(in_flight: usize) -> Self {
        Self {
            find_code: Batcher::new(in_flight),
            find_refresh_token: Batcher::new(in_flight),
            redeem: Batcher::new(in_flight),
            rotate: Batcher::new(in_flight),
            remember_assertion: Batcher::new(in_flight),
        }
    }
}

/// A presented code's read, waiting for its statement.
pub(crate) struct FindCode(String);

impl FindCode {
    pub(crate) fn new(code_hash: &CodeHash) -> Self {
        Self(code_hash.as_str().to_owned())
    }
}

impl Batch for FindCode {
    /// A damaged row fails its own read only.
    type Output = crate::Result<Option<StoredCode>>;
    const WHAT: &'static str = "authorization code";
    const STATEMENT: &'static str = "code_read";

    fn key(&self) -> &str {
        &self.0
    }

    async fn run(store: &PgStore, items: &[Self]) -> Result<Vec<Self::Output>, sqlx::Error> {
        read(store, &FIND_CODES, items, "code_hash", stored_code_from).await
    }

    fn batcher(store: &PgStore) -> &Batcher<Self> {
        &store.batches.find_code
    }
}

/// A presented refresh token's read, waiting for its statement.
pub(crate) struct FindRefreshToken(String);

impl FindRefreshToken {
    pub(crate) fn new(token_hash: &RefreshTokenHash) -> Self {
        Self(token_hash.as_str().to_owned())
    }
}

impl Batch for FindRefreshToken {
    /// A damaged row fails its own read only.
    type Output = crate::Result<Option<StoredRefreshToken>>;
    const WHAT: &'static str = "refresh token";
    const STATEMENT: &'static str = "refresh_token_read";

    fn key(&self) -> &str {
        &self.0
    }

    async fn run(store: &PgStore, items: &[Self]) -> Result<Vec<Self::Output>, sqlx::Error> {
        read(store, &FIND_REFRESH_TOKENS, items, "token_hash", stored_refresh_token_from).await
    }

    fn batcher(store: &PgStore) -> &Batcher<Self> {
        &store.batches.find_refresh_token
    }
}

/// Runs a combined read of `items`' keys (`$1`) and answers each with its
/// row (found by its `column`), made into a `T` by `from`; `None` for a key
/// with no row.
async fn read<B: Batch, T>(
    store: &PgStore,
    sql: &str,
    items: &[B],
    column: &str,
    from: fn(&PgRow) -> crate::Result<T>,
) -> Result<Vec<crate::Result<Option<T>>>, sqlx::Error> {
    let keys: Vec<&str> = items.iter().map(B::key).collect();
    let rows = sqlx::query(sql).bind(&keys).fetch_all(&mut *store.acquire().await?).await?;
    let mut by_key: HashMap<String, &PgRow> = HashMap::with_capacity(rows.len());
    for row in &rows {
        if let Ok(key) = sqlx::Row::try_get::<String, _>(row, column) {
            by_key.insert(key, row);
        }
    }
    Ok(keys.iter().map(|key| by_key.get(*key).map(|row| from(row)).transpose()).collect())
}

/// The client assertions of items that carry one (`assertion_client`,
/// `assertion_jti`, `assertion_expires_at`, judged at `spent_at`), each
/// remembered as `remember_client_assertion` does (`asr`), and the items
/// whose assertion is new or who have none (`ok`): only those change
/// anything.
macro_rules! assertions {
    () => {
        "asr AS (INSERT INTO client_assertions AS c (client_id, jti, expires_at) \
         SELECT assertion_client, assertion_jti, to_timestamp(assertion_expires_at) FROM i \
         WHERE assertion_jti IS NOT NULL \
         ON CONFLICT (client_id, jti) DO UPDATE SET expires_at = excluded.expires_at \
         WHERE c.expires_at <= (SELECT to_timestamp(max(i.spent_at)) FROM i \
         WHERE i.assertion_client = c.client_id AND i.assertion_jti = c.jti) \
         RETURNING c.client_id, c.jti), \
         ok AS (SELECT i.* FROM i WHERE i.assertion_jti IS NULL OR EXISTS (SELECT 1 FROM asr \
         WHERE asr.client_id = i.assertion_client AND asr.jti = i.assertion_jti))"
    };
}

/// Both writes search their table by the keys gathered from the records
/// in a subquery (`= ANY(ARRAY(SELECT …))`), as the reads do: PostgreSQL
/// guesses a set-returning function yields 100 records, and joined on that
/// guess alone a table of some thousands of rows looks cheaper read whole
/// than searched 100 times — a plan made while it was that small would
/// keep reading it whole as it grew.
///
/// Codes' redemptions: each spends its code (when unspent) for the grant
/// it yields, stores the refresh token while that grant is live, and the
/// audit event. Answers the codes that were redeemed; a code spent already
/// changes nothing.
const REDEEM_CODES: &str = concat!(
    "WITH i AS (SELECT * FROM jsonb_to_recordset($1) AS i (code_hash text, spent_at bigint, \
     id uuid, client_id text, user_id uuid, scope text, auth_time bigint, created_at bigint, revoked_at bigint, \
     amr text[], session_id uuid, token_hash text, token_created_at bigint, token_expires_at bigint, \
     audit_at bigint, kind text, audit_user_id uuid, audit_client_id text, detail jsonb, \
     assertion_client text, assertion_jti text, assertion_expires_at bigint)), \
     ",
    assertions!(),
    ", \
     spent AS (UPDATE authorization_codes c SET consumed_at = to_timestamp(ok.spent_at), grant_id = ok.id FROM ok \
     WHERE c.code_hash = ANY(ARRAY(SELECT code_hash FROM ok)) AND c.code_hash = ok.code_hash AND c.consumed_at IS NULL RETURNING ok.*), \
     g AS (INSERT INTO grants (id, client_id, user_id, scope, auth_time, created_at, revoked_at, amr, session_id) \
     SELECT id, client_id, user_id, scope, to_timestamp(auth_time), to_timestamp(created_at), \
     to_timestamp(revoked_at), amr, session_id FROM spent RETURNING id, revoked_at), \
     r AS (INSERT INTO refresh_tokens (token_hash, grant_id, created_at, expires_at, used_at) \
     SELECT s.token_hash, s.id, to_timestamp(s.token_created_at), to_timestamp(s.token_expires_at), NULL \
     FROM spent s JOIN g ON g.id = s.id WHERE g.revoked_at IS NULL), \
     a AS (INSERT INTO audit_log (at, kind, user_id, client_id, detail) \
     SELECT to_timestamp(audit_at), kind, audit_user_id, audit_client_id, COALESCE(detail, 'null') FROM spent) \
     SELECT i.code_hash, EXISTS (SELECT 1 FROM spent WHERE spent.code_hash = i.code_hash), \
     EXISTS (SELECT 1 FROM ok WHERE ok.code_hash = i.code_hash) FROM i"
);

/// Refresh tokens' rotations: each spends its token (when unspent) while
/// its grant is live, stores the successor and the audit event. Answers
/// the tokens that were rotated; a token spent already, or of a revoked
/// grant, changes nothing.
const ROTATE_REFRESH_TOKENS: &str = concat!(
    "WITH i AS (SELECT * FROM jsonb_to_recordset($1) AS i (old_hash text, \
     spent_at bigint, grant_id uuid, token_hash text, created_at bigint, expires_at bigint, \
     audit_at bigint, kind text, audit_user_id uuid, audit_client_id text, detail jsonb, \
     assertion_client text, assertion_jti text, assertion_expires_at bigint)), \
     ",
    assertions!(),
    ", \
     spent AS (UPDATE refresh_tokens r SET used_at = to_timestamp(ok.spent_at) FROM ok \
     WHERE r.token_hash = ANY(ARRAY(SELECT old_hash FROM ok)) AND r.token_hash = ok.old_hash AND r.used_at IS NULL \
     AND EXISTS (SELECT 1 FROM grants g WHERE g.id = ok.grant_id AND g.revoked_at IS NULL) RETURNING ok.*), \
     n AS (INSERT INTO refresh_tokens (token_hash, grant_id, created_at, expires_at, used_at) \
     SELECT token_hash, grant_id, to_timestamp(created_at), to_timestamp(expires_at), NULL FROM spent), \
     a AS (INSERT INTO audit_log (at, kind, user_id, client_id, detail) \
     SELECT to_timestamp(audit_at), kind, audit_user_id, audit_client_id, COALESCE(detail, 'null') FROM spent) \
     SELECT i.old_hash, EXISTS (SELECT 1 FROM spent WHERE spent.old_hash = i.old_hash), \
     EXISTS (SELECT 1 FROM ok WHERE ok.old_hash = i.old_hash) FROM i"
);

/// A write waiting for its statement: its key, and its record.
pub(crate) struct Record {
    key: String,
    record: Value,
}

/// What a combined write did to one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Written {
    /// It changed its row (spent the code or the token).
    pub(crate) changed: bool,
    /// Its client assertion was new (or it had none); when not, nothing
    /// of the item changed.
    pub(crate) assertion_fresh: bool,
}

/// Runs a combined write of `items`' records (`$1`) and answers, for each,
/// what it did (the statement returns every key with whether it changed
/// its row and whether its assertion was new); `None` for each when the
/// connection was lost once the statement was sent, so that it may or may
/// not have committed. A connection that cannot be had is an error: then
/// nothing was sent.
async fn write(store: &PgStore, sql: &'static str, items: &[&Record]) -> Result<Vec<Option<Written>>, sqlx::Error> {
    let records: Vec<&Value> = items.iter().map(|item| &item.record).collect();
    let mut conn = store.acquire().await?;
    let rows: Vec<(String, bool, bool)> = match sqlx::query_as(sql).bind(Json(records)).fetch_all(&mut *conn).await {
        Ok(rows) => rows,
        Err(error) if connection_lost(&error) => {
            tracing::warn!(%error, items = items.len(), "the database connection was lost after a token write was sent");
            return Ok(vec![None; items.len()]);
        }
        Err(error) => return Err(error),
    };
    let by_key: HashMap<String, Written> =
        rows.into_iter().map(|(key, changed, assertion_fresh)| (key, Written { changed, assertion_fresh })).collect();
    Ok(items
        .iter()
        .map(|item| Some(by_key.get(&item.key).copied().unwrap_or(Written { changed: false, assertion_fresh: false })))
        .collect())
}

/// An item's assertion columns (none without one).
fn assertion_columns(row: &mut Value, assertion: Option<&AssertionJti>) {
    if let Some(assertion) = assertion {
        row["assertion_client"] = json!(assertion.client_id.as_str());
        row["assertion_jti"] = json!(assertion.jti);
        row["assertion_expires_at"] = json!(assertion.expires_at.unix_timestamp());
    }
}

/// A code's redemption, waiting for its statement.
pub(crate) struct Redeem(Record);

impl Redeem {
    pub(crate) fn new(
        code_hash: &str,
        now: OffsetDateTime,
        grant: &Grant,
        refresh: &RefreshToken,
        audit: &AuditEvent,
        assertion: Option<&AssertionJti>,
    ) -> Self {
        let mut row = json!({
            "code_hash": code_hash,
            "spent_at": now.unix_timestamp(),
            "id": grant.id.as_uuid(),
            "client_id": grant.client_id.as_str(),
            "user_id": grant.user_id.as_uuid(),
            "scope": grant.scope,
            "auth_time": grant.auth_time.unix_timestamp(),
            "created_at": grant.created_at.unix_timestamp(),
            "revoked_at": grant.revoked_at.map(OffsetDateTime::unix_timestamp),
            "amr": grant.amr,
            "session_id": grant.session_id.map(|id| id.as_uuid()),
            "token_hash": refresh.token_hash.as_str(),
            "token_created_at": refresh.created_at.unix_timestamp(),
            "token_expires_at": refresh.expires_at.unix_timestamp(),
        });
        audit_columns(&mut row, audit);
        assertion_columns(&mut row, assertion);
        Self(Record { key: code_hash.to_owned(), record: row })
    }
}

impl Batch for Redeem {
    /// `None`: unknown (see [`write`]).
    type Output = Option<Written>;
    const WHAT: &'static str = "token";
    const STATEMENT: &'static str = "code_redemption";

    fn key(&self) -> &str {
        &self.0.key
    }

    async fn run(store: &PgStore, items: &[Self]) -> Result<Vec<Self::Output>, sqlx::Error> {
        write(store, REDEEM_CODES, &items.iter().map(|item| &item.0).collect::<Vec<_>>()).await
    }

    fn batcher(store: &PgStore) -> &Batcher<Self> {
        &store.batches.redeem
    }
}

/// A refresh token's rotation, waiting for its statement.
pub(crate) struct Rotate(Record);

impl Rotate {
    pub(crate) fn new(
        old_hash: &str,
        now: OffsetDateTime,
        successor: &RefreshToken,
        audit: &AuditEvent,
        assertion: Option<&AssertionJti>,
    ) -> Self {
        let mut row = json!({
            "old_hash": old_hash,
            "spent_at": now.unix_timestamp(),
            "grant_id": successor.grant_id.as_uuid(),
            "token_hash": successor.token_hash.as_str(),
            "created_at": successor.created_at.unix_timestamp(),
            "expires_at": successor.expires_at.unix_timestamp(),
        });
        audit_columns(&mut row, audit);
        assertion_columns(&mut row, assertion);
        Self(Record { key: old_hash.to_owned(), record: row })
    }
}

impl Batch for Rotate {
    /// `None`: unknown (see [`write`]).
    type Output = Option<Written>;
    const WHAT: &'static str = "token";
    const STATEMENT: &'static str = "refresh_rotation";

    fn key(&self) -> &str {
        &self.0.key
    }

    async fn run(store: &PgStore, items: &[Self]) -> Result<Vec<Self::Output>, sqlx::Error> {
        write(store, ROTATE_REFRESH_TOKENS, &items.iter().map(|item| &item.0).collect::<Vec<_>>()).await
    }

    fn batcher(store: &PgStore) -> &Batcher<Self> {
        &store.batches.rotate
    }
}

/// An audit event's columns (the time, as stored, to the whole second; a
/// `null` detail becomes SQL `NULL` in the record, and `null` again in the
/// statement).
fn audit_columns(row: &mut Value, audit: &AuditEvent) {
    row["audit_at"] = json!(audit.at.unix_timestamp());
    row["kind"] = json!(audit.kind);
    row["audit_user_id"] = json!(audit.user_id.as_ref().map(|id| id.as_uuid()));
    row["audit_client_id"] = json!(audit.client_id.as_ref().map(|id| id.as_str()));
    row["detail"] = audit.detail.clone();
}
