//! Admin commands. They work on the configured database directly, so they
//! work while servers run on it, and servers see the change on their next
//! request (nothing of this is cached across requests).

use clap::Subcommand;
use portico_model::audit::{AuditEvent, AuditKind};
use portico_model::client::{Client, LocalizedText};
use portico_model::clock::{Clock, SystemClock};
use portico_model::ids::{ClientId, UserId};
use portico_model::scope::ScopeSet;
use portico_model::user::User;
use portico_server::Config;
use portico_server::secret::InstanceSecret;
use portico_storage::StorageError;

/// Shortest client secret accepted: client secrets are stored with a fast
/// hash, which is sound only for high-entropy values.
const MIN_SECRET_LEN: usize = 16;

#[derive(Subcommand)]
pub enum ClientCommand {
    /// Register a client application.
    Add {
        #[arg(long)]
        client_id: String,
        /// The client secret (at least 16 characters); generated and printed when omitted.
        #[arg(long)]
        secret: Option<String>,
        /// A redirect URI (exact match); repeat for several.
        #[arg(long = "redirect-uri", required = true)]
        redirect_uris: Vec<String>,
        /// Allowed scopes, space-separated.
        #[arg(long, default_value = "openid profile email phone")]
        scope: String,
        /// Display name (both languages unless --name-en is given).
        #[arg(long)]
        name: Option<String>,
        /// English display name.
        #[arg(long)]
        name_en: Option<String>,
        /// Ask users for consent before issuing codes to this client.
        #[arg(long)]
        require_consent: bool,
        /// Where RP-initiated logout may send the browser back (exact match); repeat for several.
        #[arg(long = "post-logout-redirect-uri")]
        post_logout_redirect_uris: Vec<String>,
        /// Ending a user's session (logout, an operator) revokes this client's grants issued under it.
        #[arg(long)]
        logout_revokes_grants: bool,
        /// Where back-channel logout tokens are posted when a session the client is signed in under ends.
        #[arg(long)]
        backchannel_logout_uri: Option<String>,
    },
    /// List client applications.
    List,
    /// Remove a client application and everything issued to it.
    Remove {
        #[arg(long)]
        client_id: String,
    },
}

#[derive(Subcommand)]
pub enum UserCommand {
    /// Create a user.
    Add {
        #[arg(long)]
        login: String,
        #[arg(long)]
        password: String,
        /// Phone number in E.164 form, e.g. +79001234567.
        #[arg(long)]
        phone: Option<String>,
        #[arg(long)]
        email: Option<String>,
        /// Full name.
        #[arg(long)]
        name: Option<String>,
    },
    /// List users.
    List,
    /// Block a user: no new logins, and every token and session of the user dies at once.
    Block {
        #[arg(long)]
        login: String,
    },
    /// Unblock a user.
    Unblock {
        #[arg(long)]
        login: String,
    },
}

#[derive(Subcommand)]
pub enum KeyCommand {
    /// Make a new signing key active; the old one stays published until its tokens expire.
    Rotate,
    /// List signing keys.
    List,
}

pub async fn clients(config: &Config, command: ClientCommand) -> anyhow::Result<()> {
    let store = portico_server::app::open_store(config).await?;
    match command {
        ClientCommand::Add {
            client_id,
            secret,
            redirect_uris,
            scope,
            name,
            name_en,
            require_consent,
            post_logout_redirect_uris,
            logout_revokes_grants,
            backchannel_logout_uri,
        } => {
            if client_id.trim().is_empty() {
                anyhow::bail!("--client-id must not be empty");
            }
            for uri in &redirect_uris {
                check_redirect_uri("--redirect-uri", uri)?;
            }
            for uri in &post_logout_redirect_uris {
                check_redirect_uri("--post-logout-redirect-uri", uri)?;
            }
            if let Some(uri) = &backchannel_logout_uri {
                check_redirect_uri("--backchannel-logout-uri", uri)?;
            }
            let scopes = ScopeSet::parse(&scope).map_err(|e| anyhow::anyhow!("--scope: {e}"))?;
            let (secret, generated) = match secret {
                Some(secret) if secret.len() < MIN_SECRET_LEN => {
                    anyhow::bail!("--secret must be at least {MIN_SECRET_LEN} characters (or omit it to generate one)")
                }
                Some(secret) => (secret, false),
                None => (portico_crypto::random::token(), true),
            };
            let name_ru = name.unwrap_or_else(|| client_id.clone());
            let client = Client {
                client_id: ClientId::new(client_id.clone()),
                secret_hash: portico_crypto::hash::client_secret_hash(&secret),
                name: LocalizedText { en: name_en.unwrap_or_else(|| name_ru.clone()), ru: name_ru },
                redirect_uris,
                scopes: scopes.iter().map(str::to_owned).collect(),
                require_consent,
                post_logout_redirect_uris,
                logout_revokes_grants,
                backchannel_logout_uri,
                created_at: SystemClock.now(),
            };
            store.create_client(&client).await.map_err(|e| conflict(e, "a client with this --client-id"))?;
            println!("client {client_id} added");
            if generated {
                println!("client secret (shown once, store it now): {secret}");
            }
        }
        ClientCommand::List => {
            for client in store.list_clients().await? {
                let mut line = format!(
                    "{}\t{}\tscopes: {}\tredirect: {}",
                    client.client_id,
                    client.name.en,
                    client.scopes.join(" "),
                    client.redirect_uris.join(", ")
                );
                if !client.post_logout_redirect_uris.is_empty() {
                    line.push_str(&format!("\tafter logout: {}", client.post_logout_redirect_uris.join(", ")));
                }
                if client.require_consent {
                    line.push_str("\tconsent required");
                }
                if client.logout_revokes_grants {
                    line.push_str("\tlogout revokes grants");
                }
                if let Some(uri) = &client.backchannel_logout_uri {
                    line.push_str(&format!("\tback-channel logout: {uri}"));
                }
                println!("{line}");
            }
        }
        ClientCommand::Remove { client_id } => {
            if !store.delete_client(&ClientId::new(client_id.clone())).await? {
                anyhow::bail!("there is no client {client_id}");
            }
            println!("client {client_id} removed, with its grants and tokens");
        }
    }
    Ok(())
}

