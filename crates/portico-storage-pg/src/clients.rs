//! Relying parties.

use async_trait::async_trait;
use portico_model::client::{Client, ClientSecurity, LocalizedText};
use portico_model::ids::ClientId;
use portico_storage::memory::NodeMemory;
use portico_storage::{ClientRepository, IssuedAccessToken, KeyPage, Update};
use sqlx::Row as _;
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use time::OffsetDateTime;

use crate::batch::{Batch, Batcher};
use crate::error::{again_if_rolled_back, storage_error};
use crate::{PgStore, Result, at, get};

pub(crate) fn client_from(row: &PgRow) -> Result<Client> {
    Ok(Client {
        client_id: get::<String>(row, "client_id")?.into(),
        secret_hash: get(row, "secret_hash")?,
        name: LocalizedText { ru: get(row, "name_ru")?, en: get(row, "name_en")? },
        redirect_uris: get(row, "redirect_uris")?,
        scopes: get(row, "scopes")?,
        require_consent: get(row, "require_consent")?,
        post_logout_redirect_uris: get(row, "post_logout_redirect_uris")?,
        logout_revokes_grants: get(row, "logout_revokes_grants")?,
        backchannel_logout_uri: get(row, "backchannel_logout_uri")?,
        security: get::<Json<ClientSecurity>>(row, "security")?.0,
        secret_sealed: get(row, "secret_sealed")?,
        registration_token_hash: get(row, "registration_token_hash")?,
        awaiting_approval: get(row, "awaiting_approval")?,
        created_at: get(row, "created_at")?,
        revision: get::<i64>(row, "revision")?.try_into().unwrap_or_default(),
    })
}

/// The head of a client's insert: its table and columns, `$1` to `$14` in
/// [`bind_client`]'s order, then `created_at` (`$15`).
macro_rules! insert_client_into {
    () => {
        "INSERT INTO clients (client_id, secret_hash, name_ru, name_en, redirect_uris, scopes, require_consent, \
         post_logout_redirect_uris, logout_revokes_grants, backchannel_logout_uri, security, secret_sealed, \
         registration_token_hash, awaiting_approval, created_at) "
    };
}

const INSERT_CLIENT: &str =
    concat!(insert_client_into!(), "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)");

/// Spends the one-time initial access token `$16` unless it was spent or
/// has expired at the client's `created_at` (`$15`), and inserts the client
/// only when it did: one row, or none.
const INSERT_CLIENT_SPENDING: &str = concat!(
    "WITH spent AS (UPDATE initial_access_tokens SET used_at = $15 \
     WHERE token_hash = $16 AND used_at IS NULL AND expires_at > $15 RETURNING 1) ",
    insert_client_into!(),
    "SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15 WHERE EXISTS (SELECT 1 FROM spent)"
);

/// Binds what an insert and an update both write of `client`, `$1` to
/// `$14`: its id, then the columns in [`insert_client_into`]'s order.
fn bind_client<'q>(
    query: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    client: &'q Client,
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    query
        .bind(client.client_id.as_str())
        .bind(&client.secret_hash)
        .bind(&client.name.ru)
        .bind(&client.name.en)
        .bind(&client.redirect_uris)
        .bind(&client.scopes)
        .bind(client.require_consent)
        .bind(&client.post_logout_redirect_uris)
        .bind(client.logout_revokes_grants)
        .bind(&client.backchannel_logout_uri)
        .bind(Json(&client.security))
        .bind(&client.secret_sealed)
        .bind(&client.registration_token_hash)
        .bind(client.awaiting_approval)
}

#[async_trait]
impl ClientRepository for PgStore {
    async fn create_client(&self, client: &Client) -> Result<()> {
        bind_client(sqlx::query(INSERT_CLIENT), client)
            .bind(at(client.created_at))
            .execute(&mut *self.conn().await?)
            .await
            .map_err(storage_error("client id"))?;
        Ok(())
    }

    async fn find_client(&self, client_id: &ClientId) -> Result<Option<Client>> {
        NodeMemory::client_or(self.memory(), client_id, async {
            sqlx::query("SELECT * FROM clients WHERE client_id = $1")
                .bind(client_id.as_str())
                .fetch_optional(&mut *self.conn().await?)
                .await
                .map_err(storage_error("client"))?
                .as_ref()
                .map(client_from)
                .transpose()
        })
        .await
    }

