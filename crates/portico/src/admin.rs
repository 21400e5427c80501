//! Admin commands. They work on the configured database directly, so they
//! work while servers run on it, and servers see the change on their next
//! request (nothing of this is cached across requests). They call the same
//! service as the admin API, so both enforce the same rules, and record
//! their changes in the audit log as `cli`.

use portico_crypto::jwt::Algorithm;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Subcommand;
use portico_admin::service::{NewClient, NewUser};
use portico_admin::{AdminService, ServiceError};
use portico_model::audit::Actor;
use portico_model::client::{AssertionAlgorithm, AuthMethod, ClientSecurity, SecurityProfile};
use portico_model::clock::SystemClock;
use portico_model::user::OperatorRole;
use portico_server::Config;
use portico_server::secret::InstanceSecret;
use portico_tokens::{ImportedKey, KeyLocation};

#[derive(Subcommand)]
pub enum ClientCommand {
    /// Register a client application.
    Add(Box<AddClient>),
    /// List client applications.
    List {
        /// Only the registrations held for an operator's approval
        /// (`registration.require_approval`).
        #[arg(long)]
        awaiting_approval: bool,
    },
    /// Approve a registration held for an operator's approval: the client
    /// may authenticate and start logins from then on.
    Approve {
        #[arg(long)]
        client_id: String,
    },
    /// Issue a one-time initial access token for dynamic client registration
    /// (used while `registration.initial_access_token` is set).
    RegistrationToken {
        /// Its lifetime in seconds: 60 to 2592000 (30 days).
        #[arg(long, default_value_t = 86_400)]
        expires_in_secs: i64,
    },
    /// List the one-time initial access tokens neither spent nor expired.
    RegistrationTokens,
    /// Withdraw an unspent one-time initial access token: it registers
    /// nothing from now on.
    WithdrawRegistrationToken {
        /// The token's id, as issued and listed.
        #[arg(long)]
        id: String,
    },
    /// Remove a client application and everything issued to it.
    Remove {
        #[arg(long)]
        client_id: String,
    },
}

/// `portico clients add`.
#[derive(clap::Args)]
pub struct AddClient {
    #[arg(long)]
    client_id: String,
    /// The client secret (16 to 256 characters); generated and printed when omitted.
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
    /// How the client authenticates: client_secret_basic (default), client_secret_post,
    /// client_secret_jwt or private_key_jwt.
    #[arg(long, value_parser = parse_auth_method, default_value = "client_secret_basic")]
    token_endpoint_auth_method: AuthMethod,
    /// A file holding the client's public keys, a JWK Set (private_key_jwt).
    #[arg(long, conflicts_with = "jwks_uri")]
    jwks_file: Option<std::path::PathBuf>,
    /// Where the client publishes its public keys, a public https address (private_key_jwt).
    #[arg(long)]
    jwks_uri: Option<String>,
    /// The one algorithm the client's assertions may be signed with: PS256, ES256, EdDSA or RS256
    /// (private_key_jwt), HS256 (client_secret_jwt); default: any its method takes.
    #[arg(long, value_parser = str::parse::<AssertionAlgorithm>)]
    assertion_alg: Option<AssertionAlgorithm>,
    /// The algorithm of the client's id_tokens: RS256, PS256, ES256 or EdDSA; default: the server's.
    #[arg(long, value_parser = parse_algorithm)]
    id_token_alg: Option<Algorithm>,
    /// Answer userinfo to this client as a JWT signed with this algorithm.
    #[arg(long, value_parser = parse_algorithm)]
    userinfo_alg: Option<Algorithm>,
    /// The algorithm of the client's access tokens; default: the server's.
    #[arg(long, value_parser = parse_algorithm)]
    access_token_alg: Option<Algorithm>,
    /// The algorithm of signed introspection answers to this client; default: the server's.
    #[arg(long, value_parser = parse_algorithm)]
    introspection_alg: Option<Algorithm>,
    /// The algorithm of signed authorization responses (JARM) to this client; default: the server's.
    #[arg(long, value_parser = parse_algorithm)]
    authorization_alg: Option<Algorithm>,
    /// Authorization requests only pushed to /oauth2/par (RFC 9126).
    #[arg(long)]
    require_pushed_requests: bool,
    /// Authorization requests only as request objects signed with the client's keys (RFC 9101).
    #[arg(long)]
    require_signed_request_object: bool,
    /// The one algorithm of the client's request objects: PS256, ES256, EdDSA or RS256.
    #[arg(long, value_parser = parse_algorithm)]
    request_object_alg: Option<Algorithm>,
    /// Every token request must carry a DPoP proof: the access tokens are bound to the client's key (RFC 9449).
    #[arg(long)]
    dpop_bound: bool,
    /// Every token request over mutual TLS: the access tokens are bound to the client's certificate (RFC 8705).
    #[arg(long)]
    certificate_bound: bool,
    /// For tls_client_auth: the subject DN (RFC 4514) the client's certificate must carry.
    #[arg(long)]
    tls_client_auth_subject_dn: Option<String>,
    /// The rules the client is held to: standard, fapi2 (FAPI 2.0) or fapi-ru (ФАПИ.СЕК advanced);
    /// default: registration.default_security_profile.
    #[arg(long, value_parser = parse_profile)]
    security_profile: Option<SecurityProfile>,
    /// Whether each refresh hands out a new refresh token: true or false; default: the profile's
    /// (true, except under fapi2).
    #[arg(long)]
    refresh_token_rotation: Option<bool>,
}

