//! The files `portico serve` creates are its own user's only: the data
//! folder, the SQLite database with its `-wal` and `-shm`, the report
//! signing key and certificate, the report folder, whatever umask the
//! process was started with; and a data folder that others may read,
//! made before (or by hand), is named in a warning that says the fix.

#![cfg(unix)]

use std::os::unix::fs::PermissionsExt as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use portico_tests::TempDir;

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).permissions().mode() & 0o777
}

/// `portico serve --demo` on `data`, listening on `listen`, logging at
/// `log`, with nothing else from the environment; standard error is the
/// caller's to direct.
fn serve(data: &std::path::Path, listen: &str, log: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_portico"));
    command
        .args(["serve", "--demo"])
        .env_clear()
        .env("PORTICO_DATA_DIR", data)
        .env("PORTICO_LISTEN", listen)
        .env("PORTICO_LOG", log)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    command
}

#[tokio::test]
async fn the_server_creates_its_files_for_its_own_user_only() {
    let dir = TempDir::new();
    let data = dir.0.join("data");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = serve(&data, &format!("127.0.0.1:{port}"), "warn")
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start portico serve");
    let deadline = Instant::now() + Duration::from_secs(60);
    let client = portico_tests::plain_http();
    loop {
        let ready = client.get(format!("http://127.0.0.1:{port}/readyz")).send().await;
        if ready.is_ok_and(|r| r.status() == 200) {
            break;
        }
        assert!(Instant::now() < deadline, "the server did not start");
        assert!(child.try_wait().unwrap().is_none(), "the server exited");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The test's own umask (usually 022) would leave these readable by all.
    let checks = [
        ("data", 0o700),
        ("data/portico.db", 0o600),
        ("data/portico.db-wal", 0o600),
        ("data/portico.db-shm", 0o600),
        ("data/reports", 0o700),
        ("data/reports-signing-cert.pem", 0o600),
        ("data/reports-signing-key.pem", 0o600),
    ];
    let modes: Vec<(&str, u32)> = checks.iter().map(|(path, _)| (*path, mode(&dir.0.join(path)))).collect();
    let _ = child.kill();
    let _ = child.wait();
    for ((path, want), (_, got)) in checks.iter().zip(&modes) {
        assert_eq!(*got, *want, "{path}: {got:o}, want {want:o}");
    }
}

/// The lines `portico serve --demo` logs on `data` until it serves.
fn start_lines(data: &std::path::Path) -> Vec<String> {
    use std::io::{BufRead as _, BufReader};
    let mut child = serve(data, "127.0.0.1:0", "info").stderr(Stdio::piped()).spawn().expect("start portico serve");
    let mut lines = Vec::new();
    for line in BufReader::new(child.stderr.take().unwrap()).lines().map_while(Result::ok) {
        let serving = line.contains("Portico is serving");
        lines.push(line);
        if serving {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(lines.iter().any(|l| l.contains("Portico is serving")), "the server started: {lines:?}");
    lines
}

#[test]
fn a_data_folder_others_may_read_is_named_in_a_warning_with_the_fix() {
    let dir = TempDir::new();
    let open = dir.0.join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    let lines = start_lines(&open);
    let warning = lines.iter().find(|l| l.contains("data folder is open to other users"));
    let warning = warning.unwrap_or_else(|| panic!("a warning for a 755 folder: {lines:?}"));
    assert!(warning.contains("WARN") && warning.contains("chmod 700"), "{warning}");
    assert!(warning.contains(&open.display().to_string()) && warning.contains("755"), "{warning}");
    assert_eq!(mode(&open), 0o755, "the operator's folder is left as it is");

    let own = dir.0.join("own");
    std::fs::create_dir(&own).unwrap();
    std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o700)).unwrap();
    let lines = start_lines(&own);
    assert!(!lines.iter().any(|l| l.contains("open to other users")), "no warning for a 700 folder: {lines:?}");
}
