//! The tests' databases: a fresh one per server, the sweep of those of
//! ended runs, SQL beside a running server, and a proxy that cuts the
//! database off.

use std::sync::Arc;

use sqlx::Connection as _;

use crate::{Backend, POSTGRES_ENV, TempDir, TestApp};

/// A database URL for a fresh, empty database of `backend`.
///
/// # Panics
/// When PostgreSQL is selected but unreachable.
pub async fn fresh_database(backend: Backend, dir: &TempDir) -> String {
    match backend {
        Backend::Sqlite => format!("sqlite://{}", dir.0.join("portico.db").display()),
        Backend::Postgres => {
            let base = std::env::var(POSTGRES_ENV).expect("PostgreSQL URL");
            let name = format!("portico_test_{}_{}", std::process::id(), uuid::Uuid::new_v4().simple());
            let mut conn = sqlx::PgConnection::connect(&base).await.expect("connect to the test PostgreSQL");
            SWEPT.get_or_init(|| sweep_databases(&base)).await;
            sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut conn).await.expect("create a test database");
            let mut url = url::Url::parse(&base).expect("PostgreSQL URL");
            url.set_path(&name);
            url.to_string()
        }
    }
}

static SWEPT: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();

/// Drops the test databases of test processes that have ended: each test
/// leaves its database (a server may still hold connections to it when the
/// test returns), and the first test of the next run clears them, so
/// repeated runs do not fill the disk. A database is named after its
/// process; those of a process still running are left alone.
async fn sweep_databases(base: &str) {
    let Ok(mut conn) = sqlx::PgConnection::connect(base).await else { return };
    let names: Vec<String> =
        sqlx::query_scalar("SELECT datname FROM pg_database WHERE datname LIKE 'portico\\_test\\_%'")
            .fetch_all(&mut conn)
            .await
            .unwrap_or_default();
    for name in names {
        let pid = name.strip_prefix("portico_test_").and_then(|rest| rest.split('_').next()?.parse::<u32>().ok());
        if pid.is_some_and(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists()) {
            continue;
        }
        let dropped = sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")).execute(&mut conn).await;
        if let Err(error) = dropped {
            eprintln!("the test database {name} of an ended run could not be dropped: {error}");
        }
    }
}

impl TestApp {
    /// Every client id, merchant id and agreement number, each list in the
    /// store's order: what the paged lists must give back, page by page.
    ///
    /// # Panics
    /// When the store fails.
    pub async fn every_key(&self) -> [Vec<String>; 3] {
        use portico_storage::KeyPage;
        let clients = self.store.list_clients(KeyPage::ALL, None).await.expect("clients");
        let merchants = self.store.list_merchants(KeyPage::ALL).await.expect("merchants");
        let agreements = self.store.list_agreements(KeyPage::ALL).await.expect("agreements");
        [
            clients.into_iter().map(|c| c.client_id.to_string()).collect(),
            merchants.into_iter().map(|m| m.ids.merchant_id).collect(),
            agreements.into_iter().map(|(number, _)| number).collect(),
        ]
    }

    /// Runs `sql` on the server's own database, beside the server (a fault
    /// the test injects: a table renamed away and back).
    ///
    /// # Panics
    /// When the statement fails.
    pub async fn run_sql(&self, sql: &str) {
        let url = self.config.database_url.clone().expect("a database URL");
        match url.strip_prefix("sqlite://") {
            Some(path) => {
                let (sql, path) = (sql.to_owned(), path.to_owned());
                let run = move || rusqlite::Connection::open(path).expect("open").execute_batch(&sql).expect("sql");
                tokio::task::spawn_blocking(run).await.expect("the statement ran");
            }
            None => {
                let mut conn = sqlx::PgConnection::connect(&url).await.expect("connect");
                sqlx::raw_sql(sql).execute(&mut conn).await.expect("sql");
            }
        }
    }
}

/// A TCP proxy the test can cut and restore, to simulate a database outage,
/// or set to lose the answer to one statement.
pub struct TcpProxy {
    pub addr: std::net::SocketAddr,
    up: Arc<tokio::sync::watch::Sender<bool>>,
    trap: Arc<std::sync::Mutex<Option<Trap>>>,
}

