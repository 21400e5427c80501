//! A GOST test PKI made by OpenSSL's GOST engine, for the report signature
//! tests and benchmark.

use std::path::PathBuf;

use portico_reports::generate::qes::{self, Algorithm, Output};

/// A test CA and a broker's certificate under it, with GOST R 34.10-2012
/// (256-bit) keys, made by OpenSSL's GOST engine.
pub struct GostPki {
    pub dir: crate::TempDir,
    pub openssl: String,
}

impl GostPki {
    /// `None` (and a skip notice) without openssl or its GOST engine.
    pub fn new() -> Option<Self> {
        let Ok(openssl) = std::env::var("PORTICO_TEST_OPENSSL") else {
            crate::skipped("PORTICO_TEST_OPENSSL is not set; the GOST signature tests need openssl");
            return None;
        };
        let engine = std::process::Command::new(&openssl).args(["engine", "gost"]).output();
        if !engine.is_ok_and(|out| out.status.success()) {
            crate::skipped("OpenSSL's GOST engine is missing (Debian package libengine-gost-openssl)");
            return None;
        }
        let pki = Self { dir: crate::TempDir::new(), openssl };
        pki.run(&["genpkey", "-algorithm", "gost2012_256", "-pkeyopt", "paramset:A", "-out", "ca.key"]);
        pki.run(&[
            "req",
            "-new",
            "-x509",
            "-key",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "3650",
            "-md_gost12_256",
            "-subj",
            "/O=Test CA/CN=Test GOST CA",
        ]);
        for name in ["broker", "stranger"] {
            let key = format!("{name}.key");
            pki.run(&["genpkey", "-algorithm", "gost2012_256", "-pkeyopt", "paramset:A", "-out", &key]);
            let csr = format!("{name}.csr");
            let subject = format!("/O=Broker/CN={name}");
            pki.run(&["req", "-new", "-key", &key, "-out", &csr, "-md_gost12_256", "-subj", &subject]);
            std::fs::write(pki.path("ext.cnf"), "keyUsage=digitalSignature,nonRepudiation\n").unwrap();
            pki.run(&[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                &format!("{name}.pem"),
                "-days",
                "3650",
                "-md_gost12_256",
                "-extfile",
                "ext.cnf",
            ]);
        }
        Some(pki)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.0.join(name)
    }

    pub fn run(&self, args: &[&str]) {
        let out = std::process::Command::new(&self.openssl)
            .args(args)
            .args(["-engine", "gost"])
            .current_dir(&self.dir.0)
            .output()
            .expect("run openssl");
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    pub fn argv(&self, args: &[&str]) -> Vec<String> {
        std::iter::once(self.openssl.as_str()).chain(args.iter().copied()).map(str::to_owned).collect()
    }

    /// `openssl cms -sign` with the broker's key: a whole detached CMS.
    pub fn cms_command(&self) -> Vec<String> {
        let (cert, key) = (self.path("broker.pem"), self.path("broker.key"));
        self.argv(&[
            "cms",
            "-sign",
            "-engine",
            "gost",
            "-md",
            "md_gost12_256",
            "-binary",
            "-outform",
            "DER",
            "-cades",
            "-signer",
            &cert.display().to_string(),
            "-inkey",
            &key.display().to_string(),
        ])
    }

    /// `openssl dgst -sign` with `key`: the signature of standard input.
    pub fn signature_command(&self, key: &str) -> Vec<String> {
        let key = self.path(key).display().to_string();
        self.argv(&["dgst", "-engine", "gost", "-md_gost12_256", "-sign", &key])
    }

    /// `openssl cms -verify` against the test CA.
    pub fn verify_command(&self) -> Vec<String> {
        let ca = self.path("ca.pem").display().to_string();
        self.argv(&[
            "cms",
            "-verify",
            "-engine",
            "gost",
            "-binary",
            "-inform",
            "DER",
            "-in",
            "{signature}",
            "-content",
            "{content}",
            "-CAfile",
            &ca,
            "-purpose",
            "any",
            "-out",
            "/dev/null",
        ])
    }

    pub fn configure(&self, config: &mut portico_server::Config, command: Vec<String>, output: Output) {
        config.reports.signing_cert = Some(self.path("broker.pem"));
        config.reports.signature = qes::Settings {
            algorithm: Algorithm::Gost2012_256,
            chain: Some(self.path("ca.pem")),
            command,
            output,
            timeout_secs: 10,
            concurrency: 2,
            verify_command: self.verify_command(),
            hsm_key_label: None,
        };
    }
}
