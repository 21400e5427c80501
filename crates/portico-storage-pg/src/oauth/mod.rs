//! Authorization codes, grants, refresh tokens and revoked access tokens:
//! the token endpoint's storage. A redemption and a rotation are one
//! statement each (one round trip, one implicit transaction), combined with
//! others that arrive at the same time ([`batches`]); a parallel redemption
//! of the same code waits for the row and then finds it spent.

mod batches;

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use portico_model::audit::AuditEvent;
use portico_model::ids::{ClientId, CodeHash, GrantId, RefreshTokenHash, SessionId, UserId};
use portico_model::oauth::{
    AccessTokenState, AssertionJti, AuthorizationCode, Grant, PushedRequest, Redemption, RefreshToken, Rotation,
    StoredCode, StoredRefreshToken,
};
use portico_storage::{AuthorizationCodeRepository, GrantRepository, RefreshTokenRepository, StorageError};
use sqlx::postgres::PgRow;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::batch::{Batch, Batcher};
use crate::error::{again_if_rolled_back, storage_error};
use crate::users::owner_from;
use crate::{PgStore, Result, at, get};
pub(crate) use batches::Batches;
use batches::{FindCode, FindRefreshToken, Redeem, Rotate, Written};
use portico_model::login::PendingAuthorization;
use portico_storage::columns::{CODE as CODE_COLUMNS, OWNER_SELECT};
use portico_storage::memory::NodeMemory;

/// How long a redemption or rotation whose answer a lost connection took
/// is sent again while the database cannot be reached, before the request
/// is answered 503 with its outcome unknown (docs/decisions.md, "A write
/// whose answer was lost").
const IN_DOUBT_FOR: Duration = Duration::from_secs(15);

/// The first pause before a write in doubt is sent again; each next one
/// doubles, up to a second.
const FIRST_PAUSE: Duration = Duration::from_millis(50);

/// Sends a write, again until the database answers it, and whether it
/// was sent more than once; `send` makes one sending: `Ok(Some(answer))`
/// answered, `Ok(None)` the connection lost once it was sent,
/// `Err(StorageError::Unavailable)` no connection to send it on, any other
/// error a refusal.
///
/// A write whose connection was lost once it was sent may or may not have
/// committed; answering 503 then would tell the client to try again with
/// something the write may have spent already (a code, a refresh token, a
/// pushed request), and its retry would be refused. So the same write is
/// sent again until the database answers, until [`IN_DOUBT_FOR`] has passed
/// (a try under way then may still wait out the pool's acquire timeout),
/// pausing [`FIRST_PAUSE`], then twice as long each time up to a second:
/// made to change nothing if the first sending committed, which the caller
/// then finds by what that sending wrote. A first sending that found no
/// connection sent nothing and fails at once. Counted by `statement`. A
/// sending the database rolled back to break a conflict with another
/// (a deadlock with a deletion that cascades to the same rows) kept
/// nothing and is sent again at once ([`again_if_rolled_back`]).
pub(crate) async fn until_answered<T, Sent>(
    statement: &'static str,
    mut send: impl FnMut() -> Sent,
) -> Result<(T, bool)>
where
    Sent: std::future::Future<Output = Result<Option<T>>>,
{
    let mut pause = FIRST_PAUSE;
    let mut in_doubt_since: Option<Instant> = None;
    loop {
        match (again_if_rolled_back(statement, &mut send).await, in_doubt_since) {
            (Ok(Some(answer)), since) => {
                if let Some(since) = since {
                    counted(statement, "settled");
                    tracing::info!(statement, took_ms = since.elapsed().as_millis(), "a write in doubt was settled");
                }
                return Ok((answer, since.is_some()));
            }
            (Ok(None), None) => in_doubt_since = Some(Instant::now()),
            (Ok(None) | Err(StorageError::Unavailable(_)), Some(since)) if since.elapsed() < IN_DOUBT_FOR => {}
            (Ok(None) | Err(StorageError::Unavailable(_)), Some(_)) => {
                counted(statement, "unknown");
                return Err(StorageError::Unavailable(format!(
                    "the database could not be reached for {} s after a write's answer was lost; \
                     whether it took effect is unknown",
                    IN_DOUBT_FOR.as_secs()
                )));
            }
            (Err(error), _) => return Err(error),
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(1));
    }
}

