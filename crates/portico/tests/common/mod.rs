//! What the process tests share: `portico worker` as a real child process.

#![allow(dead_code)]

use std::process::{Child, Command, Stdio};

use portico_tests::TestApp;

/// A `portico worker` process, killed and reaped when dropped.
pub struct Worker(Child);

impl Worker {
    /// Starts `portico worker` on the app's database and data folder, with
    /// `settings` as environment variables.
    pub fn start(app: &TestApp, settings: &[(&str, &str)]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_portico"));
        command
            .arg("worker")
            .env_clear()
            .env("PORTICO_DATABASE_URL", app.config.database_url.as_deref().unwrap())
            .env("PORTICO_DATA_DIR", &app.config.data_dir)
            .env("PORTICO_LOG", "warn");
        for (name, value) in settings {
            command.env(name, value);
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start portico worker");
        Self(child)
    }

    /// SIGKILL: no chance to finish anything.
    pub fn kill(&mut self) {
        self.0.kill().expect("SIGKILL the worker");
        self.0.wait().expect("reap the worker");
    }

    pub fn is_running(&mut self) -> bool {
        self.0.try_wait().expect("worker status").is_none()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
