//! Relying parties.

use async_trait::async_trait;
use portico_model::client::{Client, LocalizedText};
use portico_model::ids::ClientId;
use portico_storage::memory::NodeMemory;
use portico_storage::{ClientRepository, IssuedAccessToken, KeyPage, Update};
use rusqlite::{Row, params};
use time::OffsetDateTime;

use crate::db::{Columns, Res, all, one, run, secs, to_json};
use crate::{Result, SqliteStore};

fn client_from(row: &Row<'_>) -> Res<Client> {
    Ok(Client {
        client_id: row.get::<_, String>("client_id")?.into(),
        secret_hash: row.get("secret_hash")?,
        name: LocalizedText { ru: row.get("name_ru")?, en: row.get("name_en")? },
        redirect_uris: row.json("redirect_uris")?,
        scopes: row.words("scopes")?,
        require_consent: row.get("require_consent")?,
        post_logout_redirect_uris: row.json("post_logout_redirect_uris")?,
        logout_revokes_grants: row.get("logout_revokes_grants")?,
        backchannel_logout_uri: row.get("backchannel_logout_uri")?,
        security: row.json("security")?,
        secret_sealed: row.get("secret_sealed")?,
        registration_token_hash: row.get("registration_token_hash")?,
        awaiting_approval: row.get("awaiting_approval")?,
        created_at: row.time("created_at")?,
        revision: row.get::<_, i64>("revision")?.try_into().unwrap_or_default(),
    })
}

/// Runs `sql` with what an insert and an update both write of `client` as
/// `?1` to `?14` (its id, then the columns in the insert's order) and
/// `last` as `?15`: the number of rows changed.
fn run_with_client(tx: &rusqlite::Connection, sql: &str, client: &Client, last: i64) -> Res<usize> {
    let (redirect_uris, scopes) = (to_json(&client.redirect_uris)?, client.scopes.join(" "));
    let (post_logout, security) = (to_json(&client.post_logout_redirect_uris)?, to_json(&client.security)?);
    run(
        tx,
        sql,
        params![
            client.client_id.as_str(),
            client.secret_hash,
            client.name.ru,
            client.name.en,
            redirect_uris,
            scopes,
            client.require_consent,
            post_logout,
            client.logout_revokes_grants,
            client.backchannel_logout_uri,
            security,
            client.secret_sealed,
            client.registration_token_hash,
            client.awaiting_approval,
            last,
        ],
    )
}

fn insert_client(tx: &rusqlite::Connection, client: &Client) -> Res<()> {
    let sql = "INSERT INTO clients (client_id, secret_hash, name_ru, name_en, redirect_uris, scopes, \
               require_consent, post_logout_redirect_uris, logout_revokes_grants, backchannel_logout_uri, \
               security, secret_sealed, registration_token_hash, awaiting_approval, created_at) \
               VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)";
    run_with_client(tx, sql, client, secs(client.created_at))?;
    Ok(())
}

#[async_trait]
impl ClientRepository for SqliteStore {
    async fn create_client(&self, client: &Client) -> Result<()> {
        let client = client.clone();
        self.db.write("client id", move |tx| insert_client(tx, &client)).await
    }

    async fn find_client(&self, client_id: &ClientId) -> Result<Option<Client>> {
        let id = client_id.as_str().to_owned();
        let read = self.db.read(move |c| one(c, "SELECT * FROM clients WHERE client_id = ?1", [id], client_from));
        NodeMemory::client_or(self.memory(), client_id, read).await
    }

    async fn list_clients(&self, page: KeyPage<'_>, awaiting_approval: Option<bool>) -> Result<Vec<Client>> {
        let (after, limit) = (page.after.map(str::to_owned), page.sql_limit());
        let sql = "SELECT * FROM clients WHERE (?1 IS NULL OR client_id > ?1) \
                   AND (?3 IS NULL OR awaiting_approval = ?3) ORDER BY client_id LIMIT ?2";
        self.db.read(move |c| all(c, sql, params![after, limit, awaiting_approval], client_from)).await
    }

    async fn held_clients(&self, limit: u32) -> Result<Vec<Client>> {
        let sql = "SELECT * FROM clients WHERE awaiting_approval ORDER BY created_at, client_id LIMIT ?1";
        self.db.read(move |c| all(c, sql, [limit], client_from)).await
    }

    async fn delete_client(&self, client_id: &ClientId) -> Result<bool> {
        // The client's grants go with it (ON DELETE CASCADE): the memory
        // must not answer for them as live any more.
        let id = client_id.as_str().to_owned();
        let deleted =
            self.db.write("client", move |tx| Ok(run(tx, "DELETE FROM clients WHERE client_id = ?1", [id])? > 0)).await;
        self.client_changed(client_id);
        if let Some(memory) = self.memory() {
            memory.forget_live_grants();
        }
        deleted
    }

