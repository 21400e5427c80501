//! External signing commands: a program the operator names (CryptoPro's
//! `cryptcp`, a wrapper around a GOST token or a vendor's key service,
//! OpenSSL) that signs what Portico gives it on standard input and writes
//! the signature, or a whole detached CMS, on standard output. Reports
//! (`reports.signature.command`) and token keys (`tokens.command`) use it.
//!
//! Each run has a deadline (the program is killed when it passes) and the
//! runs of one command are limited in number, so that a hung or slow
//! signer holds its callers for at most the deadline, never the server. A
//! failure says what went wrong (exit status and the first line of standard
//! error, a timeout, output that is empty or too large); its
//! [`CommandError::reason`] is the label its callers count it by.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The most a command may write: a signature with a certificate chain is a
/// few kilobytes.
const MAX_OUTPUT: u64 = 1024 * 1024;
/// How much of standard error is kept for the failure reason.
const MAX_ERROR: usize = 300;

/// Why a run failed; `reason()` is the metric's label.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("the command {program} could not be started: {error}")]
    Start { program: String, error: String },
    #[error("the command {program} did not finish within {seconds} s and was stopped")]
    Timeout { program: String, seconds: u64 },
    #[error("the command {program} failed ({status}){said}")]
    Failed { program: String, status: String, said: String },
    #[error("the command {program} wrote {what}{said}")]
    Output { program: String, what: &'static str, said: String },
}

impl CommandError {
    /// The `reason` label a failure is counted by: `failed`, `timeout` or
    /// `output`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Start { .. } | Self::Failed { .. } => "failed",
            Self::Timeout { .. } => "timeout",
            Self::Output { .. } => "output",
        }
    }
}

/// One configured command line and the limits it runs under.
#[derive(Debug, Clone)]
pub struct Command {
    argv: Vec<String>,
    timeout: Duration,
    permits: Arc<tokio::sync::Semaphore>,
}

impl Command {
    /// `argv[0]` is the program (a path, or a name looked up in `PATH`).
    ///
    /// # Errors
    /// When `argv` is empty, the program is not found, or the limits are zero.
    pub fn new(argv: Vec<String>, timeout: Duration, concurrency: u32) -> Result<Self, String> {
        let program = argv.first().ok_or("the command is empty: name a program and its arguments")?;
        if find_program(program).is_none() {
            return Err(format!("the program {program:?} is not found (give a full path, or one in PATH)"));
        }
        if timeout.is_zero() || concurrency == 0 {
            return Err("the timeout and the concurrency must be above zero".to_owned());
        }
        let permits = Arc::new(tokio::sync::Semaphore::new(concurrency as usize));
        Ok(Self { argv, timeout, permits })
    }

    pub fn program(&self) -> &str {
        &self.argv[0]
    }

    /// Runs the command with `input` on standard input and `{name}` in its
    /// arguments replaced by the values in `fields` (file paths, a key's
    /// label, an algorithm); returns standard output,
    /// which must not be empty. Waiting for a free run counts against the
    /// deadline.
    ///
    /// # Errors
    /// [`CommandError`] for a start failure, a timeout, a non-zero exit or
    /// empty or oversized output.
    pub async fn run(&self, input: &[u8], fields: &[(&str, &str)]) -> Result<Vec<u8>, CommandError> {
        let (out, said) = self.execute(input, fields).await?;
        if out.is_empty() {
            return Err(CommandError::Output {
                program: self.program().to_owned(),
                what: "nothing on standard output",
                said,
            });
        }
        Ok(out)
    }

    /// Runs the command as a check: its exit status is the answer, its
    /// output is not read for anything.
    ///
    /// # Errors
    /// [`CommandError`] for a start failure, a timeout or a non-zero exit.
    pub async fn check(&self, fields: &[(&str, &str)]) -> Result<(), CommandError> {
        self.execute(b"", fields).await.map(drop)
    }

    /// Standard output and the first line of standard error of a run that
    /// exited with status 0.
    async fn execute(&self, input: &[u8], fields: &[(&str, &str)]) -> Result<(Vec<u8>, String), CommandError> {
        let program = self.program().to_owned();
        let timeout = || CommandError::Timeout { program: program.clone(), seconds: self.timeout.as_secs() };
        let deadline = tokio::time::Instant::now() + self.timeout;
        let _permit = tokio::time::timeout_at(deadline, self.permits.acquire())
            .await
            .map_err(|_| timeout())?
            .map_err(|_| timeout())?;
        let args = self.argv[1..].iter().map(|arg| {
            fields.iter().fold(arg.clone(), |arg, (name, value)| arg.replace(&format!("{{{name}}}"), value))
        });
        let mut child = tokio::process::Command::new(&program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| CommandError::Start { program: program.clone(), error: e.to_string() })?;
        let (mut stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let input = input.to_vec();
        let work = async {
            let write = async {
                if let Some(stdin) = stdin.as_mut() {
                    // A command that stops reading early is judged by its exit status.
                    let _ = stdin.write_all(&input).await;
                }
                drop(stdin.take());
            };
            let read = async {
                let mut out = Vec::new();
                if let Some(stdout) = stdout {
                    let _ = stdout.take(MAX_OUTPUT + 1).read_to_end(&mut out).await;
                }
                out
            };
            let read_error = async {
                let mut out = Vec::new();
                if let Some(stderr) = stderr {
                    let _ = stderr.take(64 * 1024).read_to_end(&mut out).await;
                }
                out
            };
            let ((), out, said) = tokio::join!(write, read, read_error);
            let status = child.wait().await;
            (out, said, status)
        };
        let (out, said, status) = tokio::time::timeout_at(deadline, work).await.map_err(|_| timeout())?;
        let status = status.map_err(|e| CommandError::Start { program: program.clone(), error: e.to_string() })?;
        let said = first_line(&said);
        let said = if said.is_empty() { String::new() } else { format!(": {said}") };
        if !status.success() {
            return Err(CommandError::Failed { program, status: status.to_string(), said });
        }
        if out.len() as u64 > MAX_OUTPUT {
            return Err(CommandError::Output { program, what: "more than 1 MiB on standard output", said });
        }
        Ok((out, said))
    }
}

/// The first line of a program's standard error, without control
/// characters, at most [`MAX_ERROR`] characters.
fn first_line(said: &[u8]) -> String {
    let text = String::from_utf8_lossy(said);
    let line = text.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or_default();
    line.chars().filter(|c| !c.is_control()).take(MAX_ERROR).collect()
}

/// The program's path: as given when it has a `/`, else found in `PATH`.
fn find_program(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let executable = |path: &std::path::Path| {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = PathBuf::from(program);
        return executable(&path).then_some(path);
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|dir| dir.join(program)).find(|path| executable(path))
}

/// A private folder for files a command reads, removed when dropped.
pub struct Scratch(PathBuf);

impl Scratch {
    /// # Errors
    /// When the folder cannot be made.
    pub fn new() -> std::io::Result<Self> {
        use std::os::unix::fs::DirBuilderExt as _;
        let mut name = [0u8; 12];
        aws_lc_rs::rand::fill(&mut name).map_err(|_| std::io::Error::other("no randomness"))?;
        let name: String = name.iter().map(|b| format!("{b:02x}")).collect();
        let path = std::env::temp_dir().join(format!("portico-signature-{name}"));
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        Ok(Self(path))
    }

