//! `portico sessions`: a user's single sign-on sessions, listed and ended.

use clap::Subcommand;
use portico_model::audit::Actor;
use portico_model::clock::{Clock, SystemClock};
use portico_model::ids::SessionId;
use portico_server::Config;
use portico_storage::Storage;
use uuid::Uuid;

#[derive(Subcommand)]
pub enum SessionCommand {
    /// List a user's live sessions, newest first, with the clients signed in under each.
    List {
        #[arg(long)]
        login: String,
    },
    /// End one session (--sid) or all of a user's (--login). The browser is signed out at
    /// once; grants under the session are revoked for clients registered with
    /// --logout-revokes-grants.
    End {
        /// The session's id (the `sid` of its id_tokens), from `sessions list`.
        #[arg(long, required_unless_present = "login", conflicts_with = "login")]
        sid: Option<Uuid>,
        /// Every session of this user.
        #[arg(long)]
        login: Option<String>,
    },
}

pub async fn run(config: &Config, command: SessionCommand) -> anyhow::Result<()> {
    let store = portico_server::app::open_store(config).await?;
    let now = SystemClock.now();
    match command {
        SessionCommand::List { login } => {
            let user = find_user(store.as_ref(), &login).await?;
            let sessions = store.list_sessions(user.id, now).await?;
            if sessions.is_empty() {
                println!("{login} has no live session");
            }
            for session in sessions {
                let mut clients: Vec<String> =
                    store.list_session_grants(session.id).await?.into_iter().map(|g| g.client_id.to_string()).collect();
                clients.dedup();
                println!(
                    "{}\tsigned in {}\texpires {}\tamr: {}\tclients: {}",
                    session.id,
                    session.auth_time,
                    session.expires_at,
                    if session.amr.is_empty() { "-".to_owned() } else { session.amr.join(" ") },
                    if clients.is_empty() { "-".to_owned() } else { clients.join(", ") }
                );
            }
        }
        SessionCommand::End { sid, login } => {
            let sessions = match (sid, login) {
                (Some(sid), _) => {
                    let session = store.find_session_by_id(SessionId::from(sid), now).await?;
                    vec![session.ok_or_else(|| anyhow::anyhow!("there is no live session {sid}"))?]
                }
                (None, Some(login)) => {
                    let user = find_user(store.as_ref(), &login).await?;
                    store.list_sessions(user.id, now).await?
                }
                (None, None) => anyhow::bail!("name the session (--sid) or the user (--login)"),
            };
            for session in &sessions {
                match portico_identity::login::session::end(store.as_ref(), session, "operator", Some(&Actor::Cli), now)
                    .await?
                {
                    Some(ended) => {
                        let revoked = ended.revoked_grants().count();
                        println!("session {} ended; {revoked} grant(s) revoked", session.id);
                    }
                    None => println!("session {} had ended already", session.id),
                }
            }
            if sessions.is_empty() {
                println!("no live session to end");
            }
        }
    }
    Ok(())
}

async fn find_user(store: &dyn Storage, login: &str) -> anyhow::Result<portico_model::user::User> {
    store.find_user_by_login(login).await?.ok_or_else(|| anyhow::anyhow!("there is no user {login}"))
}
