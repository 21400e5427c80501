//! Authorization codes, grants, refresh tokens and revoked access tokens:
//! the token endpoint's storage. A redemption and a rotation are one
//! immediate transaction each on the writer thread, so a parallel
//! redemption of the same code finds it spent.

use std::sync::LazyLock;

use async_trait::async_trait;
use portico_model::audit::AuditEvent;
use portico_model::ids::{ClientId, CodeHash, GrantId, RefreshTokenHash, SessionId, UserId};
use portico_model::oauth::{
    AccessTokenState, AssertionJti, AuthorizationCode, Grant, PushedRequest, Redemption, RefreshToken, Rotation,
    StoredCode, StoredRefreshToken,
};
use portico_storage::memory::NodeMemory;
use portico_storage::{AuthorizationCodeRepository, GrantRepository, RefreshTokenRepository};
use rusqlite::{Connection, Row, params};
use time::OffsetDateTime;

use crate::audit::insert_audit;
use crate::db::{Columns, Res, all, damaged, one, run, secs, secs_opt, to_json, words};
use crate::users::owner_from;
use crate::{Result, SqliteStore};
use portico_model::login::PendingAuthorization;
use portico_storage::columns::{CODE as CODE_COLUMNS, OWNER_SELECT};

/// A presented code with its user, in one read.
static FIND_CODE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT c.code_hash, c.client_id, c.user_id, c.redirect_uri, c.scope, c.code_challenge, c.nonce, \
         c.auth_time, c.created_at, c.expires_at, c.grant_id, c.amr, c.session_id, c.dpop_jkt, \
         c.consumed_at IS NOT NULL AS spent, {OWNER_SELECT} \
         FROM authorization_codes c LEFT JOIN users u ON u.id = c.user_id WHERE c.code_hash = ?1"
    )
});

/// A presented refresh token with its grant and the grant's user, in one
/// read.
static FIND_REFRESH_TOKEN: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT r.token_hash, r.created_at AS token_created_at, r.expires_at AS token_expires_at, \
         r.used_at IS NOT NULL AS token_spent, g.*, {OWNER_SELECT} \
         FROM refresh_tokens r JOIN grants g ON g.id = r.grant_id LEFT JOIN users u ON u.id = g.user_id \
         WHERE r.token_hash = ?1"
    )
});

fn code_from(row: &Row<'_>) -> Res<AuthorizationCode> {
    Ok(AuthorizationCode {
        code_hash: row.get::<_, String>("code_hash")?.into(),
        client_id: row.get::<_, String>("client_id")?.into(),
        user_id: row.uuid("user_id")?.into(),
        redirect_uri: row.get("redirect_uri")?,
        scope: row.get("scope")?,
        code_challenge: row.get("code_challenge")?,
        nonce: row.get("nonce")?,
        auth_time: row.time("auth_time")?,
        created_at: row.time("created_at")?,
        expires_at: row.time("expires_at")?,
        grant_id: row.uuid_opt("grant_id")?.map(GrantId::from),
        amr: row.words("amr")?,
        session_id: row.uuid_opt("session_id")?.map(SessionId::from),
        dpop_jkt: row.get("dpop_jkt")?,
    })
}

pub(crate) fn grant_from(row: &Row<'_>) -> Res<Grant> {
    Ok(Grant {
        id: row.uuid("id")?.into(),
        client_id: row.get::<_, String>("client_id")?.into(),
        user_id: row.uuid("user_id")?.into(),
        scope: row.get("scope")?,
        auth_time: row.time("auth_time")?,
        created_at: row.time("created_at")?,
        revoked_at: row.time_opt("revoked_at")?,
        amr: row.words("amr")?,
        session_id: row.uuid_opt("session_id")?.map(SessionId::from),
    })
}

fn insert_grant(conn: &Connection, grant: &Grant) -> Res<()> {
    run(
        conn,
        "INSERT INTO grants (id, client_id, user_id, scope, auth_time, created_at, revoked_at, amr, session_id) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            grant.id.to_string(),
            grant.client_id.as_str(),
            grant.user_id.to_string(),
            grant.scope,
            secs(grant.auth_time),
            secs(grant.created_at),
            secs_opt(grant.revoked_at),
            words(&grant.amr),
            grant.session_id.map(|id| id.to_string()),
        ],
    )?;
    Ok(())
}