/// Whose refresh tokens [`lock_refresh_tokens`] takes.
pub(crate) enum TokensOf<'a> {
    User(UserId),
    Client(&'a ClientId),
}

/// Takes the refresh tokens of a user's or a client's grants within `tx`,
/// in the order a rotation of several takes them (by hash), before a
/// deletion cascades to them from the grants: a rotation takes a token,
/// then its grant (docs/decisions.md, "Lock order").
pub(crate) async fn lock_refresh_tokens(tx: &mut sqlx::PgConnection, of: TokensOf<'_>) -> Result<()> {
    let query = match of {
        TokensOf::User(id) => sqlx::query(
            "SELECT 1 FROM refresh_tokens WHERE grant_id IN (SELECT id FROM grants WHERE user_id = $1) \
             ORDER BY token_hash FOR UPDATE",
        )
        .bind(id.as_uuid()),
        TokensOf::Client(id) => sqlx::query(
            "SELECT 1 FROM refresh_tokens WHERE grant_id IN (SELECT id FROM grants WHERE client_id = $1) \
             ORDER BY token_hash FOR UPDATE",
        )
        .bind(id.as_str()),
    };
    query.execute(tx).await.map_err(storage_error("refresh token"))?;
    Ok(())
}

/// A token write (a redemption, a rotation) sent until answered
/// ([`until_answered`]); the caller finds a first sending that committed by
/// its grant or successor.
async fn settle<B>(store: &PgStore, make: impl Fn() -> B) -> Result<(Written, bool)>
where
    B: Batch<Output = Option<Written>>,
{
    until_answered(B::STATEMENT, || Batcher::submit(store, make())).await
}

/// Sends the write `make` makes that takes a pushed request (the statement
/// storing a login process or a code, named `statement` in the metrics):
/// whether it took it.
///
/// Sent until answered ([`until_answered`]): a second sending takes
/// nothing if the first committed, and `stored` (this very process or
/// code found; awaited only then) tells whether the first took the
/// request. Answered 503 instead, the browser would retry with a
/// `request_uri` already used.
pub(crate) async fn take_pushed_settled<'q>(
    store: &PgStore,
    what: &'static str,
    statement: &'static str,
    make: impl Fn() -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    stored: impl std::future::Future<Output = Result<bool>>,
) -> Result<bool> {
    let make = &make;
    let send = || async move { Ok(execute_once(store, what, statement, make()).await?.map(|rows| rows == 1)) };
    let (taken, sent_again) = until_answered(statement, send).await?;
    if sent_again && !taken { stored.await } else { Ok(taken) }
}

/// One sending of a write for [`until_answered`]: the rows it changed,
/// `None` when the connection was lost once it was sent (logged), the
/// store's error otherwise.
pub(crate) async fn execute_once<'q>(
    store: &PgStore,
    what: &'static str,
    statement: &'static str,
    query: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
) -> Result<Option<u64>> {
    let mut conn = store.conn().await?;
    match query.execute(&mut *conn).await {
        Ok(done) => Ok(Some(done.rows_affected())),
        Err(error) if crate::error::connection_lost(&error) => {
            tracing::warn!(%error, statement, "the database connection was lost after a write was sent");
            Ok(None)
        }
        Err(error) => Err(storage_error(what)(error)),
    }
}

/// Counts a write in doubt by its statement and `outcome`: `settled` (the
/// database answered again) or `unknown` (it did not within
/// [`IN_DOUBT_FOR`]).
fn counted(statement: &'static str, outcome: &'static str) {
    metrics::counter!("portico_database_writes_in_doubt_total", "statement" => statement, "outcome" => outcome)
        .increment(1);
}

fn code_from(row: &PgRow) -> Result<AuthorizationCode> {
    Ok(AuthorizationCode {
        code_hash: get::<String>(row, "code_hash")?.into(),
        client_id: get::<String>(row, "client_id")?.into(),
        user_id: get::<Uuid>(row, "user_id")?.into(),
        redirect_uri: get(row, "redirect_uri")?,
        scope: get(row, "scope")?,
        code_challenge: get(row, "code_challenge")?,
        nonce: get(row, "nonce")?,
        auth_time: get(row, "auth_time")?,
        created_at: get(row, "created_at")?,
        expires_at: get(row, "expires_at")?,
        grant_id: get::<Option<Uuid>>(row, "grant_id")?.map(GrantId::from),
        amr: get(row, "amr")?,
        session_id: get::<Option<Uuid>>(row, "session_id")?.map(SessionId::from),
        dpop_jkt: get(row, "dpop_jkt")?,
    })
}