pub async fn users(config: &Config, command: UserCommand) -> anyhow::Result<()> {
    let store = portico_server::app::open_store(config).await?;
    let now = SystemClock.now();
    match command {
        UserCommand::Add { login, password, phone, email, name } => {
            if login.trim().is_empty() || password.is_empty() {
                anyhow::bail!("--login and --password must not be empty");
            }
            if let Some(phone) = &phone
                && !(phone.starts_with('+') && phone.len() >= 8 && phone[1..].bytes().all(|b| b.is_ascii_digit()))
            {
                anyhow::bail!("--phone {phone}: use E.164 form, e.g. +79001234567");
            }
            if email.as_ref().is_some_and(|e| !e.contains('@')) {
                anyhow::bail!("--email must be an e-mail address");
            }
            let password_hash = tokio::task::spawn_blocking(move || portico_crypto::password::hash(&password)).await?;
            let user = User {
                id: UserId::random(),
                login: login.clone(),
                password_hash,
                phone,
                email,
                name,
                phone_login_enabled: true,
                blocked: false,
                created_at: now,
            };
            store.create_user(&user).await.map_err(|e| conflict(e, "a user with this --login"))?;
            println!("user {login} added (id {})", user.id);
        }
        UserCommand::List => {
            for user in store.list_users().await? {
                println!(
                    "{}\t{}\t{}\t{}{}",
                    user.login,
                    user.id,
                    user.phone.as_deref().unwrap_or("-"),
                    user.email.as_deref().unwrap_or("-"),
                    if user.blocked { "\tBLOCKED" } else { "" }
                );
            }
        }
        UserCommand::Block { login } => {
            // Each session ends as a logout would (back-channel logouts to
            // the clients signed in under it); the block then revokes every
            // grant of the user, whatever the clients asked for.
            if let Some(user) = store.find_user_by_login(&login).await? {
                for session in store.list_sessions(user.id, now).await? {
                    portico_identity::login::session::end(store.as_ref(), &session, "user blocked", now).await?;
                }
            }
            let user = store
                .set_user_blocked(&login, true, now)
                .await?
                .ok_or_else(|| anyhow::anyhow!("there is no user {login}"))?;
            store.record_audit(&AuditEvent::new(now, AuditKind::UserBlocked).user(user.id)).await?;
            println!("user {login} blocked; their sessions and tokens are revoked");
        }
        UserCommand::Unblock { login } => {
            let user = store
                .set_user_blocked(&login, false, now)
                .await?
                .ok_or_else(|| anyhow::anyhow!("there is no user {login}"))?;
            store.record_audit(&AuditEvent::new(now, AuditKind::UserUnblocked).user(user.id)).await?;
            println!("user {login} unblocked");
        }
    }
    Ok(())
}

pub async fn keys(config: &Config, command: KeyCommand) -> anyhow::Result<()> {
    let store = portico_server::app::open_store(config).await?;
    match command {
        KeyCommand::Rotate => {
            let secret = InstanceSecret::load(config)?;
            println!("generating a new RSA-2048 signing key…");
            let now = SystemClock.now();
            let kid = portico_identity::KeyRing::rotate(store.as_ref(), &secret.sealer(), now).await?;
            let event = AuditEvent::new(now, AuditKind::KeyRotated).detail(serde_json::json!({ "kid": kid }));
            store.record_audit(&event).await?;
            println!("key {kid} now signs new tokens; the previous key stays published until its tokens expire");
        }
        KeyCommand::List => {
            for key in store.list_signing_keys().await? {
                let state = match key.retired_at {
                    None => "active".to_owned(),
                    Some(at) => format!("retired {at}"),
                };
                println!("{}\tcreated {}\t{state}", key.kid, key.created_at);
            }
        }
    }
    Ok(())
}

/// An address the browser is sent to: absolute, without a fragment.
fn check_redirect_uri(flag: &str, uri: &str) -> anyhow::Result<()> {
    let url = url::Url::parse(uri).map_err(|e| anyhow::anyhow!("{flag} {uri}: not an absolute URL ({e})"))?;
    if url.fragment().is_some() {
        anyhow::bail!("{flag} {uri}: the address must not have a fragment");
    }
    Ok(())
}

fn conflict(error: StorageError, what: &str) -> anyhow::Error {
    match error {
        StorageError::Conflict(_) => anyhow::anyhow!("{what} already exists"),
        other => other.into(),
    }
}
