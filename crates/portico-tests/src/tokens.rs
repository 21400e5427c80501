//! Clients, users and tokens made for a test: through the token
//! endpoint, registration and the admin API, or straight by the server's
//! own code.

use std::sync::Arc;

use serde::Deserialize;

use crate::{ADMIN_TOKEN, Pkce, TestApp, demo};

impl TestApp {
    /// The discovery document (`/.well-known/openid-configuration`).
    ///
    /// # Panics
    /// When it cannot be read as JSON.
    pub async fn discovery(&self) -> serde_json::Value {
        let response = self.http().get(self.url("/.well-known/openid-configuration")).send().await;
        response.expect("discovery").json().await.expect("a JSON document")
    }

    /// Registers a client at `/oauth2/register` (RFC 7591) with `metadata`,
    /// bearing `token` (an initial access token) when given: the status
    /// and the answer (`null` when it is not JSON).
    ///
    /// # Panics
    /// When the request cannot be sent.
    pub async fn register(&self, token: Option<&str>, metadata: &serde_json::Value) -> (u16, serde_json::Value) {
        let mut request = self.http().post(self.url("/oauth2/register")).json(metadata);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.expect("register");
        (response.status().as_u16(), response.json().await.unwrap_or(serde_json::Value::Null))
    }

    /// Registers a client through the admin API (`POST /admin/v1/clients`)
    /// with `body`: the answer.
    ///
    /// # Panics
    /// When the request cannot be sent.
    pub async fn admin_create_client(&self, body: &serde_json::Value) -> reqwest::Response {
        let request = self.http().post(self.url("/admin/v1/clients")).bearer_auth(ADMIN_TOKEN).json(body);
        request.send().await.expect("create a client")
    }

    /// A refresh at the token endpoint authenticated by a client assertion
    /// alone (`private_key_jwt`, `client_secret_jwt`; RFC 7523 §2.2).
    ///
    /// # Panics
    /// When the request cannot be sent.
    pub async fn refresh_by_assertion(&self, refresh_token: &str, assertion: &str) -> reqwest::Response {
        let form = [
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"),
            ("client_assertion", assertion),
        ];
        self.http().post(self.url("/oauth2/token")).form(&form).send().await.expect("token request")
    }

    /// The demo client's introspection (RFC 7662) of `token`, as JSON.
    ///
    /// # Panics
    /// When the request fails or the answer is not JSON.
    pub async fn introspect_as_demo(&self, token: &str) -> serde_json::Value {
        let request = self.http().post(self.url("/oauth2/introspect"));
        let request = request.basic_auth(demo::CLIENT_ID, Some(demo::CLIENT_SECRET)).form(&[("token", token)]);
        request.send().await.expect("introspect").json().await.expect("a JSON answer")
    }

    /// Posts a form to the token endpoint as the demo client (`client_secret_post`).
    pub async fn token_request(&self, form: &[(&str, &str)]) -> reqwest::Response {
        let mut body: Vec<(&str, &str)> = vec![("client_id", demo::CLIENT_ID), ("client_secret", demo::CLIENT_SECRET)];
        body.extend_from_slice(form);
        self.http().post(self.url("/oauth2/token")).form(&body).send().await.expect("token request")
    }

    /// The admin service the `portico` command line uses, over this app's
    /// store, with the key holders (HSM, signing program) of its settings.
    pub fn admin_service(&self) -> portico_admin::AdminService {
        let secret = portico_server::secret::InstanceSecret::load(&self.config).expect("the instance secret");
        portico_admin::AdminService::new(Arc::clone(&self.store), self.clock.clone(), secret.sealer())
            .with_key_holders(self.config.tokens.key_holders().expect("the key holders of the settings"))
    }

    /// The active signing key of `alg`: its `kid` and where it is held.
    pub async fn active_signing_key(
        &self,
        alg: portico_model::key::Algorithm,
    ) -> (String, portico_tokens::KeyLocation) {
        let secret = portico_server::secret::InstanceSecret::load(&self.config).expect("the instance secret");
        let records = self.store.list_signing_keys().await.expect("the signing keys");
        let record = records.iter().find(|r| r.alg == alg.as_str() && r.retired_at.is_none()).expect("an active key");
        (record.kid.clone(), portico_tokens::key_location(&secret.sealer(), record).expect("a readable key"))
    }