fn parse_profile(name: &str) -> Result<SecurityProfile, String> {
    SecurityProfile::parse(name).ok_or_else(|| format!("{name:?} is not one of standard, fapi2, fapi-ru"))
}

#[derive(Subcommand)]
pub enum UserCommand {
    /// Create a user.
    Add {
        #[arg(long)]
        login: String,
        /// At least 10 characters, not the login.
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
        /// Why, for the audit log.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Make a user an operator of Portico (support or admin), or no operator (none).
    SetRole {
        #[arg(long)]
        login: String,
        /// support, admin or none.
        #[arg(long)]
        role: String,
    },
    /// Unblock a user.
    Unblock {
        #[arg(long)]
        login: String,
        /// Why, for the audit log.
        #[arg(long)]
        reason: Option<String>,
    },
}

#[derive(Subcommand)]
pub enum KeyCommand {
    /// Make a new signing key active; the old one stays published until its tokens expire.
    Rotate {
        /// The algorithm whose key to replace (or to make the first key
        /// of): RS256, PS256, ES256 or EdDSA; default: `tokens.signing_algorithm`.
        #[arg(long, value_parser = parse_algorithm)]
        alg: Option<Algorithm>,
    },
    /// Stop signing with an algorithm taken off the configuration: its key
    /// is retired without a successor and stays published until its tokens
    /// expire. Refused while the configuration names it or a client uses it.
    Retire {
        /// RS256, PS256, ES256 or EdDSA.
        #[arg(long, value_parser = parse_algorithm)]
        alg: Algorithm,
    },
    /// Register a key made outside Portico as the algorithm's signing key:
    /// a key pair the HSM vendor's tools made in the token of
    /// `tokens.hsm`, or a key the signing program of `tokens.command`
    /// holds. It must sign verifiably first; the previous key stays
    /// published until its tokens expire.
    Import {
        /// RS256, PS256 or ES256.
        #[arg(long, value_parser = parse_algorithm)]
        alg: Algorithm,
        /// The label of the key pair in the HSM.
        #[arg(long, conflicts_with_all = ["command_key", "public_key"], required_unless_present = "command_key")]
        hsm_label: Option<String>,
        /// The label the signing program knows the key by (`{key}` in its
        /// arguments).
        #[arg(long, requires = "public_key")]
        command_key: Option<String>,
        /// The key's public half, a PEM `PUBLIC KEY` file (`openssl pkey
        /// -pubout`).
        #[arg(long, requires = "command_key")]
        public_key: Option<std::path::PathBuf>,
    },
    /// List signing keys.
    List,
}

fn parse_auth_method(name: &str) -> Result<AuthMethod, String> {
    AuthMethod::parse(name).ok_or_else(|| {
        format!("{name:?} is not one of client_secret_basic, client_secret_post, client_secret_jwt, private_key_jwt, tls_client_auth, self_signed_tls_client_auth")
    })
}

fn parse_algorithm(name: &str) -> Result<Algorithm, String> {
    Algorithm::parse(name).ok_or_else(|| format!("{name:?} is not one of RS256, PS256, ES256, EdDSA"))
}

/// The service the admin API uses, over the configured database, acting as `cli`.
async fn service(config: &Config) -> anyhow::Result<AdminService> {
    let store = portico_server::app::open_store(config).await?;
    let secret = InstanceSecret::load(config)?;
    let (signing, algorithms) = config.tokens.algorithms()?;
    Ok(AdminService::new(store, Arc::new(SystemClock), secret.sealer())
        .allowing_insecure_addresses(config.notifications.allow_insecure_callbacks.unwrap_or(false))
        .signing_with(signing, &algorithms)
        .with_default_profile(config.registration.default_security_profile)
        .with_key_holders(config.tokens.key_holders()?))
}

pub async fn clients(config: &Config, command: ClientCommand) -> anyhow::Result<()> {
    let admin = service(config).await?;
    match command {
        ClientCommand::Add(add) => {
            let AddClient {
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
                token_endpoint_auth_method,
                jwks_file,
                jwks_uri,
                assertion_alg,
                id_token_alg,
                userinfo_alg,
                access_token_alg,
                introspection_alg,
                authorization_alg,
                require_pushed_requests,
                require_signed_request_object,
                request_object_alg,
                dpop_bound,
                certificate_bound,
                tls_client_auth_subject_dn,
                security_profile,
                refresh_token_rotation,
            } = *add;
            let jwks = match jwks_file {
                Some(path) => {
                    let text = std::fs::read_to_string(&path)
                        .with_context(|| format!("cannot read the key set {}", path.display()))?;
                    Some(serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?)
                }
                None => None,
            };
            let security = ClientSecurity {
                token_endpoint_auth_method,
                jwks,
                jwks_uri,
                token_endpoint_auth_signing_alg: assertion_alg,
                id_token_signed_response_alg: id_token_alg,
                userinfo_signed_response_alg: userinfo_alg,
                access_token_signed_response_alg: access_token_alg,
                introspection_signed_response_alg: introspection_alg,
                authorization_signed_response_alg: authorization_alg,
                logo_uri: None,
                client_uri: None,
                policy_uri: None,
                tos_uri: None,
                require_pushed_authorization_requests: require_pushed_requests,
                require_signed_request_object,
                request_object_signing_alg: request_object_alg,
                dpop_bound_access_tokens: dpop_bound,
                tls_client_certificate_bound_access_tokens: certificate_bound,
                tls_client_auth_subject_dn,
                refresh_token_rotation,
                // The alternative names are set through the admin API.
                ..ClientSecurity::default()
            };
            let new = NewClient {
                client_id: client_id.clone(),
                secret,
                redirect_uris,
                scope: Some(scope),
                name_en: name_en.or_else(|| name.clone()),
                name_ru: name,
                require_consent,
                post_logout_redirect_uris,
                logout_revokes_grants,
                backchannel_logout_uri,
                security,
                security_profile,
                registration_token_hash: None,
                awaiting_approval: false,
                spends_initial_access_token: None,
            };
            let (_, generated) = admin.create_client(&Actor::Cli, new).await.map_err(refusal)?;
            println!("client {client_id} added");
            if let Some(secret) = generated {
                println!("client secret (shown once, store it now): {secret}");
            }
        }
        ClientCommand::RegistrationToken { expires_in_secs } => {
            let ttl = time::Duration::seconds(expires_in_secs);
            let (token, issued) = admin.issue_initial_access_token(&Actor::Cli, ttl).await.map_err(refusal)?;
            println!("initial access token (one registration, shown once, store it now): {token}");
            println!("id {}, expires at {}", issued.id, issued.expires_at);
        }
        ClientCommand::RegistrationTokens => {
            let tokens = admin.registration_tokens().await?;
            if tokens.is_empty() {
                println!("no unspent registration token");
            }
            for token in tokens {
                println!("{}\tissued {}\texpires {}", token.id, token.created_at, token.expires_at);
            }
        }
        ClientCommand::WithdrawRegistrationToken { id } => {
            admin.withdraw_registration_token(&Actor::Cli, &id).await.map_err(refusal)?;
            println!("registration token {id} withdrawn");
        }
        ClientCommand::List { awaiting_approval } => {
            let only_held = awaiting_approval.then_some(true);
            for client in admin.list_clients(portico_storage::KeyPage::ALL, only_held).await? {
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
                if client.awaiting_approval {
                    line.push_str("\tawaiting approval");
                }
                println!("{line}");
            }
        }
        ClientCommand::Approve { client_id } => {
            admin.approve_client(&Actor::Cli, &client_id).await.map_err(refusal)?;
            println!("client {client_id} approved");
        }
        ClientCommand::Remove { client_id } => {
            admin.delete_client(&Actor::Cli, &client_id).await.map_err(refusal)?;
            println!("client {client_id} removed, with its grants and tokens");
        }
    }
    Ok(())
}

pub async fn users(config: &Config, command: UserCommand) -> anyhow::Result<()> {
    let admin = service(config).await?;
    match command {
        UserCommand::Add { login, password, phone, email, name } => {
            let new = NewUser { login: login.clone(), password, phone, email, name, phone_login_enabled: None };
            let user = admin.create_user(&Actor::Cli, new).await.map_err(refusal)?;
            println!("user {login} added (id {})", user.id);
        }
        UserCommand::List => {
            for user in admin.store.list_users().await? {
                println!(
                    "{}\t{}\t{}\t{}{}",
                    user.login,
                    user.id,
                    user.phone.as_deref().unwrap_or("-"),
                    user.email.as_deref().unwrap_or("-"),
                    match (user.blocked, user.deactivated) {
                        (true, _) => "\tBLOCKED",
                        (false, true) => "\tDEACTIVATED",
                        (false, false) => "",
                    }
                );
            }
        }
        UserCommand::Block { login, reason } => {
            let user = admin.user_by_login(&login).await.map_err(refusal)?;
            admin.block_user(&Actor::Cli, user.id, reason).await.map_err(refusal)?;
            println!("user {login} blocked; their sessions and tokens are revoked");
        }
        UserCommand::SetRole { login, role } => {
            let parsed = match role.as_str() {
                "none" => None,
                other => Some(
                    OperatorRole::parse(other)
                        .ok_or_else(|| anyhow::anyhow!("--role {other}: support, admin or none"))?,
                ),
            };
            let user = admin.user_by_login(&login).await.map_err(refusal)?;
            admin.set_operator_role(&Actor::Cli, user.id, parsed).await.map_err(refusal)?;
            match parsed {
                Some(role) => println!("{login} is an operator with the role {}", role.as_str()),
                None => println!("{login} is no operator"),
            }
        }
        UserCommand::Unblock { login, reason } => {
            let user = admin.user_by_login(&login).await.map_err(refusal)?;
            admin.unblock_user(&Actor::Cli, user.id, reason).await.map_err(refusal)?;
            println!("user {login} unblocked");
        }
    }
    Ok(())
}

pub async fn keys(config: &Config, command: KeyCommand) -> anyhow::Result<()> {
    let admin = service(config).await?;
    match command {
        KeyCommand::Rotate { alg } => {
            let alg = alg.unwrap_or(admin.signing_algorithm);
            let kind = match alg {
                Algorithm::Rs256 | Algorithm::Ps256 => "RSA-2048",
                Algorithm::Es256 => "P-256",
                Algorithm::EdDsa => "Ed25519",
            };
            println!("generating a new {kind} signing key for {alg}…");
            let kid = admin.rotate_key(&Actor::Cli, Some(alg)).await?;
            println!(
                "key {kid} now signs new tokens ({alg}); the previous key stays published until its tokens expire"
            );
        }
        KeyCommand::Import { alg, hsm_label, command_key, public_key } => {
            let key = match (hsm_label, command_key, public_key) {
                (Some(label), _, _) => ImportedKey::Hsm { label },
                (None, Some(label), Some(path)) => ImportedKey::Command {
                    label,
                    public_key_pem: std::fs::read(&path)
                        .with_context(|| format!("--public-key: cannot read {}", path.display()))?,
                },
                _ => anyhow::bail!("name the key: --hsm-label, or --command-key with --public-key"),
            };
            println!("checking that the key signs verifiably…");
            let kid = admin.import_key(&Actor::Cli, alg, &key).await?;
            println!(
                "key {kid} now signs new tokens ({alg}); the previous key stays published until its tokens expire"
            );
        }
        KeyCommand::Retire { alg } => {
            let kid = admin.retire_key(&Actor::Cli, alg).await.map_err(refusal)?;
            println!(
                "key {kid} is retired: nothing signs with {alg} any more; it stays published until its tokens expire"
            );
        }
        KeyCommand::List => {
            let sealer = InstanceSecret::load(config)?.sealer();
            for key in admin.list_keys().await? {
                let state = match key.retired_at {
                    None => "active".to_owned(),
                    Some(at) => format!("retired {at}"),
                };
                let held = match portico_tokens::key_location(&sealer, &key)? {
                    KeyLocation::Sealed => "database".to_owned(),
                    KeyLocation::Hsm(label) => format!("hsm {label}"),
                    KeyLocation::Command(label) => format!("command {label}"),
                };
                println!("{}\t{}\tcreated {}\t{state}\t{held}", key.kid, key.alg, key.created_at);
            }
        }
    }
    Ok(())
}

/// A refusal as the command says it: every problem, with the flag's name
/// where the admin API would name the field.
fn refusal(error: ServiceError) -> anyhow::Error {
    match error {
        ServiceError::Invalid(problems) => {
            let lines: Vec<String> = problems.iter().map(|p| flag(&p.place, &p.message)).collect();
            anyhow::anyhow!("{}", lines.join("\n"))
        }
        other => other.into(),
    }
}

/// A problem in the command's words: `redirectUris[1]` is the second
/// `--redirect-uri`, whose message names its value.
fn flag(place: &str, message: &str) -> String {
    let (field, indexed) = match place.split_once('[') {
        Some((field, _)) => (field, true),
        None => (place, false),
    };
    let name = match field {
        "clientId" => "--client-id".to_owned(),
        "redirectUris" => "--redirect-uri".to_owned(),
        "postLogoutRedirectUris" => "--post-logout-redirect-uri".to_owned(),
        "backchannelLogoutUri" => "--backchannel-logout-uri".to_owned(),
        "nameRu" => "--name".to_owned(),
        "nameEn" => "--name-en".to_owned(),
        other => format!("--{other}"),
    };
    if indexed || field == "backchannelLogoutUri" { format!("{name} {message}") } else { format!("{name}: {message}") }
}