    async fn list_clients(&self, page: KeyPage<'_>, awaiting_approval: Option<bool>) -> Result<Vec<Client>> {
        sqlx::query(
            "SELECT * FROM clients WHERE ($1::text IS NULL OR client_id > $1) \
             AND ($3::boolean IS NULL OR awaiting_approval = $3) ORDER BY client_id LIMIT $2",
        )
        .bind(page.after)
        .bind(page.sql_limit())
        .bind(awaiting_approval)
        .fetch_all(&mut *self.conn().await?)
        .await
        .map_err(storage_error("client"))?
        .iter()
        .map(client_from)
        .collect()
    }

    async fn held_clients(&self, limit: u32) -> Result<Vec<Client>> {
        sqlx::query("SELECT * FROM clients WHERE awaiting_approval ORDER BY created_at, client_id LIMIT $1")
            .bind(i64::from(limit))
            .fetch_all(&mut *self.conn().await?)
            .await
            .map_err(storage_error("client"))?
            .iter()
            .map(client_from)
            .collect()
    }

    async fn delete_client(&self, client_id: &ClientId) -> Result<bool> {
        // The deletion cascades from the client to its grants and then
        // their refresh tokens, while a rotation takes a token and then its
        // grant (docs/decisions.md, "Lock order"): the client's tokens are
        // taken first, in the order rotations take them. A rotation of a
        // successor stored meanwhile may still deadlock with the cascade;
        // PostgreSQL rolls one back, and either is sent again.
        let done = again_if_rolled_back("client_deletion", || async {
            let mut tx = self.begin().await?;
            crate::oauth::lock_refresh_tokens(&mut tx, crate::oauth::TokensOf::Client(client_id)).await?;
            let done = sqlx::query("DELETE FROM clients WHERE client_id = $1")
                .bind(client_id.as_str())
                .execute(&mut *tx)
                .await
                .map_err(storage_error("client"))?;
            tx.commit().await.map_err(storage_error("client"))?;
            Ok(done)
        })
        .await;
        // Forgotten even when the answer was lost: the change may have
        // committed. The client's grants went with it (ON DELETE CASCADE):
        // every node hears of each (the grants' trigger), this one at once.
        self.client_changed(client_id);
        if let Some(memory) = self.memory() {
            memory.forget_live_grants();
        }
        Ok(done?.rows_affected() > 0)
    }

    async fn update_client(&self, client: &Client) -> Result<Update> {
        let query = sqlx::query(
            "WITH u AS (UPDATE clients SET secret_hash = $2, name_ru = $3, name_en = $4, redirect_uris = $5, \
             scopes = $6, require_consent = $7, post_logout_redirect_uris = $8, logout_revokes_grants = $9, \
             backchannel_logout_uri = $10, security = $11, secret_sealed = $12, \
             registration_token_hash = $13, awaiting_approval = $14, revision = revision + 1 \
             WHERE client_id = $1 AND revision = $15 RETURNING 1) \
             SELECT EXISTS (SELECT 1 FROM u), EXISTS (SELECT 1 FROM clients WHERE client_id = $1)",
        );
        let done = bind_client(query, client)
            .bind(i64::try_from(client.revision).unwrap_or(i64::MAX))
            .fetch_one(&mut *self.conn().await?)
            .await
            .and_then(|row| Ok((row.try_get::<bool, _>(0)?, row.try_get::<bool, _>(1)?)));
        self.client_changed(&client.client_id);
        Ok(match done.map_err(storage_error("client"))? {
            (true, _) => Update::Updated,
            (false, true) => Update::Outdated,
            (false, false) => Update::Missing,
        })
    }

    async fn remember_client_assertion(
        &self,
        client_id: &ClientId,
        jti: &str,
        expires_at: OffsetDateTime,
        now: OffsetDateTime,
    ) -> Result<bool> {
        Batcher::submit(self, RememberAssertion::new(client_id, jti, expires_at, now)).await
    }

    async fn insert_initial_access_token(
        &self,
        token_hash: &str,
        created_at: OffsetDateTime,
        expires_at: OffsetDateTime,
    ) -> Result<()> {
        sqlx::query("INSERT INTO initial_access_tokens (token_hash, created_at, expires_at) VALUES ($1, $2, $3)")
            .bind(token_hash)
            .bind(at(created_at))
            .bind(at(expires_at))
            .execute(&mut *self.conn().await?)
            .await
            .map_err(storage_error("initial access token"))?;
        Ok(())
    }