    /// Writes `content` as `name` in the folder; returns its path.
    ///
    /// # Errors
    /// When it cannot be written.
    pub fn write(&self, name: &str, content: &[u8]) -> std::io::Result<PathBuf> {
        let path = self.0.join(name);
        std::fs::write(&path, content)?;
        Ok(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, timeout: Duration) -> Command {
        Command::new(vec!["/bin/sh".into(), "-c".into(), script.into()], timeout, 1).unwrap()
    }

    #[tokio::test]
    async fn a_command_reads_its_input_and_its_output_is_returned() {
        let out = sh("tr a-z A-Z", Duration::from_secs(5)).run(b"signed", &[]).await.unwrap();
        assert_eq!(out, b"SIGNED");
    }

    #[tokio::test]
    async fn failures_say_what_happened() {
        let secs = Duration::from_secs(5);
        let failed = sh("echo 'bad PIN' >&2; exit 3", secs).run(b"x", &[]).await.unwrap_err();
        assert_eq!(failed.reason(), "failed");
        assert!(failed.to_string().contains("exit status: 3") && failed.to_string().ends_with(": bad PIN"), "{failed}");
        let hung = sh("exec sleep 30", Duration::from_millis(200)).run(b"x", &[]).await.unwrap_err();
        assert_eq!(hung.reason(), "timeout", "{hung}");
        let silent = sh("cat > /dev/null", secs).run(b"x", &[]).await.unwrap_err();
        assert_eq!(silent.reason(), "output", "{silent}");
        assert!(sh("cat > /dev/null", secs).check(&[]).await.is_ok(), "a check answers by its exit status");
        assert!(sh("exit 1", secs).check(&[]).await.is_err());
        let large = sh("head -c 1048577 /dev/zero", secs).run(b"", &[]).await.unwrap_err();
        assert_eq!(large.reason(), "output", "{large}");
        let missing = Command::new(vec!["/nonexistent/cryptcp".into()], secs, 1).unwrap_err();
        assert!(missing.contains("not found"), "{missing}");
        assert!(Command::new(Vec::new(), secs, 1).is_err());
    }

    #[tokio::test]
    async fn file_placeholders_are_replaced_by_paths() {
        let scratch = Scratch::new().unwrap();
        let path = scratch.write("data", b"from a file").unwrap();
        let out =
            sh("cat {data}", Duration::from_secs(5)).run(b"", &[("data", &path.to_string_lossy())]).await.unwrap();
        assert_eq!(out, b"from a file");
        let folder = path.parent().unwrap().to_owned();
        drop(scratch);
        assert!(!folder.exists(), "the folder is removed");
    }

    #[tokio::test]
    async fn runs_beyond_the_concurrency_limit_wait_for_a_free_one() {
        let scratch = Scratch::new().unwrap();
        let (log, flag) = (scratch.0.join("log"), scratch.0.join("flag"));
        let script = "echo started >> {log}; while [ ! -e {flag} ]; do sleep 0.02; done; echo done";
        let command =
            Command::new(vec!["/bin/sh".into(), "-c".into(), script.into()], Duration::from_secs(20), 2).unwrap();
        let (log_path, flag_path) = (log.to_string_lossy(), flag.to_string_lossy());
        let files = [("log", log_path.as_ref()), ("flag", flag_path.as_ref())];
        let runs = futures_util::future::join_all((0..3).map(|_| command.run(b"", &files)));
        let watch = async {
            // Two start at once; the third waits while both are held.
            while std::fs::read_to_string(&log).unwrap_or_default().lines().count() < 2 {
                tokio::task::yield_now().await;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
            let started = std::fs::read_to_string(&log).unwrap().lines().count();
            std::fs::write(&flag, b"").unwrap();
            started
        };
        let (results, started) = tokio::join!(runs, watch);
        assert_eq!(started, 2, "no more than two runs at once");
        assert!(results.iter().all(Result::is_ok), "{results:?}");
        assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 3, "the third ran once a run ended");
    }
}
