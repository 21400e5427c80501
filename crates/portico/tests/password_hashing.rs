//! New passwords are hashed under the same cap as the login's checks
//! (`login.password_hash_concurrency`): each Argon2id run takes 19 MiB, so
//! 32 users given passwords at once through the admin API (a provisioning
//! system's bulk run) must not take 32 × 19 MiB. Shown on a real
//! `portico serve` by its peak resident memory (`VmHWM`).

use std::io::{BufRead as _, BufReader};

mod common;

const ADMIN_TOKEN: &str = "admin-token-for-the-hashing-test-0123456789";
const USERS: usize = 32;
const MIB: u64 = 1024 * 1024;

/// The peak resident memory of process `pid` so far, in bytes.
fn peak_memory(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read the process status");
    let line = status.lines().find(|line| line.starts_with("VmHWM:")).expect("a VmHWM line");
    let kib: u64 = line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("VmHWM in kB");
    kib * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_new_passwords_at_once_are_hashed_a_few_at_a_time() {
    let dir = portico_tests::TempDir::new();
    let mut child = common::serve_demo(
        &dir.0,
        &[("PORTICO_ADMIN_TOKEN", ADMIN_TOKEN), ("PORTICO_LOGIN__PASSWORD_HASH_CONCURRENCY", "1")],
    );
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let serving =
        lines.by_ref().map_while(Result::ok).find(|line| line.contains("Portico is serving")).expect("started");
    // The rest of its log is read (and dropped) so that it never blocks.
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
    let listen = serving.split_whitespace().find_map(|field| field.strip_prefix("listen=")).expect("its address");
    let base = format!("http://{}", listen.trim_matches('"'));
    let http = reqwest::Client::new();
    let before = peak_memory(child.id());

    let mut creations = tokio::task::JoinSet::new();
    for n in 0..USERS {
        let request = http
            .post(format!("{base}/admin/v1/users"))
            .bearer_auth(ADMIN_TOKEN)
            .json(&serde_json::json!({"login": format!("bulk-{n}"), "password": format!("bulk-password-{n}")}));
        creations.spawn(async move { request.send().await.unwrap().status().as_u16() });
    }
    let statuses = creations.join_all().await;
    let peak = peak_memory(child.id());
    let _ = child.kill();
    let _ = child.wait();

    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), USERS, "every user was made: {statuses:?}");
    // One run at a time takes 19 MiB (more while the allocator keeps a
    // freed one); 32 at once would take about 600 MiB.
    let grown = peak.saturating_sub(before);
    assert!(grown < 6 * 19 * MIB, "the peak grew by {} MiB", grown / MIB);
}
