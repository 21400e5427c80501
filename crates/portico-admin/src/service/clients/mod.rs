//! Client applications: registration, changes, secret rotation, removal.
//!
//! Rules ([`rules`]): a client id of 1 to 64 of `A-Z a-z 0-9 - _ . :`; a secret of at
//! least 16 characters (secrets are stored with a fast hash, sound only for
//! high-entropy values; a generated one has 256 bits); redirect and
//! post-logout addresses as [`check_uri`] says; a back-channel logout
//! address under the guard of every address Portico sends to
//! ([`portico_model::address`]); scopes that Portico knows
//! (`openid profile email phone`, as discovery lists them); names
//! of at most 200 characters; authentication and signing choices as
//! [`check_security`] says.

mod rules;

use portico_api::Problem;
use portico_crypto::jwt::Algorithm;
use portico_model::audit::{Actor, AuditEvent, AuditKind};
use portico_model::client::{AssertionAlgorithm, AuthMethod, Client, ClientSecurity, LocalizedText, SecurityProfile};
use portico_model::ids::ClientId;
use portico_model::scope::OIDC_SCOPES;
use portico_storage::{IssuedAccessToken, KeyPage, StorageError, Update};
use rules::{
    check_backchannel_uri, check_name, check_profile_redirects, check_secret, check_uris, parse_scope, settle_profile,
};
pub use rules::{check_security, check_uri, is_loopback};

use super::{AdminService, Result, ServiceError, UPDATE_ATTEMPTS, check_revision};

/// A client to register.
#[derive(Debug, Clone, Default)]
pub struct NewClient {
    pub client_id: String,
    /// `None`: generate one (returned once).
    pub secret: Option<String>,
    pub redirect_uris: Vec<String>,
    /// Space-separated; default `openid profile email phone`.
    pub scope: Option<String>,
    /// Russian display name; default the client id.
    pub name_ru: Option<String>,
    /// English display name; default the Russian one.
    pub name_en: Option<String>,
    pub require_consent: bool,
    pub post_logout_redirect_uris: Vec<String>,
    pub logout_revokes_grants: bool,
    pub backchannel_logout_uri: Option<String>,
    /// Authentication method, keys and signing algorithms (its
    /// `security_profile` is set from the field below).
    pub security: ClientSecurity,
    /// `None`: the server's default for new clients
    /// (`registration.default_security_profile`).
    pub security_profile: Option<SecurityProfile>,
    /// The hash of the registration access token, for a client that
    /// registered itself.
    pub registration_token_hash: Option<String>,
    /// Held for an operator's approval (`registration.require_approval`).
    pub awaiting_approval: bool,
    /// The hash of the one-time initial access token a registration
    /// presented: spent in the write that stores the client, so that a
    /// registration refused or failing on the way leaves it unspent.
    pub spends_initial_access_token: Option<String>,
}

/// Changes to a client's authentication and signing; `None` leaves a
/// field as it is, `Some(None)` removes it.
#[derive(Debug, Clone, Default)]
pub struct SecurityChanges {
    pub token_endpoint_auth_method: Option<AuthMethod>,
    pub jwks: Option<Option<serde_json::Value>>,
    pub jwks_uri: Option<Option<String>>,
    pub token_endpoint_auth_signing_alg: Option<Option<AssertionAlgorithm>>,
    pub id_token_signed_response_alg: Option<Option<Algorithm>>,
    pub userinfo_signed_response_alg: Option<Option<Algorithm>>,
    pub access_token_signed_response_alg: Option<Option<Algorithm>>,
    pub introspection_signed_response_alg: Option<Option<Algorithm>>,
    pub authorization_signed_response_alg: Option<Option<Algorithm>>,
    /// The addresses of what registration names for the user to see
    /// (`logo_uri`, `client_uri`, `policy_uri`, `tos_uri`).
    pub logo_uri: Option<Option<String>>,
    pub client_uri: Option<Option<String>>,
    pub policy_uri: Option<Option<String>>,
    pub tos_uri: Option<Option<String>>,
    pub require_pushed_authorization_requests: Option<bool>,
    pub require_signed_request_object: Option<bool>,
    pub request_object_signing_alg: Option<Option<Algorithm>>,
    pub dpop_bound_access_tokens: Option<bool>,
    pub tls_client_certificate_bound_access_tokens: Option<bool>,
    pub tls_client_auth_subject_dn: Option<Option<String>>,
    pub tls_client_auth_san_dns: Option<Option<String>>,
    pub tls_client_auth_san_uri: Option<Option<String>>,
    pub tls_client_auth_san_ip: Option<Option<String>>,
    pub tls_client_auth_san_email: Option<Option<String>>,
    pub security_profile: Option<SecurityProfile>,
    /// `Some(None)`: the profile's default.
    pub refresh_token_rotation: Option<Option<bool>>,
}