    /// The whole flow for `login`, up to a successful code exchange.
    ///
    /// # Panics
    /// When any step fails.
    pub async fn tokens_for(&self, login: &str, password: &str) -> TokenResponse {
        let pkce = Pkce::new();
        let code = self.login_for_code(&self.browser(), &pkce, login, password).await;
        let response = self.exchange(&code, &pkce.verifier).await;
        assert_eq!(response.status(), 200);
        response.json().await.expect("TokenResponseDTO")
    }

    /// Exchanges the demo client's `code` with its PKCE `verifier`.
    pub async fn exchange(&self, code: &str, verifier: &str) -> reqwest::Response {
        self.token_request(&[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("code_verifier", verifier),
            ("redirect_uri", &self.redirect_uri()),
        ])
        .await
    }

    /// Registers another client that may use scope `openid`.
    ///
    /// # Panics
    /// When storage fails.
    pub async fn add_client(&self, client_id: &str, secret: &str) {
        self.add_client_with(client_id, secret, |_| {}).await;
    }

    /// Registers another client as [`TestApp::add_client`] does, changed by
    /// `change` first (its redirect URIs are `https://other.example/cb`).
    ///
    /// # Panics
    /// When storage fails.
    pub async fn add_client_with(
        &self,
        client_id: &str,
        secret: &str,
        change: impl FnOnce(&mut portico_model::client::Client),
    ) {
        use portico_model::clock::Clock as _;
        let mut client = portico_model::client::Client {
            client_id: client_id.into(),
            secret_hash: portico_crypto::hash::client_secret_hash(secret),
            name: portico_model::client::LocalizedText::same(client_id),
            redirect_uris: vec!["https://other.example/cb".into()],
            scopes: vec!["openid".into()],
            require_consent: false,
            post_logout_redirect_uris: vec!["https://other.example/bye".into()],
            logout_revokes_grants: false,
            backchannel_logout_uri: None,
            security: Default::default(),
            secret_sealed: None,
            registration_token_hash: None,
            awaiting_approval: false,
            created_at: self.clock.now(),
            revision: 0,
        };
        change(&mut client);
        self.store.create_client(&client).await.expect("create a client");
    }

    /// An access token and id_token for `login`, issued by the server's own
    /// token code along a new grant of the demo client (as a code exchange
    /// would), without the browser login.
    ///
    /// # Panics
    /// When the user is unknown or storage fails.
    pub async fn token_pair(&self, login: &str) -> TokenPair {
        self.token_pair_for(login, demo::CLIENT_ID).await
    }

    /// As [`TestApp::token_pair`], for the client `client_id` (which must
    /// exist).
    ///
    /// # Panics
    /// When the user is unknown or storage fails.
    pub async fn token_pair_for(&self, login: &str, client_id: &str) -> TokenPair {
        self.token_pair_bound(login, client_id, portico_identity::tokens::Binding::default()).await
    }