/// A row of [`FIND_CODES`].
fn stored_code_from(row: &PgRow) -> Result<StoredCode> {
    Ok(StoredCode { code: code_from(row)?, spent: get(row, "spent")?, user: owner_from(row)? })
}

/// A row of [`FIND_REFRESH_TOKENS`].
fn stored_refresh_token_from(row: &PgRow) -> Result<StoredRefreshToken> {
    let grant = grant_from(row)?;
    Ok(StoredRefreshToken {
        token: RefreshToken {
            token_hash: get::<String>(row, "token_hash")?.into(),
            grant_id: grant.id,
            created_at: get(row, "token_created_at")?,
            expires_at: get(row, "token_expires_at")?,
        },
        spent: get(row, "token_spent")?,
        user: owner_from(row)?,
        grant,
    })
}

pub(crate) fn grant_from(row: &PgRow) -> Result<Grant> {
    Ok(Grant {
        id: get::<Uuid>(row, "id")?.into(),
        client_id: get::<String>(row, "client_id")?.into(),
        user_id: get::<Uuid>(row, "user_id")?.into(),
        scope: get(row, "scope")?,
        auth_time: get(row, "auth_time")?,
        created_at: get(row, "created_at")?,
        revoked_at: get(row, "revoked_at")?,
        amr: get(row, "amr")?,
        session_id: get::<Option<Uuid>>(row, "session_id")?.map(SessionId::from),
    })
}

/// Presented codes (`$1`, an array) with their users, in one read. The
/// codes are searched as an array gathered by a subquery, so that
/// PostgreSQL plans the read once for any number of them (see
/// [`batches`]).
static FIND_CODES: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT c.code_hash, c.client_id, c.user_id, c.redirect_uri, c.scope, c.code_challenge, c.nonce, \
         c.auth_time, c.created_at, c.expires_at, c.grant_id, c.amr, c.session_id, c.dpop_jkt, \
         c.consumed_at IS NOT NULL AS spent, {OWNER_SELECT} \
         FROM authorization_codes c LEFT JOIN users u ON u.id = c.user_id \
         WHERE c.code_hash = ANY(ARRAY(SELECT unnest($1::text[])))"
    )
});

/// Presented refresh tokens (`$1`, an array) with their grants and the
/// grants' users, in one read.
static FIND_REFRESH_TOKENS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT r.token_hash, r.created_at AS token_created_at, r.expires_at AS token_expires_at, \
         r.used_at IS NOT NULL AS token_spent, g.*, {OWNER_SELECT} \
         FROM refresh_tokens r JOIN grants g ON g.id = r.grant_id LEFT JOIN users u ON u.id = g.user_id \
         WHERE r.token_hash = ANY(ARRAY(SELECT unnest($1::text[])))"
    )
});

/// The head of a code's insert: its table and columns, `$1` to `$13` in
/// [`bind_code`]'s order.
macro_rules! insert_code_into {
    () => {
        "INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri, scope, code_challenge, nonce, \
         auth_time, created_at, expires_at, amr, session_id, dpop_jkt) "
    };
}

const INSERT_CODE: &str =
    concat!(insert_code_into!(), "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)");

/// Deletes the pushed request `$14` of the code's client (`$2`) unless it
/// has expired at the code's `created_at` (`$9`), and inserts the code
/// only when it did: one row, or none.
const INSERT_CODE_TAKING_PUSHED: &str = concat!(
    "WITH taken AS (DELETE FROM pushed_requests WHERE request_hash = $14 AND client_id = $2 AND expires_at > $9 \
     RETURNING 1) ",
    insert_code_into!(),
    "SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13 WHERE EXISTS (SELECT 1 FROM taken)"
);

