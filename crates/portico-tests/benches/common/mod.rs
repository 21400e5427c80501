//! What the benchmarks share: a lean HTTP/1 client and a driver that runs
//! requests with a fixed number of concurrent tasks.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Concurrent requests in flight.
pub const CONCURRENCY: usize = 32;

/// `database_cache_staleness_ms` of the measured server:
/// `PORTICO_BENCH_STALENESS_MS`, or the default (1000). `0` measures the
/// node memory turned off.
pub fn staleness_ms() -> u32 {
    std::env::var("PORTICO_BENCH_STALENESS_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(1000)
}

/// A lean HTTP/1 client: keep-alive connections, no cookies, no redirects.
#[derive(Clone)]
pub struct Http(hyper_util::client::legacy::Client<hyper_util::client::legacy::connect::HttpConnector, String>);

impl Http {
    pub fn new() -> Self {
        let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .pool_max_idle_per_host(CONCURRENCY)
            .build_http();
        Self(client)
    }

    pub async fn send(&self, request: hyper::Request<String>) -> Vec<u8> {
        use http_body_util::BodyExt as _;
        let response = self.0.request(request).await.expect("request");
        assert_eq!(response.status(), 200, "benchmark request failed");
        response.into_body().collect().await.expect("body").to_bytes().to_vec()
    }

    /// Sends `request`; returns the status (the body is read and dropped).
    pub async fn status(&self, request: hyper::Request<String>) -> u16 {
        use http_body_util::BodyExt as _;
        let response = self.0.request(request).await.expect("request");
        let status = response.status().as_u16();
        response.into_body().collect().await.expect("body");
        status
    }

    pub async fn post_form(&self, url: &str, body: String) -> Vec<u8> {
        let request = hyper::Request::post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .expect("request");
        self.send(request).await
    }

    /// `GET url` with `headers`.
    pub async fn get(&self, url: &str, headers: &[(&str, &str)]) -> Vec<u8> {
        let mut request = hyper::Request::get(url);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        self.send(request.body(String::new()).expect("request")).await
    }

    pub async fn get_bearer(&self, url: &str, token: &str) -> Vec<u8> {
        let request = hyper::Request::get(url)
            .header("authorization", format!("Bearer {token}"))
            .body(String::new())
            .expect("request");
        self.send(request).await
    }
}

/// The string value of `"name":"…"` in a JSON body (token values need no unescaping).
pub fn field(body: &[u8], name: &str) -> String {
    let text = std::str::from_utf8(body).expect("utf-8");
    let key = format!("\"{name}\":\"");
    let start = text.find(&key).unwrap_or_else(|| panic!("{name} in {text}")) + key.len();
    let end = text[start..].find('"').expect("end of value") + start;
    text[start..end].to_owned()
}

/// CPU time this process has used so far (every thread, user and system),
/// in seconds, from `/proc/self/stat` (Linux; 10 ms resolution). Next to a
/// rate, the CPU time per operation and how busy the cores were tell a run
/// that the machine bounds from one that waits (on a commit, a lock, a
/// thread). On a shared machine both drift with the other tenants.
pub fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 here.
    let ticks: u64 = fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    // USER_HZ is 100 on every Linux architecture Portico runs on.
    ticks as f64 / 100.0
}

/// CPU time the PostgreSQL server on this machine has used so far (its
/// processes named `postgres`, with the backends that have exited), in
/// seconds; 0 when none runs here. Read next to [`cpu_seconds`], it gives
/// the database's own CPU per response.
pub fn database_cpu_seconds() -> f64 {
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0.0 };
    let mut ticks = 0u64;
    for entry in entries.flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        if &stat[open + 1..close] != "postgres" {
            continue;
        }
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        // utime, stime, cutime, cstime: fields 14 to 17 of the line.
        ticks += fields[11..15].iter().filter_map(|f| f.parse::<u64>().ok()).sum::<u64>();
    }
    ticks as f64 / 100.0
}

/// CPU used by this process and by the PostgreSQL server, from a start.
#[derive(Debug, Clone, Copy)]
pub struct Cpu {
    pub process: f64,
    pub database: f64,
}

impl Cpu {
    /// The CPU used so far.
    pub fn now() -> Self {
        Self { process: cpu_seconds(), database: database_cpu_seconds() }
    }

    /// The CPU used since `self`.
    pub fn since(self) -> Self {
        let now = Self::now();
        Self { process: now.process - self.process, database: now.database - self.database }
    }
}

/// Runs `work` over `items` with [`CONCURRENCY`] tasks; returns items per
/// second and the outputs.
pub async fn drive<I, F, Fut, O>(items: Vec<I>, work: F) -> (f64, Vec<O>)
where
    I: Clone + Send + Sync + 'static,
    F: Fn(I) -> Fut + Send + Sync + Clone + 'static,
    Fut: std::future::Future<Output = O> + Send,
    O: Send + 'static,
{
    drive_with(CONCURRENCY, items, work).await
}

/// [`drive`] with `concurrency` tasks.
pub async fn drive_with<I, F, Fut, O>(concurrency: usize, items: Vec<I>, work: F) -> (f64, Vec<O>)
where
    I: Clone + Send + Sync + 'static,
    F: Fn(I) -> Fut + Send + Sync + Clone + 'static,
    Fut: std::future::Future<Output = O> + Send,
    O: Send + 'static,
{
    let items = Arc::new(items);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let (items, next, work) = (Arc::clone(&items), Arc::clone(&next), work.clone());
            tokio::spawn(async move {
                let mut out = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    out.push(work(item.clone()).await);
                }
                out
            })
        })
        .collect();
    let mut outputs = Vec::with_capacity(items.len());
    for task in tasks {
        outputs.extend(task.await.expect("task"));
    }
    (items.len() as f64 / started.elapsed().as_secs_f64(), outputs)
}