    /// As [`TestApp::token_pair_for`], its access token bound as `bound`
    /// says (to a DPoP key or a client certificate).
    ///
    /// # Panics
    /// When the user is unknown or storage fails.
    pub async fn token_pair_bound(
        &self,
        login: &str,
        client_id: &str,
        bound: portico_identity::tokens::Binding<'_>,
    ) -> TokenPair {
        use portico_model::audit::{AuditEvent, AuditKind};
        use portico_model::clock::Clock as _;
        let user = self.store.find_user_by_login(login).await.expect("store").expect("the user exists");
        let now = self.clock.now();
        let code_hash =
            portico_model::ids::CodeHash::new(portico_crypto::hash::token_hash(&portico_crypto::random::token()));
        self.store
            .insert_code(&portico_model::oauth::AuthorizationCode {
                code_hash: code_hash.clone(),
                client_id: client_id.into(),
                user_id: user.id,
                redirect_uri: self.redirect_uri(),
                scope: demo::SCOPE.into(),
                code_challenge: Pkce::new().challenge,
                nonce: None,
                auth_time: now,
                created_at: now,
                expires_at: now + time::Duration::minutes(5),
                grant_id: None,
                amr: vec!["pwd".into()],
                session_id: None,
                dpop_jkt: None,
            })
            .await
            .expect("insert a code");
        let grant = portico_model::oauth::Grant {
            id: portico_model::ids::GrantId::now_v7(),
            client_id: client_id.into(),
            user_id: user.id,
            scope: demo::SCOPE.into(),
            auth_time: now,
            created_at: now,
            revoked_at: None,
            amr: vec!["pwd".into()],
            session_id: None,
        };
        let refresh = portico_identity::tokens::NewRefreshToken::generate(grant.id, now, time::Duration::days(1));
        let event = AuditEvent::new(now, AuditKind::TokenIssued).user(user.id);
        self.store.redeem_code(&code_hash, now, &grant, &refresh.row, &event).await.expect("redeem");
        let client = self.store.find_client(&client_id.into()).await.expect("read the client").expect("the client");
        let keys = self.identity.issue_keys(&client).await.expect("the signing keys");
        let tokens = self
            .identity
            .issue_tokens(
                &keys,
                &grant,
                &user,
                portico_identity::tokens::Issue { scope: demo::SCOPE, nonce: None, bound },
                &refresh,
            )
            .expect("the tokens are signed");
        TokenPair {
            user_id: user.id.as_uuid(),
            access_token: tokens.access_token,
            id_token: tokens.id_token.expect("an id_token"),
            refresh_token: tokens.refresh_token.expect("a refresh token"),
        }
    }

    /// Adds a user who cannot log in with a password (tokens come from
    /// [`TestApp::token_pair`]).
    ///
    /// # Panics
    /// When storage fails.
    pub async fn add_user(&self, login: &str) -> uuid::Uuid {
        use portico_model::clock::Clock as _;
        let id = uuid::Uuid::new_v4();
        self.store
            .create_user(&portico_model::user::User {
                id: id.into(),
                login: login.into(),
                password_hash: "$argon2id$unusable".into(),
                phone: None,
                email: None,
                name: None,
                phone_login_enabled: false,
                blocked: false,
                deactivated: false,
                created_at: self.clock.now(),
                provisioned: None,
                revision: 0,
            })
            .await
            .expect("create a user");
        id
    }

    /// Applies a permission document through the admin API.
    ///
    /// # Panics
    /// When the request fails to send.
    pub async fn apply_permissions(&self, doc: &serde_json::Value) -> reqwest::Response {
        self.http()
            .post(self.url("/admin/v1/permissions"))
            .bearer_auth(ADMIN_TOKEN)
            .json(doc)
            .send()
            .await
            .expect("admin request")
    }

    /// The whole permission model as the admin API exports it
    /// (`GET /admin/v1/permissions`).
    ///
    /// # Panics
    /// When the request fails or is not answered 200.
    pub async fn permission_model(&self) -> serde_json::Value {
        let response = self
            .http()
            .get(self.url("/admin/v1/permissions"))
            .bearer_auth(ADMIN_TOKEN)
            .send()
            .await
            .expect("admin request");
        assert_eq!(response.status(), 200, "the permission model");
        response.json().await.expect("the model as JSON")
    }

    /// Liveness status of an access token.
    pub async fn liveness(&self, access_token: &str) -> u16 {
        self.http()
            .get(self.url("/oauth2/token/liveness"))
            .bearer_auth(access_token)
            .send()
            .await
            .expect("liveness")
            .status()
            .as_u16()
    }
}

/// The tokens a business API call carries, and whose they are.
#[derive(Debug, Clone)]
pub struct TokenPair {
    pub user_id: uuid::Uuid,
    pub access_token: String,
    pub id_token: String,
    pub refresh_token: String,
}

impl TokenPair {
    /// `Authorization`, `Id-Token` and `x-system-id` on `request`.
    pub fn on(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        request
            .header("authorization", format!("Bearer {}", self.access_token))
            .header("id-token", &self.id_token)
            .header("x-system-id", "test-system")
    }
}

/// `TokenResponseDTO` as a client reads it.
#[derive(Debug, Clone, Deserialize)]
pub struct TokenResponse {
    pub access_token: String,
    pub token_type: String,
    pub expires_in: i64,
    pub scope: Option<String>,
    pub refresh_token: Option<String>,
    pub id_token: Option<String>,
    pub refresh_expires_at: Option<i64>,
}