    async fn unspent_initial_access_tokens(&self, now: OffsetDateTime) -> Result<Vec<IssuedAccessToken>> {
        sqlx::query(
            "SELECT token_hash, created_at, expires_at FROM initial_access_tokens \
             WHERE used_at IS NULL AND expires_at > $1 ORDER BY created_at, token_hash",
        )
        .bind(at(now))
        .fetch_all(&mut *self.conn().await?)
        .await
        .map_err(storage_error("initial access token"))?
        .iter()
        .map(|row| {
            Ok(IssuedAccessToken {
                id: IssuedAccessToken::id_of(&get::<String>(row, "token_hash")?),
                created_at: get(row, "created_at")?,
                expires_at: get(row, "expires_at")?,
            })
        })
        .collect()
    }

    async fn withdraw_initial_access_token(&self, id: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM initial_access_tokens WHERE left(token_hash, $2) = $1 AND used_at IS NULL")
            .bind(id)
            .bind(i32::try_from(IssuedAccessToken::ID_LEN).unwrap_or(i32::MAX))
            .execute(&mut *self.conn().await?)
            .await
            .map_err(storage_error("initial access token"))?;
        Ok(done.rows_affected() > 0)
    }

    async fn create_client_spending(&self, client: &Client, token_hash: &str) -> Result<bool> {
        let done = bind_client(sqlx::query(INSERT_CLIENT_SPENDING), client)
            .bind(at(client.created_at))
            .bind(token_hash)
            .execute(&mut *self.conn().await?)
            .await
            .map_err(storage_error("client id"))?;
        Ok(done.rows_affected() == 1)
    }
}

impl PgStore {
    /// A change of `client_id` committed: this node forgets it at once
    /// (the others when they hear of it).
    fn client_changed(&self, client_id: &ClientId) {
        if let Some(memory) = self.memory() {
            memory.client_changed(client_id);
        }
    }
}

/// A client assertion's `jti` to remember, waiting for its statement (see
/// [`crate::batch`]): under load the assertions of many token requests go
/// into one `INSERT` and one commit. One assertion presented twice at once
/// never shares a statement (same key), so the second sees the first.
pub(crate) struct RememberAssertion {
    key: String,
    record: serde_json::Value,
}

impl RememberAssertion {
    fn new(client_id: &ClientId, jti: &str, expires_at: OffsetDateTime, now: OffsetDateTime) -> Self {
        let record = serde_json::json!({
            "client_id": client_id.as_str(),
            "jti": jti,
            "expires_at": expires_at.unix_timestamp(),
            "now": now.unix_timestamp(),
        });
        Self { key: format!("{client_id}\n{jti}"), record }
    }
}

/// Each assertion's row is inserted, or takes over the row of an expired
/// assertion with the same `jti` (judged by its own request's time); a live
/// one stays. Answers the keys remembered now.
const REMEMBER_ASSERTIONS: &str = "WITH i AS (SELECT * FROM jsonb_to_recordset($1) AS i (client_id text, \
     jti text, expires_at bigint, now bigint)) \
     INSERT INTO client_assertions AS c (client_id, jti, expires_at) \
     SELECT client_id, jti, to_timestamp(expires_at) FROM i \
     ON CONFLICT (client_id, jti) DO UPDATE SET expires_at = excluded.expires_at \
     WHERE c.expires_at <= (SELECT to_timestamp(i.now) FROM i \
     WHERE i.client_id = c.client_id AND i.jti = c.jti) \
     RETURNING c.client_id || E'\\n' || c.jti";

impl Batch for RememberAssertion {
    type Output = bool;
    const WHAT: &'static str = "client assertion";
    const STATEMENT: &'static str = "client_assertion";

    fn key(&self) -> &str {
        &self.key
    }

    async fn run(store: &PgStore, items: &[Self]) -> std::result::Result<Vec<bool>, sqlx::Error> {
        let records: Vec<&serde_json::Value> = items.iter().map(|item| &item.record).collect();
        let remembered: std::collections::HashSet<String> = sqlx::query_scalar(REMEMBER_ASSERTIONS)
            .bind(Json(records))
            .fetch_all(&mut *store.acquire().await?)
            .await?
            .into_iter()
            .collect();
        Ok(items.iter().map(|item| remembered.contains(&item.key)).collect())
    }

    fn batcher(store: &PgStore) -> &Batcher<Self> {
        &store.batches.remember_assertion
    }
}