impl From<ClientSecurity> for SecurityChanges {
    /// Every field replaced by `security`'s.
    fn from(security: ClientSecurity) -> Self {
        Self {
            token_endpoint_auth_method: Some(security.token_endpoint_auth_method),
            jwks: Some(security.jwks),
            jwks_uri: Some(security.jwks_uri),
            token_endpoint_auth_signing_alg: Some(security.token_endpoint_auth_signing_alg),
            id_token_signed_response_alg: Some(security.id_token_signed_response_alg),
            userinfo_signed_response_alg: Some(security.userinfo_signed_response_alg),
            access_token_signed_response_alg: Some(security.access_token_signed_response_alg),
            introspection_signed_response_alg: Some(security.introspection_signed_response_alg),
            authorization_signed_response_alg: Some(security.authorization_signed_response_alg),
            logo_uri: Some(security.logo_uri),
            client_uri: Some(security.client_uri),
            policy_uri: Some(security.policy_uri),
            tos_uri: Some(security.tos_uri),
            require_pushed_authorization_requests: Some(security.require_pushed_authorization_requests),
            require_signed_request_object: Some(security.require_signed_request_object),
            request_object_signing_alg: Some(security.request_object_signing_alg),
            dpop_bound_access_tokens: Some(security.dpop_bound_access_tokens),
            tls_client_certificate_bound_access_tokens: Some(security.tls_client_certificate_bound_access_tokens),
            tls_client_auth_subject_dn: Some(security.tls_client_auth_subject_dn),
            tls_client_auth_san_dns: Some(security.tls_client_auth_san_dns),
            tls_client_auth_san_uri: Some(security.tls_client_auth_san_uri),
            tls_client_auth_san_ip: Some(security.tls_client_auth_san_ip),
            tls_client_auth_san_email: Some(security.tls_client_auth_san_email),
            security_profile: Some(security.security_profile),
            refresh_token_rotation: Some(security.refresh_token_rotation),
        }
    }
}

impl SecurityChanges {
    /// The same changes, leaving the addresses only registration sets
    /// (the logo, home page, policy and terms) as they are: for the
    /// operators' forms and API, which do not show them.
    #[must_use]
    pub fn keeping_registered_pages(self) -> Self {
        Self { logo_uri: None, client_uri: None, policy_uri: None, tos_uri: None, ..self }
    }

