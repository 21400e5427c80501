//! Authorization codes, grants and refresh tokens.

use crate::Result;
use async_trait::async_trait;
use portico_model::audit::AuditEvent;
use portico_model::ids::{ClientId, CodeHash, GrantId, RefreshTokenHash, SessionId, UserId};
use portico_model::login::PendingAuthorization;
use portico_model::oauth::{
    AccessTokenState, AssertionJti, AuthorizationCode, Grant, PushedRequest, Redemption, RefreshToken, Rotation,
    StoredCode, StoredRefreshToken,
};
use time::OffsetDateTime;

#[async_trait]
pub trait AuthorizationCodeRepository: Send + Sync {
    /// # Errors
    /// Only when the store fails.
    async fn insert_code(&self, code: &AuthorizationCode) -> Result<()>;
    /// Stores `code` and, in the same atomic write, takes the pushed
    /// authorization request with the hash `request_hash` that the code
    /// answers, as [`crate::LoginProcessRepository::create_login_process_taking`]
    /// does (the code's client, not expired at its `created_at`): `false`,
    /// and nothing stored, when the request is no longer there.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn insert_code_taking(&self, code: &AuthorizationCode, request_hash: &str) -> Result<bool>;
    /// Stores `code` and deletes the login process `ends` (the one whose
    /// outcome the code carries), in one atomic write.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn insert_code_ending_login(
        &self,
        code: &AuthorizationCode,
        ends: portico_model::ids::LoginProcessId,
    ) -> Result<()>;
    /// The code with this hash, spent or not.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_code(&self, code_hash: &CodeHash) -> Result<Option<StoredCode>>;
    /// Redeems a code, atomically and in one transaction: spends it, stores
    /// `grant` and its first refresh token, links the grant to the code and
    /// records `audit`. Of parallel calls exactly one gets
    /// [`Redemption::Redeemed`]; the others store nothing and get
    /// [`Redemption::Replay`] (the code is then marked replayed).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn redeem_code(
        &self,
        code_hash: &CodeHash,
        now: OffsetDateTime,
        grant: &Grant,
        refresh: &RefreshToken,
        audit: &AuditEvent,
    ) -> Result<Redemption> {
        self.redeem_code_asserted(code_hash, now, grant, refresh, audit, None).await
    }
    /// [`Self::redeem_code`] for a request a client assertion authenticated:
    /// the same write also remembers the assertion's `jti` (as
    /// `remember_client_assertion` does), and when it was used before,
    /// changes nothing and answers [`Redemption::AssertionReplayed`]. A
    /// redemption that loses to another still remembers the `jti`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn redeem_code_asserted(
        &self,
        code_hash: &CodeHash,
        now: OffsetDateTime,
        grant: &Grant,
        refresh: &RefreshToken,
        audit: &AuditEvent,
        assertion: Option<&AssertionJti>,
    ) -> Result<Redemption>;
    /// Spends a code without redeeming it (a failed presentation), or marks
    /// a spent one replayed; returns it as stored now (naming the grant its
    /// redemption created, if any).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn spend_code(&self, code_hash: &CodeHash, now: OffsetDateTime) -> Result<Option<AuthorizationCode>>;
    /// Stores a pushed authorization request (RFC 9126).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn insert_pushed_request(&self, pushed: &PushedRequest) -> Result<()>;
    /// The pushed request with this hash when `client_id` pushed it and it
    /// has not expired at `now`, left where it is: the write that starts
    /// serving it takes it ([`Self::insert_code_taking`],
    /// [`crate::LoginProcessRepository::create_login_process_taking`]).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_pushed_request(
        &self,
        request_hash: &str,
        client_id: &ClientId,
        now: OffsetDateTime,
    ) -> Result<Option<PendingAuthorization>>;
    /// Takes (removes and returns) the pushed request with this hash when
    /// `client_id` pushed it and it has not expired at `now`: of parallel
    /// calls exactly one gets it. Another client's or an expired request
    /// is left as it is and `None` answered.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn take_pushed_request(
        &self,
        request_hash: &str,
        client_id: &ClientId,
        now: OffsetDateTime,
    ) -> Result<Option<PendingAuthorization>>;
}

#[async_trait]
pub trait GrantRepository: Send + Sync {
    /// # Errors
    /// Only when the store fails.
    async fn find_grant(&self, id: GrantId) -> Result<Option<Grant>>;
    /// The live (unrevoked) grants issued under a single sign-on session,
    /// oldest first.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn list_session_grants(&self, session_id: SessionId) -> Result<Vec<Grant>>;
    /// The live (not revoked) grants of a user, newest first.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn list_user_grants(&self, user_id: UserId) -> Result<Vec<Grant>>;
    /// Revokes a grant (and so every token issued along it). Returns whether
    /// a live grant was revoked.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn revoke_grant(&self, id: GrantId, now: OffsetDateTime) -> Result<bool>;
    /// Records the revocation of one access token until it would have expired.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn revoke_access_token(&self, jti: &str, expires_at: OffsetDateTime, now: OffsetDateTime) -> Result<()>;
    /// Revocation state of an access token issued along `grant_id`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn access_token_state(&self, grant_id: GrantId, jti: &str) -> Result<AccessTokenState>;
}

#[async_trait]
pub trait RefreshTokenRepository: Send + Sync {
    /// The refresh token with this hash, with its grant, spent or not.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn find_refresh_token(&self, token_hash: &RefreshTokenHash) -> Result<Option<StoredRefreshToken>>;
    /// Rotates a refresh token, atomically and in one transaction: spends
    /// `old_hash`, stores `successor` and records `audit`. Of parallel calls
    /// exactly one gets [`Rotation::Rotated`].
    ///
    /// # Errors
    /// Only when the store fails.
    async fn rotate_refresh_token(
        &self,
        old_hash: &RefreshTokenHash,
        now: OffsetDateTime,
        successor: &RefreshToken,
        audit: &AuditEvent,
    ) -> Result<Rotation> {
        self.rotate_refresh_token_asserted(old_hash, now, successor, audit, None).await
    }
    /// [`Self::rotate_refresh_token`] for a request a client assertion
    /// authenticated: the same write also remembers the assertion's `jti`,
    /// and when it was used before, changes nothing and answers
    /// [`Rotation::AssertionReplayed`]. A rotation that finds the token
    /// spent or its grant revoked still remembers the `jti`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn rotate_refresh_token_asserted(
        &self,
        old_hash: &RefreshTokenHash,
        now: OffsetDateTime,
        successor: &RefreshToken,
        audit: &AuditEvent,
        assertion: Option<&AssertionJti>,
    ) -> Result<Rotation>;
    /// Spends a refresh token without a successor (a failed presentation).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn spend_refresh_token(&self, token_hash: &RefreshTokenHash, now: OffsetDateTime) -> Result<()>;
}
