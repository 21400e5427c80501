//! A signing program for token keys (`tokens.command`) over key files in
//! a folder of its own, as an operator's wrapper would be: `sign {key}
//! {alg}` signs standard input with `<folder>/{key}.pem` through OpenSSL
//! (PKCS#1 v1.5 or, for PS256, PSS with a 32-byte salt; ECDSA in DER).

use std::path::{Path, PathBuf};

use crate::TempDir;

pub struct SigningProgram {
    pub dir: TempDir,
    openssl: String,
}

impl SigningProgram {
    /// # Panics
    /// When the program cannot be written.
    pub fn new(openssl: &str) -> Self {
        let dir = TempDir::new();
        let script = format!(
            "#!/bin/sh\nkey=\"{keys}/$1.pem\"\ncase \"$2\" in\n  PS256) exec {openssl} dgst -sha256 -sigopt rsa_padding_mode:pss \
             -sigopt rsa_pss_saltlen:32 -sign \"$key\" ;;\n  *) exec {openssl} dgst -sha256 -sign \"$key\" ;;\nesac\n",
            keys = dir.0.display()
        );
        write_program(&dir.0.join("sign"), &script);
        Self { dir, openssl: openssl.to_owned() }
    }

    /// `tokens.command.program` for it.
    pub fn program(&self) -> Vec<String> {
        vec![self.dir.0.join("sign").display().to_string(), "{key}".into(), "{alg}".into()]
    }

    /// The private key file of `label`.
    pub fn key_path(&self, label: &str) -> PathBuf {
        self.dir.0.join(format!("{label}.pem"))
    }

    /// Makes the key `label` (P-256 when `ec`, else RSA of `rsa_bits`)
    /// and answers its public half, PEM.
    ///
    /// # Panics
    /// When OpenSSL fails.
    pub fn make_key(&self, label: &str, ec: bool, rsa_bits: u32) -> Vec<u8> {
        let key = self.key_path(label).display().to_string();
        let options = if ec {
            ["-algorithm".to_owned(), "EC".to_owned(), "-pkeyopt".to_owned(), "ec_paramgen_curve:P-256".to_owned()]
        } else {
            ["-algorithm".to_owned(), "RSA".to_owned(), "-pkeyopt".to_owned(), format!("rsa_keygen_bits:{rsa_bits}")]
        };
        let generate: Vec<String> =
            ["genpkey".to_owned()].into_iter().chain(options).chain(["-out".to_owned(), key.clone()]).collect();
        run(&self.openssl, &generate);
        run(&self.openssl, &["pkey".to_owned(), "-in".to_owned(), key, "-pubout".to_owned()])
    }
}

fn run(program: &str, args: &[String]) -> Vec<u8> {
    let out = std::process::Command::new(program).args(args).output().expect("run openssl");
    assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// Writes an executable script.
///
/// # Panics
/// When it cannot be written.
pub fn write_program(path: &Path, script: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, script).expect("write the program");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("make it executable");
}