    /// Applies the changes to `security`; answers the names of the fields changed.
    fn apply(self, security: &mut ClientSecurity) -> Vec<&'static str> {
        let mut changed = Vec::new();
        if let Some(method) = self.token_endpoint_auth_method {
            security.token_endpoint_auth_method = method;
            changed.push("tokenEndpointAuthMethod");
        }
        if let Some(jwks) = self.jwks {
            security.jwks = jwks;
            changed.push("jwks");
        }
        if let Some(uri) = self.jwks_uri {
            security.jwks_uri = uri;
            changed.push("jwksUri");
        }
        if let Some(alg) = self.token_endpoint_auth_signing_alg {
            security.token_endpoint_auth_signing_alg = alg;
            changed.push("tokenEndpointAuthSigningAlg");
        }
        for (change, field, name) in [
            (self.logo_uri, &mut security.logo_uri, "logoUri"),
            (self.client_uri, &mut security.client_uri, "clientUri"),
            (self.policy_uri, &mut security.policy_uri, "policyUri"),
            (self.tos_uri, &mut security.tos_uri, "tosUri"),
        ] {
            if let Some(uri) = change {
                *field = uri;
                changed.push(name);
            }
        }
        if let Some(profile) = self.security_profile {
            security.security_profile = profile;
            changed.push("securityProfile");
        }
        if let Some(rotation) = self.refresh_token_rotation {
            security.refresh_token_rotation = rotation;
            changed.push("refreshTokenRotation");
        }
        for (change, field, name) in [
            (
                self.require_pushed_authorization_requests,
                &mut security.require_pushed_authorization_requests,
                "requirePushedAuthorizationRequests",
            ),
            (
                self.require_signed_request_object,
                &mut security.require_signed_request_object,
                "requireSignedRequestObject",
            ),
            (self.dpop_bound_access_tokens, &mut security.dpop_bound_access_tokens, "dpopBoundAccessTokens"),
            (
                self.tls_client_certificate_bound_access_tokens,
                &mut security.tls_client_certificate_bound_access_tokens,
                "tlsClientCertificateBoundAccessTokens",
            ),
        ] {
            if let Some(rule) = change {
                *field = rule;
                changed.push(name);
            }
        }
        for (change, field, name) in [
            (self.id_token_signed_response_alg, &mut security.id_token_signed_response_alg, "idTokenSignedResponseAlg"),
            (
                self.userinfo_signed_response_alg,
                &mut security.userinfo_signed_response_alg,
                "userinfoSignedResponseAlg",
            ),
            (
                self.access_token_signed_response_alg,
                &mut security.access_token_signed_response_alg,
                "accessTokenSignedResponseAlg",
            ),
            (
                self.introspection_signed_response_alg,
                &mut security.introspection_signed_response_alg,
                "introspectionSignedResponseAlg",
            ),
            (
                self.authorization_signed_response_alg,
                &mut security.authorization_signed_response_alg,
                "authorizationSignedResponseAlg",
            ),
            (self.request_object_signing_alg, &mut security.request_object_signing_alg, "requestObjectSigningAlg"),
        ] {
            if let Some(alg) = change {
                *field = alg;
                changed.push(name);
            }
        }
        for (change, field, name) in [
            (self.tls_client_auth_subject_dn, &mut security.tls_client_auth_subject_dn, "tlsClientAuthSubjectDn"),
            (self.tls_client_auth_san_dns, &mut security.tls_client_auth_san_dns, "tlsClientAuthSanDns"),
            (self.tls_client_auth_san_uri, &mut security.tls_client_auth_san_uri, "tlsClientAuthSanUri"),
            (self.tls_client_auth_san_ip, &mut security.tls_client_auth_san_ip, "tlsClientAuthSanIp"),
            (self.tls_client_auth_san_email, &mut security.tls_client_auth_san_email, "tlsClientAuthSanEmail"),
        ] {
            if let Some(value) = change {
                *field = value;
                changed.push(name);
            }
        }
        changed
    }
}

/// Changes to a client; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct ClientChanges {
    pub redirect_uris: Option<Vec<String>>,
    pub scope: Option<String>,
    pub name_ru: Option<String>,
    pub name_en: Option<String>,
    pub require_consent: Option<bool>,
    pub post_logout_redirect_uris: Option<Vec<String>>,
    pub logout_revokes_grants: Option<bool>,
    /// `Some(None)` removes it.
    pub backchannel_logout_uri: Option<Option<String>>,
    pub security: SecurityChanges,
    /// Make the changes only if the stored client is at one of these
    /// revisions (`If-Match`, the revision a console form was read at);
    /// `None`: on whatever is stored.
    pub if_match: Option<Vec<u64>>,
}

/// Shortest and longest life of a one-time initial access token.
const MIN_INITIAL_TOKEN_TTL: time::Duration = time::Duration::minutes(1);
const MAX_INITIAL_TOKEN_TTL: time::Duration = time::Duration::days(30);