/// Stores a refresh token while its grant is live: whether it did.
fn insert_refresh(conn: &Connection, token: &RefreshToken) -> Res<bool> {
    let stored = run(
        conn,
        "INSERT INTO refresh_tokens (token_hash, grant_id, created_at, expires_at, used_at) \
         SELECT ?1, ?2, ?3, ?4, NULL WHERE EXISTS (SELECT 1 FROM grants WHERE id = ?2 AND revoked_at IS NULL)",
        params![token.token_hash.as_str(), token.grant_id.to_string(), secs(token.created_at), secs(token.expires_at)],
    )?;
    Ok(stored > 0)
}

fn insert_code(tx: &rusqlite::Connection, code: &AuthorizationCode) -> Res<()> {
    run(
        tx,
        "INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri, scope, \
         code_challenge, nonce, auth_time, created_at, expires_at, amr, session_id, dpop_jkt) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        params![
            code.code_hash.as_str(),
            code.client_id.as_str(),
            code.user_id.to_string(),
            code.redirect_uri,
            code.scope,
            code.code_challenge,
            code.nonce,
            secs(code.auth_time),
            secs(code.created_at),
            secs(code.expires_at),
            words(&code.amr),
            code.session_id.map(|id| id.to_string()),
            code.dpop_jkt,
        ],
    )?;
    Ok(())
}

#[async_trait]
impl AuthorizationCodeRepository for SqliteStore {
    async fn insert_code(&self, code: &AuthorizationCode) -> Result<()> {
        let code = code.clone();
        self.db.write("authorization code", move |tx| insert_code(tx, &code)).await
    }

    async fn insert_code_taking(&self, code: &AuthorizationCode, request_hash: &str) -> Result<bool> {
        let (code, hash) = (code.clone(), request_hash.to_owned());
        self.db
            .write("authorization code", move |tx| {
                if !take_pushed(tx, &hash, &code.client_id, code.created_at)? {
                    return Ok(false);
                }
                insert_code(tx, &code)?;
                Ok(true)
            })
            .await
    }

    async fn insert_code_ending_login(
        &self,
        code: &AuthorizationCode,
        ends: portico_model::ids::LoginProcessId,
    ) -> Result<()> {
        let code = code.clone();
        self.db
            .write("authorization code", move |tx| {
                insert_code(tx, &code)?;
                run(tx, "DELETE FROM login_processes WHERE id = ?1", [ends.to_string()])?;
                Ok(())
            })
            .await
    }

    async fn find_code(&self, code_hash: &CodeHash) -> Result<Option<StoredCode>> {
        let code_hash = code_hash.as_str().to_owned();
        self.db
            .read(move |c| {
                one(c, &FIND_CODE, [code_hash], |row| {
                    Ok(StoredCode { code: code_from(row)?, spent: row.get("spent")?, user: owner_from(row)? })
                })
            })
            .await
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
        let grant_id = grant.id;
        let (code_hash, grant, refresh, audit, assertion) =
            (code_hash.as_str().to_owned(), grant.clone(), refresh.clone(), audit.clone(), assertion.cloned());
        let redemption = self
            .db
            .write("grant", move |tx| {
                if !remember_assertion(tx, assertion.as_ref(), now)? {
                    return Ok(Redemption::AssertionReplayed);
                }
                let spent = run(
                    tx,
                    "UPDATE authorization_codes SET consumed_at = ?2, grant_id = ?3 \
                     WHERE code_hash = ?1 AND consumed_at IS NULL",
                    params![code_hash, secs(now), grant.id.to_string()],
                )?;
                if spent == 0 {
                    let sql = "SELECT grant_id FROM authorization_codes WHERE code_hash = ?1";
                    let grant_id =
                        one(tx, sql, [code_hash], |row| row.uuid_opt("grant_id"))?.flatten().map(GrantId::from);
                    return Ok(Redemption::Replay { grant_id });
                }
                insert_grant(tx, &grant)?;
                insert_refresh(tx, &refresh)?;
                insert_audit(tx, &audit)?;
                Ok(Redemption::Redeemed)
            })
            .await?;
        if redemption == Redemption::Redeemed {
            self.made_live(grant_id, generation);
        }
        Ok(redemption)
    }

    async fn spend_code(&self, code_hash: &CodeHash, now: OffsetDateTime) -> Result<Option<AuthorizationCode>> {
        let code_hash = code_hash.as_str().to_owned();
        self.db
            .write("authorization code", move |tx| {
                let sql = format!(
                    "UPDATE authorization_codes SET consumed_at = COALESCE(consumed_at, ?2) WHERE code_hash = ?1 \
                     RETURNING {CODE_COLUMNS}"
                );
                one(tx, &sql, params![code_hash, secs(now)], code_from)
            })
            .await
    }