    async fn update_client(&self, client: &Client) -> Result<Update> {
        let client_id = client.client_id.clone();
        let client = client.clone();
        let updated = self
            .db
            .write("client", move |tx| {
                let sql = "UPDATE clients SET secret_hash = ?2, name_ru = ?3, name_en = ?4, redirect_uris = ?5, \
                           scopes = ?6, require_consent = ?7, post_logout_redirect_uris = ?8, \
                           logout_revokes_grants = ?9, backchannel_logout_uri = ?10, security = ?11, \
                           secret_sealed = ?12, registration_token_hash = ?13, awaiting_approval = ?14, \
                           revision = revision + 1 WHERE client_id = ?1 AND revision = ?15";
                let revision = i64::try_from(client.revision).unwrap_or(i64::MAX);
                if run_with_client(tx, sql, &client, revision)? > 0 {
                    return Ok(Update::Updated);
                }
                let id = client.client_id.as_str();
                let stored =
                    one(tx, "SELECT 1 FROM clients WHERE client_id = ?1", [id], |row| Ok(row.get::<_, i64>(0)?))?;
                Ok(if stored.is_some() { Update::Outdated } else { Update::Missing })
            })
            .await;
        self.client_changed(&client_id);
        updated
    }

    async fn remember_client_assertion(
        &self,
        client_id: &ClientId,
        jti: &str,
        expires_at: OffsetDateTime,
        now: OffsetDateTime,
    ) -> Result<bool> {
        let (id, jti) = (client_id.as_str().to_owned(), jti.to_owned());
        self.db
            .write("client assertion", move |tx| {
                Ok(run(tx, REMEMBER_ASSERTION, params![id, jti, secs(expires_at), secs(now)])? == 1)
            })
            .await
    }

    async fn insert_initial_access_token(
        &self,
        token_hash: &str,
        created_at: OffsetDateTime,
        expires_at: OffsetDateTime,
    ) -> Result<()> {
        let hash = token_hash.to_owned();
        self.db
            .write("initial access token", move |tx| {
                let sql = "INSERT INTO initial_access_tokens (token_hash, created_at, expires_at) VALUES (?1, ?2, ?3)";
                run(tx, sql, params![hash, secs(created_at), secs(expires_at)])?;
                Ok(())
            })
            .await
    }

    async fn unspent_initial_access_tokens(&self, now: OffsetDateTime) -> Result<Vec<IssuedAccessToken>> {
        let sql = "SELECT token_hash, created_at, expires_at FROM initial_access_tokens \
                   WHERE used_at IS NULL AND expires_at > ?1 ORDER BY created_at, token_hash";
        self.db
            .read(move |c| {
                all(c, sql, [secs(now)], |row| {
                    Ok(IssuedAccessToken {
                        id: IssuedAccessToken::id_of(&row.get::<_, String>("token_hash")?),
                        created_at: row.time("created_at")?,
                        expires_at: row.time("expires_at")?,
                    })
                })
            })
            .await
    }

    async fn withdraw_initial_access_token(&self, id: &str) -> Result<bool> {
        let id = id.to_owned();
        self.db
            .write("initial access token", move |tx| {
                let sql = "DELETE FROM initial_access_tokens WHERE substr(token_hash, 1, ?2) = ?1 AND used_at IS NULL";
                Ok(run(tx, sql, params![id, IssuedAccessToken::ID_LEN])? > 0)
            })
            .await
    }

    async fn create_client_spending(&self, client: &Client, token_hash: &str) -> Result<bool> {
        let (client, hash) = (client.clone(), token_hash.to_owned());
        self.db
            .write("client id", move |tx| {
                let sql = "UPDATE initial_access_tokens SET used_at = ?2 \
                           WHERE token_hash = ?1 AND used_at IS NULL AND expires_at > ?2";
                if run(tx, sql, params![hash, secs(client.created_at)])? != 1 {
                    return Ok(false);
                }
                insert_client(tx, &client)?;
                Ok(true)
            })
            .await
    }
}

impl SqliteStore {
    /// A change of `client_id` (may have) committed: the node's memory
    /// forgets it at once.
    fn client_changed(&self, client_id: &ClientId) {
        if let Some(memory) = self.memory() {
            memory.client_changed(client_id);
        }
    }
}

/// Remembers a client assertion's `jti` (`?1` client, `?2` jti, `?3` its
/// expiry, `?4` now): one row changed when it is new. A row of an expired
/// assertion is taken over; a live one stays.
pub(crate) const REMEMBER_ASSERTION: &str = "INSERT INTO client_assertions (client_id, jti, expires_at) \
     VALUES (?1, ?2, ?3) ON CONFLICT (client_id, jti) DO UPDATE SET expires_at = excluded.expires_at \
     WHERE client_assertions.expires_at <= ?4";