/// What [`TcpProxy::lose_the_answer_to`] waits for.
struct Trap {
    marker: Vec<u8>,
    sprung: tokio::sync::oneshot::Sender<()>,
}

impl TcpProxy {
    /// Forwards connections on a new loopback port to `upstream`.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub async fn start(upstream: String) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the proxy");
        let addr = listener.local_addr().expect("proxy address");
        let (up, _) = tokio::sync::watch::channel(true);
        let up = Arc::new(up);
        let trap = Arc::default();
        let (state, traps) = (Arc::clone(&up), Arc::clone(&trap));
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                if !*state.borrow() {
                    continue; // dropped: the client sees the connection close
                }
                let upstream = upstream.clone();
                let (state, traps) = (Arc::clone(&state), Arc::clone(&traps));
                tokio::spawn(async move {
                    let Ok(outbound) = tokio::net::TcpStream::connect(&upstream).await else { return };
                    forward(inbound, outbound, &state, &traps).await;
                });
            }
        });
        Self { addr, up, trap }
    }

    /// Closes every forwarded connection and refuses new ones.
    pub fn cut(&self) {
        self.up.send_replace(false);
    }

    /// Forwards again.
    pub fn restore(&self) {
        self.up.send_replace(true);
    }

    /// Sets the proxy to forward the next piece of a client's traffic that
    /// holds `marker` (a statement's text or an argument), then, as its
    /// answer begins to come back, to drop that answer and [`cut`](Self::cut):
    /// the database did the work, the client never learns it. The receiver
    /// is told when that happened.
    pub fn lose_the_answer_to(&self, marker: &[u8]) -> tokio::sync::oneshot::Receiver<()> {
        let (sprung, told) = tokio::sync::oneshot::channel();
        *self.trap.lock().expect("the trap") = Some(Trap { marker: marker.to_vec(), sprung });
        told
    }

    /// `database_url` (a `postgres://` URL) through this proxy.
    ///
    /// # Panics
    /// When `database_url` is not a URL.
    pub fn url_through(&self, database_url: &str) -> String {
        let mut url = url::Url::parse(database_url).expect("a database URL");
        url.set_host(Some("127.0.0.1")).expect("a host");
        url.set_port(Some(self.addr.port())).expect("a port");
        url.to_string()
    }
}

/// Forwards bytes both ways between `inbound` and `outbound` until either
/// closes or the proxy is cut; a piece of `inbound`'s traffic matching the
/// trap springs it (see [`TcpProxy::lose_the_answer_to`]).
async fn forward(
    mut inbound: tokio::net::TcpStream,
    mut outbound: tokio::net::TcpStream,
    up: &tokio::sync::watch::Sender<bool>,
    trap: &std::sync::Mutex<Option<Trap>>,
) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut cut = up.subscribe();
    let (mut asked, mut answered) = (vec![0_u8; 16 * 1024], vec![0_u8; 16 * 1024]);
    let mut sprung: Option<tokio::sync::oneshot::Sender<()>> = None;
    loop {
        tokio::select! {
            read = inbound.read(&mut asked) => {
                let Ok(n @ 1..) = read else { return };
                let piece = &asked[..n];
                if let Some(told) = spring(trap, piece) {
                    sprung = Some(told);
                }
                if outbound.write_all(piece).await.is_err() {
                    return;
                }
            }
            read = outbound.read(&mut answered) => {
                let Ok(n @ 1..) = read else { return };
                if let Some(told) = sprung.take() {
                    up.send_replace(false);
                    let _ = told.send(());
                    return;
                }
                if inbound.write_all(&answered[..n]).await.is_err() {
                    return;
                }
            }
            () = async { let _ = cut.wait_for(|up| !*up).await; } => return,
        }
    }
}

/// The trap's sender, taken, when `piece` holds its marker.
fn spring(trap: &std::sync::Mutex<Option<Trap>>, piece: &[u8]) -> Option<tokio::sync::oneshot::Sender<()>> {
    let mut armed = trap.lock().expect("the trap");
    let hit = armed.as_ref().is_some_and(|t| piece.windows(t.marker.len()).any(|w| w == t.marker));
    if hit { armed.take().map(|t| t.sprung) } else { None }
}