/// [`INSERT_CODE`] that also deletes the login process `$14`.
static INSERT_CODE_ENDING_LOGIN: LazyLock<String> =
    LazyLock::new(|| format!("WITH ended AS (DELETE FROM login_processes WHERE id = $14) {INSERT_CODE}"));

fn bind_code<'q>(
    query: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    code: &'q AuthorizationCode,
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    query
        .bind(code.code_hash.as_str())
        .bind(code.client_id.as_str())
        .bind(code.user_id.as_uuid())
        .bind(&code.redirect_uri)
        .bind(&code.scope)
        .bind(&code.code_challenge)
        .bind(&code.nonce)
        .bind(at(code.auth_time))
        .bind(at(code.created_at))
        .bind(at(code.expires_at))
        .bind(&code.amr)
        .bind(code.session_id.map(|id| id.as_uuid()))
        .bind(&code.dpop_jkt)
}

#[async_trait]
impl AuthorizationCodeRepository for PgStore {
    async fn insert_code(&self, code: &AuthorizationCode) -> Result<()> {
        bind_code(sqlx::query(INSERT_CODE), code)
            .execute(&mut *self.conn().await?)
            .await
            .map_err(storage_error("authorization code"))?;
        Ok(())
    }

    async fn insert_code_taking(&self, code: &AuthorizationCode, request_hash: &str) -> Result<bool> {
        let make = || bind_code(sqlx::query(INSERT_CODE_TAKING_PUSHED), code).bind(request_hash);
        let stored = async { Ok(self.find_code(&code.code_hash).await?.is_some()) };
        take_pushed_settled(self, "authorization code", "pushed_code", make, stored).await
    }

    async fn insert_code_ending_login(
        &self,
        code: &AuthorizationCode,
        ends: portico_model::ids::LoginProcessId,
    ) -> Result<()> {
        bind_code(sqlx::query(&INSERT_CODE_ENDING_LOGIN), code)
            .bind(ends.as_uuid())
            .execute(&mut *self.conn().await?)
            .await
            .map_err(storage_error("authorization code"))?;
        Ok(())
    }

    async fn find_code(&self, code_hash: &CodeHash) -> Result<Option<StoredCode>> {
        Batcher::submit(self, FindCode::new(code_hash)).await?
    }

    async fn redeem_code_asserted(
        &self,
        code_hash: &CodeHash,
        now: OffsetDateTime,
        grant: &Grant,
        refresh: &RefreshToken,
        audit: &AuditEvent,
        assertion: Option<&AssertionJti>,
    ) -> Result<Redemption> {
        let generation = self.memory().and_then(NodeMemory::generation_for_new_grant);
        let redemption = || Redeem::new(code_hash.as_str(), now, grant, refresh, audit, assertion);
        let (written, sent_again) = settle(self, redemption).await?;
        if sent_again && !written.changed && self.code_spent_for(code_hash, grant.id).await? {
            // The first sending had committed: the code is this grant's.
            self.made_live(grant.id, generation);
            return Ok(Redemption::Redeemed);
        }
        if !written.assertion_fresh {
            return Ok(Redemption::AssertionReplayed);
        }
        if written.changed {
            self.made_live(grant.id, generation);
            return Ok(Redemption::Redeemed);
        }
        let code = self.spend_code(code_hash, now).await?;
        Ok(Redemption::Replay { grant_id: code.and_then(|c| c.grant_id) })
    }

    async fn spend_code(&self, code_hash: &CodeHash, now: OffsetDateTime) -> Result<Option<AuthorizationCode>> {
        let row = sqlx::query(&format!(
            "UPDATE authorization_codes SET consumed_at = COALESCE(consumed_at, $2) WHERE code_hash = $1 \
             RETURNING {CODE_COLUMNS}"
        ))
        .bind(code_hash.as_str())
        .bind(at(now))
        .fetch_optional(&mut *self.conn().await?)
        .await
        .map_err(storage_error("authorization code"))?;
        row.as_ref().map(code_from).transpose()
    }

