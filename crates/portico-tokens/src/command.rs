//! Token keys whose private half a program holds (`tokens.command`): a
//! vendor's key service, a wrapper around a token Portico cannot load, or
//! OpenSSL with a key file Portico never reads.
//!
//! The contract: Portico runs the program once per signature, `{key}` and
//! `{alg}` in its arguments replaced by the key's label and the JWS
//! algorithm, gives it the JWS signing input (`header.payload`, ASCII) on
//! standard input, and reads the signature on standard output: RS256
//! RSASSA-PKCS1-v1_5 with SHA-256, PS256 RSASSA-PSS with SHA-256, MGF1 and a
//! 32-byte salt, both as the raw signature; ES256 ECDSA P-256 with SHA-256,
//! as `r || s` (64 bytes) or DER (as `openssl dgst -sign` writes it). Each
//! signature is verified with the key's registered public half before it
//! is used ([`portico_crypto::jwt::SigningKey::try_sign`]).
//!
//! A run that fails, hangs past the deadline or prints something else is
//! [`SignError::Unavailable`]: the token endpoint answers 503 with
//! `Retry-After` and spends nothing. A process per signature costs some
//! milliseconds (docs/benchmarks.md), so a command suits keys that sign
//! rarely or a deployment that accepts that rate; an HSM signs faster.

use std::sync::Arc;

use portico_command::Command;
use portico_crypto::jwt::{Algorithm, RemoteSigner, SignError};

/// The program that signs with the keys it holds.
#[derive(Debug, Clone)]
pub struct CommandKeys {
    pub command: Arc<Command>,
}

impl CommandKeys {
    /// The signer of the key labelled `label`.
    pub fn signer(&self, alg: Algorithm, label: &str) -> Arc<dyn RemoteSigner> {
        Arc::new(CommandKey { command: Arc::clone(&self.command), alg, label: label.to_owned() })
    }
}

/// One key the program holds.
struct CommandKey {
    command: Arc<Command>,
    alg: Algorithm,
    label: String,
}

impl RemoteSigner for CommandKey {
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, SignError> {
        let fields = [("key", self.label.as_str()), ("alg", self.alg.as_str())];
        let signed = wait_for(self.command.run(message, &fields))
            .map_err(|e| e.to_string())
            .and_then(|out| jws_signature(self.alg, &out));
        signed.map_err(|error| {
            tracing::warn!(label = %self.label, alg = %self.alg, %error, "the signing command did not sign");
            SignError::Unavailable(error)
        })
    }
}

/// Runs `work` to its end from synchronous code: on a worker of a
/// multi-threaded runtime the worker's other tasks move elsewhere while it
/// waits; anywhere else (a single-threaded runtime, no runtime) on a
/// thread of its own.
fn wait_for<F: Future + Send>(work: F) -> F::Output
where
    F::Output: Send,
{
    use tokio::runtime::{Builder, Handle, RuntimeFlavor};
    if let Ok(handle) = Handle::try_current()
        && handle.runtime_flavor() == RuntimeFlavor::MultiThread
    {
        return tokio::task::block_in_place(|| handle.block_on(work));
    }
    std::thread::scope(|scope| {
        scope
            .spawn(|| Builder::new_current_thread().enable_all().build().expect("a runtime starts").block_on(work))
            .join()
            .expect("the signing thread ends")
    })
}

/// The command's output as a JWS signature of `alg`.
fn jws_signature(alg: Algorithm, out: &[u8]) -> Result<Vec<u8>, String> {
    match alg {
        Algorithm::Es256 if out.len() == 64 => Ok(out.to_vec()),
        Algorithm::Es256 => ecdsa_fixed(out).ok_or_else(|| {
            format!("the command wrote {} bytes, neither r || s (64 bytes) nor a DER ECDSA signature", out.len())
        }),
        _ => Ok(out.to_vec()),
    }
}

/// `r || s` of a DER `Ecdsa-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }`
/// (RFC 3279) of P-256.
fn ecdsa_fixed(der: &[u8]) -> Option<Vec<u8>> {
    use der::Decode as _;
    #[derive(der::Sequence)]
    struct EcdsaSignature<'a> {
        r: der::asn1::UintRef<'a>,
        s: der::asn1::UintRef<'a>,
    }
    let signature = EcdsaSignature::from_der(der).ok()?;
    let mut fixed = vec![0u8; 64];
    for (half, value) in fixed.chunks_mut(32).zip([signature.r, signature.s]) {
        let bytes = value.as_bytes();
        half.get_mut(32usize.checked_sub(bytes.len())?..)?.copy_from_slice(bytes);
    }
    Some(fixed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_ecdsa_signatures_become_r_and_s() {
        // SEQUENCE { INTEGER 0x00ff.. (33 bytes, a leading zero), INTEGER 0x01 }
        let mut der = vec![0x30, 0x26, 0x02, 0x21, 0x00];
        der.extend([0xff; 32]);
        der.extend([0x02, 0x01, 0x01]);
        let fixed = jws_signature(Algorithm::Es256, &der).unwrap();
        assert_eq!(&fixed[..32], &[0xff; 32]);
        assert_eq!(&fixed[32..63], &[0; 31]);
        assert_eq!(fixed[63], 1);
        assert_eq!(jws_signature(Algorithm::Es256, &[7; 64]).unwrap(), vec![7; 64], "r || s is taken as it is");
        let error = jws_signature(Algorithm::Es256, b"garbage").unwrap_err();
        assert!(error.contains("neither r || s"), "{error}");
        let mut long = vec![0x30, 0x27, 0x02, 0x22, 0x01];
        long.extend([0xff; 33]);
        long.extend([0x02, 0x01, 0x01]);
        assert!(jws_signature(Algorithm::Es256, &long).is_err(), "an r beyond 32 bytes is not P-256's");
    }

    #[test]
    fn a_signature_is_waited_for_without_a_runtime_and_on_one_thread() {
        let command = Command::new(
            vec!["/bin/sh".into(), "-c".into(), "printf '%s' {alg}-{key}; cat >/dev/null".into()],
            std::time::Duration::from_secs(5),
            1,
        )
        .unwrap();
        let keys = CommandKeys { command: Arc::new(command) };
        assert_eq!(keys.signer(Algorithm::Rs256, "k1").sign(b"input").unwrap(), b"RS256-k1");
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let signed = runtime.block_on(async { keys.signer(Algorithm::Ps256, "k2").sign(b"input") });
        assert_eq!(signed.unwrap(), b"PS256-k2");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_signature_is_waited_for_on_a_multi_threaded_runtime_and_failures_say_why() {
        let command = |script: &str| {
            let argv = vec!["/bin/sh".into(), "-c".into(), script.into()];
            CommandKeys { command: Arc::new(Command::new(argv, std::time::Duration::from_secs(5), 2).unwrap()) }
        };
        let signed = command("printf '%s' {key}").signer(Algorithm::Rs256, "label").sign(b"x");
        assert_eq!(signed.unwrap(), b"label");
        let failed = command("echo 'no such key' >&2; exit 2").signer(Algorithm::Rs256, "k").sign(b"x").unwrap_err();
        assert!(
            matches!(&failed, SignError::Unavailable(why) if why.contains("exit status: 2") && why.contains("no such key")),
            "{failed:?}"
        );
        let garbage = command("printf garbage").signer(Algorithm::Es256, "k").sign(b"x").unwrap_err();
        assert!(matches!(&garbage, SignError::Unavailable(why) if why.contains("DER ECDSA")), "{garbage:?}");
    }
}