    async fn insert_pushed_request(&self, pushed: &PushedRequest) -> Result<()> {
        let pushed = pushed.clone();
        self.db
            .write("pushed request", move |tx| {
                let sql = "INSERT INTO pushed_requests (request_hash, client_id, request, created_at, expires_at) \
                           VALUES (?1, ?2, ?3, ?4, ?5)";
                let request = to_json(&pushed.request)?;
                let (created, expires) = (secs(pushed.created_at), secs(pushed.expires_at));
                run(tx, sql, params![pushed.request_hash, pushed.client_id.as_str(), request, created, expires])?;
                Ok(())
            })
            .await
    }

    async fn find_pushed_request(
        &self,
        request_hash: &str,
        client_id: &ClientId,
        now: OffsetDateTime,
    ) -> Result<Option<PendingAuthorization>> {
        let (hash, client_id) = (request_hash.to_owned(), client_id.as_str().to_owned());
        self.db
            .read(move |c| {
                let sql = "SELECT request FROM pushed_requests \
                           WHERE request_hash = ?1 AND client_id = ?2 AND expires_at > ?3";
                one(c, sql, params![hash, client_id, secs(now)], |row| row.json("request"))
            })
            .await
    }

    async fn take_pushed_request(
        &self,
        request_hash: &str,
        client_id: &ClientId,
        now: OffsetDateTime,
    ) -> Result<Option<PendingAuthorization>> {
        let (hash, client_id) = (request_hash.to_owned(), client_id.as_str().to_owned());
        self.db
            .write("pushed request", move |tx| {
                let sql = "DELETE FROM pushed_requests WHERE request_hash = ?1 AND client_id = ?2 AND expires_at > ?3 \
                           RETURNING request";
                one(tx, sql, params![hash, client_id, secs(now)], |row| row.json("request"))
            })
            .await
    }
}

/// Deletes the pushed request `request_hash` of `client_id` unless it has
/// expired at `now`: whether there was one to take.
pub(crate) fn take_pushed(tx: &Connection, request_hash: &str, client_id: &ClientId, now: OffsetDateTime) -> Res<bool> {
    let sql = "DELETE FROM pushed_requests WHERE request_hash = ?1 AND client_id = ?2 AND expires_at > ?3";
    Ok(run(tx, sql, params![request_hash, client_id.as_str(), secs(now)])? == 1)
}

#[async_trait]
impl GrantRepository for SqliteStore {
    async fn find_grant(&self, id: GrantId) -> Result<Option<Grant>> {
        self.db.read(move |c| one(c, "SELECT * FROM grants WHERE id = ?1", [id.to_string()], grant_from)).await
    }

    async fn list_session_grants(&self, session_id: SessionId) -> Result<Vec<Grant>> {
        let sql = "SELECT * FROM grants WHERE session_id = ?1 AND revoked_at IS NULL ORDER BY created_at";
        self.db.read(move |c| all(c, sql, [session_id.to_string()], grant_from)).await
    }

    async fn list_user_grants(&self, user_id: UserId) -> Result<Vec<Grant>> {
        let sql = "SELECT * FROM grants WHERE user_id = ?1 AND revoked_at IS NULL ORDER BY created_at DESC, id";
        self.db.read(move |c| all(c, sql, [user_id.to_string()], grant_from)).await
    }

    async fn revoke_grant(&self, id: GrantId, now: OffsetDateTime) -> Result<bool> {
        let revoked = self
            .db
            .write("grant", move |tx| {
                let sql = "UPDATE grants SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL";
                Ok(run(tx, sql, params![id.to_string(), secs(now)])? > 0)
            })
            .await?;
        if let Some(memory) = self.memory() {
            memory.grants_revoked([id]);
        }
        Ok(revoked)
    }

    async fn revoke_access_token(&self, jti: &str, expires_at: OffsetDateTime, now: OffsetDateTime) -> Result<()> {
        let jti = jti.to_owned();
        let jti = self
            .db
            .write("revoked token", move |tx| {
                run(
                    tx,
                    "INSERT INTO revoked_access_tokens (jti, expires_at, revoked_at) VALUES (?1, ?2, ?3) \
                     ON CONFLICT DO NOTHING",
                    params![jti, secs(expires_at), secs(now)],
                )?;
                Ok(jti)
            })
            .await?;
        if let Some(memory) = self.memory() {
            memory.token_revoked(&jti);
        }
        Ok(())
    }