    async fn insert_pushed_request(&self, pushed: &PushedRequest) -> Result<()> {
        sqlx::query(
            "INSERT INTO pushed_requests (request_hash, client_id, request, created_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(&pushed.request_hash)
        .bind(pushed.client_id.as_str())
        .bind(sqlx::types::Json(&pushed.request))
        .bind(at(pushed.created_at))
        .bind(at(pushed.expires_at))
        .execute(&mut *self.conn().await?)
        .await
        .map_err(storage_error("pushed request"))?;
        Ok(())
    }

    async fn find_pushed_request(
        &self,
        request_hash: &str,
        client_id: &ClientId,
        now: OffsetDateTime,
    ) -> Result<Option<PendingAuthorization>> {
        let sql = "SELECT request FROM pushed_requests WHERE request_hash = $1 AND client_id = $2 AND expires_at > $3";
        self.pushed_request(sql, request_hash, client_id, now).await
    }

    async fn take_pushed_request(
        &self,
        request_hash: &str,
        client_id: &ClientId,
        now: OffsetDateTime,
    ) -> Result<Option<PendingAuthorization>> {
        let sql = "DELETE FROM pushed_requests WHERE request_hash = $1 AND client_id = $2 AND expires_at > $3 \
                   RETURNING request";
        self.pushed_request(sql, request_hash, client_id, now).await
    }
}

#[async_trait]
impl GrantRepository for PgStore {
    async fn find_grant(&self, id: GrantId) -> Result<Option<Grant>> {
        sqlx::query("SELECT * FROM grants WHERE id = $1")
            .bind(id.as_uuid())
            .fetch_optional(&mut *self.conn().await?)
            .await
            .map_err(storage_error("grant"))?
            .as_ref()
            .map(grant_from)
            .transpose()
    }

    async fn list_session_grants(&self, session_id: SessionId) -> Result<Vec<Grant>> {
        let rows = sqlx::query("SELECT * FROM grants WHERE session_id = $1 AND revoked_at IS NULL ORDER BY created_at")
            .bind(session_id.as_uuid())
            .fetch_all(&mut *self.conn().await?)
            .await
            .map_err(storage_error("grant"))?;
        rows.iter().map(grant_from).collect()
    }

    async fn list_user_grants(&self, user_id: UserId) -> Result<Vec<Grant>> {
        let rows =
            sqlx::query("SELECT * FROM grants WHERE user_id = $1 AND revoked_at IS NULL ORDER BY created_at DESC")
                .bind(user_id.as_uuid())
                .fetch_all(&mut *self.conn().await?)
                .await
                .map_err(storage_error("grant"))?;
        rows.iter().map(grant_from).collect()
    }

    async fn revoke_grant(&self, id: GrantId, now: OffsetDateTime) -> Result<bool> {
        let done = sqlx::query("UPDATE grants SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL")
            .bind(id.as_uuid())
            .bind(at(now))
            .execute(&mut *self.conn().await?)
            .await
            .map_err(storage_error("grant"))?;
        if let Some(memory) = self.memory() {
            memory.grants_revoked([id]);
        }
        Ok(done.rows_affected() > 0)
    }

    async fn revoke_access_token(&self, jti: &str, expires_at: OffsetDateTime, now: OffsetDateTime) -> Result<()> {
        sqlx::query(
            "INSERT INTO revoked_access_tokens (jti, expires_at, revoked_at) VALUES ($1, $2, $3) \
             ON CONFLICT DO NOTHING",
        )
        .bind(jti)
        .bind(at(expires_at))
        .bind(at(now))
        .execute(&mut *self.conn().await?)
        .await
        .map_err(storage_error("revoked token"))?;
        if let Some(memory) = self.memory() {
            memory.token_revoked(jti);
        }
        Ok(())
    }

    async fn access_token_state(&self, grant_id: GrantId, jti: &str) -> Result<AccessTokenState> {
        NodeMemory::access_token_state_or(self.memory(), grant_id, jti, async {
            let row = sqlx::query(
                "SELECT EXISTS (SELECT 1 FROM grants WHERE id = $1 AND revoked_at IS NULL) AS grant_live, \
                 EXISTS (SELECT 1 FROM revoked_access_tokens WHERE jti = $2) AS token_revoked",
            )
            .bind(grant_id.as_uuid())
            .bind(jti)
            .fetch_one(&mut *self.conn().await?)
            .await
            .map_err(storage_error("grant"))?;
            Ok(AccessTokenState {
                grant_revoked: !get::<bool>(&row, "grant_live")?,
                token_revoked: get(&row, "token_revoked")?,
            })
        })
        .await
    }
}

#[async_trait]
impl RefreshTokenRepository for PgStore {
    async fn find_refresh_token(&self, token_hash: &RefreshTokenHash) -> Result<Option<StoredRefreshToken>> {
        Batcher::submit(self, FindRefreshToken::new(token_hash)).await?
    }

