//! The cluster's parts as real processes: a PostgreSQL server the test can
//! restart, moto's S3 server, `portico serve` nodes and a `portico worker`
//! it can kill and start again, each node reaching PostgreSQL through a
//! proxy the test can cut, and a round-robin proxy in front of the nodes.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use portico_tests::{TcpProxy, TempDir};

/// A free loopback port (bound and released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port()
}

/// Whether this process runs as root (PostgreSQL then runs as `postgres`).
fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// A PostgreSQL server of its own in a scratch folder.
pub struct Postgres {
    bin: PathBuf,
    dir: TempDir,
    pub port: u16,
    as_postgres: bool,
}

impl Postgres {
    /// `initdb` and `pg_ctl start` from `bin` (PostgreSQL's `bin` folder).
    pub fn start(bin: &Path) -> Self {
        let dir = TempDir::new();
        let as_postgres = is_root();
        if as_postgres {
            let chowned = Command::new("chown").args(["-R", "postgres"]).arg(&dir.0).status().expect("chown");
            assert!(chowned.success(), "chown the PostgreSQL folder");
        }
        let server = Self { bin: bin.to_owned(), dir, port: free_port(), as_postgres };
        server
            .run("initdb", &["-A".into(), "trust".into(), "-U".into(), "postgres".into(), "-D".into(), server.data()]);
        server.ctl(&["start"]);
        server
    }

    fn data(&self) -> String {
        self.dir.0.join("data").display().to_string()
    }

    fn run(&self, tool: &str, args: &[String]) {
        let program = self.bin.join(tool);
        let mut command = if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        };
        let out = command.args(args).stdin(Stdio::null()).output().expect("run a PostgreSQL tool");
        assert!(out.status.success(), "{tool} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    fn ctl(&self, action: &[&str]) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off",
            self.port,
            self.dir.0.display()
        );
        let log = self.dir.0.join("server.log").display().to_string();
        let mut args =
            vec!["-D".to_owned(), self.data(), "-l".to_owned(), log, "-w".to_owned(), "-o".to_owned(), options];
        args.extend(action.iter().map(|a| (*a).to_owned()));
        self.run("pg_ctl", &args);
    }

    /// A crash and a restart: `pg_ctl restart -m immediate` (every
    /// connection is cut, no checkpoint; the server recovers from its log).
    pub fn restart(&self) {
        self.ctl(&["-m", "immediate", "restart"]);
    }

    /// One value from `sql`, through `psql`.
    pub fn query(&self, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-A", "-t", "-d", &self.url(), "-c", sql])
            .stdin(Stdio::null())
            .output()
            .expect("run psql");
        assert!(out.status.success(), "psql {sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.ctl(&["-m", "immediate", "stop"])));
    }
}

/// moto's S3 server with one bucket.
pub struct S3 {
    child: Child,
    pub url: String,
}

impl S3 {
    pub async fn start(moto: &str, bucket: &str) -> Self {
        let port = free_port();
        let child = Command::new(moto)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start moto_server");
        let s3 = Self { child, url: format!("http://127.0.0.1:{port}") };
        let http = reqwest::Client::new();
        for _ in 0..400 {
            if let Ok(created) = http.put(format!("{}/{bucket}", s3.url)).send().await {
                assert!(created.status().is_success(), "create the bucket: {}", created.status());
                return s3;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("moto_server did not start on port {port}");
    }
}

impl Drop for S3 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One `portico` process: a serving node (with its address) or the worker.
pub struct Node {
    pub name: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    /// Where its HTTP listener is (`None`: the worker).
    pub addr: Option<SocketAddr>,
    /// Its own way to PostgreSQL, which the test can cut.
    pub database: TcpProxy,
    log: PathBuf,
    child: Option<Child>,
}

impl Node {
    pub fn new(
        name: &str,
        args: &[&str],
        env: Vec<(String, String)>,
        addr: Option<SocketAddr>,
        database: TcpProxy,
        logs: &Path,
    ) -> Self {
        Self {
            name: name.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env,
            addr,
            database,
            log: logs.join(format!("{name}.log")),
            child: None,
        }
    }

    /// Starts the process (its log appended to `<name>.log`).
    pub fn start(&mut self) {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log).expect("node log");
        let child = Command::new(env!("CARGO_BIN_EXE_portico"))
            .args(&self.args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start portico");
        self.child = Some(child);
    }

    /// SIGKILL: whatever it had in flight is lost.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().expect("SIGKILL");
            child.wait().expect("reap");
        }
    }

    /// Whether it exited on its own (a crash).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.as_mut().and_then(|child| child.try_wait().ok().flatten())
    }

    /// The end of its log, for a failure's message.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }

    /// Waits until the node answers `/readyz` with 200; how long that took.
    pub async fn ready_within(&self, limit: Duration) -> Option<Duration> {
        let url = format!("http://{}/readyz", self.addr.expect("a serving node"));
        let http = reqwest::Client::builder().timeout(Duration::from_secs(1)).build().expect("client");
        let started = Instant::now();
        while started.elapsed() < limit {
            if http.get(&url).send().await.is_ok_and(|r| r.status() == 200) {
                return Some(started.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Round robin over the nodes, one choice per connection (the load's
/// clients open a connection per request, so each request goes to the
/// next node). A node that refuses the connection is skipped, as a load
/// balancer's retry of a failed connect would; a node that dies with the
/// request in flight leaves the client with a broken connection.
pub struct Balancer {
    pub addr: SocketAddr,
}

impl Balancer {
    /// Listens on `addr` (the public URL the nodes were given).
    pub async fn start_on(addr: SocketAddr, nodes: Vec<SocketAddr>) -> Self {
        let listener = tokio::net::TcpListener::bind(addr).await.expect("bind the balancer");
        let addr = listener.local_addr().expect("address");
        let next = Arc::new(AtomicUsize::new(0));
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let (nodes, next) = (nodes.clone(), Arc::clone(&next));
                tokio::spawn(async move {
                    let first = next.fetch_add(1, Ordering::Relaxed);
                    for i in 0..nodes.len() {
                        let node = nodes[(first + i) % nodes.len()];
                        if let Ok(mut outbound) = tokio::net::TcpStream::connect(node).await {
                            let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                            return;
                        }
                    }
                });
            }
        });
        Self { addr }
    }
}
