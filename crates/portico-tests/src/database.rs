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

/// A TCP proxy the test can cut and restore, to simulate a database outage.
pub struct TcpProxy {
    pub addr: std::net::SocketAddr,
    up: Arc<tokio::sync::watch::Sender<bool>>,
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
        let state = Arc::clone(&up);
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if !*state.borrow() {
                    continue; // dropped: the client sees the connection close
                }
                let upstream = upstream.clone();
                let mut cut = state.subscribe();
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(&upstream).await else { return };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cut.wait_for(|up| !*up) => {}
                    }
                });
            }
        });
        Self { addr, up }
    }

    /// Closes every forwarded connection and refuses new ones.
    pub fn cut(&self) {
        self.up.send_replace(false);
    }

    /// Forwards again.
    pub fn restore(&self) {
        self.up.send_replace(true);
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