    async fn rotate_refresh_token_asserted(
        &self,
        old_hash: &RefreshTokenHash,
        now: OffsetDateTime,
        successor: &RefreshToken,
        audit: &AuditEvent,
        assertion: Option<&AssertionJti>,
    ) -> Result<Rotation> {
        let generation = self.memory().and_then(NodeMemory::generation_for_new_grant);
        let rotation = || Rotate::new(old_hash.as_str(), now, successor, audit, assertion);
        let (written, sent_again) = settle(self, rotation).await?;
        if sent_again && !written.changed && self.refresh_token_stored(&successor.token_hash).await? {
            // The first sending had committed: the successor is stored.
            self.made_live(successor.grant_id, generation);
            return Ok(Rotation::Rotated);
        }
        if !written.assertion_fresh {
            return Ok(Rotation::AssertionReplayed);
        }
        if written.changed {
            self.made_live(successor.grant_id, generation);
            return Ok(Rotation::Rotated);
        }
        // A statement of its own sees what a parallel rotation committed
        // meanwhile: a token still unspent means its grant was revoked.
        let unspent: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM refresh_tokens WHERE token_hash = $1 AND used_at IS NULL)",
        )
        .bind(old_hash.as_str())
        .fetch_one(&mut *self.conn().await?)
        .await
        .map_err(storage_error("refresh token"))?;
        Ok(if unspent { Rotation::GrantRevoked } else { Rotation::Replay })
    }

    async fn spend_refresh_token(&self, token_hash: &RefreshTokenHash, now: OffsetDateTime) -> Result<()> {
        sqlx::query("UPDATE refresh_tokens SET used_at = COALESCE(used_at, $2) WHERE token_hash = $1")
            .bind(token_hash.as_str())
            .bind(at(now))
            .execute(&mut *self.conn().await?)
            .await
            .map_err(storage_error("refresh token"))?;
        Ok(())
    }
}

impl PgStore {
    /// The pushed request `request_hash` of `client_id`, live at `now`,
    /// by `sql`: a read, or a delete returning it.
    async fn pushed_request(
        &self,
        sql: &'static str,
        request_hash: &str,
        client_id: &ClientId,
        now: OffsetDateTime,
    ) -> Result<Option<PendingAuthorization>> {
        let row = sqlx::query(sql)
            .bind(request_hash)
            .bind(client_id.as_str())
            .bind(at(now))
            .fetch_optional(&mut *self.conn().await?)
            .await
            .map_err(storage_error("pushed request"))?;
        row.map(|row| get::<sqlx::types::Json<PendingAuthorization>>(&row, "request").map(|json| json.0)).transpose()
    }

    /// A write that made `grant` live (a redemption, a rotation) committed:
    /// this node answers its tokens from memory from now on.
    fn made_live(&self, grant: GrantId, generation: Option<u64>) {
        if let (Some(memory), Some(generation)) = (self.memory(), generation) {
            memory.grant_live(grant, generation);
        }
    }

    /// Whether the code `code_hash` is spent for `grant` (a redemption of
    /// it committed).
    async fn code_spent_for(&self, code_hash: &CodeHash, grant: GrantId) -> Result<bool> {
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM authorization_codes WHERE code_hash = $1 AND grant_id = $2)")
            .bind(code_hash.as_str())
            .bind(grant.as_uuid())
            .fetch_one(&mut *self.conn().await?)
            .await
            .map_err(storage_error("authorization code"))
    }

    /// Whether the refresh token `token_hash` is stored (a rotation that
    /// made it committed).
    async fn refresh_token_stored(&self, token_hash: &RefreshTokenHash) -> Result<bool> {
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM refresh_tokens WHERE token_hash = $1)")
            .bind(token_hash.as_str())
            .fetch_one(&mut *self.conn().await?)
            .await
            .map_err(storage_error("refresh token"))
    }
}