/// Shortest secret of a `client_secret_jwt` client: 256 bits for HS256
/// (RFC 7518 §3.2) as 43 Base64url characters, the length Portico generates.
const MIN_JWT_SECRET_LEN: usize = 43;

fn not_found(client_id: &str) -> ServiceError {
    ServiceError::NotFound("client_not_found", format!("there is no client {client_id}"))
}

impl AdminService {
    /// The clients of `page`, by id: only those held for approval
    /// (`awaiting_approval` `Some(true)`), only the others, or all (`None`).
    ///
    /// # Errors
    /// When the store fails.
    pub async fn list_clients(&self, page: KeyPage<'_>, awaiting_approval: Option<bool>) -> Result<Vec<Client>> {
        Ok(self.store.list_clients(page, awaiting_approval).await?)
    }

    /// Registrations held for an operator's approval, oldest first, at
    /// most `limit`.
    ///
    /// # Errors
    /// When the store fails.
    pub async fn held_clients(&self, limit: u32) -> Result<Vec<Client>> {
        Ok(self.store.held_clients(limit).await?)
    }

    /// # Errors
    /// `client_not_found`, or the store failed.
    pub async fn client(&self, client_id: &str) -> Result<Client> {
        self.store.find_client(&ClientId::new(client_id)).await?.ok_or_else(|| not_found(client_id))
    }

    /// Registers a client. Returns it, and the secret when it was generated
    /// for a method that uses one (a key or certificate client is given
    /// none: RFC 7591 §3.2.1, RFC 8705 §2).
    ///
    /// # Errors
    /// `Invalid` naming every problem; `client_exists`; `Forbidden` when
    /// the initial access token it spends is no longer good; the store
    /// failed.
    pub async fn create_client(&self, actor: &Actor, new: NewClient) -> Result<(Client, Option<String>)> {
        let mut problems = Vec::new();
        let id_ok = !new.client_id.is_empty()
            && new.client_id.len() <= 64
            && new.client_id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
        if !id_ok {
            problems.push(Problem::new("clientId", "1 to 64 of A-Z a-z 0-9 - _ . :"));
        }
        if let Some(secret) = &new.secret {
            check_secret(secret, &mut problems);
        }
        if new.redirect_uris.is_empty() {
            problems.push(Problem::new("redirectUris", "at least one redirect URI"));
        }
        check_uris("redirectUris", &new.redirect_uris, &mut problems);
        check_uris("postLogoutRedirectUris", &new.post_logout_redirect_uris, &mut problems);
        let insecure = self.allow_insecure_addresses;
        if let Some(Err(message)) = new.backchannel_logout_uri.as_deref().map(|u| check_backchannel_uri(u, insecure)) {
            problems.push(Problem::new("backchannelLogoutUri", message));
        }
        check_name("nameRu", new.name_ru.as_ref(), &mut problems);
        check_name("nameEn", new.name_en.as_ref(), &mut problems);
        let all = OIDC_SCOPES.join(" ");
        let scopes = parse_scope(new.scope.as_deref().unwrap_or(&all), &mut problems);
        let mut new = new;
        new.security.security_profile = new.security_profile.unwrap_or(self.default_security_profile);
        settle_profile(&mut new.security, self.signing_algorithm, &self.signing_algorithms);
        check_security(&new.security, &self.signing_algorithms, insecure, &mut problems);
        check_profile_redirects(&new.security, &new.redirect_uris, insecure, &mut problems);
        let jwt_secret = new.security.token_endpoint_auth_method == AuthMethod::ClientSecretJwt;
        if jwt_secret && new.secret.as_ref().is_some_and(|s| s.len() < MIN_JWT_SECRET_LEN) {
            problems.push(Problem::new(
                "secret",
                format!("a client_secret_jwt secret has at least {MIN_JWT_SECRET_LEN} characters (or leave it out to have one generated)"),
            ));
        }
        if !problems.is_empty() {
            return Err(ServiceError::Invalid(problems));
        }
        let (secret, generated) = match new.secret {
            Some(secret) => (secret, false),
            None => (portico_crypto::random::token(), true),
        };
        let secret_sealed = jwt_secret.then(|| portico_crypto::jose::seal_client_secret(&self.sealer, &secret));
        let name_ru = new.name_ru.unwrap_or_else(|| new.client_id.clone());
        let now = self.clock.now();
        let client = Client {
            client_id: ClientId::new(new.client_id),
            secret_hash: portico_crypto::hash::client_secret_hash(&secret),
            name: LocalizedText { en: new.name_en.unwrap_or_else(|| name_ru.clone()), ru: name_ru },
            redirect_uris: new.redirect_uris,
            scopes,
            require_consent: new.require_consent,
            post_logout_redirect_uris: new.post_logout_redirect_uris,
            logout_revokes_grants: new.logout_revokes_grants,
            backchannel_logout_uri: new.backchannel_logout_uri,
            security: new.security,
            secret_sealed,
            registration_token_hash: new.registration_token_hash,
            awaiting_approval: new.awaiting_approval,
            created_at: now,
            revision: 0,
        };
        let stored = match &new.spends_initial_access_token {
            Some(token_hash) => self.store.create_client_spending(&client, token_hash).await,
            None => self.store.create_client(&client).await.map(|()| true),
        };
        match stored {
            Ok(true) => {}
            Ok(false) => {
                return Err(ServiceError::Forbidden(
                    "the initial access token is not valid (or was used, or expired)".into(),
                ));
            }
            Err(StorageError::Conflict(_)) => {
                let message = format!("a client with the id {} already exists", client.client_id);
                return Err(ServiceError::Conflict("client_exists", message));
            }
            Err(e) => return Err(e.into()),
        }
        self.audit(actor, AuditEvent::new(now, AuditKind::ClientCreated).client(&client.client_id)).await;
        let answered = generated && client.security.token_endpoint_auth_method.uses_secret();
        Ok((client, answered.then_some(secret)))
    }