    async fn access_token_state(&self, grant_id: GrantId, jti: &str) -> Result<AccessTokenState> {
        let asked = jti.to_owned();
        NodeMemory::access_token_state_or(self.memory(), grant_id, jti, async {
            self.db
                .read(move |c| {
                    let state = one(
                        c,
                        "SELECT EXISTS (SELECT 1 FROM grants WHERE id = ?1 AND revoked_at IS NULL) AS grant_live, \
                         EXISTS (SELECT 1 FROM revoked_access_tokens WHERE jti = ?2) AS token_revoked",
                        params![grant_id.to_string(), asked],
                        |row| {
                            Ok(AccessTokenState {
                                grant_revoked: !row.get::<_, bool>("grant_live")?,
                                token_revoked: row.get("token_revoked")?,
                            })
                        },
                    )?;
                    state.ok_or_else(|| damaged("the access token state query answered no row"))
                })
                .await
        })
        .await
    }
}

#[async_trait]
impl RefreshTokenRepository for SqliteStore {
    async fn find_refresh_token(&self, token_hash: &RefreshTokenHash) -> Result<Option<StoredRefreshToken>> {
        let token_hash = token_hash.as_str().to_owned();
        self.db
            .read(move |c| {
                one(c, &FIND_REFRESH_TOKEN, [token_hash], |row| {
                    let grant = grant_from(row)?;
                    Ok(StoredRefreshToken {
                        token: RefreshToken {
                            token_hash: row.get::<_, String>("token_hash")?.into(),
                            grant_id: grant.id,
                            created_at: row.time("token_created_at")?,
                            expires_at: row.time("token_expires_at")?,
                        },
                        spent: row.get("token_spent")?,
                        user: owner_from(row)?,
                        grant,
                    })
                })
            })
            .await
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
        let grant_id = successor.grant_id;
        let (old_hash, successor, audit, assertion) =
            (old_hash.as_str().to_owned(), successor.clone(), audit.clone(), assertion.cloned());
        let rotation = self
            .db
            .write("refresh token", move |tx| {
                if !remember_assertion(tx, assertion.as_ref(), now)? {
                    return Ok(Rotation::AssertionReplayed);
                }
                let spent = run(
                    tx,
                    "UPDATE refresh_tokens SET used_at = ?2 WHERE token_hash = ?1 AND used_at IS NULL \
                     AND EXISTS (SELECT 1 FROM grants WHERE id = ?3 AND revoked_at IS NULL)",
                    params![old_hash, secs(now), successor.grant_id.to_string()],
                )?;
                if spent == 0 {
                    // Nothing changed: a token still unspent means its grant
                    // was revoked.
                    let sql = "SELECT 1 FROM refresh_tokens WHERE token_hash = ?1 AND used_at IS NULL";
                    let unspent = one(tx, sql, [old_hash], |_| Ok(()))?.is_some();
                    return Ok(if unspent { Rotation::GrantRevoked } else { Rotation::Replay });
                }
                insert_refresh(tx, &successor)?;
                insert_audit(tx, &audit)?;
                Ok(Rotation::Rotated)
            })
            .await?;
        if rotation == Rotation::Rotated {
            self.made_live(grant_id, generation);
        }
        Ok(rotation)
    }

    async fn spend_refresh_token(&self, token_hash: &RefreshTokenHash, now: OffsetDateTime) -> Result<()> {
        let token_hash = token_hash.as_str().to_owned();
        self.db
            .write("refresh token", move |tx| {
                let sql = "UPDATE refresh_tokens SET used_at = COALESCE(used_at, ?2) WHERE token_hash = ?1";
                run(tx, sql, params![token_hash, secs(now)])?;
                Ok(())
            })
            .await
    }
}

/// Remembers a client assertion's `jti` in the write's transaction;
/// whether it was new (always, without one). The rule of
/// `remember_client_assertion`: an expired assertion's row is taken over.
fn remember_assertion(tx: &Connection, assertion: Option<&AssertionJti>, now: OffsetDateTime) -> Res<bool> {
    let Some(assertion) = assertion else { return Ok(true) };
    Ok(run(
        tx,
        crate::clients::REMEMBER_ASSERTION,
        params![assertion.client_id.as_str(), assertion.jti, secs(assertion.expires_at), secs(now)],
    )? == 1)
}

impl SqliteStore {
    /// A write that made `grant` live (a redemption, a rotation) committed:
    /// this node answers its tokens from memory from now on.
    fn made_live(&self, grant: GrantId, generation: Option<u64>) {
        if let (Some(memory), Some(generation)) = (self.memory(), generation) {
            memory.grant_live(grant, generation);
        }
    }
}