    /// Changes a client.
    ///
    /// # Errors
    /// `Invalid` naming every problem; `client_not_found`; `client_changed`
    /// when others kept changing it meanwhile; the store failed.
    pub async fn update_client(&self, actor: &Actor, client_id: &str, changes: ClientChanges) -> Result<Client> {
        let if_match = changes.if_match.clone();
        let (client, changed) = self
            .modify_client(client_id, if_match.as_deref(), |client| self.apply_changes(client, changes.clone()))
            .await?;
        let event = AuditEvent::new(self.clock.now(), AuditKind::ClientUpdated)
            .client(&client.client_id)
            .detail(serde_json::json!({ "changed": changed }));
        self.audit(actor, event).await;
        Ok(client)
    }

    /// Makes `changes` on `client`; answers the names of the fields changed.
    fn apply_changes(&self, client: &mut Client, changes: ClientChanges) -> Result<Vec<&'static str>> {
        let mut problems = Vec::new();
        let mut changed: Vec<&'static str> = Vec::new();
        if let Some(uris) = changes.redirect_uris {
            if uris.is_empty() {
                problems.push(Problem::new("redirectUris", "at least one redirect URI"));
            }
            check_uris("redirectUris", &uris, &mut problems);
            client.redirect_uris = uris;
            changed.push("redirectUris");
        }
        if let Some(uris) = changes.post_logout_redirect_uris {
            check_uris("postLogoutRedirectUris", &uris, &mut problems);
            client.post_logout_redirect_uris = uris;
            changed.push("postLogoutRedirectUris");
        }
        if let Some(uri) = changes.backchannel_logout_uri {
            let insecure = self.allow_insecure_addresses;
            if let Some(Err(message)) = uri.as_deref().map(|u| check_backchannel_uri(u, insecure)) {
                problems.push(Problem::new("backchannelLogoutUri", message));
            }
            client.backchannel_logout_uri = uri;
            changed.push("backchannelLogoutUri");
        }
        if let Some(scope) = changes.scope {
            client.scopes = parse_scope(&scope, &mut problems);
            changed.push("scope");
        }
        check_name("nameRu", changes.name_ru.as_ref(), &mut problems);
        check_name("nameEn", changes.name_en.as_ref(), &mut problems);
        if let Some(name) = changes.name_ru {
            client.name.ru = name;
            changed.push("nameRu");
        }
        if let Some(name) = changes.name_en {
            client.name.en = name;
            changed.push("nameEn");
        }
        if let Some(value) = changes.require_consent {
            client.require_consent = value;
            changed.push("requireConsent");
        }
        if let Some(value) = changes.logout_revokes_grants {
            client.logout_revokes_grants = value;
            changed.push("logoutRevokesGrants");
        }
        changed.extend(changes.security.apply(&mut client.security));
        settle_profile(&mut client.security, self.signing_algorithm, &self.signing_algorithms);
        check_security(&client.security, &self.signing_algorithms, self.allow_insecure_addresses, &mut problems);
        let insecure = self.allow_insecure_addresses;
        check_profile_redirects(&client.security, &client.redirect_uris, insecure, &mut problems);
        if client.security.token_endpoint_auth_method != AuthMethod::ClientSecretJwt {
            // Only a client_secret_jwt client's secret is kept readable.
            client.secret_sealed = None;
        }
        if !problems.is_empty() {
            return Err(ServiceError::Invalid(problems));
        }
        Ok(changed)
    }

    /// Reads the client, makes `change` on it and writes it back if nobody
    /// wrote it in between (its revision); a change that lost that race (to
    /// another node: this node's changes wait for each other) is made again
    /// on what is stored now, up to [`UPDATE_ATTEMPTS`] times. Two changes
    /// at once thus never undo each other.
    ///
    /// With `if_match`, a change is made only on one of those revisions,
    /// never again on another.
    async fn modify_client<T>(
        &self,
        client_id: &str,
        if_match: Option<&[u64]>,
        mut change: impl FnMut(&mut Client) -> Result<T>,
    ) -> Result<(Client, T)> {
        let _one_at_a_time = self.client_writes.lock().await;
        for _ in 0..UPDATE_ATTEMPTS {
            let mut client = self.client(client_id).await?;
            check_revision(&format!("the client {client_id}"), if_match, client.revision)?;
            let made = change(&mut client)?;
            match self.store.update_client(&client).await? {
                Update::Updated => {
                    client.revision += 1;
                    return Ok((client, made));
                }
                Update::Missing => return Err(not_found(client_id)),
                Update::Outdated => {}
            }
        }
        Err(ServiceError::Conflict(
            "client_changed",
            format!("the client {client_id} kept being changed by others meanwhile: read it again and retry"),
        ))
    }

    /// Gives a client a new secret (the given one, or a generated one); the
    /// old one stops working at once. Returns the new secret.
    ///
    /// # Errors
    /// `Invalid` for a short secret; `client_not_found`; the store failed.
    pub async fn rotate_client_secret(&self, actor: &Actor, client_id: &str, secret: Option<String>) -> Result<String> {
        if let Some(secret) = &secret {
            let mut problems = Vec::new();
            check_secret(secret, &mut problems);
            if !problems.is_empty() {
                return Err(ServiceError::Invalid(problems));
            }
        }
        let (client, secret) = self
            .modify_client(client_id, None, |client| {
                let jwt_secret = client.security.token_endpoint_auth_method == AuthMethod::ClientSecretJwt;
                if jwt_secret && secret.as_ref().is_some_and(|s| s.len() < MIN_JWT_SECRET_LEN) {
                    let message = format!("a client_secret_jwt secret has at least {MIN_JWT_SECRET_LEN} characters");
                    return Err(ServiceError::Invalid(vec![Problem::new("secret", message)]));
                }
                let secret = secret.clone().unwrap_or_else(portico_crypto::random::token);
                client.secret_hash = portico_crypto::hash::client_secret_hash(&secret);
                client.secret_sealed =
                    jwt_secret.then(|| portico_crypto::jose::seal_client_secret(&self.sealer, &secret));
                Ok(secret)
            })
            .await?;
        let event = AuditEvent::new(self.clock.now(), AuditKind::ClientSecretRotated).client(&client.client_id);
        self.audit(actor, event).await;
        Ok(secret)
    }

    /// Issues a one-time initial access token for dynamic client
    /// registration, good for one registration within `ttl` (a minute to 30
    /// days). Returns the token (shown once; only its hash is kept) and
    /// when it expires.
    ///
    /// # Errors
    /// `Invalid` for a lifetime out of range; the store failed.
    pub async fn issue_initial_access_token(
        &self,
        actor: &Actor,
        ttl: time::Duration,
    ) -> Result<(String, IssuedAccessToken)> {
        if ttl < MIN_INITIAL_TOKEN_TTL || ttl > MAX_INITIAL_TOKEN_TTL {
            let message = "a minute to 30 days (60 to 2592000 seconds)";
            return Err(ServiceError::Invalid(vec![Problem::new("expiresInSecs", message)]));
        }
        let token = portico_crypto::random::token();
        let now = self.clock.now();
        let expires_at = now + ttl;
        let hash = portico_crypto::hash::token_hash(&token);
        self.store.insert_initial_access_token(&hash, now, expires_at).await?;
        let issued = IssuedAccessToken { id: IssuedAccessToken::id_of(&hash), created_at: now, expires_at };
        let event = AuditEvent::new(now, AuditKind::RegistrationTokenIssued)
            .detail(serde_json::json!({ "id": issued.id, "expires_at": expires_at.unix_timestamp() }));
        self.audit(actor, event).await;
        Ok((token, issued))
    }

    /// The one-time initial access tokens neither spent nor expired, oldest
    /// first (never the tokens).
    ///
    /// # Errors
    /// When the store fails.
    pub async fn registration_tokens(&self) -> Result<Vec<IssuedAccessToken>> {
        Ok(self.store.unspent_initial_access_tokens(self.clock.now()).await?)
    }

    /// Withdraws an unspent one-time initial access token (one handed to a
    /// party that should not register after all, or exposed): it registers
    /// nothing from now on, on every node.
    ///
    /// # Errors
    /// `registration_token_not_found` when no unspent token has this id;
    /// the store failed.
    pub async fn withdraw_registration_token(&self, actor: &Actor, id: &str) -> Result<()> {
        let well_formed =
            id.len() == IssuedAccessToken::ID_LEN && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !well_formed || !self.store.withdraw_initial_access_token(id).await? {
            return Err(ServiceError::NotFound(
                "registration_token_not_found",
                format!("there is no unspent registration token {id}"),
            ));
        }
        tracing::info!(id, %actor, "registration token withdrawn");
        let event = AuditEvent::new(self.clock.now(), AuditKind::RegistrationTokenWithdrawn)
            .detail(serde_json::json!({ "id": id }));
        self.audit(actor, event).await;
        Ok(())
    }

    /// Approves a registration held for an operator
    /// (`registration.require_approval`): from now on the client
    /// authenticates and starts logins.
    ///
    /// # Errors
    /// `client_not_found`; `not_awaiting_approval` for a client that is
    /// not held; the store failed.
    pub async fn approve_client(&self, actor: &Actor, client_id: &str) -> Result<Client> {
        let (client, ()) = self
            .modify_client(client_id, None, |client| {
                if !client.awaiting_approval {
                    return Err(ServiceError::Conflict(
                        "not_awaiting_approval",
                        format!("the client {client_id} is not awaiting approval"),
                    ));
                }
                client.awaiting_approval = false;
                Ok(())
            })
            .await?;
        tracing::info!(client_id, %actor, "client registration approved");
        self.audit(actor, AuditEvent::new(self.clock.now(), AuditKind::ClientApproved).client(&client.client_id)).await;
        Ok(client)
    }

    /// Removes a client and everything issued to it.
    ///
    /// # Errors
    /// `client_not_found`; the store failed.
    pub async fn delete_client(&self, actor: &Actor, client_id: &str) -> Result<()> {
        let id = ClientId::new(client_id);
        if !self.store.delete_client(&id).await? {
            return Err(not_found(client_id));
        }
        self.audit(actor, AuditEvent::new(self.clock.now(), AuditKind::ClientDeleted).client(&id)).await;
        Ok(())
    }
}
